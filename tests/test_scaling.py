"""Power-law fits of final values against parameter count."""

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis import scaling
from topotrain.analysis.scaling import SCALING_COLUMNS, fit_power_law, scaling_table

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
            rows += [{"model": f"m{int(n)}", "seed": seed, "n_params": n, "step": s,
                      "val_loss": (5 if s == 0 else 3 * n**-0.4 + 1.5) + jitter,
                      "h0_total": 0.5 * n**0.3 + jitter, "np_mean": 0.2} for s in (0, 100)]  # fmt: skip
    table = scaling_table(pd.DataFrame(rows).sample(frac=1, random_state=0))
    assert table.columns.tolist() == SCALING_COLUMNS
    table = table.set_index("feature")
    assert (table["n_models"] == 5).all()
    assert table.loc["val_loss", ["a", "b", "c"]].tolist() == pytest.approx(
        [3, -0.4, 1.5], abs=1e-6
    )
    assert table.loc["h0_total", "loglog_slope"] == pytest.approx(0.3, abs=1e-9)
    assert not table.loc["np_mean", "converged"] and "constant" in table.loc["np_mean", "message"]
