"""Correlations with loss: Spearman ρ, bootstrap CIs, corrections, per-model best feature."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.stats import t as student_t

from topotrain.analysis.inference.stats import (
    BASELINES,
    FEATURES,
    across_seeds,
    benjamini_hochberg,
    best_feature,
    bonferroni,
    correlation_table,
    seed_agreement,
    seed_interval,
    spearman_ci,
    spearman_rows,
)

ALL = FEATURES + BASELINES


def average_ranks(v: np.ndarray) -> np.ndarray:
    """Ranks 1..n by sorting, tied values sharing the mean of their positions (written out here)."""
    pos = np.empty(v.size)
    pos[np.argsort(v, kind="stable")] = np.arange(1, v.size + 1)
    for value in np.unique(v):
        pos[v == value] = pos[v == value].mean()
    return pos


def bh_by_hand(p: np.ndarray) -> np.ndarray:
    """Step-up Benjamini–Hochberg: adj_(i) = min_{j ≥ i} p_(j)·m/j, capped at 1."""
    m = len(p)
    order = np.argsort(p)
    adj = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        adj[i] = running
    return adj


def test_monotone_decreasing_feature_gives_rho_minus_one_and_ci_excluding_zero():
    loss = np.exp(-np.linspace(0, 3, 51)) + 1  # falls over training
    feature = 5 - np.linspace(0.1, 0.9, 51) ** 2  # decreasing in step, so increasing in loss …
    res = spearman_ci(feature, loss[::-1], n_resamples=500, seed=0)  # … against a rising loss
    assert res["rho"] == pytest.approx(-1.0, abs=1e-12)
    assert res["ci_low"] == pytest.approx(-1.0, abs=1e-12) and res["ci_high"] < 0
    assert res["p"] < 1e-10 and res["n"] == 51 and res["note"] == ""


@pytest.mark.parametrize("ties", [False, True])
def test_rho_is_pearson_of_ranks_computed_by_hand(ties):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 6, 40).astype(float) if ties else rng.normal(size=40)
    y = rng.normal(size=40) + 0.3 * x
    expected = np.corrcoef(average_ranks(x), average_ranks(y))[0, 1]
    assert spearman_ci(x, y, n_resamples=50)["rho"] == pytest.approx(expected, abs=1e-12)
    batch = spearman_rows(np.stack([x, x[::-1]]), np.stack([y, y]))
    reverse = np.corrcoef(average_ranks(x[::-1]), average_ranks(y))[0, 1]
    np.testing.assert_allclose(batch, [expected, reverse], atol=1e-12)


def test_bootstrap_ci_is_reproducible_for_a_seed_and_changes_with_another():
    rng = np.random.default_rng(1)
    x = rng.normal(size=51)
    y = x + rng.normal(size=51)
    a, b, c = (spearman_ci(x, y, 400, seed=s) for s in (3, 3, 4))
    assert (a["ci_low"], a["ci_high"]) == (b["ci_low"], b["ci_high"])
    assert (a["ci_low"], a["ci_high"]) != (c["ci_low"], c["ci_high"])
    assert a["ci_low"] < a["rho"] < a["ci_high"]


def test_constant_feature_gives_nan_with_a_note():
    res = spearman_ci(np.ones(20), np.arange(20.0))
    assert all(np.isnan(res[k]) for k in ("rho", "p", "ci_low", "ci_high"))
    assert "constant feature" in res["note"] and res["n"] == 20


def test_non_finite_checkpoints_are_dropped_and_counted():
    x, y = np.arange(10.0), np.arange(10.0) ** 2
    x[3] = np.nan
    res = spearman_ci(x, y, n_resamples=100)
    assert res["n"] == 9 and res["rho"] == pytest.approx(1.0) and "1 non-finite" in res["note"]


def test_resamples_with_undefined_rho_are_left_out_not_fatal():
    x = np.array([0.0] * 9 + [1.0])  # most resamples miss the one distinct value
    res = spearman_ci(x, np.arange(10.0), n_resamples=300, seed=0)
    assert np.isfinite(res["rho"]) and np.isfinite(res["ci_low"])
    assert "resamples had undefined ρ" in res["note"]


def test_corrections_match_hand_computations_and_skip_nan():
    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan, 0.5])
    finite = p[np.isfinite(p)]
    np.testing.assert_allclose(bonferroni(p)[np.isfinite(p)], np.minimum(1, finite * 5))
    np.testing.assert_allclose(benjamini_hochberg(p)[np.isfinite(p)], bh_by_hand(finite))
    assert np.isnan(bonferroni(p)[4]) and np.isnan(benjamini_hochberg(p)[4])


def feature_table(n_models: int = 3, seeds=(1, 2), steps: int = 21) -> pd.DataFrame:
    """Noise features, except np_mean (monotone in step) and h0_count (constant)."""
    rng = np.random.default_rng(0)
    rows = []
    for m in range(n_models):
        for seed in seeds:
            for i, s in enumerate(np.linspace(0, 1000, steps)):
                row = {
                    "model": f"m{m}",
                    "seed": seed,
                    "n_params": 100 * (n_models - m),
                    "step": int(s),
                    "val_loss": 4 / (1 + i) + 1,
                }
                row.update({f: rng.normal() for f in ALL})
                row["np_mean"] = 0.2 + 0.01 * i + 0.001 * seed  # ρ = −1 with the falling loss
                row["h0_count"] = 39.0
                rows.append(row)
    return pd.DataFrame(rows)


def test_table_has_a_row_per_model_seed_feature_and_corrects_over_the_grid():
    corr = correlation_table(feature_table(), n_resamples=100)
    assert len(corr) == 3 * 2 * len(ALL)
    assert corr.groupby(["model", "seed"]).size().eq(len(ALL)).all()
    assert corr["n_params"].is_monotonic_increasing
    assert set(corr.loc[corr["feature"].isin(BASELINES), "kind"]) == {"baseline"}
    assert set(corr.loc[corr["feature"].isin(FEATURES), "kind"]) == {"topological"}
    const = corr[corr["feature"] == "h0_count"]
    assert const["p"].isna().all() and const["p_bh"].isna().all() and not const["significant"].any()
    finite = corr["p"].notna()
    assert finite.sum() == 3 * 2 * (len(ALL) - 1)
    p = corr.loc[finite, "p"].to_numpy()
    np.testing.assert_allclose(corr.loc[finite, "p_bonferroni"], np.minimum(1, p * p.size))
    np.testing.assert_allclose(corr.loc[finite, "p_bh"], bh_by_hand(p))
    np_rows = corr[corr["feature"] == "np_mean"]
    assert np.allclose(np_rows["rho"], -1.0) and np_rows["significant"].all()


def test_best_feature_names_the_planted_one_per_model():
    best = best_feature(correlation_table(feature_table(), n_resamples=100))
    assert best["model"].tolist() == ["m2", "m1", "m0"]  # ordered by size
    assert best["feature"].tolist() == ["np_mean"] * 3 and (best["n_seeds"] == 2).all()
    assert (best["best_topological"] == "np_mean").all()
    assert best["best_baseline"].isin(BASELINES).all()
    corr = correlation_table(feature_table(), n_resamples=100)
    for clock in (
        "step",
        "l2_norm_mean",
    ):  # each model's ρ stands beside the clock's and the scale's
        means = corr[corr["feature"] == clock].groupby("model")["rho"].mean()
        np.testing.assert_allclose(best[f"{clock}_rho"], best["model"].map(means))
    assert np.allclose(best["rho"], -1.0) and (best["tied_with"] == "").all()


def test_best_feature_reports_features_tied_with_the_winner():
    df = feature_table(n_models=1, seeds=(1,))
    df["l2_norm_mean"] = np.exp(df["np_mean"])  # a monotone transform: identical ranks
    best = best_feature(correlation_table(df, n_resamples=50)).iloc[0]
    assert best["feature"] == "np_mean" and best["tied_with"] == "l2_norm_mean"
    assert best["best_baseline"] == "l2_norm_mean" and best["best_baseline_rho"] == best["rho"]


def test_across_seeds_gives_a_fisher_z_interval_matching_the_formula():
    corr = correlation_table(feature_table(n_models=1, seeds=(1, 2, 3)), n_resamples=50)
    seeds = across_seeds(corr).set_index("feature")
    rho = corr.loc[corr["feature"] == "h1_total", "rho"].to_numpy()
    z = 0.5 * np.log((1 + rho) / (1 - rho))  # Fisher's z, written out
    half = student_t.ppf(0.975, 2) * z.std(ddof=1) / np.sqrt(3)
    row = seeds.loc["h1_total"]
    assert row["n_seeds"] == 3 and row["rho_mean"] == pytest.approx(rho.mean())
    assert (row["rho_low"], row["rho_high"]) == pytest.approx(
        (np.tanh(z.mean() - half), np.tanh(z.mean() + half))
    )


def test_seed_interval_stays_inside_minus_one_one_where_a_t_interval_on_rho_does_not():
    """The issue's case: three seeds of very different ρ,
    whose raw t-interval ran to [−2.28, 1.35]."""
    rho = np.array([-0.95, 0.6, -0.4])
    t_half = student_t.ppf(0.975, 2) * rho.std(ddof=1) / np.sqrt(3)
    assert rho.mean() - t_half < -1 and rho.mean() + t_half > 1  # the old interval
    out = seed_interval(rho)
    assert -1 <= out["rho_low"] < out["rho_mean"] < out["rho_high"] <= 1


def test_seed_agreement_counts_sign_and_significance():
    rho, p = np.array([-0.8, -0.5, 0.1, np.nan]), np.array([0.001, 0.2, 0.001, np.nan])
    assert seed_agreement(rho, p) == {"n_same_sign": 2, "n_significant": 1}


def test_one_seed_gives_no_interval_but_a_note():
    corr = correlation_table(feature_table(n_models=1, seeds=(7,)), n_resamples=50)
    seeds = across_seeds(corr)
    assert len(seeds) == len(ALL) and seeds["rho_low"].isna().all()
    assert seeds["note"].str.contains("needs two").all()


def test_every_correlated_feature_has_one_figure_label():
    from topotrain.report.plots import LABELS
    from topotrain.topology import registry

    labelled = {**registry.labels(), **LABELS}
    assert set(ALL) <= set(labelled)
    assert not set(registry.labels()) & set(LABELS)  # a feature's label lives in the registry


def test_a_short_run_gets_an_exact_p_no_interval_and_says_it_is_too_short():
    """3 monotone checkpoints: ρ = −1, but 2 of the 3! orders give |ρ| = 1, so p = 1/3 (scipy's
    asymptotic p is 0); no bootstrap interval; the note says too short for a claim."""
    from topotrain.analysis.inference.stats import spearman_ci

    res = spearman_ci([1.0, 2.0, 3.0], [3.0, 2.0, 1.0])
    assert res["rho"] == -1.0 and res["p"] == pytest.approx(1 / 3)
    assert np.isnan(res["ci_low"]) and np.isnan(res["ci_high"])
    assert "too short for a claim" in res["note"] and res["n"] == 3
    seven = spearman_ci(np.arange(7.0), [0.0, 2.0, 1.0, 3.0, 5.0, 4.0, 6.0])
    brute = [
        abs(stats.spearmanr(np.arange(7.0), perm)[0])
        for perm in itertools.permutations([0.0, 2.0, 1.0, 3.0, 5.0, 4.0, 6.0])
    ]
    assert seven["p"] == pytest.approx(np.mean(np.array(brute) >= abs(seven["rho"]) - 1e-12))
    eight = spearman_ci(np.arange(8.0), np.arange(8.0) ** 2)
    assert np.isfinite(eight["ci_low"]) and "too short" not in eight["note"]
