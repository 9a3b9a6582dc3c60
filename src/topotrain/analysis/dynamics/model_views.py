"""The per-run association rows of one model's runs (rule run_views: one run's), the RUN_VIEWS
rows of the associations table and of every layer-type split, computed as soon as the run is
aggregated (rule aggregate_run), while other runs still train, instead of after the last
topology job. A run's rows depend only on that run (every cell seeds its own resampling:
``associations.cell_seed``; a split's features are aggregated a run at a time,
``layer_types.split_tables``), so the tables built from them (rules associations and
layer_types, ``run_rows=``) are those built from the whole feature table at once.
"""

from __future__ import annotations

import pandas as pd

from topotrain.analysis.dynamics.layer_types import NAMES, split_tables
from topotrain.analysis.inference.associations import feature_list, view_rows
from topotrain.config import DEFAULTS

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults


def model_run_rows(
    features: pd.DataFrame,
    layers: pd.DataFrame,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    threads: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(associations' RUN_VIEWS rows, every split's with its split and group columns) of the
    runs of ``features`` (a model's feature table) and ``layers`` (its per-layer table): every
    run of every table one task of one pool of ``threads`` processes."""
    if features["model"].nunique() != 1:
        raise ValueError(
            f"model views: the feature table holds models {sorted(features['model'].unique())}, "
            "not one"
        )
    splits = split_tables(layers, features)
    tables = [(features, feature_list(features))]
    tables += [(table, feature_list(table, NAMES)) for _, _, table, _ in splits]
    kw = dict(n_resamples=n_resamples, seed=seed, threads=threads)
    assoc, *parts = view_rows(tables, **kw)
    keys = [(split, group) for split, group, _, _ in splits]
    parts = [p.assign(split=s, group=g) for p, (s, g) in zip(parts, keys, strict=True)]
    layer_rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return assoc, layer_rows
