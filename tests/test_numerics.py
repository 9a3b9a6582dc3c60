"""One numerics per model: what a training records, how it reaches the feature table, and the
check that stops the between-seed analysis when a model's seeds differ."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
from conftest import train_config, write_random_tokens
from safetensors import safe_open

from topotrain.analysis.inference.numerics import (
    check_seed_numerics,
    numerics_fields,
    numerics_label,
)
from topotrain.jobs.aggregate import aggregate_weights
from topotrain.jobs.topology import write_checkpoint_topology
from topotrain.training.model import GPTConfig
from topotrain.training.numerics import run_numerics
from topotrain.training.train import train_model

MODEL = GPTConfig(n_layer=1, n_head=1, n_embd=8, block_size=16)
CFG = train_config(4, 2, 2, 1, 1, seed=3, device="cpu", threads=1, attention="sdpa")
CPU = {  # a CPU run of CFG in a fresh process
    "device": "cpu",
    "dtype": "float32",
    "matmul": "highest",
    "tf32": "off",
    "compile": "off",
    "threads": "1",
    "deterministic": "off",
    "attention": "sdpa",
    "torch": torch.__version__,
}


def torch_state() -> dict[str, str]:
    """The process-wide settings as torch reports them."""
    deterministic = "on" if torch.are_deterministic_algorithms_enabled() else "off"
    if deterministic == "on" and torch.is_deterministic_algorithms_warn_only_enabled():
        deterministic = "warn"
    return {
        "matmul": torch.get_float32_matmul_precision(),
        "threads": str(torch.get_num_threads()),
        "deterministic": deterministic,
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple:
    """A 4-step CPU training of CFG (one thread, sdpa, eager): its out folder and the settings
    torch reports once it has run."""
    root = tmp_path_factory.mktemp("numerics")
    corpus = write_random_tokens(root)
    train_model(MODEL, CFG, *corpus, root / "out", root / "state", progress=False)
    return root / "out", torch_state()


def recorded(path) -> dict:
    with safe_open(str(path), framework="pt") as fh:
        return json.loads(fh.metadata()["numerics"])


def test_every_checkpoint_records_the_numerics_torch_reports(trained):
    out, torch_says = trained
    assert torch_says["threads"] == "1"  # train.threads, not the machine's default
    for step in (0, 2, 4):
        numerics = recorded(out / f"step_{step:05d}.safetensors")
        assert numerics == CPU | torch_says
        assert list(numerics) == list(CPU)  # the fields' order: the label's


def test_a_cuda_run_records_its_gpu_cuda_and_tf32(monkeypatch):
    """The CUDA fields, on a CPU-only machine: a parameter that says it lives on cuda:0."""
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: f"GPU at {device}")
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    param = SimpleNamespace(device=torch.device("cuda:0"), dtype=torch.bfloat16)
    precision, cudnn = torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32
    try:  # torch's flag objects cannot be monkeypatched back
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, False
        numerics = run_numerics(SimpleNamespace(parameters=lambda: iter([param])), True, "sdpa")
    finally:  # the matmul flag is the precision's other name
        torch.set_float32_matmul_precision(precision)
        torch.backends.cudnn.allow_tf32 = cudnn
    assert list(numerics.items())[:6] == [
        ("device", "cuda"),
        ("gpu", "GPU at cuda:0"),
        ("cuda", "12.8"),
        ("dtype", "bfloat16"),
        ("matmul", "high"),  # torch's other name for TF32 matmuls
        ("tf32", "matmul"),
    ]
    assert numerics["compile"] == "on" and numerics["attention"] == "sdpa"


def test_numerics_reach_the_topology_record_and_the_feature_table(trained, tmp_path):
    out, torch_says = trained
    records, keys = [], []
    for step in (0, 2, 4):
        ckpt = out / f"step_{step:05d}.safetensors"
        record = tmp_path / f"r{step}.json"
        write_checkpoint_topology(ckpt, record, tmp_path / f"r{step}.npz", max_points=20)
        assert json.loads(record.read_text())["numerics"] == CPU | torch_says
        records.append(str(record))
        keys.append({"model": "tiny", "seed": CFG.seed, "step": step})
    run = {"model": "tiny", "seed": CFG.seed, "metrics": str(out / "metrics.csv")}
    run |= {"evals": str(out / "evals.csv"), "n_params": 1, "d_model": 8, "n_layer": 1}
    tables = {k: str(tmp_path / f"{k}.out") for k in ("table", "table_csv", "layers", "layers_csv")}
    table = aggregate_weights(records, keys, [run | {"n_head": 1}], 4, 2, tables)
    label = f"device=cpu; dtype=float32; matmul={torch_says['matmul']}; tf32=off; compile=off; "
    label += f"threads=1; deterministic={torch_says['deterministic']}; attention=sdpa; "
    label += f"torch={torch.__version__}"
    assert table["numerics"].tolist() == [label] * 3
    assert pd.read_parquet(tables["table"])["numerics"].tolist() == [label] * 3
    assert check_seed_numerics(table) == []


def features(numerics: dict[tuple[str, int], list]) -> pd.DataFrame:
    """A feature table: (model, seed) → each checkpoint's numerics label (None: unrecorded)."""
    rows = [
        {"model": model, "seed": seed, "step": 100 * i, "numerics": label}
        for (model, seed), labels in numerics.items()
        for i, label in enumerate(labels)
    ]
    return pd.DataFrame(rows)


LABEL = numerics_label(CPU)
TWO_THREADS = numerics_label({**CPU, "threads": "2"})
ON_GPU = numerics_label({**CPU, "device": "cuda", "gpu": "NVIDIA H100", "tf32": "matmul+cudnn"})


def test_label_round_trips_to_its_fields_in_order():
    assert LABEL.startswith("device=cpu; dtype=float32; matmul=highest; tf32=off; compile=off")
    assert numerics_fields(LABEL) == CPU and list(numerics_fields(LABEL)) == list(CPU)
    assert numerics_label(None) is None and numerics_label({}) is None


def test_equal_seeds_pass_without_a_note():
    df = features({("tiny", s): [LABEL, LABEL] for s in (0, 1, 2)})
    assert check_seed_numerics(df) == []


def test_a_seed_with_other_threads_stops_the_analysis_naming_model_seed_and_field():
    df = features(
        {("small", 0): [LABEL], ("small", 1): [LABEL]}
        | {("tiny", 0): [LABEL], ("tiny", 1): [TWO_THREADS], ("tiny", 2): [LABEL]}
    )
    with pytest.raises(ValueError) as err:
        check_seed_numerics(df)
    message = str(err.value)
    assert message.startswith(
        "model tiny: its seeds were trained with different numerics (threads differ: "
        "seed 0: threads=1; seed 1: threads=2; seed 2: threads=1; the same in all: device=cpu; "
        "dtype=float32; matmul=highest; tf32=off; compile=off; deterministic=off; attention=sdpa; "
        f"torch={torch.__version__}). A seed trained differently shifts its features and its loss "
        "together, so the between-seed analysis stops"
    )
    assert "small" not in message


def test_a_seed_on_a_gpu_names_every_differing_field_including_the_gpu():
    df = features({("tiny", 0): [LABEL], ("tiny", 1): [ON_GPU]})
    with pytest.raises(ValueError, match=r"\(device, tf32, gpu differ: ") as err:
        check_seed_numerics(df)
    assert "seed 0: device=cpu, tf32=off, gpu=(none); " in str(err.value)
    assert "seed 1: device=cuda, tf32=matmul+cudnn, gpu=NVIDIA H100; " in str(err.value)


def test_a_seed_whose_checkpoints_differ_is_refused_too():
    old = numerics_label({**CPU, "torch": "2.0.0"})
    df = features({("tiny", 0): [LABEL, LABEL], ("tiny", 1): [old, LABEL]})
    with pytest.raises(ValueError, match=r"model tiny: .*\(torch differ: ") as err:
        check_seed_numerics(df)
    assert f"seed 1: torch=2.0.0 | torch={torch.__version__}" in str(err.value)


def test_unrecorded_runs_pass_with_a_note(caplog):
    no_column = features({("tiny", 0): [LABEL], ("tiny", 1): [LABEL]}).drop(columns="numerics")
    with caplog.at_level(logging.WARNING, logger="topotrain.analysis.inference.numerics"):
        notes = check_seed_numerics(no_column)
    assert notes == [
        "model tiny: numerics unrecorded for seeds 0, 1 (trained before topotrain recorded "
        "them, or not by topotrain): one numerics per model is unchecked for them"
    ]
    assert notes[0] in caplog.text
    mixed = features({("tiny", 0): [LABEL], ("tiny", 1): [None, None], ("tiny", 2): [LABEL]})
    assert check_seed_numerics(mixed) == [notes[0].replace("seeds 0, 1", "seeds 1")]


def test_unrecorded_seeds_do_not_hide_recorded_ones_that_differ():
    df = features({("tiny", 0): [LABEL], ("tiny", 1): [None], ("tiny", 2): [TWO_THREADS]})
    with pytest.raises(ValueError, match="seed 0: threads=1; seed 2: threads=2; "):
        check_seed_numerics(df)
