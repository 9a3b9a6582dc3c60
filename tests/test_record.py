"""One record call (``topology.record``): every branch's records go through it, one
``TopologySettings`` resolves the Rips engine once, it is ``layer_records`` with those settings,
and its ``Record`` names the same ``params`` in every branch."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from topotrain.topology.layers import layer_records
from topotrain.topology.record import Record, record
from topotrain.topology.settings import TopologySettings
from topotrain.topology.vietoris_rips import resolve_engine

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "topotrain"
SETTINGS_KEYS = {"max_points", "seed", "maxdim", "engine", "weightwatcher"}


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
    assert callers("resolve_engine") == {"topology/settings.py", "topology/vietoris_rips.py"}
    assert not callers("Options")  # the settings' one spelling is TopologySettings


def test_settings_take_a_mappings_settings_and_resolve_the_engine():
    given = {"max_points": 7, "seed": 3, "patterns": ["x"], "n_threads": 4, "weightwatcher": "2.0"}
    settings = TopologySettings.from_config(given)
    assert (settings.max_points, settings.seed, settings.threads) == (7, 3, 4)
    assert settings.maxdim == TopologySettings().maxdim  # missing: the schema's default
    assert settings.engine == resolve_engine("auto") and settings.engine != "auto"
    assert settings.weightwatcher is True  # the rules pass WeightWatcher's version
    assert settings.params() == {
        "max_points": 7,
        "seed": 3,
        "maxdim": 1,
        "engine": settings.engine,
        "weightwatcher": True,
    }
    again = TopologySettings.from_config(settings, max_points=None, seed=9)  # None: kept
    assert (again.max_points, again.seed, again.threads) == (7, 9, 4)
    with pytest.raises(ValueError):
        TopologySettings(engine="no-such-engine")


def test_record_is_the_per_layer_loop_with_its_settings():
    rng = np.random.default_rng(2)
    matrices = {"a.w": rng.normal(size=(25, 4)), "b.w": rng.normal(size=(12, 6))}
    settings = TopologySettings(max_points=10, seed=5, maxdim=1, engine="ripser")
    rec = record(matrices, ["*.w"], settings, source="toy")
    assert isinstance(rec, Record)
    expected, expected_dgms = layer_records(
        matrices, ["*.w"], max_points=10, seed=5, maxdim=1, source="toy", engine="ripser"
    )
    assert rec.layers == expected
    assert rec.diagrams.keys() == expected_dgms.keys()
    assert all(np.array_equal(rec.diagrams[k], expected_dgms[k]) for k in rec.diagrams)
    assert [r["n_points"] for r in rec.layers] == [10, 10]
    assert rec.params == {"patterns": ["*.w"], **settings.params()}
    with pytest.raises(ValueError, match="toy"):
        record(matrices, ["nothing"], settings, source="toy")


def test_the_spine_and_a_run_write_the_same_params_keys(tmp_path):
    """A spine checkpoint's record and a run's (the same matrices) carry the same params keys and
    the same layers: one Record, one TopologySettings."""
    from topotrain.jobs.runs import run_checkpoint_topology
    from topotrain.jobs.topology import write_checkpoint_topology
    from topotrain.sources.runs import layer_map

    rng = np.random.default_rng(4)
    path = tmp_path / "model.safetensors"
    save_file({"h.0.w": rng.normal(size=(12, 5)).astype(np.float32)}, str(path))
    topo = {"max_points": 8, "seed": 1, "engine": "ripser"}
    spine = write_checkpoint_topology(path, tmp_path / "r.json", tmp_path / "r.npz", ["*"], topo)
    written = json.loads((tmp_path / "r.json").read_text())["params"]
    options = {"layers": ["h.*"], "transposed": [], "include_embeddings": False}
    doc = layer_map({**options, "include_head": False}, [str(path)], None, "runs.plain")
    run = run_checkpoint_topology([str(path)], doc, "runs.plain", topo)
    assert written.keys() == run.params.keys() == {"patterns"} | SETTINGS_KEYS
    assert written == run.params
    assert run.layers == spine
