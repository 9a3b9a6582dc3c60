"""Neural persistence of a linear layer (Rieck et al., ICLR 2019)."""

from __future__ import annotations

import numpy as np

from topotrain.topology.spanning import bipartite_mst_weights


def np_pairs(W: np.ndarray) -> np.ndarray:
    """Persistence 1 − w' (unitless) of the |V| − 1 H0 pairs of layer W's descending filtration,
    ascending.

    W is (out, in); the graph is complete bipartite on out + in vertices, edge weights
    w' = |w| / max|W|. All vertices are born at 1, edges enter by decreasing w', each merging edge
    kills a class at w': these are the edges of a maximum spanning tree, i.e. the MST of 1 − w'.
    All-zero W → all pairs 0 (the limit of all-equal weights: every edge enters at once).
    Empty W, a non-2-D array or NaN/inf → ValueError.
    """
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.size == 0:
        raise ValueError(f"need a non-empty 2-D matrix, got shape {W.shape}")
    if not np.isfinite(W).all():
        raise ValueError(f"matrix holds {int((~np.isfinite(W)).sum())} NaN/inf entries")
    rows, cols = W.shape
    a = np.abs(W)
    top = a.max()
    if top == 0.0:
        return np.zeros(rows + cols - 1)
    cost = 1.0 - a / top  # in [0, 1]; exact zeros where |w| = max|W|
    return bipartite_mst_weights(cost)


def neural_persistence(W: np.ndarray) -> dict[str, float]:
    """Normalised NP of layer W: np_total = Σ(1 − w')/(|V| − 1), np_p2 = √(Σ(1 − w')²/(|V| − 1)).

    Both lie in [0, 1): np_total is the study's p = 1 total persistence, np_p2 is Rieck's p = 2 norm
    over its upper bound √(|V| − 1). Degenerate cases as in ``np_pairs`` (all-zero W → 0).
    """
    pers = np_pairs(W)
    n = pers.size
    return {"np_total": float(pers.sum() / n), "np_p2": float(np.sqrt(np.square(pers).sum() / n))}
