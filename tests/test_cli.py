"""`topotrain analyse`'s flags reach every key of a runs: entry (and groups:), its errors are
plain, and a run's no-architecture error names those flags when analyse started the workflow."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml
from safetensors.numpy import save_file
from snakemake.utils import validate

from topotrain import cli
from topotrain.cli_errors import CLI_ENV
from topotrain.config import SCHEMA, check_config, fill_defaults
from topotrain.sources.runs import RunError, layer_map

OFF = {"spine": {"enabled": False}, "pythia": {"enabled": False}}


def folders(tmp_path, *names):
    for name in names:
        (tmp_path / name).mkdir()
    return [str(tmp_path / name) for name in names]


def valid(overlay: dict, tmp_path) -> dict:
    """The overlay as the workflow reads it: defaults filled, the schema and the checks passed."""
    config = fill_defaults(copy.deepcopy(overlay))
    validate(config, schema=str(SCHEMA), set_default=True)
    check_config(config, base_dir=tmp_path)
    return config


def refused(capsys, *args, **kwargs) -> str:
    """The message analyse_config stops with (status 2)."""
    with pytest.raises(SystemExit) as err:
        cli.analyse_config(*args, **kwargs)
    assert err.value.code == 2
    return capsys.readouterr().err


def test_group_seeds_and_primary_become_entry_keys_and_groups(tmp_path):
    paths = folders(tmp_path, "a", "b", "c")
    primary = ["weight_entropy", "h0_total:+", "ww_alpha:-"]
    overlay = cli.analyse_config(paths, None, group="recipe", seeds=[3, 1, 2], primary=primary)
    assert overlay == {
        **OFF,
        "runs": {
            name: {"path": path, "group": "recipe", "seed": seed}
            for name, path, seed in zip("abc", paths, [3, 1, 2], strict=True)
        },
        "groups": {
            "recipe": {
                "primary": [
                    "weight_entropy",
                    {"feature": "h0_total", "sign": 1},
                    {"feature": "ww_alpha", "sign": -1},
                ]
            }
        },
    }
    assert (
        valid(overlay, tmp_path)["groups"]["recipe"]["primary"]
        == overlay["groups"]["recipe"]["primary"]
    )


def test_group_without_seeds_reads_them_from_the_run_names(tmp_path):
    paths = folders(tmp_path, "pythia-14m-seed3", "pythia-14m-seed12", "other")
    overlay = cli.analyse_config(paths, ["p-seed3", "p-seed12", "run_SEED_4"], group="g")
    assert {n: e["seed"] for n, e in overlay["runs"].items()} == {
        "p-seed3": 3,
        "p-seed12": 12,
        "run_SEED_4": 4,
    }
    assert "groups" not in overlay  # no --primary: every feature exploratory
    valid(overlay, tmp_path)


def test_group_seed_and_primary_errors_name_the_flags_and_counts(tmp_path, capsys):
    paths = folders(tmp_path, "x-seed1", "y")
    message = refused(capsys, paths, None, group="g")
    assert "['y'] hold no seed<digits>" in message and "pass --seed" in message
    assert "one integer per PATH (2)" in message
    assert "2 PATHs but 3 --seed values" in refused(capsys, paths, None, group="g", seeds=[1, 2, 3])
    assert "--seed needs --group" in refused(capsys, paths, None, seeds=[1, 2])
    assert "--primary needs --group" in refused(capsys, paths, None, primary=["f"])
    assert "group name 'a b'" in refused(capsys, paths, None, group="a b", seeds=[1, 2])
    message = refused(capsys, paths, None, group="g", seeds=[1, 2], primary=["f:up"])
    assert "--primary f:up: give FEATURE (two-sided), FEATURE:+ or FEATURE:-" in message
    assert "--primary :+" in refused(capsys, paths, None, group="g", seeds=[1, 2], primary=[":+"])


def test_layers_transposed_and_config_go_to_every_entry(tmp_path, monkeypatch):
    paths = folders(tmp_path, "a", "b")
    (tmp_path / "base.json").write_text('{"model_type": "gpt2"}')
    monkeypatch.chdir(tmp_path)
    overlay = cli.analyse_config(
        paths,
        None,
        layers=["*lora_B.weight", "*c_fc*"],
        transposed=["*c_fc*"],
        config="base.json",  # relative: written absolute
    )
    for name, path in zip("ab", paths, strict=True):
        assert overlay["runs"][name] == {
            "path": path,
            "layers": ["*lora_B.weight", "*c_fc*"],
            "transposed": ["*c_fc*"],
            "config": str(tmp_path / "base.json"),
        }
    valid(overlay, tmp_path)


def test_a_config_that_is_not_there_or_is_snakemakes_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = folders(tmp_path, "a")
    message = refused(capsys, paths, None, config="nowhere.json")
    assert "--config nowhere.json: no such file (the architecture's config.json)" in message
    message = refused(capsys, paths, None, config="spine={enabled: true}")
    assert "Snakemake's --config cannot be passed through analyse" in message


def test_losses_one_for_all_or_one_each(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = folders(tmp_path, "a", "b")
    for name in ("l.csv", "la.csv", "lb.csv"):
        (tmp_path / name).write_text("step,loss\n0,1.0\n")
    shared = cli.analyse_config(paths, None, losses=["l.csv"])
    assert {e["losses"] for e in shared["runs"].values()} == {str(tmp_path / "l.csv")}
    assert cli.analyse_config(paths, None, losses="l.csv") == shared  # as before: one string
    each = cli.analyse_config(paths, None, losses=["la.csv", "lb.csv"])
    assert [e["losses"] for e in each["runs"].values()] == [
        str(tmp_path / "la.csv"),
        str(tmp_path / "lb.csv"),
    ]
    valid(each, tmp_path)
    message = refused(capsys, paths, None, losses=["la.csv", "lb.csv", "l.csv"])
    assert "2 PATHs but 3 --losses values: give one for all, or one each" in message
    assert "1 PATHs but 2 --losses" in refused(capsys, paths[:1], None, losses=["la.csv", "l.csv"])


def test_the_command_line_writes_the_config_and_marks_the_workflow_as_analyses(
    tmp_path, monkeypatch
):
    """main() parses every flag into config.yaml and hands Snakemake TOPOTRAIN_CLI=analyse and
    the options it does not know."""
    paths = folders(tmp_path, "m-seed1", "m-seed2")
    (tmp_path / "base.json").write_text("{}")
    calls = []
    monkeypatch.setattr(
        cli, "run", lambda cores, args, env=None, plain=False: calls.append((args, env)) or 0
    )
    monkeypatch.chdir(tmp_path)
    argv = [*paths, "--group", "m", "--primary", "h0_total:-", "--layers", "*q*", "--cores", "2"]
    assert cli.main(["analyse", *argv, "--config", "base.json", "-n"]) == 0
    written = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert written["runs"]["m-seed2"] == {
        "path": paths[1],
        "config": str(tmp_path / "base.json"),
        "layers": ["*q*"],
        "group": "m",
        "seed": 2,
    }
    assert written["groups"] == {"m": {"primary": [{"feature": "h0_total", "sign": -1}]}}
    ((args, env),) = calls
    assert args == ["-n"] and env[CLI_ENV] == "analyse"


def adapter_series(root, steps=(10, 20, 30), rank=16):
    """A PEFT LoRA adapter's checkpoints (adapter_config.json, lora_A/lora_B factors, no
    config.json), the factors different at each step."""
    rng = np.random.default_rng(0)
    for step in steps:
        folder = root / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        tensors = {}
        for block in range(2):
            base = f"base_model.model.transformer.h.{block}.attn.c_attn"
            tensors[f"{base}.lora_A.weight"] = rng.normal(size=(rank, 32)).astype(np.float32)
            tensors[f"{base}.lora_B.weight"] = rng.normal(size=(96, rank)).astype(np.float32)
        save_file(tensors, str(folder / "adapter_model.safetensors"))
        (folder / "adapter_config.json").write_text(f'{{"peft_type": "LORA", "r": {rank}}}')
    return root


def test_no_architecture_names_the_flags_under_analyse_and_the_keys_otherwise(
    tmp_path, monkeypatch
):
    files = [
        str(
            adapter_series(tmp_path / "a", steps=(10,))
            / "checkpoint-10"
            / "adapter_model.safetensors"
        )
    ]
    options = {"layers": [], "transposed": [], "include_embeddings": False, "include_head": False}
    monkeypatch.delenv(CLI_ENV, raising=False)
    with pytest.raises(RunError) as keys:
        layer_map(options, files, None, "runs.a")
    assert "give the run a `config:`" in str(keys.value) and "--layers" not in str(keys.value)
    monkeypatch.setenv(CLI_ENV, "analyse")
    with pytest.raises(RunError) as flags:
        layer_map(options, files, None, "runs.a")
    text = str(flags.value)
    assert "pass --config FILE (the architecture's config.json) or --layers PATTERN" in text
    assert "to topotrain analyse" in text and "`config:`" not in text
    assert "LoRA/PEFT adapter: --layers '*lora_B.weight'" in text


def analyse(cwd, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != CLI_ENV}
    cmd = [sys.executable, "-m", "topotrain.cli", "analyse", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_an_adapter_analysed_without_layers_fails_naming_the_flag_then_runs_with_it(tmp_path):
    adapter = adapter_series(tmp_path / "adapter")
    work = tmp_path / "work"
    work.mkdir()
    failed = analyse(work, str(adapter))
    assert failed.returncode != 0
    cause = next(line for line in failed.stderr.splitlines() if line.startswith("topotrain: "))
    assert cause.startswith("topotrain: RunError: runs.adapter")
    assert "--layers '*lora_B.weight'" in cause and "to topotrain analyse" in cause
    assert cause.endswith("(log: results/logs/runs/adapter/layers.log)")
    done = analyse(work, str(adapter), "--layers", "*lora_B.weight", "--force", "--cores", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    layers = yaml.safe_load((work / "results" / "runs" / "adapter" / "layers.json").read_text())
    assert [m["name"].split(".")[-2] for m in layers["layers"]] == ["lora_B", "lora_B"]
    assert (work / "results" / "runs" / "adapter" / "features.parquet").is_file()


@pytest.mark.parametrize("own", [True, False], ids=["demo.yaml", "config.yaml"])
def test_demo_copies_its_corpus_runs_its_config_then_the_report(tmp_path, monkeypatch, own):
    """The demo's own config (.test/config/demo.yaml) when there is one, else the test study's;
    --plain reaches the report's run too."""
    source = tmp_path / "workflow" / ".test"
    (source / "config").mkdir(parents=True)
    (source / "data").mkdir()
    for name in ("train.txt", "valid.txt"):
        (source / "data" / name).write_text(f"{name}\n")
    (source / "config" / "config.yaml").write_text("seeds: [42]\n")
    if own:
        (source / "config" / "demo.yaml").write_text("seeds: [42, 43]\n")
    monkeypatch.setattr(cli, "workflow_dir", lambda: tmp_path / "workflow")
    calls = []

    def fake_run(cores, args, directory, plain=False):
        calls.append((cores, args, plain))
        if "--report" in args:  # Snakemake's zip form: report/report.html and its data
            zip_path = Path(directory) / args[args.index("--report") + 1]
            zip_path.parent.mkdir(parents=True, exist_ok=True)
            with zipfile.ZipFile(zip_path, "w") as zf:
                zf.writestr("report/report.html", "<html>bottom line</html>")
        return 0

    monkeypatch.setattr(cli, "run", fake_run)
    (tmp_path / "d" / "results" / "report").mkdir(parents=True)
    (tmp_path / "d" / "results" / "report" / "stale.png").write_text("an earlier report's")
    assert cli.main(["demo", str(tmp_path / "d"), "--cores", "3", "--plain", "-n"]) == 0
    for name in ("train.txt", "valid.txt"):
        copied = tmp_path / "d" / ".test" / "data" / name
        assert copied.read_text() == f"{name}\n"
    used = source / "config" / ("demo.yaml" if own else "config.yaml")
    config = ["--configfile", str(used), "--replace-workflow-config"]
    assert calls == [
        (3, [*config, "-n"], True),
        (1, [*config, "--report", "results/report.zip"], True),
    ]
    unpacked = tmp_path / "d" / "results" / "report"  # the zip unpacked, the earlier one gone
    assert [p.name for p in unpacked.iterdir()] == ["report.html"]
    assert (unpacked / "report.html").read_text() == "<html>bottom line</html>"


def test_the_checkout_and_the_wheel_hold_a_demo_config():
    assert cli.demo_config(cli.workflow_dir() / ".test").name in cli.DEMO_CONFIGS
