"""Associations with loss beyond the clock: detrended and partial Spearman, block-bootstrap CIs,
circular-shift p-values, between-seed contrasts, beats-the-clock flags, and the associations job."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.inference.associations import (
    ASSOCIATION_COLUMNS,
    RUN_VIEWS,
    TARGETS,
    VIEWS,
    association_summary,
    association_table,
    block_length,
    cell_seed,
    feature_kinds,
    shift_pvalue,
    view_association,
)
from topotrain.analysis.inference.rank_stats import detrended_spearman, partial_spearman
from topotrain.analysis.inference.seed_contrast import CONTRAST_VIEWS
from topotrain.analysis.inference.stats import BASELINES, FEATURES, benjamini_hochberg


def hand_partial_spearman(x, y, z) -> float:
    """Rank (pandas, average ties), regress on [1, rank z] by least squares,
    Pearson of residuals."""
    rx, ry, rz = (pd.Series(v).rank().to_numpy() for v in (x, y, z))
    design = np.column_stack([np.ones_like(rz), rz])
    ex = rx - design @ np.linalg.lstsq(design, rx, rcond=None)[0]
    ey = ry - design @ np.linalg.lstsq(design, ry, rcond=None)[0]
    return float(np.corrcoef(ex, ey)[0, 1])


def first_order_partial(x, y, z) -> float:
    """The textbook formula on Spearman ρs: (ρxy − ρxz·ρyz) / √((1 − ρxz²)(1 − ρyz²))."""
    rxy, rxz, ryz = (stats.spearmanr(a, b).statistic for a, b in ((x, y), (x, z), (y, z)))
    return float((rxy - rxz * ryz) / np.sqrt((1 - rxz**2) * (1 - ryz**2)))


def loss_curve(rng, n: int = 51) -> np.ndarray:
    """A noisy decreasing loss curve over n checkpoints."""
    return 1.5 + 3 * np.exp(-np.linspace(0, 5, n)) + rng.normal(0, 0.05, n)


@pytest.mark.parametrize("ties", [False, True])
def test_partial_spearman_matches_rank_lstsq_pearson_by_hand(ties):
    rng = np.random.default_rng(1)
    z = np.arange(40.0)
    x, y = z + rng.normal(0, 8, 40), -z + rng.normal(0, 8, 40)
    if ties:
        x, y = np.round(x / 5), np.round(y / 5)
    expected = hand_partial_spearman(x, y, z)
    assert partial_spearman(x, y, z) == pytest.approx(expected, abs=1e-12)
    assert partial_spearman(x, y, z) == pytest.approx(first_order_partial(x, y, z), abs=1e-12)
    res = view_association(x, y, "partial_step", z, n_resamples=50)
    assert res["rho"] == pytest.approx(expected, abs=1e-12)


def test_partial_spearman_is_vectorised_over_rows():
    rng = np.random.default_rng(2)
    x, y, z = rng.normal(size=(3, 5, 30))
    rows = partial_spearman(x, y, z)
    assert rows == pytest.approx([hand_partial_spearman(*v) for v in zip(x, y, z, strict=True)])


def test_detrended_is_spearman_of_first_differences():
    rng = np.random.default_rng(3)
    x, y = np.cumsum(rng.normal(size=(2, 30)), axis=1)
    expected = stats.spearmanr(np.diff(x), np.diff(y)).statistic
    assert detrended_spearman(x, y) == pytest.approx(expected, abs=1e-12)
    res = view_association(x, y, "detrended", n_resamples=50)
    assert res["rho"] == pytest.approx(expected, abs=1e-12) and res["n"] == 29


def enumerated_shift_p(a, b) -> float:
    """All m rotations of b (identity included), two-sided: share with |r_k| ≥ |r_0|."""
    r = np.array([abs(np.corrcoef(a, np.roll(b, k))[0, 1]) for k in range(a.size)])
    return float(np.mean(r >= r[0] - 1e-12))


def test_circular_shift_p_equals_an_enumeration_of_all_shifts():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(2, 7))
    assert shift_pvalue(a, b) == pytest.approx(enumerated_shift_p(a, b))
    # the detrended view tests the ranks of the differences; 8 checkpoints → 7 differences
    x, y = np.cumsum(rng.normal(size=(2, 8)), axis=1)
    res = view_association(x, y, "detrended", n_resamples=50)
    rank = stats.rankdata
    assert res["p"] == pytest.approx(enumerated_shift_p(rank(np.diff(x)), rank(np.diff(y))))
    assert res["p"] >= 1 / 7 and "smallest attainable p = 1/7" in res["note"]


def test_shift_p_reaches_its_floor_one_over_m_for_identical_series():
    a = np.sin(np.linspace(0, 7, 25)) + np.linspace(0, 1, 25) ** 2
    assert shift_pvalue(a, a) == pytest.approx(1 / 25)


def test_first_differences_fix_random_walks_but_not_a_decelerating_clock():
    """Differencing is exactly right for independent random walks (rate within 3 Monte Carlo SEs of
    5%) and wrong for the same decelerating function of step plus noise in both series."""
    rng = np.random.default_rng(5)
    n, t = 300, np.arange(51) * 100.0
    raw, walks, decel = [], [], []
    for i in range(n):
        x, y = np.cumsum(rng.normal(size=(2, 51)), axis=1)
        raw.append(view_association(x, y, "raw", n_resamples=10, seed=i)["p"])
        walks.append(view_association(x, y, "detrended", n_resamples=10, seed=i)["p"])
        fx = -np.log1p(t / 100) + rng.normal(0, 0.05, 51)
        fy = 2 + 3 * np.exp(-t / 800) + rng.normal(0, 0.05, 51)
        decel.append(view_association(fx, fy, "detrended", n_resamples=10, seed=i)["p"])
    bound = 0.05 + 3 * np.sqrt(0.05 * 0.95 / n)
    assert np.mean(np.array(raw) < 0.05) > 0.5
    assert np.mean(np.array(walks) < 0.05) <= bound
    assert np.mean(np.array(decel) < 0.05) > bound  # why no verdict reads this view


def test_loss_plus_noise_is_detected_when_detrended_and_partialled():
    rng = np.random.default_rng(6)
    loss = loss_curve(rng)
    feature = loss + rng.normal(0, 0.02, loss.size)
    step = np.arange(loss.size) * 100.0
    det = view_association(feature, loss, "detrended", n_resamples=500, seed=1)
    assert det["rho"] > 0.5 and det["p"] < 0.05 and det["ci_low"] > 0
    part = view_association(feature, loss, "partial_step", step, n_resamples=500, seed=1)
    assert part["rho"] > 0.5 and part["ci_low"] > 0 and part["p"] < 0.05


def test_block_length_is_the_larger_politis_white_estimate_clamped_to_half_n():
    from arch.bootstrap import optimal_block_length

    rng = np.random.default_rng(7)
    noise, walk = rng.normal(size=(2, 60))
    walk = np.cumsum(walk)
    each = [optimal_block_length(v)["stationary"].iloc[0] for v in (noise, walk)]
    assert block_length(noise, walk) == pytest.approx(min(max(each), 30))
    assert 1 <= block_length(noise, noise[::-1]) <= 30
    assert block_length(np.cumsum(np.ones(12)) ** 3, np.arange(12.0) ** 2) <= 6


def synthetic_table(models=("a",), seeds=(1, 2, 3, 4, 5), n: int = 41) -> pd.DataFrame:
    """Random-walk features; np_mean = loss + noise (tracks each run's own loss); clocklike = a
    fixed decelerating function of step + noise; h0_count constant; lr warm-up + cosine."""
    rng = np.random.default_rng(8)
    runs = []
    for i, model in enumerate(models):
        for seed in seeds:
            step = np.linspace(0, 4000, n).astype(int)
            loss = loss_curve(rng, n)
            run = {f: np.cumsum(rng.normal(0.1, 1, n)) for f in FEATURES}
            run.update(
                model=model,
                seed=seed,
                n_params=1000 * (i + 1),
                step=step,
                train_loss=loss + rng.normal(0, 0.02, n),
                val_loss=loss + 0.1,
                np_mean=loss + rng.normal(0, 0.02, n),
                h0_count=np.full(n, 39.0),
                clocklike=-np.log1p(step / 100) + rng.normal(0, 0.05, n),
                lr=3e-3 * np.minimum(1, (step + 1) / 400) * np.cos(step / 9000),
                grad_norm=1 + rng.gamma(2, 0.1, n),
                l2_norm_mean=10 + np.sqrt(step) / 10 + rng.normal(0, 0.3, n),
            )
            run["h0_total_scalefree"] = run["h0_total"] / run["l2_norm_mean"]
            runs.append(pd.DataFrame(run))
    return pd.concat(runs, ignore_index=True)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    features = [*FEATURES, "h0_total_scalefree", "clocklike", *BASELINES]
    return association_table(synthetic_table(models=("a", "b")), features, n_resamples=100, seed=3)


def test_table_has_a_row_per_run_feature_target_view_with_the_documented_columns(table):
    n_features = len(FEATURES) + 2 + len(BASELINES)  # *_scalefree and clocklike
    per_run, per_model = len(RUN_VIEWS), len(VIEWS) - len(RUN_VIEWS)
    assert list(table.columns) == ASSOCIATION_COLUMNS
    # 2 models × 5 seeds of run views; 2 models + the pooled row of contrast views
    assert len(table) == n_features * len(TARGETS) * (10 * per_run + 3 * per_model)
    assert set(table.loc[table["feature"].isin(BASELINES), "kind"]) == {"baseline"}
    assert table["ci_method"].str.contains("not valid").eq(table["view"] == "raw").all()
    run = table["view"].isin(RUN_VIEWS[1:])
    assert table.loc[run, "p_method"].str.contains("circular-shift").all()
    contrast = table[table["view"].isin(CONTRAST_VIEWS)]
    assert contrast["p_method"].str.contains("permutation of seed labels").all()
    assert contrast["seed"].isna().all() and set(table["family"]) == {"exploratory"}


def test_weightwatcher_columns_join_the_features_as_their_own_kind():
    df = synthetic_table().assign(ww_alpha_mean=1.0, ww_stable_rank_mean=2.0)
    pairs = dict(feature_kinds(df))
    assert pairs["ww_alpha_mean"] == pairs["ww_stable_rank_mean"] == "weightwatcher"
    assert "ww_log_norm_mean" not in pairs and pairs["np_mean"] == "topological"
    assert list(pairs)[-len(BASELINES) :] == BASELINES


def test_planted_feature_beats_the_clock_and_the_scale_in_every_model(table):
    planted = table[(table["feature"] == "np_mean") & (table["target"] == "val_loss")]
    assert planted["beats_clock"].all() and planted["beats_scale"].all()
    per_model = planted[planted["view"] == "seed_contrast"]
    assert (per_model["p"] == 2 / 120).sum() == 2  # 5 seeds: twice the one-sided floor 1/120
    assert (per_model["rho"] > 0.8).all()


def test_a_function_of_step_plus_noise_does_not_beat_the_clock(table):
    """The clock-like feature follows the loss's trend (raw |ρ| ≈ 1) but none of its fluctuation."""
    clock = table[(table["feature"] == "clocklike") & (table["target"] == "val_loss")]
    assert (clock.loc[clock["view"] == "raw", "rho"] > 0.9).all()  # the raw view is fooled
    assert not clock["beats_clock"].any()
    contrast = clock[clock["view"] == "seed_contrast"]
    assert (contrast["p"] > 0.05).all() and (contrast["rho"].abs() < 0.3).all()


def test_step_and_the_schedule_have_no_between_seed_contrast(table):
    shared = table[table["feature"].isin(["step", "lr"]) & (table["view"] == "seed_contrast")]
    assert shared["rho"].isna().all()
    assert shared["note"].str.contains("nothing varies|no model with a defined").all()
    alone = view_association(
        np.arange(30.0), np.arange(30.0) ** 0.5, "partial_step", np.arange(30.0)
    )
    assert np.isnan(alone["rho"]) and "monotone function" in alone["note"]


def test_constant_and_conditioning_features_give_nan_with_a_note(table):
    const = table[table["feature"] == "h0_count"]
    assert const["rho"].isna().all()
    assert const["note"].str.contains("constant|nothing varies|no model with").all()
    l2 = table[
        (table["feature"] == "l2_norm_mean")
        & table["view"].isin(["partial_l2", "seed_contrast_l2"])
    ]
    assert (
        l2["rho"].isna().all() and l2["note"].str.contains("conditioning variable|no model").all()
    )


def test_bh_is_within_each_view_with_pooled_rows_apart(table):
    pooled = table["model"] == "pooled"
    for _, g in table.groupby([table["view"], pooled]):
        expected = benjamini_hochberg(g["p"].to_numpy())
        np.testing.assert_allclose(g["p_bh"], expected, equal_nan=True)


def test_summary_gives_each_models_flags_and_contrast_p(table):
    summary = association_summary(table)
    assert len(summary) == len(table[table["view"] == "seed_contrast"])
    row = summary[(summary["model"] == "a") & (summary["feature"] == "np_mean")]
    row = row[row["target"] == "val_loss"].iloc[0]
    assert row["n_seeds"] == 5 and row["beats_clock"] and row["p_seed_contrast"] == 2 / 120
    expected = table[(table["model"] == "a") & (table["feature"] == "np_mean")]
    expected = expected[(expected["target"] == "val_loss") & (expected["view"] == "detrended")]
    assert row["rho_detrended"] == pytest.approx(expected["rho"].mean())
    clock = summary[(summary["feature"] == "clocklike") & (summary["model"] != "pooled")]
    assert not clock["beats_clock"].any()


def test_rerun_is_identical_and_independent_of_row_order():
    df = synthetic_table(models=("a", "b"), seeds=(1,), n=21)
    run = dict(features=["np_mean", "h1_total", "step"], n_resamples=100)
    first = association_table(df, seed=0, **run)
    pd.testing.assert_frame_equal(first, association_table(df, seed=0, **run))
    shuffled = association_table(df.sample(frac=1, random_state=0), seed=0, **run)
    pd.testing.assert_frame_equal(first, shuffled)
    other = association_table(df, seed=1, **run)
    assert not np.allclose(first["ci_low"], other["ci_low"], equal_nan=True)
    assert cell_seed(0, "a", 1, "h0_total") != cell_seed(0, "a", 1, "h1_total")


def test_associations_job_writes_both_tables(tmp_path):
    from topotrain.config import DEFAULTS
    from topotrain.jobs.analysis import associations_job

    features = tmp_path / "weights.parquet"
    synthetic_table(models=("a",), seeds=(1,), n=21).to_parquet(features)
    names = ("associations", "summary")
    out = {f"{k}_{ext}": str(tmp_path / f"{k}.{ext}") for k in names for ext in ("csv", "md")}
    design = {k: DEFAULTS["analysis"][k] for k in ("horizon", "comove_from")}  # COMOVE_PARAMS
    design["warmup_steps"] = DEFAULTS["train"]["warmup_steps"]
    associations_job(str(features), {"n_resamples": 50, "seed": 0, **design}, out)
    assoc = pd.read_csv(out["associations_csv"])
    assert list(assoc.columns) == ASSOCIATION_COLUMNS and len(assoc) > 0
    summary = pd.read_csv(out["summary_csv"])
    assert {"n_seeds", "beats_clock", "beats_scale", "rho_seed_contrast"} <= set(summary.columns)
    for key in ("associations_md", "summary_md"):
        text = (tmp_path / out[key]).read_text()
        assert text.startswith("## ") and "| model |" in text


def test_a_run_of_three_checkpoints_gets_exact_p_and_no_claim():
    """The issue's case: 3 checkpoints gave raw ρ = −1 with CI [−1, −1] and p = 0.0; now the
    exact p 1/3, no interval, the time-aware views without p, each row saying too short."""
    df = synthetic_table(models=("a",), seeds=(1,), n=3)
    out = association_table(df, ["h0_total"], n_resamples=50, seed=0)
    raw = out[(out["view"] == "raw") & (out["target"] == "val_loss")].iloc[0]
    assert abs(raw["rho"]) == 1.0 and raw["p"] == pytest.approx(1 / 3)
    assert np.isnan(raw["ci_low"]) and "too short for a claim" in raw["note"]
    timed = out[out["view"].isin(["detrended", "partial_step", "partial_l2"])]
    assert timed["p"].isna().all() and timed["note"].str.contains("too short|undefined").all()


def test_runs_and_effect_intervals_spread_over_processes_give_the_same_table(table):
    features = [*FEATURES, "h0_total_scalefree", "clocklike", *BASELINES]
    df = synthetic_table(models=("a", "b"))
    spread = association_table(df, features, n_resamples=100, seed=3, threads=2)
    pd.testing.assert_frame_equal(spread, table)


def test_between_seed_rows_carry_an_effect_whose_interval_matches_their_p(table):
    """Every contrast row with an interval (5 seeds: 120 arrangements per model) excludes 0
    exactly when its two-sided p < 0.05; run rows carry no effect."""
    contrast = table[table["view"].isin(CONTRAST_VIEWS)]
    assert table.loc[~table.index.isin(contrast.index), "effect"].isna().all()
    rows = contrast[np.isfinite(contrast["effect_ci_low"])]
    assert len(rows) > 20 and set(rows["model"]) == {"a", "b", "pooled"}
    excludes = (rows["effect_ci_low"] > 0) | (rows["effect_ci_high"] < 0)
    assert (excludes == (rows["p"] < 0.05)).all()
    assert (rows["effect_ci_low"] <= rows["effect"]).all()
    assert (rows["effect"] <= rows["effect_ci_high"]).all()
    planted = rows[(rows["feature"] == "np_mean") & (rows["target"] == "val_loss")]
    assert (planted["effect"] > 0.5).all()


def pooled_assoc(assoc: pd.DataFrame, feature: str, view: str, target: str = "val_loss"):
    """The associations table's pooled row of (feature, target, view)."""
    hit = (assoc["model"] == "pooled") & (assoc["feature"] == feature)
    return assoc[hit & (assoc["target"] == target) & (assoc["view"] == view)].iloc[0]


def test_diagnostics_set_weightwatcher_beside_topology_with_pooled_effects_and_verdicts():
    """ww_alpha_mean planted to track each run's loss, ww_stable_rank_mean a function of step:
    the first beats clock and scale, the second does not; the row's numbers are the pooled
    contrast rows' and raw ρ the runs' mean Spearman ρ computed here."""
    from scipy import stats as sps

    from topotrain.analysis.inference.diagnostics import alpha_sentence, diagnostics_table

    rng = np.random.default_rng(4)
    df = synthetic_table(models=("a", "b"))
    df["ww_alpha_mean"] = df["val_loss"] + rng.normal(0, 0.02, len(df))
    df["ww_stable_rank_mean"] = -np.log1p(df["step"] / 100) + rng.normal(0, 0.05, len(df))
    features = ["np_mean", "h0_count", "ww_alpha_mean", "ww_stable_rank_mean", *BASELINES]
    assoc = association_table(df, features, n_resamples=50, seed=1)
    table = diagnostics_table(assoc, sesoi=0.1).set_index("feature")
    assert list(table.index) == [
        "np_mean",
        "h0_count",
        "ww_alpha_mean",
        "ww_stable_rank_mean",
        "grad_norm",
    ]
    assert table.loc["ww_alpha_mean", "kind"] == "weightwatcher"
    # the gradient norm is the one baseline under the same test; the clock and the scale are not
    assert table.loc["grad_norm", "kind"] == "baseline"
    grad = pooled_assoc(assoc, "grad_norm", "seed_contrast")
    assert table.loc["grad_norm", "effect_clock"] == grad["effect"]
    assert table.loc["grad_norm", "p_clock"] == grad["p"]
    assert table.loc["ww_alpha_mean", "verdict"] == "beyond clock and scale"
    assert table.loc["np_mean", "verdict"] == "beyond clock and scale"
    assert not table.loc["ww_stable_rank_mean", "beats_clock"]
    assert table.loc["ww_stable_rank_mean", "verdict"] != "beyond clock and scale"
    runs = df.sort_values("step").groupby(["model", "seed"])
    rhos = [sps.spearmanr(r["ww_alpha_mean"], r["val_loss"]).statistic for _, r in runs]
    assert table.loc["ww_alpha_mean", "raw_rho"] == pytest.approx(np.mean(rhos))
    pooled = pooled_assoc(assoc, "ww_alpha_mean", "seed_contrast_l2")
    assert table.loc["ww_alpha_mean", "effect_scale"] == pooled["effect"]
    assert table.loc["ww_alpha_mean", "p_scale"] == pooled["p"]
    sentence = alpha_sentence(table.reset_index())
    assert "does track the loss beyond the training clock" in sentence
    assert f"raw ρ {np.mean(rhos):.2f}" in sentence


def test_diagnostics_beyond_a_column_is_the_partial_contrast_and_rejects_only_unexplained_signal():
    """partial_contrasts on l2_norm_mean is the associations' pooled seed_contrast_l2 row (the same
    test reached by another path); np_mean (loss + noise) beats the weight variance and the
    gradient norm when both are noise, and a feature that is the weight variance plus noise does
    not beat it when the weight variance carries the loss."""
    from topotrain.analysis.inference.diagnostics import diagnostics_table, partial_contrasts

    rng = np.random.default_rng(11)
    df = synthetic_table(models=("a", "b"))
    df["np_wvar_mean"] = rng.normal(0, 1, len(df))
    df["ww_alpha_mean"] = rng.normal(0, 1, len(df))
    features = ["np_mean", "ww_alpha_mean", "l2_norm_mean"]
    assoc = association_table(df, features, n_resamples=50, seed=1)
    same = partial_contrasts(df, ["np_mean"], beyond={"l2": "l2_norm_mean"}, seed=0).iloc[0]
    l2 = pooled_assoc(assoc, "np_mean", "seed_contrast_l2")
    assert same["rho"] == pytest.approx(l2["rho"], abs=1e-12)
    assert same["p"] == pytest.approx(l2["p"], abs=1e-12)

    partials = partial_contrasts(df, ["np_mean", "ww_alpha_mean"], seed=0)
    assert len(partials) == 4 and set(partials["beyond"]) == {"wvar", "grad"}
    table = diagnostics_table(assoc, sesoi=0.1, partials=partials).set_index("feature")
    assert table.loc["np_mean", ["beats_wvar", "beats_grad"]].tolist() == [True, True]
    assert table.loc["np_mean", "p_wvar"] < 0.01 and table.loc["np_mean", "rho_wvar"] > 0.5
    assert not table.loc["ww_alpha_mean", ["beats_wvar", "beats_grad"]].any()
    no_partials = diagnostics_table(assoc, sesoi=0.1)
    assert no_partials["p_wvar"].isna().all() and not no_partials["beats_grad"].any()

    # the loss reaches the feature only through the weight variance: beyond it, nothing is left
    df["np_wvar_mean"] = df["val_loss"] + rng.normal(0, 0.05, len(df))
    df["h0_count"] = df["np_wvar_mean"] + rng.normal(0, 1e-3, len(df))
    explained = partial_contrasts(df, ["h0_count", "np_wvar_mean"], seed=0).set_index(
        ["feature", "beyond"]
    )
    assert explained.loc[("h0_count", "wvar"), "p"] > 0.05
    assert np.isnan(explained.loc[("np_wvar_mean", "wvar"), "p"])


def test_beyond_alpha_is_the_split_half_partial_and_given_only_where_the_halves_agree():
    """x and the loss share only a latent s that α's two halves measure with their own noise:
    the split-half partial (each model exactly split_cell's, pooled) finds nothing beyond α
    while partialling one half out leaves s in both; np_mean (the loss itself, with its own part
    u beyond s) is beyond α; halves that do not agree (independent noise) give no p, noted."""
    from topotrain.analysis.inference.diagnostics import HALVES, partial_contrasts

    df, rng = latent_table(21, HALVES)
    table = partial_contrasts(df, ["np_mean", "h0_count"], seed=0).set_index(["feature", "beyond"])
    through = table.loc[("h0_count", "alpha")]
    assert through["split_r"] > 0.5 and through["p"] > 0.05
    assert table.loc[("np_mean", "alpha"), "p"] < 0.01
    one_half = partial_contrasts(df, ["h0_count"], beyond={"a1": HALVES[0]}, seed=0)
    assert one_half.set_index("beyond").loc["a1", "p"] < 0.01  # the plain partial under-adjusts
    assert through["p"] == pooled_split_p(df, "h0_count", HALVES)

    df[HALVES[1]] = rng.normal(0, 1, len(df))  # halves that measure nothing in common
    weak = partial_contrasts(df, ["h0_count"], seed=0).set_index("beyond").loc["alpha"]
    assert np.isnan(weak["p"]) and "α's halves agree r = " in weak["note"]


def latent_table(seed: int, halves: tuple[str, str]) -> tuple[pd.DataFrame, np.random.Generator]:
    """Two models' synthetic table where the loss is 0.3·s + 0.3·u beyond its trend (s a latent,
    u the loss's own), np_mean the loss itself, h0_count s plus noise (it tracks the loss only
    through s), and ``halves`` two measurements of s with independent noise; and the generator,
    for what a test draws next."""
    rng = np.random.default_rng(seed)
    df = synthetic_table(models=("a", "b"))
    s, u = rng.normal(0, 1, len(df)), rng.normal(0, 1, len(df))
    df["val_loss"] = df["val_loss"] + 0.3 * s + 0.3 * u  # u: the loss's own, beyond s
    df["np_mean"] = df["val_loss"] + rng.normal(0, 0.02, len(df))
    df["h0_count"] = s + rng.normal(0, 0.3, len(df))  # tracks the loss only through s
    df[halves[0]] = s + rng.normal(0, 0.6, len(df))
    df[halves[1]] = s + rng.normal(0, 0.6, len(df))
    return df, rng


def pooled_split_p(df: pd.DataFrame, feature: str, halves: tuple[str, str]) -> float:
    """The split-half partial's pooled p of ``feature`` on ``halves``, by hand: each model's
    split_cell null, pooled."""
    from topotrain.analysis.inference.diagnostics import SPLIT, split_cell
    from topotrain.analysis.inference.seed_contrast import (
        model_matrices,
        pooled_row,
        seed_permutations,
    )

    cols, nulls = [feature, "val_loss", *halves], []
    for _, g in df.groupby("model", sort=False):
        perms = seed_permutations(g["seed"].nunique(), 0)
        nulls.append(split_cell(model_matrices(g, cols), feature, "val_loss", halves, perms)[1])
    return pooled_row(nulls, SPLIT, "two-sided", 0)["p"]
