"""Study B's measures on the Pythia branch: the embedding features against perplexity, per model,
and the topological features beside the spectral baselines (``pythia_claims`` reads them).

Embedding features come in two kinds: topological (Vietoris–Rips of the PCA-reduced embeddings) and
spectral baselines (effective rank, participation ratio, eigenspectrum decay α).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from topotrain.analysis.inference.stats import benjamini_hochberg, spearman_ci
from topotrain.config import ALPHA, DEFAULTS
from topotrain.topology import registry
from topotrain.topology.spectral import SPECTRAL as SPECTRAL_KEYS

_PYTHIA = DEFAULTS["pythia"]  # the schema's pythia: defaults
_ANALYSIS_SEED = DEFAULTS["analysis"]["bootstrap_seed"]

TOPOLOGICAL = registry.diagram_features()  # of the embedding cloud, in the tested order
SPECTRAL = list(SPECTRAL_KEYS)  # the embedding cloud's spectral baselines


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
