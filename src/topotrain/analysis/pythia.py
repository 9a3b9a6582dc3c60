"""Pythia branch tables and statistics: features over revisions, correlations with perplexity.

Embedding features come in two kinds: topological (Vietoris–Rips of the PCA-reduced embeddings) and
spectral baselines (effective rank, participation ratio, eigenspectrum decay α).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from topotrain.analysis.aggregate import checkpoint_features, ww_features
from topotrain.analysis.inference.stats import benjamini_hochberg, spearman_ci
from topotrain.config import ALPHA, DEFAULTS
from topotrain.topology import registry
from topotrain.topology.spectral import SPECTRAL as SPECTRAL_KEYS
from topotrain.topology.vietoris_rips import UNNAMED

_PYTHIA = DEFAULTS["pythia"]  # the schema's pythia: defaults
_ANALYSIS_SEED = DEFAULTS["analysis"]["bootstrap_seed"]

TOPOLOGICAL = registry.diagram_features()  # of the embedding cloud, in the tested order
SPECTRAL = list(SPECTRAL_KEYS)  # the embedding cloud's spectral baselines


def read_records(paths: list[str | Path]) -> list[dict]:
    """The JSON documents written by the Pythia topology jobs."""
    docs = []
    for path in paths:
        with open(path) as fh:
            docs.append(json.load(fh))
    return docs


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


def embeddings_table(docs: list[dict], diagram_files: list[str | Path]) -> pd.DataFrame:
    """One row per (model, step): perplexity, topological and spectral features,
    H1 Wasserstein step, the Rips engine."""
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
    h1 = []
    for path in diagram_files:
        with np.load(path) as npz:
            h1.append(npz["h1"] if "h1" in npz.files else np.empty((0, 2)))
    table["_h1"] = h1
    table = table.sort_values(["model", "step"]).reset_index(drop=True)
    table["wasserstein_h1"] = np.concatenate(
        [h1_wasserstein_steps(list(g["_h1"])) for _, g in table.groupby("model", sort=False)]
    )
    return table.drop(columns="_h1")


def feature_kind(feature: str) -> str:
    """'spectral' for the spectral baselines, else 'topological'."""
    return "spectral" if feature in SPECTRAL else "topological"


def perplexity_correlations(
    table: pd.DataFrame,
    features: list[str] | None = None,
    n_resamples: int = _PYTHIA["bootstrap_resamples"],
    seed: int = _ANALYSIS_SEED,
) -> pd.DataFrame:
    """Per (model, feature): Spearman ρ (bootstrap CI) and Pearson r of the feature
    with perplexity."""
    features = features or [f for f in TOPOLOGICAL + SPECTRAL if f in table]
    rows = []
    for model, run in table.groupby("model", sort=False):
        for feature in features:
            res = spearman_ci(run[feature], run["perplexity"], n_resamples, seed=seed)
            x, y = run[feature].to_numpy(float), run["perplexity"].to_numpy(float)
            ok = np.isfinite(x) & np.isfinite(y)
            r = sps.pearsonr(x[ok], y[ok]) if ok.sum() >= 3 and np.ptp(x[ok]) > 0 else None
            rows.append(
                {
                    "model": model,
                    "feature": feature,
                    "kind": feature_kind(feature),
                    **res,
                    "pearson_r": r.statistic if r else np.nan,
                    "pearson_p": r.pvalue if r else np.nan,
                }
            )
    corr = pd.DataFrame(rows)
    corr["p_bh"] = benjamini_hochberg(corr["p"].to_numpy())
    corr["significant"] = corr["p_bh"] < ALPHA
    return corr


def topological_vs_spectral(corr: pd.DataFrame) -> pd.DataFrame:
    """Per feature: mean |ρ| with perplexity across models and whether it is significant
    in every one."""
    table = corr.groupby(["feature", "kind"], as_index=False).agg(
        mean_abs_rho=("rho", lambda r: float(np.nanmean(np.abs(r))) if r.notna().any() else np.nan),
        min_abs_rho=("rho", lambda r: float(np.nanmin(np.abs(r))) if r.notna().any() else np.nan),
        n_models=("model", "nunique"),
        significant_in_all=("significant", "all"),
    )
    return table.sort_values("mean_abs_rho", ascending=False).reset_index(drop=True)


def kind_summary(comparison: pd.DataFrame) -> pd.DataFrame:
    """Per kind (topological, spectral): best feature, its mean |ρ|,
    and how many are significant in all."""
    rows = []
    for kind_name, g in comparison.groupby("kind", sort=False):
        best = g.loc[g["mean_abs_rho"].idxmax()] if g["mean_abs_rho"].notna().any() else None
        rows.append(
            {
                "kind": kind_name,
                "n_features": len(g),
                "best_feature": best["feature"] if best is not None else "",
                "best_mean_abs_rho": best["mean_abs_rho"] if best is not None else np.nan,
                "mean_of_mean_abs_rho": g["mean_abs_rho"].mean(),
                "significant_in_all_models": int(g["significant_in_all"].sum()),
            }
        )
    return pd.DataFrame(rows)
