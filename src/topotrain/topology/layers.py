"""The per-layer loop: named weight matrices → one topology record (and Rips diagrams) per layer.

Every input branch calls ``layer_records``: the spine's checkpoints (``topology.checkpoint``),
Pythia revisions (``sources.pythia``) and any later source. It selects the matrices by fnmatch
pattern, refuses NaN/inf weights, and computes neural persistence and Vietoris–Rips persistence of
each. No torch here.
"""

from __future__ import annotations

import fnmatch
import re
import zlib
from collections.abc import Mapping, Sequence

import numpy as np

from topotrain.config import DEFAULTS
from topotrain.topology.neural_persistence import neural_persistence, normalised_variance
from topotrain.topology.summaries import (
    DIAGRAM_KEYS,
    feature_count,
    max_persistence,
    persistence_entropy,
    total_persistence,
)
from topotrain.topology.vietoris_rips import subsample_rows, vr_diagrams

_TOPOLOGY = DEFAULTS["topology"]  # the schema's topology defaults

RECORD_KEYS = (
    "layer",
    "rows",
    "cols",
    "n_points",
    "np_total",
    "np_p2",
    "np_rieck",
    *DIAGRAM_KEYS,
    "l2_norm",
    *(f"{key}_scalefree" for key in DIAGRAM_KEYS),
    "np_wvar",
)  # one record per layer, in this order (README: `weights_layers` columns)


def natural_key(name: str) -> list:
    """Sort key that orders digit runs numerically: h.2 before h.10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def select_layers(
    tensors: Mapping[str, np.ndarray], patterns: Sequence[str]
) -> dict[str, np.ndarray]:
    """The 2-D tensors whose names match any fnmatch pattern (case-sensitive),
    in natural name order."""
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    names = sorted((n for n, t in tensors.items() if t.ndim == 2), key=natural_key)
    chosen = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if not chosen:
        raise ValueError(f"no 2-D tensor matches {patterns}; available: {names}")
    return {n: tensors[n] for n in chosen}


def layer_rng(seed: int, layer: str) -> np.random.Generator:
    """RNG for a layer's subsample, seeded by (seed, crc32(name)):
    every checkpoint picks the same rows."""
    return np.random.default_rng([seed, zlib.crc32(layer.encode())])


def diagram_summaries(d: np.ndarray | None, dim: int) -> dict:
    """h{dim}_count/_total/_max/_entropy of one diagram; None for each when it was not computed."""
    funcs = {
        "count": feature_count,
        "total": total_persistence,
        "max": max_persistence,
        "entropy": persistence_entropy,
    }
    return {f"h{dim}_{k}": (None if d is None else f(d)) for k, f in funcs.items()}


def diagrams_summaries(dgms: list[np.ndarray], maxdim: int) -> dict:
    """diagram_summaries of H0 and of H1 (None for each h1_* field when maxdim = 0)."""
    return {
        **diagram_summaries(dgms[0], 0),
        **diagram_summaries(dgms[1] if maxdim >= 1 else None, 1),
    }


def rms(W: np.ndarray) -> float:
    """Root mean square of all entries, √(mean W²); 0 for an all-zero matrix."""
    return float(np.sqrt(np.mean(np.square(W))))


def scalefree_summaries(dgms: list[np.ndarray], scale: float, maxdim: int) -> dict:
    """h{k}_*_scalefree: the summaries of the Rips diagrams of W / scale (scale = RMS of W).

    Rips persistence is equivariant under scaling the cloud, so those diagrams are ``dgms / scale``
    (counts and entropies unchanged, totals and maxima divided). scale 0 (all-zero matrix): the
    diagrams hold no finite bar, and every summary is 0.
    """
    scaled = [d / scale if scale > 0 else d for d in dgms]
    return {f"{key}_scalefree": v for key, v in diagrams_summaries(scaled, maxdim).items()}


def layer_topology(
    W: np.ndarray,
    layer: str,
    max_points: int,
    seed: int,
    maxdim: int,
    n_threads: int,
    global_max: float | None = None,
    engine: str = "auto",
) -> tuple[dict, list[np.ndarray]]:
    """Record (RECORD_KEYS) and Rips diagrams [H0, H1 if maxdim = 1] of one finite float64 matrix;
    the diagrams are those of W itself (unscaled), the *_scalefree summaries those of W / RMS(W).
    ``global_max``: the largest |w| over all matrices analysed with W
    (np_rieck; default W's own); ``engine``: the Rips engine (``vietoris_rips.resolve_engine``)."""
    cloud = subsample_rows(W, max_points, layer_rng(seed, layer))
    dgms = vr_diagrams(cloud, maxdim=maxdim, n_threads=n_threads, engine=engine)
    record = {
        "layer": layer,
        "rows": int(W.shape[0]),
        "cols": int(W.shape[1]),
        "n_points": int(cloud.shape[0]),
        **neural_persistence(W, global_max),
        **diagrams_summaries(dgms, maxdim),
        "l2_norm": float(np.linalg.norm(W)),  # Frobenius norm: the non-topological baseline
        **scalefree_summaries(dgms, rms(W), maxdim),  # "shape, not size"
        "np_wvar": normalised_variance(W),  # NP's own scale control (Girrbach et al. 2023)
    }
    return {key: record[key] for key in RECORD_KEYS}, dgms


def layer_records(
    matrices: Mapping[str, np.ndarray],
    patterns: Sequence[str],
    max_points: int = _TOPOLOGY["max_points"],
    seed: int = _TOPOLOGY["seed"],
    maxdim: int = _TOPOLOGY["maxdim"],
    n_threads: int = 1,
    source: str = "weights",
    engine: str = "auto",
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Per-layer records (RECORD_KEYS) and float64 diagrams ``{layer}/h{k}`` of the matrices that
    match ``patterns``, in natural name order.

    maxdim is 0 or 1; with 0 the h1_* fields are None and no ``/h1`` diagram is returned.
    ``engine``: the Rips engine of every layer (``vietoris_rips.resolve_engine``). Errors
    (no match, NaN/inf weights, degenerate layer) are ValueErrors naming ``source`` and the layer.
    """
    if maxdim not in (0, 1):
        raise ValueError(f"maxdim must be 0 or 1, got {maxdim}")
    try:
        chosen = select_layers(matrices, patterns)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from err
    records, diagrams = [], {}
    for layer, W in chosen.items():
        if not np.isfinite(W).all():
            bad = int((~np.isfinite(W)).sum())
            raise ValueError(f"{source}, layer {layer}: {bad} NaN/inf weights")
    top = max(float(np.max(np.abs(W), initial=0.0)) for W in chosen.values())  # np_rieck's scale
    for layer, W in chosen.items():
        W = np.asarray(W, dtype=np.float64)
        try:
            record, dgms = layer_topology(
                W, layer, max_points, seed, maxdim, n_threads, top, engine=engine
            )
        except ValueError as err:
            raise ValueError(f"{source}, layer {layer}: {err}") from err
        records.append(record)
        diagrams.update({f"{layer}/h{k}": d for k, d in enumerate(dgms)})
    return records, diagrams
