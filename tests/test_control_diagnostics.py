"""The grokking control beside WeightWatcher: each number of the diagnostics table against a direct
computation on a fabricated control table whose answers are planted."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.control.diagnostics import CONTROL_DIAGNOSTICS_COLUMNS, control_diagnostics
from topotrain.report.control import monitor_sentence

SEEDS, STEPS = 5, 30


def control_table(alpha_tracks: bool) -> pd.DataFrame:
    """5 seeds × 30 checkpoints: test loss falls, each seed with its own wiggles; the Fourier
    measure tracks each seed's test loss; emb_h1_total is the Fourier measure plus small noise;
    ww_alpha_mean tracks the loss (alpha_tracks) or is a function of the step alone plus noise
    that no seed shares with its loss; the norm, the weight variance: the step plus noise."""
    rng = np.random.default_rng(5)
    rows = []
    for seed in range(SEEDS):
        step = np.arange(STEPS) * 50
        loss = 3 * np.exp(-step / 600) + np.cumsum(rng.normal(0, 0.05, STEPS))
        fourier = -loss + rng.normal(0, 0.02, STEPS)
        alpha = (
            2 + loss + rng.normal(0, 0.02, STEPS)
            if alpha_tracks
            else 4 - step / 1000 + rng.normal(0, 0.3, STEPS)
        )
        rows.append(
            pd.DataFrame(
                {
                    "model": "control",
                    "seed": seed,
                    "step": step,
                    "test_loss": loss,
                    "fourier_top5": fourier,
                    "emb_h1_total": fourier + rng.normal(0, 0.01, STEPS),
                    "ww_alpha_mean": alpha,
                    "weight_l2": 10 + step / 100 + rng.normal(0, 0.5, STEPS),
                    "np_wvar_mean": step / 100 + rng.normal(0, 0.5, STEPS),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def brute_contrast(df: pd.DataFrame, feature: str) -> tuple[float, float]:
    """Spearman ρ of the seeds' deviations from the per-step mean, and its two-sided p (twice the
    smaller tail, capped at 1) over all 5! relabellings of the feature's seeds, with scipy."""
    x = df.pivot(index="seed", columns="step", values=feature).to_numpy()
    y = df.pivot(index="seed", columns="step", values="test_loss").to_numpy()
    dx, dy = x - x.mean(0), y - y.mean(0)
    rho = stats.spearmanr(dx.ravel(), dy.ravel()).statistic
    null = [
        stats.spearmanr(dx[list(p)].ravel(), dy.ravel()).statistic
        for p in itertools.permutations(range(SEEDS))
    ]
    null = np.array(null)
    tails = np.mean(null >= rho - 1e-12), np.mean(null <= rho + 1e-12)
    return rho, min(1.0, 2 * min(tails))


def test_every_number_matches_a_direct_computation_and_the_known_answer_is_found():
    df = control_table(alpha_tracks=False)
    table = control_diagnostics(df).set_index("feature")
    assert list(table.reset_index().columns) == CONTROL_DIAGNOSTICS_COLUMNS
    assert list(table.index) == ["emb_h1_total", "ww_alpha_mean", "fourier_top5", "weight_l2"]
    assert table["kind"].tolist() == ["topological", "weightwatcher", "reference", "reference"]
    for feature in table.index:
        rho, p = brute_contrast(df, feature)
        assert table.loc[feature, "contrast_rho"] == pytest.approx(rho, abs=1e-12)
        assert table.loc[feature, "contrast_p"] == pytest.approx(p, abs=1e-12)
        raw = np.mean(
            [stats.spearmanr(g[feature], g["test_loss"]).statistic for _, g in df.groupby("seed")]
        )
        assert table.loc[feature, "raw_rho"] == pytest.approx(raw, abs=1e-12)
    fourier = table.loc["fourier_top5"]
    assert fourier["contrast_p"] == pytest.approx(2 / 120) and fourier["effect_ci_high"] < 0
    assert np.isnan(fourier["p_fourier"]) and not fourier["beats_fourier"]
    # the topological feature is the Fourier measure again: nothing beyond it
    assert table.loc["emb_h1_total", "p_fourier"] > 0.05
    assert table.loc["emb_h1_total", "beats_norm"] and table.loc["emb_h1_total", "beats_wvar"]
    assert table.loc["ww_alpha_mean", "contrast_p"] > 0.05
    sentence = monitor_sentence(table.reset_index())
    assert "Fourier measure, the known progress measure, tracks each seed's test loss" in sentence
    assert "α (mean over the control's matrices) does not track" in sentence
    assert sentence.endswith("α misses what the known measure shows here.")
    weak = table.reset_index().assign(contrast_p=0.4)
    assert monitor_sentence(weak).endswith("so it cannot judge α.")


def test_an_alpha_that_tracks_agrees_and_a_table_without_alpha_says_so():
    table = control_diagnostics(control_table(alpha_tracks=True))
    a = table.set_index("feature").loc["ww_alpha_mean"]
    assert a["contrast_p"] == pytest.approx(2 / 120) and a["effect_ci_low"] > 0
    assert monitor_sentence(table).endswith("α agrees with the known answer here.")
    without = control_diagnostics(control_table(True).drop(columns=["ww_alpha_mean"]))
    assert "α is not in the control's tables" in monitor_sentence(without)
