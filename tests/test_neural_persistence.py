"""Neural persistence against an explicit edge-by-edge union-find and a hand-computed example."""

import math

import numpy as np
import pytest

from topotrain.topology import neural_persistence, np_pairs
from topotrain.topology.layers import layer_records


def bruteforce_pairs(W: np.ndarray, top: float | None = None) -> list[float]:
    """Rieck et al.'s filtration in pure Python: edges by decreasing |w|/top (default max|W|),
    union-find."""
    rows, cols = W.shape
    top = max(abs(float(x)) for x in W.ravel()) if top is None else top
    parent = list(range(rows + cols))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    edges = [(abs(float(W[i, j])) / top, i, rows + j) for i in range(rows) for j in range(cols)]
    edges.sort(key=lambda e: e[0], reverse=True)
    pers = []
    for w, u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:  # this edge merges two components: one class born at 1 dies at w
            parent[ru] = rv
            pers.append(1.0 - w)
    return sorted(pers)


def random_matrices() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    shapes = [(1, 1), (1, 6), (6, 1), (1, 40), (2, 2), (3, 4), (8, 8), (12, 5), (24, 8), (16, 64)]
    mats = [rng.normal(size=s) for s in shapes]
    mats.append(np.round(rng.normal(size=(7, 9)), 1))  # many ties and some exact zeros
    mats.append(rng.integers(-2, 3, size=(6, 6)).astype(float))  # heavy ties, zeros, tied maxima
    mats.append(rng.integers(0, 2, size=(5, 11)).astype(float))  # 0/1: every edge at 1 or 0
    sparse = rng.normal(size=(10, 10))
    sparse[rng.random(sparse.shape) < 0.7] = 0.0
    mats.append(sparse)
    mats.append(rng.uniform(-1, 1, size=(10, 3)) ** 3)
    mats.append(rng.normal(size=(9, 4)) * 1e-300)  # tiny magnitudes: only the ratios matter
    mats.append(1.0 - 1e-9 * rng.random((5, 6)))  # costs 1 − w' below 1e-9: must not be dropped
    mats.append(rng.standard_cauchy(size=(5, 13)))  # heavy tails: one huge weight
    mats.append(np.vstack([np.zeros(7), rng.normal(size=(3, 7))]))  # a dead output neuron
    mats.append(np.full((3, 5), 2.0) + np.eye(3, 5))  # only a few weights above the rest
    mats.append(rng.normal(size=(1, 1)) * np.ones((4, 3)))  # a constant matrix
    return mats


@pytest.mark.parametrize("W", random_matrices(), ids=lambda W: f"{W.shape[0]}x{W.shape[1]}")
def test_np_matches_bruteforce_union_find(W):
    expected = bruteforce_pairs(W)
    got = np.sort(np_pairs(W))
    assert got.size == sum(W.shape) - 1
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-15)
    n = len(expected)
    result = neural_persistence(W)
    assert result["np_total"] == pytest.approx(math.fsum(expected) / n, abs=1e-14)
    assert result["np_p2"] == pytest.approx(math.sqrt(sum(p * p for p in expected) / n), abs=1e-14)


def test_hand_computed_two_by_two():
    # Outputs a, b; inputs c, d. |W| / 4 = [[1, .5], [.25, .75]]: a-c 1, a-d .5, b-c .25, b-d .75.
    # a-c (1) merges → 1 - 1 = 0; b-d (.75) merges → .25; a-d (.5) joins {a,c} and {b,d} → .5;
    # b-c (.25) closes a cycle. Pairs 0, .25, .5: np_total = .75 / 3 = .25,
    # np_p2 = √((0 + .0625 + .25) / 3) = √(.3125 / 3).
    W = np.array([[4.0, -2.0], [1.0, -3.0]])
    assert sorted(np_pairs(W)) == pytest.approx([0.0, 0.25, 0.5])
    # The reference adds the unpaired component (1, 0): np_rieck = √(.3125 + 1) / √3.
    assert neural_persistence(W) == pytest.approx(
        {"np_total": 0.25, "np_p2": math.sqrt(0.3125 / 3), "np_rieck": math.sqrt(1.3125 / 3)}
    )


def test_np_is_invariant_to_positive_scale_and_sign_flips():
    W = np.random.default_rng(3).normal(size=(9, 5))
    base = neural_persistence(W)
    assert neural_persistence(3.5 * W) == pytest.approx(base, abs=1e-15)
    assert neural_persistence(-W) == base
    flips = np.where(np.random.default_rng(4).random(W.shape) < 0.5, -1.0, 1.0)
    assert neural_persistence(W * flips) == base


def test_np_is_invariant_to_transposition():
    # The bipartite graph of W and Wᵀ is the same graph with the two sides swapped.
    W = np.random.default_rng(5).normal(size=(6, 11))
    assert neural_persistence(W.T) == pytest.approx(neural_persistence(W), abs=1e-15)


@pytest.mark.parametrize(
    ("W", "rieck"),
    [(np.zeros((4, 3)), math.sqrt(7 / 6)), (np.full((5, 2), -0.7), math.sqrt(1 / 6))],
    ids=["zeros", "constant"],
)
def test_all_equal_weights_have_zero_persistence(W, rieck):
    assert np.array_equal(np_pairs(W), np.zeros(sum(W.shape) - 1))
    result = neural_persistence(W)
    assert (result["np_total"], result["np_p2"]) == (0.0, 0.0)
    # The reference's |W| / max: zeros (0/0 taken as 0) put every edge at w' = 0, each pair
    # persistence 1; a constant layer puts them at w' = 1, persistence 0; plus the unpaired 1.
    assert result["np_rieck"] == pytest.approx(rieck, abs=1e-15)


def test_one_by_one_matrix_has_one_zero_pair():
    assert np_pairs(np.array([[-2.5]])).tolist() == [0.0]


def test_one_dominant_weight_gives_persistence_near_one():
    # One huge weight, the rest ε: every other merge happens at w' ≈ 0
    # → np_total → (|V| − 2)/(|V| − 1).
    W = np.full((3, 4), 1e-12)
    W[1, 2] = 1.0
    assert neural_persistence(W)["np_total"] == pytest.approx(5 / 6, abs=1e-9)


@pytest.mark.parametrize(
    "bad",
    [
        np.array([[1.0, np.nan]]),
        np.array([[np.inf, 1.0]]),
        np.zeros((0, 3)),
        np.zeros((3, 0)),
        np.ones(4),
    ],
    ids=["nan", "inf", "no-rows", "no-cols", "1-D"],
)
def test_np_rejects_non_finite_empty_or_non_matrix(bad):
    with pytest.raises(ValueError):
        neural_persistence(bad)


def reference_np(layers: list[np.ndarray]) -> float:
    """BorgwardtLab/Neural-Persistence's global value, written from its definition: |W| divided by
    the largest |w| over all layers, H0 pairs (1, w') by union-find plus the unpaired (1, 0), the
    p = 2 norm over √(rows + cols − 1), the mean over layers."""
    top = max(float(np.abs(W).max()) for W in layers)
    values = []
    for W in layers:
        pers = bruteforce_pairs(W, top) + [1.0]
        values.append(math.sqrt(sum(p * p for p in pers)) / math.sqrt(sum(W.shape) - 1))
    return sum(values) / len(values)


def test_np_rieck_of_two_layers_by_hand():
    # A = [[.5, −.25]] (1×2), B = [[1], [.5]] (2×1); the largest |w| over both is 1.
    # A: w' = .5, .25, both spanning-tree edges → persistence .5, .75; + (1, 0): √(1.8125) / √2.
    # B: w' = 1, .5 → persistence 0, .5; + (1, 0): √(1.25) / √2. The global value is their mean.
    # Per-layer scaling (np_p2's) would give A w' = 1, .5 instead: the global max matters.
    A, B = np.array([[0.5, -0.25]]), np.array([[1.0], [0.5]])
    by_hand = (math.sqrt(1.8125) + math.sqrt(1.25)) / (2 * math.sqrt(2))
    assert reference_np([A, B]) == pytest.approx(by_hand, abs=1e-15)
    records, _ = layer_records({"a.weight": A, "b.weight": B}, ["*.weight"], maxdim=0)
    assert [r["np_rieck"] for r in records] == pytest.approx(
        [math.sqrt(1.8125) / math.sqrt(2), math.sqrt(1.25) / math.sqrt(2)], abs=1e-15
    )
    assert np.mean([r["np_rieck"] for r in records]) == pytest.approx(by_hand, abs=1e-15)


def test_np_rieck_matches_the_reference_definition_on_random_layers():
    rng = np.random.default_rng(11)
    layers = {
        f"h.{i}.weight": rng.normal(size=s) * scale
        for i, (s, scale) in enumerate([((6, 4), 1.0), ((4, 12), 3.0), ((12, 4), 0.2)])
    }
    records, _ = layer_records(layers, ["*.weight"], maxdim=0)
    got = np.mean([r["np_rieck"] for r in records])
    assert got == pytest.approx(reference_np(list(layers.values())), abs=1e-14)


def test_normalised_variance_by_hand():
    """|W| / max|W| of [[2, −2], [0, −1]] is (1, 1, 0, 0.5): mean 0.625, variance 0.171875; sign,
    scale and an all-zero matrix as documented."""
    from topotrain.topology.neural_persistence import normalised_variance

    W = np.array([[2.0, -2.0], [0.0, -1.0]])
    assert normalised_variance(W) == pytest.approx(0.171875, abs=1e-15)
    assert normalised_variance(-7.0 * W) == pytest.approx(0.171875, abs=1e-15)
    assert normalised_variance(np.zeros((3, 2))) == 0.0
