"""The two Vietoris–Rips engines: ripser.py (MIT, the core install) and giotto-ph (AGPL-3.0, the
`fast` extra). What `auto` resolves to with and without giotto-ph, and that both give the study's
features to 1e-5 relative on random clouds and on checkpoints of the study's model family."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from test_vietoris_rips import clouds

from benchmarks.study import study_models
from benchmarks.topology import make_checkpoint
from topotrain.config import GPT_LAYERS
from topotrain.jobs.topology import checkpoint_topology, write_checkpoint_topology
from topotrain.topology.layers import RECORD_KEYS, diagrams_summaries
from topotrain.topology.vietoris_rips import engine_note, resolve_engine, vr_diagrams

RTOL = 1e-5  # the bound; the bars are in fact identical (both round distances to float32)
COUNTS = {key for key in RECORD_KEYS if key.endswith("_count") or "_count_" in key}


@pytest.fixture
def no_giotto_ph(monkeypatch):
    """A process in which ``import gph`` fails, as without the `fast` extra."""
    monkeypatch.setitem(sys.modules, "gph", None)


def test_auto_is_giotto_ph_when_installed_else_ripser(no_giotto_ph):
    assert resolve_engine() == "ripser" and resolve_engine("auto") == "ripser"
    assert resolve_engine("auto", fast=True) == "giotto-ph"  # the workflow's answer for its jobs
    assert resolve_engine("ripser") == "ripser" and resolve_engine("giotto-ph") == "giotto-ph"
    with pytest.raises(ValueError, match="unknown Vietoris–Rips engine 'dionysus'"):
        resolve_engine("dionysus")


def test_the_engine_line_names_the_licence_of_the_engine_that_runs():
    assert engine_note("ripser") == "Vietoris–Rips engine: ripser.py (MIT, the core install)"
    assert engine_note("giotto-ph").startswith("Vietoris–Rips engine: giotto-ph (AGPL-3.0,")


def test_auto_picks_giotto_ph_where_it_is_installed():
    pytest.importorskip("gph")
    assert resolve_engine() == "giotto-ph"
    assert resolve_engine("auto", fast=False) == "ripser"  # jobs in the conda envs (ripser only)


def test_without_giotto_ph_auto_computes_with_ripser_and_giotto_ph_names_the_extra(
    no_giotto_ph, tmp_path
):
    X = np.random.default_rng(3).normal(size=(40, 5))
    np.testing.assert_array_equal(vr_diagrams(X)[1], vr_diagrams(X, engine="ripser")[1])
    with pytest.raises(ImportError, match=r"pip install 'topotrain\[fast\]'.*AGPL-3.0"):
        vr_diagrams(X, engine="giotto-ph")
    path = tmp_path / "c.safetensors"
    make_checkpoint(path, next(iter(study_models().values())))
    write_checkpoint_topology(path, tmp_path / "r.json", tmp_path / "r.npz", max_points=30)
    assert '"engine": "ripser"' in (tmp_path / "r.json").read_text()  # the record names it


@pytest.mark.parametrize("X", clouds().values(), ids=clouds().keys())
def test_ripser_engine_equals_the_public_ripser_py_exactly(X):
    import warnings

    from ripser import ripser

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ripser.py warns on square clouds
        ref = ripser(X, maxdim=1)["dgms"][1]
    ref = ref[ref[:, 1] > ref[:, 0]].astype(np.float64)
    h1 = vr_diagrams(X, engine="ripser")[1]
    np.testing.assert_array_equal(np.sort(h1, axis=0), np.sort(ref, axis=0))


def assert_features_agree(ours: dict, theirs: dict) -> None:
    """Counts equal, every other feature within RTOL relative (absolute 1e-12 near zero)."""
    assert ours.keys() == theirs.keys()
    for key, value in ours.items():
        if key in COUNTS or not isinstance(value, float):
            assert value == theirs[key], key
        else:
            assert value == pytest.approx(theirs[key], rel=RTOL, abs=1e-12), key


@pytest.mark.parametrize("n, d", [(128, 32), (256, 64), (200, 256)])
def test_engines_agree_on_the_features_of_gaussian_clouds(n, d):
    pytest.importorskip("gph")
    X = np.random.default_rng(n + d).normal(size=(n, d))
    fast, slow = vr_diagrams(X, engine="giotto-ph"), vr_diagrams(X, engine="ripser")
    assert len(fast[1]) > 10  # the comparison has H1 bars to compare
    assert_features_agree(diagrams_summaries(fast, 1), diagrams_summaries(slow, 1))


@pytest.mark.parametrize("model", list(study_models()))
def test_engines_agree_on_the_features_of_a_checkpoint_of_the_study(tmp_path, model):
    """Every per-layer record of one checkpoint of each of the study's models (its GPT family at
    the study's settings: max_points 200, H0 and H1), both engines."""
    pytest.importorskip("gph")
    path = tmp_path / f"{model}.safetensors"
    make_checkpoint(path, study_models()[model], seed=1)
    fast, dgms = checkpoint_topology(path, GPT_LAYERS, engine="giotto-ph")
    slow, _ = checkpoint_topology(path, GPT_LAYERS, engine="ripser")
    assert sum(len(d) for key, d in dgms.items() if key.endswith("/h1")) > 0
    for ours, theirs in zip(fast, slow, strict=True):
        assert_features_agree(ours, theirs)
