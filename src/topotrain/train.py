"""Train one GPT on a character corpus, checkpointing every ``checkpoint_interval`` updates.

Step convention: "step s" is the number of optimizer updates done. The checkpoint ``step_{s:05d}``
holds the weights after s updates (s = 0, interval, …, steps). Row t of ``metrics.csv`` is the
forward/backward pass of the model with t updates done, and the learning rate of the update t → t+1.

Resumable: ``state_dir`` holds the checkpoints written so far and, after each one, ``resume.pt``
(model, optimizer, every RNG state, the step and all metric rows). A restarted run continues from
it and ends bit-identical (on CPU) to an uninterrupted run. Only when training has finished are
the checkpoints and CSVs copied into ``out_dir``; then the state is removed.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import logging
import math
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.optim import Optimizer
from tqdm import tqdm

from topotrain.io import atomic_copy, atomic_save_safetensors, atomic_torch_save, atomic_write_text
from topotrain.model import GPT, GPTConfig

log = logging.getLogger(__name__)

RESUME = "resume.pt"
STATE_VERSION = 1
METRIC_COLUMNS = ("step", "train_loss", "grad_norm", "lr")
EVAL_COLUMNS = ("step", "val_loss")
BETAS = (0.9, 0.95)  # AdamW betas, as nanoGPT / GPT-3


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation and bookkeeping settings of one training run."""

    steps: int = 5000
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.01
    warmup_steps: int = 200
    grad_clip: float = 1.0
    checkpoint_interval: int = 100
    eval_batches: int = 8
    eval_batch_size: int = 64
    seed: int = 42
    device: str = "auto"
    threads: int = 1
    min_lr_ratio: float = 0.1  # cosine decays to min_lr_ratio·lr at `steps`

    def __post_init__(self) -> None:
        positive = ("steps", "batch_size", "checkpoint_interval", "eval_batches", "eval_batch_size")
        for name in (*positive, "threads", "lr", "grad_clip"):
            if getattr(self, name) <= 0:
                raise ValueError(f"TrainConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.steps % self.checkpoint_interval:
            raise ValueError(
                f"checkpoint_interval={self.checkpoint_interval} does not divide steps={self.steps}"
            )
        if not 0 <= self.warmup_steps <= self.steps:
            raise ValueError(
                f"warmup_steps={self.warmup_steps} must lie in [0, steps={self.steps}]"
            )
        if self.weight_decay < 0 or not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(
                f"need weight_decay >= 0 and 0 <= min_lr_ratio <= 1, got {self.weight_decay}, "
                f"{self.min_lr_ratio}"
            )
        if self.device not in ("auto", "cpu", "cuda"):
            raise ValueError(f"device must be auto, cpu or cuda, got {self.device!r}")


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate of update ``step`` (0-based), W = warmup_steps, m = min_lr_ratio·lr:
    lr·(step+1)/W for step < W, else m + ½(lr − m)(1 + cos(π·(step − W)/(steps − W)))."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    lr_min = cfg.min_lr_ratio * cfg.lr
    progress = (step - cfg.warmup_steps) / (cfg.steps - cfg.warmup_steps)
    return lr_min + 0.5 * (cfg.lr - lr_min) * (1.0 + math.cos(math.pi * progress))


def resolve_device(name: str) -> torch.device:
    """``auto`` → CUDA when available, else CPU; ``cpu``/``cuda`` as given."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name)


def checkpoint_name(step: int) -> str:
    """File name of the checkpoint after ``step`` updates."""
    return f"step_{step:05d}.safetensors"


def load_tokens(path: str | Path, model_cfg: GPTConfig) -> np.memmap:
    """Memory-map a raw uint8 token file, checking it fits the vocabulary and one context window."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if len(data) <= model_cfg.block_size:
        raise ValueError(f"{path}: {len(data)} tokens, need more than {model_cfg.block_size}")
    if int(data.max()) >= model_cfg.vocab_size:
        raise ValueError(f"{path}: token {int(data.max())} >= vocab_size {model_cfg.vocab_size}")
    return data


def sample_offsets(
    n_tokens: int, block_size: int, shape: tuple[int, ...], gen: torch.Generator
) -> torch.Tensor:
    """Uniform window starts in [0, n_tokens − block_size) so that targets stay inside the data."""
    return torch.randint(n_tokens - block_size, shape, generator=gen)


def get_batch(
    data: np.ndarray, offsets: torch.Tensor, block_size: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs x = data[i : i+T] and targets y = data[i+1 : i+T+1] for each offset i, as int64."""
    window = torch.from_numpy(
        np.asarray(data[offsets.numpy()[:, None] + np.arange(block_size + 1)])
    )
    window = window.to(device=device, dtype=torch.int64)
    return window[:, :-1], window[:, 1:]


def eval_offsets(n_tokens: int, block_size: int, cfg: TrainConfig) -> torch.Tensor:
    """The fixed validation windows, (eval_batches, eval_batch_size), drawn with seed + 1."""
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    return sample_offsets(n_tokens, block_size, (cfg.eval_batches, cfg.eval_batch_size), gen)


@torch.no_grad()
def estimate_val_loss(model: GPT, data: np.ndarray, offsets: torch.Tensor) -> float:
    """Mean cross-entropy (nats/token) over all windows in ``offsets`` (rows are batches)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    losses = [model(*get_batch(data, row, model.config.block_size, device))[1] for row in offsets]
    model.train(was_training)
    return torch.stack(losses).mean().item()


def save_checkpoint(model: GPT, step: int, path: str | Path) -> None:
    """Float32 weights without the tied ``lm_head.weight``; metadata: step and GPTConfig JSON."""
    tensors = {
        name: t.detach().to("cpu", torch.float32).contiguous()
        for name, t in model.state_dict().items()
        if name != "lm_head.weight"
    }
    meta = {"step": str(step), "model": json.dumps(asdict(model.config))}
    atomic_save_safetensors(tensors, path, metadata=meta)


def load_checkpoint(path: str | Path) -> tuple[GPT, int]:
    """Rebuild the model stored by ``save_checkpoint``; returns (model, step)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as fh:
        meta = fh.metadata()
        tensors = {name: fh.get_tensor(name) for name in fh.keys()}
    model = GPT(GPTConfig(**json.loads(meta["model"])))
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if missing != ["lm_head.weight"] or unexpected:
        raise ValueError(f"{path}: missing {missing}, unexpected {unexpected}")
    return model, int(meta["step"])


def write_csv(path: str | Path, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """Atomically write rows as CSV (floats in shortest round-trip form)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def run_fingerprint(
    model_cfg: GPTConfig, cfg: TrainConfig, device: torch.device, *data_files: str | Path
) -> str:
    """sha256 over everything a run's result depends on: both configs, device, data bytes."""
    files = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in data_files]
    key = {"version": STATE_VERSION, "model": asdict(model_cfg), "train": asdict(cfg)}
    key.update(device=device.type, data=files)
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _build(
    model_cfg: GPTConfig, cfg: TrainConfig, device: torch.device
) -> tuple[GPT, torch.optim.AdamW, torch.Generator]:
    """Seed every RNG, build the model and AdamW (decay on matrices only), and the batch RNG."""
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    model = GPT(model_cfg).to(device)
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=cfg.lr, betas=BETAS)
    return model, optimizer, torch.Generator().manual_seed(cfg.seed)


def _rng_states() -> dict:
    name, key, *rest = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(key.astype(np.int64)), *rest),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def _set_rng_states(states: dict) -> None:
    random.setstate(states["python"])
    name, key, *rest = states["numpy"]
    np.random.set_state((name, key.numpy().astype(np.uint32), *rest))
    torch.set_rng_state(states["torch"])
    if states["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def _clear_state(state_dir: Path, temp_only: bool = False) -> None:
    """Remove our files from ``state_dir``: leftover temp files, and unless temp_only the state."""
    patterns = [".*.tmp"] if temp_only else [".*.tmp", RESUME, "step_*.safetensors"]
    for pattern in patterns:
        for path in state_dir.glob(pattern):
            path.unlink(missing_ok=True)


def _save_resume(
    state_dir: Path,
    key: str,
    step: int,
    model: GPT,
    optimizer: Optimizer,
    gen: torch.Generator,
    metrics: list[tuple],
    evals: list[tuple],
) -> None:
    """Atomically write ``resume.pt``: everything needed to continue after ``step`` updates."""
    state = {
        "fingerprint": key,
        "step": step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "batch_rng": gen.get_state(),
        "rng": _rng_states(),
        "metrics": metrics,
        "evals": evals,
    }
    atomic_torch_save(state, state_dir / RESUME)


def _resume(
    state_dir: Path, key: str, model: GPT, optimizer: Optimizer, gen: torch.Generator
) -> tuple[list[tuple], list[tuple], int]:
    """Restore a run from ``state_dir`` if its state belongs to this run; else clear it.

    Returns (metric rows, eval rows, step reached); ([], [], 0) for a fresh start.
    """
    _clear_state(state_dir, temp_only=True)
    path = state_dir / RESUME
    if not path.is_file():
        return [], [], 0
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        steps = [row[0] for row in state["evals"]]
        usable = state["fingerprint"] == key and all(
            (state_dir / checkpoint_name(s)).is_file() for s in steps
        )
    except Exception as err:  # an unreadable state is as good as none
        log.warning("cannot read %s (%s)", path, err)
        usable = False
    if not usable:
        log.warning("%s belongs to another configuration or is incomplete: starting fresh", path)
        _clear_state(state_dir)
        return [], [], 0
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    gen.set_state(state["batch_rng"])
    _set_rng_states(state["rng"])
    log.info("resuming from step %d (%s)", state["step"], path)
    return [tuple(r) for r in state["metrics"]], [tuple(r) for r in state["evals"]], state["step"]


def _publish(state_dir: Path, out_dir: Path, cfg: TrainConfig, metrics: list, evals: list) -> None:
    """Copy every checkpoint and write the CSVs into ``out_dir`` atomically; then drop the state."""
    for step in range(0, cfg.steps + 1, cfg.checkpoint_interval):
        atomic_copy(state_dir / checkpoint_name(step), out_dir / checkpoint_name(step))
    write_csv(out_dir / "metrics.csv", METRIC_COLUMNS, metrics)
    write_csv(out_dir / "evals.csv", EVAL_COLUMNS, evals)
    _clear_state(state_dir)
    with contextlib.suppress(OSError):
        state_dir.rmdir()  # only if nothing else lives there
    log.info("wrote %d checkpoints, metrics.csv and evals.csv to %s", len(evals), out_dir)


def finite_weights(model: GPT) -> bool:
    """Whether every parameter of ``model`` is finite (no NaN, no ±inf)."""
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def divergence_error(step: int, what: str, evals: list[tuple], state_dir: Path) -> RuntimeError:
    """The error for a run whose loss or weights stop being finite at ``step``."""
    last = f"step {evals[-1][0]} in {state_dir}" if evals else "none"
    return RuntimeError(
        f"training diverged at step {step} ({what}); last good state: {last}; "
        "lower train.lr or raise train.warmup_steps"
    )


def train_step(
    model: GPT, optimizer: Optimizer, x: torch.Tensor, y: torch.Tensor, lr: float, grad_clip: float
) -> tuple[float, float]:
    """One AdamW update at ``lr``; returns (train loss, gradient norm before clipping)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    _, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)  # the pre-clip norm
    optimizer.step()
    loss_value, norm_value = torch.stack([loss.detach(), norm]).tolist()  # one device sync
    return loss_value, norm_value


def _progress_bar(start: int, total: int, enabled: bool) -> tqdm:
    """A tqdm bar on stderr; redrawn rarely when stderr is a log file."""
    interval = 1.0 if sys.stderr.isatty() else 30.0
    return tqdm(
        range(start, total),
        initial=start,
        total=total,
        file=sys.stderr,
        mininterval=interval,
        disable=not enabled,
    )


def train_model(
    model_cfg: GPTConfig,
    cfg: TrainConfig,
    train_bin: str | Path,
    val_bin: str | Path,
    out_dir: str | Path,
    state_dir: str | Path,
    progress: bool = True,
) -> None:
    """Train with AdamW + warmup/cosine LR + grad clipping; checkpoints, metrics.csv, evals.csv."""
    torch.set_num_threads(cfg.threads)
    device, T = resolve_device(cfg.device), model_cfg.block_size
    train_data, val_data = load_tokens(train_bin, model_cfg), load_tokens(val_bin, model_cfg)
    val_offsets = eval_offsets(len(val_data), T, cfg)
    state_dir, out_dir = Path(state_dir), Path(out_dir)
    key = run_fingerprint(model_cfg, cfg, device, train_bin, val_bin)
    model, optimizer, gen = _build(model_cfg, cfg, device)
    metrics, evals, start = _resume(state_dir, key, model, optimizer, gen)

    def checkpoint(step: int) -> None:
        val_loss, finite = estimate_val_loss(model, val_data, val_offsets), finite_weights(model)
        if not (finite and math.isfinite(val_loss)):  # never save a broken state
            what = f"val loss {val_loss}" + ("" if finite else ", non-finite weights")
            raise divergence_error(step, what, evals, state_dir)
        evals.append((step, val_loss))
        save_checkpoint(model, step, state_dir / checkpoint_name(step))
        _save_resume(state_dir, key, step, model, optimizer, gen, metrics, evals)
        recent = np.mean([row[1] for row in metrics[-cfg.checkpoint_interval :]] or [np.nan])
        log.info(
            "step %d/%d: val loss %.4f, mean train loss %.4f", step, cfg.steps, evals[-1][1], recent
        )

    if start == 0:
        checkpoint(0)
    bar = _progress_bar(start, cfg.steps, progress)
    for t in bar:
        lr = lr_at(t, cfg)
        offsets = sample_offsets(len(train_data), T, (cfg.batch_size,), gen)
        x, y = get_batch(train_data, offsets, T, device)
        train_loss, grad_norm = train_step(model, optimizer, x, y, lr, cfg.grad_clip)
        if not (math.isfinite(train_loss) and math.isfinite(grad_norm)):
            what = f"train loss {train_loss}, grad norm {grad_norm}"
            raise divergence_error(t, what, evals, state_dir)
        metrics.append((t, train_loss, grad_norm, lr))
        bar.set_postfix(loss=f"{train_loss:.4f}", refresh=False)
        if (t + 1) % cfg.checkpoint_interval == 0:
            checkpoint(t + 1)
    bar.close()
    _publish(state_dir, out_dir, cfg, metrics, evals)
