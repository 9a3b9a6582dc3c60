"""Helpers the job modules share: JSON in and out, the hub corpus keys, tables."""

from __future__ import annotations

import logging

log = logging.getLogger("topotrain.jobs")


def _read_json(path: str) -> dict:
    import json

    with open(path) as fh:
        return json.load(fh)


def _write_json(path: str, doc: dict) -> None:
    import json

    from topotrain.io import atomic_write_text

    atomic_write_text(path, json.dumps(doc, indent=1) + "\n")


def _hub_corpus(corpus: dict) -> dict:
    """The hub dataset and config of a corpus config as keyword arguments
    (topotrain.hub defaults)."""
    from topotrain.hub import corpus_dataset

    return dict(zip(("dataset", "config"), corpus_dataset(corpus), strict=True))


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
