"""Vietoris–Rips persistence (H0, H1) of a point cloud: the rows of a weight matrix."""

from __future__ import annotations

import numpy as np


def check_cloud(X: np.ndarray) -> np.ndarray:
    """A finite (n, d) float64 cloud with n ≥ 1, else ValueError."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"need a point cloud of shape (n>=1, d), got {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("point cloud holds NaN or inf")
    return X


def subsample_rows(X: np.ndarray, max_points: int, rng: np.random.Generator) -> np.ndarray:
    """At most ``max_points`` distinct rows chosen with ``rng`` (kept in original order)."""
    if X.shape[0] <= max_points:
        return X
    return X[np.sort(rng.choice(X.shape[0], size=max_points, replace=False))]


def clean_diagram(d: np.ndarray) -> np.ndarray:
    """(n, 2) float64 birth/death pairs without zero-length bars; the one place infinite bars pass."""
    d = np.asarray(d, dtype=np.float64).reshape(-1, 2)
    return d[d[:, 1] > d[:, 0]]


def vr_diagrams(X: np.ndarray, maxdim: int = 1, n_threads: int = 1) -> list[np.ndarray]:
    """Rips diagrams H0..H``maxdim`` of the Euclidean cloud X (giotto-ph); H0 keeps one [0, inf] bar."""
    from gph import ripser_parallel

    X = check_cloud(X)
    if X.shape[0] == 1:
        return [np.array([[0.0, np.inf]])] + [np.empty((0, 2)) for _ in range(maxdim)]
    out = ripser_parallel(X, maxdim=maxdim, n_threads=n_threads)
    return [clean_diagram(d) for d in out["dgms"]]
