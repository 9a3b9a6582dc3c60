"""What a checkpoint records of how it was trained, for checking that a group's seeds are seeds of
one recipe (``analysis.groups.check_recorded``): read, never inferred.

- ``numerics``: topotrain's checkpoint metadata (``training.numerics``), as recorded;
- ``model_config``: the architecture's config.json beside the weights (its path, name and
  version keys dropped), else topotrain's ``model`` metadata (GPTConfig);
- ``train_batch_size``, ``max_steps``, ``num_train_epochs``: a Trainer's trainer_state.json
  beside the weights.

A key the checkpoint does not record is absent (not compared); a file that cannot be read is
named in a RunError.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from topotrain.sources.runs import RunError

TRAINER_KEYS = ("train_batch_size", "max_steps", "num_train_epochs")
UNRECORDED_CONFIG_KEYS = ("_name_or_path", "name_or_path", "transformers_version", "_commit_hash")


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise RunError(f"{path}: cannot read it ({type(err).__name__}: {err})") from err


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
            raise RunError(f"{first}: cannot read its metadata ({err})") from err
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
