"""The per-checkpoint topology job: layer selection, records, errors, atomic output, no torch."""

import importlib.util
import json
import subprocess
import sys
import zlib

import numpy as np
import pytest
from run_fixtures import fake_checkpoint
from safetensors.numpy import save_file

from topotrain.config import GPT_LAYERS
from topotrain.jobs.topology import checkpoint_topology, write_checkpoint_topology
from topotrain.topology import (
    feature_count,
    max_persistence,
    neural_persistence,
    persistence_entropy,
    total_persistence,
    vr_diagrams,
)
from topotrain.topology.layers import diagram_summaries, layer_rng, layer_topology, select_layers
from topotrain.topology.settings import TopologySettings

C_ATTN = "transformer.h.0.attn.c_attn.weight"
KEYS = ["layer", "rows", "cols", "n_points", "np_total", "np_p2", "np_rieck"]
SUMMARIES = [f"h{k}_{s}" for k in (0, 1) for s in ("count", "total", "max", "entropy")]
KEYS += SUMMARIES + ["l2_norm"] + [f"{key}_scalefree" for key in SUMMARIES] + ["np_wvar"]


def summaries(h0, h1, suffix=""):
    """h{k}_count/_total/_max/_entropy{suffix} of the diagrams h0, h1,
    from the summary functions."""
    funcs = {"count": feature_count, "total": total_persistence}
    funcs |= {"max": max_persistence, "entropy": persistence_entropy}
    return {f"h{k}_{s}{suffix}": f(d) for k, d in ((0, h0), (1, h1)) for s, f in funcs.items()}


def expected_record(layer, W, cloud, global_max=None):
    """A layer's record computed directly from the topology functions; the scale-free summaries
    from the diagrams divided by the RMS of the whole matrix; np_rieck scaled by ``global_max``."""
    h0, h1 = vr_diagrams(cloud)
    record = {"layer": layer, "rows": W.shape[0], "cols": W.shape[1], "n_points": len(cloud)}
    record |= neural_persistence(W, global_max) | summaries(h0, h1)
    rms = np.sqrt((W**2).sum() / W.size)
    record |= {"l2_norm": float(np.sqrt((W**2).sum()))}
    a = np.abs(W) / np.abs(W).max()
    wvar = (a**2).mean() - a.mean() ** 2  # var(|W| / max|W|), the moment formula
    return record | summaries(h0 / rms, h1 / rms, "_scalefree") | {"np_wvar": wvar}


def assert_record_matches(got, expected):
    assert list(got) == KEYS and got["layer"] == expected.pop("layer")
    assert {k: v for k, v in got.items() if k != "layer"} == pytest.approx(expected, rel=1e-12)


def test_records_match_direct_computation_and_skip_embeddings_and_biases(tmp_path):
    tensors = fake_checkpoint(tmp_path / "c.safetensors")
    records, diagrams = checkpoint_topology(tmp_path / "c.safetensors", GPT_LAYERS)
    assert [r["layer"] for r in records] == sorted(
        n for n in tensors if ".h.0." in n and "weight" in n
    )
    top = max(np.abs(tensors[r["layer"]]).max() for r in records)  # over the layers analysed
    for r in records:
        W = tensors[r["layer"]]
        assert_record_matches(r, expected_record(r["layer"], W, W, top))
        h0, h1 = vr_diagrams(W)
        np.testing.assert_array_equal(diagrams[f"{r['layer']}/h0"], h0)
        np.testing.assert_array_equal(diagrams[f"{r['layer']}/h1"], h1)
    assert sorted(diagrams) == sorted(f"{r['layer']}/h{k}" for r in records for k in (0, 1))


def test_select_layers_orders_blocks_numerically_and_keeps_only_matrices():
    t = {f"transformer.h.{b}.mlp.c_fc.weight": np.ones((2, 2)) for b in (10, 2, 0)}
    t["transformer.h.1.mlp.c_fc.weight"] = np.ones(3)  # 1-D: never a layer
    chosen = select_layers(t, ["*.c_fc.weight"])
    assert list(chosen) == [f"transformer.h.{b}.mlp.c_fc.weight" for b in (0, 2, 10)]


def test_subsample_picks_the_same_rows_of_a_layer_at_every_checkpoint(tmp_path):
    a = fake_checkpoint(tmp_path / "a.safetensors", seed=1)
    fake_checkpoint(tmp_path / "b.safetensors", seed=1, scale=2.0)  # same weights, c_attn doubled
    ra, da = checkpoint_topology(tmp_path / "a.safetensors", [C_ATTN], max_points=10, seed=5)
    rb, db = checkpoint_topology(tmp_path / "b.safetensors", [C_ATTN], max_points=10, seed=5)
    again, _ = checkpoint_topology(tmp_path / "a.safetensors", [C_ATTN], max_points=10, seed=5)
    assert again == ra and ra[0]["n_points"] == 10
    # the documented rule: 10 of the 24 rows, drawn by default_rng([seed, crc32(layer)]), sorted
    rows = np.sort(
        np.random.default_rng([5, zlib.crc32(C_ATTN.encode())]).choice(24, 10, replace=False)
    )
    W = a[C_ATTN]
    assert_record_matches(ra[0], expected_record(C_ATTN, W, W[rows]))
    np.testing.assert_allclose(db[f"{C_ATTN}/h0"], 2 * da[f"{C_ATTN}/h0"], rtol=1e-12)


def test_scalefree_summaries_equal_recomputing_on_the_matrix_over_its_rms():
    W = np.random.default_rng(3).normal(size=(60, 8)) * 0.037
    record, _ = layer_topology(W, "x", TopologySettings(max_points=40, seed=0, maxdim=1))
    cloud = W[np.sort(layer_rng(0, "x").choice(60, 40, replace=False))] / np.sqrt(np.mean(W**2))
    again = diagram_summaries(vr_diagrams(cloud)[0], 0) | diagram_summaries(
        vr_diagrams(cloud)[1], 1
    )
    got = {key: record[f"{key}_scalefree"] for key in again}
    assert {k: v for k, v in got.items() if k.startswith("h0_")} == pytest.approx(
        {k: v for k, v in again.items() if k.startswith("h0_")}, rel=1e-9
    )  # H0: exact float64 MST
    # H1: giotto-ph rounds distances to float32, and float32(d / rms) ≠ float32(d) / rms
    assert got["h1_count"] == again["h1_count"] > 0
    assert got == pytest.approx(again, rel=1e-6)


def test_scaling_the_weights_scales_raw_totals_and_leaves_scalefree_ones(tmp_path):
    tensors = fake_checkpoint(tmp_path / "a.safetensors", blocks=(0, 1))
    save_file(
        {k: (3.7 * v).astype(np.float32) for k, v in tensors.items()},
        str(tmp_path / "b.safetensors"),
    )
    a, _ = checkpoint_topology(tmp_path / "a.safetensors", GPT_LAYERS, max_points=20)
    b, _ = checkpoint_topology(tmp_path / "b.safetensors", GPT_LAYERS, max_points=20)
    assert len(a) == len(b) == 8 and all(r["h0_total"] > 0 for r in a)
    assert sum(r["h1_total"] > 0 for r in a) >= 4  # some layers of 8 points have no H1 bar
    # H0 is exact float64 (only the float32 weights round); H1 bars are differences of giotto-ph's
    # float32 distances, so a short bar carries ~1e-5 relative rounding
    for ra, rb in zip(a, b, strict=True):
        for k, rel in ((0, 1e-7), (1, 1e-4)):
            for s in ("total", "max"):
                raw, free = f"h{k}_{s}", f"h{k}_{s}_scalefree"
                assert rb[raw] == pytest.approx(3.7 * ra[raw], rel=rel)
                assert rb[free] == pytest.approx(ra[free], rel=rel)
            assert rb[f"h{k}_count_scalefree"] == ra[f"h{k}_count"]


def test_other_seed_picks_other_rows(tmp_path):
    fake_checkpoint(tmp_path / "a.safetensors", seed=1)
    r5, _ = checkpoint_topology(tmp_path / "a.safetensors", [C_ATTN], max_points=10, seed=5)
    r6, _ = checkpoint_topology(tmp_path / "a.safetensors", [C_ATTN], max_points=10, seed=6)
    assert r5[0]["h0_total"] != r6[0]["h0_total"]
    assert r5[0]["np_total"] == r6[0]["np_total"]  # NP always uses the whole matrix


def test_maxdim_zero_leaves_h1_uncomputed(tmp_path):
    fake_checkpoint(tmp_path / "c.safetensors")
    records, diagrams = checkpoint_topology(tmp_path / "c.safetensors", [C_ATTN], maxdim=0)
    assert [records[0][key] for key in KEYS if key.startswith("h1_")] == [None] * 8
    assert records[0]["h0_total_scalefree"] > 0
    assert list(diagrams) == [f"{C_ATTN}/h0"]


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_unreadable_checkpoint_names_the_file_and_writes_nothing(tmp_path, damage):
    path = tmp_path / "c.safetensors"
    fake_checkpoint(path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2] if damage == "truncate" else b"not a checkpoint" * 10)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(ValueError, match=f"cannot read checkpoint {path}"):
        write_checkpoint_topology(path, out / "r.json", out / "r.npz")
    assert list(out.iterdir()) == []


def test_missing_checkpoint_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.safetensors"):
        checkpoint_topology(tmp_path / "nope.safetensors")


def test_nan_weights_name_checkpoint_and_layer(tmp_path):
    path = tmp_path / "c.safetensors"
    tensors = fake_checkpoint(path)
    tensors["transformer.h.0.mlp.c_fc.weight"][3, 2] = np.nan
    save_file({k: v.astype(np.float32) for k, v in tensors.items()}, str(path))
    with pytest.raises(
        ValueError, match=r"c.safetensors, layer transformer.h.0.mlp.c_fc.weight: 1 NaN"
    ):
        checkpoint_topology(path, GPT_LAYERS)


def test_no_matching_layer_lists_the_available_names(tmp_path):
    fake_checkpoint(tmp_path / "c.safetensors")
    with pytest.raises(ValueError, match="no 2-D tensor matches .*available: .*wte"):
        checkpoint_topology(tmp_path / "c.safetensors", ["*.nothing"])


def test_written_record_and_diagrams_round_trip(tmp_path):
    fake_checkpoint(tmp_path / "c.safetensors")
    ckpt, out_json, out_npz = tmp_path / "c.safetensors", tmp_path / "r.json", tmp_path / "r.npz"
    records = write_checkpoint_topology(ckpt, out_json, out_npz, patterns=["*.c_fc.weight"], seed=3)
    doc = json.loads(out_json.read_text())
    assert doc["checkpoint"] == str(ckpt) and doc["layers"] == records
    assert doc["numerics"] is None  # a checkpoint not trained by topotrain records none
    assert doc["params"] == {
        "patterns": ["*.c_fc.weight"],
        "max_points": 200,
        "seed": 3,
        "maxdim": 1,
        "engine": "giotto-ph" if importlib.util.find_spec("gph") else "ripser",  # auto, resolved
        "weightwatcher": False,
    }
    _, diagrams = checkpoint_topology(ckpt, ["*.c_fc.weight"], seed=3)
    with np.load(out_npz) as npz:
        assert sorted(npz.files) == sorted(diagrams)
        for key, d in diagrams.items():
            np.testing.assert_array_equal(npz[key], d)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.safetensors", "r.json", "r.npz"]


def test_failed_json_write_leaves_no_npz_and_no_temp_files(tmp_path):
    fake_checkpoint(tmp_path / "c.safetensors")
    (tmp_path / "blocker").write_text("a file where the JSON's directory should be")
    with pytest.raises(OSError):
        write_checkpoint_topology(
            tmp_path / "c.safetensors", tmp_path / "blocker" / "r.json", tmp_path / "r.npz"
        )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "c.safetensors"]


@pytest.mark.parametrize("engine", ["ripser", "giotto-ph"])
def test_topology_job_never_imports_torch_scipy_or_sklearn(tmp_path, engine):
    """A cold job pays for every import 765 times a study: numpy, safetensors and the engine's
    compiled kernel (ripser.py's or giotto-ph's) are all it needs."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed, so nothing could import it")
    if engine == "giotto-ph":
        pytest.importorskip("gph")
    fake_checkpoint(tmp_path / "c.safetensors")
    code = (
        "import sys; from topotrain.jobs.topology import weight_topology_job; "
        f"weight_topology_job({str(tmp_path / 'c.safetensors')!r}, "
        f"{{'patterns': ['*'], 'max_points': 50, 'seed': 0, 'maxdim': 1, 'engine': {engine!r}}}, "
        f"{{'record': {str(tmp_path / 'r.json')!r}, 'diagrams': {str(tmp_path / 'r.npz')!r}}}); "
        "print(sorted(m for m in ('torch', 'scipy', 'sklearn', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert json.loads((tmp_path / "r.json").read_text())["params"]["engine"] == engine
