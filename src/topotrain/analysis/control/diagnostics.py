"""The grokking control beside the field's weight diagnostics, where the answer is known.

One row per topological feature (``grokking.TOPOLOGY``), per WeightWatcher metric of the control's
matrices (``ww_*_mean``) and per reference (Nanda et al.'s Fourier measure, the known progress
measure, and the weight norm), over every seed:
- ``raw_rho``: Spearman ρ with test loss over each seed's checkpoints, averaged over seeds (what a
  user watching one run sees, the clock included);
- the between-seed contrast with test loss (``seed_contrast``: the clock removed): ρ, exact p
  over all k! seed orders, and the effect β with its 95 % interval (``seed_effect``; none below
  ``MIN_ARRANGEMENTS`` orders, i.e. with fewer than 5 seeds);
- beyond α (the split-half partial on α over alternate matrices, given where the halves agree:
  split_r ≥ 0.5; ``inference.diagnostics``) and, with ``baselines.llc`` on, beyond the LLC (the
  same test on the LLC of two halves of its chains, split_r_llc ≥ 0.5), the LLC being a row too;
- beyond the weight norm, the Fourier measure and the layers' weight variance: the contrast
  partial on each (``PARTIAL``): ρ, p and whether it rejects in the plain contrast's sign (a
  partial ρ of the other sign rejects nothing: the feature's link is the other way round once
  that column is removed).

The report (``report.control.monitor_sentence``) says, with these numbers, whether WeightWatcher's α
finds what the Fourier measure finds here. Every row is exploratory.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from topotrain.analysis.control.grokking import FOURIER, NORM, TARGET, TOPOLOGY, WVAR
from topotrain.analysis.inference.diagnostics import (
    MONITOR_COLUMNS,
    SPLITS,
    halves_agree,
    rejects_in_sign,
    split_cell,
    split_r_column,
)
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    contrast_cell,
    model_matrices,
    seed_permutations,
)
from topotrain.analysis.inference.seed_effect import effect_cell, effect_interval
from topotrain.analysis.inference.stats import ALPHA, LLC_FEATURES
from topotrain.baselines.weightwatcher import METRICS as WW_METRICS

WW = [f"ww_{m}_mean" for m in WW_METRICS]
REFERENCES = [FOURIER, NORM]
BEYOND = {"norm": NORM, "fourier": FOURIER, "wvar": WVAR}
CONTROL_DIAGNOSTICS_COLUMNS = [
    "feature",
    "kind",
    "raw_rho",
    "contrast_rho",
    "contrast_p",
    "effect",
    "effect_ci_low",
    "effect_ci_high",
    *[f"{c}_{name}" for name in BEYOND for c in ("rho", "p", "beats")],
    *MONITOR_COLUMNS,
]


def kind_of(feature: str) -> str:
    if feature in TOPOLOGY:
        return "topological"
    if feature in LLC_FEATURES:
        return "llc"
    return "weightwatcher" if feature.startswith("ww_") else "reference"


def raw_rho(df: pd.DataFrame, feature: str, target: str = TARGET) -> float:
    """Mean over seeds of Spearman ρ(feature, target) over the seed's checkpoints (NaN where a
    seed's series is constant)."""
    rhos = []
    for _, g in df.groupby("seed", sort=True):
        ok = g[[feature, target]].dropna()
        if len(ok) > 2 and ok[feature].nunique() > 1 and ok[target].nunique() > 1:
            rhos.append(stats.spearmanr(ok[feature], ok[target]).statistic)
    return float(np.mean(rhos)) if rhos else float("nan")


def control_diagnostics(df: pd.DataFrame, seed: int = 0, alpha: float = ALPHA) -> pd.DataFrame:
    """CONTROL_DIAGNOSTICS_COLUMNS for the features of TOPOLOGY, WW and REFERENCES that ``df``
    (the control's features, one row per seed and checkpoint) has: topological rows first, then
    WeightWatcher's, then the references."""
    features = [f for f in (*TOPOLOGY, *WW, *LLC_FEATURES, *REFERENCES) if f in df]
    halves = [h for pair in SPLITS.values() for h in pair]
    conds = [c for c in (*BEYOND.values(), *halves) if c in df]
    mats = model_matrices(df, sorted({*features, TARGET, *conds}))
    perms = seed_permutations(df["seed"].nunique(), seed)
    rows = []
    for feature in features:
        plain, _ = contrast_cell(mats, feature, TARGET, "seed_contrast", perms)
        cell = effect_cell(mats, feature, TARGET, "seed_contrast", perms)
        effect = effect_interval([cell], alpha, seed)
        row = {
            "feature": feature,
            "kind": kind_of(feature),
            "raw_rho": raw_rho(df, feature),
            "contrast_rho": plain["rho"],
            "contrast_p": plain["p"],
            **{k: effect[k] for k in ("effect", "effect_ci_low", "effect_ci_high")},
        }
        for name, cond in BEYOND.items():
            part, _ = contrast_cell(mats, feature, TARGET, PARTIAL, perms, cond=cond)
            p = part["p"] if cond in mats and cond != feature else np.nan
            row[f"rho_{name}"] = part["rho"] if np.isfinite(p) else np.nan
            row[f"p_{name}"] = p
            row[f"beats_{name}"] = rejects_in_sign(p, part["rho"], plain["rho"], alpha)
        for name in SPLITS:
            row |= _beyond_split(mats, feature, perms, plain["rho"], alpha, name)
        rows.append(row)
    return pd.DataFrame(rows, columns=CONTROL_DIAGNOSTICS_COLUMNS)


def _beyond_split(
    mats: dict, feature: str, perms, plain_rho: float, alpha: float, name: str = "alpha"
) -> dict:
    """The split-half partial on the halves of SPLITS[name] (α over alternate matrices, or the
    LLC of two halves of its chains: ``inference.diagnostics``' beyond α / the LLC), given where
    the halves agree (``halves_agree``); split_r (α's) or split_r_llc."""
    r_col = split_r_column(name)
    out = {f"rho_{name}": np.nan, f"p_{name}": np.nan, f"beats_{name}": False, r_col: np.nan}
    pair = SPLITS[name]
    if not all(h in mats for h in pair) or feature == name:
        return out
    cell, _ = split_cell(mats, feature, TARGET, pair, perms)
    out[r_col] = cell["split_r"]
    if not halves_agree(cell["split_r"]):
        return out
    beats = rejects_in_sign(cell["p"], cell["rho"], plain_rho, alpha)
    return out | {f"rho_{name}": cell["rho"], f"p_{name}": cell["p"], f"beats_{name}": beats}
