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

import math

import numpy as np
import pandas as pd

from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    SCALE,
    contrast_cell,
    model_matrices,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.inference.seed_effect import effect_cell, effect_interval
from topotrain.analysis.inference.stats import ALPHA, benjamini_hochberg
from topotrain.analysis.inference.verdicts import decide_claim, paper_series
from topotrain.config import DEFAULTS

TARGET = "train_loss"
CLAIMS = {"h0_total": "2", "np_mean": "3", "h1_total": "4"}  # feature -> the paper's table
QUANTITY = "rho_{feature}_train_loss"
CONDITIONS = {"clock": None, "scale": SCALE}  # name -> the column its contrast is partial on
SESOI = DEFAULTS["analysis"]["sesoi"]  # Δ, the smallest effect of interest (docs/study.md)
EFFECT = ["effect", "effect_ci_low", "effect_ci_high"]
PRIMARY_COLUMNS = [
    "feature",
    "table",
    "models",
    "signs",
    "rho_clock",
    "p_clock",
    "effect_clock",
    "effect_clock_ci_low",
    "effect_clock_ci_high",
    "rho_scale",
    "p_scale",
    "effect_scale",
    "effect_scale_ci_low",
    "effect_scale_ci_high",
    "p",
    "p_bh",
    "arrangements",
    "rejected",
    *EFFECT,
    "sesoi",
    "verdict",
    "verdict_half_sesoi",
    "verdict_double_sesoi",
    "note",
]


def claimed_signs(paper: pd.DataFrame, feature: str) -> pd.Series:
    """The paper's sign of ρ(feature, train loss) at each size where its p < ALPHA."""
    table = CLAIMS[feature]
    rho = paper_series(paper, table, QUANTITY.format(feature=feature))
    p = paper_series(paper, table, "p")
    return np.sign(rho[p < ALPHA])


def claim_views(
    mats: list[dict[str, np.ndarray]],
    perms: list[np.ndarray],
    signs: list[float],
    feature: str,
    target: str = TARGET,
    seed: int = 0,
    views: dict[str, str | None] | None = None,
    alternative: str = "greater",
) -> dict:
    """Per view (``views``: name → the column its contrast is partial on, None for the plain
    one; default CONDITIONS, the clock and the scale): the pooled contrast, ``alternative`` in
    the claimed signs (rho_, p_), and its effect [equal-tailed 95 % interval] (effect_,
    effect_*_ci_low/high), over models given as raw matrices (``model_matrices``) with their
    seed permutations; and the first view's number of arrangements and note. The report's
    claims, the calibration suite and the confirmation on fresh seeds all call this."""
    out = {}
    for i, (name, cond) in enumerate((views or CONDITIONS).items()):
        view = PARTIAL if cond else "seed_contrast"
        nulls = [
            contrast_cell(m, feature, target, view, p, cond)[1]
            for m, p in zip(mats, perms, strict=True)
        ]
        res = pooled_row(nulls, view, alternative, seed, signs, cond)
        cells = [
            effect_cell(m, feature, target, view, p, cond, s)
            for m, p, s in zip(mats, perms, signs, strict=True)
        ]
        eff = effect_interval(cells, ALPHA, seed)
        out |= {f"rho_{name}": res["rho"], f"p_{name}": res["p"]}
        out |= {f"effect_{name}{c.removeprefix('effect')}": eff[c] for c in EFFECT}
        if i == 0:
            out["arrangements"] = math.prod(len(n) for n in nulls)
            out["note"] = "; ".join(filter(None, [res["note"], eff["effect_note"]]))
    return out


def claim_test(df: pd.DataFrame, feature: str, signs: pd.Series, seed: int = 0) -> dict:
    """claim_views over the claimed models that ``df`` holds."""
    models = [m for m in signs.index if m in set(df["model"])]
    out = {"models": ";".join(models), "signs": ";".join(f"{s:+.0f}" for s in signs[models])}
    if feature not in df or not models:
        return out | {"note": f"{feature} or the claimed models are not in the feature table"}
    columns = [c for c in (feature, TARGET, SCALE) if c in df]
    rows = [df[df["model"] == model] for model in models]
    mats = [model_matrices(r, columns) for r in rows]
    perms = [seed_permutations(r["seed"].nunique(), seed) for r in rows]
    return out | claim_views(mats, perms, list(signs[models]), feature, seed=seed)


def weaker_view(row: pd.Series) -> str:
    """The view whose p is the claim's (the larger: intersection–union); the clock on ties."""
    return "scale" if row["p_scale"] > row["p_clock"] else "clock"


def primary_family(
    df: pd.DataFrame | None, paper: pd.DataFrame, alpha: float = ALPHA, sesoi: float = SESOI
) -> pd.DataFrame:
    """PRIMARY_COLUMNS, one row per claim in CLAIMS: claim_test, p = max(p_clock, p_scale), p_bh
    over the family, rejected = p_bh < alpha, the effect [interval] of the weaker view, and the
    verdict by ``decide_claim`` at Δ = sesoi, Δ/2 and 2Δ. NaN p (no seeds to contrast: cannot be
    measured) stays NaN and is not counted in the family."""
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
    for i, row in out.iterrows():
        view = weaker_view(row)
        out.loc[i, EFFECT] = [row[f"effect_{view}{c.removeprefix('effect')}"] for c in EFFECT]
    out["sesoi"] = sesoi
    for column, delta in (
        ("verdict", sesoi),
        ("verdict_half_sesoi", sesoi / 2),
        ("verdict_double_sesoi", 2 * sesoi),
    ):
        out[column] = [_verdict(row, delta) for _, row in out.iterrows()]
    undefined = out["p"].isna()
    out.loc[undefined, "note"] = (
        out.loc[undefined, "note"].fillna("").astype(str)
        + "; cannot be measured: a between-seed contrast needs at least 2 seeds per model"
    ).str.lstrip("; ")
    return out


def _verdict(row: pd.Series, delta: float) -> str:
    rejected = None if pd.isna(row["p"]) else bool(row["rejected"])
    uppers = [row["effect_clock_ci_high"], row["effect_scale_ci_high"]]
    return decide_claim(rejected, uppers, delta)
