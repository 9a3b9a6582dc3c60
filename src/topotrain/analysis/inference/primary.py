"""The pre-registered primary family: the paper's claims TP0, NP and TP1 against the loss.

Each claim says that, at every size where the paper reports p < α, ρ(feature, loss) has the
paper's sign s_m. Two questions ask it between seeds, each with its own verdict (issue 56):
*moves with* (``QUESTIONS``: the co-movement view, val loss: when a seed's loss moves more than
its siblings', does its feature move too?) and *ranks* (the level view, train loss: at the same
step, is the seed with the lower loss the one with the higher feature?). Per question the view is
tested beyond the clock and beyond the norm (``VIEWS``: its two conditions) with the between-seed
contrasts (``seed_contrast``): S = mean_m s_m·ρ_m over the claimed sizes, one-sided in the
claimed direction, exact over the product of the models' seed permutations (1/7 776 at 5 models ×
3 seeds). The question's p is the larger of its two conditions' (intersection–union: both must
hold), Benjamini–Hochberg runs over the three claims within the question, and its family-wise
upper bounds are Bonferroni over its 3 claims × 2 conditions (``family_tests``). Everything else
in the tables is exploratory. The questions, their views and each question's verdict are
``questions``' (``question_verdict``, ``answer_question``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from topotrain.analysis.inference.questions import (  # noqa: F401 (the questions' names: re-exported)
    BOTTOM_LINE_QUESTION,
    CO_TARGET,
    CONDITIONS,
    MARGINS,
    QUESTION_NAMES,
    QUESTIONS,
    TARGET,
    VERDICT_SUFFIXES,
    VIEWS,
    answer_question,
    clock_condition,
    norm_condition,
    present_beyond_clock,
    question_columns,
    question_verdict,
    weaker_view,
)
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    SCALE,
    contrast_cell,
    lag1,
    model_matrices,
    pooled_row,
    seed_permutations,
    view_cell,
)
from topotrain.analysis.inference.seed_effect import effect_cell, effect_interval
from topotrain.analysis.inference.signs import (  # noqa: F401 (all_held, effect_signs, joint_p: re-exported)
    all_held,
    effect_signs,
    joint_p,
    reversal_ps,
    ruled_out,
    signs_held,
)
from topotrain.analysis.inference.stats import ALPHA
from topotrain.analysis.inference.verdicts import paper_series
from topotrain.config import DEFAULTS
from topotrain.config.constants import PRIMARY_CLAIMS

CLAIMS = PRIMARY_CLAIMS  # feature -> the paper's table
QUANTITY = "rho_{feature}_train_loss"
SESOI = DEFAULTS["analysis"]["sesoi"]  # Δ, the smallest effect of interest (docs/study.md)
SESOI_CO = DEFAULTS["analysis"]["sesoi_co"]  # Δ_co: the co-movement view's own (docs/study.md)
EFFECT = ["effect", "effect_ci_low", "effect_ci_high"]
_PER_CONDITION = ["rho", "p", "effect", "effect_ci_low", "effect_ci_high", "effect_bound"]


def _condition_columns(name: str) -> list[str]:
    cols = [f"effect_signs_{name}", f"rho_{name}", f"p_{name}", f"effect_{name}"]
    return cols + [f"effect_{name}_{c}" for c in ("ci_low", "ci_high", "bound", "fw_high")]


PRIMARY_COLUMNS = [
    "feature",
    "table",
    "models",
    "signs",
    "question",
    "signs_held",
    *[f"ruled_out{sfx}" for sfx in MARGINS],
    *[c for _, conds in VIEWS.values() for name in conds for c in _condition_columns(name)],
    *[f"p_{view}" for view in VIEWS],
    *[f"p_bh_{clock_condition(view)}" for view in VIEWS],
    *[f"held_{view}" for view in VIEWS],
    *[f"ruled_{view}{sfx}" for view in VIEWS for sfx in MARGINS],
    *[f"lag1_{view}" for view in VIEWS],
    *[c for q in QUESTIONS for c in question_columns(q)],
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


def family_tests(view: str) -> int:
    """The number of one-sided upper bounds a question's verdict reads: every claim × each
    condition of its view (Bonferroni over them: each bound at 1 − α/family_tests); 6."""
    return len(CLAIMS) * len(VIEWS[view][1])


FAMILY_TESTS = {view: family_tests(view) for view in VIEWS}


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
    bounds_only: bool = False,
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
    reversal by m is ruled out in every view (``signs.ruled_out``). ``bounds_only`` (with
    ``family_tests``): of the intervals only the family-wise upper bounds a verdict reads, the
    effect, its 1 − α interval and its 1 − α bound NaN (``calibration.question_power``: a third
    of the work). The report's claims, the calibration suite and the confirmation on fresh seeds
    all call this."""
    if family_tests is not None and alternative != "greater":
        raise ValueError("one-sided bounds are drawn for a 'greater' claim only")
    if bounds_only and family_tests is None:
        raise ValueError("bounds_only needs family_tests: the family-wise bounds are the bounds")
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
        skip = dict.fromkeys(EFFECT, np.nan) | {"effect_note": ""}
        eff = skip if bounds_only else effect_interval(cells, ALPHA, seed)
        for label, margin in (margins or {}).items():
            reversal[label].append(reversal_ps(cells, margin, seed))
        out |= {f"rho_{name}": res["rho"], f"p_{name}": res["p"]}
        out |= {f"effect_{name}{c.removeprefix('effect')}": eff[c] for c in EFFECT}
        out[f"effect_signs_{name}"] = _sign_text(by_view[-1])
        if family_tests is not None:
            low = skip if bounds_only else effect_interval(cells, 2 * ALPHA, seed)
            out[f"effect_{name}_bound"] = low["effect_ci_low"]
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
    deltas: dict[str, float] | None = None,
) -> dict:
    """claim_views of every design view (VIEWS, each on its own loss) over the claimed models
    that ``df`` holds, each view with its question's family-wise bounds (``family_tests``: 3
    claims × its 2 conditions) and each model's reversal test at MARGINS × the view's Δ
    (``deltas``: view → Δ, default (SESOI, SESOI_CO)); per view p_<view>, the larger of its
    conditions' p (intersection–union), held_<view> and ruled_<view><margin>. A view whose loss
    the table lacks has p_<view> NaN. The note names each model whose effect lacks its claimed
    sign, per view."""
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
    notes = []
    for name, (target, conds) in VIEWS.items():
        if target not in df:
            out[f"p_{name}"] = np.nan
            notes.append(f"no {name} view: {target} not in the feature table")
            continue
        res = view_columns(mats, perms, claimed, feature, name, deltas[name], seed)
        notes.append(res.pop("note"))
        out |= {k: v for k, v in res.items() if k not in out}
        failed = _sign_failures(out, models, claimed, list(conds))
        if failed:
            why = f"effect sign ({'/'.join(conds)}) not the claimed one: "
            notes.append(why + ", ".join(failed))
    out["note"] = "; ".join(dict.fromkeys(n for n in notes if n))
    return out


def view_columns(
    mats: list[dict[str, np.ndarray]],
    perms: list[np.ndarray],
    claimed: list[float],
    feature: str,
    view: str,
    delta: float,
    seed: int = 0,
    bounds_only: bool = False,
) -> dict:
    """One design view's columns of a claim's row (``claim_test``'s, per view of VIEWS): its
    conditions' claim_views on its own loss, with the question's family-wise bounds
    (``family_tests``) and each model's reversal test at MARGINS × ``delta`` (its Δ); then
    held_<view>, ruled_<view><margin>, p_<view> (the larger of its conditions' p:
    intersection–union) and lag1_<view>; ``arrangements`` and ``note`` as claim_views gives
    them. Models as raw matrices (``model_matrices``) with their seed permutations, in the
    claimed signs. ``bounds_only``: claim_views' (the verdicts' columns only)."""
    target, conds = VIEWS[view]
    margins = {sfx: k * delta for sfx, k in MARGINS.items()}
    res = claim_views(
        mats, perms, claimed, feature, target, seed, conds, "greater", family_tests(view),
        None, margins, bounds_only,
    )  # fmt: skip
    out = {k: v for k, v in res.items() if k != "signs_held" and not k.startswith("ruled_out")}
    out[f"held_{view}"] = res["signs_held"]
    out |= {f"ruled_{view}{sfx}": res[f"ruled_out{sfx}"] for sfx in MARGINS}
    out[f"p_{view}"] = max(res[f"p_{c}"] for c in conds)
    out[f"lag1_{view}"] = persistence(mats, feature, target, next(iter(conds.values()))[0])
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


def primary_family(
    df: pd.DataFrame | None,
    paper: pd.DataFrame,
    alpha: float = ALPHA,
    sesoi: float = SESOI,
    sesoi_co: float = SESOI_CO,
    question: str = BOTTOM_LINE_QUESTION,
) -> pd.DataFrame:
    """PRIMARY_COLUMNS, one row per claim in CLAIMS: claim_test over every design view (VIEWS),
    then per question q of QUESTIONS, from its own view only: p_bh_<q> (BH over the three claims
    of p_<view>), rejected_<q> = p_bh_<q> < alpha, the effect of its weaker condition with its
    one-sided 1 − α bound (effect_<q>, effect_<q>_bound) and its verdicts (``question_verdict``)
    at its Δ (level: ``sesoi``; co-movement: ``sesoi_co``), halved and doubled (verdict_<q>,
    verdict_<q>_half_sesoi, verdict_<q>_double_sesoi); p_bh_<clock condition>, each view's clock
    p BH-corrected over the claims ("present beyond the clock"). ``question`` is the bottom
    line's (``analysis.bottom_line_question``, fixed in the pre-registration): its view's p,
    signs_held and ruled_out*, its p_bh, rejected, effect (effect_ci_high = +∞) and verdicts are
    also p, p_bh, rejected, signs_held, ruled_out*, EFFECT and verdict, verdict_half_sesoi,
    verdict_double_sesoi, so that a reader of ``verdict`` reads the pre-registered answer. NaN p
    (no seeds to contrast, or the view's loss absent: cannot be measured) stays NaN, out of the
    BH, and its verdict is undecided."""
    if question not in QUESTIONS:
        raise ValueError(
            f"analysis.bottom_line_question: {question!r}; choose from {', '.join(QUESTIONS)}"
        )
    rows = []
    for feature, table in CLAIMS.items():
        base = {"feature": feature, "table": table}
        if df is None:
            rows.append(base | {"note": "no feature table"})
            continue
        deltas = {"level": sesoi, "comove": sesoi_co}
        rows.append(base | claim_test(df, feature, claimed_signs(paper, feature), 0, deltas))
    out = pd.DataFrame(rows).reindex(columns=PRIMARY_COLUMNS)
    out["sesoi"], out["sesoi_co"] = sesoi, sesoi_co
    deltas = {"level": sesoi, "comove": sesoi_co}
    for q, view in QUESTIONS.items():
        answer_question(out, q, deltas[view], alpha)
    view = QUESTIONS[question]
    out["question"] = question
    out["p"], out["p_bh"] = out[f"p_{view}"], out[f"p_bh_{question}"]
    out["rejected"], out["signs_held"] = out[f"rejected_{question}"], out[f"held_{view}"]
    for margin in MARGINS:
        out[f"ruled_out{margin}"] = out[f"ruled_{view}{margin}"]
    bound = out[f"effect_{question}_bound"]
    out["effect"], out["effect_ci_low"] = out[f"effect_{question}"], bound
    out["effect_ci_high"] = np.where(bound.notna(), np.inf, np.nan)
    for sfx in VERDICT_SUFFIXES.values():
        out[f"verdict{sfx}"] = out[f"verdict_{question}{sfx}"]
    undefined = out[[f"p_{v}" for v in VIEWS]].isna().all(axis=1)
    out.loc[undefined, "note"] = (
        out.loc[undefined, "note"].fillna("").astype(str)
        + "; cannot be measured: a between-seed contrast needs at least 2 seeds per model"
    ).str.lstrip("; ")
    return out
