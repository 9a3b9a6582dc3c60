"""Crash-safe state of one training run: checkpoint files, the resume file and publishing.

Protocol. While a run trains, everything it writes goes to ``state_dir``: after s updates (s = 0,
interval, …, steps) the checkpoint ``step_{s:05d}.safetensors`` and then ``resume.pt`` (model,
optimizer, every RNG state, the step and all metric rows), each written atomically. A restarted
run continues from ``resume.pt`` if its fingerprint matches the run and every checkpoint it lists
exists, and ends bit-identical (on CPU) to an uninterrupted run; otherwise the state is cleared
and the run starts fresh. Only when training has finished are the checkpoints and CSVs copied into
``out_dir`` (``publish``); then the state is removed.

The fingerprint covers both configs, the device, whether the model is compiled and the data bytes;
STATE_VERSION is part of it, so raise it when the meaning of a saved state changes.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import logging
import random
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch.optim import Optimizer

from topotrain.io import atomic_copy, atomic_save_safetensors, atomic_torch_save, atomic_write_text
from topotrain.training.model import GPT, GPTConfig

log = logging.getLogger(__name__)

RESUME = "resume.pt"
STATE_VERSION = 3  # 2: fused AdamW, compile in the fingerprint; 3: common windows, val_loss_full
METRIC_COLUMNS = ("step", "train_loss", "grad_norm", "lr")
EVAL_COLUMNS = ("step", "val_loss", "val_loss_full")  # val_loss_full: NaN where not measured


def checkpoint_name(step: int) -> str:
    """File name of the checkpoint after ``step`` updates."""
    return f"step_{step:05d}.safetensors"


def save_checkpoint(model: GPT, step: int, path: str | Path, numerics: dict | None = None) -> None:
    """Float32 weights without the tied ``lm_head.weight``; metadata: step, GPTConfig JSON and,
    when given, the run's numerics JSON (``training.numerics.run_numerics``)."""
    tensors = {
        name: t.detach().to("cpu", torch.float32).contiguous()
        for name, t in model.state_dict().items()
        if name != "lm_head.weight"
    }
    meta = {"step": str(step), "model": json.dumps(asdict(model.config))}
    if numerics is not None:
        meta["numerics"] = json.dumps(numerics)
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
    model_cfg: GPTConfig,
    train_settings: dict,
    device: torch.device,
    compiled: bool,
    *data_files: str | Path,
) -> str:
    """sha256 over everything a run's result depends on: the model config, the training settings
    (``asdict(TrainConfig)``), device, whether the model is compiled, data bytes."""
    files = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in data_files]
    key = {"version": STATE_VERSION, "model": asdict(model_cfg), "train": train_settings}
    key.update(device=device.type, compiled=compiled, data=files)
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def rng_states() -> dict:
    """The state of every global RNG: Python, NumPy, torch CPU and each CUDA device."""
    name, key, *rest = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (name, torch.from_numpy(key.astype(np.int64)), *rest),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_states(states: dict) -> None:
    """Restore the global RNGs captured by ``rng_states``."""
    random.setstate(states["python"])
    name, key, *rest = states["numpy"]
    np.random.set_state((name, key.numpy().astype(np.uint32), *rest))
    torch.set_rng_state(states["torch"])
    if states["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def clear_state(state_dir: Path, temp_only: bool = False) -> None:
    """Remove our files from ``state_dir``: leftover temp files, and unless temp_only the state."""
    patterns = [".*.tmp"] if temp_only else [".*.tmp", RESUME, "step_*.safetensors"]
    for pattern in patterns:
        for path in state_dir.glob(pattern):
            path.unlink(missing_ok=True)


def save_resume(
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
        "rng": rng_states(),
        "metrics": metrics,
        "evals": evals,
    }
    atomic_torch_save(state, state_dir / RESUME)


def load_resume(
    state_dir: Path, key: str, model: GPT, optimizer: Optimizer, gen: torch.Generator
) -> tuple[list[tuple], list[tuple], int]:
    """Restore a run from ``state_dir`` if its state belongs to this run; else clear it.

    Returns (metric rows, eval rows, step reached); ([], [], 0) for a fresh start.
    """
    clear_state(state_dir, temp_only=True)
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
        clear_state(state_dir)
        return [], [], 0
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    gen.set_state(state["batch_rng"])
    set_rng_states(state["rng"])
    log.info("resuming from step %d (%s)", state["step"], path)
    return [tuple(r) for r in state["metrics"]], [tuple(r) for r in state["evals"]], state["step"]


METRICS_FILE, EVALS_FILE = "metrics.csv", "evals.csv"  # beside the checkpoints in out_dir


def published_files(out_dir: str | Path, steps: Iterable[int], evals: bool = True) -> dict:
    """What a training publishes into ``out_dir`` (``publish``): {"checkpoints": [path per step],
    "metrics": path, and "evals": path unless ``evals`` is false}, as strings."""
    out = Path(out_dir)
    files = {"checkpoints": [str(out / checkpoint_name(s)) for s in steps]}
    files["metrics"] = str(out / METRICS_FILE)
    if evals:
        files["evals"] = str(out / EVALS_FILE)
    return files


def publish(
    state_dir: Path, out_dir: Path, steps: Iterable[int], metrics: list, evals: list
) -> None:
    """Copy the checkpoints of ``steps`` and write the CSVs into ``out_dir`` atomically; then drop
    the state."""
    for step in steps:
        atomic_copy(state_dir / checkpoint_name(step), out_dir / checkpoint_name(step))
    write_csv(out_dir / METRICS_FILE, METRIC_COLUMNS, metrics)
    write_csv(out_dir / EVALS_FILE, EVAL_COLUMNS, evals)
    clear_state(state_dir)
    with contextlib.suppress(OSError):
        state_dir.rmdir()  # only if nothing else lives there
    log.info("wrote %d checkpoints, metrics.csv and evals.csv to %s", len(evals), out_dir)
