"""One ``runs:`` entry's feature tables and analyses, in the spine's columns.

The feature table has one row per checkpoint with the spine's columns (``model`` = the run's name,
``seed`` = 0): architecture, ``step`` and ``frac`` (step / the run's last step), the logged losses
aligned to the checkpoints (``sources.losses``; NaN where none was logged), every per-checkpoint
topology feature and the diagram-series columns, then ``same_weights_as`` and ``equals_final``
(``sources.identity``). Its analyses: the associations with each logged loss in the raw and
time-aware views (beside the clock ``step`` and the scale ``l2_norm_mean``), and the phases.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from topotrain.analysis.aggregate import (
    checkpoint_features,
    read_layer_records,
    read_series,
    series_features,
    ww_features,
)
from topotrain.analysis.dynamics.phases import phase_table
from topotrain.analysis.inference.associations import (
    association_summary,
    association_table,
    feature_kinds,
)
from topotrain.analysis.inference.stats import MIN_RUN, TOO_SHORT
from topotrain.config import DEFAULTS, LOSSES

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults

log = logging.getLogger(__name__)

META = ("n_params", "d_model", "n_layer", "n_head")
LOSS_COLUMNS = ("train_loss", "val_loss", "grad_norm", "lr")
FRONT = ["model", "seed", *META, "step", "frac", *LOSS_COLUMNS]
MIN_CHECKPOINTS = 3  # fewer finite values of a loss: no association with it


def record_hashes(paths: Sequence[str], steps: Sequence[int]) -> dict[int, dict[str, str]]:
    """{step: {weight file: sha256}} from a run's topology records."""
    out = {}
    for path, step in zip(paths, steps, strict=True):
        with open(path) as fh:
            out[int(step)] = dict(json.load(fh).get("sha256") or {})
    return out


def run_tables(
    name: str,
    records: Sequence[str],
    steps: Sequence[int],
    meta: Mapping,
    losses: pd.DataFrame | None,
    series: str | None = None,
    flags: Mapping[int, Mapping] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(feature table, per-layer table) of one run. ``losses`` is ``sources.losses.align_losses``
    on the run's steps (None: no losses logged); ``flags`` the identity check's per-step flags."""
    keys = [{"model": name, "seed": 0, "step": int(s)} for s in steps]
    layers = read_layer_records(records, keys)
    features = checkpoint_features(layers)
    if "ww_fit" in layers:  # WeightWatcher's fields (topology.weightwatcher)
        features = features.merge(ww_features(layers), on=["model", "seed", "step"], how="left")
    if series:
        extra = read_series([series], [{"model": name, "seed": 0}])
        features = features.merge(series_features(extra), on=["model", "seed", "step"], how="left")
        layers = layers.merge(extra, on=["model", "seed", "step", "layer"], how="left")
    logged = losses if losses is not None else pd.DataFrame({"step": list(map(int, steps))})
    table = features.merge(logged, on="step", how="left")
    for column in LOSS_COLUMNS:
        if column not in table:
            table[column] = np.nan
    last = max(int(s) for s in steps)
    table = table.assign(**{k: meta.get(k) for k in META}, frac=table["step"] / last)
    flags = flags or {}
    table["same_weights_as"] = [flags.get(s, {}).get("same_weights_as", "") for s in table["step"]]
    table["equals_final"] = [
        bool(flags.get(s, {}).get("equals_final", False)) for s in table["step"]
    ]
    table = table.sort_values("step", kind="stable").reset_index(drop=True)
    return table[FRONT + [c for c in table.columns if c not in FRONT]], layers


def logged_targets(table: pd.DataFrame) -> list[str]:
    """The losses with at least MIN_CHECKPOINTS finite values: what associations can target."""
    return [t for t in LOSSES if table[t].notna().sum() >= MIN_CHECKPOINTS]


def run_features(table: pd.DataFrame) -> list[str]:
    """The features to associate: the spine's (``associations.feature_kinds``) that this table
    holds with some finite value, baselines included (``lr``/``grad_norm`` only when logged)."""
    return [f for f, _ in feature_kinds(table) if f in table and table[f].notna().any()]


def run_analysis(
    table: pd.DataFrame,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    threshold: float = _ANALYSIS["phase_threshold"],
    n_bkps: int = 2,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """(associations, their summary, phases, notes) of one run's feature table."""
    notes = []
    if len(table) < MIN_RUN:
        notes.append(
            f"{TOO_SHORT.format(n=len(table))}: every ρ below has an exact permutation "
            "p and no interval, and no verdict rests on it"
        )
    targets = logged_targets(table)
    if targets:
        features = run_features(table)
        assoc = association_table(table, features, n_resamples, seed, targets=targets)
        summary = association_summary(assoc)
    else:
        logged = int(table[list(LOSSES)].notna().any(axis=1).sum())
        why = (
            "give the run `losses:`"
            if not logged
            else f"the losses given match only {logged} of its {len(table)} checkpoints"
        )
        notes.append(
            f"no loss logged at {MIN_CHECKPOINTS} or more checkpoints: associations with loss "
            f"not computed ({why})"
        )
        assoc = summary = pd.DataFrame()
    for target in sorted({"train_loss", "val_loss"} - set(targets)):
        n = int(table[target].notna().sum())
        if targets and n == 0:
            notes.append(f"{target} was not logged: no associations with it")
        elif targets:
            notes.append(f"{target} logged at only {n} checkpoints: no associations with it")
    phases = phase_table(table, threshold=threshold, n_bkps=n_bkps)
    for note in notes:
        log.info("%s", note)
    return assoc, summary, phases, notes
