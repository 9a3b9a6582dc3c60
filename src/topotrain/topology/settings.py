"""The topology settings a record depends on, spelled once: ``TopologySettings.from_config`` reads
them from a rule's ``topology`` params, a run's or the control's settings, or keywords, and every
branch's job (spine weights, gradients, runs, Pythia weights, the control) passes them on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from topotrain.config import DEFAULTS, ENGINE
from topotrain.topology.vietoris_rips import resolve_engine

_TOPOLOGY = DEFAULTS["topology"]  # the schema's topology defaults
_ALIASES = {"n_threads": "threads"}  # the keyword the per-layer loop and the callbacks spell


@dataclass(frozen=True)
class TopologySettings:
    """Rows kept per layer, the subsample's seed, the highest homology dimension (0 or 1), the Rips
    engine (``auto`` resolved on construction), WeightWatcher on or off, and the threads a record
    runs on (the only one its numbers do not depend on: not in ``params``)."""

    max_points: int = _TOPOLOGY["max_points"]
    seed: int = _TOPOLOGY["seed"]
    maxdim: int = _TOPOLOGY["maxdim"]
    engine: str = ENGINE
    weightwatcher: bool = False
    threads: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "engine", resolve_engine(self.engine))
        object.__setattr__(self, "weightwatcher", bool(self.weightwatcher))

    @classmethod
    def from_config(
        cls, config: TopologySettings | Mapping | None = None, **overrides
    ) -> TopologySettings:
        """From a mapping's (or settings') fields, then ``overrides``; other keys are ignored, a
        missing or None one takes its default, ``n_threads`` is ``threads`` and ``weightwatcher``
        is on when truthy (the rules pass WeightWatcher's version)."""
        given = asdict(config) if isinstance(config, TopologySettings) else dict(config or {})
        given = {_ALIASES.get(k, k): v for k, v in given.items() if v is not None}
        given |= {_ALIASES.get(k, k): v for k, v in overrides.items() if v is not None}
        return cls(**{f.name: given[f.name] for f in fields(cls) if f.name in given})

    def params(self) -> dict:
        """The settings as every record's ``params`` hold them (engine resolved; no threads)."""
        out = asdict(self)
        del out["threads"]
        return out
