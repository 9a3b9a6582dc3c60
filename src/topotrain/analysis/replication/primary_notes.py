"""The primary family's word on a claim of the replication table: its decision (the bottom-line
question's verdict, ``primary.question_verdict``) and the note that gives, per question, the
numbers of its own view that decide it (``claim_state``); ``claims`` puts both in the T2 and T3
rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.questions import (
    BOTTOM_LINE_QUESTION,
    QUESTION_NAMES,
    QUESTIONS,
    VIEWS,
)
from topotrain.analysis.inference.seed_effect import effect_text
from topotrain.analysis.inference.stats import ALPHA


def primary_row(primary: pd.DataFrame | None, feature: str) -> pd.Series | None:
    """The feature's row of the primary family, None when it has none."""
    if primary is None or feature not in set(primary["feature"]):
        return None
    return primary.set_index("feature").loc[feature]


def bound_text(effect: float, low: float, high: float, level: float) -> str:
    """'0.12 (≥ 0.03, one-sided 95 % bound)' for a one-sided bound (the other end infinite),
    else ``effect_text``'s '0.12 [0.03, 0.21]' or '0.12 (no interval)'; 'not estimated' (no
    model with a defined contrast, the row's note says why)."""
    if not np.isfinite(effect):
        return "not estimated"
    if np.isfinite(low) and np.isposinf(high):
        return f"{effect:.3g} (≥ {low:.3g}, one-sided {100 * level:g} % bound)"
    if np.isneginf(low) and np.isfinite(high):
        return f"{effect:.3g} (≤ {high:.3g}, one-sided {100 * level:g} % bound)"
    return effect_text(effect, low, high)


def claim_state(primary: pd.DataFrame | None, feature: str) -> tuple[str | None, str]:
    """(decision, note) of the feature's primary-family claim: the bottom-line question's verdict
    (``primary.question_verdict``: reproduced, explained by the clock, explained by the norm or
    undecided); None when its test cannot be measured. The note gives, per question (the bottom
    line's first), its verdict, its view's p's, BH p, the claimed models whose effect has its
    sign and whose reversal is ruled out, its effect with its one-sided bound, its Δ and the
    verdicts at Δ/2 and 2Δ; then the models whose effect lacks its sign."""
    row = primary_row(primary, feature)
    if row is None:
        return None, "primary family not computed: cannot be measured"
    question = str(row.get("question", BOTTOM_LINE_QUESTION))
    order = [question, *(q for q in QUESTIONS if q != question)]
    parts = [question_note(row, q, bottom=q == question) for q in order]
    failed = [part for part in str(row["note"]).split("; ") if part.startswith("effect sign")]
    arrangements = row["arrangements"]
    head = f"primary test of {int(arrangements)} arrangements" if pd.notna(arrangements) else ""
    note = "; ".join(filter(None, [head, *parts, *failed]))
    if not np.isfinite(float(row["p"])):
        return None, f"{note} ({row['note']})" if pd.notna(row["note"]) else note
    return str(row["verdict"]), note


def question_note(row: pd.Series, question: str, bottom: bool = False) -> str:
    """'moves with (the bottom line): undecided (co-movement: clock p = …, scale p = …, p_bh =
    …; effect signs held in 5/5 models, reversal by Δ_co ruled out in 0/5 (each model's own
    test); effect 0.2 (≥ 0.1, one-sided 95 % bound), Δ_co = 0.1; at Δ_co/2: …, at 2Δ_co: …)'."""
    view = QUESTIONS[question]
    clock, norm = VIEWS[view][1]
    symbol, delta = ("Δ_co", row["sesoi_co"]) if view == "comove" else ("Δ", row["sesoi"])
    label = {"comove": "co-movement", "level": "level"}[view]
    head = f"{QUESTION_NAMES[question]}{' (the bottom line)' if bottom else ''}: "
    head += str(row[f"verdict_{question}"])
    p_bh = float(row[f"p_bh_{question}"])
    if not np.isfinite(p_bh):
        return f"{head} ({label}: cannot be measured)"
    effect, bound = row[f"effect_{question}"], row[f"effect_{question}_bound"]
    effect = bound_text(effect, bound, np.inf, 1 - ALPHA)
    return (
        f"{head} ({label}: clock p = {row[f'p_{clock}']:.3g}, scale p = {row[f'p_{norm}']:.3g}, "
        f"p_bh = {p_bh:.3g}; effect signs held in {row[f'held_{view}']} models, reversal by "
        f"{symbol} ruled out in {row[f'ruled_{view}']} (each model's own test); effect {effect}, "
        f"{symbol} = {float(delta):g}; at {symbol}/2: {row[f'verdict_{question}_half_sesoi']}, "
        f"at 2{symbol}: {row[f'verdict_{question}_double_sesoi']})"
    )
