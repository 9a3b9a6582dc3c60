"""topotrain: the topology of transformer training, as a reproducible Snakemake workflow.

``topotrain.weight_topology`` (``topotrain.live``) and ``topotrain.TopologyCallback``
(``topotrain.callbacks``, needs transformers) are imported on first use, so ``import topotrain``
imports neither torch, transformers nor pandas.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"
__all__ = ["TopologyCallback", "weight_topology"]
LAZY = {"TopologyCallback": "topotrain.callbacks", "weight_topology": "topotrain.live"}


def __getattr__(name: str):
    """The lazy exports (PEP 562): import their module on first access."""
    if name in LAZY:
        value = globals()[name] = getattr(importlib.import_module(LAZY[name]), name)
        return value
    raise AttributeError(f"module 'topotrain' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
