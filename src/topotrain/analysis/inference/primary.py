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
``questions``' (``question_verdict``, ``answer_question``); how one claim fares in each view is
``claim_contrasts``' (``claim_views``, ``view_columns``: importable here too).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.claim_contrasts import (  # noqa: F401 (re-exported)
    EFFECT,
    claim_views,
    family_tests,
    persistence,
    view_columns,
    view_nulls,
)
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
from topotrain.analysis.inference.seed_contrast import SCALE, model_matrices, seed_permutations
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
from topotrain.topology import registry

CLAIMS = registry.claims()  # feature -> the paper's table (topology.registry: h0_total → 2)
QUANTITY = "rho_{feature}_train_loss"
SESOI = DEFAULTS["analysis"]["sesoi"]  # Δ, the smallest effect of interest (docs/study.md)
SESOI_CO = DEFAULTS["analysis"]["sesoi_co"]  # Δ_co: the co-movement view's own (docs/study.md)
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


FAMILY_TESTS = {view: family_tests(view) for view in VIEWS}


def claimed_signs(paper: pd.DataFrame, feature: str) -> pd.Series:
    """The paper's sign of ρ(feature, train loss) at each size where its p < ALPHA."""
    table = CLAIMS[feature]
    rho = paper_series(paper, table, QUANTITY.format(feature=feature))
    p = paper_series(paper, table, "p")
    return np.sign(rho[p < ALPHA])


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
