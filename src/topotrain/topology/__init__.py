"""Weight topology: neural persistence and Vietoris–Rips persistence of weight matrices.

Nothing in this package imports torch or reads a file: every input branch hands it named matrices
(``sources``), the jobs write what it returns (``io.write_record``).
"""

from topotrain.topology.neural_persistence import neural_persistence, np_pairs
from topotrain.topology.summaries import (
    bar_lengths,
    feature_count,
    finite_bars,
    max_persistence,
    persistence_entropy,
    total_persistence,
)
from topotrain.topology.vietoris_rips import subsample_rows, vr_diagrams

__all__ = [
    "bar_lengths",
    "feature_count",
    "finite_bars",
    "max_persistence",
    "neural_persistence",
    "np_pairs",
    "persistence_entropy",
    "subsample_rows",
    "total_persistence",
    "vr_diagrams",
]
