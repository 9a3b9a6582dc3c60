"""NP against its layers' normalised weight variance: the partial contrast by hand, and the flag on
a feature that is the variance plus noise against one with a signal of its own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.inference.np_variance import np_variance_table


def study(own_signal: float, seed: int = 0) -> pd.DataFrame:
    """5 models × 3 seeds × 20 checkpoints: a shared trend, a weight variance whose per-seed
    fluctuation the loss shares, NP = variance + noise + own_signal × the loss's own noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in range(5):
        for s in range(3):
            t = np.arange(20)
            wvar = 0.1 + 0.01 * t + rng.normal(0, 0.01, 20)
            own = rng.normal(0, 0.01, 20)
            loss = 3 - 0.05 * t + 2 * wvar + own
            np_mean = 0.5 * wvar + rng.normal(0, 0.001, 20) + own_signal * own
            rows.append(
                pd.DataFrame(
                    {
                        "model": f"m{m}",
                        "seed": s,
                        "step": t * 100,
                        "train_loss": loss,
                        "np_mean": np_mean,
                        "np_wvar_mean": wvar,
                    }
                )
            )
    return pd.concat(rows, ignore_index=True)


def by_hand(g: pd.DataFrame) -> float:
    """Pearson r of the across-seed deviations of NP and loss after each is regressed on the
    variance's deviations (least squares through the origin on centred cells)."""
    dev = {
        c: g.pivot(index="seed", columns="step", values=c)
        for c in ("np_mean", "train_loss", "np_wvar_mean")
    }
    d = {c: (v - v.mean(axis=0)).to_numpy().ravel() for c, v in dev.items()}
    z = d["np_wvar_mean"] - d["np_wvar_mean"].mean()
    res = []
    for c in ("np_mean", "train_loss"):
        v = d[c] - d[c].mean()
        res.append(v - (v @ z) / (z @ z) * z)
    return float(np.corrcoef(*res)[0, 1])


def test_partial_rho_matches_a_hand_regression_per_model():
    df = study(own_signal=1.0)
    table = np_variance_table(df, targets=("train_loss",))
    for model, g in df.groupby("model"):
        row = table[(table["model"] == model) & (table["feature"] == "np_mean")].iloc[0]
        assert row["rho"] == pytest.approx(by_hand(g), abs=1e-10)


def test_np_that_is_its_variance_does_not_beat_it_and_np_with_a_signal_does():
    pooled = lambda t: t[(t["model"] == "pooled") & (t["feature"] == "np_mean")].iloc[0]  # noqa: E731
    null = pooled(np_variance_table(study(own_signal=0.0), targets=("train_loss",)))
    assert null["plain_p"] < 0.01 and null["p"] > 0.05 and not null["beats_wvar"]
    signal = pooled(np_variance_table(study(own_signal=1.0), targets=("train_loss",)))
    assert signal["p"] < 0.01 and signal["rho"] > 0 and signal["beats_wvar"]


def test_a_table_without_the_variance_says_how_to_get_it():
    table = np_variance_table(study(1.0).drop(columns=["np_wvar_mean"]))
    assert len(table) == 1 and "forcerun weight_topology" in table["note"].iloc[0]
