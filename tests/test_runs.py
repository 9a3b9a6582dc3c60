"""The runs: branch without Snakemake: listing a run's checkpoints, reading and aligning its losses,
checking its entry, and its feature table against the per-checkpoint records."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from topotrain.config import ConfigError, run_problems
from topotrain.jobs.runs import run_revisions_job
from topotrain.sources.hub_files import HubFetchError
from topotrain.sources.losses import LossesError, align_losses, read_losses
from topotrain.sources.runs import (
    Checkpoint,
    RunError,
    gone_steps,
    hub_checkpoints,
    listed_runs,
    local_checkpoints,
    read_revisions,
    run_losses,
    step_of,
)


def touch(path, text="x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_step_is_the_last_run_of_digits_or_the_regex_group():
    assert step_of("checkpoint-1500", r"(\d+)(?!.*\d)", "r") == 1500
    assert step_of("model_v2_step_00100.safetensors", r"(\d+)(?!.*\d)", "r") == 100
    assert step_of("step100-00002-of-00003.safetensors", r"step(\d+)", "r") == 100
    assert step_of("global_step42", r"(?<=step)\d+", "r") == 42  # no group: the whole match
    with pytest.raises(
        RunError, match=r"runs.a: step_regex `step\(\\d\+\)` reads no step from 'final'"
    ):
        step_of("final", r"step(\d+)", "runs.a")


def test_trainer_folders_sort_by_step_and_list_their_weight_files(tmp_path):
    for step in (1000, 200, 30):
        touch(tmp_path / f"checkpoint-{step}" / "model.safetensors")
        touch(tmp_path / f"checkpoint-{step}" / "optimizer.pt")
    touch(tmp_path / "runs" / "events.txt")  # not matched by the glob
    found = local_checkpoints(tmp_path, label="runs.t")
    assert [c.step for c in found] == [30, 200, 1000]
    assert found[0].files == (str(tmp_path / "checkpoint-30" / "model.safetensors"),)


def test_files_of_one_step_are_its_shards(tmp_path):
    for step in (0, 100):
        for shard in (1, 2):
            touch(tmp_path / f"step{step}-0000{shard}-of-00002.safetensors")
    found = local_checkpoints(tmp_path, "*.safetensors", r"step(\d+)", "runs.s")
    assert [(c.step, len(c.files)) for c in found] == [(0, 2), (100, 2)]
    assert found[1].files[0].endswith("step100-00001-of-00002.safetensors")


@pytest.mark.parametrize(
    "layout, glob, message",
    [
        ({"checkpoint-10/readme.txt": "x"}, "checkpoint-*", "checkpoint-10 holds no weight files"),
        (
            {"a-10/model.safetensors": "x", "b-10/model.safetensors": "x"},
            "*-10",
            r"\['a-10', 'b-10'\] all read as step 10",
        ),
        ({"notes.txt": "x"}, "*", r"reads no step from 'notes.txt'"),
        ({"step_10.txt": "x"}, "*.txt", r"\['step_10.txt'\] are not weight files"),
        ({}, "checkpoint-*", r"nothing in .* matches glob 'checkpoint-\*'"),
    ],
)
def test_unusable_folders_name_the_run_and_the_entry(tmp_path, layout, glob, message):
    for name, text in layout.items():
        touch(tmp_path / name, text)
    with pytest.raises(RunError, match=f"runs.bad: .*{message}"):
        local_checkpoints(tmp_path, glob, r"(\d+)(?!.*\d)", "runs.bad")


def test_hub_revisions_become_steps_and_a_step_twice_is_refused():
    found = hub_checkpoints(["step1000", "step0", "step143000"], r"step(\d+)", "runs.p")
    assert found == [
        Checkpoint(0, "step0", revision="step0"),
        Checkpoint(1000, "step1000", revision="step1000"),
        Checkpoint(143000, "step143000", revision="step143000"),
    ]
    with pytest.raises(RunError, match="'step10' and 'v2-step10' are both step 10"):
        hub_checkpoints(["step10", "v2-step10"], r"(\d+)(?!.*\d)", "runs.p")


def cached_refs(hf_home, repo: str, names) -> None:
    """Branches of ``repo`` in an HF cache (refs/<name> files, no snapshots): all an offline
    listing reads."""
    for name in names:
        touch(hf_home / "hub" / f"models--{repo.replace('/', '--')}" / "refs" / name, "0" * 40)


def test_run_revisions_job_writes_the_matching_branches_with_their_steps(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cached_refs(tmp_path / "hf", "acme/tiny", ["main", "step2", "step10", "stage1/step3", "pr/1"])
    out = tmp_path / "runs/series/revisions.json"
    entry = {
        "hub": "acme/tiny",
        "revision_pattern": r"(stage1/)?step\d+",
        "step_regex": r"step(\d+)",
    }
    run_revisions_job("series", entry, str(out))
    doc = json.loads(out.read_text())
    assert doc["revisions"] == [
        {"revision": "step2", "step": 2},
        {"revision": "stage1/step3", "step": 3},
        {"revision": "step10", "step": 10},
    ]
    assert (doc["run"], doc["hub"]) == ("series", "acme/tiny")
    assert read_revisions(out) == {
        c.step: c
        for c in hub_checkpoints(["step10", "stage1/step3", "step2"], r"step(\d+)", "runs.series")
    }
    assert sorted(p.name for p in out.parent.iterdir()) == ["revisions.json"]  # no temp left


def test_a_pattern_matching_no_branch_or_a_step_twice_names_the_run_and_writes_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cached_refs(tmp_path / "hf", "acme/tiny", ["main", "step0"])
    out = tmp_path / "revisions.json"
    entry = {"hub": "acme/tiny", "revision_pattern": r"checkpoint-\d+"}
    message = r"runs.series: acme/tiny: no branch matches the regex 'checkpoint-\\d\+' .*step0"
    with pytest.raises(HubFetchError, match=message):
        run_revisions_job("series", entry, str(out))
    assert not out.exists()
    cached_refs(tmp_path / "hf", "acme/tiny", ["v2-step0"])
    with pytest.raises(RunError, match="runs.series: revisions 'step0' and 'v2-step0' are both"):
        run_revisions_job("series", {**entry, "revision_pattern": r".*step0"}, str(out))
    assert not out.exists()


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"path": "here", "hub": "a/b"}, "give either path .* or hub"),
        ({}, "give either path .* or hub"),
        ({"hub": "a/b"}, "needs revisions .* or revision_pattern"),
        ({"hub": "a/b", "revisions": ["x"], "revision_pattern": "x"}, "needs revisions"),
        ({"path": "here", "revisions": ["x"]}, "are for hub runs"),
        ({"hub": "a/b", "revisions": ["x"], "glob": "*"}, "glob is for a local path"),
        ({"path": "here", "keep_weights": False}, "keep_weights: false is for hub runs"),
        ({"path": "here", "step_regex": "(a)(b)"}, r"step_regex: one group \(the step\), got 2"),
        ({"path": "here", "step_regex": "("}, "step_regex: not a regular expression"),
        ({"path": "nowhere"}, "path: folder nowhere does not exist"),
        ({"path": "here", "losses": "no.csv"}, "losses: no.csv does not exist"),
        ({"path": "here", "transposed": ["*"]}, "transposed: only used with layers"),
    ],
)
def test_run_entry_problems_name_the_key(tmp_path, entry, message):
    (tmp_path / "here").mkdir()
    problems = run_problems("r1", entry, tmp_path)
    assert any(p.startswith("runs.r1") for p in problems), problems
    assert any(pd.Series(problems).str.contains(message)), problems
    assert run_problems("r1", {"path": "here"}, tmp_path) == []


# --- losses ------------------------------------------------------------------------------------

TRAINER_STATE = {
    "log_history": [
        {"loss": 4.0, "grad_norm": 2.0, "learning_rate": 0.003, "step": 5},
        {"loss": 3.0, "grad_norm": 1.0, "learning_rate": 0.002, "step": 10},
        {"eval_loss": 3.5, "eval_runtime": 0.1, "step": 10},
        {"loss": 2.0, "grad_norm": 1.0, "learning_rate": 0.001, "step": 15},
        {"loss": 1.0, "grad_norm": 3.0, "learning_rate": 0.0005, "step": 20},
        {"eval_loss": 1.5, "eval_runtime": 0.1, "step": 20},
        {"train_runtime": 9.0, "train_loss": 2.5, "step": 20},  # the end-of-training summary
    ]
}


def test_trainer_state_aligns_interval_means_and_last_values_to_checkpoints(tmp_path):
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps(TRAINER_STATE))
    aligned = align_losses(read_losses(path), [10, 20, 30])
    expected = pd.DataFrame(
        {
            "step": [10, 20, 30],
            "train_loss": [3.5, 1.5, np.nan],  # mean of the losses logged in (prev, step]
            "val_loss": [3.5, 1.5, np.nan],
            "lr": [0.002, 0.0005, np.nan],  # the last value logged in the window
            "grad_norm": [1.5, 2.0, np.nan],
        }
    )
    pd.testing.assert_frame_equal(aligned, expected)


def test_csv_losses_accept_the_usual_spellings(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("step,train_loss,validation_loss\n0,5,6\n50,3,\n100,2,2.5\n")
    aligned = align_losses(read_losses(path), [0, 100])
    assert aligned["train_loss"].tolist() == [5.0, 2.5]
    assert aligned["val_loss"].tolist() == [6.0, 2.5]
    assert aligned["lr"].isna().all()


@pytest.mark.parametrize(
    "name, text, message",
    [
        ("missing.csv", None, "losses file .*missing.csv does not exist"),
        ("nostep.csv", "iteration,loss\n1,2\n", "no 'step' column"),
        ("noloss.csv", "step,accuracy\n1,2\n", "no loss column"),
        ("state.json", '{"global_step": 3}', "cannot read losses .*state.json"),
        ("empty.csv", "step,loss\n", "no entry has a step and a value"),
    ],
)
def test_unusable_losses_files_are_named(tmp_path, name, text, message):
    if text is not None:
        (tmp_path / name).write_text(text)
    with pytest.raises(LossesError, match=message):
        read_losses(tmp_path / name)


def test_clock_findings_name_the_features_that_beat_the_clock_or_why_none_can():
    from topotrain.report.runs import clock_findings

    rows = []
    for feature, clock, scale in (("np_mean", True, False), ("h0_total", False, False)):
        for view in ("raw", "partial_step"):
            rows.append(
                dict(
                    feature=feature,
                    kind="topological",
                    target="train_loss",
                    view=view,
                    rho=0.5,
                    note="",
                    beats_clock=clock,
                    beats_scale=scale,
                )
            )
            note = "target is a monotone function of step: nothing left after conditioning"
            rows.append(
                dict(
                    feature=feature,
                    kind="topological",
                    target="val_loss",
                    view=view,
                    rho=np.nan if view != "raw" else -1.0,
                    note=note,
                    beats_clock=False,
                    beats_scale=False,
                )
            )
    rows.append(
        dict(
            feature="step",
            kind="baseline",
            target="train_loss",
            view="raw",
            rho=-1.0,
            note="",
            beats_clock=True,
            beats_scale=True,
        )
    )
    rows = [dict(row, seed=0) for row in rows]
    single = clock_findings(pd.DataFrame(rows))  # no between-seed contrast: one run
    assert single[0].startswith("- A single run cannot separate topology from the clock")
    assert single[1] == (
        "- `train_loss`: 1 of 2 topological features beat the clock: `np_mean`; 0 beat the scale "
        "(neither flag can fire without a between-seed contrast: expected under the null 0)."
    )
    rows += [dict(row, seed=1) for row in rows if row["view"] == "raw"]  # a second run
    for feature in ("np_mean", "h0_total"):  # two runs of one model: the contrast is defined
        rows.append(
            dict(
                feature=feature,
                kind="topological",
                target="train_loss",
                view="seed_contrast",
                rho=0.5,
                p=0.01,
                note="",
                beats_clock=feature == "np_mean",
                beats_scale=False,
            )
        )
    calibration = pd.DataFrame(  # calibration.csv's rows for one model's flags on 2 runs
        [
            ("beats_clock (model)", "random_walk", 2, 0.10, 0.08, 0.12),
            ("beats_clock (model)", "decel_iid", 2, 0.20, 0.18, 0.23),
            ("beats_scale (model)", "random_walk", 2, 0.30, 0.27, 0.33),
        ],
        columns=["test", "scenario", "seeds", "rate", "mc_low", "mc_high"],
    ).assign(measures="false-positive rate")
    lines = clock_findings(pd.DataFrame(rows), calibration)
    assert lines[0].startswith(
        "- `train_loss`: 1 of 2 topological features beat the clock: `np_mean`; 0 beat the scale "
        f"(expected under the null: `beats_clock` ≈ {2 * 0.20:.1f} = 2 × 0.200: the calibrated "
        "false-positive rate, 2 seeds, worst null `decel_iid`"
    )
    assert f"; `beats_scale` ≈ {2 * 0.30:.1f} = 2 × 0.300: " in lines[0]
    assert lines[1].startswith("- `val_loss` is a monotone function of the step")
    uncalibrated = clock_findings(pd.DataFrame(rows))[0]  # the docs give the pooled flags only
    assert "`beats_clock`: no calibrated false-positive rate for one model's flag on 2 runs" in (
        uncalibrated
    )
    assert clock_findings(pd.DataFrame()) == []


def test_unreadable_checkpoint_of_a_run_names_the_file_and_writes_nothing(tmp_path):
    from run_fixtures import tiny_model

    from topotrain.jobs.runs import run_layers_job, run_weight_topology_job

    for step in (0, 10):
        tiny_model("llama", seed=step).save_pretrained(tmp_path / f"step-{step}")
    files = [str(tmp_path / f"step-{s}" / "model.safetensors") for s in (0, 10)]
    options = {
        "layers": [],
        "transposed": [],
        "include_embeddings": False,
        "include_head": False,
        "config": None,
    }
    run_layers_job([files[0]], options, "r", str(tmp_path / "layers.json"))
    data = open(files[1], "rb").read()
    with open(files[1], "wb") as fh:
        fh.write(data[: len(data) // 2])  # cut short
    out = {"record": str(tmp_path / "step10.json"), "diagrams": str(tmp_path / "step10.npz")}
    params = {"step": 10, "topology": {"max_points": 20, "seed": 0, "maxdim": 1}}
    with pytest.raises(ValueError, match=rf"cannot read weights {files[1]}"):
        run_weight_topology_job([files[1]], str(tmp_path / "layers.json"), params, out)
    assert not any(tmp_path.glob("step10.*")) and not list(tmp_path.glob(".*.tmp"))
    run_weight_topology_job(
        [files[0]],
        str(tmp_path / "layers.json"),
        {**params, "step": 0},
        {k: v.replace("step10", "step0") for k, v in out.items()},
    )
    record = json.loads((tmp_path / "step0.json").read_text())
    assert len(record["layers"]) == 14 and record["step"] == 0
    digest = hashlib.sha256(open(files[0], "rb").read()).hexdigest()
    assert record["sha256"] == {"model.safetensors": digest}


def test_gone_steps_are_records_with_diagrams_whose_checkpoint_is_not_listed(tmp_path):
    for name in ("step_0.json", "step_0.npz", "step_5.json", "step_10.json", "step_10.npz"):
        touch(tmp_path / name)
    touch(tmp_path / "step_20.npz")
    assert gone_steps(tmp_path, [10]) == [0]  # step 5 lacks its diagrams, 20 its record
    assert gone_steps(tmp_path, []) == [0, 10]
    assert gone_steps(tmp_path / "absent", [1]) == []


def test_run_losses_are_given_else_a_local_runs_newest_trainer_state(tmp_path):
    old, new = touch(tmp_path / "checkpoint-10/model.safetensors"), tmp_path / "checkpoint-20"
    touch(new / "model.safetensors")
    state = touch(new / "trainer_state.json", "{}")
    touch(old.parent / "trainer_state.json", "{}")
    listed = {10: Checkpoint(10, "a", (str(old),)), 20: Checkpoint(20, "b", (str(new / "x"),))}
    assert run_losses({"path": "p", "losses": "l.csv"}, listed) == ("l.csv", False)
    assert run_losses({"path": "p"}, listed) == (str(state), True)
    assert run_losses({"hub": "a/b", "revisions": ["step1"]}, {}) == (None, False)
    assert run_losses({"path": "p"}, {10: Checkpoint(10, "a")}) == (None, False)


def test_listed_runs_leave_patterns_to_their_job_and_name_a_run_that_cannot_be_listed(tmp_path):
    touch(tmp_path / "run/checkpoint-5/model.safetensors")
    entries = {
        "mine": {"path": str(tmp_path / "run")},
        "theirs": {"hub": "a/b", "revisions": ["step3"]},
        "branches": {"hub": "a/b", "revision_pattern": r"step\d+"},
    }
    listed = listed_runs(entries)
    assert set(listed) == {"mine", "theirs"}
    assert list(listed["mine"]) == [5] and listed["theirs"][3].revision == "step3"
    with pytest.raises(ConfigError, match="runs.empty"):
        listed_runs({"empty": {"path": str(tmp_path / "nothing"), "glob": "x-*"}})
