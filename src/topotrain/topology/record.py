"""One record call: named matrices → per-layer records and diagrams, for every input branch.

The spine's checkpoints, your runs, Pythia revisions, gradients, a model in memory (the live
callback) and the grokking control all go through ``record``; only the source (a mapping of named
matrices, from ``sources``) and where the result goes differ. ``Options`` holds the settings a
record depends on, its Rips engine resolved once (``vietoris_rips.resolve_engine``), so the record's
``params`` name the engine that ran.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np

from topotrain.config import DEFAULTS, ENGINE
from topotrain.topology.layers import layer_records
from topotrain.topology.vietoris_rips import resolve_engine

_TOPOLOGY = DEFAULTS["topology"]  # the schema's topology defaults


@dataclass(frozen=True)
class Options:
    """The settings a record depends on: rows kept per layer, the subsample's seed, the highest
    homology dimension (0 or 1), the Rips engine (``auto`` resolved on construction)."""

    max_points: int = _TOPOLOGY["max_points"]
    seed: int = _TOPOLOGY["seed"]
    maxdim: int = _TOPOLOGY["maxdim"]
    engine: str = ENGINE

    def __post_init__(self) -> None:
        object.__setattr__(self, "engine", resolve_engine(self.engine))

    @classmethod
    def of(cls, settings: Mapping | None) -> Options:
        """From a mapping's max_points, seed, maxdim and engine (other keys ignored, missing ones
        at their defaults): a rule's ``topology`` params, a run's or the control's settings."""
        settings = settings or {}
        return cls(**{f.name: settings[f.name] for f in fields(cls) if f.name in settings})

    def params(self) -> dict:
        """The settings as a record's ``params`` hold them (the engine resolved)."""
        return asdict(self)


def record(
    matrices: Mapping[str, np.ndarray],
    patterns: Sequence[str] = ("*",),
    options: Options | None = None,
    *,
    n_threads: int = 1,
    source: str = "weights",
) -> tuple[list[dict], dict[str, np.ndarray]]:
    """(per-layer records, float64 diagrams ``{layer}/h{k}``) of the matrices matching
    ``patterns`` (``layers.layer_records``: selection, NaN/inf check, one matrix at a time);
    errors name ``source`` and the layer."""
    o = options or Options()
    return layer_records(
        matrices, patterns, o.max_points, o.seed, o.maxdim, n_threads, source, engine=o.engine
    )
