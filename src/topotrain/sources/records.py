"""The one door through which the workflow reads back what its jobs wrote: every record file.

A kind of record is one reader here; ``io.write_record`` is the one writer. The analysis never
opens these files: its jobs read them through this module and hand it documents and tables.

- weight records (``step_NNNNN.json``: {"layers": […], "params": {…}, …}), the spine's, your runs'
  and Pythia's revisions': ``read_weight_records``; the gradients' (``grad_NNNNN.json``), the same
  shape: ``read_gradient_records``; a run's records: ``read_run_records`` (with their files'
  sha256: ``record_hashes``);
- a run's diagram files (``.npz``, ``"{layer}/h{k}"``): ``read_diagram_series``;
- the Pythia embedding records and their diagrams: ``read_embedding_records``;
- per-run parquet tables (diagram series, WeightWatcher, LLC): ``read_run_tables``, ``read_series``;
- the grokking control: a seed's run folder (checkpoints and metrics.csv) ``read_control_run``, its
  feature tables ``read_control_tables``;
- any other JSON a job wrote (a revision, the texts, a layer map): ``read_json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

CONTROL_STEP = re.compile(r"step_(\d+)\.safetensors$")  # a control seed's checkpoint files


def read_json(path: str | Path) -> dict:
    """One JSON document a job wrote."""
    with open(path) as fh:
        return json.load(fh)


def _layer_records(paths: Iterable[str | Path], job: str) -> list[dict]:
    """The JSON records of ``paths``, each checked to hold layers; an unreadable one is named
    with the ``job`` that writes it again."""
    docs = []
    for path in paths:
        try:
            doc = read_json(path)
            layers, _ = doc["layers"], doc.get("params") or {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(
                f"cannot read topology record {path} ({type(err).__name__}: {err}); delete it and "
                f"rerun so its {job} job writes it again"
            ) from err
        if not layers:
            raise ValueError(f"{path}: topology record holds no layers")
        docs.append(doc)
    return docs


def read_weight_records(paths: Iterable[str | Path], job: str = "weight_topology") -> list[dict]:
    """The weight-topology records (per-layer records under "layers"), in the order given."""
    return _layer_records(paths, job)


def read_gradient_records(paths: Iterable[str | Path]) -> list[dict]:
    """The gradient-topology records (``grad_NNNNN.json``), in the order given."""
    return _layer_records(paths, "gradient_topology")


def read_run_records(paths: Iterable[str | Path]) -> list[dict]:
    """A ``runs:`` entry's weight-topology records, in the order given."""
    return _layer_records(paths, "run_weight_topology")


def record_hashes(docs: Sequence[dict], steps: Sequence[int]) -> dict[int, dict[str, str]]:
    """{step: {weight file: sha256}} of a run's records (``read_run_records``)."""
    return {int(s): dict(d.get("sha256") or {}) for d, s in zip(docs, steps, strict=True)}


def read_diagram_series(
    npz_paths: Sequence[str | Path], steps: Sequence[int]
) -> list[tuple[int, dict[str, np.ndarray]]]:
    """A run's per-checkpoint diagram files as [(step, {"{layer}/h{k}": diagram}), …], in the
    order given (``topology.series.run_series`` sorts them by step)."""
    diagrams = []
    for step, path in zip(steps, npz_paths, strict=True):
        with np.load(path) as f:
            diagrams.append((int(step), {k: f[k] for k in f.files}))
    return diagrams


def read_embedding_records(
    records: Sequence[str | Path], diagrams: Sequence[str | Path] = ()
) -> tuple[list[dict], list[np.ndarray]]:
    """The Pythia embedding records and the H1 diagram of each of ``diagrams`` (an empty (0, 2)
    array where a file holds none), in the order given."""
    docs = [read_json(path) for path in records]
    h1 = []
    for path in diagrams:
        with np.load(path) as npz:
            h1.append(npz["h1"] if "h1" in npz.files else np.empty((0, 2)))
    return docs, h1


def read_run_tables(
    paths: Iterable[str | Path], runs: Iterable[dict], what: str, job: str
) -> pd.DataFrame:
    """Per-run parquet tables (one per run, in the order of ``runs``) with model and seed; one that
    cannot be read stops it, naming the file and the ``job`` that rewrites it."""
    frames = []
    for path, run in zip(paths, runs, strict=True):
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as err:
            raise ValueError(
                f"cannot read {what} {path} ({type(err).__name__}: {err}); "
                f"delete it and rerun its {job} job"
            ) from err
        frames.append(frame.assign(model=run["model"], seed=run["seed"]))
    return pd.concat(frames, ignore_index=True)


def read_series(paths: Iterable[str | Path], runs: Iterable[dict]) -> pd.DataFrame:
    """The runs' per-(step, layer) diagram-series tables (``topology.series``) with model and
    seed."""
    return read_run_tables(paths, runs, "diagram series", "diagram_series")


def read_control_run(run_dir: str | Path) -> tuple[pd.DataFrame, dict[int, Path]]:
    """(metrics.csv, {step: checkpoint file}) of a control seed's run folder; checkpoints and
    metrics rows that disagree are an error naming the steps."""
    run_dir = Path(run_dir)
    metrics = pd.read_csv(run_dir / "metrics.csv")
    files = {int(m.group(1)): f for f in run_dir.iterdir() if (m := CONTROL_STEP.search(f.name))}
    if set(files) != set(metrics["step"]):
        odd = sorted(set(files) ^ set(metrics["step"]))
        raise ValueError(f"{run_dir}: checkpoints and metrics.csv disagree at steps {odd}")
    return metrics, files


def read_control_tables(paths: Iterable[str | Path]) -> pd.DataFrame:
    """The control seeds' feature tables (``control_features_job``) in one frame."""
    return pd.concat([pd.read_parquet(p) for p in paths], ignore_index=True)
