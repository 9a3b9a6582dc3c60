"""The grokking control's statistics against brute force, hand counts and planted curves."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.control.grokking import (
    NEVER,
    feature_table,
    seed_table,
    sign_flip,
    verdicts,
)
from topotrain.analysis.inference.stats import spearman_exact


def test_spearman_exact_matches_scipy_and_a_brute_force_enumeration():
    x = np.array([3.0, 1.0, 4.0, 1.5, 5.0, 9.0])
    y = np.array([2.0, 7.0, 1.0, 8.0, 2.5, 0.5])
    rho, p = spearman_exact(x, y)
    assert rho == pytest.approx(stats.spearmanr(x, y)[0], abs=1e-12)
    null = [
        stats.spearmanr(x, [y[i] for i in perm])[0] for perm in itertools.permutations(range(6))
    ]
    assert p == pytest.approx(np.mean(np.abs(null) >= abs(rho) - 1e-12), abs=1e-12)
    assert np.isnan(spearman_exact([1, 2], [2, 1])[1])  # two pairs: nothing to test
    assert np.isnan(spearman_exact([1, 1, 1], [1, 2, 3])[0])  # a constant side


def test_sign_flip_by_hand():
    # mean 2; of the 8 sign patterns only (+,+,+) and (−,−,−) reach |mean| ≥ 2
    assert sign_flip([1.0, 2.0, 3.0]) == (2.0, 0.25)
    median, p = sign_flip([5.0] * 8)
    assert median == 5.0 and p == pytest.approx(2 / 256)
    assert np.isnan(sign_flip([np.nan])[1])


def planted(grok_steps, never=(), clock_onset=300, seed=0):
    """Seeds whose test accuracy jumps at their own grokking step; 'tied' moves 200 steps before
    it, 'clock' at one step in every seed, 'norm' falls alike in every seed (plus noise), test
    loss drops with grokking, 'fourier' is noise."""
    rng = np.random.default_rng(seed)
    steps = np.arange(0, 3001, 50)
    rows = []
    for s, g in enumerate(grok_steps):
        jump = 1 / (1 + np.exp(-(steps - g) / 60.0))
        acc = np.where(steps >= g, 1.0, 0.5) if s not in never else np.full(steps.size, 0.5)
        tied = 1 / (1 + np.exp(-(steps - (g - 225)) / 60.0))  # half its change at g − 200
        rows.append(
            pd.DataFrame(
                {
                    "model": "control",
                    "seed": s,
                    "step": steps,
                    "test_acc": acc,
                    "test_loss": 3 * (1 - jump) + rng.normal(0, 0.01, steps.size),
                    "tied": tied + rng.normal(0, 0.01, steps.size),
                    "clock": (steps >= clock_onset).astype(float),
                    "weight_l2": 40 - steps / 300 + rng.normal(0, 0.05, steps.size),
                    "fourier_top5": rng.normal(0.5, 0.01, steps.size),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def test_seed_table_keeps_a_seed_that_never_groks_with_a_note():
    df = planted([1000, 1500, 2000], never=(1,))
    table = seed_table(df, ["tied"])
    never = table[table["seed"] == 1].iloc[0]
    assert pd.isna(never["grokking_step"]) and never["note"] == NEVER and np.isnan(never["lead"])
    grokked = table[table["seed"] != 1]
    assert grokked["grokking_step"].tolist() == [1000, 2000]
    assert grokked["lead"].tolist() == [200.0, 200.0]  # onset at g − 200: half of the change


def test_a_planted_lead_is_reproduced_and_a_clock_is_an_artefact():
    grok = [900, 1200, 1500, 1800, 2100, 2400, 1050, 1650]
    df = planted(grok)
    seeds = seed_table(df, ["tied", "clock", "weight_l2", "fourier_top5"])
    table = feature_table(df, seeds, ["tied", "clock", "weight_l2", "fourier_top5"]).set_index(
        "feature"
    )
    tied = table.loc["tied"]
    assert tied["n_grokked"] == 8 and tied["median_lead"] == 200.0
    assert tied["lead_p"] == pytest.approx(2 / 256)  # every lead +200: 2 of 2^8 patterns
    assert tied["onset_rho"] == pytest.approx(1.0) and tied["onset_p"] == pytest.approx(2 / 40320)
    assert tied["contrast_p"] < 0.01 and tied["contrast_rho"] < 0  # up as its own test loss falls
    clock = table.loc["clock"]
    assert np.isnan(clock["contrast_rho"])  # the same curve in every seed: no deviation at all
    out = verdicts(table.reset_index(), primary="tied").set_index("claim")
    assert out.loc["topology leads grokking", "verdict"] == "reproduced"
    assert (
        out.loc["topology moves with each seed's own test loss (the positive control)", "verdict"]
        == "reproduced"
    )
    assert out.loc["topology beats the weight norm", "verdict"] == "reproduced"
    clocked = verdicts(table.reset_index(), primary="clock").set_index("claim")
    assert clocked.loc["topology leads grokking", "verdict"] == "artefact"  # early, in every seed
    assert clocked.loc["topology beats the weight norm", "verdict"] == "not evaluated"


def test_a_feature_that_is_the_norm_plus_noise_is_an_artefact_of_it():
    df = planted([900, 1200, 1500, 1800, 2100, 2400])
    df["weight_l2"] = df["tied"] * 10 + 30  # the norm now carries each seed's signal
    noise = np.random.default_rng(1).normal(0, 0.01, len(df))
    features = ["h1", "weight_l2", "fourier_top5"]
    df["h1"] = df["weight_l2"]  # exactly linear in the norm: nothing left to test
    table = feature_table(df, seed_table(df, features), features)
    row = verdicts(table, primary="h1").set_index("claim").loc["topology beats the weight norm"]
    assert row["verdict"] == "not evaluated"
    df["h1"] = df["weight_l2"] + noise  # the norm plus noise: tracks test loss, explained by it
    table = feature_table(df, seed_table(df, features), features).set_index("feature")
    assert table.loc["h1", "contrast_p"] < 0.01 and table.loc["h1", "partial_norm_p"] > 0.05
    row = verdicts(table.reset_index(), primary="h1").set_index("claim")
    assert row.loc["topology beats the weight norm", "verdict"] == "artefact"


def test_n_grokked_counts_only_the_seeds_that_grok_with_an_onset():
    df = planted([900, 1200, 1500, 1800], never=(1,))  # seed 1 never groks
    df.loc[df["seed"] == 2, "tied"] = 0.5  # seed 2 groks, but its feature never moves: no onset
    features = ["tied", "weight_l2", "fourier_top5"]
    seeds = seed_table(df, features)
    tied = seeds[seeds["feature"] == "tied"].set_index("seed")
    assert tied["grokking_step"].notna().tolist() == [True, False, True, True]
    assert tied["onset_step"].notna().tolist() == [True, True, False, True]
    table = feature_table(df, seeds, features).set_index("feature")
    assert table.loc["tied", "n_grokked"] == 2  # seeds 0 and 3: grok, and the feature moves
    out = verdicts(table.reset_index(), primary="tied").set_index("claim")
    lead = out.loc["topology leads grokking"]
    assert lead["verdict"] == "not evaluated"
    assert lead["note"] == "2 seeds grok with a defined onset: at least 3 needed"
