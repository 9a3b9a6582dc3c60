"""Scalar summaries of a persistence diagram (an (n, 2) birth/death array)."""

from __future__ import annotations

import numpy as np


def finite_bars(d: np.ndarray) -> np.ndarray:
    """Lengths death − birth of the finite bars."""
    d = np.asarray(d, dtype=np.float64).reshape(-1, 2)
    d = d[np.isfinite(d[:, 1])]
    return d[:, 1] - d[:, 0]


def feature_count(d: np.ndarray) -> int:
    """Number of finite bars."""
    return int(finite_bars(d).size)


def total_persistence(d: np.ndarray) -> float:
    """Σ (death − birth) over finite bars."""
    return float(finite_bars(d).sum())


def max_persistence(d: np.ndarray) -> float:
    """Largest finite bar length (0 when there is none)."""
    lengths = finite_bars(d)
    return float(lengths.max()) if lengths.size else 0.0


def persistence_entropy(d: np.ndarray) -> float:
    """−Σ pᵢ ln pᵢ with pᵢ = ℓᵢ / Σℓ over finite bars with ℓ > 0 (0 when there is none)."""
    lengths = finite_bars(d)
    lengths = lengths[lengths > 0]
    if lengths.size == 0:
        return 0.0
    p = lengths / lengths.sum()
    return float(-(p * np.log(p)).sum())
