"""Minimum spanning trees and pairwise distances in plain numpy, for the per-checkpoint job.

The topology job runs 765 times in the default study; importing scipy.sparse and scipy.spatial
costs each of them more than the graphs it computes (≤ 240 vertices). Dense Prim's algorithm is
O(V²) with V numpy steps — about a millisecond here. Every minimum spanning tree of a graph has the
same multiset of edge weights, so the weights returned (sorted ascending) equal any other MST
algorithm's, ties included.

A weight matrix of a billion-parameter model is read in row blocks of at most BLOCK entries, so a
pass over it holds one block's temporaries, not a copy of the matrix.
"""

from __future__ import annotations

import numpy as np

BLOCK = 1 << 18  # entries per row block of a pass over a big matrix (2 MB in float64: in cache)


def row_blocks(rows: int, cols: int, block: int = BLOCK) -> list[slice]:
    """Consecutive row slices of a (rows, cols) matrix, each of at most ``block`` entries (at
    least one row); one slice for a matrix of ≤ ``block`` entries."""
    step = max(1, block // max(cols, 1))
    return [slice(i, min(i + step, rows)) for i in range(0, rows, step)]


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


def star_graph(A: np.ndarray, block: int = BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """Borůvka's first round on the bipartite graph of |A| (rows × columns), from the rows' side.

    Each row's heaviest edge (to its column s_r) is in a maximum spanning tree, and those edges
    join every row to one column: C stars. Returns those edges' |a| (R of them) and G (C, C),
    G[s, c] = the heaviest |a| from a row of star s to column c (−inf where star s has no row).
    """
    R, C = A.shape
    dtype = A.dtype if A.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    leaves = np.empty(R, dtype)
    G = np.full((C, C), -np.inf, dtype)
    for rows in row_blocks(R, C, block):
        a = np.abs(np.asarray(A[rows], dtype=dtype))
        star = np.argmax(a, axis=1)
        leaves[rows] = a[np.arange(a.shape[0]), star]
        fold_rows(G, a, star)
    return leaves, G


def fold_rows(G: np.ndarray, a: np.ndarray, star: np.ndarray) -> None:
    """G[star[i]] ← max(G[star[i]], a[i]) for every row i of a: the j-th row of every star at
    once, j = 0, 1, … (stars hold a few rows each: a few vectorised steps)."""
    order = np.argsort(star, kind="stable")
    ranked = star[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    sizes = np.diff(np.r_[starts, ranked.size])
    for j in range(int(sizes.max(initial=0))):
        first = starts[sizes > j]
        stars = ranked[first]  # distinct: one row of each star per step
        G[stars] = np.maximum(G[stars], a[order[first + j]])


def symmetrise_max(G: np.ndarray, block: int = 1024) -> None:
    """G ← max(G, Gᵀ) in place, a (block, block) tile pair at a time."""
    n = G.shape[0]
    for i in range(0, n, block):
        for j in range(i, n, block):
            upper, lower = G[i : i + block, j : j + block], G[j : j + block, i : i + block]
            np.maximum(upper, lower.T, out=upper)
            lower[...] = upper.T


def bipartite_max_spanning(W: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """|w| of the R + C − 1 edges of a maximum spanning tree of the complete bipartite graph
    between the rows and the columns of W (R, C), edge (r, c) weighing |W[r, c]|, as float64
    (unsorted); NaN in W gives NaN among them, ±inf gives inf.

    Borůvka's first round from the larger side (``star_graph``: one edge per vertex of it, a
    pass over W), then dense Prim (``mst_weights``) on the min(R, C) stars joined by their
    heaviest edges: O(R·C + min(R, C)²) work, one (min(R, C))² array beside W.
    """
    A = W if W.shape[0] >= W.shape[1] else W.T
    leaves, G = star_graph(A, block)
    symmetrise_max(G)
    np.negative(G, out=G)  # a maximum spanning tree of G is a minimum one of −G
    return np.concatenate([leaves.astype(np.float64), -mst_weights(G)])


def pairwise_distances(X: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of X (n, d) as a square (n, n) float64 matrix, exactly
    0 on the diagonal; each entry summed over the coordinates in order."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    columns = np.ascontiguousarray(X.T)
    sq, diff = np.zeros((n, n)), np.empty((n, n))
    for col in columns:
        np.subtract(col[:, None], col[None, :], out=diff)
        np.multiply(diff, diff, out=diff)
        sq += diff
    return np.sqrt(sq)


def condensed(square: np.ndarray) -> np.ndarray:
    """The upper triangle of a square matrix, row by row (scipy's condensed order)."""
    return square[np.triu_indices(square.shape[0], k=1)]
