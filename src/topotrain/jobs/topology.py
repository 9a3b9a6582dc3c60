"""Jobs of workflow/rules/topology.smk: per-checkpoint weight topology, per-run diagram
series, the gradients' topology."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from topotrain.config import GPT_LAYERS


def measure(matrices, patterns: Sequence[str], settings, source: str) -> tuple:
    """(``topology.record``'s Record, WeightWatcher's rows) of one checkpoint's matrices: with
    ``settings.weightwatcher`` the matching layers are read into memory once and
    ``baselines.weightwatcher.ww_layers`` measures the same matrices (rows [] without it). The
    Record's ``params["weightwatcher"]`` says whether its layers carry ``ww_*`` fields: False
    here, True once ``with_ww_columns`` adds them (the spine writes its rows as a table)."""
    from dataclasses import replace

    from topotrain.topology.layers import select_layers
    from topotrain.topology.record import record

    if settings.weightwatcher:
        matrices = select_layers(matrices, patterns)  # each matching layer read once, for both
    rec = record(matrices, patterns, replace(settings, weightwatcher=False), source=source)
    if not settings.weightwatcher:
        return rec, []
    from topotrain.baselines.weightwatcher import ww_layers

    return rec, ww_layers(matrices, source)


def with_ww_columns(rec, rows: list[dict]):
    """The Record with WeightWatcher's ``ww_*`` fields of ``rows`` in its layers (``ww_fields``:
    the columns of ``aggregate.ww_layer_table``), as a run's and a Pythia revision's records hold
    them; the Record itself when there are no rows."""
    from dataclasses import replace

    from topotrain.baselines.weightwatcher import ww_fields

    if not rows:
        return rec
    ww = {r["layer"]: ww_fields(r) for r in rows}
    layers = [{**r, **ww[r["layer"]]} for r in rec.layers]
    return replace(rec, layers=layers, params={**rec.params, "weightwatcher": True})


def checkpoint_topology(path: str | Path, patterns=GPT_LAYERS, settings=None, **overrides):
    """(per-layer records, float64 diagrams ``{layer}/h{k}``) of one spine checkpoint: its tensors
    read one at a time (``sources.checkpoint.open_checkpoint``) through ``topology.record``
    with ``TopologySettings.from_config(settings, **overrides)``; errors name the checkpoint and
    the layer."""
    from topotrain.sources.checkpoint import open_checkpoint
    from topotrain.topology.record import record
    from topotrain.topology.settings import TopologySettings

    tensors = open_checkpoint(path)  # source → topology
    settings = TopologySettings.from_config(settings, **overrides)
    rec = record(tensors, patterns, settings, source=f"checkpoint {path}")
    return rec.layers, rec.diagrams


def write_checkpoint_topology(
    ckpt_path, out_json, out_npz, patterns=GPT_LAYERS, settings=None, **overrides
) -> list[dict]:
    """A checkpoint's records as JSON and its diagrams as npz, both or neither
    (``io.write_record``), through ``checkpoint_pass`` with
    ``TopologySettings.from_config(settings, **overrides)``; its records.

    JSON: {"checkpoint", "params" (the Record's: patterns and ``TopologySettings.params``),
    "numerics" (the checkpoint's training numerics, ``trained_numerics``; null when
    unrecorded), "layers"}.
    """
    from topotrain.topology.settings import TopologySettings

    settings = TopologySettings.from_config(settings, **overrides)
    return checkpoint_pass(ckpt_path, out_json, out_npz, patterns, settings)[0]


def checkpoint_pass(ckpt_path, out_json, out_npz, patterns: Sequence[str], settings) -> tuple:
    """One checkpoint, one way: read (its training numerics, its tensors), compute (``measure``:
    its Record and, with ``settings.weightwatcher``, WeightWatcher's rows of the same matrices),
    write (``io.write_record``: JSON and npz, both or neither); (records, rows)."""
    from topotrain.io import write_record
    from topotrain.sources.checkpoint import open_checkpoint, trained_numerics

    source = f"checkpoint {ckpt_path}"
    numerics, tensors = trained_numerics(ckpt_path), open_checkpoint(ckpt_path)  # source
    rec, rows = measure(tensors, patterns, settings, source)
    doc = {"checkpoint": str(ckpt_path), "params": rec.params, "numerics": numerics}
    write_record(out_json, out_npz, {**doc, "layers": rec.layers}, rec.diagrams)  # write
    return rec.layers, rows


def weight_topology_job(
    checkpoint: str, params: dict, out: dict[str, str], threads: int = 1
) -> None:
    """Weight topology of one checkpoint → JSON record + npz diagrams (``out``)."""
    outs = (out["record"], out["diagrams"])
    write_checkpoint_topology(checkpoint, *outs, params["patterns"], params, n_threads=threads)


def training_topology_job(
    checkpoints: list[str], params: dict, out: dict[str, list[str]], threads: int = 1
) -> None:
    """Every checkpoint's weight topology of one training in one job (``topology.jobs:
    training``): ``checkpoints[i]`` → ``out["records"][i]``, ``out["diagrams"][i]``, the records
    ``weight_topology_job`` writes with ``params["topology"]``, over ``threads`` processes (one
    Python start-up per training, not per checkpoint). With ``params["ww"]``
    (``weightwatcher_job``'s params) each checkpoint's layers are read once for both measures, and
    ``out["weightwatcher"]`` is the table ``weightwatcher_job`` writes."""
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    from topotrain.jobs.common import log
    from topotrain.topology.settings import TopologySettings

    pairs = list(zip(out["records"], out["diagrams"], strict=True))
    if len(pairs) != len(checkpoints):
        got = f"{len(checkpoints)} checkpoints but {len(pairs)} (record, diagrams) pairs"
        raise ValueError(f"training_topology: {got}")
    ww = params.get("ww")
    steps = ww["steps"] if ww else [None] * len(checkpoints)
    if len(steps) != len(checkpoints):
        raise ValueError(f"training_topology: {len(checkpoints)} checkpoints, {len(steps)} steps")
    topo = params["topology"]
    settings = TopologySettings.from_config(topo, weightwatcher=ww is not None)
    one = partial(_one_record, patterns=topo["patterns"], settings=settings)
    tasks = list(zip(checkpoints, pairs, steps, strict=True))
    if threads > 1:
        with ProcessPoolExecutor(threads) as pool:
            rows = list(pool.map(one, tasks))
    else:
        rows = [one(task) for task in tasks]
    log.info("weight topology: %d checkpoints, %d processes", len(tasks), threads)
    if ww:
        _write_ww_table([r for part in rows for r in part], len(checkpoints), out["weightwatcher"])


def _one_record(task: tuple[str, tuple[str, str], int | None], patterns, settings) -> list:
    """One checkpoint's record and diagrams, as ``weight_topology_job`` writes them, and with
    ``settings.weightwatcher`` WeightWatcher's rows of the same matrices, each with its step."""
    checkpoint, (record, diagrams), step = task
    _, rows = checkpoint_pass(checkpoint, record, diagrams, patterns, settings)
    return [{"step": int(step), **r} for r in rows]


def diagram_series_job(diagrams: list[str], params: dict, out: dict[str, str]) -> None:
    """One run's diagram series: step distances and vectorised diagrams (topology.series)."""
    from topotrain.jobs.common import with_kept

    diagrams = with_kept(diagrams, params["steps"], params.get("kept"), ".npz")
    write_run_series(diagrams, params["steps"], params["series"], out)


def write_run_series(npz_paths: Sequence[str], steps: Sequence[int], params: dict, out: dict):
    """Read a run's per-checkpoint diagram files (``sources.records.read_diagram_series``),
    write its series table (``table``: parquet) and arrays (``arrays``: npz), both or neither."""
    from topotrain.io import atomic_write_all, npz_writer
    from topotrain.sources.records import read_diagram_series
    from topotrain.topology.series import run_series

    table, arrays = run_series(read_diagram_series(npz_paths, steps), params)
    atomic_write_all(
        {
            out["table"]: lambda fh: table.to_parquet(fh, index=False),
            out["arrays"]: npz_writer(arrays, compressed=True),
        }
    )
    return table


def gradient_topology_job(
    checkpoints: list[str], tokens: str, params: dict, out: dict[str, list[str]], threads: int = 1
) -> None:
    """Topology of the probe-batch gradients of each checkpoint of one training → a JSON record
    and npz diagrams per checkpoint (one process for the training's checkpoints)."""
    topo = params["topology"]
    outs = list(zip(out["records"], out["diagrams"], strict=True))
    probe = (topo["patterns"], params["batch_size"], params["seed"], topo)
    write_training_gradients(outs, checkpoints, tokens, *probe, n_threads=threads)


def write_gradient_topology(out_json: str, out_npz: str, *args, **kwargs) -> dict:
    """``training.gradients.gradient_topology`` written as JSON + npz, both or neither."""
    import torch

    from topotrain.io import write_record
    from topotrain.training.gradients import gradient_topology

    torch.set_num_threads(kwargs.get("n_threads", 1))
    doc, diagrams = gradient_topology(*args, **kwargs)
    write_record(out_json, out_npz, doc, diagrams)
    return doc


def write_training_gradients(
    outs: list[tuple[str, str]],
    checkpoints: list[str],
    train_tokens: str,
    *args,
    n_threads: int = 1,
    progress=None,
) -> None:
    """Every checkpoint of one training: ``gradient_topology`` of ``checkpoints[i]`` written to
    ``outs[i]`` (JSON, npz), in one process: torch, the tokens and the code load once, where a
    job per checkpoint paid for them 51 times. The records are the per-checkpoint job's."""
    import torch

    from topotrain.io import write_record
    from topotrain.jobs.common import log
    from topotrain.training.gradients import gradient_topology, probe_tokens
    from topotrain.training.run_state import load_checkpoint

    if len(outs) != len(checkpoints):
        raise ValueError(f"{len(checkpoints)} checkpoints but {len(outs)} (record, diagrams) pairs")
    torch.set_num_threads(n_threads)
    if not checkpoints:
        return
    progress = progress or log.info
    tokens = probe_tokens(train_tokens, load_checkpoint(checkpoints[0])[0])
    for i, (checkpoint, (out_json, out_npz)) in enumerate(zip(checkpoints, outs, strict=True)):
        doc, diagrams = gradient_topology(checkpoint, tokens, *args, n_threads=n_threads)
        write_record(out_json, out_npz, doc, diagrams)
        progress(
            "gradients %d/%d: step %d, probe loss %.4f",
            i + 1,
            len(outs),
            doc["step"],
            doc["probe_loss"],
        )


def weightwatcher_job(checkpoints: list[str], params: dict, out: str) -> None:
    """WeightWatcher's metrics (``baselines.weightwatcher.ww_layers``) of one training's
    checkpoints (``checkpoints[i]`` at ``params["steps"][i]``, the layers of
    ``params["patterns"]``) → one parquet table, a row per (step, layer), written atomically.
    ``training_topology_job`` writes the same table in its pass when both are on."""
    from topotrain.baselines.weightwatcher import ww_layers
    from topotrain.sources.checkpoint import open_checkpoint
    from topotrain.topology.layers import select_layers

    rows = []
    for path, step in zip(checkpoints, params["steps"], strict=True):
        matrices = select_layers(open_checkpoint(path), params["patterns"])
        rows += [{"step": int(step), **r} for r in ww_layers(matrices, f"checkpoint {path}")]
    _write_ww_table(rows, len(checkpoints), out)


def _write_ww_table(rows: list[dict], n_checkpoints: int, out: str) -> None:
    """WeightWatcher's rows → one parquet table at ``out``, atomically."""
    import pandas as pd

    from topotrain.io import atomic_write
    from topotrain.jobs.common import log

    table = pd.DataFrame(rows)
    atomic_write(out, lambda fh: table.to_parquet(fh, index=False))
    fits = table.groupby("fit").size().to_dict()
    log.info(
        "WeightWatcher: %d layer rows of %d checkpoints → %s; fits %s",
        len(table),
        n_checkpoints,
        out,
        fits,
    )


def llc_job(checkpoints: list[str], tokens: str, params: dict, out: dict[str, str]) -> None:
    """The local learning coefficient (``baselines.llc``: devinterp's sampler and estimator) of
    one training's ``checkpoints`` (those of every ``params["every"]``-th step and the last) →
    one parquet table, a row per checkpoint, and an npz of the chains' loss traces
    (``write_llc``)."""
    from topotrain.jobs.common import log
    from topotrain.training.llc import training_llc

    write_llc(*training_llc(checkpoints, tokens, params, log.info), out)


def write_llc(rows: list[dict], traces: dict, out: dict[str, str]) -> None:
    """An LLC job's rows → out["table"] (parquet) and its traces → out["traces"] (npz), both
    or neither."""
    import pandas as pd

    from topotrain.io import atomic_write_all, npz_writer
    from topotrain.jobs.common import log

    table = pd.DataFrame(rows)
    atomic_write_all(
        {
            out["table"]: lambda fh: table.to_parquet(fh, index=False),
            out["traces"]: npz_writer(traces, compressed=True),
        }
    )
    log.info("LLC: %d checkpoints → %s", len(table), out["table"])


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def diagram_series_rule(sm) -> None:
    diagram_series_job(list(sm.input), dict(sm.params.items()), dict(sm.output.items()))


def gradient_topology_rule(sm) -> None:
    gradient_topology_job(
        list(sm.input.checkpoints),
        sm.input.tokens,
        sm.params.gradients,
        dict(sm.output.items()),
        sm.threads,
    )


def training_topology_rule(sm) -> None:
    training_topology_job(
        list(sm.input), dict(sm.params.items()), dict(sm.output.items()), sm.threads
    )


def weight_topology_rule(sm) -> None:
    weight_topology_job(sm.input[0], sm.params.topology, dict(sm.output.items()), sm.threads)


def weightwatcher_rule(sm) -> None:
    weightwatcher_job(list(sm.input), sm.params.ww, sm.output[0])


def llc_rule(sm) -> None:
    llc_job(list(sm.input.checkpoints), sm.input.tokens, sm.params.llc, dict(sm.output.items()))
