"""Spectral baselines: PCA, covariance spectrum, effective rank, participation ratio, decay α."""

from __future__ import annotations

import numpy as np
import pytest

from topotrain.topology.spectral import (
    covariance_spectrum,
    effective_rank,
    participation_ratio,
    pca,
    spectral_decay_alpha,
    spectral_summary,
)


def planted_plane(n: int = 60, d: int = 10, variances=(9.0, 1.0), seed: int = 0):
    """Data (n × d) = S Qᵀ + offset: S centred with orthogonal columns of exact sample variances."""
    rng = np.random.default_rng(seed)
    raw = rng.normal(size=(n, len(variances)))
    basis, _ = np.linalg.qr(raw - raw.mean(axis=0))  # orthonormal, centred (mean ⟂ columns)
    S = basis * np.sqrt(np.asarray(variances) * (n - 1))
    Q, _ = np.linalg.qr(rng.normal(size=(d, len(variances))))
    return S @ Q.T + rng.normal(size=d), S


@pytest.mark.parametrize("m", [1, 3, 7])
def test_equal_spectrum_has_effective_rank_and_participation_ratio_m(m):
    lam = np.concatenate([np.full(m, 2.5), np.zeros(4)])
    assert effective_rank(lam) == pytest.approx(m)
    assert participation_ratio(lam) == pytest.approx(m)


def test_power_law_spectrum_gives_its_exponent():
    lam = np.arange(1, 41, dtype=float) ** -1.5
    assert spectral_decay_alpha(lam) == pytest.approx(1.5, abs=1e-12)
    assert spectral_decay_alpha(lam, k_min=5, k_max=20) == pytest.approx(1.5, abs=1e-12)


def test_alpha_fit_uses_only_the_requested_ranks():
    lam = np.arange(1, 21, dtype=float) ** -1.0
    lam[10:] = lam[9] * (np.arange(11, 21) / 10.0) ** -3.0  # a steeper tail from rank 11
    assert spectral_decay_alpha(lam, k_max=10) == pytest.approx(1.0)
    assert spectral_decay_alpha(lam, k_min=10) == pytest.approx(3.0)


def test_alpha_ignores_zero_eigenvalues():
    lam = np.concatenate([np.arange(1, 11, dtype=float) ** -2.0, np.zeros(5)])
    assert spectral_decay_alpha(lam) == pytest.approx(2.0)


def test_rank_one_matrix_has_effective_rank_one():
    rng = np.random.default_rng(1)
    E = np.outer(rng.normal(size=30), rng.normal(size=8)) + rng.normal(size=8)
    lam = covariance_spectrum(E)
    assert (lam[1:] == 0).all()
    assert effective_rank(lam) == 1.0
    assert participation_ratio(lam) == 1.0


def test_effective_rank_matches_entropy_of_normalised_singular_values():
    E = np.random.default_rng(2).normal(size=(25, 12)) @ np.diag(np.linspace(3, 0.1, 12))
    s = np.linalg.svd(E - E.mean(axis=0), compute_uv=False)
    p = s / s.sum()
    assert effective_rank(covariance_spectrum(E)) == pytest.approx(np.exp(-(p * np.log(p)).sum()))


@pytest.mark.parametrize("shape", [(40, 6), (5, 9)])
def test_covariance_spectrum_matches_eigvalsh_of_np_cov(shape):
    E = np.random.default_rng(3).normal(size=shape)
    expected = np.sort(np.linalg.eigvalsh(np.cov(E, rowvar=False)))[::-1]
    lam = covariance_spectrum(E)
    assert lam.shape == (min(shape),)
    np.testing.assert_allclose(lam, expected[: min(shape)], atol=1e-12)
    np.testing.assert_allclose(expected[min(shape) :], 0, atol=1e-12)


def test_pca_recovers_planted_variances_and_scores():
    E, S = planted_plane()
    Z, var = pca(E, n_components=5)
    assert Z.shape == (60, 5)
    np.testing.assert_allclose(var[:2], [9.0, 1.0], rtol=1e-12)
    np.testing.assert_allclose(var[2:], 0, atol=1e-12)
    np.testing.assert_allclose(np.abs(Z[:, :2]), np.abs(S), atol=1e-10)  # up to sign per axis
    np.testing.assert_allclose(Z.var(axis=0, ddof=1), var, atol=1e-12)


def test_pca_caps_components_at_matrix_size():
    E = np.random.default_rng(4).normal(size=(6, 20))
    Z, var = pca(E, n_components=50)
    assert Z.shape == (6, 6) and var.shape == (6,)


def test_pca_preserves_pairwise_distances_when_complete():
    E = np.random.default_rng(5).normal(size=(15, 4))
    Z, _ = pca(E, n_components=4)
    dist = lambda X: np.linalg.norm(X[:, None] - X[None], axis=-1)  # noqa: E731
    np.testing.assert_allclose(dist(Z), dist(E), atol=1e-12)


def test_pca_signs_are_deterministic_under_row_permutation():
    E = np.random.default_rng(6).normal(size=(30, 5))
    perm = np.random.default_rng(7).permutation(30)
    Z, _ = pca(E, 3)
    Zp, _ = pca(E[perm], 3)
    np.testing.assert_allclose(Zp, Z[perm], atol=1e-10)


def test_spectral_summary_of_isotropic_plane():
    E, _ = planted_plane(variances=(4.0, 4.0))
    summary = spectral_summary(E)
    assert summary["effective_rank"] == pytest.approx(2.0)
    assert summary["participation_ratio"] == pytest.approx(2.0)
    assert summary["spectral_alpha"] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    "bad", [np.zeros((1, 3)), np.full((4, 3), np.nan), np.zeros(5), np.zeros((4, 0))]
)
def test_invalid_matrices_raise(bad):
    with pytest.raises(ValueError):
        covariance_spectrum(bad)


def test_all_zero_spectrum_raises():
    with pytest.raises(ValueError, match="no positive"):
        effective_rank(covariance_spectrum(np.ones((5, 3))))
    with pytest.raises(ValueError, match=">= 2 positive"):
        spectral_decay_alpha(np.array([1.0, 0.0, 0.0]))
