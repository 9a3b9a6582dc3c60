"""What each test of the calibration suite says on one scenario's simulated draws.

Per-run draws (``run_draws``): each run's views (``RUN_VIEWS``), p and CI, on one simulated run.
Between-seed draws (``contrast_draws``): studies of ``N_MODELS`` models × k seeds with three
features of the same runs (``FEATURES``, the primary family's claims), each study's contrasts,
claim p's, α views (``alpha_study``) and effect intervals (``contrast_study``), turned into the
"yes" of every between-seed test, flag and BH decision (``contrast_hits``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from topotrain.analysis.calibration.effect import effect_draws, effect_hits, study_effects
from topotrain.analysis.calibration.pass_rule import verdict_draws
from topotrain.analysis.calibration.simulator import (
    N_CHECKPOINTS,
    N_MODELS,
    SESOI,
    STEP,
    simulate,
    task_rng,
)
from topotrain.analysis.inference.associations import view_association
from topotrain.analysis.inference.diagnostics import SPLIT, split_cell
from topotrain.analysis.inference.seed_contrast import (
    CONTRAST_VIEWS,
    PARTIAL,
    SCALE,
    contrast_cell,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.inference.stats import ALPHA, benjamini_hochberg, spearman_rows

FEATURES = ("x", "x_2", "x_3")  # the primary family's three claims: features of the same runs
EFFECT_NOMINAL = ALPHA / 2  # an effect interval end's nominal miss rate (effect.judge_effect)
RUN_VIEWS = ("raw", "detrended", "partial_step", "partial_l2")  # one run's views: p and CI
RUN_TESTS = [f"{view} {what}" for view in RUN_VIEWS for what in ("p", "CI")]
ALPHA_VIEW = "seed_contrast_alpha"  # x's contrast partial on α's stand-in "a" (not in verdicts yet)


def run_draws(name: str, n_sim: int, n_resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Per-run tests' "yes" (bool arrays of n_sim runs) on scenario ``name``."""
    sim = simulate(name, task_rng((name, None), seed), (n_sim, 1))
    t = np.arange(N_CHECKPOINTS) * float(STEP)
    out = {k: np.zeros(n_sim, bool) for k in RUN_TESTS}
    for i in range(n_sim):
        x, y, norm = (sim[k][i, 0] for k in "xyl")
        for view in RUN_VIEWS:
            z = {"partial_step": t, "partial_l2": norm}.get(view)
            res = view_association(x, y, view, z, n_resamples=n_resamples, seed=i)
            out[f"{view} p"][i] = res["p"] < ALPHA
            out[f"{view} CI"][i] = res["ci_low"] > 0 or res["ci_high"] < 0
    return out


def contrast_study(
    sim: dict[str, np.ndarray], i: int, perms: np.ndarray, effects: bool
) -> dict[str, float]:
    """Simulated study i: x's contrast ρ and p (model 0's and pooled, two-sided), each feature's
    claim p per view for a claimed + sign (pooled, one-sided: ``primary.claim_views``' test), the
    sign of x's raw ρ (model 0's seeds' mean, all runs'), and with ``effects`` x's effect
    intervals from ``claim_views`` itself (which checks that its p is this one)."""
    cols = (*FEATURES, "y", "a", "a2")
    models = [{**{c: sim[c][i, m] for c in cols}, SCALE: sim["l"][i, m]} for m in range(N_MODELS)]
    out = alpha_study(models, perms)
    for feature, view in ((f, v) for f in FEATURES for v in CONTRAST_VIEWS):
        cells = [contrast_cell(m, feature, "y", view, perms) for m in models]
        nulls = [null for _, null in cells]
        claim = pooled_row(nulls, view, "greater", 0, [1.0] * N_MODELS)
        out[f"{feature} {view} claim p"] = claim["p"]
        if feature == "x":
            out[f"{view} model p"], out[f"{view} model rho"] = cells[0][0]["p"], cells[0][0]["rho"]
            pooled = pooled_row(nulls, view, "two-sided")
            out[f"{view} pooled p"], out[f"{view} pooled rho"] = pooled["p"], pooled["rho"]
    if effects:
        own = {"clock": out["x seed_contrast claim p"], "scale": out["x seed_contrast_l2 claim p"]}
        out |= study_effects(models, perms, own)
    x, y = sim["x"][i].reshape(-1, N_CHECKPOINTS), sim["y"][i].reshape(-1, N_CHECKPOINTS)
    rho = spearman_rows(x, y)
    k = sim["x"].shape[2]
    signs = {"raw sign pooled": np.sign(rho.mean()), "raw sign model": np.sign(rho[:k].mean())}
    return out | signs | {"raw all positive model": bool(np.all(rho[:k] > 0))}


def alpha_study(models: list[dict[str, np.ndarray]], perms: np.ndarray) -> dict[str, float]:
    """Model 0's and the pooled two-sided p of x's contrast with y partial on "a" (ALPHA_VIEW)
    and cross-fitted on "a" and "a2", α of two halves of the layers (SPLIT), in one study."""
    partial_a = [contrast_cell(m, "x", "y", PARTIAL, perms, cond="a") for m in models]
    split = [split_cell(m, "x", "y", ("a", "a2"), perms) for m in models]
    out = {}
    for view, pooled_as, cells in ((ALPHA_VIEW, PARTIAL, partial_a), (SPLIT, SPLIT, split)):
        pooled = pooled_row([null for _, null in cells], pooled_as, "two-sided", cond="a")
        out[f"{view} model p"], out[f"{view} pooled p"] = cells[0][0]["p"], pooled["p"]
    return out


def contrast_draws(
    name: str,
    n_sim: int,
    k: int,
    seed: int,
    n_effects: int | None = None,
    sesoi: float = SESOI,
) -> dict[str, np.ndarray]:
    """Between-seed tests' "yes" over n_sim simulated studies of N_MODELS models × k seeds, and
    the effect rows over the first ``n_effects`` of them (default ``effect_studies(n_sim, k)``)."""
    rng = task_rng((name, k), seed)
    sim = {
        c: v.reshape(n_sim, N_MODELS, k, N_CHECKPOINTS)
        for c, v in simulate(name, rng, (n_sim * N_MODELS, k), len(FEATURES), stand_in=True).items()
    }
    perms = seed_permutations(k, seed)
    n_eff = effect_studies(n_sim, k) if n_effects is None else n_effects
    rows = pd.DataFrame([contrast_study(sim, i, perms, i < n_eff) for i in range(n_sim)])
    return contrast_hits(rows) | (effect_hits(rows.iloc[:n_eff], name, sesoi) if n_eff else {})


def effect_studies(n_sim: int, k: int) -> int:
    """Studies of a k-seed task whose effect intervals are computed: ``effect_draws`` (a fifth
    beyond 5 seeds) raised to the draws a verdict row needs at EFFECT_NOMINAL
    (``verdict_draws``: 1,288), at most n_sim (the default 1,000: all of them)."""
    return min(n_sim, max(effect_draws(n_sim, k), verdict_draws(EFFECT_NOMINAL)))


def contrast_hits(d: pd.DataFrame) -> dict[str, np.ndarray]:
    """ "yes" per study for each between-seed test and the flags and BH decisions built on them."""
    hits = {}
    for view, flag in (("seed_contrast", "beats_clock"), ("seed_contrast_l2", "beats_scale")):
        for level in ("model", "pooled"):
            p = d[f"{view} {level} p"].to_numpy(float)
            hits[f"{view} p ({level})"] = p < ALPHA
            same = np.sign(d[f"{view} {level} rho"]) == d[f"raw sign {level}"]
            hits[f"{flag} ({level})"] = (p < ALPHA) & same.to_numpy()
    claims = np.column_stack(  # a claim's p: the larger of its two views' (intersection–union)
        [
            np.maximum(d[f"{f} seed_contrast claim p"], d[f"{f} seed_contrast_l2 claim p"])
            for f in FEATURES
        ]
    )
    for view, level in itertools.product((ALPHA_VIEW, SPLIT), ("model", "pooled")):
        hits[f"{view} p ({level})"] = d[f"{view} {level} p"].to_numpy(float) < ALPHA
    bh = np.array([benjamini_hochberg(c) for c in claims]) < ALPHA  # the family of one study
    hits["primary family BH (any rejection)"] = bh.any(axis=1)
    agree = d["raw all positive model"].to_numpy(bool)  # every seed shows the claim's sign (+)
    hits["T2/T3/T4 rule: reproduced (per size)"] = agree & bh[:, 0]  # the first claim: TP0's
    return hits
