"""Diagram distances and vectorisations against independent computations: every perfect matching
enumerated by brute force on small diagrams, and gudhi (the `test` extra; not a dependency of
topotrain) on random diagrams with ties, up to 200 bars."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from topotrain.topology.distances import bottleneck, matching_costs, w1_distance
from topotrain.topology.series import betti_curve, landscapes, persistence_image


def random_diagram(rng: np.random.Generator, n: int, ties: bool = False) -> np.ndarray:
    """n bars (b, d) with d > b; births all 0 half of the time (like H0); rounded for ties."""
    births = rng.uniform(0, 1, n) * rng.integers(0, 2)
    bars = np.column_stack([births, births + rng.exponential(0.5, n) + 1e-3])
    return np.round(bars, 1) + np.array([0.0, 0.1]) if ties else bars


def brute_force(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(W1, bottleneck) over every perfect matching of the (m + n)² cost matrix."""
    costs = matching_costs(a, b)
    best_sum, best_max = np.inf, np.inf
    for perm in itertools.permutations(range(len(costs))):
        chosen = costs[np.arange(len(costs)), perm]
        best_sum, best_max = min(best_sum, chosen.sum()), min(best_max, chosen.max())
    return float(best_sum), float(best_max)


@pytest.mark.parametrize("seed", range(12))
def test_w1_and_bottleneck_equal_the_best_of_every_matching(seed):
    rng = np.random.default_rng(seed)
    a, b = (random_diagram(rng, int(k), ties=seed % 2 == 0) for k in rng.integers(0, 4, 2))
    w1, bn = brute_force(a, b) if len(a) + len(b) else (0.0, 0.0)
    assert w1_distance(a, b) == pytest.approx(w1, abs=1e-12)
    assert bottleneck(a, b) == pytest.approx(bn, abs=1e-12)
    assert bottleneck(a, b) <= w1_distance(a, b) + 1e-12


def test_distances_ignore_infinite_bars_and_handle_empty_diagrams():
    a = np.array([[0.0, 1.0], [0.0, np.inf]])
    assert w1_distance(a, np.empty((0, 2))) == 0.5 and bottleneck(a, np.empty((0, 2))) == 0.5
    assert w1_distance(np.empty((0, 2)), np.empty((0, 2))) == 0.0
    assert bottleneck(np.empty((0, 2)), np.array([[0.0, np.inf]])) == 0.0


@pytest.mark.parametrize("size, ties", [(5, False), (30, True), (60, False), (200, False)])
def test_distances_equal_gudhis_exact_ones(size, ties):
    gudhi = pytest.importorskip("gudhi")
    from gudhi.hera import wasserstein_distance

    rng = np.random.default_rng(size)
    for _ in range(5):
        a = random_diagram(rng, size, ties)
        b = a + rng.normal(0, 0.05, a.shape) * (rng.random(a.shape) < 0.5)
        b = b[b[:, 1] > b[:, 0]]
        ref = wasserstein_distance(a, b, order=1, internal_p=np.inf, delta=1e-9)
        assert w1_distance(a, b) == pytest.approx(ref, rel=1e-8)
        assert bottleneck(a, b) == pytest.approx(gudhi.bottleneck_distance(a, b, 0.0), abs=1e-12)


def test_vectorisations_equal_gudhis():
    pytest.importorskip("gudhi")
    from gudhi.representations import BettiCurve, Landscape, PersistenceImage

    rng = np.random.default_rng(7)
    bars = random_diagram(rng, 40)
    grid = np.linspace(0.0, bars[:, 1].max(), 64)
    span = [grid[0], grid[-1]]
    land = Landscape(num_landscapes=3, resolution=64, sample_range=span).fit_transform([bars])
    np.testing.assert_allclose(landscapes(bars, 3, grid), land.reshape(3, 64) / np.sqrt(2))
    betti = BettiCurve(resolution=64, sample_range=span).fit_transform([bars])
    np.testing.assert_array_equal(betti_curve(bars, grid), betti.reshape(64))
    im_range, sigma = [-0.1, 1.1, 0.0, 3.0], 0.15
    image = PersistenceImage(
        bandwidth=sigma, weight=lambda x: x[1], resolution=[16, 16], im_range=im_range
    ).fit_transform([bars])
    np.testing.assert_allclose(
        persistence_image(bars, 16, im_range, sigma), image.reshape(16, 16), rtol=1e-12
    )
