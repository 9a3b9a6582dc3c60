"""The grokking control's statistics: the study's tests where an effect is known.

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
- The claims' verdicts on these tables: ``control.claims``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.control.features import grokking_step, lead, onset_step
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
)
from topotrain.analysis.inference.stats import ALPHA, MAX_EXACT_SIGNS, sign_flip_p, spearman_exact
from topotrain.config import DEFAULTS

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
