"""Does the grokking control reproduce each claim? The verdicts on ``grokking.feature_table``.

``verdicts``: the claims, in the study's vocabulary, for the pre-named topological feature
(``PRIMARY``, the embedding's H1 total persistence), "beats" and "leads" by the equivalence rule
at Δ (``verdicts.decide_claim``): "artefact" needs the effect shown below Δ, a test that does not
reject alone is inconclusive; every other row is exploratory.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.control.grokking import EFFECT, MIN_GROKKED, PRIMARY, SESOI
from topotrain.analysis.inference.diagnostics import rejects_in_sign
from topotrain.analysis.inference.seed_effect import effect_text
from topotrain.analysis.inference.stats import ALPHA
from topotrain.analysis.inference.verdicts import (
    ARTEFACT,
    INCONCLUSIVE,
    NOT_EVALUATED,
    NOT_REPRODUCED,
    REPRODUCED,
    decide_claim,
)
from topotrain.config import CONFIDENCE

VERDICT_COLUMNS = ["claim", "feature", "verdict", "statistic", "p", "rule", "note"]
SAID_ALPHA, SAID_LEVEL = f"{ALPHA:g}", f"{100 * CONFIDENCE:g} %"  # the rules' "0.05", "95 %"
RULES = {
    "tracks": f"between-seed contrast with test loss p < {SAID_ALPHA} (exact, all k! seed orders)",
    "leads": f"reproduced: median lead > 0 with sign-flip p < {SAID_ALPHA} and onset–grokking "
    f"Spearman p < {SAID_ALPHA} with ρ > 0; artefact: leads, and the onset's effect on the "
    f"grokking step is shown below Δ = {{delta:g}} (its {SAID_LEVEL} interval's upper end: the "
    "onset does not follow its seed's grokking, the clock); inconclusive: leads, neither shown; "
    f"not reproduced: lags (median < 0, p < {SAID_ALPHA})",
    "beats": f"reproduced: the contrast partial on {{what}} has p < {SAID_ALPHA} with the plain "
    "contrast's sign; artefact: the plain contrast is significant and the partial's effect in "
    f"its sign is shown below Δ = {{delta:g}} (the {SAID_LEVEL} interval's end: {{what}} "
    f"explains it); inconclusive: neither shown (a partial p ≥ {SAID_ALPHA} alone shows nothing)",
}
SMALL = "; reproduced, below Δ: reproduced, and the effect is shown below Δ too"


def _effect_note(row: pd.Series, prefix: str) -> str:
    """'effect 0.12 [0.03, 0.21]' of ``prefix``'s effect columns, or why there is none."""
    effect, low, high = (row[f"{prefix}_{c}"] for c in EFFECT)
    if not np.isfinite(effect):
        return "no effect"
    return f"effect {effect_text(effect, low, high, lambda v: f'{v:.2f}')}"


def _leads_verdict(row: pd.Series, alpha: float, sesoi: float) -> tuple[str, str]:
    n = int(row["n_grokked"])
    if n < MIN_GROKKED or not np.isfinite(row["lead_p"]):
        return NOT_EVALUATED, f"{n} seeds grok with a defined onset: at least {MIN_GROKKED} needed"
    how = (
        f"onset–grokking ρ = {row['onset_rho']:.2f} (p = {row['onset_p']:.3g}), "
        f"{_effect_note(row, 'onset')}"
    )
    if row["lead_p"] < alpha and row["median_lead"] < 0:
        return NOT_REPRODUCED, f"lags grokking; {how}"
    if not (row["lead_p"] < alpha and row["median_lead"] > 0):
        return INCONCLUSIVE, f"lead not distinguishable from 0; {how}"
    tied = bool(row["onset_p"] < alpha and row["onset_rho"] > 0)
    verdict = decide_claim(tied, [row["onset_effect_ci_high"]], sesoi)
    if verdict == ARTEFACT:
        return verdict, f"leads, its onset shown not to follow grokking (the clock); {how}"
    if verdict == INCONCLUSIVE:
        return verdict, f"leads, but its onset is not shown to follow grokking or not to; {how}"
    return verdict, how


def _beats_verdict(
    row: pd.Series, name: str, alpha: float, sesoi: float
) -> tuple[str, float, float, str]:
    """``decide_claim`` of the contrast partial on ``name`` in the plain contrast's sign s: it
    rejects when p < alpha with that sign; shown small when s times the partial's interval end on
    s's side is below ``sesoi``."""
    rho, p = row[f"partial_{name}_rho"], row[f"partial_{name}_p"]
    if not np.isfinite(row["contrast_p"]) or not np.isfinite(p):
        return NOT_EVALUATED, rho, p, "contrast undefined"
    plain = f"plain contrast ρ = {row['contrast_rho']:.2f} (p = {row['contrast_p']:.3g})"
    if row["contrast_p"] >= alpha:
        return INCONCLUSIVE, rho, p, f"nothing to explain: {plain}"
    sign = np.sign(row["contrast_rho"])
    end = sign * row[f"partial_{name}_effect_ci_{'high' if sign > 0 else 'low'}"]
    rejected = rejects_in_sign(p, rho, row["contrast_rho"], alpha)
    note = f"{plain}; partial {_effect_note(row, f'partial_{name}')}"
    return decide_claim(rejected, [end], sesoi), rho, p, note


def verdicts(
    table: pd.DataFrame, primary: str = PRIMARY, alpha: float = ALPHA, sesoi: float = SESOI
) -> pd.DataFrame:
    """The control's claims for ``primary`` (and NP against its weight variance), "leads" and
    "beats" at Δ = ``sesoi`` (``analysis.sesoi``)."""
    row = table.set_index("feature").loc[primary]
    rows = []
    found = np.isfinite(row["contrast_p"]) and row["contrast_p"] < alpha
    tracks = (
        REPRODUCED if found else INCONCLUSIVE if np.isfinite(row["contrast_p"]) else NOT_EVALUATED
    )
    rows.append(
        [
            "topology moves with each seed's own test loss (the positive control)",
            primary,
            tracks,
            row["contrast_rho"],
            row["contrast_p"],
            RULES["tracks"],
            f"{int(row['n_seeds'])} seeds",
        ]
    )
    verdict, note = _leads_verdict(row, alpha, sesoi)
    rows.append(
        [
            "topology leads grokking",
            primary,
            verdict,
            row["median_lead"],
            row["lead_p"],
            RULES["leads"].format(delta=sesoi) + SMALL,
            note,
        ]
    )
    rows += _beats_rows(table, row, primary, alpha, sesoi)
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def _beats_rows(
    table: pd.DataFrame, row: pd.Series, primary: str, alpha: float, sesoi: float
) -> list[list]:
    """The verdicts' rows on ``primary`` beating the norm and the Fourier measure, and NP beating
    its weight variance."""
    rows = []
    for name, what in (("norm", "the weight norm"), ("fourier", "the Fourier measure")):
        verdict, rho, p, note = _beats_verdict(row, name, alpha, sesoi)
        diff = row[f"lead_minus_{name}"]
        lead_note = (
            f"; lead minus its lead: median {diff:+.0f} steps "
            f"(p = {row[f'lead_minus_{name}_p']:.3g})"
            if np.isfinite(diff)
            else ""
        )
        rows.append(
            [
                f"topology beats {what}",
                primary,
                verdict,
                rho,
                p,
                RULES["beats"].format(what=what, delta=sesoi) + SMALL,
                note + lead_note,
            ]
        )
    if "np_mean" in set(table["feature"]) and "partial_wvar_p" in table:
        np_row = table.set_index("feature").loc["np_mean"]
        verdict, rho, p, note = _beats_verdict(np_row, "wvar", alpha, sesoi)
        rows.append(
            [
                "NP beats its layers' normalised weight variance",
                "np_mean",
                verdict,
                rho,
                p,
                RULES["beats"].format(what="the weight variance", delta=sesoi) + SMALL,
                note,
            ]
        )
    return rows
