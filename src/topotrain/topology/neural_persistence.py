"""Neural persistence of a linear layer (Rieck et al., ICLR 2019)."""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import minimum_spanning_tree


def np_pairs(W: np.ndarray) -> np.ndarray:
    """Persistence values 1 − w' of the H0 pairs of the descending filtration of |W|/max|W|.

    Vertices are the in + out neurons, all born at 1; each edge that merges two components kills one
    class at its normalised weight w'. Those edges form a maximum spanning tree (|V| − 1 pairs).
    """
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.size == 0:
        raise ValueError(f"need a non-empty 2-D matrix, got shape {W.shape}")
    if not np.isfinite(W).all():
        raise ValueError("matrix holds NaN or inf")
    a = np.abs(W)
    top = a.max()
    if top == 0:  # all-zero: every edge enters at once, like any all-equal matrix
        return np.zeros(sum(W.shape) - 1)
    cost = 1.0 - a / top  # in [0, 1]; the MST of cost is the maximum spanning tree of |W|
    rows, cols = W.shape
    r, c = np.indices(W.shape).reshape(2, -1)
    # scipy drops zero entries as missing edges: shift every cost by 1 (same tree), read back by index
    graph = coo_matrix((cost.ravel() + 1.0, (r, rows + c)), shape=(rows + cols,) * 2).tocsr()
    tree = minimum_spanning_tree(graph).tocoo()
    return cost[tree.row, tree.col - rows]


def neural_persistence(W: np.ndarray) -> dict[str, float]:
    """Normalised NP of a layer: np_total = Σ(1 − w')/(|V| − 1), np_p2 = ‖1 − w'‖₂/√(|V| − 1)."""
    pers = np_pairs(W)
    n = pers.size
    return {"np_total": float(pers.sum() / n), "np_p2": float(np.sqrt((pers**2).sum() / n))}
