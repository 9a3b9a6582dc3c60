"""The per-layer loop: named weight matrices → one topology record (and Rips diagrams) per layer.

Every input branch hands ``layer_records`` its named matrices (``sources``: the spine's
checkpoints, Pythia revisions, your runs; a model in memory, gradients) and the jobs write what it
returns: it reads and writes no file. It selects the matrices by fnmatch
pattern, refuses NaN/inf weights, and computes neural persistence and Vietoris–Rips persistence of
each. No torch here.
"""

from __future__ import annotations

import fnmatch
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from topotrain.topology import registry
from topotrain.topology.neural_persistence import (
    normalised_variance,
    np_summaries,
    rieck_persistence,
    spanning_pairs,
)
from topotrain.topology.settings import TopologySettings
from topotrain.topology.spanning import row_blocks
from topotrain.topology.vietoris_rips import subsample_rows, vr_diagrams

SPREAD_ENTRIES = 1 << 24  # Σ rows·cols above which a checkpoint's layers go over threads

RECORD_KEYS = registry.record_keys()  # one record per layer, in this order (topology.registry)


def shapes_of(tensors: Mapping) -> dict[str, tuple[int, ...]]:
    """{name: shape} of a mapping's tensors: the header shapes of one that reads each tensor when
    it is looked up (``sources.tensors.LazyTensors``: its ``shapes``, nothing read), else each
    array's own."""
    shapes = getattr(tensors, "shapes", None)
    if shapes is not None:
        return dict(shapes)
    return {name: tuple(np.shape(t)) for name, t in tensors.items()}


def natural_key(name: str) -> list:
    """Sort key that orders digit runs numerically: h.2 before h.10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def select_names(tensors: Mapping, patterns: Sequence[str]) -> list[str]:
    """Names of the 2-D tensors that match any fnmatch pattern (case-sensitive), in natural name
    order; a LazyTensors is chosen from its header shapes, no tensor read."""
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    shapes = shapes_of(tensors)
    names = sorted((n for n, shape in shapes.items() if len(shape) == 2), key=natural_key)
    chosen = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if not chosen:
        raise ValueError(f"no 2-D tensor matches {patterns}; available: {names}")
    return chosen


def select_layers(tensors: Mapping, patterns: Sequence[str]) -> dict[str, np.ndarray]:
    """The 2-D tensors whose names match any fnmatch pattern (``select_names``), in natural name
    order (a LazyTensors is read whole: the per-layer loop uses ``select_names``)."""
    return {n: tensors[n] for n in select_names(tensors, patterns)}


def layer_rng(seed: int, layer: str) -> np.random.Generator:
    """RNG for a layer's subsample, seeded by (seed, crc32(name)):
    every checkpoint picks the same rows."""
    return np.random.default_rng([seed, zlib.crc32(layer.encode())])


def diagram_summaries(d: np.ndarray | None, dim: int) -> dict:
    """The registry's diagram features of one diagram (h{dim}_count, _total, _max, _entropy, …);
    None for each when it was not computed."""
    features = registry.diagram_entries()
    return {f.name.format(k=dim): (None if d is None else f.compute(d)) for f in features}


def diagrams_summaries(dgms: list[np.ndarray], maxdim: int) -> dict:
    """diagram_summaries of H0 and of H1 (None for each h1_* field when maxdim = 0)."""
    return {
        **diagram_summaries(dgms[0], 0),
        **diagram_summaries(dgms[1] if maxdim >= 1 else None, 1),
    }


def norms(W: np.ndarray) -> tuple[float, float, int]:
    """(‖W‖_F = √Σw², RMS = √mean(w²), number of NaN/inf entries) of W in float64, a row block
    (``spanning.row_blocks``) at a time; with one block (≤ BLOCK entries), bit for bit
    ``np.linalg.norm`` and √mean(W²) of the float64 matrix. RMS of an all-zero matrix: 0."""
    dot = squares = 0.0
    for rows in row_blocks(*W.shape):
        x = np.asarray(W[rows], dtype=np.float64)
        flat = x.ravel(order="K")
        dot += float(flat.dot(flat))
        squares += float(np.sum(np.square(x)))
    bad = 0
    if not np.isfinite(dot):  # an inf or NaN entry, or squares beyond float64's range
        bad = sum(int((~np.isfinite(W[rows])).sum()) for rows in row_blocks(*W.shape))
    return float(np.sqrt(dot)), float(np.sqrt(squares / W.size)), bad


def rms(W: np.ndarray) -> float:
    """Root mean square of all entries, √(mean W²); 0 for an all-zero matrix."""
    return norms(W)[1]


def scalefree_summaries(dgms: list[np.ndarray], scale: float, maxdim: int) -> dict:
    """h{k}_*_scalefree: the summaries of the Rips diagrams of W / scale (scale = RMS of W).

    Rips persistence is equivariant under scaling the cloud, so those diagrams are ``dgms / scale``
    (counts and entropies unchanged, totals and maxima divided). scale 0 (all-zero matrix): the
    diagrams hold no finite bar, and every summary is 0.
    """
    scaled = [d / scale if scale > 0 else d for d in dgms]
    return {key + registry.SCALEFREE: v for key, v in diagrams_summaries(scaled, maxdim).items()}


class LayerParts(NamedTuple):
    """One layer's record (np_rieck still at its own max|W|), diagrams, NP pairs and max|W|."""

    record: dict
    diagrams: list[np.ndarray]
    pairs: np.ndarray
    top: float


def layer_parts(W: np.ndarray, layer: str, settings: TopologySettings) -> LayerParts:
    """The topology of one matrix (float32 or float64, read as it is: no float64 copy of W is
    made) under ``settings`` (its threads go to the Rips kernel); NaN/inf weights → ValueError
    before anything is computed."""
    if W.ndim != 2 or W.size == 0:
        raise ValueError(f"need a non-empty 2-D matrix, got shape {W.shape}")
    l2_norm, scale, bad = norms(W)
    if bad:
        raise ValueError(f"{bad} NaN/inf weights")
    maxdim = settings.maxdim
    cloud = subsample_rows(W, settings.max_points, layer_rng(settings.seed, layer))
    dgms = vr_diagrams(cloud, maxdim=maxdim, n_threads=settings.threads, engine=settings.engine)
    pairs, top = spanning_pairs(W)
    record = {
        "layer": layer,
        "rows": int(W.shape[0]),
        "cols": int(W.shape[1]),
        "n_points": int(cloud.shape[0]),
        **np_summaries(pairs, top),
        **diagrams_summaries(dgms, maxdim),
        "l2_norm": l2_norm,  # Frobenius norm: the non-topological baseline
        **scalefree_summaries(dgms, scale, maxdim),  # "shape, not size"
        "np_wvar": normalised_variance(W, top),  # NP's own scale control (Girrbach et al. 2023)
    }
    for feature in registry.entries():  # a matrix feature with its own function
        if feature.on == "matrix" and feature.compute is not None:
            record[feature.name] = feature.compute(W)
    return LayerParts({key: record[key] for key in registry.record_keys()}, dgms, pairs, top)


def layer_topology(
    W: np.ndarray, layer: str, settings: TopologySettings, global_max: float | None = None
) -> tuple[dict, list[np.ndarray]]:
    """Record (RECORD_KEYS) and Rips diagrams [H0, H1 if maxdim = 1] of one finite matrix;
    the diagrams are those of W itself (unscaled), the *_scalefree summaries those of W / RMS(W).
    ``global_max``: the largest |w| over all matrices analysed with W
    (np_rieck; default W's own)."""
    parts = layer_parts(W, layer, settings)
    return with_global_max(parts, parts.top if global_max is None else global_max), parts.diagrams


def with_global_max(parts: LayerParts, global_max: float) -> dict:
    """The layer's record with np_rieck taken at ``global_max`` (``rieck_persistence``)."""
    return {**parts.record, "np_rieck": rieck_persistence(parts.pairs, parts.top, global_max)}


def layer_records(
    matrices: Mapping[str, np.ndarray],
    patterns: Sequence[str],
    settings: TopologySettings | None = None,
    source: str = "weights",
    **overrides,
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Per-layer records (RECORD_KEYS) and float64 diagrams ``{layer}/h{k}`` of the matrices that
    match ``patterns``, in natural name order.

    Matrices are looked up one at a time (a LazyTensors reads each when its layer's turn comes),
    so the loop holds one matrix and the small records. Where the matrices are big
    (``spread_layers``) the layers are spread over the settings' threads, one matrix each;
    otherwise the threads go to the Rips kernel. The records are the same either way.
    ``settings``: ``TopologySettings.from_config(settings, **overrides)`` (keywords such as
    ``max_points=20, n_threads=4``). maxdim is 0 or 1; with 0 the h1_* fields are None and no
    ``/h1`` diagram is returned. Errors (no match, NaN/inf weights, degenerate layer) are
    ValueErrors naming ``source`` and the layer.
    """
    settings = TopologySettings.from_config(settings, **overrides)
    if settings.maxdim not in (0, 1):
        raise ValueError(f"maxdim must be 0 or 1, got {settings.maxdim}")
    try:
        names = select_names(matrices, patterns)
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from err
    shapes = shapes_of(matrices)
    workers = spread_layers([shapes[n] for n in names], settings.threads)
    per_layer = replace(settings, threads=settings.threads // workers)

    def one(layer: str) -> LayerParts:
        try:
            W = np.asarray(matrices[layer])  # read now (a LazyTensors), dropped after
            return layer_parts(W, layer, per_layer)
        except ValueError as err:
            raise ValueError(f"{source}, layer {layer}: {err}") from err

    parts = map_layers(one, names, workers)
    top = max(p.top for p in parts)  # np_rieck's scale: the largest |w| of all the layers
    records = [with_global_max(p, top) for p in parts]
    diagrams = {
        f"{r['layer']}/h{k}": d
        for r, p in zip(records, parts, strict=True)
        for k, d in enumerate(p.diagrams)
    }
    return records, diagrams


def spread_layers(shapes: Sequence[tuple[int, int]], n_threads: int) -> int:
    """Threads to spread layers of these shapes over: 1 (one after the other, ``n_threads`` for
    each layer's Rips kernel, as for the spine's small checkpoints) unless their matrices hold
    more than SPREAD_ENTRIES entries in all, then min(n_threads, number of layers)."""
    if n_threads <= 1 or sum(r * c for r, c in shapes) <= SPREAD_ENTRIES:
        return 1
    return min(n_threads, len(shapes))


def map_layers(fn: Callable[[str], LayerParts], names: Sequence[str], workers: int) -> list:
    """[fn(name) for name in names], over ``workers`` threads when more than one (NumPy releases
    the GIL in its array loops); results in the order of ``names``, the first error raised."""
    if workers <= 1:
        return [fn(name) for name in names]
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(fn, name) for name in names]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise
