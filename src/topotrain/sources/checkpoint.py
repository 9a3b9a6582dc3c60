"""The spine's checkpoints as NumPy: a safetensors checkpoint's tensors, read one at a time
(``open_checkpoint``, a ``LazyTensors``: a job holds one matrix, not all of them) or all at once
(``load_tensors``), the numerics it was trained with, and what it records of its training
(``recorded_training``: a group's seeds are checked against each other). Reading only: the
per-layer topology is ``topology.layers.layer_records``', the writing ``io.write_record``'s.

No torch anywhere on this import path: tensors come from the safetensors files' bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
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


# What a checkpoint records of how it was trained, for checking that a group's seeds are seeds of
# one recipe (``inference.groups.check_recorded``): read, never inferred. ``numerics``: topotrain's
# checkpoint metadata; ``model_config``: the architecture's config.json beside the weights (its
# path, name and version keys dropped), else topotrain's ``model`` metadata (GPTConfig);
# ``train_batch_size``, ``max_steps``, ``num_train_epochs``: a Trainer's trainer_state.json beside
# the weights. A key the checkpoint does not record is absent (not compared).
TRAINER_KEYS = ("train_batch_size", "max_steps", "num_train_epochs")
UNRECORDED_CONFIG_KEYS = ("_name_or_path", "name_or_path", "transformers_version", "_commit_hash")


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: cannot read it ({type(err).__name__}: {err})") from err


def recorded_training(files: Sequence[str]) -> dict:
    """The recorded keys of one checkpoint (its weight files; the folder of the first holds its
    config.json and trainer_state.json, if any)."""
    out: dict = {}
    first = Path(files[0])
    folder = first.parent
    if first.suffix == ".safetensors" and first.is_file():
        from safetensors import safe_open

        try:
            with safe_open(str(first), framework="numpy") as fh:
                meta = fh.metadata() or {}
        except (OSError, ValueError) as err:
            raise ValueError(f"{first}: cannot read its metadata ({err})") from err
        if "numerics" in meta:
            out["numerics"] = json.loads(meta["numerics"])
        if "model" in meta:
            out["model_config"] = json.loads(meta["model"])
    if (folder / "config.json").is_file():
        config = _json(folder / "config.json")
        out["model_config"] = {k: v for k, v in config.items() if k not in UNRECORDED_CONFIG_KEYS}
    if (folder / "trainer_state.json").is_file():
        state = _json(folder / "trainer_state.json")
        out |= {k: state[k] for k in TRAINER_KEYS if state.get(k) is not None}
    return out
