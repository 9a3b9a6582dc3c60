"""Faults and bad input: each ends in a clear message (naming file, key, model or step) and leaves
no partial output. docs/faults.md lists every case with the test that proves it."""

from __future__ import annotations

import contextlib
import copy
import errno
import gzip
import io
import json
import math
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from conftest import ROOT, SNAKEMAKE, run_snakemake, tiny_config, write_corpus, write_random_tokens
from safetensors.numpy import load_file, save
from snakemake.utils import validate

import topotrain.training.train as train
from topotrain.config import DEFAULTS, ConfigError, check_config
from topotrain.jobs.aggregate import aggregate_weights
from topotrain.jobs.data import prepare_corpus_job
from topotrain.jobs.topology import weight_topology_job, write_checkpoint_topology
from topotrain.jobs.train import train_model_job
from topotrain.report.markdown import write_table
from topotrain.sources.checkpoint import load_tensors
from topotrain.sources.corpus import CorpusError, load_splits, prepare_corpus
from topotrain.sources.pythia import PythiaError, fetch_revision
from topotrain.training.run_state import published_files

SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
D = 8  # width of the fake checkpoints
BLOCK = "transformer.h.0"
CKPT = "step_00010.safetensors"
TOPOLOGY = {
    "patterns": [f"{BLOCK}.*.weight"],
    "max_points": 200,
    "seed": 0,
    "maxdim": 1,
    "engine": "auto",
}


def files_under(directory: Path) -> list[str]:
    """Every file below ``directory`` (temp files included), as relative paths."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def fake_layers(seed: int = 0, **override: np.ndarray) -> dict[str, np.ndarray]:
    """The four linear maps of one GPT block (random normal), some replaced by ``override``."""
    rng = np.random.default_rng(seed)
    shapes = {"attn.c_attn": (3 * D, D), "attn.c_proj": (D, D), "mlp.c_fc": (4 * D, D)}
    shapes["mlp.c_proj"] = (D, 4 * D)
    layers = {f"{BLOCK}.{k}.weight": rng.normal(size=s) for k, s in shapes.items()}
    layers.update({f"{BLOCK}.{k}.weight": v for k, v in override.items()})
    return {k: np.asarray(v, dtype=np.float32) for k, v in layers.items()}


def run_topology(tmp_path: Path, raw: bytes) -> tuple[Path, Path]:
    """Write ``raw`` as a checkpoint and run the topology job on it; returns
    (checkpoint, out dir)."""
    ckpt, out = tmp_path / CKPT, tmp_path / "out"
    ckpt.write_bytes(raw)
    out.mkdir()
    files = {"record": str(out / "step_00010.json"), "diagrams": str(out / "step_00010.npz")}
    weight_topology_job(str(ckpt), TOPOLOGY, files)
    return ckpt, out


# ---- checkpoints: truncated, corrupted, NaN/inf, degenerate -----------------------------------


def header_end(raw: bytes) -> int:
    return 8 + int.from_bytes(raw[:8], "little")


DAMAGE = {
    "empty": lambda raw: b"",
    "one-byte-short": lambda raw: raw[:-1],
    "header-only": lambda raw: raw[: header_end(raw)],
    "header-length-garbage": lambda raw: (2**40).to_bytes(8, "little") + raw[8:],
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_truncated_checkpoint_names_file_and_writes_no_record(tmp_path, damage):
    raw = DAMAGE[damage](save(fake_layers()))
    with pytest.raises(ValueError) as err:
        run_topology(tmp_path, raw)
    assert f"cannot read checkpoint {tmp_path / CKPT}: SafetensorError" in str(err.value)
    assert files_under(tmp_path / "out") == []


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_weights_name_checkpoint_and_layer_and_write_nothing(tmp_path, bad):
    proj = np.random.default_rng(1).normal(size=(D, D))
    proj[2, 3] = proj[5, 0] = bad
    with pytest.raises(ValueError) as err:
        run_topology(tmp_path, save(fake_layers(**{"attn.c_proj": proj})))
    layer = f"{BLOCK}.attn.c_proj.weight"
    assert f"checkpoint {tmp_path / CKPT}, layer {layer}: 2 NaN/inf weights" in str(err.value)
    assert files_under(tmp_path / "out") == []


def rank_one_np(v: np.ndarray, m: int) -> dict[str, float]:
    """NP of m identical rows v, by hand: the m edges of the largest |v_c| join every row at
    persistence 0; each other column c joins once, at 1 − |v_c|/max|v|; |V| − 1 = m + n − 1."""
    pairs = 1 - np.abs(v) / np.abs(v).max()
    n_pairs = m + len(v) - 1
    return {"np_total": pairs.sum() / n_pairs, "np_p2": math.sqrt((pairs**2).sum() / n_pairs)}


def test_one_row_identical_rows_and_zeros_give_documented_records(tmp_path):
    v = np.random.default_rng(2).normal(size=D).astype(np.float32).astype(np.float64)
    layers = {"attn.c_attn": v[None, :], "attn.c_proj": np.tile(v, (D, 1))}
    layers["mlp.c_fc"] = np.zeros((4 * D, D))
    _, out = run_topology(tmp_path, save(fake_layers(**layers)))
    records = {r["layer"]: r for r in json.loads((out / "step_00010.json").read_text())["layers"]}
    expected = {  # layer: (rows, NP by hand, Frobenius norm)
        "attn.c_attn": (1, rank_one_np(v, 1), np.linalg.norm(v)),
        "attn.c_proj": (D, rank_one_np(v, D), math.sqrt(D) * np.linalg.norm(v)),
        "mlp.c_fc": (4 * D, {"np_total": 0.0, "np_p2": 0.0}, 0.0),
    }
    vr_zero = {f"h{k}_{s}": 0 for k in (0, 1) for s in ("count", "total", "max", "entropy")}
    vr_zero |= {f"{key}_scalefree": 0 for key in vr_zero}  # RMS 0 (all zeros) included
    with np.load(out / "step_00010.npz") as npz:
        for name, (rows, np_values, norm) in expected.items():
            record = records[f"{BLOCK}.{name}.weight"]
            assert record["n_points"] == rows
            assert {k: record[k] for k in np_values} == pytest.approx(np_values, abs=1e-12)
            assert {k: record[k] for k in vr_zero} == vr_zero  # only the infinite H0 bar
            assert record["l2_norm"] == pytest.approx(norm, rel=1e-12)
            assert npz[f"{BLOCK}.{name}.weight/h0"].tolist() == [[0.0, math.inf]]
            assert npz[f"{BLOCK}.{name}.weight/h1"].shape == (0, 2)
    assert records[f"{BLOCK}.mlp.c_proj.weight"]["h0_count"] == D - 1  # the normal layer


KILL_MID_WRITE = """
import sys, time
from pathlib import Path
from topotrain.io import atomic_write
blob, target, ready = Path(sys.argv[1]).read_bytes(), sys.argv[2], Path(sys.argv[3])
def slow(fh):
    fh.write(blob[: len(blob) // 2])
    fh.flush()
    ready.touch()
    time.sleep(60)
    fh.write(blob[len(blob) // 2 :])
atomic_write(target, slow)
"""


def test_job_killed_mid_write_leaves_no_file_that_loads(tmp_path):
    blob, out = tmp_path / "blob", tmp_path / "out"
    blob.write_bytes(save(fake_layers()))
    target, ready = out / CKPT, tmp_path / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_MID_WRITE, str(blob), str(target), str(ready)]
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "writer ended too soon"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert not target.exists()
    with pytest.raises(FileNotFoundError, match=str(target)):
        load_tensors(target)
    (leftover,) = out.iterdir()  # the hidden temp file, never under the target's name
    assert leftover.name.startswith(f".{target.name}.") and leftover.suffix == ".tmp"
    with pytest.raises(ValueError, match="cannot read checkpoint"):
        load_tensors(leftover)


# ---- training that diverges ---------------------------------------------------------------

ARCH = {"vocab_size": 128, "context": 16, "n_layer": 1, "n_head": 1, "d_model": 8}
TRAIN = {
    "steps": 40,
    "checkpoint_interval": 10,
    "batch_size": 4,
    "warmup_steps": 5,
    "lr": 1e-2,
    "weight_decay": 0.01,
    "grad_clip": 1.0,
    "eval_batches": 2,
    "eval_batch_size": 4,
    "device": "cpu",
    "seed": 7,
}


@pytest.fixture(scope="module")
def tokens(tmp_path_factory) -> tuple[str, str]:
    train, val = write_random_tokens(tmp_path_factory.mktemp("tokens"))
    return str(train), str(val)


def run_train_job(root: Path, tokens) -> Path:
    out = root / "out"
    files = published_files(out, range(0, TRAIN["steps"] + 1, TRAIN["checkpoint_interval"]))
    train_model_job("tiny", ARCH, TRAIN, *tokens, files, str(root / "state"))
    return out


@pytest.mark.parametrize("bad_update, reported", [(25, 26), (29, 30)], ids=["mid", "at-ckpt"])
def test_divergence_names_model_and_step_and_keeps_only_finite_checkpoints(
    tmp_path, tokens, monkeypatch, bad_update, reported
):
    """An infinite learning rate at one update turns the weights to NaN/inf: a real divergence,
    seen by the next training step (mid) or, when the update ends an interval, at the checkpoint."""
    real_lr = train.lr_at
    monkeypatch.setattr(train, "lr_at", lambda t, c: math.inf if t == bad_update else real_lr(t, c))
    with pytest.raises(RuntimeError) as err:
        run_train_job(tmp_path, tokens)
    state = tmp_path / "state"
    assert f"model tiny, seed 7: training diverged at step {reported} " in str(err.value)
    assert f"last good state: step 20 in {state}" in str(err.value)
    assert not (tmp_path / "out").exists()
    names = [f"step_{s:05d}.safetensors" for s in (0, 10, 20)]
    assert files_under(state) == ["resume.pt", *names]
    for name in names:
        assert all(np.isfinite(t).all() for t in load_file(state / name).values()), name
    resume = torch.load(state / "resume.pt", weights_only=True)
    assert resume["step"] == 20 and all(math.isfinite(row[1]) for row in resume["evals"])
    monkeypatch.undo()  # the kept state is good: resuming from it equals a run never diverged
    resumed, fresh = run_train_job(tmp_path, tokens), run_train_job(tmp_path / "fresh", tokens)
    assert files_under(resumed) == files_under(fresh)
    assert all((resumed / f).read_bytes() == (fresh / f).read_bytes() for f in files_under(fresh))


# ---- corpus files -------------------------------------------------------------------------


def parquet_bytes() -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.table({"text": ["the cat sat on the mat ."] * 20}), buf)
    return buf.getvalue()


BAD_CORPUS = {  # content (None: no file) and the message
    "missing": (None, "does not exist"),
    "empty": (b"", "is empty"),
    "whitespace": (b" \n\n\t\n", "is empty"),
    "gzip": (gzip.compress(b"the cat sat on the mat .\n" * 50, mtime=0), "looks binary"),
    "parquet": (parquet_bytes(), "looks binary"),
    "utf-16": ("the cat sat on the mat .\n".encode("utf-16"), "looks binary"),
}


@pytest.mark.parametrize("case", list(BAD_CORPUS))
def test_unusable_validation_file_is_named_and_no_split_is_written(tmp_path, case):
    content, message = BAD_CORPUS[case]
    good, bad = tmp_path / "train.txt", tmp_path / "valid.txt"
    good.write_text("the cat sat on the mat .\n" * 50)
    if content is not None:
        bad.write_bytes(content)
    out = tmp_path / "results" / "corpus"
    names = {"train": "train.bin", "validation": "validation.bin", "manifest": "manifest.json"}
    corpus = {**DEFAULTS["corpus"], "source": "files", "train": str(good), "validation": str(bad)}
    with pytest.raises(CorpusError, match=f"corpus file {re.escape(str(bad))} .*{message}"):
        prepare_corpus_job(corpus, {k: str(out / n) for k, n in names.items()})
    assert not (tmp_path / "results").exists()  # the train split was not written either


def test_empty_corpus_file_fails_the_corpus_job_naming_it(tmp_path):
    train_txt, valid = write_corpus(tmp_path, n_chars=2_000)
    valid.write_text("\n")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(tiny_config(train_txt, valid)))
    proc = run_snakemake(tmp_path, "--cores", "1", "results/corpus/manifest.json", check=False)
    assert proc.returncode != 0 and "Error in rule prepare_corpus" in proc.stdout + proc.stderr
    log = (tmp_path / "results/logs/prepare_corpus.log").read_text()
    assert f"CorpusError: corpus file {valid} is empty" in log
    assert files_under(tmp_path / "results") == ["logs/prepare_corpus.log"]


# ---- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written, wrong, message",
    [
        ("  lr: 0.01\n", "  lr: fast\n", "'fast' is not of type 'number'"),  # no number in it
        ("  steps: 40\n", "  steps: 40.0\n", "train.steps: expected an integer, got 40.0"),
        ("  steps: 40\n", "  steps: 100000\n", "100000 is greater than the maximum of 99999"),
    ],
    ids=["string-for-number", "float-for-integer", "steps-over-checkpoint-names"],
)
def test_wrong_type_or_range_fails_before_any_job_naming_the_key(tmp_path, written, wrong, message):
    train_txt, valid = write_corpus(tmp_path, n_chars=2_000)
    text = yaml.safe_dump(tiny_config(train_txt, valid))
    assert text.count(written) == 1
    (tmp_path / "config.yaml").write_text(text.replace(written, wrong))
    proc = run_snakemake(tmp_path, "--cores", "1", check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and message in output and "TypeError" not in output
    assert not (tmp_path / "results").exists()


def test_floats_for_integers_are_named_at_any_depth_and_real_floats_pass():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["models"]["small-7k"]["d_model"] = 16.0
    config["seeds"] = [42.0]
    config["pythia"]["weights"]["steps"][1] = 1000.0
    config["train"]["lr"] = 1.0  # a number key: a float is what it takes
    validate(copy.deepcopy(config), SCHEMA)  # JSON Schema lets 16.0 pass as an integer ...
    with pytest.raises(ConfigError) as err:  # ... check_config does not
        check_config(config)
    problems = [line for line in str(err.value).splitlines() if line.startswith("  - ")]
    assert [p.split(":")[0] for p in problems] == [
        "  - models.small-7k.d_model",
        "  - seeds[0]",
        "  - pythia.weights.steps[1]",
    ]


# ---- the hub unreachable, with an empty cache --------------------------------------------


@pytest.fixture
def unreachable_hub(tmp_path, monkeypatch):
    """Online mode, an empty cache in tmp_path, and a hub endpoint that refuses connections."""
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")


def test_unreachable_hub_with_empty_cache_fails_fast_with_the_download_command(unreachable_hub):
    start = time.perf_counter()
    with pytest.raises(PythiaError) as pythia:
        fetch_revision("EleutherAI/pythia-70m", 1000)
    with pytest.raises(CorpusError) as corpus:
        load_splits("huggingface")
    assert time.perf_counter() - start < 10
    assert "huggingface-cli download EleutherAI/pythia-70m --revision step1000" in str(pythia.value)
    assert "cannot resolve EleutherAI/pythia-70m revision step1000 (online" in str(pythia.value)
    assert "huggingface-cli download Salesforce/wikitext" in str(corpus.value)
    assert "corpus.source: files" in str(corpus.value)


# ---- disk full while writing tables -------------------------------------------------------


@pytest.fixture
def disk_full(monkeypatch):
    """``disk_full(n)``: n more files fit; fsync of any further regular file fails with ENOSPC."""

    def fill_after(n_files: int) -> None:
        real_fsync, synced = os.fsync, []

        def fsync(fd: int) -> None:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                if len(synced) >= n_files:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                synced.append(fd)
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)

    return fill_after


def aggregate_inputs(root: Path) -> dict:
    """Two real topology records and their run's logs: the arguments of aggregate_weights."""
    records, keys = [], []
    for step in (0, 10):
        ckpt = root / f"step_{step:05d}.safetensors"
        ckpt.write_bytes(save(fake_layers(seed=step)))
        records.append(str(root / f"step_{step:05d}.json"))
        write_checkpoint_topology(ckpt, records[-1], root / f"step_{step:05d}.npz")
        keys.append({"model": "m", "seed": 1, "step": step})
    metrics = pd.DataFrame({"step": range(10), "train_loss": 4.0, "grad_norm": 1.0, "lr": 0.1})
    metrics.to_csv(root / "metrics.csv", index=False)
    pd.DataFrame({"step": [0, 10], "val_loss": [4.8, 3.0]}).to_csv(root / "evals.csv", index=False)
    run = {"model": "m", "seed": 1, "metrics": str(root / "metrics.csv")}
    run |= {"evals": str(root / "evals.csv"), "n_params": 99, "d_model": D, "n_layer": 1}
    return {"records": records, "keys": keys, "runs": [run | {"n_head": 1}]}


def write_features(inputs: dict, out: Path) -> None:
    names = {"table": "weights.parquet", "table_csv": "weights.csv"}
    names |= {"layers": "weights_layers.parquet", "layers_csv": "weights_layers.csv"}
    targets = {k: str(out / v) for k, v in names.items()}
    aggregate_weights(**inputs, total_steps=10, interval=10, out=targets)


def corpus_splits(root: Path) -> dict:
    return load_splits("files", *map(str, write_corpus(root, n_chars=2_000)))


def write_corpus_files(splits: dict, out: Path) -> None:
    prepare_corpus(
        splits, *(str(out / n) for n in ("train.bin", "validation.bin", "manifest.json"))
    )


def checkpoint_file(root: Path) -> Path:
    (root / "c.safetensors").write_bytes(save(fake_layers()))
    return root / "c.safetensors"


def write_record(ckpt: Path, out: Path) -> None:
    write_checkpoint_topology(ckpt, out / "step_00000.json", out / "step_00000.npz")


def write_analysis_table(df: pd.DataFrame, out: Path) -> None:
    write_table(df, out / "phases.csv", out / "phases.md", "Phase transitions")


PHASES = pd.DataFrame({"model": ["a"], "peak_step": [300]})
WRITERS = {  # name: (make the inputs in a folder, write the set into out, the files of the set)
    "analysis-table": (lambda root: PHASES, write_analysis_table, ["phases.csv", "phases.md"]),
    "feature-tables": (
        aggregate_inputs,
        write_features,
        ["weights.csv", "weights.parquet", "weights_layers.csv", "weights_layers.parquet"],
    ),
    "corpus": (corpus_splits, write_corpus_files, ["manifest.json", "train.bin", "validation.bin"]),
    "topology-record": (checkpoint_file, write_record, ["step_00000.json", "step_00000.npz"]),
}
CASES = [(name, n) for name, (*_, files) in WRITERS.items() for n in range(len(files))]


@pytest.mark.parametrize("name, n_fit", CASES, ids=[f"{c[0]}-{c[1]}-fit" for c in CASES])
def test_disk_full_names_the_file_and_leaves_none_of_the_set(tmp_path, disk_full, name, n_fit):
    make_inputs, write, files = WRITERS[name]
    inputs = make_inputs(tmp_path)
    write(inputs, tmp_path / "room")  # with room on the disk: the whole set
    assert files_under(tmp_path / "room") == files
    out = tmp_path / "full"
    disk_full(n_fit)
    with pytest.raises(OSError) as err:
        write(inputs, out)
    assert err.value.errno == errno.ENOSPC and "No space left on device" in str(err.value)
    assert not out.exists() or files_under(out) == []
    assert err.value.filename in [str(out / f) for f in files]


def test_disk_full_keeps_the_previous_table_pair(tmp_path, disk_full):
    write_analysis_table(PHASES, tmp_path)
    before = files_under(tmp_path), (tmp_path / "phases.csv").read_text()
    disk_full(1)
    with pytest.raises(OSError, match="No space left on device"):
        write_analysis_table(PHASES.assign(peak_step=900), tmp_path)
    assert (files_under(tmp_path), (tmp_path / "phases.csv").read_text()) == before
    assert "| a | 300 |" in (tmp_path / "phases.md").read_text()


def test_corrupted_topology_record_is_named_and_no_table_is_written(tmp_path):
    inputs = aggregate_inputs(tmp_path)
    bad = Path(inputs["records"][1])
    bad.write_text(bad.read_text()[:100])
    out = tmp_path / "features"
    targets = {k: str(out / f"{k}.out") for k in ("table", "table_csv", "layers", "layers_csv")}
    with pytest.raises(ValueError, match=f"cannot read topology record {re.escape(str(bad))}"):
        aggregate_weights(**inputs, total_steps=10, interval=10, out=targets)
    assert not out.exists()


# ---- two runs on one results directory: Snakemake's lock ---------------------------------


def wait_for_lock(workdir: Path, first: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 120
    while not list((workdir / ".snakemake" / "locks").glob("*.lock")):
        assert first.poll() is None, f"first run ended early:\n{log.read_text()}"
        assert time.monotonic() < deadline, "first run never locked the directory"
        time.sleep(0.1)


def test_second_run_refuses_while_the_first_holds_the_lock(tiny_workdir):
    """Same working directory, overlapping files: refused. After a crash the lock stays until
    ``--unlock``. A run on another ``results:`` in the same directory is not refused, and when it
    ends it deletes every lock there, the live run's included:
    hence separate working directories."""
    config = yaml.safe_load((tiny_workdir / "config.yaml").read_text())
    config["train"].update(steps=90_000, checkpoint_interval=30_000)  # minutes: holds the lock
    (tiny_workdir / "config.yaml").write_text(yaml.safe_dump(config))
    cmd = [*SNAKEMAKE, "--snakefile", str(ROOT / "Snakefile"), "--directory", str(tiny_workdir)]
    # a job to run (forced) on files the first run has locked: refused, and cheap were it not
    corpus = ("results/corpus/manifest.json", "--cores", "1", "--forcerun", "prepare_corpus")
    log = tiny_workdir / "first.log"
    with open(log, "w") as fh:
        first = subprocess.Popen(
            [*cmd, "--cores", "1"], stdout=fh, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        wait_for_lock(tiny_workdir, first, log)
        second = run_snakemake(tiny_workdir, *corpus, check=False)
        assert first.poll() is None  # the first run held the lock throughout
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)  # a crash: the whole run, jobs included
        first.wait()
    output = second.stdout + second.stderr
    assert second.returncode != 0 and "Directory cannot be locked" in output
    assert str(tiny_workdir) in output and "--unlock" in output
    locks = {p: p.read_bytes() for p in (tiny_workdir / ".snakemake").glob("locks/*.lock")}
    assert locks  # the crash left the lock behind ...
    stale = run_snakemake(tiny_workdir, *corpus, check=False)  # ... and it is honoured
    assert stale.returncode != 0 and "Directory cannot be locked" in stale.stdout + stale.stderr
    run_snakemake(tiny_workdir, "--unlock")
    assert list((tiny_workdir / ".snakemake").glob("locks/*.lock")) == []
    plan = run_snakemake(tiny_workdir, "-n", "--cores", "1", "--rerun-incomplete")
    assert "train_model" in plan.stdout + plan.stderr
    for path, content in locks.items():  # the first run's lock again, as if it were still live
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(content)
    other = ("results-b/corpus/manifest.json", "--cores", "1", "--config", "results=results-b")
    run_snakemake(tiny_workdir, *other)  # not refused: its files do not overlap
    assert list((tiny_workdir / ".snakemake").glob("locks/*.lock")) == []
