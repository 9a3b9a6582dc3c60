"""The per-checkpoint topology job: read a safetensors checkpoint with NumPy, analyse each layer."""

from __future__ import annotations

import fnmatch
import io
import json
import zlib
from pathlib import Path

import numpy as np

from topotrain.io import atomic_write, atomic_write_text
from topotrain.topology.neural_persistence import neural_persistence
from topotrain.topology.summaries import (
    feature_count,
    max_persistence,
    persistence_entropy,
    total_persistence,
)
from topotrain.topology.vietoris_rips import subsample_rows, vr_diagrams

DEFAULT_PATTERNS = (
    "transformer.h.*.attn.c_attn.weight",
    "transformer.h.*.attn.c_proj.weight",
    "transformer.h.*.mlp.c_fc.weight",
    "transformer.h.*.mlp.c_proj.weight",
)


def load_tensors(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as NumPy arrays; ValueError naming the file if unreadable."""
    from safetensors.numpy import load_file

    try:
        return load_file(str(path))
    except Exception as err:  # truncated, corrupted, not safetensors, missing
        raise ValueError(f"cannot read checkpoint {path}: {type(err).__name__}: {err}") from None


def select_layers(tensors: dict[str, np.ndarray], patterns: list[str]) -> dict[str, np.ndarray]:
    """The 2-D tensors whose names match any fnmatch pattern, in sorted name order."""
    names = sorted(n for n, t in tensors.items() if t.ndim == 2)
    chosen = [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if not chosen:
        raise ValueError(f"no 2-D tensor matches {list(patterns)}; available: {names}")
    return {n: tensors[n] for n in chosen}


def layer_rng(seed: int, layer: str) -> np.random.Generator:
    """RNG for a layer's subsample: seeded by (seed, crc32(name)), so every checkpoint picks the same rows."""
    return np.random.default_rng([seed, zlib.crc32(layer.encode())])


def layer_topology(
    W: np.ndarray, layer: str, max_points: int, seed: int, maxdim: int, n_threads: int
) -> tuple[dict, list[np.ndarray]]:
    """Neural persistence, VR summaries and weight norm of one matrix; returns (record, diagrams)."""
    cloud = subsample_rows(W, max_points, layer_rng(seed, layer))
    dgms = vr_diagrams(cloud, maxdim=1, n_threads=n_threads)[: maxdim + 1]
    while len(dgms) < 2:
        dgms.append(np.empty((0, 2)))
    record = {
        "layer": layer,
        "rows": int(W.shape[0]),
        "cols": int(W.shape[1]),
        "n_points": int(cloud.shape[0]),
        **neural_persistence(W),
        "l2_norm": float(np.linalg.norm(W)),
    }
    for dim, d in enumerate(dgms):
        record[f"h{dim}_count"] = feature_count(d)
        record[f"h{dim}_total"] = total_persistence(d)
        record[f"h{dim}_max"] = max_persistence(d)
        record[f"h{dim}_entropy"] = persistence_entropy(d)
    return record, dgms


def checkpoint_topology(
    path: str | Path,
    patterns: list[str] = DEFAULT_PATTERNS,
    max_points: int = 200,
    seed: int = 0,
    maxdim: int = 1,
    n_threads: int = 1,
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """Per-layer records and diagrams ``{layer}/h{k}`` of one checkpoint."""
    records, diagrams = [], {}
    for layer, W in select_layers(load_tensors(path), list(patterns)).items():
        W = W.astype(np.float64)
        if not np.isfinite(W).all():
            bad = int((~np.isfinite(W)).sum())
            raise ValueError(f"checkpoint {path}, layer {layer}: {bad} NaN/inf weights")
        try:
            record, dgms = layer_topology(W, layer, max_points, seed, maxdim, n_threads)
        except ValueError as err:
            raise ValueError(f"checkpoint {path}, layer {layer}: {err}") from None
        records.append(record)
        diagrams.update({f"{layer}/h{k}": d for k, d in enumerate(dgms)})
    return records, diagrams


def write_checkpoint_topology(
    ckpt_path: str | Path, out_json: str | Path, out_npz: str | Path, **params
) -> list[dict]:
    """Compute a checkpoint's topology and write the JSON record and npz diagrams atomically."""
    records, diagrams = checkpoint_topology(ckpt_path, **params)
    buf = io.BytesIO()
    np.savez(buf, **diagrams)
    atomic_write(out_npz, lambda fh: fh.write(buf.getvalue()))
    doc = {"checkpoint": str(ckpt_path), "params": params, "layers": records}
    atomic_write_text(out_json, json.dumps(doc, indent=1) + "\n")
    return records
