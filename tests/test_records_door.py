"""Record files have one door: ``sources/records.py`` reads every one and ``io.py`` writes them
(``io.write_record``); the analysis reads tables its jobs hand it, never a record file.

What counts as opening a record file (every npz, JSON document and per-run table the workflow
writes and reads back is a record here):
- ``np.load``, ``np.savez``, ``np.savez_compressed``, ``json.load``, ``json.dump`` anywhere in
  src/topotrain: only in sources/records.py and io.py (``json.loads``/``dumps`` of strings, a
  safetensors header or a config.json's text, are not file opens and stay free);
- ``read_parquet`` (a record or a series table): never in analysis/, topology/, training/,
  report/ or sources/ beyond records.py, so only the jobs and the door read parquet;
- no module under analysis/ imports ``topotrain.sources.records`` (no arrow from the analysis to
  a record reader).
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from topotrain.io import write_record
from topotrain.sources import records as rec

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "topotrain"
SOURCES = sorted(PACKAGE.rglob("*.py"))
DOOR = {PACKAGE / "sources" / "records.py", PACKAGE / "io.py"}
OPENERS = {("np", "load"), ("np", "savez"), ("np", "savez_compressed"), ("numpy", "load")}
OPENERS |= {("json", "load"), ("json", "dump")}
NO_PARQUET = ("analysis", "topology", "training", "report", "sources")
# the calibration CLIs read the features table a user names on their command line (a table the
# aggregate job wrote, not a record), in their ``main``; they run outside the workflow's jobs
CLI_TABLES = {"analysis/calibration/power_design.py", "analysis/calibration/question_power.py"}


def calls(path: Path) -> list[tuple[str, str, int]]:
    """(object, attribute, line) of every ``a.b(...)`` call in a source file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            value = node.func.value
            name = value.id if isinstance(value, ast.Name) else ""
            out.append((name, node.func.attr, node.lineno))
    return out


def rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@pytest.mark.parametrize("path", SOURCES, ids=rel)
def test_record_files_are_opened_only_by_the_door(path):
    if path in DOOR:
        return
    opened = [f"{a}.{b} (line {n})" for a, b, n in calls(path) if (a, b) in OPENERS]
    assert not opened, f"{rel(path)} opens record files: {opened}; read them with sources.records"


@pytest.mark.parametrize("path", SOURCES, ids=rel)
def test_parquet_is_read_by_the_jobs_and_the_door_only(path):
    if path in DOOR or rel(path) in CLI_TABLES or rel(path).split("/")[0] not in NO_PARQUET:
        return
    read = [f"line {n}" for _, attr, n in calls(path) if attr == "read_parquet"]
    assert not read, f"{rel(path)} reads parquet at {read}: its job reads it (sources.records)"


def test_the_door_sees_what_it_forbids(tmp_path):
    """The checks above find an opener and a parquet read in a file that has them."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import numpy as np\nnp.load('a.npz')\nimport pandas as pd\npd.read_parquet(1)"
    )
    assert [(a, b) for a, b, _ in calls(probe)] == [("np", "load"), ("pd", "read_parquet")]
    assert len([c for c in calls(PACKAGE / "sources" / "records.py") if c[:2] in OPENERS]) >= 3


@pytest.mark.parametrize("path", sorted((PACKAGE / "analysis").rglob("*.py")), ids=rel)
def test_no_analysis_module_imports_a_record_reader(path):
    imported = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
        elif isinstance(node, ast.Import):
            imported |= {a.name for a in node.names}
    assert "topotrain.sources.records" not in imported, f"{rel(path)} imports sources.records"


# ---- each reader against a record written and read back -----------------------------------

LAYERS = [
    {"layer": "a.weight", "np_total": 1.25, "h0_total": 3.5},
    {"layer": "b.weight", "np_total": 0.75, "h0_total": 2.0},
]


def test_weight_record_and_its_diagrams_round_trip(tmp_path):
    doc = {"checkpoint": "c", "step": 7, "params": {"engine": "ripser"}, "layers": LAYERS}
    h0 = np.array([[0.0, 0.5], [0.0, np.inf]])
    write_record(tmp_path / "r.json", tmp_path / "r.npz", doc, {"a.weight/h0": h0})
    (back,) = rec.read_weight_records([tmp_path / "r.json"])
    assert back == doc
    [(step, diagrams)] = rec.read_diagram_series([tmp_path / "r.npz"], [7])
    assert step == 7 and list(diagrams) == ["a.weight/h0"]
    np.testing.assert_array_equal(diagrams["a.weight/h0"], h0)


def test_a_gradient_record_that_does_not_parse_names_its_job(tmp_path):
    doc = {"step": 0, "probe_loss": 4.5, "layers": LAYERS}
    write_record(tmp_path / "g.json", tmp_path / "g.npz", doc, {})
    assert rec.read_gradient_records([tmp_path / "g.json"])[0]["probe_loss"] == 4.5
    (tmp_path / "g.json").write_text('{"layers": [')
    with pytest.raises(ValueError, match="cannot read topology record .*gradient_topology job"):
        rec.read_gradient_records([tmp_path / "g.json"])
    write_record(tmp_path / "e.json", None, {"layers": []})
    with pytest.raises(ValueError, match="holds no layers"):
        rec.read_weight_records([tmp_path / "e.json"])


def test_run_records_give_their_hashes_by_step(tmp_path):
    paths = []
    for step, sha in ((0, "aa"), (5, "bb")):
        doc = {"step": step, "sha256": {"model.safetensors": sha}, "layers": LAYERS}
        paths.append(tmp_path / f"step_{step}.json")
        write_record(paths[-1], tmp_path / f"step_{step}.npz", doc, {})
    docs = rec.read_run_records(paths)
    assert rec.record_hashes(docs, [0, 5]) == {
        0: {"model.safetensors": "aa"},
        5: {"model.safetensors": "bb"},
    }


def test_embedding_records_keep_nan_and_read_their_h1(tmp_path):
    doc = {"model": "pythia-14m", "step": 1000, "features": {"perplexity": 12.5, "h1": math.nan}}
    h1 = np.array([[0.25, 0.75]])
    write_record(
        tmp_path / "a.json", tmp_path / "a.npz", doc, {"h0": h1 * 0, "h1": h1}, allow_nan=True
    )
    write_record(tmp_path / "b.json", tmp_path / "b.npz", doc, {"h0": h1}, allow_nan=True)
    docs, diagrams = rec.read_embedding_records(
        [tmp_path / "a.json", tmp_path / "b.json"], [tmp_path / "a.npz", tmp_path / "b.npz"]
    )
    assert docs[0]["features"]["perplexity"] == 12.5 and math.isnan(docs[0]["features"]["h1"])
    np.testing.assert_array_equal(diagrams[0], h1)
    assert diagrams[1].shape == (0, 2)  # no H1 in the file: an empty diagram
    with pytest.raises(ValueError, match="Out of range float values"):
        write_record(tmp_path / "c.json", None, doc)  # the default refuses NaN


def test_a_record_without_diagrams_is_json_only(tmp_path):
    doc = {"model": "m", "layers": LAYERS}
    write_record(tmp_path / "w.json", None, doc, allow_nan=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.json"]
    assert (tmp_path / "w.json").read_text() == json.dumps(doc, indent=1) + "\n"
    assert rec.read_json(tmp_path / "w.json") == doc


def test_run_tables_carry_model_and_seed_and_name_a_bad_file(tmp_path):
    runs = [{"model": "m", "seed": 1}, {"model": "n", "seed": 2}]
    for i, run in enumerate(runs):
        table = pd.DataFrame({"step": [0, 10], "layer": "a", "h0_w1_step": [math.nan, 0.5 + i]})
        table.to_parquet(tmp_path / f"{run['model']}.parquet", index=False)
    paths = [tmp_path / "m.parquet", tmp_path / "n.parquet"]
    series = rec.read_series(paths, runs)
    assert series["model"].tolist() == ["m", "m", "n", "n"]
    assert series["seed"].tolist() == [1, 1, 2, 2]
    assert series["h0_w1_step"].tolist()[1::2] == [0.5, 1.5]
    (tmp_path / "n.parquet").write_bytes(b"not parquet")
    with pytest.raises(ValueError, match=r"cannot read LLC table .*n\.parquet.*its llc job"):
        rec.read_run_tables(paths, runs, "LLC table", "llc")


def test_a_control_run_lists_its_checkpoints_and_metrics(tmp_path):
    pd.DataFrame({"step": [0, 50], "test_acc": [0.1, 0.9]}).to_csv(tmp_path / "metrics.csv")
    for step in (0, 50):
        (tmp_path / f"step_{step:05d}.safetensors").write_bytes(b"")
    metrics, files = rec.read_control_run(tmp_path)
    assert metrics["test_acc"].tolist() == [0.1, 0.9]
    assert files == {s: tmp_path / f"step_{s:05d}.safetensors" for s in (0, 50)}
    (tmp_path / "step_00100.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match=r"disagree at steps \[100\]"):
        rec.read_control_run(tmp_path)
    for seed in (0, 1):
        pd.DataFrame({"seed": [seed], "np_mean": [0.5 + seed]}).to_parquet(tmp_path / f"{seed}.pq")
    both = rec.read_control_tables([tmp_path / "0.pq", tmp_path / "1.pq"])
    assert both["np_mean"].tolist() == [0.5, 1.5]
