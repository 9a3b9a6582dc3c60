"""Final-loss predictors: exact on their own models, placebos, honest learned CV, summaries."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import wilcoxon

from topotrain.analysis.prediction import predict
from topotrain.analysis.prediction.learned import forward_chaining
from topotrain.analysis.prediction.predict import (
    METHODS,
    fit_np_trajectory,
    predict_final_loss,
    predict_loss_only,
    predict_topology_only,
)
from topotrain.analysis.prediction.summary import flag_beats_placebos, prediction_summary

STEPS = np.arange(0, 5001, 100)


def make_run(model, val_loss, np_mean, h0_total=None, n_params=10_000, steps=STEPS, seed=0):
    """One run's feature rows; the columns no predictor reads are filled with placeholders."""
    n = steps.size
    h0 = np.linspace(5.0, 3.0, n) if h0_total is None else h0_total
    return pd.DataFrame(
        {
            "model": model,
            "seed": seed,
            "n_params": n_params,
            "step": steps,
            "frac": steps / steps[-1],
            "train_loss": val_loss,
            "val_loss": val_loss,
            "grad_norm": 1.0,
            "np_mean": np_mean,
            "np_std": 0.1,
            "h0_total": h0,
            "h1_total": 0.5,
            "h0_count": 10,
            "h1_count": 2,
            "h0_entropy_mean": 1.0,
            "h1_entropy_mean": 0.5,
            "h0_max": 1.0,
            "h1_max": 0.2,
            "l2_norm_mean": 3.0,
        }
    )


def power_curve(steps, a, b, c, at_zero=50.0):
    """a·t^(−b) + c for t > 0, and an arbitrary value at t = 0 (which the fits must ignore)."""
    t = np.where(steps > 0, steps, 1).astype(float)
    return np.where(steps > 0, a * t ** (-b) + c, at_zero)


def synthetic_study(n_models, seed=0):
    """Runs with random power-law losses and NP curves, noisy, of random sizes, T = 1000."""
    steps = np.arange(0, 1001, 50)
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n_models):
        a, b, c = rng.uniform(1, 3), rng.uniform(0.3, 0.8), rng.uniform(0.8, 1.5)
        loss = power_curve(steps, a, b, c) + rng.normal(0, 0.01, steps.size)
        np_mean = power_curve(steps, -rng.uniform(1, 2), rng.uniform(0.2, 0.6), 3.0, 0.5)
        h0 = rng.uniform(3, 6) - rng.uniform(0, 2e-3) * steps + rng.normal(0, 0.05, steps.size)
        n_params = int(10 ** rng.uniform(4, 6))
        runs.append(make_run(f"m{i:02d}", loss, np_mean, h0, n_params, steps))
    return pd.concat(runs, ignore_index=True)


def rows(pred, method, fraction=None):
    sel = pred["method"] == method
    if fraction is not None:
        sel &= pred["fraction"] == fraction
    return pred[sel].set_index(["model", "seed", "fraction"])


@pytest.mark.parametrize("fraction", [0.2, 0.3, 0.5])
def test_loss_only_is_exact_on_its_own_power_law(fraction):
    df = make_run("m", power_curve(STEPS, 2.0, 0.5, 1.2), np.linspace(1, 2, STEPS.size))
    out = rows(predict_final_loss(df, [fraction]), "loss_only").iloc[0]
    expected = 2.0 * 5000**-0.5 + 1.2
    assert out["actual"] == pytest.approx(expected, rel=1e-12)
    assert out["predicted"] == pytest.approx(expected, rel=1e-6)
    assert not out["fallback"]


NP_MODELS = {  # name: (N(t), γ of the NP rate r(t) ∝ t^(−γ−1))
    "saturating": lambda t: 3.0 - 2.0 * t**-0.4,
    "logarithmic": lambda t: 1.0 + 0.3 * np.log(t),
    "sqrt_growth": lambda t: 0.5 + 0.01 * t**0.5,
}


@pytest.mark.parametrize("name", NP_MODELS)
@pytest.mark.parametrize("fraction", [0.2, 0.5])
def test_topology_only_is_exact_on_its_own_model(name, fraction):
    # own model: NP rate a power of t, loss linear in NP ⇒ L(T) = L(t0) + k·(N(T) − N(t0))
    n_of_t = NP_MODELS[name]
    t = STEPS[(STEPS > 0) & (STEPS <= fraction * 5000)].astype(float)
    got = predict_topology_only(t, n_of_t(t), 6.0 - 1.5 * n_of_t(t), 5000.0)
    assert got.value == pytest.approx(6.0 - 1.5 * n_of_t(5000.0), rel=1e-6)
    assert not got.fallback


def test_np_fit_returns_exponent_cutoff_value_and_rate_at_cutoff():
    t0 = 1500.0
    t = STEPS[(STEPS > 0) & (STEPS <= t0)].astype(float)
    gamma, n0, s = fit_np_trajectory(t / t0, 3.0 - 2.0 * t**-0.4)
    assert gamma == pytest.approx(0.4, rel=1e-6)
    assert n0 == pytest.approx(3.0 - 2.0 * t0**-0.4, rel=1e-9)
    assert s / t0 == pytest.approx(0.8 * t0**-1.4, rel=1e-6)  # r(t0) = dN/dt at t0


def test_topology_only_uses_the_loss_np_slope_of_the_recent_half_window():
    n_of_t = NP_MODELS["saturating"]
    t = STEPS[(STEPS > 0) & (STEPS <= 2000)].astype(float)
    n = n_of_t(t)
    loss = np.where(t >= 1000, 6.0 - 1.5 * n, 9.0 - 4.0 * n)  # older checkpoints: another slope
    got = predict_topology_only(t, n, loss, 5000.0)
    assert got.value == pytest.approx(loss[-1] - 1.5 * (n_of_t(5000.0) - n[-1]), rel=1e-6)


def test_topology_only_clips_a_negative_extrapolation_at_zero():
    n_of_t = NP_MODELS["saturating"]
    t = STEPS[(STEPS > 0) & (STEPS <= 1000)].astype(float)
    assert 4.35 - 1.5 * n_of_t(5000.0) < 0 < 4.35 - 1.5 * n_of_t(1000.0)
    got = predict_topology_only(t, n_of_t(t), 4.35 - 1.5 * n_of_t(t), 5000.0)
    assert got.value == 0.0 and not got.fallback
    assert "clipped at 0" in got.note


def test_topology_only_falls_back_to_last_loss_when_np_is_flat():
    t = STEPS[1:11].astype(float)
    loss = 1.0 + 1.0 / t
    got = predict_topology_only(t, np.full(t.size, 2.0), loss, 5000.0)
    assert got.fallback
    assert got.value == loss[-1]


def test_combined_is_the_mean_of_loss_only_and_topology_only():
    pred = predict_final_loss(synthetic_study(4))
    lo, topo, comb = (rows(pred, m) for m in ("loss_only", "topology_only", "combined"))
    np.testing.assert_allclose(comb["predicted"], (lo["predicted"] + topo["predicted"]) / 2)
    np.testing.assert_allclose(comb["abs_error"], (comb["predicted"] - comb["actual"]).abs())


def test_learned_never_sees_its_own_final_loss():
    df = synthetic_study(6, seed=1)
    before = rows(predict_final_loss(df, [0.3]), "learned")
    final = df["step"] == df["step"].max()
    altered = df.copy()
    altered.loc[final & (df["model"] == "m02"), "val_loss"] += 1.0
    after = rows(predict_final_loss(altered, [0.3]), "learned")
    key = ("m02", 0, 0.3)
    assert after.loc[key, "predicted"] == before.loc[key, "predicted"]
    assert after.loc[key, "actual"] == before.loc[key, "actual"] + 1.0
    others = after.index != key  # the altered target does train the other models' predictors
    assert not np.allclose(after.loc[others, "predicted"], before.loc[others, "predicted"])


def test_learned_recovers_a_linear_law_of_cutoff_features():
    df = synthetic_study(30, seed=2)
    fraction = 0.3
    window = df[df["frac"] <= fraction].groupby("model").last()
    law = (
        0.3
        + 0.8 * window["val_loss"]
        + 0.05 * window["np_mean"]
        - 0.02 * np.log(window["n_params"])
    )
    final = df["step"] == df["step"].max()
    df.loc[final, "val_loss"] = df.loc[final, "model"].map(law).to_numpy()
    out = rows(predict_final_loss(df, [fraction], alpha=1e-8), "learned")
    np.testing.assert_allclose(out["predicted"], out["actual"], rtol=1e-4)
    assert out["note"].str.contains("trained on 29 runs").all()


def test_learned_with_vectors_recovers_a_law_that_needs_them_and_beats_its_placebos():
    df = synthetic_study(30, seed=4)
    rng = np.random.default_rng(9)
    for col in (
        "h0_landscape_l2",
        "h1_landscape_l2",
        "h0_image_mass",
        "h1_image_mass",
        "h0_betti_auc",
        "h1_betti_auc",
    ):
        df[col] = rng.uniform(0, 1, len(df))
    fraction = 0.3
    window = df[df["frac"] <= fraction].groupby("model").last()
    law = 0.3 + 0.8 * window["val_loss"] + 0.5 * window["h1_image_mass"]  # needs a vector
    final = df["step"] == df["step"].max()
    df.loc[final, "val_loss"] = df.loc[final, "model"].map(law).to_numpy()
    pred = predict_final_loss(df, [fraction], alpha=1e-8)
    out = rows(pred, "learned[+vectors]")
    np.testing.assert_allclose(out["predicted"], out["actual"], rtol=1e-4)
    assert rows(pred, "learned")["abs_error"].mean() > 10 * out["abs_error"].mean()
    summary = prediction_summary(pred).set_index("method")
    assert summary.loc["learned[+vectors]", "vectors_help"]
    assert pd.isna(summary.loc["learned", "vectors_help"])
    # without the columns: NaN rows that say why, and no flag
    bare = predict_final_loss(synthetic_study(4), [fraction])
    vec = rows(bare, "learned[+vectors]")
    assert vec["predicted"].isna().all() and vec["note"].str.contains("no h0_landscape_l2").all()
    assert rows(bare, "learned[+scale]")["predicted"].notna().all()  # l2_norm_mean is there


def test_learned_needs_three_models():
    pred = predict_final_loss(synthetic_study(2), [0.3])
    learned = rows(pred, "learned")
    assert len(learned) == 2
    assert learned["predicted"].isna().all()
    assert learned["note"].str.contains(">= 3 models").all()


def test_one_row_per_run_fraction_and_method_with_documented_columns():
    fractions = [0.2, 0.3, 0.5]
    pred = predict_final_loss(synthetic_study(3), fractions)
    assert list(pred.columns) == [
        "model",
        "seed",
        "n_params",
        "fraction",
        "method",
        "predicted",
        "actual",
        "abs_error",
        "fallback",
        "note",
    ]
    assert len(pred) == 3 * len(fractions) * len(METHODS)
    assert not pred.duplicated(["model", "seed", "fraction", "method"]).any()


def test_unconverged_fit_is_flagged_as_fallback_not_dropped(monkeypatch):
    monkeypatch.setattr(predict, "MAXFEV", 1)  # curve_fit stops before converging
    df = synthetic_study(3)
    pred = predict_final_loss(df, [0.3])
    lo = rows(pred, "loss_only")
    assert len(lo) == 3
    assert lo["fallback"].all()
    assert lo["note"].str.contains("fit failed").all()
    last_seen = df[df["frac"] <= 0.3].groupby("model")["val_loss"].last()
    by_model = lo.reset_index().set_index("model")["predicted"]
    pd.testing.assert_series_equal(by_model.sort_index(), last_seen, check_names=False)
    assert rows(pred, "combined")["fallback"].all()


def test_too_short_window_is_flagged_as_fallback():
    t = np.array([0.0, 100.0])
    got = predict_loss_only(t, np.array([4.0, 3.0]), 5000.0)
    assert got.fallback and got.value == 3.0


def pred_table(errors):
    """A prediction table whose abs_error per method is given, one run per entry."""
    out = []
    for method, errs in errors.items():
        for i, err in enumerate(errs):
            out.append(
                {
                    "model": f"m{i}",
                    "seed": 0,
                    "fraction": 0.3,
                    "method": method,
                    "predicted": 1.0 + err,
                    "actual": 1.0,
                    "abs_error": err,
                }
            )
    return pd.DataFrame(out)


def test_summary_mae_and_improvement_match_hand_computation():
    loss = [0.1, 0.2, 0.3, 0.4, 0.5]
    comb = [0.05, 0.25, 0.1, 0.2, 0.45]
    summary = prediction_summary(pred_table({"loss_only": loss, "combined": comb}))
    by = summary.set_index("method")
    mae_loss, mae_comb = sum(loss) / 5, sum(comb) / 5
    assert by.loc["loss_only", "mae"] == pytest.approx(mae_loss)
    assert by.loc["combined", "mae"] == pytest.approx(mae_comb)
    assert by.loc["combined", "n"] == 5
    expected = 100 * (mae_loss - mae_comb) / mae_loss
    assert by.loc["combined", "improvement_pct"] == pytest.approx(expected)
    assert by.loc["loss_only", "improvement_pct"] == 0.0


@pytest.mark.parametrize("n", [5, 8])
def test_wilcoxon_matches_scipy_and_notes_when_n_is_too_small(n):
    loss = np.linspace(0.5, 1.0, n)
    comb = loss - np.linspace(0.01, 0.1, n)  # every run better, distinct magnitudes
    summary = prediction_summary(pred_table({"loss_only": loss, "combined": comb}))
    row = summary.set_index("method").loc["combined"]
    ref = wilcoxon(comb, loss)
    assert row["wilcoxon_p"] == pytest.approx(ref.pvalue)
    assert row["wilcoxon_stat"] == ref.statistic
    assert row["wilcoxon_p"] == pytest.approx(2 * 0.5**n)  # exact p when all signs agree
    assert ("cannot reach p<0.05" in row["wilcoxon_note"]) == (n < 6)


def test_l2_placebo_runs_the_topology_predictor_on_the_l2_norm_series():
    df = synthetic_study(3, seed=4)
    df["l2_norm_mean"] = 2.0 + 0.001 * df["step"] ** 0.7  # a non-constant pacing series
    pred = predict_final_loss(df, [0.3])
    for (model, _, fraction), row in rows(pred, "topology_only[l2_norm_mean]").iterrows():
        run = df[(df["model"] == model) & (df["frac"] <= fraction + 1e-9)]
        t = run["step"].to_numpy(float)
        args = (run["l2_norm_mean"].to_numpy(float), run["val_loss"].to_numpy(float), 1000.0)
        # the pace is put on NP's scale, to which the predictor is invariant (up to rounding)
        assert row["predicted"] == pytest.approx(predict_topology_only(t, *args).value, rel=1e-9)


def test_missing_placebo_column_gives_nan_rows_with_a_note():
    pred = predict_final_loss(synthetic_study(3).drop(columns="l2_norm_mean"), [0.3])
    for method in ("topology_only[l2_norm_mean]", "combined[l2_norm_mean]"):
        assert rows(pred, method)["predicted"].isna().all()
    assert rows(pred, "topology_only[l2_norm_mean]")["note"].str.contains("no l2_norm_mean").all()


@pytest.mark.parametrize("fraction", [0.2, 0.5])
def test_last_loss_is_the_last_observed_val_loss_and_the_mean_baseline_averages_it(fraction):
    df = synthetic_study(3, seed=5)
    pred = predict_final_loss(df, [fraction])
    last = rows(pred, "last_loss")
    seen = df[df["frac"] <= fraction].sort_values("step").groupby("model")["val_loss"].last()
    got = last.reset_index().set_index("model")["predicted"]
    pd.testing.assert_series_equal(got.sort_index(), seen, check_names=False)
    assert not last["fallback"].any()
    mean = rows(pred, "mean_loss_only_last")["predicted"]
    np.testing.assert_allclose(mean, (rows(pred, "loss_only")["predicted"] + last["predicted"]) / 2)


def test_forward_chaining_never_uses_a_larger_models_final_loss():
    df = synthetic_study(6, seed=6)
    order = df.groupby("model")["n_params"].first().sort_values().index
    before = rows(predict_final_loss(df, [0.3]), "learned_forward").reset_index("seed")
    final = df["step"] == df["step"].max()
    for altered_model in (order[-1], order[3]):  # the largest, and one in the middle
        altered = df.copy()
        altered.loc[final & (df["model"] == altered_model), "val_loss"] += 5.0
        after = rows(predict_final_loss(altered, [0.3]), "learned_forward").reset_index("seed")
        smaller_or_same = [m for m in order[: list(order).index(altered_model) + 1]]
        larger = [m for m in order if m not in smaller_or_same]
        same = before.loc[smaller_or_same, "predicted"]
        pd.testing.assert_series_equal(after.loc[smaller_or_same, "predicted"], same)
        if larger:  # the altered final loss does train the larger models' predictors
            assert not np.allclose(after.loc[larger, "predicted"], before.loc[larger, "predicted"])


def test_forward_chaining_predicts_nothing_until_enough_smaller_models():
    pred = rows(predict_final_loss(synthetic_study(5, seed=7), [0.3]), "learned_forward")
    pred = pred.sort_values("n_params")
    assert pred["predicted"].isna().tolist() == [True, True, False, False, False]
    assert pred["note"].iloc[:2].str.contains("needs >= 2 smaller models").all()
    assert pred["note"].iloc[2:].str.contains("smaller models").all()


def test_forward_chaining_trains_on_strictly_smaller_models_only():
    x = np.array([[0.0], [1.0], [2.0], [3.0], [3.0]])
    y = np.array([0.0, 1.0, 2.0, 30.0, 31.0])  # the tied-size models must not train each other
    models = np.array(["a", "b", "c", "d", "e"])
    pred, notes = forward_chaining(x, y, models, np.array([1, 2, 3, 4, 4]), alpha=1e-10)
    assert np.isnan(pred[:2]).all()
    np.testing.assert_allclose(pred[2:], [2.0, 3.0, 3.0], atol=1e-6)
    assert "3 runs of 3 smaller models" in notes[3] and "3 runs of 3 smaller" in notes[4]


def test_prediction_copes_with_two_models():
    pred = predict_final_loss(synthetic_study(2), [0.3])
    summary = prediction_summary(pred)
    assert set(summary["method"]) == set(METHODS)
    assert rows(pred, "learned_forward")["predicted"].isna().all()
    assert summary["spearman_rho"].isna().all() and (summary["spearman_n"] <= 2).all()


def test_summary_spearman_across_sizes_uses_means_over_seeds_and_the_exact_p():
    out = []
    for i, (pred_a, pred_b) in enumerate(
        [(1.0, 1.2), (2.0, 2.2), (3.0, 3.2), (5.0, 5.2), (4.0, 4.2)]
    ):
        for seed, predicted in enumerate((pred_a, pred_b)):
            out.append(
                {
                    "model": f"m{i}",
                    "seed": seed,
                    "fraction": 0.3,
                    "method": "loss_only",
                    "predicted": predicted,
                    "actual": float(i),
                    "abs_error": 0.1,
                }
            )
    row = prediction_summary(pd.DataFrame(out)).iloc[0]
    assert row["spearman_rho"] == pytest.approx(0.9) and row["spearman_n"] == 5
    assert row["spearman_p_exact"] == pytest.approx(10 / 120)


RIVAL_MAES = {  # every rival of topology_only and combined beaten at MAE 0.1
    "loss_only": 0.2,
    "last_loss": 0.3,
    "mean_loss_only_last": 0.15,
    "topology_only[step]": 0.2,
    "topology_only[l2_norm_mean]": 0.3,
    "combined[step]": 0.2,
    "combined[l2_norm_mean]": 0.3,
}


@pytest.mark.parametrize(
    "maes, topo, comb",
    [
        ({"topology_only": 0.1, "combined": 0.1}, True, True),
        ({"topology_only": 0.1, "combined": 0.1, "combined[step]": 0.09}, True, False),
        ({"topology_only": 0.25, "combined": 0.1}, False, True),
        ({"topology_only": 0.1, "combined": 0.1, "last_loss": 0.05}, False, True),
        ({"topology_only": 0.1, "combined": 0.1, "mean_loss_only_last": 0.1}, True, False),
        (
            {"topology_only": 0.1, "combined": 0.1, "topology_only[l2_norm_mean]": np.nan},
            False,
            True,
        ),
    ],
)
def test_beats_placebos_needs_lower_mae_than_loss_only_the_averaging_control_and_placebos(
    maes, topo, comb
):
    maes = RIVAL_MAES | maes
    summary = pd.DataFrame({"fraction": 0.3, "method": list(maes), "mae": list(maes.values())})
    flags = flag_beats_placebos(summary).set_index("method")["beats_placebos"]
    assert flags["topology_only"] is topo and flags["combined"] is comb
    assert pd.isna(flags["loss_only"]) and pd.isna(flags["last_loss"])


def test_report_findings_and_figure_read_the_new_summary(tmp_path):
    from topotrain.report.markdown import prediction_findings
    from topotrain.report.plots import figure_prediction_mae

    prediction_summary(predict_final_loss(synthetic_study(4), [0.3])).to_csv(tmp_path / "p.csv")
    summary = pd.read_csv(tmp_path / "p.csv")
    (line,) = prediction_findings(summary)
    assert "Beats loss-only, its averaging control and both placebos: topology_only " in line
    assert "The same averaging without topology (`mean_loss_only_last`)" in line
    figure_prediction_mae(summary, tmp_path / "m.png", tmp_path / "m.pdf")
    assert (tmp_path / "m.png").stat().st_size > 0
