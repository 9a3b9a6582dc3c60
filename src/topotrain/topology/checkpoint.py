"""The spine's per-checkpoint topology job: read a safetensors checkpoint with NumPy, run the
per-layer loop (``topology.layers``) on it, write the record and diagrams.

No torch anywhere on this import path: tensors come from ``safetensors.numpy``, one at a time
(``topology.tensors``), so a job holds one matrix of the checkpoint, not all of them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from topotrain.config import DEFAULTS, GPT_LAYERS
from topotrain.io import atomic_write_all
from topotrain.topology.layers import layer_records
from topotrain.topology.tensors import LazyTensors, open_safetensors
from topotrain.topology.vietoris_rips import resolve_engine

_TOPOLOGY = DEFAULTS["topology"]  # the schema's topology defaults


def load_tensors(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as NumPy arrays (all in memory at once: the per-layer
    loop reads one at a time through ``open_checkpoint``); ValueError naming the file if
    unreadable."""
    from safetensors.numpy import load_file

    if not Path(path).is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        return load_file(str(path))
    except Exception as err:
        raise unreadable(path, err) from err


def open_checkpoint(path: str | Path) -> LazyTensors:
    """A safetensors checkpoint's tensors, each read when it is looked up (``LazyTensors``);
    errors (here, or when a tensor is read) are ValueErrors naming the file."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    return open_safetensors([path], unreadable)


def unreadable(path: Path, err: Exception) -> ValueError:
    """The error for a checkpoint that cannot be read: truncated, corrupted, not safetensors, or
    a dtype NumPy lacks (bf16)."""
    return ValueError(f"cannot read checkpoint {path}: {type(err).__name__}: {err}")


def trained_numerics(path: str | Path) -> dict | None:
    """The numerics a checkpoint was trained with (its "numerics" metadata, written by
    ``training.numerics``); None when it holds none (an older or a foreign checkpoint)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="np") as fh:
            meta = fh.metadata() or {}
        return json.loads(meta["numerics"]) if "numerics" in meta else None
    except Exception as err:
        raise unreadable(path, err) from err


def checkpoint_topology(
    path: str | Path, patterns: Sequence[str] = GPT_LAYERS, *args, **options
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Per-layer records (layers.RECORD_KEYS) and float64 diagrams ``{layer}/h{k}`` of one
    checkpoint: ``layers.layer_records`` (max_points, seed, maxdim, n_threads, engine as there) on
    its tensors, read one at a time; errors name the checkpoint and the layer."""
    options["source"] = f"checkpoint {path}"
    return layer_records(open_checkpoint(path), patterns, *args, **options)


def write_checkpoint_topology(
    ckpt_path: str | Path,
    out_json: str | Path,
    out_npz: str | Path,
    patterns: Sequence[str] = GPT_LAYERS,
    max_points: int = _TOPOLOGY["max_points"],
    seed: int = _TOPOLOGY["seed"],
    maxdim: int = _TOPOLOGY["maxdim"],
    n_threads: int = 1,
    engine: str = "auto",
) -> list[dict]:
    """Write a checkpoint's records as JSON and its diagrams as npz, both or neither.

    JSON: {"checkpoint", "params" (those the result depends on, the engine resolved: not
    n_threads), "numerics" (the checkpoint's training numerics, ``trained_numerics``; null when
    unrecorded), "layers"}. Both files are written to temp files beside them and renamed only once
    both are complete.
    """
    params = {"patterns": list(patterns), "max_points": max_points, "seed": seed, "maxdim": maxdim}
    params["engine"] = resolve_engine(engine)
    records, diagrams = checkpoint_topology(ckpt_path, n_threads=n_threads, **params)
    numerics = trained_numerics(ckpt_path)
    doc = {"checkpoint": str(ckpt_path), "params": params, "numerics": numerics, "layers": records}
    write_record(out_json, out_npz, doc, diagrams)
    return records


def write_record(
    out_json: str | Path, out_npz: str | Path, doc: dict, diagrams: dict[str, np.ndarray]
) -> None:
    """A topology record as JSON (no NaN) and its diagrams as npz, both or neither."""
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    atomic_write_all(
        {
            out_npz: lambda fh: np.savez(fh, **diagrams),  # a handle: no ".npz" appended
            out_json: lambda fh: fh.write(text.encode()),
        }
    )
