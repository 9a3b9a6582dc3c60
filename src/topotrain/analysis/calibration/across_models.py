"""The calibration suite's tests across the models, on their nulls: T5's exact sign-flip test
paired by model (``PAIRED``: per-model error differences symmetric about 0) and the across-size
rules (``SIZE_NULLS``: nothing changes with N; T4/T6's exact Spearman, T7's log-log slope
interval, t2_monotone's strict rise). ``suite`` runs them as tasks of their own.
"""

from __future__ import annotations

import numpy as np

from topotrain.analysis.calibration.simulator import N_MODELS, task_rng
from topotrain.analysis.inference.stats import ALPHA, seed_interval, sign_flip_p, spearman_exact
from topotrain.analysis.prediction.scaling import loglog_line
from topotrain.analysis.replication.claims import REPRODUCED, monotone_verdict

PAIRED = {  # nulls of T5's paired test: per-model error differences symmetric about 0
    "paired_gaussian": lambda rng, shape: rng.normal(size=shape),
    "paired_heavy_tailed": lambda rng, shape: rng.standard_t(2, size=shape),
}
SIZES = np.array([3e3, 7e3, 21e3, 46e3, 97e3])  # the study's parameter counts
SIZE_NULLS = {  # nulls of the across-size rules: nothing changes with N
    "sizes_gaussian": lambda rng, shape: rng.normal(size=shape),
    "sizes_heavy_tailed": lambda rng, shape: rng.standard_t(3, size=shape),
}


def size_draws(name: str, n_sim: int, seed: int) -> dict[str, np.ndarray]:
    """The across-size rules on n_sim studies where nothing depends on N: a per-size value
    (T4/T6's exact Spearman), final values e^(1 + 0.1·ε) (T7's log-log t-interval) and 3 seeds'
    ρ = tanh(1.5 + 0.3·ε) per size (t2_monotone: a strict rise with disjoint Fisher-z intervals)."""
    rng = task_rng((name, None), seed)
    draw = SIZE_NULLS[name]
    values, finals, rhos = draw(rng, (n_sim, 5)), draw(rng, (n_sim, 5)), draw(rng, (n_sim, 5, 3))
    spear = np.array([spearman_exact(SIZES, v)[1] < ALPHA for v in values])
    lines = [loglog_line(SIZES, np.exp(1 + 0.1 * f)) for f in finals]
    excl = np.array([r["loglog_slope_ci_low"] > 0 or r["loglog_slope_ci_high"] < 0 for r in lines])
    strength = -np.tanh(1.5 + 0.3 * rhos)  # |ρ| near 0.9, no trend with size
    mono = np.array(
        [monotone_verdict([seed_interval(r) for r in study]) == REPRODUCED for study in strength]
    )
    return {
        "T4/T6 Spearman vs N, exact p": spear,
        "T7 log-log slope interval excludes 0": excl,
        "t2_monotone rule: reproduced": mono,
    }


def paired_draws(name: str, n_sim: int, seed: int) -> dict[str, np.ndarray]:
    """T5's exact sign-flip test on n_sim draws of N_MODELS per-model differences."""
    d = PAIRED[name](task_rng((name, None), seed), (n_sim, N_MODELS))
    return {"T5 sign-flip p (paired by model)": np.array([sign_flip_p(r) < ALPHA for r in d])}
