"""Calibration of the effect's interval and of the "artefact" verdict (issue 35, item 3).

On a simulated study the claim's effect [equal-tailed 95 % interval] per view comes from
``primary.claim_views`` (the report's function, claimed sign +1 for every model). Where the
simulator fixes β in a view (``simulator.true_effect``) each end's miss is counted: the lower
end above β, the upper end below β (each at most α/2 = 2.5 % for an exact interval). The
"artefact" rule is ``verdicts.decide_claim`` for a claim whose test did not reject: an upper end
below Δ in either view; with β ≥ Δ in both views that is its false-positive rate (at most α), with
β < Δ in a view its power.

At 8 seeds a study's intervals cost about 0.11 CPU-s (5 models × 40 320 permutations, 9 999 pooled
draws; 0.04 at 3 or 5 seeds), so these rows use ``effect_draws`` studies: all of them up to 5 seeds,
a fifth beyond (all 1 000 would add some 1 300 CPU-s to the suite), with the Monte Carlo interval
that many draws give.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.calibration.simulator import SESOI, true_effect
from topotrain.analysis.inference.primary import claim_views
from topotrain.analysis.inference.stats import ALPHA
from topotrain.analysis.inference.verdicts import ARTEFACT, decide_claim

VIEWS = ("clock", "scale")
LOW, HIGH = "effect CI lower end above β ({})", "effect CI upper end below β ({})"
ARTEFACT_TEST = "artefact rule at Δ (an upper end below Δ, test not rejected)"
EFFECT_TESTS = [t.format(v) for v in VIEWS for t in (LOW, HIGH)] + [ARTEFACT_TEST]
MISS = "miss rate"  # calibration.csv's ``measures`` of an interval end's rows
FULL_DRAWS_SEEDS = 5  # up to this many seeds every study gets its interval, beyond it a fifth
EFFECT_COLUMNS = [f"effect_{v}_ci_{end}" for v in VIEWS for end in ("low", "high")]


def effect_draws(n_sim: int, k: int) -> int:
    """Studies whose effect intervals are computed: all n_sim up to FULL_DRAWS_SEEDS seeds, else
    a fifth (at least 20)."""
    return n_sim if k <= FULL_DRAWS_SEEDS else min(n_sim, max(20, n_sim // 5))


def study_effects(
    models: list[dict[str, np.ndarray]], perms: np.ndarray, claim_p: dict[str, float]
) -> dict[str, float]:
    """EFFECT_COLUMNS of feature x against y by ``claim_views``, after checking that its one-sided
    p per view equals ``claim_p`` (the calibration's own p, keys clock and scale)."""
    n = len(models)
    res = claim_views(models, [perms] * n, [1.0] * n, "x", "y")
    for view in VIEWS:
        if not np.isclose(res[f"p_{view}"], claim_p[view], rtol=0, atol=1e-12, equal_nan=True):
            raise RuntimeError(
                f"the calibration's claim p ({view} {claim_p[view]}) is not claim_views' "
                f"({res[f'p_{view}']}): the suite must test the report's own p"
            )
    return {c: float(res[c]) for c in EFFECT_COLUMNS}


def effect_hits(d: pd.DataFrame, name: str, sesoi: float = SESOI) -> dict[str, np.ndarray]:
    """Per study with an interval (rows of ``d`` with EFFECT_COLUMNS): each end's miss in each
    view whose β the simulator fixes, and the artefact rule at Δ = ``sesoi``."""
    d = d.dropna(subset=EFFECT_COLUMNS, how="all")
    hits = {}
    for view in VIEWS:
        beta = true_effect(name, view)
        if beta is None:
            continue
        hits[LOW.format(view)] = d[f"effect_{view}_ci_low"].to_numpy(float) > beta
        hits[HIGH.format(view)] = d[f"effect_{view}_ci_high"].to_numpy(float) < beta
    uppers = d[[f"effect_{v}_ci_high" for v in VIEWS]].to_numpy(float)
    hits[ARTEFACT_TEST] = np.array([decide_claim(False, u, sesoi) == ARTEFACT for u in uppers])
    return hits


def judge_effect(test: str, name: str, sesoi: float = SESOI) -> tuple[str, float, bool] | None:
    """(measures, nominal, is_null) of an effect row: an interval end's miss rate at α/2, or
    the artefact rule's false-positive rate (β ≥ Δ in both views: at most α) or power (β < Δ in
    a view); None where the test is not one of EFFECT_TESTS."""
    if test not in EFFECT_TESTS:
        return None
    if test != ARTEFACT_TEST:
        return MISS, ALPHA / 2, True
    known = [b for b in (true_effect(name, v) for v in VIEWS) if b is not None]
    small = any(b < sesoi - 1e-12 for b in known)
    return ("power", ALPHA, False) if small else ("false-positive rate", ALPHA, True)
