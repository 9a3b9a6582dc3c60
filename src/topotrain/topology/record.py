"""One record call: named matrices → a ``Record`` (per-layer records, diagrams, params), for every
input branch.

The spine's checkpoints, your runs, Pythia revisions, gradients, a model in memory (the live
callback) and the grokking control all go through ``record``; only the source (a mapping of named
matrices, from ``sources``) and where the result goes differ. Its settings are one
``TopologySettings`` (the Rips engine resolved once), so every branch's record names the same
``params``: the patterns and ``TopologySettings.params``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from topotrain.topology.layers import layer_records
from topotrain.topology.settings import TopologySettings


@dataclass(frozen=True)
class Record:
    """One checkpoint's per-layer records (``layers.RECORD_KEYS``), float64 diagrams
    ``{layer}/h{k}`` and the ``params`` they depend on (patterns and settings)."""

    layers: list[dict]
    diagrams: dict[str, np.ndarray]
    params: dict


def record(
    matrices: Mapping[str, np.ndarray],
    patterns: Sequence[str] = ("*",),
    settings: TopologySettings | None = None,
    *,
    source: str = "weights",
) -> Record:
    """The ``Record`` of the matrices matching ``patterns`` (``layers.layer_records``: selection,
    NaN/inf check, one matrix at a time, on ``settings.threads``); errors name ``source`` and the
    layer."""
    settings = settings or TopologySettings()
    layers, diagrams = layer_records(matrices, patterns, settings, source)
    return Record(layers, diagrams, {"patterns": list(patterns), **settings.params()})
