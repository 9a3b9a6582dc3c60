"""Big checkpoints: layers spread over threads give the one-thread records, and the row-block
passes over a matrix give what the whole float64 matrix gives."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import numpy as np
import pytest

import topotrain.topology.layers as layers
from topotrain.topology.layers import layer_records, norms, spread_layers
from topotrain.topology.neural_persistence import normalised_variance

neural = importlib.import_module("topotrain.topology.neural_persistence")  # not the function


def matrices(seed: int = 0) -> dict[str, np.ndarray]:
    """Layers of mixed shapes, float32 and float64, one with ties and exact zeros."""
    rng = np.random.default_rng(seed)
    shapes = [(30, 12), (12, 48), (64, 9), (7, 7), (25, 40)]
    mats = {f"l.{i}.weight": rng.normal(size=s).astype(np.float32) for i, s in enumerate(shapes)}
    mats["l.5.weight"] = np.round(rng.normal(size=(20, 15)), 1)  # float64, ties and zeros
    return mats


def test_spread_only_where_the_matrices_are_big_and_threads_were_given(monkeypatch):
    shapes = [(4096, 1024)] * 3 + [(1024, 4096)]  # 16.8 M entries in all
    monkeypatch.setattr(layers, "SPREAD_ENTRIES", 1 << 24)
    assert spread_layers(shapes, 1) == 1  # one thread: nothing to spread over
    assert spread_layers(shapes[:3], 8) == 1  # 12.6 M entries: the Rips kernel gets the threads
    assert spread_layers(shapes + [(8, 8)], 8) == 5  # no more threads than layers
    assert spread_layers(shapes * 4, 8) == 8


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_layers_spread_over_threads_give_the_one_thread_records(monkeypatch, threads):
    mats = matrices()
    one, one_dgms = layer_records(mats, ["*"], max_points=20, seed=1)
    monkeypatch.setattr(layers, "SPREAD_ENTRIES", 0)  # spread even these small layers
    assert spread_layers([m.shape for m in mats.values()], threads) == min(threads, 6)
    spread, spread_dgms = layer_records(mats, ["*"], max_points=20, seed=1, n_threads=threads)
    assert json.dumps(spread) == json.dumps(one)  # same records, same order, bit for bit
    assert list(spread_dgms) == list(one_dgms)
    assert all(np.array_equal(spread_dgms[k], one_dgms[k]) for k in one_dgms)


def test_an_error_in_a_spread_layer_names_it_and_is_the_first_in_layer_order(monkeypatch):
    mats = matrices()
    mats["l.2.weight"][3, 4] = np.nan
    mats["l.4.weight"][0, 0] = np.inf
    monkeypatch.setattr(layers, "SPREAD_ENTRIES", 0)
    with pytest.raises(ValueError, match=r"^w, layer l\.2\.weight: 1 NaN/inf weights$"):
        layer_records(mats, ["*"], max_points=20, n_threads=3, source="w")


def old_moments(W: np.ndarray) -> tuple[float, float, float]:
    """‖W‖_F, RMS and var(|W|/max|W|) as computed before, on the whole float64 matrix."""
    W = np.asarray(W, dtype=np.float64)
    a = np.abs(W)
    return (
        float(np.linalg.norm(W)),
        float(np.sqrt(np.mean(np.square(W)))),
        float(np.var(a / a.max())),
    )


@pytest.mark.parametrize("transposed", [False, True])
def test_moments_in_one_block_are_the_whole_matrix_ones_bit_for_bit(transposed):
    W = np.random.default_rng(4).normal(size=(90, 70)).astype(np.float32)
    W = W.T if transposed else W
    l2, rms, bad = norms(W)
    assert (l2, rms, normalised_variance(W)) == old_moments(W) and bad == 0


def test_moments_in_row_blocks_equal_the_whole_matrix_to_rounding(monkeypatch):
    W = np.random.default_rng(5).normal(size=(301, 57))
    expected = old_moments(W)
    real = layers.row_blocks
    monkeypatch.setattr(layers, "row_blocks", lambda r, c: real(r, c, block=1000))
    monkeypatch.setattr(neural, "row_blocks", lambda r, c: real(r, c, block=1000))
    assert len(layers.row_blocks(*W.shape)) == 18
    l2, rms, bad = norms(W)
    got = (l2, rms, normalised_variance(W))
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=0)
    W[7, 7], W[300, 0] = np.nan, -np.inf
    assert norms(W)[2] == 2


FIRST_CALLS = """
import json, threading, numpy as np
import topotrain.topology.layers as layers
from topotrain.topology.layers import layer_records
rng = np.random.default_rng(0)
mats = {f"l.{i}.weight": rng.normal(size=(40, 9 + i)).astype(np.float32) for i in range(8)}
layers.SPREAD_ENTRIES = 0
spread, _ = layer_records(mats, ["*"], max_points=30, n_threads=4)
layers.SPREAD_ENTRIES = 1 << 60
one, _ = layer_records(mats, ["*"], max_points=30)
print(json.dumps(spread) == json.dumps(one))
"""


def test_threads_that_first_call_the_rips_kernel_at_once_do_not_deadlock():
    """The first ``births_and_deaths_by_dim`` of giotto-ph's kernel initialises static state
    (importing NumPy's C API); two threads making it at once deadlock (each holds what the other
    waits for: the GIL, the state's guard), as a fresh process with layers spread over 4 threads
    did 4 times in 5. The kernel is now loaded and first called by one thread, under a lock."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALLS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
