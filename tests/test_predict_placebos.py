"""Fair placebos (a decelerating clock, six-column learned extras) and model-clustered tests."""

import itertools

import numpy as np
import pandas as pd
import pytest
from test_predict import make_run, power_curve, rows, synthetic_study

from topotrain.analysis.inference.stats import sign_flip_p
from topotrain.analysis.prediction.learned import loss_shape_features
from topotrain.analysis.prediction.predict import (
    LEARNED_EXTRAS,
    VECTOR_FEATURES,
    pacing_series,
    predict_final_loss,
    predict_topology_only,
)
from topotrain.analysis.prediction.summary import prediction_summary


def brute_force_sign_flip_p(d):
    """#{sign vectors s : Σ s·d ≥ Σ d} / 2^M by listing every sign vector."""
    flips = list(itertools.product((-1, 1), repeat=len(d)))
    sums = [sum(s * x for s, x in zip(signs, d, strict=True)) for signs in flips]
    return sum(total >= sum(d) - 1e-9 for total in sums) / len(flips)


@pytest.mark.parametrize("m", [2, 3, 5, 8])
def test_sign_flip_p_matches_brute_force_enumeration(m):
    rng = np.random.default_rng(m)
    for _ in range(5):
        d = rng.normal(0.3, 1.0, m)
        assert sign_flip_p(d) == brute_force_sign_flip_p(list(d))
        flips = itertools.product((-1, 1), repeat=m)
        two = [
            abs(sum(s * x for s, x in zip(f, d, strict=True))) >= abs(sum(d)) - 1e-9 for f in flips
        ]
        assert sign_flip_p(d, "two-sided") == sum(two) / 2**m


@pytest.mark.parametrize(
    "d, p",
    [
        ([1, 2, 3], 1 / 8),  # only the identity reaches Σ = 6
        ([1, -1], 3 / 4),  # sums 0, 2, −2, 0 against 0
        ([3, -1, -1], 4 / 8),  # sums 1, 3, 3, 5, −5, −3, −3, −1 against 1
        ([0.1, 0.0, 0.0], 4 / 8),  # zero differences count: ±0.1 four times each
        ([0.0, 0.0], 1.0),
        ([1, 1, 1, 1, 1], 1 / 32),  # the smallest p with five models
    ],
)
def test_sign_flip_p_on_hand_checked_cases(d, p):
    assert sign_flip_p(np.array(d, dtype=float)) == pytest.approx(p)


def test_sign_flip_p_is_nan_below_two_models():
    assert np.isnan(sign_flip_p(np.array([1.0]))) and np.isnan(sign_flip_p(np.array([])))


def test_clock_placebo_is_topology_only_paced_by_a_log_clock_on_nps_scale():
    df = synthetic_study(4, seed=3)  # steps 0, 50, …, 1000
    pred = predict_final_loss(df, [0.2, 0.5])
    got = rows(pred, "topology_only[step]")
    for (model, _, fraction), row in got.iterrows():
        run = df[(df["model"] == model) & (df["frac"] <= fraction + 1e-9) & (df["step"] > 0)]
        t, loss, n = (run[c].to_numpy(float) for c in ("step", "val_loss", "np_mean"))
        clock = np.log1p(t / 50.0)
        on_np = n.mean() + n.std() * (clock - clock.mean()) / clock.std()
        expected = predict_topology_only(t, on_np, loss, 1000.0)
        assert row["predicted"] == pytest.approx(expected.value, rel=1e-9)
        assert not row["fallback"]
        gamma = float(row["note"].split("gamma=")[1].split(",")[0])
        assert gamma > -0.99  # a decelerating pace, not the constant rate at the γ bound
        recent = t >= t[-1] / 2
        linear = loss[-1] + np.polyfit(t[recent], loss[recent], 1)[0] * (1000.0 - t[-1])
        assert abs(row["predicted"] - linear) > 1e-3
    assert got["predicted"].nunique() == len(got)


def test_clock_placebo_is_on_nps_scale_and_depends_on_the_step_only():
    steps = np.arange(0, 1001, 50)
    loss = power_curve(steps, 2.0, 0.5, 1.0)
    a = make_run("a", loss, power_curve(steps, -1.0, 0.4, 3.0, 0.5), steps=steps)
    b = make_run("b", loss, 7.0 + 0.02 * steps**0.8, steps=steps)  # another NP, other scale
    window = a[a["frac"] <= 0.3]
    clock = pacing_series(window)["step"][1:]
    n = window["np_mean"].to_numpy(float)[1:]
    assert clock.mean() == pytest.approx(n.mean()) and clock.std() == pytest.approx(n.std())
    pred = predict_final_loss(pd.concat([a, b]), [0.3])
    placebo, topo = rows(pred, "topology_only[step]"), rows(pred, "topology_only")
    assert placebo.loc[("a", 0, 0.3), "predicted"] == pytest.approx(
        placebo.loc[("b", 0, 0.3), "predicted"], rel=1e-9
    )
    assert topo.loc[("a", 0, 0.3), "predicted"] != pytest.approx(
        topo.loc[("b", 0, 0.3), "predicted"], rel=1e-3
    )


def test_learned_extras_have_as_many_columns_as_the_vectors():
    assert {len(cols) for cols in LEARNED_EXTRAS.values()} == {len(VECTOR_FEATURES)} == {6}


def test_loss_shape_features_match_a_hand_computation_on_a_line():
    t = np.arange(0.0, 1001.0, 100.0)
    loss = 5.0 - 0.001 * t
    got = loss_shape_features(t, loss)
    late = t >= 500
    loglog = np.polyfit(np.log(t[late]), np.log(loss[late]), 1)[0]
    expected = [4.75, 4.5, 4.25, -0.001, -0.001, loglog]
    np.testing.assert_allclose([got[k] for k in LEARNED_EXTRAS["learned[+step]"]], expected)


def test_learned_placebos_vary_across_runs_and_differ_from_learned():
    df = synthetic_study(6, seed=8)
    rng = np.random.default_rng(3)
    for model in df["model"].unique():  # scale series that differ between runs
        sel = df["model"] == model
        df.loc[sel, "l2_norm_mean"] = rng.uniform(2, 4) + rng.uniform(0, 1e-3) * df.loc[sel, "step"]
        df.loc[sel, "grad_norm"] = rng.uniform(0.5, 2) * np.exp(-df.loc[sel, "step"] / 500)
    pred = predict_final_loss(df, [0.3])
    learned = rows(pred, "learned")["predicted"]
    for method in ("learned[+step]", "learned[+scale]"):
        placebo = rows(pred, method)
        assert placebo["predicted"].notna().all()
        assert not np.allclose(placebo["predicted"], learned, rtol=1e-6)
        assert not placebo["note"].str.contains("constant across runs").any()


def test_learned_placebo_notes_constant_extras_and_missing_columns():
    df = synthetic_study(4)  # l2_norm_mean and grad_norm constant in every run
    scale = rows(predict_final_loss(df, [0.3]), "learned[+scale]")
    assert scale["note"].str.contains("extras constant across runs").all()
    bare = rows(predict_final_loss(df.drop(columns="grad_norm"), [0.3]), "learned[+scale]")
    assert bare["predicted"].isna().all()
    assert bare["note"].str.contains("no grad_norm column").all()


ERRORS = {  # abs_error per run: models m0, m1, m2 with seeds 0 and 1 each
    "loss_only": [0.4, 0.2, 0.5, 0.5, 0.2, 0.2],
    "topology_only": [0.1, 0.1, 0.1, 0.3, 0.2, 0.2],
    "combined": [0.1, 0.3, 0.2, 0.4, 0.3, 0.2],
    "last_loss": [0.3, 0.1, 0.2, 0.2, 0.3, 0.1],
    "mean_loss_only_last": [0.1, 0.1, 0.2, 0.2, 0.1, 0.1],
    "topology_only[step]": [0.25] * 6,
    "combined[step]": [0.5] * 6,
    "topology_only[l2_norm_mean]": [0.3] * 6,
    "combined[l2_norm_mean]": [0.6] * 6,
}


def clustered_table(errors):
    """A prediction table with the given abs_error per (model, seed), three models × two seeds."""
    out = []
    for method, errs in errors.items():
        for i, err in enumerate(errs):
            out.append(
                {
                    "model": f"m{i // 2}",
                    "seed": i % 2,
                    "fraction": 0.3,
                    "method": method,
                    "predicted": 1.0 + err,
                    "actual": 1.0 + i,
                    "abs_error": err,
                }
            )
    return pd.DataFrame(out)


def test_model_paired_p_clusters_seeds_by_model():
    by = prediction_summary(clustered_table(ERRORS)).set_index("method")
    # topology_only: d = (0.2, 0.3, 0.0) → only (+, +, ±) reach Σ = 0.5
    assert by.loc["topology_only", "model_paired_p"] == pytest.approx(2 / 8)
    # combined: d = (0.1, 0.2, −0.05) → Σ = 0.25 reached by (+, +, +) and (+, +, −)
    assert by.loc["combined", "model_paired_p"] == pytest.approx(2 / 8)
    assert (by.drop(index="loss_only")["model_paired_p_min"] == 1 / 8).all()
    assert pd.isna(by.loc["loss_only", ["model_paired_p", "model_paired_p_min"]]).all()


def test_rival_is_the_best_rival_and_rival_p_its_clustered_test():
    summary = prediction_summary(clustered_table(ERRORS))
    by = summary.set_index("method")
    # topology_only (MAE 1/6) beats loss_only 1/3, last_loss 0.2, step 0.25, L2 0.3
    assert by.loc["topology_only", "beats_placebos"] is True
    assert by.loc["topology_only", "rival"] == "last_loss"
    assert by.loc["topology_only", "rival_p"] == pytest.approx(4 / 8)  # d = (0.1, 0, 0)
    # combined (MAE 0.25) loses to the averaging control mean_loss_only_last (MAE 0.8/6)
    assert by.loc["combined", "beats_placebos"] is False
    assert by.loc["combined", "mae"] < by.loc["loss_only", "mae"]
    assert by.loc["combined", "rival"] == "mean_loss_only_last"
    assert by.loc["combined", "rival_p"] == 1.0  # d = (−0.1, −0.1, −0.15): every flip ≥ Σ
    others = by.drop(index=["topology_only", "combined"])
    assert others["rival"].isna().all() and others["rival_p"].isna().all()
