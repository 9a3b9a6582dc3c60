"""The primary family's two questions (issue 56), the design views that answer them, and each
question's verdict: *moves with* (``QUESTIONS``: the co-movement view, val loss: when a seed's loss
moves more than its siblings', does its feature move too?) and *ranks* (the level view, train loss:
at the same step, is the seed with the lower loss the one with the higher feature?). Per question
the view is tested beyond the clock and beyond the norm (``VIEWS``: its two conditions); its
p_bh is Benjamini–Hochberg over the three claims of its view's p (``answer_question``).

The verdict of a question (``question_verdict``) names what explains the raw ρ: "reproduced"
(beyond the clock and the norm: BH rejects, every claimed model's effect estimate has its sign
in both conditions, ``effect_signs``, and each model's own exact test rules out a reversal by
the question's Δ, ``signs.ruled_out``: an intersection–union rule, level α however strong the
other models are; at 3 seeds a model's smallest exact p is 1/6, so nothing is reproduced),
"explained by the clock" (shown below Δ beyond the clock), "explained by the norm" (shown below Δ
beyond the norm and present beyond the clock) or "undecided". Which question's verdict is the
bottom line's is ``analysis.bottom_line_question``, fixed in the pre-registration.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.seed_contrast import PARTIAL, PARTIAL_CO, SCALE
from topotrain.analysis.inference.signs import all_held
from topotrain.analysis.inference.stats import ALPHA, benjamini_hochberg
from topotrain.analysis.inference.verdicts import (
    EXPLAINED_BY_CLOCK,
    EXPLAINED_BY_NORM,
    REPRODUCED,
    UNDECIDED,
)
from topotrain.config import DEFAULTS

TARGET = "train_loss"
CO_TARGET = "val_loss"  # the co-movement view's loss: measured on the checkpoint's own weights
CONDITIONS = {"clock": None, "scale": SCALE}  # name -> the column its contrast is partial on
# Design views of the family: name -> (its loss, {condition: (contrast view, conditioning)}), the
# clock's condition first, the norm's (the scale's) second. Each is tested beyond the clock and
# the norm (intersection–union), and each answers one question (QUESTIONS).
VIEWS = {
    "level": (TARGET, {"clock": ("seed_contrast", None), "scale": (PARTIAL, SCALE)}),
    "comove": (CO_TARGET, {"co_clock": ("seed_comove", None), "co_scale": (PARTIAL_CO, SCALE)}),
}
# The two questions, each with its own verdict: question -> the view that answers it.
QUESTIONS = {"moves_with": "comove", "ranks": "level"}
QUESTION_NAMES = {"moves_with": "moves with", "ranks": "ranks"}  # as the report says them
BOTTOM_LINE_QUESTION = DEFAULTS["analysis"]["bottom_line_question"]  # the pre-registered one
MARGINS = {"": 1.0, "_half": 0.5, "_double": 2.0}  # reversal margins: the verdicts' Δ multiples
VERDICT_SUFFIXES = {"": "", "_half": "_half_sesoi", "_double": "_double_sesoi"}  # margin → column


def clock_condition(view: str) -> str:
    """The view's condition beyond the clock alone (its first)."""
    return next(iter(VIEWS[view][1]))


def norm_condition(view: str) -> str:
    """The view's condition beyond the norm (its second: partial on the L2 norm)."""
    return list(VIEWS[view][1])[1]


def question_columns(q: str) -> list[str]:
    """Question ``q``'s columns of a primary row (PRIMARY_COLUMNS): its BH p, rejection, effect
    with its bound and its verdicts at Δ, Δ/2 and 2Δ."""
    cols = [f"p_bh_{q}", f"rejected_{q}", f"effect_{q}", f"effect_{q}_bound"]
    return cols + [f"verdict_{q}{sfx}" for sfx in VERDICT_SUFFIXES.values()]


def weaker_view(row: pd.Series, conds=CONDITIONS) -> str:
    """The condition whose p is the view's (the larger: intersection–union); the first on ties."""
    names = list(conds)
    return max(names, key=lambda c: (row[f"p_{c}"], -names.index(c)))


def answer_question(out: pd.DataFrame, question: str, delta: float, alpha: float = ALPHA) -> None:
    """Question ``question``'s columns of a family (PRIMARY_COLUMNS, one row per claim, its view's
    columns filled by ``claim_test`` / ``view_columns``), in place, from its own view only:
    p_bh_<clock condition> (the clock p, BH over the claims: "present beyond the clock"),
    p_bh_<q> (BH over the claims of p_<view>), rejected_<q>, the effect of its weaker condition
    with its one-sided bound (effect_<q>, effect_<q>_bound) and its verdicts at ``delta`` (its
    Δ), halved and doubled (``question_verdict``; verdict_<q>, _half_sesoi, _double_sesoi).
    ``primary_family`` calls it for each question; ``calibration.question_power`` on simulated
    families."""
    q, view = question, QUESTIONS[question]
    clock = clock_condition(view)
    out[f"p_bh_{clock}"] = benjamini_hochberg(out[f"p_{clock}"].to_numpy(float))
    out[f"p_bh_{q}"] = benjamini_hochberg(out[f"p_{view}"].to_numpy(float))
    out[f"rejected_{q}"] = out[f"p_bh_{q}"] < alpha
    for i, row in out.iterrows():
        cond = weaker_view(row, VIEWS[view][1])
        out.loc[i, [f"effect_{q}", f"effect_{q}_bound"]] = [
            row[f"effect_{cond}"],
            row[f"effect_{cond}_bound"],
        ]
    for margin, sfx in VERDICT_SUFFIXES.items():
        at = MARGINS[margin] * delta
        out[f"verdict_{q}{sfx}"] = [
            question_verdict(r, q, at, margin, alpha) for _, r in out.iterrows()
        ]


def _below(bound: object, delta: float) -> bool:
    """Whether an upper bound is finite and below ``delta`` (an equivalence test against β ≥ Δ)."""
    try:
        value = float(bound)
    except (TypeError, ValueError):
        return False
    return bool(np.isfinite(value) and value < delta)


def _claimed_signs_held(claimed: object, estimated: object) -> bool:
    """Whether every claimed model's effect estimate ("+1;-1;…", ``effect_signs_<condition>``)
    has its claimed sign ("+1;-1;…", the row's ``signs``); False where either is missing."""
    want, got = str(claimed).split(";"), str(estimated).split(";")
    if len(want) != len(got):
        return False
    return all(w in ("+1", "-1") and w == g for w, g in zip(want, got, strict=True))


def present_beyond_clock(row: pd.Series, view: str, alpha: float = ALPHA) -> bool:
    """Whether the claim's effect is present beyond the clock in ``view``: its clock condition's
    one-sided p, BH-corrected over the three claims (p_bh_<clock>), is below ``alpha`` and every
    claimed model's effect estimate in that condition has its claimed sign (the same estimate
    signs as ``signs_held``; the reversal rule is not asked here, as "explained by the norm"
    claims an effect beyond the clock only as the family's pooled test does)."""
    clock = clock_condition(view)
    p_bh = pd.to_numeric(pd.Series([row.get(f"p_bh_{clock}")]), errors="coerce").iloc[0]
    if not (np.isfinite(p_bh) and p_bh < alpha):
        return False
    return _claimed_signs_held(row.get("signs"), row.get(f"effect_signs_{clock}"))


def question_verdict(
    row: pd.Series, question: str, delta: float, margin: str = "", alpha: float = ALPHA
) -> str:
    """One question's verdict on a primary row, from its own view's columns only (QUESTIONS),
    at Δ = ``delta`` (``margin``: "", "_half" or "_double", the reversal rule's columns), in this
    order:

    - "reproduced" (beyond the clock and the norm): p_bh_<q> < alpha (the question's BH over the
      three claims of its view's intersection–union p), every claimed model's effect has its
      claimed sign in both conditions (held_<view>) and every model's reversal by Δ is ruled out
      by its own exact test (ruled_<view><margin>);
    - else "explained by the clock": the clock condition's family-wise upper bound
      (effect_<clock>_fw_high, 1 − α/6) lies below Δ;
    - else "explained by the norm": the norm condition's family-wise upper bound lies below Δ and
      the effect is present beyond the clock (``present_beyond_clock``);
    - else "undecided", and always when the question's p is undefined (cannot be measured)."""
    view = QUESTIONS[question]
    p_bh = pd.to_numeric(pd.Series([row.get(f"p_bh_{question}")]), errors="coerce").iloc[0]
    if not np.isfinite(p_bh):
        return UNDECIDED
    held = all_held(row.get(f"held_{view}")) and all_held(row.get(f"ruled_{view}{margin}"))
    if p_bh < alpha and held:
        return REPRODUCED
    if _below(row.get(f"effect_{clock_condition(view)}_fw_high"), delta):
        return EXPLAINED_BY_CLOCK
    norm_small = _below(row.get(f"effect_{norm_condition(view)}_fw_high"), delta)
    if norm_small and present_beyond_clock(row, view, alpha):
        return EXPLAINED_BY_NORM
    return UNDECIDED
