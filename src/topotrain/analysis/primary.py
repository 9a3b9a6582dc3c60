"""The pre-registered primary family: the paper's claims TP0, NP and TP1 against training loss.

Each claim says that, at every size where the paper reports p < α, ρ(feature, train loss) has the
paper's sign s_m. We test it beyond the clock and the scale with the between-seed contrasts
(``seed_contrast``): S = mean_m s_m·ρ_m over those sizes, one-sided in the claimed direction,
exact over the product of the models' seed permutations (1/7 776 at 5 models × 3 seeds), once
for ``seed_contrast`` (the clock) and once for ``seed_contrast_l2`` (the scale). A claim's p is
the larger of the two (intersection–union: both must hold), and Benjamini–Hochberg runs over
the family's three claims only; everything else in the tables is exploratory.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.seed_contrast import (
    CONTRAST_VIEWS,
    SCALE,
    contrast_cell,
    model_matrices,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.stats import ALPHA, benjamini_hochberg
from topotrain.analysis.verdicts import paper_series

TARGET = "train_loss"
CLAIMS = {"h0_total": "2", "np_mean": "3", "h1_total": "4"}  # feature -> the paper's table
QUANTITY = "rho_{feature}_train_loss"
PRIMARY_COLUMNS = [
    "feature",
    "table",
    "models",
    "signs",
    "rho_clock",
    "p_clock",
    "rho_scale",
    "p_scale",
    "p",
    "p_bh",
    "arrangements",
    "rejected",
    "note",
]


def claimed_signs(paper: pd.DataFrame, feature: str) -> pd.Series:
    """The paper's sign of ρ(feature, train loss) at each size where its p < ALPHA."""
    table = CLAIMS[feature]
    rho = paper_series(paper, table, QUANTITY.format(feature=feature))
    p = paper_series(paper, table, "p")
    return np.sign(rho[p < ALPHA])


def claim_test(df: pd.DataFrame, feature: str, signs: pd.Series, seed: int = 0) -> dict:
    """rho/p of the pooled one-sided contrast for the clock and the scale over the claimed models
    that ``df`` holds, and the number of arrangements of the clock's null."""
    models = [m for m in signs.index if m in set(df["model"])]
    out = {"models": ";".join(models), "signs": ";".join(f"{s:+.0f}" for s in signs[models])}
    if feature not in df or not models:
        return out | {"note": f"{feature} or the claimed models are not in the feature table"}
    columns = [c for c in (feature, TARGET, SCALE) if c in df]
    nulls = {view: [] for view in CONTRAST_VIEWS}
    for model in models:
        rows = df[df["model"] == model]
        mats = model_matrices(rows, columns)
        perms = seed_permutations(rows["seed"].nunique(), seed)
        for view in CONTRAST_VIEWS:
            nulls[view].append(contrast_cell(mats, feature, TARGET, view, perms)[1])
    for name, view in (("clock", "seed_contrast"), ("scale", "seed_contrast_l2")):
        res = pooled_row(nulls[view], view, seed, list(signs[models]))
        out |= {f"rho_{name}": res["rho"], f"p_{name}": res["p"]}
        if name == "clock":
            out["arrangements"] = int(np.prod([len(n) for n in nulls[view]]))
            out["note"] = res["note"]
    return out


def primary_family(
    df: pd.DataFrame | None, paper: pd.DataFrame, alpha: float = ALPHA
) -> pd.DataFrame:
    """PRIMARY_COLUMNS, one row per claim in CLAIMS: claim_test, p = max(p_clock, p_scale), p_bh
    over the family, rejected = p_bh < alpha. NaN p (no seeds to contrast: cannot be measured)
    stays NaN and is not counted in the family."""
    rows = []
    for feature, table in CLAIMS.items():
        base = {"feature": feature, "table": table}
        if df is None:
            rows.append(base | {"note": "no feature table"})
            continue
        rows.append(base | claim_test(df, feature, claimed_signs(paper, feature)))
    out = pd.DataFrame(rows).reindex(columns=PRIMARY_COLUMNS)
    out["p"] = out[["p_clock", "p_scale"]].max(axis=1, skipna=False)
    out["p_bh"] = benjamini_hochberg(out["p"].to_numpy(float))
    out["rejected"] = out["p_bh"] < alpha
    undefined = out["p"].isna()
    out.loc[undefined, "note"] = (
        out.loc[undefined, "note"].fillna("").astype(str)
        + "; cannot be measured: a between-seed contrast needs at least 2 seeds per model"
    ).str.lstrip("; ")
    return out
