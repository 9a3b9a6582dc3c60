"""The grokking control's timing rules, one place each: when a seed groks, when a feature moves,
and the lead of one over the other.

- grokking_step: the first checkpoint with test accuracy ≥ ``threshold`` (0.95); None when the
  seed never groks (reported as such and left out of the lead statistics, never dropped).
- onset_step: the first checkpoint at which a feature has made half its total change,
  |v_t − v_0| ≥ ½·|v_T − v_0| (v_T its last value). It looks ahead: v_T is known only at the end
  of the run, so it dates a change with hindsight, like the phases table's peak.
- lead = grokking step − onset step: > 0 when the feature moves before test accuracy does.

checkpoint_row measures one checkpoint of a trained seed (``training.modular``'s
step_NNNNN.safetensors): the weights' L2 norm and the embedding of the p residues as a point cloud
(topology.embedding) with its spectral baselines and Fourier share; control_table joins a seed's
rows with its metrics.csv (the job ``jobs.control.control_features`` reads and writes them).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.analysis.tables.aggregate import checkpoint_features
from topotrain.config import DEFAULTS
from topotrain.topology.embedding import embedding_topology, fourier_share
from topotrain.topology.record import record
from topotrain.topology.settings import TopologySettings
from topotrain.topology.spectral import spectral_summary

MODEL = "control"  # the model name of the control's rows (seed_contrast groups by model)
EMBEDDING = "embed.weight"  # rows 0 … p − 1 are the residues, row p the '=' token
FOURIER_K = DEFAULTS["control"]["fourier_k"]  # the schema's: Nanda et al. find about five

GROKKED = 0.95  # test accuracy that counts as generalised
HALF = 0.5  # onset: this fraction of the total change


def grokking_step(steps, test_accuracy, threshold: float = GROKKED) -> int | None:
    """The first step with test accuracy ≥ threshold (steps ascending), or None."""
    steps, acc = np.asarray(steps), np.asarray(test_accuracy, float)
    hit = np.flatnonzero(acc >= threshold)
    return int(steps[hit[0]]) if hit.size else None


def onset_step(steps, values, fraction: float = HALF) -> int | None:
    """The first step where |v − v_0| ≥ fraction·|v_T − v_0| (finite values, steps ascending);
    None for a series that does not change or has fewer than two finite values."""
    steps, values = np.asarray(steps), np.asarray(values, float)
    keep = np.isfinite(values)
    steps, values = steps[keep], values[keep]
    if values.size < 2 or values[-1] == values[0]:
        return None
    moved = np.abs(values - values[0]) >= fraction * abs(values[-1] - values[0])
    return int(steps[np.flatnonzero(moved)[0]])


def lead(grok: int | None, onset: int | None) -> float:
    """grokking step − onset step, NaN when either is undefined."""
    return float(grok - onset) if grok is not None and onset is not None else float("nan")


def checkpoint_row(
    tensors: dict[str, np.ndarray], path: Path, p: int, k: int = FOURIER_K, topology=None
):
    """(row, records) of one checkpoint's ``tensors`` (read from ``path``): the weights' L2 norm
    √(Σ w²) over every tensor and the residues' embedding features; records: the workflow's
    weight topology of every 2-D matrix (``topology.record`` with ``topology``'s max_points,
    seed, maxdim, engine and threads: ``TopologySettings.from_config(topology)``)."""
    if EMBEDDING not in tensors:
        raise ValueError(f"{path}: no {EMBEDDING} tensor (a grokking-control checkpoint has one)")
    emb = tensors[EMBEDDING][:p].astype(np.float64)
    weight_l2 = float(
        np.sqrt(sum(float((t.astype(np.float64) ** 2).sum()) for t in tensors.values()))
    )
    settings = TopologySettings.from_config(topology)
    topo = {f"emb_{key}": v for key, v in embedding_topology(emb, engine=settings.engine).items()}
    row = {
        "weight_l2": weight_l2,
        **topo,
        **spectral_summary(emb),
        f"fourier_top{k}": fourier_share(emb, k),
    }
    return row, record(tensors, ["*"], settings, source=f"checkpoint {path}").layers


def control_table(
    metrics: pd.DataFrame, rows: list[dict], layers: pd.DataFrame, seed: int = 0
) -> pd.DataFrame:
    """A seed's feature table, one row per checkpoint: metrics.csv joined with its checkpoints'
    ``rows`` ({"step", "numerics", **checkpoint_row}) and the weight topology of ``layers`` (one
    record per matrix and checkpoint, with model, seed, step and engine) aggregated over matrices
    as in the GPT study (np_mean, h0_total, np_wvar_mean, …)."""
    weights = checkpoint_features(layers).drop(columns=["model", "seed"])
    table = metrics.merge(pd.DataFrame(rows), on="step").merge(weights, on="step")
    table.insert(0, "seed", seed)
    table.insert(0, "model", MODEL)
    return table.sort_values("step").reset_index(drop=True)
