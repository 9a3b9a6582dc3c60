"""The numpy spanning trees and distances against scipy's (an independent implementation)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

from topotrain.topology.spanning import (
    bipartite_mst_weights,
    condensed,
    mst_weights,
    pairwise_distances,
)


def scipy_mst(dense: np.ndarray) -> np.ndarray:
    """scipy's MST weights (zero entries are missing edges there: inputs here have none)."""
    return np.sort(minimum_spanning_tree(dense).data)


@pytest.mark.parametrize("n", [2, 3, 17, 120])
def test_mst_weights_match_scipy(n):
    rng = np.random.default_rng(n)
    X = rng.normal(size=(n, 5))
    square = squareform(pdist(X))
    assert mst_weights(square) == pytest.approx(scipy_mst(square), abs=0, rel=0)


def test_mst_keeps_zero_and_tied_edges():
    # three copies of one point and a fourth at distance 2: weights 0, 0, 2
    X = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [2.0, 0.0]])
    assert mst_weights(pairwise_distances(X)).tolist() == [0.0, 0.0, 2.0]
    square = np.ones((4, 4)) - np.eye(4)  # every edge ties
    assert mst_weights(square).tolist() == [1.0, 1.0, 1.0]
    assert mst_weights(np.zeros((1, 1))).size == 0


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (6, 1), (7, 4), (48, 192)])
def test_bipartite_mst_matches_scipy_on_the_block_graph(shape):
    rng = np.random.default_rng(sum(shape))
    cost = rng.uniform(0.01, 1.0, size=shape)
    R, C = shape
    dense = np.zeros((R + C, R + C))
    dense[:R, R:] = cost  # zeros elsewhere: no edge within a side
    assert bipartite_mst_weights(cost) == pytest.approx(scipy_mst(dense), abs=0, rel=0)
    assert bipartite_mst_weights(cost).size == R + C - 1


def test_pairwise_distances_match_pdist():
    X = np.random.default_rng(0).normal(size=(30, 48))
    square = pairwise_distances(X)
    assert np.array_equal(np.diag(square), np.zeros(30))
    assert np.array_equal(square, square.T)
    assert condensed(square) == pytest.approx(pdist(X), rel=1e-14)
