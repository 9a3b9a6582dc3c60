"""The per-checkpoint topology job: layer selection, records, errors, atomic output, no torch."""

import json
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import save_file

from topotrain.topology import neural_persistence, total_persistence, vr_diagrams
from topotrain.topology.checkpoint import (
    DEFAULT_PATTERNS,
    checkpoint_topology,
    layer_rng,
    write_checkpoint_topology,
)


def fake_checkpoint(path, seed=0, d=8, scale=1.0):
    rng = np.random.default_rng(seed)
    tensors = {
        "transformer.wte.weight": rng.normal(size=(128, d)),
        "transformer.h.0.attn.c_attn.weight": rng.normal(size=(3 * d, d)) * scale,
        "transformer.h.0.attn.c_attn.bias": rng.normal(size=3 * d),
        "transformer.h.0.attn.c_proj.weight": rng.normal(size=(d, d)),
        "transformer.h.0.mlp.c_fc.weight": rng.normal(size=(4 * d, d)),
        "transformer.h.0.mlp.c_proj.weight": rng.normal(size=(d, 4 * d)),
    }
    save_file({k: v.astype(np.float32) for k, v in tensors.items()}, str(path))
    return {k: v.astype(np.float32).astype(np.float64) for k, v in tensors.items()}


def test_records_match_direct_computation_and_skip_embeddings_and_biases(tmp_path):
    tensors = fake_checkpoint(tmp_path / "c.safetensors")
    records, diagrams = checkpoint_topology(tmp_path / "c.safetensors", DEFAULT_PATTERNS, max_points=200)
    assert [r["layer"] for r in records] == sorted(n for n in tensors if "h.0" in n and "weight" in n)
    for r in records:
        W = tensors[r["layer"]]
        assert (r["rows"], r["cols"], r["n_points"]) == (*W.shape, W.shape[0])
        assert r["np_total"] == pytest.approx(neural_persistence(W)["np_total"])
        h0, h1 = vr_diagrams(W)
        assert r["h0_total"] == pytest.approx(total_persistence(h0))
        assert r["h1_total"] == pytest.approx(total_persistence(h1))
        assert r["l2_norm"] == pytest.approx(np.linalg.norm(W))
        np.testing.assert_array_equal(diagrams[f"{r['layer']}/h0"], h0)


def test_subsample_picks_the_same_rows_of_a_layer_at_every_checkpoint(tmp_path):
    a = fake_checkpoint(tmp_path / "a.safetensors", seed=1)
    fake_checkpoint(tmp_path / "b.safetensors", seed=1, scale=2.0)  # same layout, scaled c_attn
    layer = "transformer.h.0.attn.c_attn.weight"
    ra, _ = checkpoint_topology(tmp_path / "a.safetensors", [layer], max_points=10, seed=5)
    rb, _ = checkpoint_topology(tmp_path / "b.safetensors", [layer], max_points=10, seed=5)
    assert ra[0]["n_points"] == 10
    rows = np.sort(layer_rng(5, layer).choice(24, size=10, replace=False))
    h0 = vr_diagrams(a[layer][rows])[0]
    assert ra[0]["h0_total"] == pytest.approx(total_persistence(h0))
    assert rb[0]["h0_total"] == pytest.approx(2 * ra[0]["h0_total"], rel=1e-5)  # same rows, scaled


def test_truncated_checkpoint_names_the_file_and_writes_nothing(tmp_path):
    path = tmp_path / "c.safetensors"
    fake_checkpoint(path)
    path.write_bytes(path.read_bytes()[:200])
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ValueError, match="cannot read checkpoint .*c.safetensors"):
        write_checkpoint_topology(path, out / "r.json", out / "r.npz", patterns=DEFAULT_PATTERNS)
    assert list(out.iterdir()) == []


def test_nan_weights_name_checkpoint_and_layer(tmp_path):
    path = tmp_path / "c.safetensors"
    tensors = fake_checkpoint(path)
    tensors["transformer.h.0.mlp.c_fc.weight"][3, 2] = np.nan
    save_file({k: v.astype(np.float32) for k, v in tensors.items()}, str(path))
    with pytest.raises(ValueError, match=r"c.safetensors, layer transformer.h.0.mlp.c_fc.weight: 1 NaN"):
        checkpoint_topology(path, DEFAULT_PATTERNS)


def test_no_matching_layer_lists_the_available_names(tmp_path):
    fake_checkpoint(tmp_path / "c.safetensors")
    with pytest.raises(ValueError, match="no 2-D tensor matches .*available: .*wte"):
        checkpoint_topology(tmp_path / "c.safetensors", ["*.nothing"])


def test_written_record_and_diagrams_round_trip(tmp_path):
    fake_checkpoint(tmp_path / "c.safetensors")
    records = write_checkpoint_topology(
        tmp_path / "c.safetensors", tmp_path / "r.json", tmp_path / "r.npz", patterns=["*.c_fc.weight"]
    )
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["layers"] == records and doc["params"] == {"patterns": ["*.c_fc.weight"]}
    with np.load(tmp_path / "r.npz") as npz:
        assert sorted(npz.files) == ["transformer.h.0.mlp.c_fc.weight/h0", "transformer.h.0.mlp.c_fc.weight/h1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.safetensors", "r.json", "r.npz"]


def test_topology_job_never_imports_torch():
    code = "import sys, topotrain.topology.checkpoint, topotrain.jobs; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
