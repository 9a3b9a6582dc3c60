"""Power-law fits of final values against parameter count, with small-n honest statistics."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.inference.stats import spearman_exact
from topotrain.analysis.prediction import scaling
from topotrain.analysis.prediction.scaling import (
    SCALING_COLUMNS,
    adjusted_r2,
    fit_power_law,
    scaling_table,
)

N = np.array([2936, 7408, 20640, 46368, 97200], dtype=float)  # the study's family


def test_power_law_with_offset_is_recovered_to_1e_6():
    fit = fit_power_law(N, 3 * N**-0.4 + 1.5)
    assert fit["converged"] and fit["message"] == ""
    assert (fit["a"], fit["b"], fit["c"]) == pytest.approx((3, -0.4, 1.5), abs=1e-6)
    assert fit["r2"] == pytest.approx(1.0) and fit["spearman_rho"] == pytest.approx(-1.0)


def test_pure_power_law_has_exact_loglog_slope_and_unit_r2():
    fit = fit_power_law(N, 2 * N**0.7)
    assert fit["loglog_slope"] == pytest.approx(0.7, abs=1e-12)
    assert fit["loglog_intercept"] == pytest.approx(np.log(2), abs=1e-10)
    assert fit["loglog_r2"] == pytest.approx(1.0, abs=1e-12)
    assert fit["converged"] and (fit["a"], fit["b"]) == pytest.approx((2, 0.7), abs=1e-6)


@pytest.mark.parametrize(
    "n, y, message",
    [(N[:2], np.array([1.0, 2.0]), "2 points"), (N, np.full(5, 3.0), "constant")],
)
def test_unfittable_input_is_reported_not_converged(n, y, message):
    fit = fit_power_law(n, y)
    assert not fit["converged"] and message in fit["message"]
    assert np.isnan([fit["a"], fit["b"], fit["c"], fit["r2"]]).all()


def test_optimiser_failure_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(scaling, "MAXFEV", 1)
    fit = fit_power_law(N, 3 * N**-0.4 + 1.5 + 0.01 * np.sin(N))
    assert not fit["converged"] and "did not converge" in fit["message"]
    assert fit["loglog_slope"] < 0  # the other summaries are still reported


def test_loglog_line_is_skipped_with_a_message_when_a_value_is_not_positive():
    fit = fit_power_law(N, -(3 * N**-0.4 + 1.5))
    assert np.isnan(fit["loglog_slope"]) and "y > 0" in fit["message"]
    assert fit["converged"] and fit["b"] == pytest.approx(-0.4, abs=1e-6)


def test_scaling_table_uses_the_final_checkpoint_mean_over_seeds():
    rows = []
    for n in N:
        for seed, jitter in ((1, -0.01), (2, 0.01)):
            rows += [
                {
                    "model": f"m{int(n)}",
                    "seed": seed,
                    "n_params": n,
                    "step": s,
                    "val_loss": (5 if s == 0 else 3 * n**-0.4 + 1.5) + jitter,
                    "h0_total": 0.5 * n**0.3 + jitter,
                    "np_mean": 0.2,
                }
                for s in (0, 100)
            ]
    table = scaling_table(pd.DataFrame(rows).sample(frac=1, random_state=0))
    assert table.columns.tolist() == SCALING_COLUMNS
    table = table.set_index("feature")
    assert (table.drop(index="h0_mean_bar")["n_models"] == 5).all()
    assert table.loc["val_loss", ["a", "b", "c"]].tolist() == pytest.approx(
        [3, -0.4, 1.5], abs=1e-6
    )
    assert table.loc["h0_total", "loglog_slope"] == pytest.approx(0.3, abs=1e-9)
    assert not table.loc["np_mean", "converged"] and "constant" in table.loc["np_mean", "message"]


def test_a_missing_feature_gets_a_row_saying_so():
    table = scaling_table(
        pd.DataFrame(
            {"model": ["a", "b"], "n_params": [1, 2], "step": [9, 9], "val_loss": [2.0, 1.0]}
        ),
        ["val_loss", "h0_mean_bar"],
    )
    row = table.set_index("feature").loc["h0_mean_bar"]
    assert row["n_models"] == 0 and not row["converged"]
    assert "not in the feature table" in row["message"] and np.isnan(row["b"])


def brute_force_spearman_p(x, y):
    """Two-sided p over every ordering of y: share of orderings with |ρ| ≥ |ρ observed|."""
    rho = stats.spearmanr(x, y).statistic
    null = [stats.spearmanr(x, perm).statistic for perm in itertools.permutations(y)]
    return rho, np.mean(np.abs(null) >= abs(rho) - 1e-12)


@pytest.mark.parametrize(
    "y, rho, p",
    [
        ([1, 2, 3, 5, 4], 0.9, 10 / 120),
        ([5, 4, 3, 2, 1], -1.0, 2 / 120),
        ([2, 1, 4, 3, 5], 0.8, None),
        ([1, 1, 2, 3, 3], None, None),
        ([3, 1, 2], None, None),
    ],
)
def test_spearman_exact_p_matches_brute_force_enumeration(y, rho, p):
    x = np.arange(1, len(y) + 1) * 1000.0
    got_rho, got_p = spearman_exact(x, np.array(y, float))
    want_rho, want_p = brute_force_spearman_p(x, np.array(y, float))
    assert (got_rho, got_p) == pytest.approx((want_rho, want_p), abs=1e-12)
    if rho is not None:
        assert got_rho == pytest.approx(rho, abs=1e-12)
    if p is not None:
        assert got_p == pytest.approx(p, abs=1e-12)


def test_scaling_reports_exact_and_asymptotic_spearman_p_of_the_paper_tp0_case():
    fit = fit_power_law(N, np.array([1.0, 2.0, 3.0, 5.0, 4.0]))  # ρ = 0.9, as TP0 in Table 7
    assert fit["spearman_rho"] == pytest.approx(0.9)
    assert fit["spearman_p_exact"] == pytest.approx(1 / 12)
    assert fit["spearman_p_asymptotic"] == pytest.approx(0.0374, abs=1e-4)


def test_spearman_p_above_eight_points_is_a_seeded_monte_carlo_estimate():
    x, y = np.arange(10.0), np.array([0, 2, 1, 3, 5, 4, 6, 9, 7, 8.0])
    rho, p = spearman_exact(x, y)
    assert p == spearman_exact(x, y)[1]  # seeded
    assert p == pytest.approx(stats.spearmanr(x, y).pvalue, abs=5e-3)  # n = 10: close to t-approx


def test_adjusted_r2_follows_the_formula_with_k_fitted_slopes():
    y = 3 * N**-0.4 + 1.5 + np.array([0.004, -0.003, 0.002, -0.004, 0.003])
    fit = fit_power_law(N, y)
    assert fit["r2_adj"] == pytest.approx(1 - (1 - fit["r2"]) * 4 / 2)  # k = 2 (a, b), n = 5
    assert fit["loglog_r2_adj"] == pytest.approx(1 - (1 - fit["loglog_r2"]) * 4 / 3)  # k = 1
    assert adjusted_r2(0.8, 10, 3) == pytest.approx(1 - 0.2 * 9 / 6)
    assert np.isnan(adjusted_r2(0.9, 3, 2)) and np.isnan(adjusted_r2(0.9, 2, 1))


def test_two_points_give_no_slope_interval_or_adjusted_r2_and_say_why():
    fit = fit_power_law(N[:2], np.array([2.0, 1.0]))
    assert np.isfinite(fit["loglog_slope"]) and np.isnan(fit["loglog_r2_adj"])
    assert np.isnan([fit["loglog_slope_ci_low"], fit["loglog_slope_ci_high"]]).all()
    assert "n − k − 1 = 0" in fit["message"]


@pytest.mark.parametrize("noise", [0.0, 0.005, 0.02])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exponent_intervals_are_ordered_and_cover_the_true_exponent(noise, seed):
    rng = np.random.default_rng(seed)
    offset = 3 * N**-0.4 + 1.5 + noise * rng.normal(size=N.size)
    pure = 2 * N**0.7 * np.exp(noise * rng.normal(size=N.size))
    fit, line = fit_power_law(N, offset), fit_power_law(N, pure)
    assert fit["b_ci_low"] <= fit["b"] <= fit["b_ci_high"]
    assert fit["b_ci_low"] - 1e-6 <= -0.4 <= fit["b_ci_high"] + 1e-6
    assert line["loglog_slope_ci_low"] <= line["loglog_slope"] <= line["loglog_slope_ci_high"]
    assert line["loglog_slope_ci_low"] - 1e-9 <= 0.7 <= line["loglog_slope_ci_high"] + 1e-9
    if noise == 0:
        assert fit["b_ci_high"] - fit["b_ci_low"] < 1e-6


def test_loglog_slope_interval_is_the_t_interval_with_nominal_coverage():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        y = 2 * N**0.7 * np.exp(rng.normal(0, 0.05, N.size))
        line = scaling.loglog_line(N, y)
        res = stats.linregress(np.log(N), np.log(y))
        half = stats.t.ppf(0.975, N.size - 2) * res.stderr
        assert line["loglog_slope_ci_high"] == pytest.approx(res.slope + half, rel=1e-12)
        hits += line["loglog_slope_ci_low"] <= 0.7 <= line["loglog_slope_ci_high"]
    assert 0.92 <= hits / 400 <= 0.98


def test_exponent_interval_is_open_at_the_bound_when_the_data_do_not_limit_b():
    y = 3 * N**-0.4 + 1.5 + np.array([0.02, -0.02, 0.02, -0.02, 0.02])
    fit = fit_power_law(N, y)
    assert fit["converged"] and np.isinf([fit["b_ci_low"], fit["b_ci_high"]]).any()
    assert "search bound" in fit["message"]
