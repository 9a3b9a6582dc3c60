"""Train every seed of one model in one process, as one computation: the ensemble trainer.

Each member starts as its single run does (``train.build_member``: seeded init, AdamW, batch
RNG); then the members' parameters are stacked on a leading member axis and one
``torch.func.vmap`` of ``functional_call(GPT)`` gives every member's loss (``training.stacked``).
vmap rather than a loop over members: one pass of batched kernels instead of M passes of small
ones (benchmarks/ensemble.py: on 2 CPU threads, 3 members of a one-layer d8 or d16 model took
0.5–0.75 of the time of their three single runs' steps, on a shared machine). The numba attention
kernel has no vmap rule of its own: ``attention.MemberAttention`` folds the member axis into its
batch. Nothing couples members: for a fixed member count, member i's bits do not depend on
member j's seed or values (tests/test_ensemble.py).

Each member writes exactly what ``train_model`` writes for its seed (checkpoints, metrics.csv,
evals.csv) and keeps its own ``resume.pt`` (the single run's format) in its state_dir, so each
resumes from its own state (states at different steps: all start afresh). A member's batch
offsets come from its own generator as ``sample_offsets`` draws them, uploaded once per interval;
its evaluation windows are the single run's (``eval_offsets``: drawn with ``train.eval_seed``, the
same for every member), evaluated eagerly on its own model (and, at ``full_eval_steps``, the whole
validation split: ``windows.evaluate``);
the losses are read once per interval; checkpoint and resume files are written by one writer
thread while training goes on.

A member whose loss, gradient norm, validation loss or weights stop being finite is stopped (its
state kept at its last good checkpoint, its slice left in the stack, where it touches no other);
the others finish and publish, then RuntimeError names the stopped members and their steps.

Numerics: a member agrees with its single run to float rounding (the batched products and the
vmapped LayerNorm sum in another order), not bit for bit; tests/test_ensemble.py bounds it by the
divergence of two single runs that differ only numerically. Each member's fingerprint and
numerics record the member count.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

from topotrain.training.ensemble_members import (
    ENSEMBLE,
    Member,
    Setup,
    build_members,
    common_config,
    ensemble_setup,
    member_key,
)
from topotrain.training.model import GPTConfig
from topotrain.training.numerics import run_numerics
from topotrain.training.run_state import (
    checkpoint_name,
    publish,
    save_checkpoint,
    save_resume,
)
from topotrain.training.stacked import Stack, ensemble_step, stack_members, unstack_member
from topotrain.training.train import (
    TrainConfig,
    broken_state,
    divergence_error,
    load_tokens,
    lr_at,
    progress_bar,
)
from topotrain.training.windows import (
    device_tokens,
    evaluate,
    get_batch,
    sample_offsets,
)

log = logging.getLogger(__name__)


def upload(offsets: torch.Tensor, device: torch.device) -> torch.Tensor:
    """Window starts drawn on the CPU, copied to ``device`` at once (pinned, no host sync)."""
    if device.type == "cuda":
        offsets = offsets.pin_memory()
    return offsets.to(device, non_blocking=True)


def ensemble_steps(
    stack: Stack, members: list[Member], tokens: torch.Tensor, start: int, stop: int
) -> list[list[tuple]]:
    """Updates ``start`` … ``stop`` − 1 of every member; per member its metric rows (step, train
    loss, grad norm, lr), fetched with one sync. Each member draws its batches from its own
    generator, step by step, as its single run does."""
    cfg, T = members[0].cfg, members[0].model.config.block_size
    lrs, shape = [lr_at(t, cfg) for t in range(start, stop)], (cfg.batch_size,)
    draws = [[sample_offsets(len(tokens), T, shape, m.gen) for m in members] for _ in lrs]
    offsets = upload(torch.stack([torch.stack(d) for d in draws]), tokens.device)  # (k, M, B)
    stats = []
    for step_offsets, lr in zip(offsets, lrs, strict=True):
        x, y = (
            z.view(len(members), cfg.batch_size, T)
            for z in get_batch(tokens, step_offsets.flatten(), T)
        )
        stats.append(ensemble_step(stack, x, y, lr, cfg.grad_clip))
    values = torch.stack(stats).tolist()  # (k, M, 2)
    steps = range(start, stop)
    return [
        [(t, *v[i], lr) for t, v, lr in zip(steps, values, lrs, strict=True)]
        for i in range(len(members))
    ]


def record_rows(members: list[Member], rows: list[list[tuple]]) -> None:
    """Append each running member's rows; stop a member at its first non-finite row."""
    for member, member_rows in zip(members, rows, strict=True):
        if member.error:
            continue
        for t, train_loss, grad_norm, _ in member_rows:
            if not (math.isfinite(train_loss) and math.isfinite(grad_norm)):
                what = f"train loss {train_loss}, grad norm {grad_norm}"
                stop(member, divergence_error(t, what, member.evals, member.state_dir))
                break
        else:
            member.metrics.extend(member_rows)


def stop(member: Member, error: RuntimeError) -> None:
    member.error = error
    log.error("ensemble member seed %d stopped: %s", member.cfg.seed, error)


class Writer:
    """One background thread writing checkpoint and resume files in submission order."""

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="ensemble-writer")
        self.pending: list[Future] = []

    def submit(self, fn: Callable, *args) -> None:
        self.pending.append(self.pool.submit(fn, *args))

    def wait(self) -> None:
        """Block until every submitted write is done; raise the first write's error."""
        pending, self.pending = self.pending, []
        for future in pending:
            future.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def save_member(
    member: Member, step: int, numerics: dict, gen: torch.Generator, rows: tuple
) -> None:
    """The single run's files after ``step`` updates: checkpoint, then resume file (atomic each)."""
    save_checkpoint(member.model, step, member.state_dir / checkpoint_name(step), numerics)
    save_resume(member.state_dir, member.key, step, member.model, member.optimizer, gen, *rows)


def checkpoint_members(
    members: list[Member],
    step: int,
    stack: Stack,
    val_tokens: torch.Tensor,
    numerics: dict,
    writer: Writer,
) -> None:
    """Each running member as the single run's checkpoint: evaluate (eager, the common windows),
    stop it on a non-finite state, else queue its checkpoint and resume file for the writer."""
    writer.wait()  # the last writes read the members' models and optimizers
    for i, member in enumerate(members):
        if member.error:
            continue
        unstack_member(stack, i, member.model, member.optimizer)
        full = step in member.cfg.full_eval_steps()
        val_loss, val_full = evaluate(
            member.model, val_tokens, member.val_offsets, full, member.cfg.eval_batch_size
        )
        if what := broken_state(member.model, val_loss, val_full, full):  # never save it
            stop(member, divergence_error(step, what, member.evals, member.state_dir))
            continue
        member.evals.append((step, val_loss, val_full))
        gen = torch.Generator().manual_seed(0)
        gen.set_state(member.gen.get_state())  # a copy: training goes on drawing from member.gen
        writer.submit(
            save_member, member, step, numerics, gen, (list(member.metrics), list(member.evals))
        )
        recent = np.mean(
            [r[1] for r in member.metrics[-member.cfg.checkpoint_interval :]] or [np.nan]
        )
        log.info(
            "seed %d step %d/%d: val loss %.4f, mean train loss %.4f",
            member.cfg.seed,
            step,
            member.cfg.steps,
            val_loss,
            recent,
        )


def train_ensemble(
    model_cfg: GPTConfig,
    cfgs: list[TrainConfig],
    train_bin: str | Path,
    val_bin: str | Path,
    out_dirs: list,
    state_dirs: list,
    progress: bool = True,
    setup: Setup | None = None,
) -> None:
    """Train one member per config (identical but for the seed) as one stacked computation; each
    member's checkpoints, metrics.csv and evals.csv are published to its out_dir as
    ``train_model`` publishes them. Raises RuntimeError naming the stopped members, if any, after
    the others are published. ``setup``: the resolved device, compile and kernel, if known."""
    cfg = common_config(cfgs, out_dirs, state_dirs)
    setup = setup or ensemble_setup(model_cfg, cfg)
    device, compiled, attention = setup.device, setup.compiled, setup.attention
    train_data, val_data = load_tokens(train_bin, model_cfg), load_tokens(val_bin, model_cfg)
    log.info(
        "ensemble of %d members; attention kernel: %s; GELU: %s", len(cfgs), attention, cfg.gelu
    )
    paths = []
    for c, out_dir, state_dir in zip(cfgs, out_dirs, state_dirs, strict=True):
        key = member_key(model_cfg, c, setup, (train_bin, val_bin), members=len(cfgs))
        paths.append((out_dir, state_dir, key, len(val_data)))
    members, start = build_members(model_cfg, cfgs, device, attention, paths)
    models, optimizers = [m.model for m in members], [m.optimizer for m in members]
    stack = stack_members(models, optimizers, cfg, attention, compiled)
    numerics = run_numerics(members[0].model, compiled, attention) | {ENSEMBLE: "on"}
    tokens, val_tokens = device_tokens(train_data, device), device_tokens(val_data, device)
    run_members(members, stack, tokens, val_tokens, numerics, start, progress)
    finish(members)


def run_members(
    members: list[Member],
    stack: Stack,
    tokens: torch.Tensor,
    val_tokens: torch.Tensor,
    numerics: dict,
    start: int,
    progress: bool,
) -> None:
    """The training loop: one stacked interval, then each member's checkpoint, to the last step."""
    cfg, writer = members[0].cfg, Writer()
    try:
        if start == 0:
            checkpoint_members(members, 0, stack, val_tokens, numerics, writer)
        bar = progress_bar(start, cfg.steps, progress)
        for t in range(start, cfg.steps, cfg.checkpoint_interval):
            rows = ensemble_steps(stack, members, tokens, t, t + cfg.checkpoint_interval)
            record_rows(members, rows)
            bar.update(len(rows[0]))
            checkpoint_members(
                members, t + cfg.checkpoint_interval, stack, val_tokens, numerics, writer
            )
            if all(m.error for m in members):
                break
        bar.close()
        writer.wait()
    finally:
        writer.close()


def finish(members: list[Member]) -> None:
    """Publish every member that finished; then raise for the stopped ones, naming them."""
    steps = members[0].cfg.checkpoint_steps()
    for member in members:
        if not member.error:
            publish(member.state_dir, member.out_dir, steps, member.metrics, member.evals)
    stopped = [f"seed {m.cfg.seed}: {m.error}" for m in members if m.error]
    if stopped:
        raise RuntimeError(
            f"{len(stopped)} of {len(members)} ensemble members stopped; " + "; ".join(stopped)
        )
