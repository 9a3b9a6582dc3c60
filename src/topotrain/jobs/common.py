"""Helpers the job modules share: JSON in and out, the hub corpus keys, tables."""

from __future__ import annotations

import logging

log = logging.getLogger("topotrain.jobs")


def _read_json(path: str) -> dict:
    from topotrain.sources.records import read_json  # every file a job wrote is read there

    return read_json(path)


def _write_json(path: str, doc: dict) -> None:
    import json

    from topotrain.io import atomic_write_text

    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def _hub_corpus(corpus: dict) -> dict:
    """The hub dataset and config of a corpus config as keyword arguments."""
    return {"dataset": corpus["dataset"], "config": corpus["config"]}


def _tables(out: dict[str, str], name: str, df, title: str) -> None:
    from topotrain.report.markdown import write_table

    write_table(df, out[f"{name}_csv"], out[f"{name}_md"], title)


def with_kept(paths: list[str], steps: list[int], kept: dict | None, suffix: str) -> list[str]:
    """One path per step, in step order: ``kept`` (step → record path without suffix, for steps
    whose weights are gone: read from disk, not job inputs) where given, else the next of
    ``paths`` (the listed steps' inputs, in step order)."""
    kept = {int(k): v for k, v in (kept or {}).items()}
    listed = iter(paths)
    return [f"{kept[s]}{suffix}" if s in kept else next(listed) for s in steps]


def _paths(value) -> list[str]:
    """A path or a list of paths as a list of strings."""
    return [str(value)] if isinstance(value, str) else [str(p) for p in value]


def out_folder(out: dict, expected) -> str:
    """The one folder a trainer writes into, from the rule's outputs ``out`` (key → path or
    paths), checked against what the trainer writes there (``expected(folder)``, e.g.
    ``published_files``), so that a rule and its trainer cannot drift apart silently."""
    from pathlib import Path

    folder = str(Path(out["metrics"]).parent)
    given = {k: _paths(v) for k, v in out.items()}
    want = {k: _paths(v) for k, v in expected(folder).items()}
    if given != want:
        raise ValueError(
            f"the rule's outputs {given} are not the files the trainer writes into {folder}: {want}"
        )
    return folder


def _release(inputs: dict, out: str) -> None:
    """A hub revision's release (keep_weights: false): once every record that reads its weights
    (``inputs["records"]``) is there and whole, the weight blobs its fetch downloaded
    (``inputs["revision"]``) go, and ``out`` records which (sources.hub_cache.release_weights)."""
    from topotrain.sources.hub_cache import release_weights

    for path in inputs["records"]:
        _read_json(path)  # a record that does not parse stops the release: its weights stay
    record = _read_json(inputs["revision"])
    _write_json(out, {"revision": record["revision"], "removed": release_weights(record)})


def comove_design(params: dict) -> None:
    """The co-movement's horizon H and first step for this job's process, from its rule's params
    (``analysis.horizon``, ``analysis.comove_from``; null: H after ``train.warmup_steps``), the
    params that make Snakemake rerun the job when they change (``seed_contrast.set_horizon``)."""
    from topotrain.analysis.inference.seed_contrast import set_horizon

    set_horizon(params["horizon"], params["comove_from"], params["warmup_steps"])
