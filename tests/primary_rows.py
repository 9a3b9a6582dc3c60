"""Hand-made primary-family tables (``primary.PRIMARY_COLUMNS``' questions and their views) for
the tests of their readers: the replication table, the bottom line and the report's figures."""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.primary import (
    MARGINS,
    QUESTIONS,
    VERDICT_SUFFIXES,
    VIEWS,
    question_verdict,
)
from topotrain.analysis.inference.stats import ALPHA

NP_MODELS = "tiny-3k;med-21k;large-46k;xl-97k"  # where Table 3's p < 0.05
NP_SIGNS = "-1;+1;+1;+1"


def primary_row(
    feature: str,
    p: float,
    upper: float = 0.5,
    held: str = "4/4",
    question: str = "ranks",
    norm_upper: float | None = None,
    clock_p: float | None = None,
    delta: float = 0.1,
) -> dict:
    """One claim's row: p in every condition of both views (``clock_p``: the clock conditions'
    own, default p; p_bh = p), the family-wise upper bound ``upper`` of the clock conditions
    (``norm_upper`` of the norm's, default ``upper``), the effect upper/2 with its bound 0,
    ``held`` models with their sign and their reversal ruled out (of 4, NP's models), Δ = Δ_co
    = ``delta``; each question's verdicts by ``primary.question_verdict`` and the bottom-line
    columns copied from ``question``'s, as ``primary_family`` writes them."""
    clock_p = p if clock_p is None else clock_p
    norm_upper = upper if norm_upper is None else norm_upper
    row = {"feature": feature, "models": NP_MODELS, "signs": NP_SIGNS, "note": ""}
    row |= {"arrangements": 7776, "sesoi": delta, "sesoi_co": delta, "question": question}
    for view, (_, conds) in VIEWS.items():
        clock, norm = conds
        row |= {f"p_{clock}": clock_p, f"p_{norm}": p, f"p_{view}": max(p, clock_p)}
        row |= {f"effect_{clock}_fw_high": upper, f"effect_{norm}_fw_high": norm_upper}
        row |= {f"effect_signs_{c}": NP_SIGNS for c in conds}
        row |= {f"held_{view}": held} | {f"ruled_{view}{sfx}": held for sfx in MARGINS}
        row |= {f"p_bh_{clock}": clock_p}
    for q, view in QUESTIONS.items():
        row |= {f"p_bh_{q}": row[f"p_{view}"], f"effect_{q}": upper / 2, f"effect_{q}_bound": 0.0}
        row[f"rejected_{q}"] = bool(row[f"p_bh_{q}"] < ALPHA)
        series = pd.Series(row)
        for margin, sfx in VERDICT_SUFFIXES.items():
            row[f"verdict_{q}{sfx}"] = question_verdict(series, q, MARGINS[margin] * delta, margin)
    view = QUESTIONS[question]
    row |= {"p": row[f"p_{view}"], "p_bh": row[f"p_bh_{question}"]}
    row |= {"rejected": row[f"rejected_{question}"], "signs_held": held, "ruled_out": held}
    row |= {"effect": upper / 2, "effect_ci_low": 0.0, "effect_ci_high": np.inf}
    row |= {f"verdict{sfx}": row[f"verdict_{question}{sfx}"] for sfx in VERDICT_SUFFIXES.values()}
    return row


def primary_table(**p: float) -> pd.DataFrame:
    """feature → p, every other setting ``primary_row``'s default."""
    return pd.DataFrame([primary_row(f, v) for f, v in p.items()])
