"""Train one GPT on a character corpus, checkpointing every ``checkpoint_interval`` updates.

Step convention: "step s" is the number of optimizer updates done. The checkpoint ``step_{s:05d}``
holds the weights after s updates (s = 0, interval, …, steps). Row t of ``metrics.csv`` is the
forward/backward pass of the model with t updates done, and the learning rate of the update t → t+1.

Evaluation (``training.windows``): every checkpoint's ``val_loss`` is over fixed validation windows
drawn with ``train.eval_seed``, the same for every seed and every model of the same context; every
``train.full_eval_every``-th checkpoint and the last also get ``val_loss_full``, over the whole
validation split (NaN at the other checkpoints). Both go to ``evals.csv``.

Resumable: checkpoints and the resume file go to ``state_dir`` and reach ``out_dir`` only once
training has finished; a restarted run ends bit-identical (on CPU) to an uninterrupted one
(protocol: ``topotrain.training.run_state``).

Speed (benchmarks/training.py): the training tokens live on the model's device, AdamW is the
fused kernel, the losses and gradient norms of one checkpoint interval are fetched from the device
at once, and on CPU freed memory is kept for the next step rather than returned to the OS. With
``compile`` the model runs through ``torch.compile`` (static shapes; CUDA graphs on CUDA); whether
it does is part of the run's fingerprint, so a resumed run keeps the same numerics. Every
checkpoint records the numerics its run ran with (``training.numerics``), so that the analysis can
refuse a model whose seeds differ.
"""

from __future__ import annotations

import logging
import math
import random
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.optim import Optimizer
from tqdm import tqdm

from topotrain.config import DEFAULTS, check_settings, llc_steps
from topotrain.training import windows
from topotrain.training.attention import resolve_attention
from topotrain.training.model import GPT, GPTConfig, compile_error, compile_model
from topotrain.training.numerics import run_numerics
from topotrain.training.run_state import (
    checkpoint_name,
    load_resume,
    publish,
    run_fingerprint,
    save_checkpoint,
    save_resume,
)
from topotrain.training.runtime import (  # noqa: F401 (imported from here)
    cuda_determinism,
    keep_freed_memory,
    setup_device,
)
from topotrain.training.windows import eval_offsets, evaluate

log = logging.getLogger(__name__)

BETAS = (0.9, 0.95)  # AdamW betas, as nanoGPT / GPT-3
AUTO_COMPILE_DEVICES = ("cuda",)  # on CPU compiling did not pay (benchmarks/training.py)
AUTO_COMPILE_MIN_STEPS = 1000  # shorter runs do not earn back the compile time


_TRAIN = DEFAULTS["train"]  # the schema's defaults (train:)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation and bookkeeping settings of one training run: the config's ``train:`` keys
    (their defaults and checks are the schema's, one place) and the run's seed."""

    steps: int = _TRAIN["steps"]
    batch_size: int = _TRAIN["batch_size"]
    lr: float = _TRAIN["lr"]
    weight_decay: float = _TRAIN["weight_decay"]
    warmup_steps: int = _TRAIN["warmup_steps"]
    grad_clip: float = _TRAIN["grad_clip"]
    checkpoint_interval: int = _TRAIN["checkpoint_interval"]
    eval_batches: int = _TRAIN["eval_batches"]
    eval_batch_size: int = _TRAIN["eval_batch_size"]
    eval_seed: int = _TRAIN["eval_seed"]  # the validation windows' seed: every seed's and model's
    full_eval_every: int = _TRAIN["full_eval_every"]  # whole-split evaluation: every k-th, last
    seed: int = DEFAULTS["seeds"][0]
    device: str = _TRAIN["device"]
    threads: int = _TRAIN["threads"]
    min_lr_ratio: float = _TRAIN["min_lr_ratio"]  # cosine decays to min_lr_ratio·lr at `steps`
    compile: str = _TRAIN["compile"]  # torch.compile the model: auto, true or false (use_compile)
    attention: str = _TRAIN["attention"]  # attention kernel: auto, sdpa or numba
    gelu: str = _TRAIN["gelu"]  # exact (erf, the paper's) or tanh GELU
    deterministic: bool = _TRAIN["deterministic"]  # on CUDA: bit-identical reruns and resumes
    ensemble: bool = False  # trained with its model's other seeds (training.cohort); resolved

    def __post_init__(self) -> None:
        if isinstance(self.compile, bool):  # YAML true/false, kept as the words
            object.__setattr__(self, "compile", str(self.compile).lower())
        check_settings("train", self)

    def checkpoint_steps(self) -> range:
        """The steps a run checkpoints after: 0, interval, …, steps (config.checkpoint_steps)."""
        return range(0, self.steps + 1, self.checkpoint_interval)

    def full_eval_steps(self) -> frozenset[int]:
        """The checkpoints also evaluated on the whole validation split (``val_loss_full``): every
        ``full_eval_every``-th checkpoint (0, k·interval, …) and the last; none when it is 0."""
        if not self.full_eval_every:
            return frozenset()
        return frozenset(llc_steps(list(self.checkpoint_steps()), self.full_eval_every))


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of update ``step`` (0-based), W = warmup_steps, m = min_lr_ratio·lr:
    lr·(step+1)/W for step < W, else m + ½(lr − m)(1 + cos(π·(step − W)/(steps − W)))."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    lr_min = cfg.min_lr_ratio * cfg.lr
    progress = (step - cfg.warmup_steps) / (cfg.steps - cfg.warmup_steps)
    return lr_min + 0.5 * (cfg.lr - lr_min) * (1.0 + math.cos(math.pi * progress))


def use_compile(cfg: TrainConfig, device: torch.device) -> bool:
    """Whether to ``torch.compile`` the model: ``true``, or ``auto`` on AUTO_COMPILE_DEVICES for
    runs of at least AUTO_COMPILE_MIN_STEPS updates, and only where it works
    (else eager, logged)."""
    auto = device.type in AUTO_COMPILE_DEVICES and cfg.steps >= AUTO_COMPILE_MIN_STEPS
    if cfg.compile == "false" or (cfg.compile == "auto" and not auto):
        return False
    error = compile_error(device)
    if error:
        log.warning("torch.compile is not usable on %s (%s): training in eager mode", device, error)
        return False
    log.info("compiling the model with torch.compile on %s", device)
    return True


def head_dim(model_cfg: GPTConfig) -> int:
    return model_cfg.n_embd // model_cfg.n_head


def fingerprint_settings(cfg: TrainConfig, attention: str) -> dict:
    """The training settings a run's fingerprint covers: ``asdict(cfg)`` with the attention kernel
    resolved; the stock kernels (sdpa, exact GELU), ``deterministic: true`` and the ensemble flag
    leave no key, so runs from before these options keep their fingerprint. ``eval_seed`` and
    ``full_eval_every`` always do: a state from before the common validation windows (drawn with
    seed + 1, no ``val_loss_full``) never resumes into a run of now."""
    settings = asdict(cfg) | {"attention": attention}
    del settings["ensemble"]  # the ensemble trainer keys its own (ensemble.member_key)
    for key, stock in (("attention", "sdpa"), ("gelu", "exact"), ("deterministic", True)):
        if settings[key] == stock:
            del settings[key]
    return settings


def load_tokens(path: str | Path, model_cfg: GPTConfig) -> np.memmap:
    """Memory-map a raw uint8 token file, checking it fits the vocabulary and one context window."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if len(data) <= model_cfg.block_size:
        raise ValueError(f"{path}: {len(data)} tokens, need more than {model_cfg.block_size}")
    if int(data.max()) >= model_cfg.vocab_size:
        raise ValueError(f"{path}: token {int(data.max())} >= vocab_size {model_cfg.vocab_size}")
    return data


@dataclass
class Training:
    """What training updates: the model, the function that runs it (compiled or the model itself),
    AdamW, the batch RNG and the training tokens on the model's device."""

    model: GPT
    attention: str  # the resolved attention kernel (resolve_attention): part of the fingerprint
    forward: Callable
    optimizer: Optimizer
    gen: torch.Generator
    tokens: torch.Tensor


def adamw(matrices: list[torch.Tensor], others: list[torch.Tensor], cfg: TrainConfig) -> Optimizer:
    """Fused AdamW at ``cfg.lr`` with BETAS; weight decay on ``matrices`` only (group 0)."""
    groups = [
        {"params": matrices, "weight_decay": cfg.weight_decay},
        {"params": others, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=BETAS, fused=True)


def build_member(
    model_cfg: GPTConfig, cfg: TrainConfig, device: torch.device, attention: str
) -> tuple[GPT, Optimizer, torch.Generator]:
    """Seed every RNG with ``cfg.seed``; the model, its AdamW (decay on matrices only) and the
    batch RNG: one run's starting state (the ensemble builds each member with it)."""
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg, attention, cfg.gelu).to(device)
    params = list(model.parameters())
    optimizer = adamw([p for p in params if p.dim() >= 2], [p for p in params if p.dim() < 2], cfg)
    return model, optimizer, torch.Generator().manual_seed(cfg.seed)


def build_training(
    model_cfg: GPTConfig, cfg: TrainConfig, device: torch.device, data: np.ndarray, compiled: bool
) -> Training:
    """Seed every RNG; build the model (its attention kernel resolved by ``resolve_attention``),
    fused AdamW (decay on matrices only) and the batch RNG."""
    attention = resolve_attention(cfg.attention, device, compiled, head_dim(model_cfg))
    log.info("attention kernel: %s; GELU: %s", attention, cfg.gelu)
    model, optimizer, gen = build_member(model_cfg, cfg, device, attention)
    forward = compile_model(model, device) if compiled else model
    return Training(model, attention, forward, optimizer, gen, windows.device_tokens(data, device))


def finite_weights(model: GPT) -> bool:
    """Whether every parameter of ``model`` is finite (no NaN, no ±inf)."""
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def broken_state(model: GPT, val_loss: float, val_full: float, full: bool) -> str:
    """What is not finite at a checkpoint ("" when nothing): its validation loss, its whole-split
    loss when measured (``full``), its weights."""
    what = [f"val loss {val_loss}"] if not math.isfinite(val_loss) else []
    if full and not math.isfinite(val_full):
        what.append(f"whole-split val loss {val_full}")
    if not finite_weights(model):
        what.append("non-finite weights")
    return ", ".join(what)


def divergence_error(step: int, what: str, evals: list[tuple], state_dir: Path) -> RuntimeError:
    """The error for a run whose loss or weights stop being finite at ``step``."""
    last = f"step {evals[-1][0]} in {state_dir}" if evals else "none"
    return RuntimeError(
        f"training diverged at step {step} ({what}); last good state: {last}; "
        "lower train.lr or raise train.warmup_steps"
    )


def train_step(
    training: Training, x: torch.Tensor, y: torch.Tensor, lr: float, grad_clip: float
) -> torch.Tensor:
    """One AdamW update at ``lr``; returns [train loss, gradient norm before clipping] on the
    device, without a host sync."""
    for group in training.optimizer.param_groups:
        group["lr"] = lr
    training.optimizer.zero_grad(set_to_none=True)
    _, loss = training.forward(x, y)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(
        training.model.parameters(), grad_clip
    )  # the pre-clip norm
    training.optimizer.step()
    return torch.stack([loss.detach(), norm])


def train_steps(training: Training, cfg: TrainConfig, start: int, stop: int) -> list[tuple]:
    """Updates ``start`` … ``stop`` − 1; their metric rows (step, train loss, grad norm, lr),
    fetched from the device with one sync."""
    T, lrs = training.model.config.block_size, [lr_at(t, cfg) for t in range(start, stop)]
    stats = []
    for lr in lrs:
        offsets = windows.sample_offsets(len(training.tokens), T, (cfg.batch_size,), training.gen)
        stats.append(
            train_step(training, *windows.get_batch(training.tokens, offsets, T), lr, cfg.grad_clip)
        )
    values = torch.stack(stats).tolist()
    return [(t, *v, lr) for t, v, lr in zip(range(start, stop), values, lrs, strict=True)]


def progress_bar(start: int, total: int, enabled: bool) -> tqdm:
    """A tqdm bar on stderr; redrawn rarely when stderr is a log file."""
    interval = 1.0 if sys.stderr.isatty() else 30.0
    return tqdm(
        initial=start, total=total, file=sys.stderr, mininterval=interval, disable=not enabled
    )


def _check_finite(rows: list[tuple], evals: list[tuple], state_dir: Path) -> None:
    """Raise divergence_error at the first metric row with a non-finite loss or gradient norm."""
    for t, train_loss, grad_norm, _ in rows:
        if not (math.isfinite(train_loss) and math.isfinite(grad_norm)):
            what = f"train loss {train_loss}, grad norm {grad_norm}"
            raise divergence_error(t, what, evals, state_dir)


def train_model(
    model_cfg: GPTConfig,
    cfg: TrainConfig,
    train_bin: str | Path,
    val_bin: str | Path,
    out_dir: str | Path,
    state_dir: str | Path,
    progress: bool = True,
) -> None:
    """Train with AdamW + warmup/cosine LR + grad clipping, the state kept in ``state_dir``; once
    finished, the checkpoints, metrics.csv and evals.csv are published to ``out_dir``."""
    device, T = setup_device(cfg), model_cfg.block_size
    train_data, val_data = load_tokens(train_bin, model_cfg), load_tokens(val_bin, model_cfg)
    val_tokens, val_offsets = (
        windows.device_tokens(val_data, device),
        eval_offsets(len(val_data), T, cfg),
    )
    state_dir, out_dir = Path(state_dir), Path(out_dir)
    compiled = use_compile(cfg, device)
    training = build_training(model_cfg, cfg, device, train_data, compiled)
    settings = fingerprint_settings(cfg, training.attention)
    key = run_fingerprint(model_cfg, settings, device, compiled, train_bin, val_bin)
    model, opt, gen = training.model, training.optimizer, training.gen
    numerics = run_numerics(model, compiled, training.attention)  # into every checkpoint
    log.info("numerics: %s", numerics)
    metrics, evals, start = load_resume(state_dir, key, model, opt, gen)

    full_steps = cfg.full_eval_steps()

    def checkpoint(step: int) -> None:
        """Evaluate, refuse a non-finite state, save checkpoint + resume file, log."""
        full = step in full_steps
        val_loss, val_full = evaluate(model, val_tokens, val_offsets, full, cfg.eval_batch_size)
        if what := broken_state(model, val_loss, val_full, full):  # never save a broken state
            raise divergence_error(step, what, evals, state_dir)
        evals.append((step, val_loss, val_full))
        save_checkpoint(model, step, state_dir / checkpoint_name(step), numerics)
        save_resume(state_dir, key, step, model, opt, gen, metrics, evals)
        recent = np.mean([row[1] for row in metrics[-cfg.checkpoint_interval :]] or [np.nan])
        msg = "step %d/%d: val loss %.4f, mean train loss %.4f"
        log.info(msg, step, cfg.steps, val_loss, recent)
        if full:
            log.info("step %d: val loss over the whole validation split %.4f", step, val_full)

    if start == 0:
        checkpoint(0)
    bar = progress_bar(start, cfg.steps, progress)
    for t in range(start, cfg.steps, cfg.checkpoint_interval):  # one host sync per interval
        rows = train_steps(training, cfg, t, t + cfg.checkpoint_interval)  # batch → … → step
        _check_finite(rows, evals, state_dir)
        metrics.extend(rows)
        bar.update(len(rows))
        bar.set_postfix(loss=f"{rows[-1][1]:.4f}", refresh=False)
        checkpoint(t + cfg.checkpoint_interval)
    bar.close()
    publish(state_dir, out_dir, cfg.checkpoint_steps(), metrics, evals)
