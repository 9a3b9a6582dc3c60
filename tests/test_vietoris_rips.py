"""Vietoris–Rips persistence: H0 against minimum-spanning-tree lengths, H1 of a noisy circle."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from topotrain.topology import subsample_rows, vr_diagrams


def prim_mst_lengths(X: np.ndarray) -> np.ndarray:
    """Edge lengths of the Euclidean minimum spanning tree by Prim's algorithm (independent of scipy)."""
    D = cdist(X, X)
    n = len(X)
    inside = np.zeros(n, bool)
    inside[0] = True
    best = D[0].copy()
    lengths = []
    for _ in range(n - 1):
        best[inside] = np.inf
        j = int(np.argmin(best))
        lengths.append(best[j])
        inside[j] = True
        best = np.minimum(best, D[j])
    return np.sort(lengths)


@pytest.mark.parametrize("shape", [(2, 3), (30, 2), (80, 8), (144, 48)])
def test_h0_deaths_are_mst_edge_lengths(shape):
    X = np.random.default_rng(shape[0]).normal(size=shape)
    h0 = vr_diagrams(X)[0]
    finite = np.sort(h0[np.isfinite(h0[:, 1]), 1])
    np.testing.assert_allclose(finite, prim_mst_lengths(X), atol=1e-6)
    assert (h0[:, 0] == 0).all() and np.isinf(h0[:, 1]).sum() == 1


def test_noisy_circle_has_one_long_h1_bar():
    rng = np.random.default_rng(0)
    theta = rng.uniform(0, 2 * np.pi, 100)
    X = np.column_stack([np.cos(theta), np.sin(theta)]) + rng.normal(scale=0.05, size=(100, 2))
    h1 = vr_diagrams(X)[1]
    lengths = np.sort(h1[:, 1] - h1[:, 0])[::-1]
    assert lengths[0] > 0.5 and (lengths[1:] < 0.2).all()


def test_single_and_identical_rows_give_only_the_infinite_bar():
    for X in (np.ones((1, 4)), np.tile([0.3, -1.0, 2.0], (6, 1))):
        h0, h1 = vr_diagrams(X)
        assert h0.tolist() == [[0.0, np.inf]] and h1.shape == (0, 2)


@pytest.mark.parametrize("bad", [np.zeros((0, 3)), np.array([[0.0, np.nan]])])
def test_bad_clouds_are_rejected(bad):
    with pytest.raises(ValueError):
        vr_diagrams(bad)


def test_subsample_is_seeded_and_keeps_distinct_rows():
    X = np.arange(500.0).reshape(250, 2)
    a = subsample_rows(X, 40, np.random.default_rng(1))
    b = subsample_rows(X, 40, np.random.default_rng(1))
    assert a.shape == (40, 2) and np.array_equal(a, b) and len(np.unique(a[:, 0])) == 40
    assert subsample_rows(X, 400, np.random.default_rng(1)) is X
