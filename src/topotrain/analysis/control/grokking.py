"""The grokking control's statistics and verdicts: the study's tests where an effect is known.

Input: one row per (seed, checkpoint) of ``control.control_features`` (all seeds share the steps).

- Per seed (``seed_table``): the grokking step and, per feature, its onset and lead
  (``control``'s rules). A seed that never groks keeps its rows, with no grokking step and a
  note; it is left out of every lead statistic (and the note says how many were).
- Per feature (``feature_table``), over the seeds that grok and in which the feature has an onset
  (``n_grokked``):
  - median lead, and the exact sign-flip p of the mean lead (all 2^n sign patterns);
  - onset against grokking step: Spearman ρ with an exact permutation p (all n! orders) and the
    effect β of the onset on the grokking step with its 95 % interval (``onset_effect``);
  - the median lead minus the weight norm's and minus the Fourier measure's (paired per seed,
    sign-flip p);
  and over every seed, the between-seed contrast (``seed_contrast``: deviations from the
  across-seed mean at each step, exact permutation of seed labels) with test loss, plain and
  partial on the weight norm, on the Fourier measure and, for NP, on the layers' normalised
  weight variance (the partial contrast that the calibration suite checks on the L2 norm), each
  partial with its effect β and 95 % interval (``seed_effect``, as ``diagnostics`` for the plain);
  and, exploratory beside them, the co-movement view (``seed_comove``: step-to-step moves,
  docs/comovement.md), plain (``co_*``) and partial on the norm (``co_norm_*``), each with its
  ρ, p and effect β_co [95 % interval] (``_comove``).
- ``verdicts``: the claims, in the study's vocabulary, for the pre-named topological feature
  (``PRIMARY``, the embedding's H1 total persistence), "beats" and "leads" by the equivalence rule
  at Δ (``verdicts.decide_claim``): "artefact" needs the effect shown below Δ, a test that does not
  reject alone is inconclusive; every other row is exploratory.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.control.features import grokking_step, lead, onset_step
from topotrain.analysis.inference.diagnostics import rejects_in_sign
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    PARTIAL_CO,
    contrast_cell,
    deviations,
    model_matrices,
    permutation_p,
    seed_permutations,
)
from topotrain.analysis.inference.seed_effect import (
    EffectCell,
    effect_cell,
    effect_interval,
    effect_text,
)
from topotrain.analysis.inference.stats import ALPHA, MAX_EXACT_SIGNS, sign_flip_p, spearman_exact
from topotrain.analysis.inference.verdicts import (
    ARTEFACT,
    INCONCLUSIVE,
    NOT_EVALUATED,
    NOT_REPRODUCED,
    REPRODUCED,
    decide_claim,
)
from topotrain.config import CONFIDENCE, DEFAULTS

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
SESOI = DEFAULTS["analysis"]["sesoi"]  # Δ, the schema's default (analysis.sesoi)
EFFECT = ("effect", "effect_ci_low", "effect_ci_high")  # seed_effect's, per partial and onset
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
        effect = effect_interval([effect_cell(mats, feature, TARGET, PARTIAL, perms, cond=cond)])
        out |= {f"partial_{name}_{c}": effect[c] for c in EFFECT}
    return out | _comove(mats, perms, feature)


def _comove(mats: dict[str, np.ndarray], perms: np.ndarray, feature: str) -> dict:
    """The co-movement view of the feature with test loss (the loss of each checkpoint's own
    weights): ``seed_comove`` (co_rho, co_p, co_effect*) and its partial on the weight norm
    (``PARTIAL_CO``: co_norm_*), two-sided p and effect β_co with its 95 % interval."""
    out = {}
    for prefix, view, cond in (("co", "seed_comove", None), ("co_norm", PARTIAL_CO, NORM)):
        cell, _ = contrast_cell(mats, feature, TARGET, view, perms, cond=cond)
        effect = effect_interval([effect_cell(mats, feature, TARGET, view, perms, cond=cond)])
        out |= {f"{prefix}_rho": cell["rho"], f"{prefix}_p": cell["p"]}
        out |= {f"{prefix}_{c}": effect[c] for c in EFFECT}
    return out


def onset_effect(onsets, grokking_steps, alpha: float = ALPHA) -> dict:
    """β of the onset on the grokking step across seeds with its equal-tailed 1 − alpha interval:
    ``seed_effect.effect_interval`` on one cell of one checkpoint (X, Y the seeds' onset and
    grokking step minus their means, each scaled to unit sum of squares; at β = 0 its test is the
    onset's exact Spearman permutation test); NaN for fewer than 2 seeds or a side that does not
    vary, no interval below ``seed_effect.MIN_ARRANGEMENTS`` orders (5 seeds)."""
    none = dict.fromkeys(EFFECT, np.nan)
    if len(onsets) < 2:
        return none
    x, y = (deviations(np.asarray(v, float).reshape(-1, 1)) for v in (onsets, grokking_steps))
    sx, sy = float(np.sqrt((x * x).sum())), float(np.sqrt((y * y).sum()))
    if not sx or not sy:
        return none
    cell = EffectCell(x / sx, y / sy, None, seed_permutations(x.shape[0]))
    effect = effect_interval([cell], alpha)
    return {c: effect[c] for c in EFFECT}


def _leads(seeds: pd.DataFrame, feature: str) -> dict:
    """Lead statistics of one feature over the seeds that grok with an onset of the feature
    (``n_grokked`` of them)."""
    grokked = seeds[seeds["grokking_step"].notna()]
    own = grokked[grokked["feature"] == feature].set_index("seed")
    ok = own[own["onset_step"].notna()]
    median, p = sign_flip(ok["lead"]) if len(ok) >= MIN_GROKKED else (np.nan, np.nan)
    rho, rho_p = spearman_exact(ok["onset_step"].astype(float), ok["grokking_step"].astype(float))
    onset = onset_effect(ok["onset_step"].astype(float), ok["grokking_step"].astype(float))
    out = {
        "n_grokked": len(ok),
        "median_lead": median,
        "lead_p": p,
        "onset_rho": rho,
        "onset_p": rho_p,
        **{f"onset_{c}": v for c, v in onset.items()},
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
