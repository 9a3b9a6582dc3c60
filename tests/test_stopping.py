"""Causal stopping rules on hand-made curves, their causality, Pareto ranks and the run table."""

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.prediction.stopping import (
    STOPPING_COLUMNS,
    fraction_stop,
    pareto_ranks,
    plateau_stop,
    stopping_summary,
    stopping_table,
    topology_stop,
)

STEPS = np.arange(6) * 100
LOSS = np.array([4.0, 3.0, 2.5, 2.49, 2.488, 2.487])
# relative gains per interval: .25, .1667, .004, .000803, .000402


@pytest.mark.parametrize(
    ("threshold", "patience", "expected"),
    [(0.005, 1, 3), (0.005, 2, 4), (0.005, 3, 5), (0.001, 1, 4), (0.0001, 1, None), (0.2, 1, 2)],
)
def test_plateau_stop_on_a_hand_made_curve(threshold, patience, expected):
    assert plateau_stop(STEPS, LOSS, threshold, patience) == expected


def test_topology_stop_waits_for_the_running_peak_and_patience():
    values = np.array([0.0, 10.0, 15.0, 16.0, 16.5, 16.6, 16.65])
    steps = np.arange(7) * 10
    # |Δ| = 10, 5, 1, .5, .1, .05; peak 10 at k = 1; below 0.1·10 = 1 (strict) from k = 4 on
    assert topology_stop(steps, values, 0.1, 1) == 4
    assert topology_stop(steps, values, 0.1, 2) == 5
    assert topology_stop(steps, values, 0.1, 4) is None
    # a later, larger jump is a new peak: the count restarts after it
    jump = np.array([0.0, 1.0, 1.05, 1.06, 11.0, 11.01, 11.02])
    assert topology_stop(np.arange(7), jump, 0.1, 1) == 2
    assert topology_stop(np.arange(7), jump, 0.1, 2) == 3
    assert topology_stop(np.arange(7), np.full(7, 3.0), 0.1, 1) is None  # constant: never


def test_fraction_stop_takes_the_first_checkpoint_at_or_after_the_fraction():
    steps = np.arange(51) * 100  # 0 … 5000
    assert fraction_stop(steps, 0.25) == 13  # 1250 → step 1300
    assert fraction_stop(steps, 0.5) == 25
    assert fraction_stop(steps, 1.0) == 50


def test_every_rule_is_causal_later_values_do_not_change_an_earlier_stop():
    rng = np.random.default_rng(0)
    steps = np.arange(40) * 50
    for _ in range(50):
        loss = 3 * np.exp(-np.arange(40) / rng.uniform(3, 15)) + 1 + rng.normal(0, 0.01, 40)
        feature = np.cumsum(rng.exponential(1.0, 40) * np.exp(-np.arange(40) / 8))
        for rule, series in ((plateau_stop, loss), (topology_stop, feature)):
            args = (0.01, 2) if rule is plateau_stop else (0.1, 2)
            k = rule(steps, series, *args)
            if k is None:
                continue
            changed = series.copy()
            changed[k + 1 :] = rng.normal(0, 100, 40 - k - 1)  # anything after the stop
            assert rule(steps, changed, *args) == k
            assert rule(steps[: k + 1], series[: k + 1], *args) == k  # needs nothing after k


def test_pareto_ranks_by_hand():
    # (saved, penalty): b dominates d; a and b and c trade off; e is beaten by a (same saving,
    # more penalty), so rank 2 with d
    saved = [0.5, 0.3, 0.6, 0.2, 0.5]
    penalty = [0.1, 0.0, 0.3, 0.05, 0.2]
    assert pareto_ranks(saved, penalty) == [1, 1, 1, 2, 2]
    assert pareto_ranks([0.1, 0.1], [0.2, 0.2]) == [1, 1]  # ties dominate nothing


def synthetic_features() -> pd.DataFrame:
    rows = []
    for model, n, scale in (("a", 100, 1.0), ("b", 400, 2.0)):
        for i, step in enumerate(STEPS):
            rows.append(
                {
                    "model": model,
                    "seed": 42,
                    "n_params": n,
                    "step": int(step),
                    "val_loss": LOSS[i] * scale,
                    "train_loss": LOSS[i] * scale,
                    "np_mean": [0.0, 10.0, 15.0, 16.0, 16.5, 16.6][i],
                    "h0_total": float(i),
                }
            )
    return pd.DataFrame(rows)


def test_stopping_table_by_hand():
    params = {
        "plateau_thresholds": [0.005],
        "plateau_patience": [1],
        "fractions": [0.5],
        "topology_features": ["np_mean", "h0_total"],
        "topology_patience": 1,
    }
    table = stopping_table(synthetic_features(), params)
    assert list(table.columns) == STOPPING_COLUMNS
    assert len(table) == 2 * 4
    row = table[(table["model"] == "b") & (table["rule"] == "plateau[0.005,1]")].iloc[0]
    # stops at k = 3 (step 300 of 500): 40 % saved; penalty 2·(2.49 − 2.487)
    assert row["stop_step"] == 300 and row["stopped"]
    assert row["compute_saved"] == pytest.approx(0.4)
    assert row["penalty"] == pytest.approx(2 * 0.003)
    assert row["rel_penalty"] == pytest.approx(0.003 / 2.487)
    np_row = table[(table["model"] == "a") & (table["rule"] == "topology[np_mean]")].iloc[0]
    assert np_row["stop_step"] == 400  # |Δ| .5 < 1 at k = 4
    tp0 = table[table["rule"] == "topology[h0_total]"]
    assert not tp0["stopped"].any() and (tp0["compute_saved"] == 0).all()  # constant Δ: runs on
    assert (tp0["penalty"] == 0).all()
    half = table[table["rule"] == "fraction[0.5]"]
    assert (half["stop_step"] == 300).all()  # 250 → the checkpoint at 300
    # means over the two runs and the Pareto ranks of the four rules
    means = table.drop_duplicates("rule").set_index("rule")
    assert means.loc["plateau[0.005,1]", "mean_penalty"] == pytest.approx(1.5 * 0.003)
    assert means.loc["topology[h0_total]", "pareto_rank"] == 1  # nothing lost: undominated
    summary = stopping_summary(table)
    assert summary["pareto_rank"].is_monotonic_increasing
    assert set(summary["rule"]) == set(table["rule"])


def test_stopping_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match=r"lacks \['h0_total'\]"):
        stopping_table(synthetic_features().drop(columns="h0_total"))
    with pytest.raises(ValueError, match="strictly increasing"):
        plateau_stop([0, 2, 1], [1.0, 1.0, 1.0], 0.1, 1)
    with pytest.raises(ValueError, match="patience >= 1"):
        topology_stop(STEPS, LOSS, 0.1, 0)
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        fraction_stop(STEPS, 0.0)
