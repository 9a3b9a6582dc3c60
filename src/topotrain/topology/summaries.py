"""Scalar summaries of one persistence diagram: an (n, 2) float array of (birth, death) rows.

Every summary ignores the infinite bars (death = inf); lengths ℓ = death − birth are in the units of
the filtration (Euclidean distance for Rips diagrams).
"""

from __future__ import annotations

import numpy as np


def finite_bars(d: np.ndarray) -> np.ndarray:
    """The (m, 2) rows of diagram d whose death is finite."""
    d = np.asarray(d, dtype=np.float64)
    if d.size == 0:
        return np.empty((0, 2))
    if d.ndim != 2 or d.shape[1] != 2:
        raise ValueError(f"a diagram is an (n, 2) birth/death array, got shape {d.shape}")
    return d[np.isfinite(d[:, 1])]


def bar_lengths(d: np.ndarray) -> np.ndarray:
    """Lengths ℓᵢ = deathᵢ − birthᵢ of the finite bars."""
    bars = finite_bars(d)
    return bars[:, 1] - bars[:, 0]


def feature_count(d: np.ndarray) -> int:
    """Number of finite bars."""
    return int(finite_bars(d).shape[0])


def total_persistence(d: np.ndarray) -> float:
    """Σᵢ ℓᵢ over finite bars (0 when there is none)."""
    return float(bar_lengths(d).sum())


def max_persistence(d: np.ndarray) -> float:
    """maxᵢ ℓᵢ over finite bars (0 when there is none)."""
    lengths = bar_lengths(d)
    return float(lengths.max()) if lengths.size else 0.0


def persistence_entropy(d: np.ndarray) -> float:
    """−Σ pᵢ ln pᵢ (nats), pᵢ = ℓᵢ/Σℓ over finite bars with ℓᵢ > 0; 0 when there is none."""
    lengths = bar_lengths(d)
    lengths = lengths[lengths > 0]
    if lengths.size == 0:
        return 0.0
    p = lengths / lengths.sum()
    return float(-(p * np.log(p)).sum())
