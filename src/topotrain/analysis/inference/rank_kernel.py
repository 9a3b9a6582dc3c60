"""``exact_tests.counted_ranks``' loop in numba (imported on first use: numba's import is
0.3 s a job that never ranks a resample would pay)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def counted(c: np.ndarray, k: int) -> np.ndarray:
    """Average ranks of each row of the (R, n) integer codes ``c`` in [0, k): per row the count
    of each code, then (below + 1) + (count − 1)/2 for each, read back per position; ValueError
    for a code outside [0, k)."""
    rows, n = c.shape
    out = np.empty((rows, n))
    counts = np.empty(k, np.int64)
    rank = np.empty(k)
    for r in range(rows):
        counts[:] = 0
        for j in range(n):
            code = c[r, j]
            if code < 0 or code >= k:
                raise ValueError("counted_ranks: a code outside [0, k)")
            counts[code] += 1
        below = 0
        for q in range(k):
            rank[q] = (below + 1) + (counts[q] - 1) / 2
            below += counts[q]
        for j in range(n):
            out[r, j] = rank[c[r, j]]
    return out
