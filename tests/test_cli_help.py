"""The command line a new user meets: `topotrain --version`, every default in each command's help,
--cores the cores this process may use in every command, descriptions in plain text, --verbose
passed to Snakemake, and a refused config in at most three lines naming its key."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest
from conftest import run_snakemake

import topotrain
from topotrain import cli

COMMANDS = ("init", "run", "analyse", "report", "demo")
NOTHING_TO_SHOW = {"help", "paths", "revisions"}  # required, or needed only with a hub id


def machine_cores() -> int:
    """The cores this process may use, as the test computes them."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def help_text(capsys, *argv: str) -> str:
    """What ``topotrain ARGV --help`` prints, its whitespace (argparse's wrapping) as spaces."""
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def command_parser(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in cli.parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def test_version_prints_the_packages_version(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == topotrain.__version__


@pytest.mark.parametrize("command", COMMANDS)
def test_each_commands_help_shows_every_default(command, capsys):
    text = help_text(capsys, command)
    for action in command_parser(command)._actions:
        if action.dest in NOTHING_TO_SHOW or isinstance(action, argparse._StoreTrueAction):
            continue
        if action.default is None:  # left out: the help says what that means
            assert "(default: " in action.help, f"{command} {action.option_strings}"
        else:
            assert f"(default: {action.default}" in text, f"{command} {action.option_strings}"


@pytest.mark.parametrize("command", ["run", "analyse", "demo"])
def test_cores_default_to_this_machines_in_every_command_that_runs(command, capsys, monkeypatch):
    text = help_text(capsys, command)
    line = "--cores N cores Snakemake may use at once, jobs × their threads (default: {},"
    assert line.format(machine_cores()) in text
    got = {}
    monkeypatch.setattr(cli, "run", lambda cores, args, plain=False: got.update(cores=cores))
    monkeypatch.setattr(
        cli, "analyse", lambda paths, names, cores, *a, **k: got.update(cores=cores)
    )
    monkeypatch.setattr(cli, "demo", lambda directory, cores, *a: got.update(cores=cores))
    cli.main([command, *(["checkpoints"] if command == "analyse" else []), "-n"])
    assert got == {"cores": machine_cores()}


def test_descriptions_are_plain_text(capsys):
    for argv in ([], *([c] for c in COMMANDS)):
        text = help_text(capsys, *argv)
        assert "``" not in text, argv
    assert "The topotrain command: the workflow from any folder." in help_text(capsys)


def test_verbose_and_unknown_options_go_to_snakemake(monkeypatch):
    calls = []
    monkeypatch.setattr(cli, "run", lambda cores, args, plain=False: calls.append(args) or 0)
    assert cli.main(["run", "--verbose", "-n", "--until", "train_model"]) == 0
    assert cli.main(["run", "-n"]) == 0
    assert calls == [["-n", "--until", "train_model", "--verbose"], ["-n"]]


def topotrain_run(workdir, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TOPOTRAIN_CLI"}
    cmd = [sys.executable, "-m", "topotrain.cli", "run", *args]
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=300, env=env)


def said(proc: subprocess.CompletedProcess) -> list[str]:
    """The lines a command printed, the `running: snakemake …` line aside."""
    lines = (proc.stdout + proc.stderr).splitlines()
    return [line for line in lines if line.strip() and not line.startswith("running: ")]


MISTYPED = (
    "trian: Additional properties are not allowed ('trian' was unexpected; did you mean train?)"
)


@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_a_mistyped_key_stops_topotrain_run_in_three_lines_naming_it(tmp_path, dry):
    """A dry run prints Snakemake's three lines (its stdout), a run the filtered two."""
    proc = topotrain_run(tmp_path, *(["-n"] if dry else []), "--config", "trian=1")
    lines = said(proc)
    assert proc.returncode != 0 and 1 <= len(lines) <= 3, lines
    assert any(MISTYPED in line for line in lines), lines
    assert not (tmp_path / "results").exists()


def test_a_mistyped_key_in_config_yaml_stops_snakemake_in_three_lines(tmp_path):
    (tmp_path / "config.yaml").write_text("train:\n  chekpoint_interval: 25\n")
    proc = run_snakemake(tmp_path, "-n", check=False)
    lines = said(proc)
    assert proc.returncode != 0 and len(lines) <= 3, lines
    assert lines[1] == (
        "invalid configuration: train.chekpoint_interval: Additional properties are not allowed "
        "('chekpoint_interval' was unexpected; did you mean train.checkpoint_interval?)"
    )


def test_verbose_prints_snakemakes_report_with_the_schema_and_the_config(tmp_path):
    text = "\n".join(said(topotrain_run(tmp_path, "-n", "--verbose", "--config", "trian=1")))
    assert "Failed validating 'additionalProperties' in schema" in text
    assert "'checkpoint_interval': 25" in text and len(text.splitlines()) > 100
