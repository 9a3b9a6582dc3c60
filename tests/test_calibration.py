"""The calibration suite on few draws: bounds are Monte Carlo errors (3 SE),
not a doubled nominal."""

from __future__ import annotations

import numpy as np
import pytest

from topotrain.analysis.calibration import (
    CALIBRATION_COLUMNS,
    NULLS,
    _contrast_draws,
    _rows,
    _run_draws,
    calibration_table,
    simulate,
)
from topotrain.analysis.stats import ALPHA, spearman_rows


def ceiling(n: int, rate: float = ALPHA) -> float:
    """Nominal plus three Monte Carlo standard errors of a rate over n draws."""
    return rate + 3 * np.sqrt(rate * (1 - rate) / n)


def test_nulls_look_like_training():
    rng = np.random.default_rng(0)
    mono = simulate("near_monotone", rng, (200, 1))
    rho = spearman_rows(mono["x"][:, 0], mono["y"][:, 0])
    assert np.median(rho) < -0.97  # almost monotone: raw ρ ≈ −0.99
    decel = simulate("decel_ar095", rng, (200, 1))
    lag1 = [np.corrcoef(v[:-1], v[1:])[0, 1] for v in decel["y"][:, 0] - decel["y"][:, 0].mean(0)]
    assert np.median(lag1) > 0.6  # strongly autocorrelated fluctuation


@pytest.mark.parametrize("null", ["decel_ar095", "random_walk", "near_monotone"])
def test_seed_permutation_keeps_its_size_on_nulls_that_look_like_training(null):
    n = 300
    hits = _contrast_draws(null, n, 3, seed=1)
    for test in ("seed_contrast p (pooled)", "beats_clock (pooled)", "seed_contrast_l2 p (pooled)"):
        assert hits[test].mean() <= ceiling(n), test
    assert not hits["seed_contrast p (model)"].any()  # 3 seeds: p ≥ 1/6 per model


def test_first_differences_do_not_remove_a_decelerating_clock():
    n = 200
    hits = _run_draws("decel_iid", n, n_resamples=100, seed=2)
    assert hits["detrended p"].mean() > ceiling(n)  # the failure the suite must show
    assert hits["raw p"].mean() > 0.9


def test_seed_contrast_finds_a_planted_share_of_the_loss_fluctuation():
    hits = _contrast_draws("signal_r0.2", 100, 3, seed=3)
    assert hits["seed_contrast p (pooled)"].mean() > 0.8
    assert hits["beats_clock (pooled)"].mean() > 0.8


def test_table_rows_judge_nulls_and_report_power():
    rows = _rows({"seed_contrast p (pooled)": np.array([True] * 3 + [False] * 97)}, "decel_iid", 3)
    row = rows[0]
    assert row["rate"] == 0.03 and row["passes"] and row["used_in_verdicts"]
    assert row["mc_low"] < 0.03 < row["mc_high"]
    bad = _rows({"detrended p": np.array([True] * 40 + [False] * 60)}, "decel_iid", "1 run")[0]
    assert not bad["passes"] and not bad["used_in_verdicts"]
    power = _rows({"seed_contrast p (pooled)": np.ones(10, bool)}, "signal_r0.2", 3)[0]
    assert power["measures"] == "power" and np.isnan(power["passes"])
    assert not _rows({"partial_step p": np.ones(5, bool)}, "l2_function", "1 run")  # not its null


def test_calibration_table_covers_every_null_and_is_the_same_in_two_processes():
    one = calibration_table(
        n_sim=20, n_resamples=50, seeds=(3,), threads=1, progress=lambda m: None
    )
    assert list(one.columns) == CALIBRATION_COLUMNS
    assert set(one.loc[one["measures"] == "false-positive rate", "scenario"]) == {
        "sizes_gaussian",
        "sizes_heavy_tailed",
        *NULLS,
        "paired_gaussian",
        "paired_heavy_tailed",
    }
    two = calibration_table(
        n_sim=20, n_resamples=50, seeds=(3,), threads=2, progress=lambda m: None
    )
    assert one.equals(two)


def test_the_model_paired_sign_flip_test_keeps_its_size():
    from topotrain.analysis.calibration import _paired_draws

    for null in ("paired_gaussian", "paired_heavy_tailed"):
        hits = _paired_draws(null, 2000, seed=4)["T5 sign-flip p (paired by model)"]
        # exact: only all five differences positive reach p = 1/32 < 0.05
        assert abs(hits.mean() - 1 / 32) <= 3 * np.sqrt(1 / 32 * 31 / 32 / 2000), null


def test_the_across_size_rules_keep_their_size_when_nothing_depends_on_n():
    from topotrain.analysis.calibration import _size_draws

    n = 1000
    hits = _size_draws("sizes_gaussian", n, seed=5)
    # exact Spearman over 5 sizes: p < 0.05 only for the 2 of 120 orderings with |ρ| = 1
    assert abs(hits["T4/T6 Spearman vs N, exact p"].mean() - 2 / 120) <= 3 * np.sqrt(2 / 120 / n)
    assert hits["T7 log-log slope interval excludes 0"].mean() <= ceiling(n)  # Gaussian: exact
    assert hits["t2_monotone rule: reproduced"].mean() <= ceiling(n)
