"""Neural persistence of a linear layer (Rieck et al., ICLR 2019)."""

from __future__ import annotations

import numpy as np

from topotrain.topology.spanning import bipartite_max_spanning, row_blocks


def spanning_pairs(W: np.ndarray) -> tuple[np.ndarray, float]:
    """(``np_pairs`` of W, max|W|): the persistence pairs and the layer's largest |w|."""
    W = np.asarray(W)
    if W.ndim != 2 or W.size == 0:
        raise ValueError(f"need a non-empty 2-D matrix, got shape {W.shape}")
    heaviest = bipartite_max_spanning(W)  # the tree holds max|W|: each row's heaviest edge
    if not np.isfinite(heaviest).all():
        bad = sum(int((~np.isfinite(W[rows])).sum()) for rows in row_blocks(*W.shape))
        raise ValueError(f"matrix holds {bad} NaN/inf entries")
    top = float(heaviest.max())
    if top == 0.0:
        return np.zeros(heaviest.size), top
    return np.sort(1.0 - heaviest / top), top


def np_pairs(W: np.ndarray) -> np.ndarray:
    """Persistence 1 − w' (unitless) of the |V| − 1 H0 pairs of layer W's descending filtration,
    ascending.

    W is (out, in); the graph is complete bipartite on out + in vertices, edge weights
    w' = |w| / max|W|. All vertices are born at 1, edges enter by decreasing w', each merging edge
    kills a class at w': these are the edges of a maximum spanning tree of |W|
    (``spanning.bipartite_max_spanning``; W is read as it is, float32 or float64, never copied
    whole). All-zero W → all pairs 0 (the limit of all-equal weights: every edge enters at once).
    Empty W, a non-2-D array or NaN/inf → ValueError.
    """
    return spanning_pairs(W)[0]


def neural_persistence(W: np.ndarray, global_max: float | None = None) -> dict[str, float]:
    """Normalised NP of layer W: np_total = Σ(1 − w')/(|V| − 1), np_p2 = √(Σ(1 − w')²/(|V| − 1)),
    and np_rieck, the reference implementation's per-layer value (``rieck_persistence``).

    np_total and np_p2 lie in [0, 1) and use the layer's own max|W| (w' = |w| / max|W|) over the
    |V| − 1 spanning-tree pairs: np_total is the study's p = 1 total persistence, np_p2 the p = 2
    norm of the same pairs over its upper bound √(|V| − 1) (the unpaired component left out, unlike
    the reference). ``global_max`` is the largest |w| over all matrices analysed with W (default:
    W's own). Degenerate cases as in ``np_pairs`` (all-zero W → np_total = np_p2 = 0).
    """
    pers, top = spanning_pairs(W)
    return np_summaries(pers, top, global_max)


def np_summaries(pers: np.ndarray, top: float, global_max: float | None = None) -> dict:
    """np_total, np_p2 and np_rieck (``neural_persistence``) of a layer's pairs and max|W|."""
    n = pers.size
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


def normalised_variance(W: np.ndarray, top: float | None = None) -> float:
    """Variance of the edge weights NP filters, var(|W| / max|W|) over all entries (population);
    0 for an all-zero W. Girrbach et al. (TMLR 2023) find NP close to a function of it: the scale
    control NP is set against (the record's ``np_wvar``). ``top``: max|W| when known.

    Two passes in float64, a row block at a time (mean, then mean squared deviation); with one
    block, bit for bit ``np.var`` of the float64 matrix."""
    W = np.asarray(W)
    blocks = row_blocks(*W.shape)
    if top is None:
        top = max(float(np.abs(W[rows]).max(initial=0.0)) for rows in blocks)
    if top == 0:
        return 0.0

    def scaled(rows: slice) -> np.ndarray:
        return np.abs(np.asarray(W[rows], dtype=np.float64)) / top

    mean = sum(float(np.sum(scaled(rows))) for rows in blocks) / W.size
    return sum(float(np.sum(np.square(scaled(rows) - mean))) for rows in blocks) / W.size
