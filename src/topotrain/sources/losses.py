"""A run's logged losses, read from a CSV or from the ``trainer_state.json`` that transformers'
Trainer writes, and aligned to the run's checkpoints.

Canonical columns (first spelling found wins): ``train_loss`` (train_loss, loss), ``val_loss``
(val_loss, eval_loss, validation_loss), ``lr`` (lr, learning_rate), ``grad_norm``. Alignment: the
checkpoint at step s_k gets, from the entries logged at steps in (s_{k−1}, s_k] (the first
checkpoint: every step ≤ s_0), the mean ``train_loss`` and ``grad_norm`` (Trainer logs the loss
averaged since its last log, so this is the mean over the interval, as the spine's table has it)
and the last ``val_loss`` and ``lr``. A checkpoint with no entry in its window gets NaN.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.config import LOSSES

SPELLINGS = {
    "train_loss": ("train_loss", "loss"),
    "val_loss": ("val_loss", "eval_loss", "validation_loss"),
    "lr": ("lr", "learning_rate"),
    "grad_norm": ("grad_norm",),
}
MEANS = ("train_loss", "grad_norm")  # averaged over a checkpoint's window; the others: last value
SUMMARY_KEY = "train_runtime"  # Trainer's end-of-training entry: its train_loss is the run's mean


class LossesError(ValueError):
    """A losses file that cannot be read or holds no step and loss columns; names the file."""


def read_losses(path: str | Path) -> pd.DataFrame:
    """One row per logged entry: ``step`` and whichever canonical columns the file holds, sorted by
    step. ``.json``: a trainer_state.json (its ``log_history``, without the end-of-training summary
    entry); anything else: a CSV."""
    path = Path(path)
    if not path.is_file():
        raise LossesError(f"losses file {path} does not exist")
    try:
        if path.suffix == ".json":
            history = json.loads(path.read_text())["log_history"]
            entries = [e for e in history if isinstance(e, dict) and SUMMARY_KEY not in e]
            raw = pd.DataFrame(entries)
        else:
            raw = pd.read_csv(path)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise LossesError(
            f"cannot read losses {path} ({type(err).__name__}: {err}); expected a CSV with step "
            "and loss columns, or a Trainer trainer_state.json"
        ) from err
    return canonical(raw, path)


def numeric(values: pd.Series, path: Path, column: str) -> pd.Series:
    """``values`` as floats; an entry that is present but not a number is a LossesError naming the
    file, the row (1-based, as a spreadsheet counts data rows) and the column."""
    out = pd.to_numeric(values, errors="coerce")
    bad = out.isna() & values.notna() & (values.astype(str).str.strip() != "")
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise LossesError(
            f"losses {path}: row {row + 1}, column {column!r}: {values.iloc[row]!r} is not a number"
        )
    return out


def canonical(raw: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``raw`` with its columns renamed to the canonical ones (others dropped), numeric, by step."""
    if "step" not in raw:
        raise LossesError(f"losses {path}: no 'step' column (columns: {list(raw.columns)})")
    found = {}
    for name, spellings in SPELLINGS.items():
        column = next((s for s in spellings if s in raw), None)
        if column is not None:
            found[name] = numeric(raw[column], path, column)
    if not any(name in found for name in LOSSES):
        wanted = [s for n in LOSSES for s in SPELLINGS[n]]
        raise LossesError(
            f"losses {path}: no loss column (looked for {wanted}; columns: {list(raw.columns)})"
        )
    steps = numeric(raw["step"], path, "step")
    table = pd.DataFrame({"step": steps, **found}).dropna(subset=["step"])
    table = table.dropna(how="all", subset=list(found))
    if table.empty:
        raise LossesError(f"losses {path}: no entry has a step and a value")
    table["step"] = table["step"].astype(np.int64)
    return table.sort_values("step", kind="stable").reset_index(drop=True)


def align_losses(log: pd.DataFrame, steps: Sequence[int]) -> pd.DataFrame:
    """One row per checkpoint step (sorted): the logged entries of its window (module docstring)
    reduced to train_loss, val_loss, grad_norm and lr (NaN where none was logged)."""
    steps = sorted(int(s) for s in steps)
    rows = []
    previous = -np.inf
    for step in steps:
        window = log[(log["step"] > previous) & (log["step"] <= step)]
        row = {"step": step}
        for name in SPELLINGS:
            values = window[name].dropna() if name in window else pd.Series(dtype=float)
            if values.empty:
                row[name] = np.nan
            else:
                row[name] = float(values.mean() if name in MEANS else values.iloc[-1])
        rows.append(row)
        previous = step
    return pd.DataFrame(rows, columns=["step", *SPELLINGS])


def coverage(aligned: pd.DataFrame) -> dict[str, int]:
    """How many checkpoints got a value, per canonical column."""
    return {name: int(aligned[name].notna().sum()) for name in SPELLINGS}
