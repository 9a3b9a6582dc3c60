"""The grokking control's statistics and verdicts: the study's tests where an effect is known.

Input: one row per (seed, checkpoint) of ``control.control_features`` (all seeds share the steps).

- Per seed (``seed_table``): the grokking step and, per feature, its onset and lead
  (``control``'s rules). A seed that never groks keeps its rows, with no grokking step and a
  note; it is left out of every lead statistic (and the note says how many were).
- Per feature (``feature_table``), over the seeds that grok and in which the feature has an onset
  (``n_grokked``):
  - median lead, and the exact sign-flip p of the mean lead (all 2^n sign patterns);
  - onset against grokking step: Spearman ρ with an exact permutation p (all n! orders);
  - the median lead minus the weight norm's and minus the Fourier measure's (paired per seed,
    sign-flip p);
  and over every seed, the between-seed contrast (``seed_contrast``: deviations from the
  across-seed mean at each step, exact permutation of seed labels) with test loss, plain and
  partial on the weight norm, on the Fourier measure and, for NP, on the layers' normalised
  weight variance (the partial contrast that the calibration suite checks on the L2 norm).
- ``verdicts``: the claims, in the study's vocabulary, for the pre-named topological feature
  (``PRIMARY``, the embedding's H1 total persistence); every other row is exploratory.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.control.features import grokking_step, lead, onset_step
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    contrast_cell,
    model_matrices,
    permutation_p,
    seed_permutations,
)
from topotrain.analysis.inference.stats import ALPHA, MAX_EXACT_SIGNS, sign_flip_p, spearman_exact
from topotrain.analysis.inference.verdicts import (
    ARTEFACT,
    INCONCLUSIVE,
    NOT_EVALUATED,
    NOT_REPRODUCED,
    REPRODUCED,
)

TARGET = "test_loss"
NORM, FOURIER, WVAR = "weight_l2", "fourier_top5", "np_wvar_mean"
PRIMARY = "emb_h1_total"
TOPOLOGY = [
    "emb_h1_total",
    "emb_h1_max",
    "emb_h0_total",
    "emb_h0_max",
    "np_mean",
    "h0_total",
    "h1_total",
]
BASELINES = [NORM, FOURIER, "effective_rank", "participation_ratio", "train_loss", "step"]
FEATURES = TOPOLOGY + BASELINES
MIN_GROKKED = 3  # a median lead or an onset ρ over fewer seeds says nothing
NEVER = "never reached test accuracy 0.95: left out of the lead statistics"


def sign_flip(d, seed: int = 0) -> tuple[float, float]:
    """(median of d, two-sided p of its mean under random signs): ``stats.sign_flip_p`` (exact
    over all 2^n patterns) up to MAX_EXACT_SIGNS values, else 9 999 Monte Carlo draws; NaN below
    2 finite values."""
    d = np.asarray(d, float)
    d = d[np.isfinite(d)]
    if d.size < 2:
        return float("nan"), float("nan")
    if d.size <= MAX_EXACT_SIGNS:
        return float(np.median(d)), sign_flip_p(d, "two-sided")
    draws = np.random.default_rng(seed).choice((1.0, -1.0), size=(9_999, d.size))
    null = np.vstack([np.ones(d.size), draws]) @ d / d.size
    return float(np.median(d)), permutation_p(np.abs(null), "greater", exact=False)


def seed_table(df: pd.DataFrame, features: list[str]) -> pd.DataFrame:
    """One row per (seed, feature): grokking_step (<NA> when never), onset_step, lead, note."""
    rows = []
    for seed, g in df.sort_values("step").groupby("seed", sort=True):
        grok = grokking_step(g["step"], g["test_acc"])
        for feature in features:
            onset = onset_step(g["step"], g[feature])
            note = NEVER if grok is None else "" if onset is not None else "the feature never moves"
            rows.append(
                {
                    "seed": seed,
                    "feature": feature,
                    "grokking_step": grok,
                    "onset_step": onset,
                    "lead": lead(grok, onset),
                    "note": note,
                }
            )
    out = pd.DataFrame(rows)
    for col in ("grokking_step", "onset_step"):
        out[col] = out[col].astype("Int64")
    return out


def _contrasts(df: pd.DataFrame, feature: str) -> dict:
    """The feature's between-seed contrasts with test loss: plain, then partial on each scale."""
    conds = {"norm": NORM, "fourier": FOURIER}
    if feature.startswith("np_") and WVAR in df:
        conds["wvar"] = WVAR
    cols = sorted({feature, TARGET, *conds.values()} & set(df.columns))
    mats = model_matrices(df, cols)
    perms = seed_permutations(df["seed"].nunique())
    out = {}
    plain, _ = contrast_cell(mats, feature, TARGET, "seed_contrast", perms)
    out |= {"contrast_rho": plain["rho"], "contrast_p": plain["p"]}
    for name, cond in conds.items():
        cell, _ = contrast_cell(mats, feature, TARGET, PARTIAL, perms, cond=cond)
        out |= {f"partial_{name}_rho": cell["rho"], f"partial_{name}_p": cell["p"]}
    return out


def _leads(seeds: pd.DataFrame, feature: str) -> dict:
    """Lead statistics of one feature over the seeds that grok with an onset of the feature
    (``n_grokked`` of them)."""
    grokked = seeds[seeds["grokking_step"].notna()]
    own = grokked[grokked["feature"] == feature].set_index("seed")
    ok = own[own["onset_step"].notna()]
    median, p = sign_flip(ok["lead"]) if len(ok) >= MIN_GROKKED else (np.nan, np.nan)
    rho, rho_p = spearman_exact(ok["onset_step"].astype(float), ok["grokking_step"].astype(float))
    out = {
        "n_grokked": len(ok),
        "median_lead": median,
        "lead_p": p,
        "onset_rho": rho,
        "onset_p": rho_p,
    }
    for name, other in (("norm", NORM), ("fourier", FOURIER)):
        theirs = grokked[grokked["feature"] == other].set_index("seed")["lead"]
        diff = (own["lead"] - theirs.reindex(own.index)).dropna()
        m, q = sign_flip(diff) if len(diff) >= MIN_GROKKED else (np.nan, np.nan)
        out |= {f"lead_minus_{name}": m, f"lead_minus_{name}_p": q}
    return out


def feature_table(df: pd.DataFrame, seeds: pd.DataFrame, features: list[str]) -> pd.DataFrame:
    """One row per feature: kind, the lead statistics and the contrasts (module docstring)."""
    rows = []
    for feature in features:
        kind = (
            "topology"
            if feature in TOPOLOGY
            else "weightwatcher"
            if feature.startswith("ww_")
            else "baseline"
        )
        role = "primary" if feature == PRIMARY else "exploratory"
        rows.append(
            {
                "feature": feature,
                "kind": kind,
                "role": role,
                "n_seeds": df["seed"].nunique(),
                **_leads(seeds, feature),
                **_contrasts(df, feature),
            }
        )
    return pd.DataFrame(rows)


VERDICT_COLUMNS = ["claim", "feature", "verdict", "statistic", "p", "rule", "note"]
RULES = {
    "tracks": "between-seed contrast with test loss p < 0.05 (exact, all k! seed orders)",
    "leads": "reproduced: median lead > 0 with sign-flip p < 0.05 and onset–grokking Spearman "
    "p < 0.05; artefact: leads but its onset does not follow its seed's grokking (the clock); "
    "not reproduced: lags (median < 0, p < 0.05)",
    "beats": "reproduced: the contrast partial on {what} has p < 0.05 with the plain contrast's "
    "sign; artefact: the plain contrast is significant, the partial is not ({what} explains it)",
}


def _leads_verdict(row: pd.Series, alpha: float) -> tuple[str, str]:
    n = int(row["n_grokked"])
    if n < MIN_GROKKED or not np.isfinite(row["lead_p"]):
        return NOT_EVALUATED, f"{n} seeds grok with a defined onset: at least {MIN_GROKKED} needed"
    tied = row["onset_p"] < alpha and row["onset_rho"] > 0
    how = f"onset–grokking ρ = {row['onset_rho']:.2f} (p = {row['onset_p']:.3g})"
    if row["lead_p"] < alpha and row["median_lead"] > 0:
        return (REPRODUCED, how) if tied else (ARTEFACT, f"leads in every seed alike; {how}")
    if row["lead_p"] < alpha and row["median_lead"] < 0:
        return NOT_REPRODUCED, f"lags grokking; {how}"
    return INCONCLUSIVE, f"lead not distinguishable from 0; {how}"


def _beats_verdict(row: pd.Series, name: str, alpha: float) -> tuple[str, float, float, str]:
    rho, p = row[f"partial_{name}_rho"], row[f"partial_{name}_p"]
    if not np.isfinite(row["contrast_p"]) or not np.isfinite(p):
        return NOT_EVALUATED, rho, p, "contrast undefined"
    plain = f"plain contrast ρ = {row['contrast_rho']:.2f} (p = {row['contrast_p']:.3g})"
    if row["contrast_p"] >= alpha:
        return INCONCLUSIVE, rho, p, f"nothing to explain: {plain}"
    if p < alpha and np.sign(rho) == np.sign(row["contrast_rho"]):
        return REPRODUCED, rho, p, plain
    return ARTEFACT, rho, p, plain


def verdicts(table: pd.DataFrame, primary: str = PRIMARY, alpha: float = ALPHA) -> pd.DataFrame:
    """The control's claims for ``primary`` (and NP against its weight variance)."""
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
    verdict, note = _leads_verdict(row, alpha)
    rows.append(
        [
            "topology leads grokking",
            primary,
            verdict,
            row["median_lead"],
            row["lead_p"],
            RULES["leads"],
            note,
        ]
    )
    rows += _beats_rows(table, row, primary, alpha)
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def _beats_rows(table: pd.DataFrame, row: pd.Series, primary: str, alpha: float) -> list[list]:
    """The verdicts' rows on ``primary`` beating the norm and the Fourier measure, and NP beating
    its weight variance."""
    rows = []
    for name, what in (("norm", "the weight norm"), ("fourier", "the Fourier measure")):
        verdict, rho, p, note = _beats_verdict(row, name, alpha)
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
                RULES["beats"].format(what=what),
                note + lead_note,
            ]
        )
    if "np_mean" in set(table["feature"]) and "partial_wvar_p" in table:
        np_row = table.set_index("feature").loc["np_mean"]
        verdict, rho, p, note = _beats_verdict(np_row, "wvar", alpha)
        rows.append(
            [
                "NP beats its layers' normalised weight variance",
                "np_mean",
                verdict,
                rho,
                p,
                RULES["beats"].format(what="the weight variance"),
                note,
            ]
        )
    return rows
