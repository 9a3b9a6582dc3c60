"""The per-model half of "reproduced" (``signs.reversal_ps`` / ``ruled_out``): each claimed
model's own exact seed-permutation test of "its effect is reversed by the margin or more",
checked against a brute-force enumeration with scipy's Spearman ρ."""

import itertools

import numpy as np
import pytest
from scipy import stats

from topotrain.analysis.inference.seed_contrast import seed_permutations
from topotrain.analysis.inference.seed_effect import effect_cell
from topotrain.analysis.inference.signs import reversal_ps, ruled_out


def cell(k: int, n: int, share: float, sign: float, rng_seed: int):
    rng = np.random.default_rng(rng_seed)
    u = rng.normal(0, 1, (k, n))
    x = share * u + rng.normal(0, 1, (k, n))
    mats = {"x": x, "y": u, "l2_norm_mean": rng.normal(0, 1, (k, n))}
    return effect_cell(mats, "x", "y", "seed_contrast", seed_permutations(k), None, sign)


def brute_p(c, margin: float) -> float:
    """#{π: s·ρ(π·(X + margin·s·Y), Y) ≥ s·ρ observed} / k!, every permutation of the seed rows
    (the effect in the claimed direction s)."""
    shifted = c.x + margin * c.sign * c.y
    rho = [
        stats.spearmanr(shifted[list(p)].ravel(), c.y.ravel())[0]
        for p in itertools.permutations(range(len(c.x)))
    ]
    observed = stats.spearmanr(shifted.ravel(), c.y.ravel())[0]
    return float(np.mean(c.sign * np.asarray(rho) >= c.sign * observed - 1e-12))


@pytest.mark.parametrize(
    ("share", "sign", "margin"), [(0.3, 1.0, 0.1), (0.3, -1.0, 0.1), (0.0, 1.0, 0.5)]
)
def test_a_models_reversal_p_is_its_own_exact_test_at_minus_the_margin(share, sign, margin):
    c = cell(5, 9, share, sign, 4)
    got = reversal_ps([c, None], margin)
    assert got[0] == pytest.approx(brute_p(c, margin), abs=1e-12)
    assert np.isnan(got[1])


def test_a_larger_margin_is_easier_to_rule_out_and_three_seeds_never_rule_one_out():
    c = cell(5, 20, 0.6, 1.0, 7)  # a clear + effect at 5 seeds
    ps = reversal_ps([c], 0.1)[0], reversal_ps([c], 0.5)[0]
    assert ps[1] <= ps[0] and ps[1] == pytest.approx(1 / 120)
    three = [cell(3, 40, 0.9, 1.0, s) for s in range(5)]
    assert (reversal_ps(three, 1.0) >= 1 / 6 - 1e-12).all()
    assert not ruled_out([reversal_ps(three, 1.0)]).any()


def test_ruled_out_needs_every_condition_and_reads_nan_as_not_ruled_out():
    got = ruled_out([np.array([0.01, 0.01, np.nan, 0.2]), np.array([0.04, 0.06, 0.01, 0.01])])
    assert got.tolist() == [True, False, False, False]
