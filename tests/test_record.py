"""One record call (``topology.record``): every branch's records go through it, its ``Options``
resolve the Rips engine once, and it is ``layer_records`` with those settings."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from topotrain.topology.layers import layer_records
from topotrain.topology.record import Options, record
from topotrain.topology.vietoris_rips import resolve_engine

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "topotrain"


def callers(name: str) -> set[str]:
    """Source files (relative to the package) that call ``name`` (as a name or an attribute)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if called == name:
                    found.add(str(path.relative_to(PACKAGE)))
    return found


def test_records_are_assembled_in_one_place_and_the_engine_resolved_in_one():
    assert callers("layer_records") == {"topology/record.py"}
    assert callers("resolve_engine") == {"topology/record.py", "topology/vietoris_rips.py"}


def test_options_take_a_mappings_settings_and_resolve_the_engine():
    options = Options.of({"max_points": 7, "seed": 3, "patterns": ["x"], "n_threads": 4})
    assert (options.max_points, options.seed) == (7, 3)
    assert options.maxdim == Options().maxdim  # missing: the schema's default
    assert options.engine == resolve_engine("auto") and options.engine != "auto"
    assert options.params() == {"max_points": 7, "seed": 3, "maxdim": 1, "engine": options.engine}
    with pytest.raises(ValueError):
        Options(engine="no-such-engine")


def test_record_is_the_per_layer_loop_with_its_options():
    rng = np.random.default_rng(2)
    matrices = {"a.w": rng.normal(size=(25, 4)), "b.w": rng.normal(size=(12, 6))}
    options = Options(max_points=10, seed=5, maxdim=1, engine="ripser")
    records, diagrams = record(matrices, ["*.w"], options, source="toy")
    expected, expected_dgms = layer_records(matrices, ["*.w"], 10, 5, 1, 1, "toy", engine="ripser")
    assert records == expected
    assert diagrams.keys() == expected_dgms.keys()
    assert all(np.array_equal(diagrams[k], expected_dgms[k]) for k in diagrams)
    assert [r["n_points"] for r in records] == [10, 10]
    with pytest.raises(ValueError, match="toy"):
        record(matrices, ["nothing"], options, source="toy")
