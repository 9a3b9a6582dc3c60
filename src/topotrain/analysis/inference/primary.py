"""The pre-registered primary family: the paper's claims TP0, NP and TP1 against training loss.

Each claim says that, at every size where the paper reports p < α, ρ(feature, train loss) has the
paper's sign s_m. We test it beyond the clock and the scale with the between-seed contrasts
(``seed_contrast``): S = mean_m s_m·ρ_m over those sizes, one-sided in the claimed direction,
exact over the product of the models' seed permutations (1/7 776 at 5 models × 3 seeds), once
for ``seed_contrast`` (the clock) and once for ``seed_contrast_l2`` (the scale). A claim's p is
the larger of the two (intersection–union: both must hold), and Benjamini–Hochberg runs over
the family's three claims only; everything else in the tables is exploratory.

S tests a global null, so strong models can carry one whose effect has the other sign: a claim
is reproduced only if, besides, every claimed model's between-seed effect estimate has its
claimed sign in both views (``effect_signs``; at 3 seeds a model's own exact p is at least 1/6,
so a sign of its estimate is all one model can show; ``calibration.sign_rule`` measures the
rule). Beside the one-sided test the effect's bound is the matching one-sided 1 − α bound; the
"artefact" rule reads upper bounds family-wise over 3 claims × 2 views (``decide_claim``).
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
    permutation_p,
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
FAMILY_TESTS = len(CLAIMS) * len(CONDITIONS)  # "artefact"'s bounds: Bonferroni over these
EFFECT = ["effect", "effect_ci_low", "effect_ci_high"]
PRIMARY_COLUMNS = [
    "feature",
    "table",
    "models",
    "signs",
    "signs_held",
    "effect_signs_clock",
    "effect_signs_scale",
    "rho_clock",
    "p_clock",
    "effect_clock",
    "effect_clock_ci_low",
    "effect_clock_ci_high",
    "effect_clock_bound",
    "effect_clock_fw_high",
    "rho_scale",
    "p_scale",
    "effect_scale",
    "effect_scale_ci_low",
    "effect_scale_ci_high",
    "effect_scale_bound",
    "effect_scale_fw_high",
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


def view_nulls(
    mats: list[dict[str, np.ndarray]],
    perms: list[np.ndarray],
    feature: str,
    target: str,
    cond: str | None,
) -> list[np.ndarray]:
    """Per model, the null of its contrast ρ (observed first; ``contrast_cell``) in the view
    partial on ``cond`` (None: the clock's plain seed contrast)."""
    view = PARTIAL if cond else "seed_contrast"
    return [
        contrast_cell(m, feature, target, view, p, cond)[1]
        for m, p in zip(mats, perms, strict=True)
    ]


def effect_signs(nulls: list[np.ndarray]) -> np.ndarray:
    """Per model, the sign of its between-seed effect's Hodges–Lehmann estimate in the raw
    direction (``seed_effect``, one model): +1 when its observed ρ lies above the centre of its
    seed-permutation null (p_greater < p_less), −1 below, 0 on a balance or where undefined. At
    β0 = 0 the effect's test is the contrast's, and g = p_greater − p_less rises with β0, so the
    estimate (where g crosses 0) has this sign."""
    out = np.zeros(len(nulls))
    for i, null in enumerate(nulls):
        if np.isfinite(null[0]):
            out[i] = np.sign(permutation_p(null, "less") - permutation_p(null, "greater"))
    return out


def signs_held(signs: list[float], by_view: list[np.ndarray]) -> np.ndarray:
    """Per model, whether its effect has its claimed sign s_m in every view (``effect_signs``)."""
    return np.all([np.asarray(e) == np.asarray(signs) for e in by_view], axis=0)


def _sign_text(values) -> str:
    return ";".join({1.0: "+1", -1.0: "-1"}.get(float(v), "0") for v in values)


def claim_views(
    mats: list[dict[str, np.ndarray]],
    perms: list[np.ndarray],
    signs: list[float],
    feature: str,
    target: str = TARGET,
    seed: int = 0,
    views: dict[str, str | None] | None = None,
    alternative: str = "greater",
    family_tests: int | None = None,
) -> dict:
    """Per view (``views``: name → the column its contrast is partial on, None for the plain
    one; default CONDITIONS, the clock and the scale): the pooled contrast, ``alternative`` in
    the claimed signs (rho_, p_), its effect [equal-tailed 95 % interval] (effect_,
    effect_*_ci_low/high) and each model's effect sign (effect_signs_; ``effect_signs``), over
    models given as raw matrices (``model_matrices``) with their seed permutations; signs_held
    ("k/K": models whose effect has the claimed sign in every view), and the first view's
    number of arrangements and note. With ``family_tests`` (a "greater" claim) also per view
    effect_*_bound, the one-sided 1 − α lower bound (the equal-tailed 1 − 2α interval's lower
    end), and effect_*_fw_high, the upper bound at 1 − α/family_tests (Bonferroni; the
    equal-tailed 2α/family_tests interval's upper end). The report's claims, the calibration
    suite and the confirmation on fresh seeds all call this."""
    if family_tests is not None and alternative != "greater":
        raise ValueError("one-sided bounds are drawn for a 'greater' claim only")
    out, by_view = {}, []
    for i, (name, cond) in enumerate((views or CONDITIONS).items()):
        view = PARTIAL if cond else "seed_contrast"
        nulls = view_nulls(mats, perms, feature, target, cond)
        res = pooled_row(nulls, view, alternative, seed, signs, cond)
        by_view.append(effect_signs(nulls))
        cells = [
            effect_cell(m, feature, target, view, p, cond, s)
            for m, p, s in zip(mats, perms, signs, strict=True)
        ]
        eff = effect_interval(cells, ALPHA, seed)
        out |= {f"rho_{name}": res["rho"], f"p_{name}": res["p"]}
        out |= {f"effect_{name}{c.removeprefix('effect')}": eff[c] for c in EFFECT}
        out[f"effect_signs_{name}"] = _sign_text(by_view[-1])
        if family_tests is not None:
            out[f"effect_{name}_bound"] = effect_interval(cells, 2 * ALPHA, seed)["effect_ci_low"]
            fw = effect_interval(cells, 2 * ALPHA / family_tests, seed)
            out[f"effect_{name}_fw_high"] = fw["effect_ci_high"]
        if i == 0:
            out["arrangements"] = math.prod(len(n) for n in nulls)
            out["note"] = "; ".join(filter(None, [res["note"], eff["effect_note"]]))
    held = signs_held(signs, by_view)
    return out | {"signs_held": f"{int(held.sum())}/{len(held)}"}


def claim_test(df: pd.DataFrame, feature: str, signs: pd.Series, seed: int = 0) -> dict:
    """claim_views over the claimed models that ``df`` holds, with the family's bounds
    (FAMILY_TESTS); the note names each model whose effect lacks its claimed sign."""
    models = [m for m in signs.index if m in set(df["model"])]
    out = {"models": ";".join(models), "signs": ";".join(f"{s:+.0f}" for s in signs[models])}
    if feature not in df or not models:
        return out | {"note": f"{feature} or the claimed models are not in the feature table"}
    columns = [c for c in (feature, TARGET, SCALE) if c in df]
    rows = [df[df["model"] == model] for model in models]
    mats = [model_matrices(r, columns) for r in rows]
    perms = [seed_permutations(r["seed"].nunique(), seed) for r in rows]
    claimed = list(signs[models])
    res = claim_views(mats, perms, claimed, feature, seed=seed, family_tests=FAMILY_TESTS)
    failed = [
        f"{m} ({'/'.join(res[f'effect_signs_{v}'].split(';')[i] for v in CONDITIONS)}, claimed "
        f"{s:+.0f})"
        for i, (m, s) in enumerate(zip(models, claimed, strict=True))
        if not all(res[f"effect_signs_{v}"].split(";")[i] == f"{s:+.0f}" for v in CONDITIONS)
    ]
    if failed:
        why = "effect sign (clock/scale) not the claimed one: " + ", ".join(failed)
        res["note"] = "; ".join(filter(None, [res["note"], why]))
    return out | res


def weaker_view(row: pd.Series) -> str:
    """The view whose p is the claim's (the larger: intersection–union); the clock on ties."""
    return "scale" if row["p_scale"] > row["p_clock"] else "clock"


def all_held(held: object) -> bool:
    """Whether signs_held ("k/K") counts every claimed model (K > 0)."""
    k, _, total = str(held).partition("/")
    return total.isdigit() and int(total) > 0 and k == total


def primary_family(
    df: pd.DataFrame | None, paper: pd.DataFrame, alpha: float = ALPHA, sesoi: float = SESOI
) -> pd.DataFrame:
    """PRIMARY_COLUMNS, one row per claim in CLAIMS: claim_test, p = max(p_clock, p_scale), p_bh
    over the family, rejected = p_bh < alpha (the pooled test alone), the weaker view's effect
    with its one-sided 1 − α bound (effect_ci_low; effect_ci_high = +∞), and the verdict by
    ``decide_claim`` at Δ = sesoi, Δ/2 and 2Δ: it rejects only if the test rejects and every
    claimed model's effect has its sign (signs_held), and reads the family-wise upper bounds
    (effect_*_fw_high). NaN p (no seeds to contrast: cannot be measured) stays NaN and is not
    counted in the family."""
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
        bound = row[f"effect_{view}_bound"]
        out.loc[i, EFFECT] = [row[f"effect_{view}"], bound, np.inf if pd.notna(bound) else np.nan]
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
    """decide_claim on the test and every sign together, with the family-wise upper bounds."""
    rejected = None if pd.isna(row["p"]) else bool(row["rejected"]) and all_held(row["signs_held"])
    uppers = [row[f"effect_{view}_fw_high"] for view in CONDITIONS]
    return decide_claim(rejected, uppers, delta)
