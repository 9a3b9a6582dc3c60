"""Calibration of the primary family's sign rule (issue 45): how often a claim over several models
is "reproduced" when it is false.

A claim is reproduced when its joint one-sided p over the two design views (level and
co-movement, each the larger of its clock's and scale's p; ``primary.joint_p``) is below α and,
in the view of smaller p, every claimed model's between-seed effect estimate has its claimed sign
and its own exact test rules out a reversal by that view's Δ at α (``signs.reversal_ps``,
``ruled_out``): ``claim_decision``, the report's rule and functions (``primary.claim_test``,
checked in tests/test_sign_rule.py). One claim at α: BH over a family never lowers a claim's
p, so this rate bounds the family's.

Claims (CLAIM_SIGNS): NP's mixed signs (−, +, +, +) over 4 models and all + over 5. Scenarios:
``null``, every model's planted share 0; ``one_wrong``, the first model's share is Δ against its
claimed sign and the others' Δ with theirs (the claim is false, so its "reproduced" rate is a
false-positive rate too, and the sign rule is calibrated in the issue's sense where it stays
≤ α); ``one_wrong_strong``, the same with the others at STRONG·Δ (T3's case: strong models
carrying a wrong one). Runs are ``simulator.simulate``'s ``decay_r<r>`` (AR(0.8) noise whose sd
shrinks with the step), one model at a time with its own signed share r; β = r
(``simulator.true_effect``) in both views: x's own noise has y's law, so their step-to-step
differences correlate at r too, and one wrong model sits at −Δ = −Δ_co in either view.

Measured (1 000 studies per row, seed 0, 3/5/8 seeds, 2026-11-27, after the reversal rule):
null 0.000/0.002/0.009 (mixed) and 0.000/0.000/0.003 (all +); one_wrong 0.000/0.005/0.027 and
0.000/0.005/0.025; one_wrong_strong 0.000/0.030/0.044 and 0.000/0.030/0.029 (binomial upper ends
≤ 0.059), where the test alone gives up to 1.000. With the sign of an estimate alone (until
2026-11-27) one_wrong_strong was 0.16–0.22. At 3 seeds nothing is reproduced (1/6 > α).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.calibration.pass_rule import clopper_pearson, pass_max, passes
from topotrain.analysis.calibration.simulator import SESOI, simulate
from topotrain.analysis.inference.primary import (
    SESOI_CO,
    VIEWS,
    effect_signs,
    joint_p,
    signs_held,
    view_nulls,
)
from topotrain.analysis.inference.seed_contrast import SCALE, pooled_row, seed_permutations
from topotrain.analysis.inference.seed_effect import effect_cell
from topotrain.analysis.inference.signs import reversal_ps, ruled_out
from topotrain.analysis.inference.stats import ALPHA

CLAIM_SIGNS = {"mixed (-,+,+,+)": (-1.0, 1.0, 1.0, 1.0), "all + (5 models)": (1.0,) * 5}
SCENARIOS = ("null", "one_wrong", "one_wrong_strong")
STRONG = 4.0  # one_wrong_strong: the right models' share in Δ (0.4: the simulator's largest)
SEEDS = (3, 5, 8)
DRAWS = 400  # studies per row here; the suite's are ``view_draws`` (1,288: pass_rule.verdict_draws)
SIGN_RULE_COLUMNS = [
    "claim",
    "scenario",
    "models",
    "seeds",
    "draws",
    "rate",
    "rate_ci_high",
    "test_rate",
    "nominal",
    "pass_max",
    "passes",
]


def planted(scenario: str, signs: tuple[float, ...], delta: float = SESOI) -> list[float]:
    """Each model's planted share r (raw direction): 0 under ``null``; under ``one_wrong``
    −s_0·Δ for the first model and s_m·Δ for the others (s_m·STRONG·Δ: ``one_wrong_strong``)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {SCENARIOS}, not {scenario!r}")
    if scenario == "null":
        return [0.0] * len(signs)
    right = STRONG * delta if scenario == "one_wrong_strong" else delta
    return [-s * delta if m == 0 else s * right for m, s in enumerate(signs)]


def draw_models(shares: list[float], n: int, k: int, rng: np.random.Generator) -> list[dict]:
    """Per model, ``simulate('decay_r<r>')``'s x, y and norm for n studies × k seeds (arrays
    (n, k, checkpoints)), keyed x, y and SCALE as ``primary.claim_views`` reads them."""
    out = []
    for r in shares:
        sim = simulate(f"decay_r{r:g}", rng, (n, k))
        out.append({"x": sim["x"], "y": sim["y"], SCALE: sim["l"]})
    return out


def claim_decision(
    models: list[dict[str, np.ndarray]],
    perms: list[np.ndarray],
    signs: list[float],
    seed: int = 0,
    deltas: tuple[float, float] = (SESOI, SESOI_CO),
) -> tuple[bool, bool]:
    """(the claim's test rejects at α, the claim is reproduced) for one study's models (raw
    (k, checkpoints) matrices of x, y and SCALE), by the report's rule over both design views
    (``primary.VIEWS``, the loss y for each): the joint p over the pairs (``joint_p``) < α, and
    in the pair of smaller p every model's effect sign held (``signs_held``) and its reversal by
    that pair's Δ (``deltas``: level, co-movement) ruled out by its own test (``ruled_out``)."""
    nulls, pair_p, held = {}, {}, {}
    for (name, (_, conds)), delta in zip(VIEWS.items(), deltas, strict=True):
        nulls[name], ps, by_view, reversal = {}, [], [], []
        for cond_name, (view, cond) in conds.items():
            got = view_nulls(models, perms, "x", "y", cond, view)
            nulls[name][cond_name] = got
            ps.append(pooled_row(got, view, "greater", seed, signs, cond)["p"])
            by_view.append(effect_signs(got))
            cells = [
                effect_cell(m, "x", "y", view, p, cond, s)
                for m, p, s in zip(models, perms, signs, strict=True)
            ]
            reversal.append(reversal_ps(cells, delta, seed))
        pair_p[name] = max(ps)
        held[name] = bool(signs_held(signs, by_view).all() and ruled_out(reversal).all())
    rejects = bool(joint_p(list(nulls.values()), signs, seed) < ALPHA)
    return rejects, rejects and held[min(pair_p, key=lambda v: pair_p[v])]


def sign_rule_row(
    claim: str, scenario: str, k: int, draws: int = DRAWS, delta: float = SESOI, seed: int = 0
) -> dict:
    """One SIGN_RULE_COLUMNS row: ``draws`` simulated studies of ``claim`` (CLAIM_SIGNS) under
    ``scenario`` at k seeds per model; rate and test_rate are the shares reproduced and
    rejected by the pooled test alone, rate_ci_high the exact binomial 95 % upper bound, passes
    the suite's pass rule (``pass_rule``: at most pass_max of the draws reproduced at α)."""
    signs = list(CLAIM_SIGNS[claim])
    rng = np.random.default_rng([seed, k, len(signs), SCENARIOS.index(scenario)])
    sims = draw_models(planted(scenario, tuple(signs), delta), draws, k, rng)
    perms = [seed_permutations(k, seed)] * len(signs)
    hits = np.array(
        [
            claim_decision([{c: v[i] for c, v in m.items()} for m in sims], perms, signs, seed)
            for i in range(draws)
        ]
    )
    reproduced = int(hits[:, 1].sum())
    high = clopper_pearson(reproduced, draws)[1]
    return {
        "claim": claim,
        "scenario": scenario,
        "models": len(signs),
        "seeds": k,
        "draws": draws,
        "rate": reproduced / draws,
        "rate_ci_high": high,
        "test_rate": float(hits[:, 0].mean()),
        "nominal": ALPHA,
        "pass_max": pass_max(draws, ALPHA),
        "passes": bool(passes(reproduced, draws, ALPHA)),
    }


def sign_rule_rows(
    draws: int = DRAWS, seeds: tuple[int, ...] = SEEDS, delta: float = SESOI, seed: int = 0
) -> pd.DataFrame:
    """SIGN_RULE_COLUMNS for every claim, scenario and seed count: rows the calibration suite's
    table can take (a rate ≤ nominal where rate_ci_high is the binomial bound)."""
    rows = [
        sign_rule_row(claim, scenario, k, draws, delta, seed)
        for claim in CLAIM_SIGNS
        for scenario in SCENARIOS
        for k in seeds
    ]
    return pd.DataFrame(rows, columns=SIGN_RULE_COLUMNS)
