"""A Trainer folder whose rotation removed saves, analysed by the workflow: the run's section of
REPORT.md, its analysis log and the terminal say which; a folder without trainer_state.json says
nothing."""

from __future__ import annotations

import shutil

import pytest
import yaml
from conftest import run_snakemake, tiny_config, write_corpus
from run_fixtures import saved_series, trainer_run

NOTE = (
    "rotation removed 3 earlier saves (steps 10, 20, 30): checkpoint-60/trainer_state.json "
    "(save_steps 10, global_step 60) implies 6; the analysis covers steps 40 … 60"
)


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_a_rotated_trainer_folder_gets_its_note_in_the_report_and_the_log(tmp_path):
    trainer_run(tmp_path / "trainer", steps=60, save_steps=10)
    for step in (10, 20, 30):  # what save_total_limit=3 leaves (test_rotation: the Trainer's own)
        shutil.rmtree(tmp_path / f"trainer/checkpoint-{step}")
    saved_series(tmp_path / "neox", "gpt_neox", steps=(0, 10, 20))
    config = tiny_config(*write_corpus(tmp_path))
    config["spine"] = {"enabled": False}
    config["analysis"]["bootstrap_resamples"] = 100
    config["runs"] = {"rotated": {"path": "trainer"}, "plain": {"path": "neox", "glob": "step-*"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(tmp_path, "--cores", "2")
    assert f"runs.rotated: {NOTE}\n" in proc.stderr  # the terminal, at the workflow's start
    assert "runs.plain:" not in proc.stderr
    report = (tmp_path / "results/REPORT.md").read_text()
    rotated, plain = report.split("## Run `rotated`")[1], report.split("## Run `plain`")[1]
    assert f"- note: {NOTE}\n" in rotated.split("## Run")[0]
    assert "3 checkpoints, steps 40 … 60" in rotated
    assert "rotation" not in plain.split("## Run")[0]
    log = (tmp_path / "results/logs/runs/rotated/analysis.log").read_text()
    assert f"INFO topotrain.jobs: runs.rotated: {NOTE}" in log
