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


def neural_persistence(W: np.ndarray, global_max: float | None = None) -> dict[str, float]:
    """Normalised NP of layer W: np_total = Σ(1 − w')/(|V| − 1), np_p2 = √(Σ(1 − w')²/(|V| − 1)),
    and np_rieck, the reference implementation's per-layer value (``rieck_persistence``).

    np_total and np_p2 lie in [0, 1) and use the layer's own max|W| (w' = |w| / max|W|) over the
    |V| − 1 spanning-tree pairs: np_total is the study's p = 1 total persistence, np_p2 the p = 2
    norm of the same pairs over its upper bound √(|V| − 1) (the unpaired component left out, unlike
    the reference). ``global_max`` is the largest |w| over all matrices analysed with W (default:
    W's own). Degenerate cases as in ``np_pairs`` (all-zero W → np_total = np_p2 = 0).
    """
    pers = np_pairs(W)
    n = pers.size
    top = float(np.max(np.abs(W)))
    return {
        "np_total": float(pers.sum() / n),
        "np_p2": float(np.sqrt(np.square(pers).sum() / n)),
        "np_rieck": rieck_persistence(pers, top, top if global_max is None else global_max),
    }


def rieck_persistence(pers: np.ndarray, layer_max: float, global_max: float) -> float:
    """One layer's normalised total persistence as BorgwardtLab/Neural-Persistence computes it
    (``src/tda.py``, ``PerLayerCalculation``): ‖D‖₂ / √(n − 1), n = rows + cols = pers.size + 1.

    D is the layer's H0 diagram of |W| / global_max (the largest |w| over every matrix analysed
    together, not the layer's own) in the descending filtration with vertices born at 1: the
    spanning-tree pairs (1, w') plus the one unpaired component as (1, 0), persistence 1. ``pers``
    are the layer's own pairs 1 − |w| / layer_max (``np_pairs``): rescaled, 1 − (1 − p)·layer_max
    / global_max. An all-zero layer: every edge enters at w' = 0, so every pair has persistence 1
    (and so with global_max 0, taking 0 / 0 as 0).
    """
    if global_max < layer_max:
        raise ValueError(f"global_max {global_max} is below this layer's max|W| {layer_max}")
    ratio = layer_max / global_max if global_max > 0 else 0.0
    scaled = 1.0 - (1.0 - np.asarray(pers, dtype=np.float64)) * ratio
    return float(np.sqrt(np.square(scaled).sum() + 1.0) / np.sqrt(scaled.size))


def normalised_variance(W: np.ndarray) -> float:
    """Variance of the edge weights NP filters, var(|W| / max|W|) over all entries (population);
    0 for an all-zero W. Girrbach et al. (TMLR 2023) find NP close to a function of it: the scale
    control NP is set against (the record's ``np_wvar``)."""
    a = np.abs(np.asarray(W, dtype=np.float64))
    top = a.max(initial=0.0)
    return float(np.var(a / top)) if top > 0 else 0.0
