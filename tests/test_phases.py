"""Phase transitions: the largest Δ, diminishing returns, ruptures changepoints."""

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.dynamics.phases import (
    changepoints,
    phase_table,
    phase_transitions,
    total_steps,
)

STEPS = np.arange(0, 5001, 100)


def test_planted_logistic_peak_is_found_at_the_later_step_of_the_steepest_pair():
    # steepest at 1850, midway between checkpoints 1800 and 1900: by symmetry that pair has the
    # largest Δ, which is attributed to its later step, 1900
    np_series = 0.3 + 0.2 / (1 + np.exp(-(STEPS - 1850) / 150))
    res = phase_transitions(STEPS, np_series, 5000)
    assert res["peak_step"] == 1900 and res["peak_frac"] == pytest.approx(1900 / 5000)
    expected = 0.2 / (1 + np.exp(-50 / 150)) - 0.2 / (1 + np.exp(50 / 150))
    assert res["peak_delta"] == pytest.approx(expected)


def test_peak_is_found_in_unsorted_input_and_for_falling_series():
    order = np.random.default_rng(0).permutation(STEPS.size)
    falling = 1 - 0.5 / (1 + np.exp(-(STEPS - 3050) / 200))
    res = phase_transitions(STEPS[order], falling[order], 5000)
    assert res["peak_step"] == 3100 and res["peak_delta"] < 0


def test_diminishing_returns_step_matches_hand_computation():
    values = np.array([0.0, 0.1, 0.5, 0.8, 0.95, 0.99, 0.995, 0.996])
    steps = np.arange(8) * 10
    # Δ = .1 .4 .3 .15 .04 .005 .001 at steps 10..70 → peak .4 at step 20;
    # threshold 0.1·0.4 = 0.04; first later |Δ| < 0.04 is .005 at step 60 (.04 itself is not <)
    res = phase_transitions(steps, values, 80, threshold=0.1)
    assert (res["peak_step"], res["diminishing_step"]) == (20, 60)
    assert res["peak_delta"] == pytest.approx(0.4)
    assert (res["peak_frac"], res["diminishing_frac"]) == pytest.approx((20 / 80, 60 / 80))
    assert phase_transitions(steps, values, 80, threshold=0.2)["diminishing_step"] == 50


def test_never_diminishing_too_short_and_constant_series_are_reported():
    res = phase_transitions([0, 10, 20, 30], [0, 1, 2, 3.5], 30)
    assert res["peak_step"] == 30 and res["diminishing_step"] is None
    assert np.isnan(res["diminishing_frac"]) and "never fell" in res["note"]
    short = phase_transitions([0, 10], [1, 2], 10)
    assert short["peak_step"] is None and "need at least 3" in short["note"]
    flat = phase_transitions(STEPS, np.ones(STEPS.size), 5000)
    assert flat["peak_step"] is None and "constant" in flat["note"]


@pytest.mark.parametrize("model", ["l2", "rbf"])
def test_changepoints_land_exactly_on_planted_jumps(model):
    values = np.r_[np.zeros(12), np.ones(20), 3 * np.ones(19)] + 0.001 * np.sin(np.arange(51))
    # new segments begin at indices 12 and 32, i.e. steps 1200 and 3200
    assert changepoints(STEPS, values, n_bkps=2, model=model) == [1200, 3200]


def test_pelt_with_a_penalty_finds_the_same_planted_jumps():
    values = np.r_[np.zeros(12), np.ones(20), 3 * np.ones(19)] + 0.001 * np.sin(np.arange(51))
    assert changepoints(STEPS, values, penalty=1.0) == [1200, 3200]
    with pytest.raises(ValueError, match="exactly one"):
        changepoints(STEPS, values)


def test_changepoints_of_short_or_constant_series_are_empty():
    assert changepoints([0, 10, 20], [0.0, 1.0, 2.0], n_bkps=2) == []
    assert changepoints(STEPS, np.ones(STEPS.size), n_bkps=2) == []
    # 6 points with segments of ≥ 2 allow at most 2 breakpoints, and only the split 2 + 2 + 2
    assert changepoints(STEPS[:6], [0, 0, 0, 5, 5, 5.0], n_bkps=4) == [200, 400]


def test_total_steps_comes_from_frac():
    run = pd.DataFrame({"step": [0, 100, 200], "frac": [0.0, 0.25, 0.5]})
    assert total_steps(run) == 400 and total_steps(run.drop(columns="frac")) == 200


def test_phase_table_has_a_row_per_run_with_notes_for_short_runs():
    long = pd.DataFrame(
        {
            "model": "big",
            "seed": 1,
            "n_params": 20,
            "step": STEPS,
            "frac": STEPS / 5000,
            "np_mean": np.tanh(STEPS / 1000),
            "h0_total": np.r_[np.zeros(25), np.ones(26)],
        }
    )
    short = long.iloc[:2].assign(model="small", n_params=10)
    table = phase_table(pd.concat([long, short]), n_bkps=1)
    assert table["model"].tolist() == ["small", "big"]
    big = table.iloc[1]
    assert big["changepoints"] == "2500" and big["changepoint_feature"] == "h0_total"
    assert big["peak_step"] == 100 and big["total_steps"] == 5000
    assert big["changepoints_np_mean"] != "" and big["note"] == ""
    small = table.iloc[0]
    assert pd.isna(small["peak_step"]) and "need at least 3" in small["note"]
    assert small["changepoints"] == "" and "0 of 1 changepoints" in small["note"]


def test_the_callback_and_the_phases_table_report_the_same_causal_step():
    """One name, one rule: the phases table's causal_step is the step the TopologyCallback fires
    at on the same series; diminishing_step (hindsight) is a different rule, named apart."""
    import pandas as pd

    from topotrain.analysis.dynamics.phases import phase_table
    from topotrain.callbacks import TopologyCallback

    values = [1.0, 2.0, 2.5, 2.6, 2.62, 2.7, 3.5, 3.51]
    steps = [100 * i for i in range(len(values))]
    callback = TopologyCallback(watch=["np_mean"], threshold=0.2, patience=2)
    for step, value in zip(steps, values, strict=True):
        callback.update(step, {"np_mean": value})
    df = pd.DataFrame(
        {
            "model": "m",
            "seed": 0,
            "n_params": 1,
            "step": steps,
            "np_mean": values,
            "h0_total": values,
        }
    )
    row = phase_table(df, threshold=0.2).iloc[0]
    assert row["causal_step"] == callback.fired["np_mean"] == 400
    # hindsight: the largest Δ is 1.0 (at 100); the first later |Δ| < 0.2 is 0.1, at 300
    assert row["peak_step"] == 100 and row["diminishing_step"] == 300
