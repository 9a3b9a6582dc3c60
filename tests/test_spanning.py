"""The numpy spanning trees and distances against scipy's (an independent implementation)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

from topotrain.topology.spanning import (
    bipartite_max_spanning,
    condensed,
    mst_weights,
    pairwise_distances,
    row_blocks,
    symmetrise_max,
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


def prim_bipartite(cost: np.ndarray) -> np.ndarray:
    """The kernel before: dense Prim on the bipartite graph, one vertex per step, ascending."""
    R, C = cost.shape
    best_r, best_c = np.full(R, np.inf), cost[0].astype(np.float64, copy=True)
    done_r, done_c = np.zeros(R, bool), np.zeros(C, bool)
    done_r[0] = True
    out = []
    for _ in range(R + C - 1):
        r, c = int(np.argmin(best_r)), int(np.argmin(best_c))
        if best_r[r] <= best_c[c]:
            out.append(best_r[r])
            done_r[r], best_r[r] = True, np.inf
            np.minimum(best_c, cost[r], out=best_c)
            best_c[done_c] = np.inf
        else:
            out.append(best_c[c])
            done_c[c], best_c[c] = True, np.inf
            np.minimum(best_r, cost[:, c], out=best_r)
            best_r[done_r] = np.inf
    return np.sort(out)


def block_graph(cost: np.ndarray) -> np.ndarray:
    """The (R + C)² adjacency of the bipartite graph: cost between the sides, no edge within."""
    R, C = cost.shape
    dense = np.zeros((R + C, R + C))
    dense[:R, R:] = cost
    return dense


def costs(W: np.ndarray, heaviest: np.ndarray) -> np.ndarray:
    """NP's costs 1 − |w| / max|W| of the spanning tree's |w|, ascending."""
    return np.sort(1.0 - heaviest / np.abs(W.astype(np.float64)).max())


def spanning_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    shapes = [(1, 1), (1, 5), (6, 1), (7, 4), (4, 7), (48, 192), (192, 48), (30, 30)]
    mats = [rng.normal(size=s) for s in shapes]
    mats += [rng.normal(size=(40, 13)).astype(np.float32), rng.normal(size=(9, 50)) ** 5]
    mats += [rng.integers(-2, 3, size=(12, 17)).astype(float)]  # heavy ties and zeros
    mats += [np.round(rng.normal(size=(25, 8)), 1), np.full((5, 9), -0.5)]  # ties, all tied
    return mats


@pytest.mark.parametrize("W", spanning_cases(), ids=lambda W: f"{W.shape}-{W.dtype}")
@pytest.mark.parametrize("block", [1 << 22, 7, 1])
def test_bipartite_max_spanning_equals_scipy_and_the_prim_kernel_before(W, block):
    """Borůvka's first round + Prim on the stars (read a row block at a time) picks a maximum
    spanning tree of |W|: its costs 1 − |w|/max are the MST weights scipy and the old dense
    Prim find on 1 − |W|/max, ties included, to the last bit."""
    heaviest = bipartite_max_spanning(W, block)
    assert heaviest.dtype == np.float64 and heaviest.size == sum(W.shape) - 1
    cost = 1.0 - np.abs(W.astype(np.float64)) / np.abs(W.astype(np.float64)).max()
    assert np.array_equal(costs(W, heaviest), prim_bipartite(cost))
    positive = cost + 1.0  # scipy drops zero entries as missing edges: shift, compare, unshift
    expected = np.sort(minimum_spanning_tree(block_graph(positive)).data) - 1.0
    np.testing.assert_allclose(costs(W, heaviest), expected, rtol=0, atol=1e-15)


def test_bipartite_max_spanning_passes_nan_and_inf_through():
    W = np.random.default_rng(2).normal(size=(6, 9))
    W[2, 3] = np.nan
    assert np.isnan(bipartite_max_spanning(W)).any()
    W[2, 3] = -np.inf
    assert np.isinf(bipartite_max_spanning(W).max())


def test_row_blocks_cover_the_rows_within_the_entry_budget():
    blocks = row_blocks(10, 4, block=9)  # 2 rows (8 entries) per block
    assert [(b.start, b.stop) for b in blocks] == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    assert row_blocks(3, 100, block=10) == [slice(0, 1), slice(1, 2), slice(2, 3)]
    assert row_blocks(5, 5) == [slice(0, 5)]


def test_symmetrise_max_in_tiles_equals_the_whole_matrix_at_once():
    G = np.random.default_rng(3).normal(size=(23, 23)).astype(np.float32)
    expected = np.maximum(G, G.T)
    symmetrise_max(G, block=5)
    assert np.array_equal(G, expected)


def test_pairwise_distances_match_pdist():
    X = np.random.default_rng(0).normal(size=(30, 48))
    square = pairwise_distances(X)
    assert np.array_equal(np.diag(square), np.zeros(30))
    assert np.array_equal(square, square.T)
    assert condensed(square) == pytest.approx(pdist(X), rel=1e-14)


def test_pairwise_distances_sum_each_entry_over_the_coordinates_in_order():
    X = np.random.default_rng(1).normal(size=(12, 37))
    expected = np.zeros((12, 12))
    for i in range(12):
        for j in range(12):
            total = 0.0
            for k in range(37):
                diff = X[i, k] - X[j, k]
                total += diff * diff
            expected[i, j] = np.sqrt(total)
    assert np.array_equal(pairwise_distances(X), expected)
