"""The `topotrain` command from a built wheel, in a folder outside the repository.

The wheel is built from a copy of the tracked files and installed with --no-deps into a fresh
venv whose other packages are this environment's (linked, minus topotrain's editable install), so
only the wheel can provide topotrain and its bundled workflow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pandas as pd
import pytest
import yaml
from run_fixtures import trainer_run

ROOT = Path(__file__).resolve().parents[1]


def sh(cmd: list[str], cwd: Path, check: bool = True, **env) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env={**os.environ, **env}
    )
    if check and proc.returncode:
        raise AssertionError(f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def topotrain_bin(tmp_path_factory) -> Path:
    """The console script of a venv holding only the built wheel of this checkout."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    files = sh(["git", "ls-files", "-co", "--exclude-standard"], ROOT).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    sh(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            ".",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp / "dist"),
            "-q",
        ],
        src,
    )
    wheel = next((tmp / "dist").glob("topotrain-*.whl"))
    venv = tmp / "venv"
    sh([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp)
    site = Path(sysconfig.get_paths()["purelib"])
    target = next((venv / "lib").glob("python*/site-packages"))
    for entry in site.iterdir():
        skip = entry.name.startswith(("topotrain", "__editable__", "_topotrain"))
        if not skip and not (target / entry.name).exists():
            (target / entry.name).symlink_to(entry)
    sh(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        tmp,
    )
    return venv / "bin" / "topotrain"


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_init_analyse_and_run_from_a_folder_outside_the_repository(topotrain_bin, tmp_path):
    here = tmp_path / "work"
    run = trainer_run(tmp_path / "trainer-out", steps=40, save_steps=10)
    init = sh([str(topotrain_bin), "init", str(tmp_path / "fresh")], tmp_path)
    default = yaml.safe_load((tmp_path / "fresh" / "config.yaml").read_text())
    assert default == yaml.safe_load((ROOT / "config.yaml").read_text()), init.stdout
    here.mkdir()
    out = sh([str(topotrain_bin), "analyse", str(run), "--cores", "2"], here, PYTHONPATH="")
    assert "wrote" in out.stdout
    config = yaml.safe_load((here / "config.yaml").read_text())
    assert config["runs"] == {"trainer-out": {"path": str(run.resolve())}}
    features = pd.read_parquet(here / "results" / "runs" / "trainer-out" / "features.parquet")
    assert features["step"].tolist() == [10, 20, 30, 40]
    assert features["val_loss"].notna().all()  # from checkpoint-40/trainer_state.json, unasked
    report = (here / "results" / "REPORT.md").read_text()
    assert "## Run `trainer-out`" in report and "checkpoint-40/trainer_state.json" in report
    assert "found: the newest checkpoint's trainer_state.json" in report
    again = sh([str(topotrain_bin), "run", "-n"], here)
    assert "Nothing to be done" in again.stdout + again.stderr
    module = sh(
        [
            str(topotrain_bin.parent / "python"),
            "-c",
            "import topotrain.cli as c; print(c.workflow_dir())",
        ],
        here,
    )
    assert "_workflow" in module.stdout  # the wheel's bundle, not the checkout


def test_a_failed_job_prints_its_error_in_the_terminal(topotrain_bin, tmp_path):
    """A truncated checkpoint: `topotrain analyse` fails, and its output holds the job's error
    itself (the log's content), not only the log's path."""
    run = trainer_run(tmp_path / "run", steps=10, save_steps=10)
    weights = run / "checkpoint-10" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    here = tmp_path / "work"
    here.mkdir()
    out = sh([str(topotrain_bin), "analyse", str(run)], here, check=False)
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert f"cannot read weights {weights}" in text and "invalid header length" in text


def test_bad_run_names_and_missing_paths_get_plain_errors(tmp_path, monkeypatch, capsys):
    from topotrain import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "run a").mkdir()
    with pytest.raises(SystemExit) as err:
        cli.analyse_config(
            [str(tmp_path / "run a")], ["run a"], losses=None, revisions=None, glob=None
        )
    assert err.value.code == 2 and "no spaces or slashes" in capsys.readouterr().err
    assert cli.run_name(str(tmp_path / "run a")) == "run-a"
    with pytest.raises(SystemExit):
        cli.analyse_config(["nowhere"], None, losses=None, revisions=None, glob=None)
    assert "no such folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.analyse_config(["EleutherAI/pythia-14m"], None, losses=None, revisions=None, glob=None)
    assert "needs --revisions" in capsys.readouterr().err
    hub = cli.analyse_config(
        ["EleutherAI/pythia-14m"], None, losses=None, revisions=["step0"], glob=None
    )
    assert hub["runs"] == {"pythia-14m": {"hub": "EleutherAI/pythia-14m", "revisions": ["step0"]}}
