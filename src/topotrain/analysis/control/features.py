"""The grokking control's timing rules, one place each: when a seed groks, when a feature moves,
and the lead of one over the other.

- grokking_step: the first checkpoint with test accuracy ≥ ``threshold`` (0.95); None when the
  seed never groks (reported as such and left out of the lead statistics, never dropped).
- onset_step: the first checkpoint at which a feature has made half its total change,
  |v_t − v_0| ≥ ½·|v_T − v_0| (v_T its last value). It looks ahead: v_T is known only at the end
  of the run, so it dates a change with hindsight, like the phases table's peak.
- lead = grokking step − onset step: > 0 when the feature moves before test accuracy does.

control_features reads one trained seed (``training.modular``'s step_NNNNN.safetensors and
metrics.csv) into one row per checkpoint: its losses and accuracies, the weights' L2 norm, and
the embedding of the p residues as a point cloud (topology.embedding) with its spectral baselines
and Fourier share.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.analysis.inference.numerics import numerics_label
from topotrain.analysis.tables.aggregate import checkpoint_features
from topotrain.config import DEFAULTS, ENGINE
from topotrain.topology.embedding import embedding_topology, fourier_share
from topotrain.topology.record import Options, record
from topotrain.topology.spectral import spectral_summary

log = logging.getLogger(__name__)

MODEL = "control"  # the model name of the control's rows (seed_contrast groups by model)
EMBEDDING = "embed.weight"  # rows 0 … p − 1 are the residues, row p the '=' token
FOURIER_K = DEFAULTS["control"]["fourier_k"]  # the schema's: Nanda et al. find about five
STEP = re.compile(r"step_(\d+)\.safetensors$")

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
    seed, maxdim, engine and n_threads)."""
    if EMBEDDING not in tensors:
        raise ValueError(f"{path}: no {EMBEDDING} tensor (a grokking-control checkpoint has one)")
    emb = tensors[EMBEDDING][:p].astype(np.float64)
    weight_l2 = float(
        np.sqrt(sum(float((t.astype(np.float64) ** 2).sum()) for t in tensors.values()))
    )
    engine = (topology or {}).get("engine", ENGINE)
    topo = {f"emb_{key}": v for key, v in embedding_topology(emb, engine=engine).items()}
    row = {
        "weight_l2": weight_l2,
        **topo,
        **spectral_summary(emb),
        f"fourier_top{k}": fourier_share(emb, k),
    }
    topology = topology or {}
    options, threads = Options.of(topology), topology.get("n_threads", 1)
    records, _ = record(tensors, ["*"], options, n_threads=threads, source=f"checkpoint {path}")
    return row, records


def control_features(
    run_dir: str | Path,
    p: int,
    k: int = FOURIER_K,
    topology: dict | None = None,
    seed: int = 0,
    *,
    read: Callable[[Path], tuple[dict, dict | None]],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(checkpoints, layers) of a seed's run directory. checkpoints: one row per checkpoint,
    metrics.csv joined with checkpoint_row and the weight topology aggregated over matrices as
    in the GPT study (np_mean, h0_total, np_wvar_mean, …) and the numerics the checkpoint was
    trained with (``numerics``); layers: one record per matrix and checkpoint; both name the Rips
    engine (``engine``). ``read``: a checkpoint's path → (tensors, numerics), the source's
    (``sources.checkpoint.read_checkpoint``). A checkpoint without a metrics row (or the reverse) is
    an error naming it."""
    run_dir = Path(run_dir)
    metrics = pd.read_csv(run_dir / "metrics.csv")
    files = {int(m.group(1)): f for f in run_dir.iterdir() if (m := STEP.search(f.name))}
    if set(files) != set(metrics["step"]):
        odd = sorted(set(files) ^ set(metrics["step"]))
        raise ValueError(f"{run_dir}: checkpoints and metrics.csv disagree at steps {odd}")
    topology = dict(topology or {})
    topology["engine"] = Options.of(topology).engine  # resolved: the tables name the engine
    rows, layers = [], []
    for step in sorted(files):
        log.info("control features: %s step %d", run_dir, step)
        tensors, trained = read(files[step])
        row, records = checkpoint_row(tensors, files[step], p, k, topology)
        numerics = numerics_label(trained)
        rows.append({"step": step, "numerics": numerics, **row})
        keys = {"model": MODEL, "seed": seed, "step": step}
        layers += [{**keys, **r, "engine": topology["engine"]} for r in records]
    layers = pd.DataFrame(layers)
    weights = checkpoint_features(layers).drop(columns=["model", "seed"])
    table = metrics.merge(pd.DataFrame(rows), on="step").merge(weights, on="step")
    table.insert(0, "seed", seed)
    table.insert(0, "model", MODEL)
    return table.sort_values("step").reset_index(drop=True), layers
