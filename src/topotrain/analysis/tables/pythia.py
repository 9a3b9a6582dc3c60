"""Pythia branch tables: features over revisions (the weights' and the embeddings'), one row per
(model, step). Their correlations with perplexity: ``replication.perplexity``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.tables.aggregate import checkpoint_features, ww_features
from topotrain.topology.vietoris_rips import UNNAMED


def weights_table(docs: list[dict]) -> pd.DataFrame:
    """One row per (model, step): the checkpoint table's reductions over layers of every
    registered feature (``aggregate.checkpoint_features``: NP mean/std, H0/H1 totals summed, …),
    the Rips engine that computed them, and WeightWatcher's ``ww_*_mean`` (over the layers it
    fitted), ``ww_small_layers`` and ``ww_skipped_layers`` where the records carry its fields."""
    layers, ww = [], []
    for doc in docs:
        keys = {"model": doc["model"], "seed": 0, "step": doc["step"]}
        frame = pd.DataFrame(doc["layers"]).assign(**keys)
        layers.append(frame.assign(engine=doc.get("engine", UNNAMED)))
        if "ww_fit" in frame:
            ww.append(frame)
    table = checkpoint_features(pd.concat(layers, ignore_index=True)).drop(columns="seed")
    if ww:
        means = ww_features(pd.concat(ww, ignore_index=True)).drop(columns="seed")
        table = table.merge(means, on=["model", "step"], how="left")
    return table.sort_values(["model", "step"]).reset_index(drop=True)


def add_step_flags(table: pd.DataFrame, flags: dict[tuple[str, int], dict]) -> pd.DataFrame:
    """table with the columns same_weights_as (';'-joined steps whose weights it shares) and
    equals_final per (model, step), from ``sources.identity.series_flags``; '' and None where
    the series was not checked."""
    keys = [(m, int(s)) for m, s in zip(table["model"], table["step"], strict=True)]
    return table.assign(
        same_weights_as=[flags[k]["same_weights_as"] if k in flags else "" for k in keys],
        equals_final=[flags[k]["equals_final"] if k in flags else None for k in keys],
    )


def h1_wasserstein_steps(diagrams: list[np.ndarray]) -> np.ndarray:
    """Wasserstein (p=2, persim) distance between consecutive H1 diagrams; NaN for the first."""
    from persim import wasserstein

    out = [np.nan]
    for prev, cur in zip(diagrams[:-1], diagrams[1:], strict=True):
        a, b = (d[np.isfinite(d).all(axis=1)] if d.size else np.empty((0, 2)) for d in (prev, cur))
        out.append(0.0 if a.size == 0 and b.size == 0 else float(wasserstein(a, b)))
    return np.asarray(out)


def embeddings_table(docs: list[dict], h1: list[np.ndarray]) -> pd.DataFrame:
    """One row per (model, step): perplexity, topological and spectral features,
    H1 Wasserstein step (``h1``: each record's H1 diagram), the Rips engine."""
    rows = [
        {
            "model": d["model"],
            "step": d["step"],
            **d["features"],
            "engine": d.get("engine", UNNAMED),
        }
        for d in docs
    ]
    table = pd.DataFrame(rows)
    table["_h1"] = list(h1)
    table = table.sort_values(["model", "step"]).reset_index(drop=True)
    table["wasserstein_h1"] = np.concatenate(
        [h1_wasserstein_steps(list(g["_h1"])) for _, g in table.groupby("model", sort=False)]
    )
    return table.drop(columns="_h1")
