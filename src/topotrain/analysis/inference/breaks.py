"""Where a seed-effect interval's Spearman p can change, and the nearest of those places.

``seed_effect`` tests β0 on X − β0·s·Y; its ranks change only at the breaks
β = (X_i − X_j)/(s·(Y_i − Y_j)), one per pair of a model's cells (about 730,000 for 6 seeds ×
201 checkpoints, 3.6 million pooled over five models). ``slope_breaks`` lists them in
``np.triu_indices`` order and ``nearest_beyond`` takes the nearest few past a β0. Both are numba
loops: one pass each with no temporaries, the same floats as the NumPy expressions in their
docstrings (no fastmath: IEEE operations in the written order), about 2 × and 12 × faster than
those expressions (``python -m benchmarks analysis``). Compiled on first use and cached on disk.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _breaks(xs: np.ndarray, ys: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Every cell group's (x_i − x_j)/(y_i − y_j) over i < j with y_i ≠ y_j, group by group."""
    pairs = 0
    for g in range(offsets.size - 1):
        n = offsets[g + 1] - offsets[g]
        pairs += n * (n - 1) // 2
    out = np.empty(pairs)
    k = 0
    for g in range(offsets.size - 1):
        lo, hi = offsets[g], offsets[g + 1]
        for i in range(lo, hi):
            xi, yi = xs[i], ys[i]
            for j in range(i + 1, hi):
                dy = yi - ys[j]
                if dy != 0:
                    out[k] = (xi - xs[j]) / dy
                    k += 1
    return out[:k]


def slope_breaks(groups: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """(x[i] − x[j])[keep] / dy[keep] with dy = y[i] − y[j], keep = dy ≠ 0, over
    ``i, j = np.triu_indices(x.size, 1)``, for each (x, y) of ``groups`` (flattened), joined."""
    if not groups:
        return np.empty(0)
    xs = np.concatenate([np.ravel(x).astype(float) for x, _ in groups])
    ys = np.concatenate([np.ravel(y).astype(float) for _, y in groups])
    offsets = np.cumsum([0] + [np.size(x) for x, _ in groups]).astype(np.int64)
    return _breaks(xs, ys, offsets)


CHUNK = 4096  # breaks screened per pass before the few that may enter the heap go in


@njit(cache=True)
def _smallest_positive(breaks: np.ndarray, at: float, direction: float, m: int):
    """The m smallest d = (b − at)·direction over d > 0 (unsorted, with repeats), and how many
    d > 0 there are: a max-heap of m. Each chunk of breaks is screened against the heap's
    largest without a branch (the d > 0 test is a coin flip near the interval's middle), then
    the few that pass go in."""
    heap = np.empty(m)
    size = 0
    positives = 0
    top = np.inf  # heap[0] once the heap is full: a d at or above it cannot enter
    passed = np.empty(CHUNK, np.int64)
    for start in range(0, breaks.size, CHUNK):
        k = 0
        for i in range(start, min(start + CHUNK, breaks.size)):
            d = (breaks[i] - at) * direction
            positive = d > 0
            positives += positive
            passed[k] = i
            k += positive & (d < top)
        for t in range(k):
            d = (breaks[passed[t]] - at) * direction
            if d >= top:
                continue
            if size < m:  # sift up
                i = size
                size += 1
                while i > 0:
                    parent = (i - 1) // 2
                    if heap[parent] >= d:
                        break
                    heap[i] = heap[parent]
                    i = parent
                heap[i] = d
            else:  # replace the largest, sift down
                i = 0
                while True:
                    child = 2 * i + 1
                    if child >= m:
                        break
                    if child + 1 < m and heap[child + 1] > heap[child]:
                        child += 1
                    if heap[child] <= d:
                        break
                    heap[i] = heap[child]
                    i = child
                heap[i] = d
            if size == m:
                top = heap[0]
    return heap[:size].copy(), positives


def nearest_beyond(
    breaks: np.ndarray, at: float, direction: float, count: int
) -> tuple[np.ndarray, bool]:
    """(d, all): the distances d = (b − at)·direction of the breaks beyond ``at`` towards
    ``direction``: sorted without repeats, of the ``count`` + 1 nearest (with repeats); all of
    them (``all`` True) when there are at most ``count``. The same as
    ``np.unique(np.partition(d[d > 0], count)[:count + 1])``."""
    breaks = np.ascontiguousarray(breaks, float)
    d, positives = _smallest_positive(breaks, float(at), float(direction), count + 1)
    return np.unique(d), bool(positives <= count)
