"""The bottom line's sentence on the primary family: per claim each of its two questions' verdict
(``primary.QUESTIONS``, issue 56; the bottom line's question first) with the numbers of its own
view that decide it, and the bottom-line question's effect with its bound. The sentences are
templates/bottom_line/*.md, filled with the numbers; ``bottom_line`` places them on the report's
first page.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.report import prose
from topotrain.report.markdown import format_cell, interval_text
from topotrain.topology import registry

NAMES = registry.short_names()  # the primary features' short names: TP0, NP, TP1

# The primary family's two questions (primary.QUESTIONS, issue 56): name → (as said, its view, its
# loss, its conditions beyond the clock and beyond the norm, its Δ's column and symbol)
PRIMARY_QUESTIONS = {
    "moves_with": (
        "moves with", "co-movement", "val loss", ("co_clock", "co_scale"), "sesoi_co", "Δ_co"
    ),
    "ranks": ("ranks", "level", "train loss", ("clock", "scale"), "sesoi", "Δ"),
}  # fmt: skip


def primary_sentence(primary: pd.DataFrame | None, alpha: float) -> str:
    """The primary family: the bottom line's question (fixed in the pre-registration), the four
    verdict words, then per claim each question's verdict (the bottom line's first, in bold) with
    the numbers that decide it (``question_phrase``). It says what the rule decided and nothing
    more: "undecided" is never said as "no effect"."""
    if primary is None or primary.empty:
        return ""
    given = primary["question"].dropna() if "question" in primary else pd.Series(dtype=str)
    question = str(given.iloc[0]) if len(given) else ""
    order = [question, *(q for q in PRIMARY_QUESTIONS if q != question)]
    order = [q for q in order if q in PRIMARY_QUESTIONS]
    parts = []
    for row in primary.itertuples(index=False):
        name = NAMES.get(row.feature, row.feature)
        views = [getattr(row, f"p_{PRIMARY_QUESTIONS[q][3][0]}", np.nan) for q in order]
        if not np.isfinite(np.asarray(views, float)).any():
            words = ", ".join(
                f"{PRIMARY_QUESTIONS[q][0]}: {question_verdict(row, q)[0]}" for q in order
            )
            why = question_verdict(row, order[0])[1] if order else unmeasured_reason(row)
            parts.append(prose.render("bottom_line/unmeasured", name=name, words=words, why=why))
            continue
        answers = "; ".join(question_phrase(row, q, alpha, bold=q == question) for q in order)
        parts.append(prose.render("bottom_line/primary_claim", name=name, answers=answers))
    smallest = int(primary["arrangements"].max()) if primary["arrangements"].notna().any() else 0
    floor = prose.render("bottom_line/primary_floor", smallest=f"{smallest:,}") if smallest else ""
    said = PRIMARY_QUESTIONS.get(question, (question,))[0]
    return prose.render(
        "bottom_line/primary",
        floor=floor,
        question=said,
        claims="; ".join(parts),
    )


def question_phrase(row, question: str, alpha: float, bold: bool = False) -> str:
    """'moves with: **undecided** (co-movement view, val loss: p_clock = …, p_scale = …, BH p =
    … (does not reject it, effect signs held in 5/5 models, reversal by Δ_co ruled out in 0/5);
    effect 0.2 (≥ 0.1, one-sided 95 % bound) at Δ_co = 0.1; at Δ_co/2: …, at 2Δ_co: …)': one
    question's verdict on a primary row and the numbers of its own view that decide it."""
    said, view, loss, (clock, norm), sesoi, symbol = PRIMARY_QUESTIONS[question]
    key = {"moves_with": "comove", "ranks": "level"}[question]  # primary.QUESTIONS' view
    verdict, why = question_verdict(row, question)
    verdict = f"**{verdict}**" if bold else verdict
    if why:
        return prose.render(
            "bottom_line/question_unmeasured", question=said, verdict=verdict, why=why
        )
    p_bh = float(getattr(row, f"p_bh_{question}"))
    held, ruled = getattr(row, f"held_{key}", None), getattr(row, f"ruled_{key}", None)
    signs = prose.render("bottom_line/signs_held", held=held) if isinstance(held, str) else ""
    if isinstance(ruled, str):
        signs += prose.render("bottom_line/ruled_out", ruled=ruled, delta=symbol)
    bound = float(getattr(row, f"effect_{question}_bound"))
    shown = bound_phrase(
        getattr(row, f"effect_{question}"), bound, np.inf if np.isfinite(bound) else np.nan, alpha
    )
    return prose.render(
        "bottom_line/question",
        question=said,
        verdict=verdict,
        view=view,
        loss=loss,
        pair=view_p(getattr(row, f"p_{clock}"), getattr(row, f"p_{norm}")),
        p_bh=format_cell(p_bh),
        decision="rejects the null" if p_bh < alpha else "does not reject it",
        signs=signs,
        shown=shown,
        delta=symbol,
        value=format_cell(getattr(row, sesoi)),
        half=getattr(row, f"verdict_{question}_half_sesoi"),
        double=getattr(row, f"verdict_{question}_double_sesoi"),
    )


def question_verdict(row, question: str) -> tuple[str, str]:
    """(word, why) of a primary claim's ``question`` (a primary.csv row, as a dict or a named
    tuple), the one source of the word wherever the report says it (the bottom line's sentence,
    the forest: ``question_word``): its ``verdict_<question>``, and why its test cannot be
    measured when its BH p ``p_bh_<question>`` is NaN ('' when it is measured)."""
    field = (
        row.get if isinstance(row, dict) else lambda key, default=None: getattr(row, key, default)
    )
    verdict = field(f"verdict_{question}")
    if not isinstance(verdict, str):
        return "", ""
    p_bh = field(f"p_bh_{question}", None)  # a table without it: nothing says unmeasured
    return verdict, "" if p_bh is None or np.isfinite(float(p_bh)) else unmeasured_reason(row)


def question_word(row, question: str) -> str:
    """'undecided' or 'undecided (cannot be measured: a between-seed contrast needs at least 2
    seeds per model)': ``question_verdict`` as one text ('' without the verdict)."""
    verdict, why = question_verdict(row, question)
    return f"{verdict} (cannot be measured: {why})" if why else verdict


def unmeasured_reason(row) -> str:
    """Why a primary claim's test cannot be measured: primary.csv's note without its 'cannot be
    measured: ' (its parts as given), else that its view's p is undefined."""
    note = row.get("note") if isinstance(row, dict) else getattr(row, "note", None)
    if not isinstance(note, str) or not note.strip():
        return "its view's p is undefined"
    parts = [part.strip().removeprefix("cannot be measured: ") for part in note.split(";")]
    return "; ".join(dict.fromkeys(part for part in parts if part))


def view_p(p_clock: float, p_scale: float) -> str:
    """'p_clock = …, p_scale = …' of one view."""
    return prose.render(
        "bottom_line/view_p", p_clock=format_cell(p_clock), p_scale=format_cell(p_scale)
    )


def bound_phrase(effect: float, low: float, high: float, alpha: float) -> str:
    """'0.31 (≥ 0.2, one-sided 95 % bound)' for a one-sided bound at ``alpha`` (an infinite end:
    '≥ low' or '≤ high'), else the interval '0.31 [0.2, 0.42]' or '0.31 (no interval)'."""
    low, high = float(low), float(high)
    side, end = ("≥", low) if np.isposinf(high) else ("≤", high) if np.isneginf(low) else ("", 0)
    if side and np.isfinite(end):
        return prose.render(
            "bottom_line/bound",
            effect=format_cell(effect),
            side=side,
            end=format_cell(end),
            level=f"{100 * (1 - alpha):g}",
        )
    return interval_text(effect, low, high)


def effect_phrase(name: str, row, alpha: float) -> str:
    """'NP effect 0.31 (≥ 0.2, one-sided 95 % bound) at Δ = 0.1: reproduced (at Δ/2: …, at 2Δ:
    …)': the bottom-line question's effect (its view's weaker condition) with the bound that
    matches its one-sided test at ``alpha`` (``bound_phrase``), and its verdicts by the rule (the
    co-movement view's Δ_co when the question is moves_with)."""
    co = getattr(row, "question", None) == "moves_with"
    return prose.render(
        "bottom_line/effect",
        name=name,
        which=" (co-movement view)" if co else "",
        shown=bound_phrase(row.effect, row.effect_ci_low, row.effect_ci_high, alpha),
        delta=f"Δ_co = {format_cell(row.sesoi_co)}" if co else f"Δ = {format_cell(row.sesoi)}",
        verdict=row.verdict,
        half=row.verdict_half_sesoi,
        double=row.verdict_double_sesoi,
    )
