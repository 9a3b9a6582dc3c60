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
PAPER = ROOT / "workflow" / "data" / "paper_values.csv"
MODELS = {  # the paper's five models → their parameter counts
    "tiny-3k": 3_000,
    "small-7k": 7_000,
    "med-21k": 21_000,
    "large-46k": 46_000,
    "xl-97k": 97_000,
}
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


def paper_study(columns, seeds: int, n: int, models: dict = MODELS):
    """A hand-built feature table: models × seeds runs (model by model, then seed by seed) of
    ``n`` checkpoints at steps 0, 100, …; each run's rows hold model, seed, n_params, step, then
    the columns ``columns(model, seed, step)`` returns, in their order."""
    import pandas as pd

    step = np.arange(n) * 100
    runs = [(model, size, seed) for model, size in models.items() for seed in range(seeds)]
    frames = [
        pd.DataFrame({"model": m, "seed": s, "n_params": size, "step": step, **columns(m, s, step)})
        for m, size, s in runs
    ]
    return pd.concat(frames, ignore_index=True)


def train_config(steps: int, every: int, batch: int, warmup: int, evals: int, seed: int, **kw):
    """A test run's TrainConfig: a checkpoint every ``every`` steps, ``evals`` validation batches
    of the training batch size ``batch``; ``kw``: the other fields."""
    from topotrain.training.train import TrainConfig

    sizes = dict(batch_size=batch, eval_batches=evals, eval_batch_size=batch)
    return TrainConfig(
        steps=steps, checkpoint_interval=every, warmup_steps=warmup, seed=seed, **sizes, **kw
    )


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


def unit_comove_params() -> dict:
    """The unit baseline as the co-movement params a rule hands its job (COMOVE_PARAMS in
    workflow/rules/common.smk): H at its default, moves from step 0 — unit fixtures are short
    runs of a few checkpoints, so their co-movement starts at step 0, not H after the default
    warm-up (``analysis.comove_from``); a test of that default sets it."""
    from topotrain.analysis.inference import seed_contrast as sc

    return {"horizon": sc.HORIZON_STEPS, "comove_from": 0, "warmup_steps": 0}


def _unit_comovement_design():
    """This process's co-movement design set to the unit baseline, as a job sets its rule's."""
    from topotrain.jobs.common import comove_design

    comove_design(unit_comove_params())


_unit_comovement_design()  # before any fixture, a module-scoped one included


@pytest.fixture(autouse=True)
def _comovement_from_the_first_step():
    """Each test starts, and leaves, the co-movement's design at the unit baseline."""
    _unit_comovement_design()
    yield
    _unit_comovement_design()
