"""Topological velocity against |Δ loss| on hand-made runs."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.dynamics.velocity import VELOCITY_COLUMNS, velocity_summary, velocity_table


def run(model="m", seed=1):
    steps = np.arange(8) * 100
    loss = np.array([5.0, 3.0, 2.9, 2.0, 1.95, 1.9, 1.6, 1.59])
    dloss = np.abs(np.diff(loss))  # 2, .1, .9, .05, .05, .3, .01
    w1 = np.r_[np.nan, 10 * dloss]  # moves exactly with the loss: ρ = 1
    return pd.DataFrame(
        {
            "model": model,
            "seed": seed,
            "n_params": 100,
            "step": steps,
            "val_loss": loss,
            "h0_w1_step": w1,
            "h1_w1_step": np.r_[np.nan, np.arange(7.0)],  # the clock itself
            "l2_norm_mean": np.linspace(1, 2, 8) ** 2,
        }
    )


def test_velocity_by_hand():
    table = velocity_table(run())
    assert list(table.columns) == VELOCITY_COLUMNS
    rows = table.set_index("feature")
    dloss = np.abs(np.diff(run()["val_loss"]))
    clock = stats.spearmanr(np.arange(1, 8), dloss)[0]  # independent computation
    assert rows.loc["step", "rho"] == pytest.approx(clock)
    assert rows.loc["h0_w1_step", "rho"] == pytest.approx(1.0)
    assert rows.loc["h0_w1_step", "beats_clock"]
    assert rows.loc["h1_w1_step", "rho"] == pytest.approx(clock)  # the clock in disguise
    assert not rows.loc["h1_w1_step", "beats_clock"]  # equal |ρ| does not beat it
    l2 = np.abs(np.diff(np.linspace(1, 2, 8) ** 2))
    assert rows.loc["l2_norm_step", "rho"] == pytest.approx(stats.spearmanr(l2, dloss)[0])
    assert rows.loc["step", "kind"] == "baseline" and rows.loc["h0_w1_step", "kind"] == "topology"
    assert (table["n"] == 7).all()
    # p: every rotation of |Δ loss| against the series, by brute force (not the iid p)
    w1 = np.abs(np.diff(run()["val_loss"])) * 10
    rotated = [abs(stats.spearmanr(w1, np.roll(dloss, k))[0]) for k in range(1, 7)]
    expected_p = (1 + sum(r >= 1.0 - 1e-12 for r in rotated)) / 7
    assert rows.loc["h0_w1_step", "p"] == pytest.approx(expected_p)
    assert "h0_bottleneck_step" not in rows.index  # absent columns: no row


def test_velocity_summary_counts_seeds():
    table = velocity_table(pd.concat([run(seed=1), run(seed=2)]))
    summary = velocity_summary(table).set_index("feature")
    assert summary.loc["h0_w1_step", "seeds"] == 2
    assert summary.loc["h0_w1_step", "beats_clock"] == 2
    assert summary.loc["h0_w1_step", "mean_rho"] == pytest.approx(1.0)


def test_velocity_names_missing_columns():
    with pytest.raises(ValueError, match=r"lacks \['val_loss'\]"):
        velocity_table(run().drop(columns="val_loss"))
