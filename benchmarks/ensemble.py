"""Benchmark: the ensemble trainer's stacked step against the single runs' steps, on the CPU.

Three members of one tiny model train ``STEPS`` updates as one vmapped computation
(``training.stacked.ensemble_step`` via ``ensemble.ensemble_steps``: batches drawn per member,
uploaded once, one sync) against three single runs doing the same updates one after the other
(``train.train_steps``). Two threads; the two alternate, and each time is the median of its
repetitions (the machine may be shared: the ratio is the number to read).

    python -m benchmarks ensemble
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import torch

from benchmarks.study import rows_at_threads
from topotrain.training import ensemble as ens
from topotrain.training import train as tr
from topotrain.training.model import GPTConfig
from topotrain.training.stacked import stack_members

SEEDS, STEPS, THREADS, REPS = (1, 2, 3), 5, 2, 15
CFG = tr.TrainConfig(steps=100, checkpoint_interval=50, batch_size=16, warmup_steps=5,
                     device="cpu", threads=THREADS)  # fmt: skip
MODELS = {  # d_model, n_head: head dim 8 (auto → the numba kernel)
    "d8 h1": GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=32),
    "d16 h2": GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32),
}


def contenders(model_cfg: GPTConfig) -> tuple:
    """(sequential, ensemble): callables doing STEPS updates of every member; the attention."""
    cpu, cfgs = torch.device("cpu"), [replace(CFG, seed=s) for s in SEEDS]
    data = np.random.default_rng(0).integers(0, model_cfg.vocab_size, 20_000, dtype=np.uint8)
    attention = tr.resolve_attention("auto", cpu, False, tr.head_dim(model_cfg))
    singles = [tr.build_training(model_cfg, c, cpu, data, compiled=False) for c in cfgs]
    members = []
    for c in cfgs:
        model, optimizer, gen = tr.build_member(model_cfg, c, cpu, attention)
        members.append(ens.Member(c, model, optimizer, gen, torch.empty(0), None, None, ""))
    models, optimizers = [m.model for m in members], [m.optimizer for m in members]
    stack = stack_members(models, optimizers, CFG, attention, compiled=False)
    tokens = tr.device_tokens(data, cpu)

    def sequential() -> None:
        for training in singles:
            tr.train_steps(training, CFG, 0, STEPS)

    def ensemble() -> None:
        ens.ensemble_steps(stack, members, tokens, 0, STEPS)

    return sequential, ensemble, attention


def measure(name: str, model_cfg: GPTConfig) -> dict:
    """One row: median ms per STEPS updates of all members, each way, and their ratio."""
    sequential, ensemble, attention = contenders(model_cfg)
    sequential(), ensemble()  # warm: numba's kernels, allocator
    times = {"sequential": [], "ensemble": []}
    for _ in range(REPS):
        for key, fn in (("sequential", sequential), ("ensemble", ensemble)):
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    seq_ms, ens_ms = (1e3 * float(np.median(times[k])) for k in ("sequential", "ensemble"))
    return {
        "benchmark": "ensemble",
        "model": name,
        "attention": attention,
        "members": len(SEEDS),
        "steps": STEPS,
        "threads": THREADS,
        "project_ms": round(ens_ms, 2),
        "reference_ms": round(seq_ms, 2),
        "ratio": round(ens_ms / seq_ms, 3),  # ensemble / sequential: below 1 is faster
    }


def run(progress=print) -> list[dict]:
    """One row per model in MODELS."""
    return rows_at_threads(THREADS, MODELS.items(), measure, line, progress)


def line(r: dict) -> str:
    """A row as one progress line."""
    return (
        f"ensemble {r['model']} ({r['attention']}), {r['members']} members × {r['steps']} steps, "
        f"{r['threads']} threads: ensemble {r['project_ms']:.1f} ms, sequential "
        f"{r['reference_ms']:.1f} ms → ensemble/sequential {r['ratio']:.2f}"
    )
