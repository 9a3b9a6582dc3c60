"""Training: step convention, schedule, validation set, determinism, resume after a crash."""

from __future__ import annotations

import json
import logging
import math
import os
import platform
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
from safetensors import safe_open
from torch.nn import functional as F

import topotrain.training.train as train
from topotrain.devices import resolve_device, wants_ensemble, wants_gpu
from topotrain.training.model import GPTConfig
from topotrain.training.run_state import load_checkpoint
from topotrain.training.train import TrainConfig, lr_at, train_model

MODEL = GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=16)
CFG = train_config(40, 10, 4, 5, 3, seed=7, grad_clip=0.1, device="cpu", threads=1)
STEPS = range(0, CFG.steps + 1, CFG.checkpoint_interval)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> tuple[Path, Path]:
    """Random character codes: 3000 training and 800 validation tokens."""
    return write_random_tokens(tmp_path_factory.mktemp("corpus"))


def run(root: Path, corpus, cfg: TrainConfig = CFG, **kw) -> Path:
    """Train into root/out with state in root/state; returns root/out."""
    train_model(MODEL, cfg, *corpus, root / "out", root / "state", progress=False, **kw)
    return root / "out"


@pytest.fixture(scope="module")
def reference(tmp_path_factory, corpus) -> Path:
    """An uninterrupted run of CFG."""
    root = tmp_path_factory.mktemp("reference")
    out = run(root, corpus)
    assert not (root / "state").exists()  # the state is dropped once outputs are published
    return out


def assert_same_outputs(out: Path, ref: Path) -> None:
    names = sorted(p.name for p in ref.iterdir())
    assert sorted(p.name for p in out.iterdir()) == names
    for name in names:
        assert (out / name).read_bytes() == (ref / name).read_bytes(), name


def batch_offsets(n_tokens: int, shape: tuple, seed: int, draws: int) -> torch.Tensor:
    """The ``draws``-th window starts drawn from a generator seeded ``seed`` (documented scheme)."""
    gen = torch.Generator().manual_seed(seed)
    for _ in range(draws):
        offsets = torch.randint(n_tokens - MODEL.block_size, shape, generator=gen)
    return offsets


def windows(path: Path, offsets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    data = torch.from_numpy(np.fromfile(path, dtype=np.uint8).astype(np.int64))
    rows = torch.stack([data[i : i + MODEL.block_size + 1] for i in offsets.flatten().tolist()])
    return rows[:, :-1], rows[:, 1:]


def test_lr_schedule_matches_closed_form():
    cfg = TrainConfig(steps=110, warmup_steps=10, lr=1.0, checkpoint_interval=10)
    assert lr_at(0, cfg) == pytest.approx(0.1)
    assert lr_at(4, cfg) == pytest.approx(0.5)
    assert lr_at(9, cfg) == pytest.approx(1.0)
    assert lr_at(10, cfg) == pytest.approx(1.0)
    assert lr_at(60, cfg) == pytest.approx(0.1 + 0.45)  # half-way: cos(π/2) = 0
    assert lr_at(35, cfg) == pytest.approx(0.1 + 0.45 * (1 + math.cos(math.pi / 4)))
    assert lr_at(110, cfg) == pytest.approx(0.1)
    no_warmup = replace(cfg, warmup_steps=0, min_lr_ratio=0.0)
    assert lr_at(0, no_warmup) == 1.0 and lr_at(55, no_warmup) == pytest.approx(0.5)


def test_config_rejects_interval_not_dividing_steps():
    with pytest.raises(ValueError, match=r"checkpoint_interval=30.*steps=100"):
        TrainConfig(steps=100, checkpoint_interval=30)
    with pytest.raises(ValueError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(ValueError, match="device"):
        TrainConfig(device="tpu")
    with pytest.raises(
        ValueError, match=r"train\.compile='maybe': must be one of auto, true, false"
    ):
        TrainConfig(compile="maybe")


def test_compile_setting_takes_yaml_booleans():
    assert TrainConfig(compile=True).compile == "true"
    assert TrainConfig(compile=False).compile == "false"
    assert TrainConfig().compile == "auto"


def test_auto_compiles_only_long_runs_on_cuda(monkeypatch):
    probed = []
    monkeypatch.setattr(train, "compile_error", lambda device: probed.append(device.type))
    cpu, cuda, long = torch.device("cpu"), torch.device("cuda"), replace(CFG, steps=5000)
    assert not train.use_compile(long, cpu) and not train.use_compile(CFG, cuda)
    assert not train.use_compile(replace(long, compile="false"), cuda) and probed == []
    assert train.use_compile(long, cuda) and train.use_compile(replace(CFG, compile="true"), cpu)
    assert probed == ["cuda", "cpu"]


def test_auto_device_is_cuda_only_when_torch_sees_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cpu") == "cpu" and resolve_device("cuda") == "cuda"


def test_gpu_is_requested_for_cuda_or_auto_with_an_nvidia_driver(monkeypatch):
    def which(found: str | None):
        monkeypatch.setattr("topotrain.devices.shutil.which", lambda name: found)

    which("/usr/bin/nvidia-smi")
    assert wants_gpu("auto") and wants_gpu("cuda") and not wants_gpu("cpu")
    which(None)
    assert not wants_gpu("auto") and wants_gpu("cuda") and not wants_gpu("cpu")


def test_the_ensemble_is_on_where_training_gets_a_gpu(monkeypatch):
    monkeypatch.setattr("topotrain.devices.shutil.which", lambda name: None)  # no driver here
    assert [wants_ensemble("auto", d) for d in ("auto", "cpu", "cuda")] == [False, False, True]
    assert wants_ensemble(True, "cpu") and wants_ensemble("true", "cpu")
    assert not wants_ensemble(False, "cuda") and not wants_ensemble("false", "cuda")
    with pytest.raises(ValueError, match="train.ensemble: 'yes'"):
        wants_ensemble("yes", "cpu")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_cpu_runs_keep_freed_memory_on_glibc():
    assert train.keep_freed_memory()


def test_tokens_outside_vocabulary_are_rejected(tmp_path, corpus):
    bad = tmp_path / "bad.bin"
    np.full(100, 200, dtype=np.uint8).tofile(bad)
    with pytest.raises(ValueError, match="200"):
        train_model(MODEL, CFG, bad, corpus[1], tmp_path / "out", tmp_path / "state")


def test_checkpoints_every_interval_without_tied_head(reference):
    for step in STEPS:
        path = reference / f"step_{step:05d}.safetensors"
        with safe_open(str(path), framework="pt") as fh:
            meta = fh.metadata()
            numerics = json.loads(meta.pop("numerics"))  # the rest: tests/test_numerics.py
            assert meta == {"step": str(step), "model": json.dumps(asdict(MODEL))}
            assert numerics["device"] == "cpu" and numerics["threads"] == str(CFG.threads)
            assert "lm_head.weight" not in fh.keys()
            assert {fh.get_tensor(k).dtype for k in fh.keys()} == {torch.float32}
        model, loaded_step = load_checkpoint(path)
        assert loaded_step == step and model.lm_head.weight is model.transformer.wte.weight
    assert len(list(reference.glob("*.safetensors"))) == CFG.steps // CFG.checkpoint_interval + 1


def test_metrics_row_t_is_the_pass_of_the_model_after_t_updates(reference, corpus):
    metrics = pd.read_csv(reference / "metrics.csv")
    assert list(metrics.columns) == ["step", "train_loss", "grad_norm", "lr"]
    assert metrics["step"].tolist() == list(range(CFG.steps))
    assert metrics["lr"].tolist() == pytest.approx([lr_at(t, CFG) for t in range(CFG.steps)])
    for step in STEPS[:-1]:
        model, _ = load_checkpoint(reference / f"step_{step:05d}.safetensors")
        x, y = windows(corpus[0], batch_offsets(3000, (CFG.batch_size,), CFG.seed, step + 1))
        loss = F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten())
        loss.backward()
        norm = torch.cat([p.grad.flatten() for p in model.parameters()]).norm().item()
        assert metrics.loc[step, "train_loss"] == pytest.approx(loss.item(), rel=1e-5)
        assert metrics.loc[step, "grad_norm"] == pytest.approx(norm, rel=1e-4)
    assert (metrics["grad_norm"] > CFG.grad_clip).all()  # recorded before clipping


@pytest.fixture(scope="module")
def other_seed(tmp_path_factory, corpus) -> Path:
    """An uninterrupted run of CFG with another seed (its windows: the same as CFG's)."""
    return run(tmp_path_factory.mktemp("other_seed"), corpus, replace(CFG, seed=CFG.seed + 1))


def cross_entropy(out: Path, step: int, x: torch.Tensor, y: torch.Tensor) -> float:
    """Mean cross-entropy of the checkpoint after ``step`` updates on inputs x, targets y."""
    model, _ = load_checkpoint(out / f"step_{step:05d}.safetensors")
    with torch.no_grad():
        return F.cross_entropy(model(x)[0].flatten(0, 1), y.flatten()).item()


def test_val_loss_is_mean_over_one_fixed_window_set_common_to_every_seed(
    reference, other_seed, corpus
):
    """Both seeds' val_loss at every checkpoint is the mean over the windows drawn with
    train.eval_seed (0), not with the run's seed + 1 as before: the windows are common."""
    shape = (CFG.eval_batches, CFG.eval_batch_size)
    x, y = windows(corpus[1], batch_offsets(800, shape, CFG.eval_seed, 1))
    for out in (reference, other_seed):
        evals = pd.read_csv(out / "evals.csv")
        assert list(evals.columns) == ["step", "val_loss", "val_loss_full"]
        assert evals["step"].tolist() == list(STEPS)
        for step, val_loss in zip(evals["step"], evals["val_loss"], strict=True):
            assert val_loss == pytest.approx(cross_entropy(out, step, x, y), rel=1e-5)
        assert evals.loc[0, "val_loss"] == pytest.approx(math.log(128), abs=0.1)
    # the old per-seed windows score the same weights differently: the check above can fail
    old_x, old_y = windows(corpus[1], batch_offsets(800, shape, CFG.seed + 1, 1))
    last = pd.read_csv(reference / "evals.csv")["val_loss"].iloc[-1]
    assert abs(cross_entropy(reference, CFG.steps, old_x, old_y) - last) > 1e-4


def test_eval_windows_depend_on_eval_seed_alone():
    n, T = 800, MODEL.block_size
    windows = train.eval_offsets(n, T, CFG)
    assert windows.shape == (CFG.eval_batches, CFG.eval_batch_size)
    for seed in (0, 8, 43, 10_000):
        assert torch.equal(train.eval_offsets(n, T, replace(CFG, seed=seed)), windows)
    assert torch.equal(windows, batch_offsets(n, windows.shape, CFG.eval_seed, 1))
    assert not torch.equal(train.eval_offsets(n, T, replace(CFG, eval_seed=1)), windows)


def test_full_eval_steps_are_every_kth_checkpoint_and_the_last():
    cfg = TrainConfig(steps=100, checkpoint_interval=10, warmup_steps=5)
    assert sorted(replace(cfg, full_eval_every=8).full_eval_steps()) == [0, 80, 100]
    assert sorted(replace(cfg, full_eval_every=3).full_eval_steps()) == [0, 30, 60, 90, 100]
    assert sorted(replace(cfg, full_eval_every=5).full_eval_steps()) == [0, 50, 100]
    assert sorted(replace(cfg, full_eval_every=1).full_eval_steps()) == list(range(0, 101, 10))
    assert replace(cfg, full_eval_every=0).full_eval_steps() == frozenset()
    assert TrainConfig().full_eval_every == 8 and TrainConfig().eval_seed == 0
    with pytest.raises(ValueError, match=r"train\.full_eval_every=-1: must be at least 0"):
        TrainConfig(full_eval_every=-1)
    with pytest.raises(ValueError, match=r"train\.eval_seed=-2: must be at least 0"):
        TrainConfig(eval_seed=-2)


def brute_full_loss(out: Path, step: int, val_bin: Path) -> float:
    """Mean cross-entropy over every target of every non-overlapping context window of the whole
    validation file, one window at a time, summed in float64."""
    data = torch.from_numpy(np.fromfile(val_bin, dtype=np.uint8).astype(np.int64))
    model, _ = load_checkpoint(out / f"step_{step:05d}.safetensors")
    T, total, count, start = MODEL.block_size, 0.0, 0, 0
    with torch.no_grad():
        while start + T + 1 <= len(data):
            x, y = data[start : start + T], data[start + 1 : start + T + 1]
            logits = model(x[None])[0][0]
            total += F.cross_entropy(logits, y, reduction="sum").double().item()
            count, start = count + T, start + T
    assert count == T * ((len(data) - 1) // T)
    return total / count


def test_val_loss_full_is_the_whole_split_at_every_8th_checkpoint_and_the_last(reference, corpus):
    """CFG: 5 checkpoints (0 … 40), full_eval_every 8: the whole split at steps 0 and 40 (the
    last), NaN at the others. 800 tokens, T = 16: 49 windows, batches of 4 (the last of 1)."""
    evals = pd.read_csv(reference / "evals.csv").set_index("step")
    assert evals["val_loss_full"].notna().tolist() == [True, False, False, False, True]
    for step in (0, CFG.steps):
        expected = brute_full_loss(reference, step, corpus[1])
        assert evals.loc[step, "val_loss_full"] == pytest.approx(expected, rel=1e-6)
    # not the fixed windows' loss: the whole split is another (larger) sample
    assert evals.loc[CFG.steps, "val_loss_full"] != pytest.approx(evals.loc[CFG.steps, "val_loss"])


def test_full_eval_every_chooses_the_checkpoints(tmp_path, corpus):
    every = run(tmp_path / "two", corpus, replace(CFG, full_eval_every=2))
    evals = pd.read_csv(every / "evals.csv").set_index("step")
    assert evals.index[evals["val_loss_full"].notna()].tolist() == [0, 20, 40]
    never = run(tmp_path / "never", corpus, replace(CFG, full_eval_every=0))
    assert pd.read_csv(never / "evals.csv")["val_loss_full"].isna().all()
    ref = pd.read_csv(every / "evals.csv")  # the weights do not depend on the evaluation
    assert ref["val_loss"].tolist() == pd.read_csv(never / "evals.csv")["val_loss"].tolist()


def test_same_seed_gives_bit_identical_outputs(tmp_path, corpus, reference):
    assert_same_outputs(run(tmp_path / "again", corpus), reference)
    other = run(tmp_path / "other", corpus, replace(CFG, seed=CFG.seed + 1))
    last = "step_00040.safetensors"
    assert (other / last).read_bytes() != (reference / last).read_bytes()


def interrupt_at(monkeypatch, step: int, value: float | None = None) -> None:
    """Make train_step raise at training step ``step`` (or report ``value`` as the loss)."""
    real, calls = train.train_step, []

    def patched(*args):
        calls.append(1)
        stats = real(*args)
        if len(calls) == step + 1:
            if value is None:
                raise RuntimeError("simulated crash")
            return torch.stack([torch.tensor(value), stats[1]])
        return stats

    monkeypatch.setattr(train, "train_step", patched)


def test_run_resumes_after_exception_to_identical_outputs(tmp_path, corpus, reference, caplog):
    with pytest.MonkeyPatch.context() as mp:
        interrupt_at(mp, 25)
        with pytest.raises(RuntimeError, match="simulated crash"):
            run(tmp_path, corpus)
    assert not (tmp_path / "out").exists()
    with caplog.at_level(logging.INFO, logger="topotrain.training"):
        assert_same_outputs(run(tmp_path, corpus), reference)
    assert "resuming from step 20" in caplog.text


def test_changed_config_discards_old_state(tmp_path, corpus, caplog):
    other = replace(CFG, lr=CFG.lr / 2)
    with pytest.MonkeyPatch.context() as mp:
        interrupt_at(mp, 25)
        with pytest.raises(RuntimeError):
            run(tmp_path / "a", corpus)
    with caplog.at_level(logging.WARNING, logger="topotrain.training"):
        resumed = run(tmp_path / "a", corpus, other)
    assert "starting fresh" in caplog.text
    assert_same_outputs(resumed, run(tmp_path / "fresh", corpus, other))


def test_divergence_names_step_and_keeps_last_good_state(tmp_path, corpus, monkeypatch):
    interrupt_at(monkeypatch, 25, value=float("nan"))
    with pytest.raises(RuntimeError, match="diverged at step 25"):
        run(tmp_path, corpus)
    assert not (tmp_path / "out").exists()
    state = tmp_path / "state"
    assert sorted(p.name for p in state.iterdir()) == [
        "resume.pt",
        "step_00000.safetensors",
        "step_00010.safetensors",
        "step_00020.safetensors",
    ]
    assert torch.load(state / "resume.pt", weights_only=True)["step"] == 20


KILLABLE = """
import json, sys, time
import topotrain.training.train as tr
from topotrain.training.model import GPTConfig
real = tr.train_step
def slow(*args):
    time.sleep(0.03)
    return real(*args)
tr.train_step = slow
model, cfg = GPTConfig(**json.loads(sys.argv[1])), tr.TrainConfig(**json.loads(sys.argv[2]))
tr.train_model(model, cfg, *sys.argv[3:7], progress=False)
"""


def test_sigkilled_run_resumes_to_identical_outputs(tmp_path, corpus, reference, caplog):
    out, state = tmp_path / "out", tmp_path / "state"
    args = [json.dumps(asdict(MODEL)), json.dumps(asdict(CFG)), *map(str, (*corpus, out, state))]
    proc = subprocess.Popen([sys.executable, "-c", KILLABLE, *args])
    deadline = time.monotonic() + 60
    while not (state / "step_00020.safetensors").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "training ended too soon"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert not (out / "metrics.csv").exists() and (state / "resume.pt").exists()
    with caplog.at_level(logging.INFO, logger="topotrain.training"):
        assert_same_outputs(run(tmp_path, corpus), reference)
    assert "resuming from step" in caplog.text


COMPILED = replace(CFG, compile="true")


@pytest.fixture
def compiled_runs():
    """Compiled runs switch on deterministic algorithms for the process: switch them back after."""
    state = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    torch.use_deterministic_algorithms(state, warn_only=warn_only)


def test_compiled_run_is_deterministic_resumes_identically_and_matches_eager(
    tmp_path, corpus, reference, compiled_runs
):
    compiled = run(tmp_path / "a", corpus, COMPILED)
    assert_same_outputs(run(tmp_path / "b", corpus, COMPILED), compiled)
    with pytest.MonkeyPatch.context() as mp:
        interrupt_at(mp, 25)
        with pytest.raises(RuntimeError, match="simulated crash"):
            run(tmp_path / "c", corpus, COMPILED)
    assert_same_outputs(run(tmp_path / "c", corpus, COMPILED), compiled)
    for name in ("metrics.csv", "evals.csv"):
        ours, eager = pd.read_csv(compiled / name), pd.read_csv(reference / name)
        close = np.allclose(ours.to_numpy(), eager.to_numpy(), rtol=1e-4, atol=0, equal_nan=True)
        assert close, name  # equal_nan: val_loss_full is NaN where not measured


@pytest.mark.long  # `make test-long` (.ci/run runs it)
def test_compiled_run_with_two_threads_is_bit_identical(tmp_path, corpus, compiled_runs):
    """Large enough for inductor to parallelise the embedding gradient (atomic adds if allowed)."""
    model = GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32)
    cfg = replace(COMPILED, steps=10, batch_size=16, threads=2)
    outs = [tmp_path / str(i) for i in range(3)]
    for out in outs:
        train_model(model, cfg, *corpus, out, tmp_path / "state", progress=False)
    for out in outs[1:]:
        assert_same_outputs(out, outs[0])


NO_COMPILER = """
import torch
from topotrain.training.model import compile_error
print(compile_error(torch.device("cpu")))
"""


def test_compile_error_names_a_missing_compiler(tmp_path):
    env = dict(os.environ, CXX=str(tmp_path / "no-such-c++"), TORCHINDUCTOR_CACHE_DIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-c", NO_COMPILER], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() not in ("", "None")


def test_without_compiler_compiled_run_falls_back_to_eager_and_fresh_state(
    tmp_path, corpus, reference, caplog, compiled_runs
):
    with pytest.MonkeyPatch.context() as mp:  # a state left by a compiled run ...
        interrupt_at(mp, 25)
        with pytest.raises(RuntimeError, match="simulated crash"):
            run(tmp_path, corpus, COMPILED)
    torch.use_deterministic_algorithms(False)  # as in the reference's process: numerics recorded
    with pytest.MonkeyPatch.context() as mp, caplog.at_level(logging.INFO, "topotrain.training"):
        mp.setattr(train, "compile_error", lambda device: "no C++ compiler")
        outputs = run(tmp_path, corpus, COMPILED)  # ... is not continued eagerly
    fallback = "torch.compile is not usable on cpu (no C++ compiler): training in eager mode"
    assert fallback in caplog.text
    assert "starting fresh" in caplog.text and "resuming" not in caplog.text
    assert_same_outputs(outputs, reference)
