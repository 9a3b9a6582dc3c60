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
claimed sign in both conditions of the best view (``effect_signs``) and each model's own exact
test rules out a reversal by that view's Δ at α (``signs.ruled_out``; an intersection–union
rule, level α however strong the other models are; at 3 seeds a model's smallest exact p is 1/6,
so nothing is reproduced; ``calibration.sign_rule`` measures the rule). Beside the one-sided
test the effect's bound is the matching one-sided 1 − α bound; the "artefact" rule reads upper
bounds family-wise over 3 claims × 2 views (``decide_claim``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    PARTIAL_CO,
    SCALE,
    contrast_cell,
    lag1,
    model_matrices,
    pooled_row,
    seed_permutations,
    view_cell,
)
from topotrain.analysis.inference.seed_effect import effect_cell, effect_interval
from topotrain.analysis.inference.signs import (  # noqa: F401 (effect_signs: re-exported)
    all_held,
    effect_signs,
    joint_p,
    reversal_ps,
    ruled_out,
    signs_held,
)
from topotrain.analysis.inference.stats import ALPHA, benjamini_hochberg
from topotrain.analysis.inference.verdicts import (
    ARTEFACT,
    INCONCLUSIVE,
    REPRODUCED,
    REPRODUCED_SMALL,
    paper_series,
)
from topotrain.config import DEFAULTS
from topotrain.config.constants import PRIMARY_CLAIMS

TARGET = "train_loss"
CO_TARGET = "val_loss"  # the co-movement view's loss: measured on the checkpoint's own weights
CLAIMS = PRIMARY_CLAIMS  # feature -> the paper's table
QUANTITY = "rho_{feature}_train_loss"
CONDITIONS = {"clock": None, "scale": SCALE}  # name -> the column its contrast is partial on
# Design views of the family: name -> (its loss, {condition: (contrast view, conditioning)}).
# Each is tested beyond the clock and the scale (intersection–union); ``analysis.primary_views``
# names those whose p makes the claim's, the others are computed beside them (exploratory).
VIEWS = {
    "level": (TARGET, {"clock": ("seed_contrast", None), "scale": (PARTIAL, SCALE)}),
    "comove": (CO_TARGET, {"co_clock": ("seed_comove", None), "co_scale": (PARTIAL_CO, SCALE)}),
}
PRIMARY_VIEWS = tuple(DEFAULTS["analysis"]["primary_views"])
SESOI = DEFAULTS["analysis"]["sesoi"]  # Δ, the smallest effect of interest (docs/study.md)
SESOI_CO = DEFAULTS["analysis"]["sesoi_co"]  # Δ_co: the co-movement view's own (docs/study.md)
EFFECT = ["effect", "effect_ci_low", "effect_ci_high"]
MARGINS = {"": 1.0, "_half": 0.5, "_double": 2.0}  # reversal margins: the verdicts' Δ multiples
_PER_CONDITION = ["rho", "p", "effect", "effect_ci_low", "effect_ci_high", "effect_bound"]


def _condition_columns(name: str) -> list[str]:
    cols = [f"effect_signs_{name}", f"rho_{name}", f"p_{name}", f"effect_{name}"]
    return cols + [f"effect_{name}_{c}" for c in ("ci_low", "ci_high", "bound", "fw_high")]


PRIMARY_COLUMNS = [
    "feature",
    "table",
    "models",
    "signs",
    "signs_held",
    *[f"ruled_out{sfx}" for sfx in MARGINS],
    *[c for _, conds in VIEWS.values() for name in conds for c in _condition_columns(name)],
    *[f"p_{view}" for view in VIEWS],
    *[f"lag1_{view}" for view in VIEWS],
    "views",
    "best_view",
    "p",
    "p_bh",
    "arrangements",
    "rejected",
    *EFFECT,
    "sesoi",
    "sesoi_co",
    "verdict",
    "verdict_half_sesoi",
    "verdict_double_sesoi",
    "note",
]


def family_tests(views=PRIMARY_VIEWS) -> int:
    """The number of one-sided bounds "artefact" reads: every claim × every condition of every
    primary view (Bonferroni over them: each upper bound at 1 − α/family_tests)."""
    return len(CLAIMS) * sum(len(VIEWS[v][1]) for v in views)


FAMILY_TESTS = family_tests()


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
    view: str | None = None,
) -> list[np.ndarray]:
    """Per model, the null of its contrast ρ (observed first; ``contrast_cell``) in ``view``
    (default: partial on ``cond``, or the clock's plain seed contrast when it is None)."""
    view = view or (PARTIAL if cond else "seed_contrast")
    return [
        contrast_cell(m, feature, target, view, p, cond)[1]
        for m, p in zip(mats, perms, strict=True)
    ]


def _sign_text(values) -> str:
    return ";".join({1.0: "+1", -1.0: "-1"}.get(float(v), "0") for v in values)


def claim_views(
    mats: list[dict[str, np.ndarray]],
    perms: list[np.ndarray],
    signs: list[float],
    feature: str,
    target: str = TARGET,
    seed: int = 0,
    views: dict | None = None,
    alternative: str = "greater",
    family_tests: int | None = None,
    nulls_out: dict | None = None,
    margins: dict[str, float] | None = None,
) -> dict:
    """Per view (``views``: name → the column its contrast is partial on, None for the plain
    one, or → (contrast view, that column) for another view such as ``seed_comove``; default
    CONDITIONS, the clock and the scale): the pooled contrast, ``alternative`` in
    the claimed signs (rho_, p_), its effect [equal-tailed 95 % interval] (effect_,
    effect_*_ci_low/high) and each model's effect sign (effect_signs_; ``effect_signs``), over
    models given as raw matrices (``model_matrices``) with their seed permutations; signs_held
    ("k/K": models whose effect has the claimed sign in every view), and the first view's
    number of arrangements and note. With ``family_tests`` (a "greater" claim) also per view
    effect_*_bound, the one-sided 1 − α lower bound (the equal-tailed 1 − 2α interval's lower
    end), and effect_*_fw_high, the upper bound at 1 − α/family_tests (Bonferroni; the
    equal-tailed 2α/family_tests interval's upper end). ``nulls_out``: filled with each view's
    per-model nulls (``joint_p``). ``margins`` (label → m): ruled_out<label>, "k/K" models whose
    reversal by m is ruled out in every view (``signs.ruled_out``). The report's claims, the
    calibration suite and the confirmation on fresh seeds all call this."""
    if family_tests is not None and alternative != "greater":
        raise ValueError("one-sided bounds are drawn for a 'greater' claim only")
    out, by_view, reversal = {}, [], {label: [] for label in margins or {}}
    for i, (name, spec) in enumerate((views or CONDITIONS).items()):
        view, cond = spec if isinstance(spec, tuple) else (PARTIAL if spec else None, spec)
        view = view or "seed_contrast"
        nulls = view_nulls(mats, perms, feature, target, cond, view)
        if nulls_out is not None:
            nulls_out[name] = nulls
        res = pooled_row(nulls, view, alternative, seed, signs, cond)
        by_view.append(effect_signs(nulls))
        cells = [
            effect_cell(m, feature, target, view, p, cond, s)
            for m, p, s in zip(mats, perms, signs, strict=True)
        ]
        eff = effect_interval(cells, ALPHA, seed)
        for label, margin in (margins or {}).items():
            reversal[label].append(reversal_ps(cells, margin, seed))
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
    for label, ps in reversal.items():
        out[f"ruled_out{label}"] = f"{int(ruled_out(ps).sum())}/{len(held)}"
    return out | {"signs_held": f"{int(held.sum())}/{len(held)}"}


def claim_test(
    df: pd.DataFrame,
    feature: str,
    signs: pd.Series,
    seed: int = 0,
    primary_views=PRIMARY_VIEWS,
    deltas: dict[str, float] | None = None,
) -> dict:
    """claim_views of every design view (VIEWS, each on its own loss) over the claimed models
    that ``df`` holds, with the family's bounds (``family_tests``) and each model's reversal
    test at MARGINS × the view's Δ (``deltas``: view → Δ, default (SESOI, SESOI_CO)); p_<view>,
    the larger of a view's conditions' p (intersection–union), and p, the claim's over
    ``primary_views``: that view's p alone, or the joint min-p over them (``joint_p``). The
    note names each model whose effect lacks its claimed sign."""
    deltas = deltas or {"level": SESOI, "comove": SESOI_CO}
    models = [m for m in signs.index if m in set(df["model"])]
    out = {"models": ";".join(models), "signs": ";".join(f"{s:+.0f}" for s in signs[models])}
    if feature not in df or not models:
        return out | {"note": f"{feature} or the claimed models are not in the feature table"}
    columns = [c for c in (feature, TARGET, CO_TARGET, SCALE) if c in df]
    rows = [df[df["model"] == model] for model in models]
    mats = [model_matrices(r, columns) for r in rows]
    perms = [seed_permutations(r["seed"].nunique(), seed) for r in rows]
    claimed = list(signs[models])
    nulls: dict[str, dict] = {}
    tests = family_tests(primary_views)
    for name, (target, conds) in VIEWS.items():
        if target not in df:
            out[f"p_{name}"] = np.nan
            continue
        nulls[name] = {}
        margins = {sfx: k * deltas[name] for sfx, k in MARGINS.items()}
        res = claim_views(
            mats,
            perms,
            claimed,
            feature,
            target,
            seed,
            conds,
            "greater",
            tests,
            nulls[name],
            margins,
        )
        out |= {k: v for k, v in res.items() if k not in out or name == primary_views[0]}
        out[f"held_{name}"] = res["signs_held"]
        out |= {f"ruled_{name}{sfx}": res[f"ruled_out{sfx}"] for sfx in MARGINS}
        out[f"p_{name}"] = max(res[f"p_{c}"] for c in conds)
        out[f"lag1_{name}"] = persistence(mats, feature, target, next(iter(conds.values()))[0])
    out |= _claim_p(out, nulls, claimed, primary_views, seed)
    conds = list(VIEWS[out["best_view"]][1]) if "best_view" in out else []
    failed = _sign_failures(out, models, claimed, conds)
    if failed:
        why = f"effect sign ({'/'.join(conds)}) not the claimed one: " + ", ".join(failed)
        out["note"] = "; ".join(filter(None, [out.get("note", ""), why]))
    return out


def _sign_failures(out: dict, models: list[str], claimed: list[float], conds: list[str]) -> list:
    """'model (+1/−1, claimed −1)' for each model whose effect sign (effect_signs_<c>) is not its
    claimed one in every condition ``conds`` of the best view; [] when those were not drawn."""
    if not conds or f"effect_signs_{conds[0]}" not in out:
        return []
    given = {c: out[f"effect_signs_{c}"].split(";") for c in conds}
    return [
        f"{m} ({'/'.join(given[c][i] for c in conds)}, claimed {s:+.0f})"
        for i, (m, s) in enumerate(zip(models, claimed, strict=True))
        if not all(given[c][i] == f"{s:+.0f}" for c in conds)
    ]


def persistence(mats: list[dict[str, np.ndarray]], feature: str, target: str, view: str) -> float:
    """Mean over models of the lag-1 autocorrelation of the feature's deviations as ``view``
    transforms them (``seed_contrast.lag1``): how much persistence the view leaves, near 1 for
    levels that keep their offsets, near 0 (or below) for co-movement."""
    values = []
    for m in mats:
        _, cell = view_cell(m, feature, target, view)
        if cell is not None and cell[feature].shape[1] > 1:
            values.append(lag1(cell[feature]))
    return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")


def _claim_p(out: dict, nulls: dict, signs: list[float], views, seed: int) -> dict:
    """p (the claim's), views, best_view (the primary view of smallest p) and its signs_held."""
    given = [v for v in views if np.isfinite(out.get(f"p_{v}", np.nan))]
    if not given:
        return {"p": np.nan, "views": "+".join(views), "best_view": views[0]}
    best = min(given, key=lambda v: out[f"p_{v}"])
    p = out[f"p_{best}"] if len(given) == 1 else joint_p([nulls[v] for v in given], signs, seed)
    res = {"p": p, "views": "+".join(given), "best_view": best, "signs_held": out[f"held_{best}"]}
    res |= {f"ruled_out{sfx}": out[f"ruled_{best}{sfx}"] for sfx in MARGINS}
    if len(given) < len(views):
        lost = ", ".join(v for v in views if v not in given)
        res["note"] = "; ".join(filter(None, [out.get("note", ""), f"no {lost} view (its loss?)"]))
    return res


def weaker_view(row: pd.Series, conds=CONDITIONS) -> str:
    """The condition whose p is the view's (the larger: intersection–union); the first on ties."""
    names = list(conds)
    return max(names, key=lambda c: (row[f"p_{c}"], -names.index(c)))


def primary_family(
    df: pd.DataFrame | None,
    paper: pd.DataFrame,
    alpha: float = ALPHA,
    sesoi: float = SESOI,
    sesoi_co: float = SESOI_CO,
    primary_views=PRIMARY_VIEWS,
) -> pd.DataFrame:
    """PRIMARY_COLUMNS, one row per claim in CLAIMS: claim_test over every design view (VIEWS),
    p the claim's over ``primary_views`` (``claim_test``), p_bh over the family, rejected =
    p_bh < alpha (the pooled test alone), the best primary view's effect (its weaker condition's)
    with its one-sided 1 − α bound (effect_ci_low; effect_ci_high = +∞), and the verdict at
    (Δ, Δ_co) = (sesoi, sesoi_co), halved and doubled (``view_verdict``). The views are the
    config's, fixed before the data. NaN p (no seeds to contrast: cannot be measured) stays NaN
    and is not counted in the family."""
    unknown = sorted(set(primary_views) - set(VIEWS))
    if unknown or not primary_views:
        raise ValueError(
            f"analysis.primary_views: {unknown or 'empty'}; choose from {', '.join(VIEWS)}"
        )
    views = tuple(primary_views)
    rows = []
    for feature, table in CLAIMS.items():
        base = {"feature": feature, "table": table}
        if df is None:
            rows.append(base | {"note": "no feature table", "views": "+".join(views)})
            continue
        deltas = {"level": sesoi, "comove": sesoi_co}
        rows.append(base | claim_test(df, feature, claimed_signs(paper, feature), 0, views, deltas))
    out = pd.DataFrame(rows).reindex(columns=PRIMARY_COLUMNS)
    out["p_bh"] = benjamini_hochberg(out["p"].to_numpy(float))
    out["rejected"] = out["p_bh"] < alpha
    for i, row in out.iterrows():
        best = row["best_view"] if isinstance(row["best_view"], str) else views[0]
        cond = weaker_view(row, VIEWS[best][1])
        bound = row[f"effect_{cond}_bound"]
        out.loc[i, EFFECT] = [row[f"effect_{cond}"], bound, np.inf if pd.notna(bound) else np.nan]
    out["sesoi"], out["sesoi_co"] = sesoi, sesoi_co
    for column, sfx in (
        ("verdict", ""),
        ("verdict_half_sesoi", "_half"),
        ("verdict_double_sesoi", "_double"),
    ):
        k = MARGINS[sfx]
        deltas = {"level": k * sesoi, "comove": k * sesoi_co}
        out[column] = [view_verdict(r, views, deltas, f"ruled_out{sfx}") for _, r in out.iterrows()]
    undefined = out["p"].isna()
    out.loc[undefined, "note"] = (
        out.loc[undefined, "note"].fillna("").astype(str)
        + "; cannot be measured: a between-seed contrast needs at least 2 seeds per model"
    ).str.lstrip("; ")
    return out


def view_verdict(row: pd.Series, views, deltas: dict[str, float], ruled: str = "ruled_out") -> str:
    """The claim's verdict: reproduced when its test rejects (``rejected``), every claimed
    model's effect has its sign in the best primary view (signs_held) and every claimed model's
    reversal by that view's Δ is ruled out (column ``ruled``, "k/K"); "shown small" in a view
    when one of its conditions' family-wise upper bound (effect_*_fw_high) lies below that
    view's Δ; artefact only when every primary view shows it small (a view that cannot rule an
    effect out leaves the claim open); "reproduced, below Δ" when it rejects and the best view
    shows it small; inconclusive otherwise and when the test cannot be measured."""
    if pd.isna(row["p"]):
        return INCONCLUSIVE
    small = {
        v: any(
            np.isfinite(u) and u < deltas[v]
            for u in (row[f"effect_{c}_fw_high"] for c in VIEWS[v][1])
        )
        for v in views
    }
    best = row["best_view"] if isinstance(row["best_view"], str) else views[0]
    if bool(row["rejected"]) and all_held(row["signs_held"]) and all_held(row.get(ruled)):
        return REPRODUCED_SMALL if small[best] else REPRODUCED
    return ARTEFACT if all(small.values()) else INCONCLUSIVE
