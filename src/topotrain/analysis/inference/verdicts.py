"""What every replication verdict shares: the verdict words, the table's columns,
the paper's values.

Paper values come from ``workflow/data/paper_values.csv`` (study, table, row, quantity, value);
study A's tables are numbered 1–8, study B's are named (final, step0, claims), so a (table,
quantity) pair names one series in either study.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.analysis.inference.stats import spearman_exact

REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE = "reproduced", "not reproduced", "inconclusive"
ARTEFACT, NOT_EVALUATED = "artefact", "not evaluated"
REPRODUCED_SMALL = "reproduced, below Δ"  # the test rejects and the effect is shown < Δ too
# The primary family's words (issue 56): per question (moves with, ranks), what explains the raw ρ
# (``primary.question_verdict``); REPRODUCED is said "beyond the clock and the norm".
EXPLAINED_BY_CLOCK = "explained by the clock"  # shown below Δ beyond the clock
EXPLAINED_BY_NORM = "explained by the norm"  # shown below Δ beyond the norm, present beyond clock
UNDECIDED = "undecided"  # none of these: the rule decided nothing (not evidence of no effect)
QUESTION_VERDICTS = (REPRODUCED, EXPLAINED_BY_CLOCK, EXPLAINED_BY_NORM, UNDECIDED)
QUESTION_LABELS = {  # each word of QUESTION_VERDICTS → what it says explains the raw ρ
    REPRODUCED: "beyond the clock and the norm",
    EXPLAINED_BY_CLOCK: "shown below Δ beyond the clock",
    EXPLAINED_BY_NORM: "shown below Δ beyond the norm, present beyond the clock",
    UNDECIDED: "neither reproduced nor shown below Δ: the rule decided nothing",
}
VERDICTS = (
    REPRODUCED,
    REPRODUCED_SMALL,
    NOT_REPRODUCED,
    INCONCLUSIVE,
    ARTEFACT,
    NOT_EVALUATED,
    EXPLAINED_BY_CLOCK,
    EXPLAINED_BY_NORM,
    UNDECIDED,
)
REPLICATION_COLUMNS = [
    "claim",
    "table",
    "paper",
    "ours",
    "ours_ci_low",
    "ours_ci_high",
    "verdict",
    "rule",
    "note",
]
MIN_MODELS = 3  # an ordering or a Spearman ρ across sizes needs three models


def read_paper_values(path: str | Path) -> pd.DataFrame:
    """Every row of the paper-values file, with ``table`` and ``row`` as strings."""
    return pd.read_csv(path, dtype={"table": str, "row": str})


def paper_series(paper: pd.DataFrame, table: str, quantity: str) -> pd.Series:
    """One quantity of one paper table: value by row, in the file's order (models by size)."""
    sel = paper[(paper["table"] == table) & (paper["quantity"] == quantity)]
    return pd.Series(sel["value"].to_numpy(float), index=sel["row"].to_numpy(), name=quantity)


def make_row(claim: str, table: str, rule: str, paper: float, verdict: str, **ours) -> dict:
    """A result row; ``ours`` may give ours, ours_ci_low, ours_ci_high and note."""
    row = dict.fromkeys(REPLICATION_COLUMNS, np.nan)
    row.update(claim=claim, table=table, paper=paper, verdict=verdict, rule=rule, note="")
    return row | ours


def flag(values: pd.Series) -> np.ndarray:
    """Booleans from a CSV column (True/False, 'True'/'False' or NaN → False)."""
    return values.astype(str).eq("True").to_numpy()


def rank_rho(values: pd.Series) -> float:
    """Spearman ρ of values against their order (the paper's tables list models by size)."""
    return spearman_exact(np.arange(len(values)), values.to_numpy(float))[0]


def decide_claim(rejected: bool | None, uppers: list[float], delta: float) -> str:
    """A claim's verdict at the smallest effect of interest Δ (``analysis.sesoi``): reproduced
    when the primary test rejects ("reproduced, below Δ" when the effect is also shown small);
    artefact when it is shown small: in the clock's or the scale's view the upper bound
    ``uppers`` lies below Δ (an equivalence test against H0: β ≥ Δ per view); inconclusive
    otherwise, and when the test cannot be measured (``rejected`` None). The bounds set the
    error rate: a caller passing the equal-tailed 95 % interval's upper ends (one-sided
    1 − α/2, Bonferroni over the two views) controls a false "artefact" per claim. The groups'
    family, the diagnostics and the confirmation decide by it; the primary family decides per
    question instead (``primary.question_verdict``)."""
    if rejected is None:
        return INCONCLUSIVE
    small = any(np.isfinite(u) and u < delta for u in np.asarray(uppers, float))
    if rejected:
        return REPRODUCED_SMALL if small else REPRODUCED
    return ARTEFACT if small else INCONCLUSIVE
