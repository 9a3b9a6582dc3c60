"""Jobs of workflow/rules/topology.smk: per-checkpoint weight topology, per-run diagram
series, the gradients' topology."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from topotrain.config import DEFAULTS, GPT_LAYERS

_TOPOLOGY = DEFAULTS["topology"]  # the schema's topology defaults


def checkpoint_topology(
    path: str | Path,
    patterns: Sequence[str] = GPT_LAYERS,
    max_points: int = _TOPOLOGY["max_points"],
    seed: int = _TOPOLOGY["seed"],
    maxdim: int = _TOPOLOGY["maxdim"],
    n_threads: int = 1,
    engine: str = _TOPOLOGY["engine"],
):
    """(per-layer records, float64 diagrams ``{layer}/h{k}``) of one spine checkpoint: its tensors
    read one at a time (``sources.checkpoint.open_checkpoint``) through ``topology.record``;
    errors name the checkpoint and the layer."""
    from topotrain.sources.checkpoint import open_checkpoint
    from topotrain.topology.record import Options, record

    tensors = open_checkpoint(path)  # source → topology
    options = Options(max_points, seed, maxdim, engine)
    return record(tensors, patterns, options, n_threads=n_threads, source=f"checkpoint {path}")


def write_checkpoint_topology(
    ckpt_path: str | Path,
    out_json: str | Path,
    out_npz: str | Path,
    patterns: Sequence[str] = GPT_LAYERS,
    max_points: int = _TOPOLOGY["max_points"],
    seed: int = _TOPOLOGY["seed"],
    maxdim: int = _TOPOLOGY["maxdim"],
    n_threads: int = 1,
    engine: str = _TOPOLOGY["engine"],
) -> list[dict]:
    """A checkpoint's records as JSON and its diagrams as npz, both or neither
    (``io.write_record``): source → topology → write.

    JSON: {"checkpoint", "params" (those the result depends on, the engine resolved: not
    n_threads), "numerics" (the checkpoint's training numerics, ``trained_numerics``; null when
    unrecorded), "layers"}.
    """
    from topotrain.io import write_record
    from topotrain.sources.checkpoint import open_checkpoint, trained_numerics
    from topotrain.topology.record import Options, record

    tensors, numerics = open_checkpoint(ckpt_path), trained_numerics(ckpt_path)  # source
    options = Options(max_points, seed, maxdim, engine)
    source = f"checkpoint {ckpt_path}"
    records, diagrams = record(tensors, patterns, options, n_threads=n_threads, source=source)
    params = {"patterns": list(patterns), **options.params()}
    doc = {"checkpoint": str(ckpt_path), "params": params, "numerics": numerics, "layers": records}
    write_record(out_json, out_npz, doc, diagrams)  # write
    return records


def weight_topology_job(
    checkpoint: str, params: dict, out: dict[str, str], threads: int = 1
) -> None:
    """Weight topology of one checkpoint → JSON record + npz diagrams (``out``)."""
    write_checkpoint_topology(
        checkpoint,
        out["record"],
        out["diagrams"],
        patterns=params["patterns"],
        max_points=params["max_points"],
        seed=params["seed"],
        maxdim=params["maxdim"],
        n_threads=threads,
        engine=params["engine"],
    )


def training_topology_job(
    checkpoints: list[str], params: dict, out: dict[str, list[str]], threads: int = 1
) -> None:
    """Every checkpoint's weight topology of one training in one job (``topology.jobs:
    training``): ``checkpoints[i]`` → ``out["records"][i]``, ``out["diagrams"][i]``, the records
    ``weight_topology_job`` writes, over ``threads`` processes (one Python start-up per training,
    not per checkpoint)."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    from topotrain.jobs.common import log

    pairs = list(zip(out["records"], out["diagrams"], strict=True))
    if len(pairs) != len(checkpoints):
        got = f"{len(checkpoints)} checkpoints but {len(pairs)} (record, diagrams) pairs"
        raise ValueError(f"training_topology: {got}")
    one = partial(_one_record, params=params)
    tasks = list(zip(checkpoints, pairs, strict=True))
    if threads > 1:
        with ProcessPoolExecutor(threads) as pool:
            list(pool.map(one, tasks))
    else:
        for task in tasks:
            one(task)
    log.info("weight topology: %d checkpoints, %d processes", len(tasks), threads)


def _one_record(task: tuple[str, tuple[str, str]], params: dict) -> None:
    """One checkpoint's record and diagrams, as ``weight_topology_job`` writes them."""
    checkpoint, (record, diagrams) = task
    weight_topology_job(checkpoint, params, {"record": record, "diagrams": diagrams})


def diagram_series_job(diagrams: list[str], params: dict, out: dict[str, str]) -> None:
    """One run's diagram series: step distances and vectorised diagrams (topology.series)."""
    from topotrain.jobs.common import with_kept

    diagrams = with_kept(diagrams, params["steps"], params.get("kept"), ".npz")
    write_run_series(diagrams, params["steps"], params["series"], out)


def write_run_series(npz_paths: Sequence[str], steps: Sequence[int], params: dict, out: dict):
    """Read a run's per-checkpoint diagram files (``sources.checkpoint.read_diagram_series``),
    write its series table (``table``: parquet) and arrays (``arrays``: npz), both or neither."""
    import numpy as np

    from topotrain.io import atomic_write_all
    from topotrain.sources.checkpoint import read_diagram_series
    from topotrain.topology.series import run_series

    table, arrays = run_series(read_diagram_series(npz_paths, steps), params)
    atomic_write_all(
        {
            out["table"]: lambda fh: table.to_parquet(fh, index=False),
            out["arrays"]: lambda fh: np.savez_compressed(fh, **arrays),
        }
    )
    return table


def gradient_topology_job(
    checkpoints: list[str], tokens: str, params: dict, out: dict[str, list[str]], threads: int = 1
) -> None:
    """Topology of the probe-batch gradients of each checkpoint of one training → a JSON record
    and npz diagrams per checkpoint (one process for the training's checkpoints)."""
    from topotrain.topology.record import Options
    from topotrain.training.gradients import write_training_gradients

    topo = params["topology"]
    write_training_gradients(
        list(zip(out["records"], out["diagrams"], strict=True)),
        checkpoints,
        tokens,
        topo["patterns"],
        params["batch_size"],
        params["seed"],
        Options.of(topo),
        n_threads=threads,
    )


def weightwatcher_job(checkpoints: list[str], params: dict, out: str) -> None:
    """WeightWatcher's metrics (``topology.weightwatcher.ww_layers``) of one training's
    checkpoints (``checkpoints[i]`` at ``params["steps"][i]``, the layers of
    ``params["patterns"]``) → one parquet table, a row per (step, layer), written atomically."""
    import pandas as pd

    from topotrain.baselines.weightwatcher import ww_layers
    from topotrain.io import atomic_write
    from topotrain.jobs.common import log
    from topotrain.sources.checkpoint import open_checkpoint
    from topotrain.topology.layers import select_layers

    rows = []
    for path, step in zip(checkpoints, params["steps"], strict=True):
        try:
            records = ww_layers(select_layers(open_checkpoint(path), params["patterns"]))
        except ValueError as err:
            raise ValueError(f"checkpoint {path}: {err}") from err
        rows += [{"step": int(step), **r} for r in records]
    table = pd.DataFrame(rows)
    atomic_write(out, lambda fh: table.to_parquet(fh, index=False))
    fits = table.groupby("fit").size().to_dict()
    log.info(
        "WeightWatcher: %d layer rows of %d checkpoints → %s; fits %s",
        len(table),
        len(checkpoints),
        out,
        fits,
    )
