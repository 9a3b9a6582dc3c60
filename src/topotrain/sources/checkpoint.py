"""The spine's checkpoints as NumPy: a safetensors checkpoint's tensors, read one at a time
(``open_checkpoint``, a ``LazyTensors``: a job holds one matrix, not all of them) or all at once
(``load_tensors``), and the numerics it was trained with. Reading only: the per-layer topology is
``topology.layers.layer_records``', the writing ``io.write_record``'s.

No torch anywhere on this import path: tensors come from the safetensors files' bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from topotrain.sources.tensors import LazyTensors, open_safetensors


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


def read_checkpoint(path: str | Path) -> tuple[dict[str, np.ndarray], dict | None]:
    """(every tensor, the numerics it was trained with) of one checkpoint: ``load_tensors`` and
    ``trained_numerics``."""
    return load_tensors(path), trained_numerics(path)
