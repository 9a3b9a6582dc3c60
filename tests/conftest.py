"""Shared fixtures: the tiny study (.test/config/config.yaml, its corpus written where a test
wants it), random tokens, and running the Snakefile on them."""

from __future__ import annotations

import copy
import functools
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TEST_STUDY = ROOT / ".test" / "config" / "config.yaml"  # the tiny study, as CI runs it
SENTENCES = [
    "the cat sat on the mat . ",
    "a dog ran in the park and the cat ran after it . ",
    "topology of weights may track the loss of a model . ",
    "small models learn the common letters first . ",
]


def write_corpus(directory: Path, n_chars: int = 20_000, seed: int = 0) -> tuple[Path, Path]:
    """A small English-like corpus: seeded shuffles of SENTENCES, train.txt (``n_chars``) and
    valid.txt (a quarter) in ``directory``; the defaults give .test/data/'s files."""
    rng = random.Random(seed)
    paths = []
    for name, size in (("train.txt", n_chars), ("valid.txt", n_chars // 4)):
        text = ""
        while len(text) < size:
            text += rng.choice(SENTENCES)
        path = directory / name
        path.write_text(text + "\n", encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


@functools.cache
def _test_study() -> dict:
    return yaml.safe_load(TEST_STUDY.read_text(encoding="utf-8"))


def tiny_config(train: Path, valid: Path) -> dict:
    """The tiny study's config (two tiny models, 40 steps, a checkpoint every 10, context 32), a
    fresh copy, reading its corpus from ``train`` and ``valid``."""
    config = copy.deepcopy(_test_study())
    config["corpus"].update(train=str(train), validation=str(valid))
    return config


def write_random_tokens(directory: Path) -> tuple[Path, Path]:
    """Random character codes, seeded: train.bin (3000 tokens) and val.bin
    (800) in ``directory``."""
    rng = np.random.default_rng(0)
    rng.integers(0, 128, 3000, dtype=np.uint8).tofile(directory / "train.bin")
    rng.integers(0, 128, 800, dtype=np.uint8).tofile(directory / "val.bin")
    return directory / "train.bin", directory / "val.bin"


def run_snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 1500):
    """Run the repository's Snakefile in ``workdir``; returns the CompletedProcess (a run past
    ``timeout`` seconds fails: CI's 2 cores run the long workflow tests one after another)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [*SNAKEMAKE, "--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def planned_counts(workdir: Path, *args: str) -> dict[str, int]:
    """Jobs per rule that ``snakemake -n`` would run in ``workdir``, from its job-stats table."""
    proc = run_snakemake(workdir, "-n", "--cores", "1", *args)
    text = proc.stdout + proc.stderr
    if "Job stats:" not in text:
        assert "Nothing to be done" in text, text
        return {}
    rows = [line.split() for line in text.split("Job stats:")[-1].splitlines()[3:]]
    return {
        row[0]: int(row[-1])
        for row in rows
        if len(row) == 2 and row[-1].isdigit() and row[0] != "total"
    }


@pytest.fixture
def tiny_workdir(tmp_path: Path) -> Path:
    """A working directory holding a tiny config.yaml and its corpus."""
    train, valid = write_corpus(tmp_path)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(tiny_config(train, valid)))
    return tmp_path


def _unit_comovement_design():
    """Unit fixtures are short runs of a few checkpoints: their co-movement starts at step 0, not
    H after the default warm-up (``analysis.comove_from``); a test of that default sets it."""
    from topotrain.analysis.inference import seed_contrast as sc

    sc.set_horizon(sc.HORIZON_STEPS, 0)


_unit_comovement_design()  # before any fixture, a module-scoped one included


@pytest.fixture(autouse=True)
def _comovement_from_the_first_step():
    """Each test starts, and leaves, the co-movement's design at the unit baseline."""
    _unit_comovement_design()
    yield
    _unit_comovement_design()
