"""``topology.jobs``: one weight-topology job per checkpoint (the default) or one per training
writing every checkpoint's record; the tiny study's records are the same either way."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml
from conftest import planned_counts, run_snakemake, tiny_config, write_corpus
from run_fixtures import fake_checkpoint

from topotrain.jobs.topology import training_topology_job, weight_topology_job

CHECKPOINTS = 5  # the tiny study: 40 steps, a checkpoint every 10


def study(root, jobs: str):
    """The tiny study's trainings and weight topology in ``root`` with ``topology.jobs: jobs``."""
    root.mkdir()
    config = tiny_config(*write_corpus(root, n_chars=2_000))
    config["topology"]["jobs"] = jobs
    config["topology"]["gradients"]["enabled"] = False
    config["models"] = dict(list(config["models"].items())[1:])  # one model: tiny-b
    (root / "config.yaml").write_text(yaml.safe_dump(config))
    rule = "training_topology" if jobs == "training" else "weight_topology"
    return root, rule, config


def records(root) -> dict[str, tuple[dict, dict[str, np.ndarray]]]:
    """step file → (the record without its checkpoint path, its diagrams) under ``root``."""
    out = {}
    for path in sorted((root / "results" / "topology").rglob("step_*.json")):
        doc = json.loads(path.read_text())
        doc.pop("checkpoint")
        with np.load(path.with_suffix(".npz")) as npz:
            out[str(path.relative_to(root))] = (doc, {k: npz[k] for k in npz.files})
    return out


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_one_job_per_training_plans_and_writes_the_per_checkpoint_records(tmp_path):
    one, one_rule, config = study(tmp_path / "per-checkpoint", "checkpoint")
    many, many_rule, _ = study(tmp_path / "per-training", "training")
    trainings = len(config["models"]) * len(config["seeds"])
    assert planned_counts(one, "--until", one_rule)[one_rule] == trainings * CHECKPOINTS
    planned = planned_counts(many, "--until", many_rule)
    assert planned[many_rule] == trainings and "weight_topology" not in planned
    for root, rule in ((one, one_rule), (many, many_rule)):
        run_snakemake(root, "--cores", "2", "--until", rule)
    expected, got = records(one), records(many)
    assert len(got) == trainings * CHECKPOINTS and got.keys() == expected.keys()
    for name, (doc, diagrams) in got.items():
        assert doc == expected[name][0], name
        assert diagrams.keys() == expected[name][1].keys()
        assert all(np.array_equal(d, expected[name][1][k]) for k, d in diagrams.items()), name
    assert planned_counts(many, "--until", many_rule) == {}  # done: nothing reruns


def test_the_training_job_over_two_processes_writes_each_checkpoints_own_record(tmp_path):
    params = {"patterns": ["*.c_fc.weight"], "max_points": 30, "seed": 2, "maxdim": 1}
    params["engine"] = "ripser"
    ckpts = [tmp_path / f"c{i}.safetensors" for i in range(3)]
    for i, path in enumerate(ckpts):
        fake_checkpoint(path, seed=i)
    out = {"records": [str(tmp_path / f"r{i}.json") for i in range(3)]}
    out["diagrams"] = [str(tmp_path / f"r{i}.npz") for i in range(3)]
    training_topology_job([str(c) for c in ckpts], {"topology": params}, out, threads=2)
    for i, path in enumerate(ckpts):
        alone = {"record": str(tmp_path / f"a{i}.json"), "diagrams": str(tmp_path / f"a{i}.npz")}
        weight_topology_job(str(path), params, alone)
        got = json.loads((tmp_path / f"r{i}.json").read_text())
        assert got == json.loads((tmp_path / f"a{i}.json").read_text())  # its own checkpoint's
    first = json.loads((tmp_path / "r0.json").read_text())["layers"]
    assert first != json.loads((tmp_path / "r1.json").read_text())["layers"]  # not one copied
    short = {"records": out["records"][:2], "diagrams": out["diagrams"][:2]}
    with pytest.raises(ValueError, match="3 checkpoints but 2"):
        training_topology_job([str(c) for c in ckpts], {"topology": params}, short)


def test_with_weightwatcher_the_training_job_reads_each_checkpoint_once_for_both(
    tmp_path, monkeypatch
):
    """One pass: the same records and the same WeightWatcher table as the two jobs apart, each
    checkpoint opened once (the two jobs apart open it twice)."""
    pytest.importorskip("weightwatcher")
    import pandas as pd

    import topotrain.sources.checkpoint as source
    from topotrain.jobs.topology import weightwatcher_job

    params = {"patterns": ["*.c_fc.weight", "*.c_proj.weight"], "max_points": 30, "seed": 2}
    params |= {"maxdim": 1, "engine": "ripser"}
    ckpts = [str(tmp_path / f"c{i}.safetensors") for i in range(2)]
    for i, path in enumerate(ckpts):
        fake_checkpoint(path, seed=i)
    ww = {"patterns": params["patterns"], "steps": [0, 10], "weightwatcher": "x"}
    opened = []
    real = source.open_checkpoint
    monkeypatch.setattr(source, "open_checkpoint", lambda p: opened.append(str(p)) or real(p))
    out = {"records": [str(tmp_path / f"r{i}.json") for i in range(2)]}
    out |= {"diagrams": [str(tmp_path / f"r{i}.npz") for i in range(2)]}
    out["weightwatcher"] = str(tmp_path / "ww.parquet")
    training_topology_job(ckpts, {"topology": params, "ww": ww}, out, threads=1)
    assert opened == ckpts  # once each
    weightwatcher_job(ckpts, ww, str(tmp_path / "apart.parquet"))
    both = pd.read_parquet(out["weightwatcher"])
    pd.testing.assert_frame_equal(both, pd.read_parquet(tmp_path / "apart.parquet"))
    assert sorted(both["step"].unique()) == [0, 10] and len(both) == 2 * 3  # c_fc, 2 c_proj
    for i, path in enumerate(ckpts):
        alone = {"record": str(tmp_path / f"a{i}.json"), "diagrams": str(tmp_path / f"a{i}.npz")}
        weight_topology_job(path, params, alone)
        got = json.loads((tmp_path / f"r{i}.json").read_text())
        assert got == json.loads((tmp_path / f"a{i}.json").read_text())
        with np.load(tmp_path / f"r{i}.npz") as a, np.load(tmp_path / f"a{i}.npz") as b:
            assert all(np.array_equal(a[k], b[k]) for k in b.files) and a.files == b.files
