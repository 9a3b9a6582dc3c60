"""The CUDA path, on a real GPU (skipped without one): CUDA against CPU, CUDA graphs against eager
CUDA, a SIGKILLed CUDA run resumed, and bit-identical reruns under ``train.deterministic``; the
ensemble trainer (training.ensemble) on CUDA against its single runs, eager and with CUDA graphs.

Every run is a separate process: deterministic algorithms, the cuBLAS workspace and TF32 are
process-wide settings. The tolerances are stated here and measured in docs/gpu.md,
from benchmarks/cuda_checks.py on the study's models.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import train_config, write_random_tokens

from topotrain.training.model import GPTConfig
from topotrain.training.train import TrainConfig

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

MODEL = GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=32)  # head dim 8
CFG = train_config(200, 50, 16, 20, 2, seed=3, device="cuda", compile="false")
# CUDA trains with TF32 matrix products (10-bit mantissa) against float32 on the CPU: per-step
# losses agree to this relative tolerance over 200 updates (measured: docs/gpu.md).
LOSS_RTOL = 1e-2
TRAIN = """
import json, sys, time
import topotrain.training.train as tr
from topotrain.training.model import GPTConfig
if sys.argv[1] == "slow":  # slow enough to be killed mid-run
    real = tr.train_step
    def slow(*args):
        time.sleep(0.02)
        return real(*args)
    tr.train_step = slow
model, cfg = GPTConfig(**json.loads(sys.argv[2])), tr.TrainConfig(**json.loads(sys.argv[3]))
tr.train_model(model, cfg, *sys.argv[4:8], progress=False)
"""


ENSEMBLE = """
import json, sys
from pathlib import Path
import topotrain.training.train as tr
from topotrain.training.ensemble import train_ensemble
from topotrain.training.model import GPTConfig
model, cfg = GPTConfig(**json.loads(sys.argv[1])), tr.TrainConfig(**json.loads(sys.argv[2]))
seeds, root = json.loads(sys.argv[3]), Path(sys.argv[6])
cfgs = [tr.TrainConfig(**{**json.loads(sys.argv[2]), "seed": s}) for s in seeds]
outs, states = [root / f"out{s}" for s in seeds], [root / f"state{s}" for s in seeds]
train_ensemble(model, cfgs, sys.argv[4], sys.argv[5], outs, states, progress=False)
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    return write_random_tokens(tmp_path_factory.mktemp("corpus"))


def start(root: Path, corpus, cfg: TrainConfig, slow: bool = False) -> subprocess.Popen:
    """A training process for ``cfg`` into root/out, state in root/state."""
    args = [json.dumps(asdict(MODEL)), json.dumps(asdict(cfg))]
    paths = [*map(str, corpus), str(root / "out"), str(root / "state")]
    mode = "slow" if slow else "fast"
    return subprocess.Popen([sys.executable, "-c", TRAIN, mode, *args, *paths])


def train(root: Path, corpus, cfg: TrainConfig = CFG) -> Path:
    """Train ``cfg`` to completion in its own process; returns root/out."""
    assert start(root, corpus, cfg).wait() == 0
    return root / "out"


@pytest.fixture(scope="module")
def cuda_run(tmp_path_factory, corpus) -> Path:
    """An uninterrupted eager CUDA run of CFG (deterministic, the default)."""
    return train(tmp_path_factory.mktemp("cuda"), corpus)


def losses(out: Path) -> tuple[np.ndarray, np.ndarray]:
    """Per-step training losses and per-checkpoint validation losses of a finished run."""
    return (
        pd.read_csv(out / "metrics.csv")["train_loss"].to_numpy(),
        pd.read_csv(out / "evals.csv")["val_loss"].to_numpy(),
    )


def assert_close_losses(out: Path, ref: Path, rtol: float = LOSS_RTOL) -> None:
    (train_a, val_a), (train_b, val_b) = losses(out), losses(ref)
    assert len(train_a) == CFG.steps and len(val_a) == CFG.steps // CFG.checkpoint_interval + 1
    assert np.isfinite(train_a).all() and np.isfinite(val_a).all()
    assert np.max(np.abs(train_a - train_b) / train_b) <= rtol
    assert np.max(np.abs(val_a - val_b) / val_b) <= rtol


def assert_same_outputs(out: Path, ref: Path) -> None:
    names = sorted(p.name for p in ref.iterdir())
    assert sorted(p.name for p in out.iterdir()) == names
    for name in names:
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name


def test_cuda_training_matches_cpu_within_tolerance(tmp_path, corpus, cuda_run):
    cpu = train(tmp_path, corpus, replace(CFG, device="cpu"))
    assert_close_losses(cuda_run, cpu)


def test_cuda_graphs_match_eager_cuda(tmp_path, corpus, cuda_run):
    compiled = train(tmp_path, corpus, replace(CFG, compile="true"))
    assert_close_losses(compiled, cuda_run)


def test_deterministic_cuda_reruns_are_bit_identical(tmp_path, corpus, cuda_run):
    assert_same_outputs(train(tmp_path, corpus), cuda_run)


def test_sigkilled_cuda_run_resumes_bit_identical(tmp_path, corpus, cuda_run):
    proc, state = start(tmp_path, corpus, CFG, slow=True), tmp_path / "state"
    deadline = time.monotonic() + 120
    while not (state / "step_00100.safetensors").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "training ended too soon"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert not (tmp_path / "out" / "metrics.csv").exists() and (state / "resume.pt").exists()
    assert_same_outputs(train(tmp_path, corpus), cuda_run)


def train_members(root: Path, corpus, seeds=(3, 4), cfg: TrainConfig = CFG) -> dict[int, Path]:
    """Train the ensemble of ``seeds`` (``cfg`` but for the seed) in its own process."""
    args = [json.dumps(asdict(MODEL)), json.dumps(asdict(cfg)), json.dumps(list(seeds))]
    proc = subprocess.run([sys.executable, "-c", ENSEMBLE, *args, *map(str, corpus), str(root)])
    assert proc.returncode == 0
    return {s: root / f"out{s}" for s in seeds}


@pytest.fixture(scope="module")
def cuda_members(tmp_path_factory, corpus) -> dict[int, Path]:
    """An eager deterministic CUDA ensemble of seeds 3 (CFG's) and 4."""
    return train_members(tmp_path_factory.mktemp("members"), corpus)


def test_cuda_ensemble_member_matches_its_single_run(cuda_members, cuda_run):
    assert_close_losses(cuda_members[3], cuda_run)


def test_cuda_graphs_ensemble_matches_the_eager_ensemble(tmp_path, corpus, cuda_members):
    compiled = train_members(tmp_path, corpus, cfg=replace(CFG, compile="true"))
    for seed in (3, 4):
        assert_close_losses(compiled[seed], cuda_members[seed])


def test_deterministic_cuda_ensemble_is_bit_identical_whatever_the_other_seed(
    tmp_path, corpus, cuda_members
):
    rerun = train_members(tmp_path / "rerun", corpus)
    other = train_members(tmp_path / "other", corpus, seeds=(3, 9))
    for seed in (3, 4):
        assert_same_outputs(rerun[seed], cuda_members[seed])
    assert_same_outputs(other[3], cuda_members[3])
