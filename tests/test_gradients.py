"""Gradient topology: the probe batch's gradient against torch.autograd.grad on the same weights,
and the topology of it against the per-layer loop run directly."""

import json

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from topotrain.config import GPT_LAYERS
from topotrain.jobs.topology import write_gradient_topology, write_training_gradients
from topotrain.topology.layers import layer_records
from topotrain.training.gradients import gradient_topology, probe_offsets
from topotrain.training.model import GPT, GPTConfig
from topotrain.training.run_state import save_checkpoint

TOPO = {"max_points": 30, "seed": 0, "maxdim": 1}


@pytest.fixture
def checkpoint(tmp_path):
    torch.manual_seed(3)
    model = GPT(GPTConfig(n_layer=2, n_head=2, n_embd=16, block_size=16))
    save_checkpoint(model, 100, tmp_path / "step_00100.safetensors")
    tokens = np.random.default_rng(0).integers(0, 128, 5000).astype(np.uint8)
    tokens.tofile(tmp_path / "train.bin")
    return tmp_path / "step_00100.safetensors", tmp_path / "train.bin", model, tokens


def reference_gradients(model: GPT, tokens: np.ndarray, batch_size: int, seed: int):
    """The same probe windows sliced by hand, mean cross-entropy, torch.autograd.grad."""
    offsets = probe_offsets(len(tokens), 16, batch_size, seed).numpy()
    windows = np.stack([tokens[i : i + 17] for i in offsets]).astype(np.int64)
    x, y = torch.from_numpy(windows[:, :-1]), torch.from_numpy(windows[:, 1:])
    model.eval()
    logits, _ = model(x)
    loss = F.cross_entropy(logits.reshape(-1, 128), y.reshape(-1))
    names, params = zip(*model.named_parameters(), strict=True)
    grads = torch.autograd.grad(loss, params)
    return {n: g.double().numpy() for n, g in zip(names, grads, strict=True)}, loss.item()


def test_gradient_records_match_autograd_on_the_same_weights(checkpoint):
    ckpt, train, model, tokens = checkpoint
    doc, diagrams = gradient_topology(ckpt, train, GPT_LAYERS, 8, 5, TOPO)
    ref, loss = reference_gradients(model, tokens, 8, 5)
    assert doc["probe_loss"] == pytest.approx(loss, rel=1e-6)
    expected, expected_dgms = layer_records(ref, GPT_LAYERS, **TOPO)
    assert [r["layer"] for r in doc["layers"]] == [r["layer"] for r in expected]
    assert len(doc["layers"]) == 2 * 4
    for got, want in zip(doc["layers"], expected, strict=True):
        for key in ("np_total", "np_rieck", "h0_total", "h1_total", "l2_norm"):
            assert got[key] == pytest.approx(want[key], rel=1e-5, abs=1e-12), (got["layer"], key)
    for key, d in expected_dgms.items():
        np.testing.assert_allclose(diagrams[key], d, rtol=1e-4, atol=1e-9)
    assert doc["step"] == 100 and doc["params"]["batch_size"] == 8


def test_the_probe_batch_is_fixed_by_its_seed(checkpoint):
    ckpt, train, _, _ = checkpoint
    a, _ = gradient_topology(ckpt, train, GPT_LAYERS, 4, 1, TOPO)
    b, _ = gradient_topology(ckpt, train, GPT_LAYERS, 4, 1, TOPO)
    c, _ = gradient_topology(ckpt, train, GPT_LAYERS, 4, 2, TOPO)
    assert a == b
    assert a["probe_loss"] != c["probe_loss"]
    assert torch.equal(probe_offsets(5000, 16, 4, 1), probe_offsets(5000, 16, 4, 1))


def test_writer_writes_record_and_diagrams_or_neither(checkpoint, tmp_path):
    ckpt, train, _, _ = checkpoint
    out = tmp_path / "grad.json", tmp_path / "grad.npz"
    write_gradient_topology(*out, ckpt, train, GPT_LAYERS, 4, 0, TOPO)
    doc = json.loads(out[0].read_text())
    with np.load(out[1]) as f:
        assert set(f.files) == {f"{r['layer']}/h{k}" for r in doc["layers"] for k in (0, 1)}
    bad = tmp_path / "bad.json", tmp_path / "bad.npz"
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        write_gradient_topology(*bad, ckpt, train, GPT_LAYERS, 0, 0, TOPO)
    assert not bad[0].exists() and not bad[1].exists()


def test_one_job_per_training_writes_the_per_checkpoint_records(checkpoint, tmp_path):
    """Walking a training's checkpoints in one process gives, file for file, the records and
    diagrams of a job per checkpoint."""
    ckpt, train, model, _ = checkpoint
    torch.manual_seed(4)
    later = tmp_path / "step_00200.safetensors"
    save_checkpoint(GPT(model.config), 200, later)
    outs = [(tmp_path / f"walk{i}.json", tmp_path / f"walk{i}.npz") for i in range(2)]
    seen = []
    write_training_gradients(
        outs, [ckpt, later], train, GPT_LAYERS, 4, 0, TOPO, progress=lambda *a: seen.append(a)
    )
    for (json_path, npz_path), source in zip(outs, [ckpt, later], strict=True):
        one = tmp_path / "one.json", tmp_path / "one.npz"
        write_gradient_topology(*one, source, train, GPT_LAYERS, 4, 0, TOPO)
        assert json.loads(json_path.read_text()) == json.loads(one[0].read_text())
        with np.load(npz_path) as walked, np.load(one[1]) as single:
            assert walked.files == single.files
            for key in walked.files:
                np.testing.assert_array_equal(walked[key], single[key])
    assert [a[1:4] for a in seen] == [(1, 2, 100), (2, 2, 200)]
    with pytest.raises(ValueError, match="2 checkpoints but 1"):
        write_training_gradients(outs[:1], [ckpt, later], train, GPT_LAYERS, 4, 0, TOPO)
