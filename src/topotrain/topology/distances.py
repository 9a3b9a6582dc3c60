"""Distances between two persistence diagrams' finite bars, exact, in NumPy and SciPy.

Both use the L∞ ground metric with the diagonal: a bar (b, d) is ‖(b, d) − (b', d')‖∞ from another
and (d − b) / 2 from the diagonal, where an unmatched bar goes. On the (m + n)² cost matrix of
``matching_costs`` (bars of either diagram, or their diagonal copies):

- ``w1_distance``: the 1-Wasserstein distance, the least total cost of a perfect matching
  (``scipy.optimize.linear_sum_assignment``: exact, where hera's auction stops within 1 %);
- ``bottleneck``: the least largest cost of a perfect matching, by binary search over the costs,
  each threshold tested with the same assignment solver (scipy's maximum bipartite matching,
  Hopcroft–Karp, took seconds on some diagrams of 200 bars).
"""

from __future__ import annotations

import numpy as np


def finite_bars(d: np.ndarray) -> np.ndarray:
    """The (n, 2) finite bars of a diagram (infinite deaths left out)."""
    d = np.asarray(d, dtype=np.float64).reshape(-1, 2)
    return d[np.isfinite(d).all(axis=1)]


def matching_costs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The (m + n, m + n) costs of matching a's m finite bars and b's n: rows are a's bars then
    b's diagonal copies, columns b's bars then a's diagonal copies; inf where no edge is."""
    a, b = finite_bars(a), finite_bars(b)
    m, n = len(a), len(b)
    costs = np.full((m + n, m + n), np.inf)
    costs[:m, :n] = np.abs(a[:, None, :] - b[None, :, :]).max(axis=2)
    costs[np.arange(m), n + np.arange(m)] = (a[:, 1] - a[:, 0]) / 2  # a's bar to the diagonal
    costs[m + np.arange(n), np.arange(n)] = (b[:, 1] - b[:, 0]) / 2  # b's bar from the diagonal
    costs[m:, n:] = 0.0  # diagonal to diagonal
    return costs


def least_cost_matching(costs: np.ndarray) -> np.ndarray:
    """The costs of a least-total-cost perfect matching on ``costs`` (inf: no edge; one always
    exists here, every bar having its diagonal copy)."""
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(np.where(np.isinf(costs), 1e300, costs))
    return costs[rows, cols]


def w1_distance(a: np.ndarray, b: np.ndarray) -> float:
    """1-Wasserstein distance between two diagrams' finite bars (L∞ ground metric), exact."""
    costs = matching_costs(a, b)
    return float(least_cost_matching(costs).sum()) if costs.size else 0.0


def bottleneck(a: np.ndarray, b: np.ndarray) -> float:
    """Bottleneck distance between two diagrams' finite bars (L∞ ground metric), exact: the
    smallest cost t whose edges (cost ≤ t) hold a perfect matching, found by binary search among
    the costs between the largest of the bars' cheapest options and the largest cost of the W1
    matching; a threshold holds one when the matching that uses fewest longer edges uses none."""
    costs = matching_costs(a, b)
    if costs.size == 0:
        return 0.0
    lower = max(costs.min(axis=1).max(), costs.min(axis=0).max())
    upper = least_cost_matching(costs).max()
    candidates = np.unique(costs[(costs >= lower) & (costs <= upper)])
    lo, hi = 0, len(candidates) - 1  # the last one, the W1 matching's, holds a perfect matching
    while lo < hi:
        mid = (lo + hi) // 2
        longer = np.where(costs <= candidates[mid], 0.0, np.where(np.isinf(costs), np.inf, 1.0))
        if least_cost_matching(longer).sum() == 0:
            hi = mid
        else:
            lo = mid + 1
    return float(candidates[lo])
