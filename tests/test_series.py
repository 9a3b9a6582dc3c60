"""Diagram distances and vectorisations against hand-computed values, and a run's series table."""

import math

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.tables.aggregate import series_features
from topotrain.jobs.topology import write_run_series
from topotrain.topology.series import (
    LAYER_COLUMNS,
    betti_curve,
    bottleneck,
    integral,
    landscapes,
    layer_series,
    persistence_image,
    run_series,
    w1_distance,
)

A = np.array([[0.0, 1.0], [0.0, 3.0], [0.0, np.inf]])
B = np.array([[0.0, 2.0], [0.0, np.inf]])


def test_w1_and_bottleneck_between_hand_made_diagrams():
    # finite bars (0,1), (0,3) against (0,2), L∞ ground metric:
    # (0,3)↔(0,2) costs 1, (0,1) to the diagonal costs 1/2 → W1 = 1.5 (the other matching: 1 + 1.5);
    # bottleneck: the largest cost of the best matching, max(1, 1/2) = 1. Infinite bars left out.
    assert w1_distance(A, B) == pytest.approx(1.5, abs=1e-12)
    assert bottleneck(A, B) == pytest.approx(1.0, abs=1e-12)
    assert w1_distance(A, A) == 0.0 and bottleneck(B, B) == 0.0
    assert w1_distance(A, np.empty((0, 2))) == pytest.approx(0.5 + 1.5, abs=1e-12)


def test_landscape_of_a_single_bar_is_a_tent():
    grid = np.linspace(0.0, 4.0, 17)
    got = landscapes(np.array([[1.0, 3.0]]), 2, grid)
    tent = np.maximum(0.0, np.minimum(grid - 1.0, 3.0 - grid))  # Bubenik's λ_1 of (1, 3)
    np.testing.assert_allclose(got[0], tent, atol=1e-12)
    np.testing.assert_allclose(got[1], 0.0, atol=1e-12)  # one bar: λ_2 = 0


def test_second_landscape_of_two_nested_bars():
    grid = np.linspace(0.0, 4.0, 17)
    got = landscapes(np.array([[0.0, 4.0], [1.0, 3.0]]), 2, grid)
    big = np.maximum(0.0, np.minimum(grid, 4.0 - grid))
    small = np.maximum(0.0, np.minimum(grid - 1.0, 3.0 - grid))
    np.testing.assert_allclose(got[0], np.maximum(big, small), atol=1e-12)
    np.testing.assert_allclose(got[1], np.minimum(big, small), atol=1e-12)


def test_betti_curve_of_a_known_diagram():
    grid = np.linspace(0.0, 4.0, 5)
    # bars [1, 3) and [0, 2): alive at t = 0, 1, 2, 3, 4 → 1, 2, 1, 0, 0
    assert betti_curve(np.array([[1.0, 3.0], [0.0, 2.0], [0.0, np.inf]]), grid).tolist() == [
        1,
        2,
        1,
        0,
        0,
    ]


def test_persistence_image_mass_is_the_weighted_bar_count():
    # Two bars far from the image's edges: each Gaussian integrates to 1, weighted by persistence,
    # so the image's integral is Σ (d − b) = 1 + 2 = 3 (up to the pixel sums). gudhi samples
    # res points per side, both ends included: a pixel is (range / (res − 1))².
    bars = np.array([[2.0, 3.0], [4.0, 6.0]])
    res, im_range, sigma = 128, [0.0, 6.0, 0.0, 4.0], 0.2
    image = persistence_image(bars, res, im_range, sigma)
    pixel = (im_range[1] - im_range[0]) * (im_range[3] - im_range[2]) / (res - 1) ** 2
    assert image.sum() * pixel == pytest.approx(3.0, rel=1e-3)


def test_layer_series_scalars_by_hand():
    dgms = [np.array([[0.0, 1.0]]), np.array([[0.0, 2.0]]), np.array([[0.0, 2.0], [0.0, 4.0]])]
    scalars, arrays = layer_series(dgms, {"resolution": 401, "n_landscapes": 2})
    grid = arrays["grid"]
    assert grid[0] == 0.0 and grid[-1] == 4.0  # [0, largest death of the run]
    assert math.isnan(scalars["w1_step"][0])  # no previous checkpoint
    # (0,1)→(0,2): match, cost 1 (or both to the diagonal: 0.5 + 1); then (0,4) joins: cost 2
    assert scalars["w1_step"][1:] == pytest.approx([1.0, 2.0], abs=1e-12)
    assert scalars["bottleneck_step"][1:] == pytest.approx([1.0, 2.0], abs=1e-12)
    # landscape L2 of one bar (0, d): ∫ tent² = d³/12; Betti AUC of bars: Σ (d − b)
    assert scalars["landscape_l2"][0] == pytest.approx(math.sqrt(1 / 12), rel=1e-3)
    assert scalars["landscape_l2"][1] == pytest.approx(math.sqrt(8 / 12), rel=1e-3)
    assert scalars["betti_auc"] == pytest.approx([1.0, 2.0, 6.0], rel=1e-2)
    assert arrays["landscapes"].shape == (3, 2, 401) and arrays["betti"].shape == (3, 401)
    assert integral(arrays["betti"][2], grid) == pytest.approx(scalars["betti_auc"][2])


def checkpoints():
    return [
        (200, {"a/h0": np.array([[0.0, 1.0], [0.0, np.inf]]), "b/h0": np.array([[0.0, 3.0]])}),
        (0, {"a/h0": np.array([[0.0, 2.0], [0.0, np.inf]]), "b/h0": np.array([[0.0, 1.0]])}),
        (100, {"a/h0": np.array([[0.0, 2.0], [0.0, np.inf]]), "b/h0": np.array([[0.0, 2.0]])}),
    ]


def test_run_series_table_and_the_checkpoint_aggregate(tmp_path):
    table, arrays = run_series(checkpoints(), {"resolution": 16})
    assert list(table.columns) == LAYER_COLUMNS
    assert arrays["steps"].tolist() == [0, 100, 200]  # sorted by step
    a = table[table["layer"] == "a"].set_index("step")
    b = table[table["layer"] == "b"].set_index("step")
    assert a.loc[100, "h0_w1_step"] == 0.0 and a.loc[200, "h0_w1_step"] == pytest.approx(1.0)
    assert b.loc[100, "h0_w1_step"] == pytest.approx(1.0)
    assert table["h1_w1_step"].isna().all()  # no H1 diagrams saved (maxdim 0)
    feats = series_features(table.assign(model="m", seed=1)).set_index("step")
    assert math.isnan(feats.loc[0, "h0_w1_step"])  # stays NaN, not a sum of nothing
    assert feats.loc[200, "h0_w1_step"] == pytest.approx(1.0 + 1.0)  # summed over layers
    assert feats.loc[200, "h0_bottleneck_step"] == pytest.approx(1.0)  # maxed
    assert feats.loc[100, "h0_betti_auc"] == pytest.approx(
        b.loc[100, "h0_betti_auc"] / 2 + a.loc[100, "h0_betti_auc"] / 2
    )
    # the writer: the same table from npz files, and both outputs
    paths = []
    for step, dgms in checkpoints():
        paths.append(tmp_path / f"{step}.npz")
        np.savez(paths[-1], **dgms)
    out = {"table": tmp_path / "s.parquet", "arrays": tmp_path / "s.npz"}
    write_run_series([str(p) for p in paths], [200, 0, 100], {"resolution": 16}, out)
    pd.testing.assert_frame_equal(pd.read_parquet(out["table"]), table)
    with np.load(out["arrays"]) as f:
        assert f["a/h0/landscapes"].shape == (3, 3, 16)


def test_run_series_refuses_checkpoints_with_different_layers():
    bad = checkpoints()
    bad[2][1].pop("b/h0")
    with pytest.raises(ValueError, match="step 100 holds"):
        run_series(bad, {})
