"""Spectral baselines of an embedding matrix E (n × d, rows = texts): PCA and covariance spectrum.

All functions are pure NumPy. Eigenvalues λ are those of the sample covariance of the centred E,
λ_k = s_k² / (n − 1) with s_k its singular values, in descending order; values below the numerical
rank tolerance are set to exactly 0 and every summary ignores them.
"""

from __future__ import annotations

import numpy as np


def centred(E: np.ndarray) -> np.ndarray:
    """E − column means as a finite float64 (n ≥ 2, d ≥ 1) matrix; ValueError otherwise."""
    E = np.asarray(E, dtype=np.float64)
    if E.ndim != 2 or E.shape[0] < 2 or E.shape[1] < 1:
        raise ValueError(f"need an (n>=2, d>=1) matrix, got shape {E.shape}")
    if not np.isfinite(E).all():
        raise ValueError(f"matrix holds {int((~np.isfinite(E)).sum())} NaN/inf entries")
    return E - E.mean(axis=0)


def rank_tolerance(s: np.ndarray, shape: tuple[int, int]) -> float:
    """NumPy's matrix_rank threshold: s_max · max(n, d) · ε; smaller singular values count as 0."""
    return float(s.max(initial=0.0) * max(shape) * np.finfo(np.float64).eps)


def pca(E: np.ndarray, n_components: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores Z (n × k) of centred E on its top k = min(n_components, n, d) principal axes.

    Returns (Z, explained_variance) with explained_variance_k = s_k² / (n − 1), the variance of
    column k of Z. Signs are fixed so that each axis's largest-|loading| entry is positive.
    """
    if n_components < 1:
        raise ValueError(f"n_components must be >= 1, got {n_components}")
    X = centred(E)
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    k = min(n_components, *X.shape)
    signs = np.sign(Vt[np.arange(k), np.abs(Vt[:k]).argmax(axis=1)])
    Z = U[:, :k] * (s[:k] * signs)
    return Z, s[:k] ** 2 / (X.shape[0] - 1)


def covariance_spectrum(E: np.ndarray) -> np.ndarray:
    """The min(n, d) largest eigenvalues λ_k = s_k² / (n − 1) of cov(E), descending
    (exact 0 below rank)."""
    X = centred(E)
    s = np.linalg.svd(X, compute_uv=False)
    s[s <= rank_tolerance(s, X.shape)] = 0.0
    return s**2 / (X.shape[0] - 1)


def positive(lam: np.ndarray) -> np.ndarray:
    """The strictly positive entries of a 1-D finite spectrum; ValueError if none or invalid."""
    lam = np.asarray(lam, dtype=np.float64)
    if lam.ndim != 1 or not np.isfinite(lam).all() or (lam < 0).any():
        raise ValueError("a spectrum is a 1-D array of finite, non-negative values")
    lam = lam[lam > 0]
    if lam.size == 0:
        raise ValueError("the spectrum has no positive value (constant embeddings?)")
    return lam


def effective_rank(lam: np.ndarray) -> float:
    """Roy & Vetterli (2007) erank = exp(−Σ p_k ln p_k), p_k = σ_k / Σσ, σ_k = √λ_k.

    σ_k are the singular values of the centred E (up to the factor √(n − 1), which cancels in p);
    zero eigenvalues are ignored. Ranges over [1, rank]; m equal values give m.
    """
    sigma = np.sqrt(positive(lam))
    p = sigma / sigma.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def participation_ratio(lam: np.ndarray) -> float:
    """PR = (Σλ)² / Σλ² over the covariance eigenvalues; in [1, rank], m equal values give m."""
    lam = positive(lam)
    return float(lam.sum() ** 2 / np.square(lam).sum())


def spectral_decay_alpha(lam: np.ndarray, k_min: int = 1, k_max: int | None = None) -> float:
    """α of the least-squares fit log λ_k = c − α log k over ranks k_min ≤ k ≤ k_max (1-based).

    λ is sorted descending first; k_max defaults to the last positive eigenvalue and zero
    eigenvalues in the range are dropped. Needs ≥ 2 positive eigenvalues in the range (ValueError
    otherwise).
    """
    lam = np.sort(np.asarray(lam, dtype=np.float64))[::-1]
    positive(lam)  # validates
    k_max = int((lam > 0).sum()) if k_max is None else min(k_max, lam.size)
    if k_min < 1 or k_max < k_min:
        raise ValueError(f"need 1 <= k_min <= k_max, got k_min={k_min}, k_max={k_max}")
    k = np.arange(k_min, k_max + 1)
    vals = lam[k - 1]
    k, vals = k[vals > 0], vals[vals > 0]
    if k.size < 2:
        raise ValueError(f"need >= 2 positive eigenvalues in ranks {k_min}..{k_max}, got {k.size}")
    slope, _ = np.polyfit(np.log(k), np.log(vals), 1)
    return float(-slope)


SPECTRAL = ("effective_rank", "participation_ratio", "spectral_alpha")  # spectral_summary's keys


def spectral_summary(E: np.ndarray) -> dict[str, float]:
    """effective_rank, participation_ratio and spectral_alpha (all ranks) of cov(E).

    spectral_alpha is NaN when fewer than two eigenvalues are positive.
    """
    lam = covariance_spectrum(E)
    alpha = spectral_decay_alpha(lam) if (lam > 0).sum() >= 2 else float("nan")
    return {
        "effective_rank": effective_rank(lam),
        "participation_ratio": participation_ratio(lam),
        "spectral_alpha": alpha,
    }
