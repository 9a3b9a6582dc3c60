"""Neural persistence against an explicit edge-by-edge union-find and a hand-computed example."""

import numpy as np
import pytest

from topotrain.topology import neural_persistence, np_pairs


def bruteforce_pairs(W: np.ndarray) -> list[float]:
    """Rieck et al.'s filtration by hand: edges by decreasing |w|/max|W|, union-find, pairs (1, w)."""
    a = np.abs(W) / np.abs(W).max()
    rows, cols = W.shape
    parent = list(range(rows + cols))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    edges = sorted(((a[i, j], i, rows + j) for i in range(rows) for j in range(cols)), reverse=True)
    pers = []
    for w, u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[ru] = rv
            pers.append(1.0 - w)
    return sorted(pers)


def random_matrices():
    rng = np.random.default_rng(7)
    shapes = [(1, 1), (1, 6), (6, 1), (3, 4), (8, 8), (12, 5), (24, 8), (16, 64)]
    mats = [rng.normal(size=s) for s in shapes]
    ties = np.round(rng.normal(size=(7, 9)), 1)  # many tied weights and exact zeros
    ties[0, :3] = 0.0
    mats += [ties, rng.uniform(-1, 1, size=(10, 3)) ** 3]
    return mats


@pytest.mark.parametrize("W", random_matrices(), ids=lambda W: f"{W.shape[0]}x{W.shape[1]}")
def test_np_matches_bruteforce_union_find(W):
    expected = bruteforce_pairs(W)
    got = np.sort(np_pairs(W))
    assert got.size == sum(W.shape) - 1
    np.testing.assert_allclose(got, expected, atol=1e-12)
    n = len(expected)
    result = neural_persistence(W)
    assert result["np_total"] == pytest.approx(sum(expected) / n, abs=1e-12)
    assert result["np_p2"] == pytest.approx(np.sqrt(np.sum(np.square(expected)) / n), abs=1e-12)


def test_hand_computed_two_by_two():
    # |W| / max = [[1, .5], [.25, .75]]; edges in order 1 (a-c), .75 (b-d), .5 (a-d): merges a-c with b-d
    # .25 (b-c) closes a cycle. Pairs: 1-1=0, 1-.75=.25, 1-.5=.5  → Σ = .75 over |V|-1 = 3
    W = np.array([[4.0, -2.0], [1.0, -3.0]])
    assert sorted(np_pairs(W)) == pytest.approx([0.0, 0.25, 0.5])
    assert neural_persistence(W)["np_total"] == pytest.approx(0.75 / 3)
    assert neural_persistence(W)["np_p2"] == pytest.approx(np.sqrt((0.25**2 + 0.5**2) / 3))


def test_np_is_invariant_to_scale_and_sign():
    W = np.random.default_rng(3).normal(size=(9, 5))
    base = neural_persistence(W)
    assert neural_persistence(-3.5 * W) == pytest.approx(base)
    flips = np.where(np.random.default_rng(4).random(W.shape) < 0.5, -1, 1)
    assert neural_persistence(W * flips) == pytest.approx(base)


@pytest.mark.parametrize("W", [np.zeros((4, 3)), np.full((5, 2), -0.7)], ids=["zeros", "constant"])
def test_all_equal_weights_have_zero_persistence(W):
    assert neural_persistence(W) == {"np_total": 0.0, "np_p2": 0.0}


@pytest.mark.parametrize("bad", [np.array([[1.0, np.nan]]), np.array([[np.inf, 1.0]]), np.zeros((0, 3))])
def test_np_rejects_non_finite_or_empty(bad):
    with pytest.raises(ValueError):
        np_pairs(bad)
