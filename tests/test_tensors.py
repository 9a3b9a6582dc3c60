"""Checkpoints read one tensor at a time: the lazy mapping reads a tensor only when it is looked
up, keeps none, and gives the per-layer loop the records the whole state dict gives."""

from __future__ import annotations

import json
import weakref

import numpy as np
import pytest
from run_fixtures import fake_checkpoint
from safetensors.numpy import load_file, save_file

import topotrain.sources.tensors as tensors_module
from topotrain.config import GPT_LAYERS
from topotrain.jobs.topology import checkpoint_topology
from topotrain.sources.checkpoint import load_tensors, open_checkpoint
from topotrain.sources.tensors import LazyTensors, open_safetensors
from topotrain.topology.layers import layer_records, select_names, shapes_of


@pytest.fixture
def reads(monkeypatch):
    """Every tensor read from a file, by name, in order; and the most alive at once."""
    log = {"names": [], "alive": 0, "most": 0}
    real = tensors_module.read_entry

    def counted(path, entry):
        array = real(path, entry)
        log["names"].append(entry)
        log["alive"] += 1
        log["most"] = max(log["most"], log["alive"])
        weakref.finalize(array, lambda: log.__setitem__("alive", log["alive"] - 1))
        return array

    monkeypatch.setattr(tensors_module, "read_entry", counted)
    return log


def test_lazy_tensors_know_names_shapes_and_dtypes_without_reading(tmp_path, reads):
    stored = fake_checkpoint(tmp_path / "c.safetensors", d=12, blocks=range(3))
    lazy = open_checkpoint(tmp_path / "c.safetensors")
    assert set(lazy) == set(stored) and len(lazy) == len(stored)
    assert shapes_of(lazy) == {k: v.shape for k, v in stored.items()}
    assert set(lazy.dtypes.values()) == {"F32"}
    assert "transformer.wte.weight" in lazy and "nothing" not in lazy
    assert select_names(lazy, GPT_LAYERS)[:2] == [
        "transformer.h.0.attn.c_attn.weight",
        "transformer.h.0.attn.c_proj.weight",
    ]
    assert reads["names"] == []  # none of that read a tensor
    with pytest.raises(KeyError):
        lazy["nothing"]


def test_every_lookup_reads_the_stored_tensor_anew(tmp_path, reads):
    stored = fake_checkpoint(tmp_path / "c.safetensors", d=12, blocks=range(3))
    lazy = open_checkpoint(tmp_path / "c.safetensors")
    name = "transformer.h.1.mlp.c_fc.weight"
    first, second = lazy[name], lazy[name]
    assert first is not second and len(reads["names"]) == 2
    assert first.dtype == np.float32 and np.array_equal(first, stored[name])


@pytest.mark.parametrize("dtype", ["float16", "float64", "int8", "uint8", "bool", "int64"])
def test_read_tensors_equal_safetensors_own_reader(tmp_path, dtype):
    rng = np.random.default_rng(1)
    stored = {"a": (10 * rng.normal(size=(7, 5))).astype(dtype), "b": np.zeros(0, dtype)}
    stored["c"] = (rng.normal(size=(3, 2, 4)) * 5).astype(dtype)
    save_file(stored, str(tmp_path / "t.safetensors"), metadata={"note": "kept out"})
    lazy = open_safetensors([tmp_path / "t.safetensors"])
    expected = load_file(str(tmp_path / "t.safetensors"))
    assert set(lazy) == set(expected)
    for name, array in expected.items():
        assert lazy[name].dtype == array.dtype and np.array_equal(lazy[name], array)


def test_the_per_layer_loop_holds_one_matrix_and_gives_the_eager_records(tmp_path, reads):
    path = tmp_path / "c.safetensors"
    fake_checkpoint(path, d=12, blocks=range(4))
    records, diagrams = checkpoint_topology(path, GPT_LAYERS, max_points=20, seed=2)
    chosen = select_names(load_tensors(path), GPT_LAYERS)
    assert len(reads["names"]) == len(chosen) == 16  # each analysed matrix read once, nothing else
    assert reads["most"] == 1  # never two matrices in memory at once
    expected, expected_dgms = layer_records(load_tensors(path), GPT_LAYERS, max_points=20, seed=2)
    assert json.dumps(records) == json.dumps(expected)
    assert list(diagrams) == list(expected_dgms)
    assert all(np.array_equal(diagrams[k], expected_dgms[k]) for k in diagrams)


def test_shards_are_one_mapping_the_first_file_winning(tmp_path):
    save_file({"a": np.ones((2, 2), np.float32)}, str(tmp_path / "1.safetensors"))
    save_file(
        {"a": np.zeros((2, 2), np.float32), "b": np.arange(3, dtype=np.float32)},
        str(tmp_path / "2.safetensors"),
    )
    lazy = open_safetensors([tmp_path / "1.safetensors", tmp_path / "2.safetensors"])
    assert sorted(lazy) == ["a", "b"] and lazy["a"].sum() == 4 and lazy["b"].tolist() == [0, 1, 2]
    assert lazy.files["b"].name == "2.safetensors"


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_unreadable_files_fail_when_opened_naming_the_file(tmp_path, damage):
    path = tmp_path / "c.safetensors"
    fake_checkpoint(path, d=12, blocks=range(3))
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2] if damage == "truncate" else b"not a checkpoint" * 10)
    with pytest.raises(ValueError, match=f"cannot read checkpoint {path}"):
        open_checkpoint(path)


def test_a_file_cut_short_after_opening_fails_at_the_read_naming_the_file(tmp_path):
    path = tmp_path / "c.safetensors"
    fake_checkpoint(path, d=12, blocks=range(3))
    lazy = open_checkpoint(path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match=f"cannot read checkpoint {path}: ValueError: .* of the"):
        lazy["transformer.h.2.mlp.c_proj.weight"]


def test_bf16_has_no_numpy_type_and_is_named(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch

    save_torch({"w": torch.ones(2, 3, dtype=torch.bfloat16)}, str(tmp_path / "b.safetensors"))
    lazy = open_checkpoint(tmp_path / "b.safetensors")
    assert lazy.dtypes == {"w": "BF16"} and lazy.shapes == {"w": (2, 3)}
    with pytest.raises(ValueError, match="cannot read checkpoint .*BF16 has no NumPy type"):
        lazy["w"]


def test_a_mapping_of_arrays_is_its_own_shapes():
    arrays = {"a": np.zeros((2, 3)), "b": np.zeros(4)}
    assert shapes_of(arrays) == {"a": (2, 3), "b": (4,)}
    lazy = LazyTensors({"a": (2, 3)}, lambda name: np.zeros((2, 3)))
    assert shapes_of(lazy) == {"a": (2, 3)} and "LazyTensors(1 tensors" in repr(lazy)
