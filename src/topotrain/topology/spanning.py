"""Minimum spanning trees and pairwise distances in plain numpy, for the per-checkpoint job.

The topology job runs 765 times in the default study; importing scipy.sparse and scipy.spatial
costs each of them more than the graphs it computes (≤ 240 vertices). Dense Prim's algorithm is
O(V²) with V numpy steps — about a millisecond here. Every minimum spanning tree of a graph has the
same multiset of edge weights, so the weights returned (sorted ascending) equal any other MST
algorithm's, ties included.
"""

from __future__ import annotations

import numpy as np


def mst_weights(dense: np.ndarray) -> np.ndarray:
    """Edge weights of a minimum spanning tree of the complete graph with symmetric weights
    ``dense`` (V, V), ascending; V − 1 of them (none for V ≤ 1). Zero weights are edges."""
    V = dense.shape[0]
    if V <= 1:
        return np.empty(0)
    best = dense[0].astype(np.float64, copy=True)
    done = np.zeros(V, bool)
    done[0] = True
    best[0] = np.inf
    out = np.empty(V - 1)
    for t in range(V - 1):
        k = int(np.argmin(best))
        out[t] = best[k]
        done[k] = True
        np.minimum(best, dense[k], out=best)
        best[done] = np.inf
    return np.sort(out)


def bipartite_mst_weights(cost: np.ndarray) -> np.ndarray:
    """MST edge weights of the complete bipartite graph between the rows and the columns of
    ``cost`` (R, C), edge (r, c) weighing cost[r, c]; R + C − 1 of them, ascending."""
    R, C = cost.shape
    best_r = np.full(R, np.inf)  # cheapest edge from the tree to each row vertex
    best_c = cost[0].astype(np.float64, copy=True)  # the tree starts at row 0
    done_r, done_c = np.zeros(R, bool), np.zeros(C, bool)
    done_r[0] = True
    out = np.empty(R + C - 1)
    for t in range(R + C - 1):
        r, c = int(np.argmin(best_r)), int(np.argmin(best_c))
        if best_r[r] <= best_c[c]:
            out[t], done_r[r] = best_r[r], True
            best_r[r] = np.inf
            np.minimum(best_c, cost[r], out=best_c)
            best_c[done_c] = np.inf
        else:
            out[t], done_c[c] = best_c[c], True
            best_c[c] = np.inf
            np.minimum(best_r, cost[:, c], out=best_r)
            best_r[done_r] = np.inf
    return np.sort(out)


def pairwise_distances(X: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of X (n, d) as a square (n, n) float64 matrix, exactly
    0 on the diagonal; each entry summed over the coordinates in order."""
    X = np.asarray(X, dtype=np.float64)
    sq = np.zeros((X.shape[0], X.shape[0]))
    for k in range(X.shape[1]):
        diff = X[:, k, None] - X[None, :, k]
        sq += diff * diff
    return np.sqrt(sq)


def condensed(square: np.ndarray) -> np.ndarray:
    """The upper triangle of a square matrix, row by row (scipy's condensed order)."""
    return square[np.triu_indices(square.shape[0], k=1)]
