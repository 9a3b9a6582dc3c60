"""Vietoris–Rips persistence: H0 against minimum-spanning-tree lengths, H1 of a noisy circle."""

import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from topotrain.topology import subsample_rows, vr_diagrams


def prim_mst_lengths(X: np.ndarray) -> np.ndarray:
    """Edge lengths of the Euclidean minimum spanning tree by Prim's algorithm (no scipy MST)."""
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


def clouds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    dup = rng.normal(size=(20, 5))
    sym = rng.random((24, 24))
    return {
        "2x3": rng.normal(size=(2, 3)),
        "30x2": rng.normal(size=(30, 2)),
        "80x8": rng.normal(size=(80, 8)),
        "144x48": rng.normal(size=(144, 48)),
        "scale-100": 100 * rng.normal(size=(60, 48)),  # float32 would be off by ~3e-5 here
        "scale-1e-9": 1e-9 * rng.normal(size=(40, 3)),  # dense scipy input would drop these edges
        "duplicates": np.vstack([dup, dup[:7], dup[:3]]),
        "grid-ties": np.stack(np.meshgrid(np.arange(6.0), np.arange(5.0)), -1).reshape(-1, 2),
        "square-is-points": (sym + sym.T) * (1 - np.eye(24)),  # distance-like, still a cloud
    }


@pytest.mark.parametrize("X", clouds().values(), ids=clouds().keys())
def test_h0_finite_deaths_are_mst_edge_lengths(X):
    h0 = vr_diagrams(X)[0]
    finite = np.sort(h0[np.isfinite(h0[:, 1]), 1])
    lengths = prim_mst_lengths(X)
    np.testing.assert_allclose(finite, lengths[lengths > 0], rtol=0, atol=1e-9)
    assert (h0[:, 0] == 0).all() and np.isinf(h0[:, 1]).sum() == 1


def test_noisy_circle_has_one_long_h1_bar():
    rng = np.random.default_rng(0)
    theta = rng.uniform(0, 2 * np.pi, 100)
    X = np.column_stack([np.cos(theta), np.sin(theta)]) + rng.normal(scale=0.05, size=(100, 2))
    h1 = vr_diagrams(X)[1]
    lengths = np.sort(h1[:, 1] - h1[:, 0])[::-1]
    assert lengths[0] > 0.5 and (lengths[1:] < 0.2).all()


def test_blob_has_no_long_h1_bar():
    X = np.random.default_rng(1).normal(scale=0.5, size=(100, 2))
    h1 = vr_diagrams(X)[1]
    assert ((h1[:, 1] - h1[:, 0]) < 0.5).all()


def test_duplicated_square_gives_exact_bars_without_zero_lengths():
    square = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    h0, h1 = vr_diagrams(np.vstack([square, square]))  # every corner twice: zero bars, dropped
    assert h0.dtype == h1.dtype == np.float64
    assert h0.tolist() == [[0.0, 1.0]] * 3 + [[0.0, np.inf]]
    # the 4-cycle is born when the sides enter (1) and dies when the diagonals do (√2)
    np.testing.assert_allclose(h1, [[1.0, np.sqrt(2)]], atol=1e-6)


def test_maxdim_zero_gives_only_h0():
    dgms = vr_diagrams(np.random.default_rng(2).normal(size=(10, 3)), maxdim=0)
    assert len(dgms) == 1 and np.isinf(dgms[0][:, 1]).sum() == 1


def test_single_and_identical_rows_give_only_the_infinite_bar():
    for X in (np.ones((1, 4)), np.tile([0.3, -1.0, 2.0], (6, 1))):
        h0, h1 = vr_diagrams(X)
        assert h0.tolist() == [[0.0, np.inf]] and h1.shape == (0, 2)


def test_two_points_give_one_finite_h0_bar_at_their_distance():
    h0, h1 = vr_diagrams(np.array([[0.0, 0.0], [3.0, 4.0]]))
    assert h0.tolist() == [[0.0, 5.0], [0.0, np.inf]] and h1.shape == (0, 2)


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((0, 3)),
        np.array([[0.0, np.nan]]),
        np.array([[np.inf, 0.0], [1.0, 1.0]]),
        np.ones(3),
    ],
    ids=["no-rows", "nan", "inf", "1-D"],
)
def test_bad_clouds_are_rejected(bad):
    with pytest.raises(ValueError):
        vr_diagrams(bad)


def test_subsample_is_seeded_sorted_and_distinct():
    X = np.arange(500.0).reshape(250, 2)
    a = subsample_rows(X, 40, np.random.default_rng(1))
    b = subsample_rows(X, 40, np.random.default_rng(1))
    c = subsample_rows(X, 40, np.random.default_rng(2))
    assert a.shape == (40, 2) and np.array_equal(a, b) and not np.array_equal(a, c)
    idx = a[:, 0] / 2  # row i of X is [2i, 2i + 1]
    assert (np.diff(idx) > 0).all() and np.array_equal(X[idx.astype(int)], a)


def test_subsample_returns_small_clouds_unchanged():
    X = np.ones((30, 2))
    assert subsample_rows(X, 30, np.random.default_rng(1)) is X
    with pytest.raises(ValueError):
        subsample_rows(X, 0, np.random.default_rng(1))


@pytest.mark.parametrize("X", clouds().values(), ids=clouds().keys())
def test_h1_equals_giotto_ph_public_wrapper_exactly(X):
    from gph import ripser_parallel

    ref = ripser_parallel(X, maxdim=1)["dgms"][1]
    ref = ref[ref[:, 1] > ref[:, 0]].astype(np.float64)
    h1 = vr_diagrams(X)[1]
    np.testing.assert_array_equal(np.sort(h1, axis=0), np.sort(ref, axis=0))


def test_without_the_direct_kernel_the_public_wrapper_gives_the_same_bars(monkeypatch):
    import topotrain.topology.vietoris_rips as vr

    X = np.random.default_rng(5).normal(size=(70, 6))
    direct = vr_diagrams(X)[1]
    monkeypatch.setattr(vr, "_gph_kernel", lambda: None)
    np.testing.assert_array_equal(vr_diagrams(X)[1], direct)


def test_rips_import_skips_scikit_learn_and_gph_imports_after_it_work():
    code = (
        "import sys, numpy as np; from topotrain.topology import vr_diagrams; "
        "X = np.random.default_rng(0).normal(size=(30, 4)); h1 = vr_diagrams(X)[1]; "
        "print('sklearn' in sys.modules); from gph import ripser_parallel; "
        "r = ripser_parallel(X)['dgms'][1]; "
        "print(np.array_equal(np.sort(h1, 0), np.sort(r[r[:, 1] > r[:, 0]], 0)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
