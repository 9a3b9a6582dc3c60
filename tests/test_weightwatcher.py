"""WeightWatcher's metrics (topology.weightwatcher): the package's numbers against the singular
values computed here, α against a spectrum whose power law is known, and each fit status."""

from __future__ import annotations

import math

import numpy as np
import pytest

from topotrain.baselines.weightwatcher import COLUMNS, fit_status, ww_layers

pytest.importorskip("weightwatcher")


def with_spectrum(n: int, singular: np.ndarray, seed: int = 0) -> np.ndarray:
    """An n × len(singular) matrix whose singular values are ``singular``."""
    rng = np.random.default_rng(seed)
    m = len(singular)
    u, _ = np.linalg.qr(rng.normal(size=(n, m)))
    v, _ = np.linalg.qr(rng.normal(size=(m, m)))
    return (u * singular) @ v.T


@pytest.fixture(scope="module")
def layers() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {
        "wide": rng.normal(size=(144, 48)) / 7,  # 48 eigenvalues: a fit
        "square": rng.normal(size=(24, 24)),  # 24
        "small": rng.normal(size=(32, 8)),  # 8: a small fit
        "too_small": rng.normal(size=(30, 7)),  # 7: skipped
    }


def test_norms_and_ranks_are_those_of_the_singular_values(layers):
    records = ww_layers(layers)
    assert [r["layer"] for r in records] == list(layers)
    assert all(list(r) == list(COLUMNS) for r in records)
    for r in records[:3]:
        lam = np.linalg.svd(layers[r["layer"]].astype(np.float32), compute_uv=False) ** 2
        assert r["num_evals"] == len(lam)
        assert r["log_spectral_norm"] == pytest.approx(math.log10(lam.max()), rel=1e-4)
        assert r["log_norm"] == pytest.approx(math.log10(lam.sum()), rel=1e-4)
        assert r["stable_rank"] == pytest.approx(lam.sum() / lam.max(), rel=1e-4)
        assert r["alpha_weighted"] == pytest.approx(r["alpha"] * math.log10(lam.max()), rel=1e-4)


def test_each_layer_says_how_its_alpha_came_about(layers):
    fits = {r["layer"]: r["fit"] for r in ww_layers(layers)}
    assert fits["small"] == "small" and fits["too_small"] == "skipped"
    assert fits["wide"] in ("fitted", "warned") and fits["square"] in ("fitted", "warned")
    skipped = ww_layers(layers)[3]
    assert skipped["num_evals"] == 7 and all(
        math.isnan(skipped[m]) for m in ("alpha", "stable_rank")
    )
    assert [fit_status(n, w) for n, w in ((7, ""), (19, "over-trained"), (20, ""), (48, "x"))] == [
        "skipped",
        "small",
        "fitted",
        "warned",
    ]


def test_alpha_recovers_a_known_power_law():
    """Eigenvalues drawn from a Pareto density ∝ λ^−a (λ ≥ 1): the fitted α is a, within the
    estimator's spread at 400 eigenvalues (the MLE's sd ≈ (a − 1)/√n_tail)."""
    a = 3.0
    u = np.random.default_rng(2).uniform(size=400)
    lam = (1 - u) ** (-1 / (a - 1))
    (record,) = ww_layers({"pareto": with_spectrum(800, np.sqrt(lam))})
    assert record["fit"] in ("fitted", "warned") and abs(record["alpha"] - a) < 0.4


def test_a_matrix_that_is_not_finite_is_named(layers):
    bad = dict(layers, broken=np.full((10, 10), np.nan))
    with pytest.raises(ValueError, match="layer broken"):
        ww_layers(bad)


def test_a_record_with_a_layer_too_small_to_fit_is_json_and_averages_without_it():
    """A LoRA-rank matrix (48 × 4: 4 eigenvalues) gets None metrics in a topology record (its JSON
    has no NaN) and the checkpoint's ww_*_mean is the other layers'."""
    import json

    import pandas as pd

    from topotrain.analysis.tables.aggregate import ww_features
    from topotrain.baselines.weightwatcher import with_ww

    rng = np.random.default_rng(3)
    matrices = {"big": rng.normal(size=(64, 32)), "lora": rng.normal(size=(48, 4))}
    records = with_ww([{"layer": "big", "np_total": 1.0}, {"layer": "lora"}], matrices)
    text = json.dumps(records, allow_nan=False)  # io.write_record's rule
    lora = json.loads(text)[1]
    assert lora["ww_fit"] == "skipped" and lora["ww_alpha"] is None and lora["ww_num_evals"] == 4
    table = pd.DataFrame(json.loads(text)).assign(model="m", seed=0, step=5)  # as records read
    means = ww_features(table).iloc[0]
    assert means["ww_alpha_mean"] == pytest.approx(records[0]["ww_alpha"])
    assert means["ww_skipped_layers"] == 1
    with pytest.raises(ValueError, match="no matrix for layers"):
        with_ww([{"layer": "absent"}], matrices)


def test_alpha_halves_are_the_means_over_alternate_layers():
    """ww_alpha_half1_mean averages the 1st and 3rd layer's α, half2 the 2nd and 4th (a skipped
    layer's missing α left out); ww_alpha_mean all four."""
    import pandas as pd

    from topotrain.analysis.tables.aggregate import ww_features

    alphas = [2.0, 3.0, 4.0, None]
    table = pd.DataFrame(
        {
            "model": "m",
            "seed": 0,
            "step": 10,
            "layer": ["a", "b", "c", "d"],
            "ww_alpha": alphas,
            "ww_fit": ["fitted", "fitted", "small", "skipped"],
            **{f"ww_{m}": 1.0 for m in ("alpha_weighted", "log_spectral_norm", "log_norm")},
            "ww_stable_rank": 1.0,
        }
    )
    row = ww_features(table).iloc[0]
    assert row["ww_alpha_half1_mean"] == 3.0 and row["ww_alpha_half2_mean"] == 3.0
    assert row["ww_alpha_mean"] == 3.0 and row["ww_small_layers"] == 1
    table.loc[1, "ww_alpha"] = 5.0
    row = ww_features(table).iloc[0]
    assert row["ww_alpha_half2_mean"] == 5.0 and row["ww_alpha_mean"] == pytest.approx(11 / 3)
