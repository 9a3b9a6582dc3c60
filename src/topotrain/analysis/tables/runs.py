"""One ``runs:`` entry's feature tables, in the spine's columns.

The feature table has one row per checkpoint with the spine's columns (``model`` = the run's name,
``seed`` = 0): architecture, ``step`` and ``frac`` (step / the run's last step), the logged losses
aligned to the checkpoints (``sources.losses``; NaN where none was logged), every per-checkpoint
topology feature and the diagram-series columns, then ``same_weights_as`` and ``equals_final``
(``sources.identity``). Its analyses: ``dynamics.runs``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from topotrain.analysis.tables.aggregate import (
    checkpoint_features,
    layer_table,
    series_features,
    ww_features,
)

META = ("n_params", "d_model", "n_layer", "n_head")
LOSS_COLUMNS = ("train_loss", "val_loss", "grad_norm", "lr")
FRONT = ["model", "seed", *META, "step", "frac", *LOSS_COLUMNS]


def run_tables(
    name: str,
    records: Sequence[dict],
    steps: Sequence[int],
    meta: Mapping,
    losses: pd.DataFrame | None,
    series: pd.DataFrame | None = None,
    flags: Mapping[int, Mapping] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(feature table, per-layer table) of one run from its records (``sources.records``, one per
    step). ``losses`` is ``sources.losses.align_losses`` on the run's steps (None: no losses
    logged); ``series`` its diagram-series table with model and seed; ``flags`` the identity
    check's per-step flags."""
    keys = [{"model": name, "seed": 0, "step": int(s)} for s in steps]
    layers = layer_table(records, keys)
    features = checkpoint_features(layers)
    if "ww_fit" in layers:  # WeightWatcher's fields (topology.weightwatcher)
        features = features.merge(ww_features(layers), on=["model", "seed", "step"], how="left")
    if series is not None:
        features = features.merge(series_features(series), on=["model", "seed", "step"], how="left")
        layers = layers.merge(series, on=["model", "seed", "step", "layer"], how="left")
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
