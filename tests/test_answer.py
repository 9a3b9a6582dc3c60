"""The answer's figures: the between-seed points are the cells the test uses (checked against
NumPy and SciPy by hand), the forest's rows come from primary.csv, diagnostics.csv and
power.csv, and the bottom line links the figures."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
from scipy import stats

from topotrain.analysis.inference.seed_points import seed_points
from topotrain.report.answer import (
    answer_links,
    claimed_signs,
    figure_between_seeds,
    figure_effects_forest,
    forest_rows,
)


def table(seeds=(1, 2, 3), steps=8, models=("m",), seed=0) -> pd.DataFrame:
    """A checkpoint table: loss and norm fall with the step, each seed offset, the feature a
    mix of the loss, the norm and noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for m in models:
        for s in seeds:
            off = rng.normal(size=3)
            for t in range(steps):
                loss = 3 - 0.2 * t + off[0] + 0.3 * rng.normal()
                norm = 1 + 0.1 * t + off[1] + 0.3 * rng.normal()
                val = loss + 0.2 * rng.normal()
                h0 = -0.5 * loss + 0.4 * norm + 0.3 * rng.normal()
                rows.append(dict(model=m, seed=s, step=100 * t, train_loss=loss, val_loss=val))
                rows[-1] |= dict(l2_norm_mean=norm, h0_total=h0, n_params=100)
    return pd.DataFrame(rows)


def dev(df: pd.DataFrame, column: str) -> np.ndarray:
    """(seeds, steps) deviations from the across-seed mean at each step, by hand."""
    m = df.pivot(index="seed", columns="step", values=column).to_numpy()
    return m - m.mean(axis=0)


def test_the_clock_views_points_are_each_seeds_deviations_with_the_tests_spearman_rho():
    df = table()
    pts = seed_points(df, "h0_total")
    clock = pts[(pts["view"] == "level") & (pts["condition"] == "clock")]
    x, y = dev(df, "train_loss"), dev(df, "h0_total")
    assert len(clock) == x.size == 24
    got_x = clock.sort_values(["seed", "index"])["loss"].to_numpy().reshape(3, 8)
    got_y = clock.sort_values(["seed", "index"])["feature"].to_numpy().reshape(3, 8)
    np.testing.assert_allclose(got_x, x / np.sqrt((x * x).mean()), atol=1e-12)
    np.testing.assert_allclose(got_y, y / np.sqrt((y * y).mean()), atol=1e-12)
    rho = stats.spearmanr(y.ravel(), x.ravel()).statistic  # ranks over every cell
    assert np.isclose(clock["rho"].iloc[0], rho, atol=1e-12)


def test_the_scale_views_points_are_residual_on_the_norm_and_rho_their_correlation():
    df = table(seed=3)
    pts = seed_points(df, "h0_total")
    scale = pts[(pts["view"] == "level") & (pts["condition"] == "scale")]
    x, y, z = (dev(df, c) for c in ("train_loss", "h0_total", "l2_norm_mean"))
    zc = (z - z.mean()).ravel()[:, None]

    def resid(v):
        vc = (v - v.mean()).ravel()
        return vc - zc[:, 0] * np.linalg.lstsq(zc, vc, rcond=None)[0][0]

    rx, ry = resid(x), resid(y)
    got = scale.sort_values(["seed", "index"])
    np.testing.assert_allclose(got["loss"], rx / np.sqrt((rx * rx).mean()), atol=1e-10)
    np.testing.assert_allclose(got["feature"], ry / np.sqrt((ry * ry).mean()), atol=1e-10)
    assert np.isclose(scale["rho"].iloc[0], np.corrcoef(rx, ry)[0, 1], atol=1e-10)


def test_every_view_of_every_model_and_none_for_a_model_of_one_seed():
    df = pd.concat([table(models=("a", "b")), table(seeds=(7,), models=("lone",))])
    pts = seed_points(df, "h0_total")
    assert set(pts["model"]) == {"a", "b"}  # one seed: nothing to compare
    cells = set(zip(pts["view"], pts["condition"], strict=True))
    assert cells == {("level", "clock"), ("level", "scale")} | {
        ("comove", "co_clock"),
        ("comove", "co_scale"),
    }
    co = pts[(pts["model"] == "a") & (pts["condition"] == "co_clock")]
    assert len(co) == 3 * 7  # step-to-step moves: one fewer than the checkpoints
    assert seed_points(df.drop(columns="h0_total"), "h0_total").empty


PRIMARY = pd.DataFrame(
    [
        dict(
            feature="h0_total",
            models="a;b",
            signs="-1;+1",
            question="moves_with",
            verdict="undecided",
            verdict_ranks="explained by the clock",
            verdict_moves_with="undecided",
            sesoi=0.1,
            sesoi_co=0.1,
            **{f"effect_{c}": v for c, v in zip(("clock", "scale"), (0.3, 0.2), strict=True)},
            **{f"effect_{c}_ci_low": v for c, v in (("clock", 0.1), ("scale", -0.1))},
            **{f"effect_{c}_ci_high": v for c, v in (("clock", 0.5), ("scale", 0.4))},
        )
    ]
)
DIAG = pd.DataFrame(
    [
        dict(feature="ww_alpha_mean", kind="weightwatcher", verdict="below Δ")
        | dict(effect_clock=0.01, effect_ci_low_clock=-0.05, effect_ci_high_clock=0.06)
        | dict(effect_scale=0.02, effect_ci_low_scale=-0.04, effect_ci_high_scale=0.07),
        dict(feature="h0_max", kind="topological", verdict="inconclusive", effect_clock=0.9),
        dict(feature="h0_total", kind="topological", verdict="inconclusive", effect_clock=0.3)
        | dict(rho_grad=0.25, p_grad=0.012, rho_wvar=np.nan, p_wvar=np.nan),
        dict(feature="grad_norm", kind="baseline", verdict="inconclusive")
        | dict(effect_clock=-0.2, effect_ci_low_clock=-0.4, effect_ci_high_clock=0.0)
        | dict(effect_scale=-0.1, effect_ci_low_scale=-0.3, effect_ci_high_scale=0.1),
    ]
)
POWER = pd.DataFrame(
    [
        dict(feature="h0_total", planted=np.nan, power_at_sesoi=0.2, this_design=np.nan),
        dict(feature="h0_total", planted="β_co", coupling="innovation", view="reproduced")
        | dict(power_at_sesoi=0.91, this_design=True),
        dict(feature="h0_total", planted="β", coupling="level", view="reproduced")
        | dict(power_at_sesoi=0.99, this_design=True),
        dict(feature="h0_total", planted="β", coupling="level", view="reproduced")
        | dict(power_at_sesoi=0.5, this_design=False),
    ]
)


def test_the_forests_rows_are_the_claims_views_then_weightwatchers_with_power_and_verdict():
    rows = forest_rows(PRIMARY, DIAG, POWER)
    # h0_max: neither a claim nor WeightWatcher's; h0_total beyond the weight variance: undefined
    assert rows["group"].tolist() == ["primary"] * 2 + ["partial"] + ["diagnostics"] * 4
    beyond = rows.iloc[2]
    assert beyond["name"] == "TP0" and beyond["view"].startswith("beyond the gradient norm")
    assert (beyond["effect"], beyond["verdict"]) == (0.25, "p 0.012")
    assert np.isnan(beyond["low"]) and np.isnan(beyond["high"])
    grad = rows[rows["name"] == "gradient norm (baseline)"]
    assert grad["effect"].tolist() == [-0.2, -0.1] and grad["low"].tolist() == [-0.4, -0.3]
    first = rows.iloc[0]
    assert (first["effect"], first["low"], first["high"], first["delta"]) == (0.3, 0.1, 0.5, 0.1)
    assert first["name"] == "TP0" and first["view"] == "level, beyond the clock"
    assert first["verdict"] == "ranks: explained by the clock"  # its view's question's verdict
    assert first["power"] == 'power of "reproduced" 0.91 at Δ_co, 0.99 at Δ'
    assert rows.iloc[4]["high"] == 0.07 and rows.iloc[4]["verdict"] == "below Δ"
    family = forest_rows(PRIMARY, None, POWER[POWER["planted"].isna()])
    assert family.iloc[0]["power"] == "power at Δ 0.20"  # no views rows: the level family's
    assert forest_rows(None, None, None).empty


def test_the_figures_are_drawn_and_the_bottom_line_links_them(tmp_path):
    df = table(models=("a", "b"))
    design = {"seeds": 3, "sesoi": 0.1, "sesoi_co": 0.1, "models": ["a", "b"]}
    design["claimed"] = claimed_signs(PRIMARY, "h0_total")
    assert design["claimed"] == {"a": "−", "b": "+"}
    png = tmp_path / "between.png"
    figure_between_seeds(seed_points(df, "h0_total"), "h0_total", design, png)
    height, width = mpimg.imread(png).shape[:2]
    assert width > height > 500  # two models' rows of four views
    forest = tmp_path / "forest.png"
    figure_effects_forest(forest_rows(PRIMARY, DIAG, POWER), forest)
    assert mpimg.imread(forest).shape[0] > 100
    links = answer_links(
        {"effects_forest_png": str(forest), "between_seeds_h0_total_png": str(png)}
    )
    assert "](figures/forest.png)" in links and "[TP0](figures/between.png)" in links
    assert "![TP0: each seed against its siblings" in links  # the first claim's, shown
    assert answer_links({"between_seeds_h0_total_png": str(png)}) == ""


def test_the_controls_points_are_its_features_against_test_loss_beyond_the_clock_and_the_norm(
    tmp_path,
):
    """labelled_points with control_views: each feature's row (its label) against the control's
    target, the clock
    view the seeds' deviations with the test's Spearman ρ, the norm view both residual on the
    weight norm's deviations (by hand); the figure is drawn with one row per feature."""
    from topotrain.analysis.inference.seed_points import control_views, labelled_points

    df = table(seed=5).rename(
        columns={"train_loss": "test_loss", "l2_norm_mean": "weight_l2", "h0_total": "emb_h1_total"}
    )
    df["fourier_top5"] = -df["test_loss"] + 0.1 * np.random.default_rng(1).normal(size=len(df))
    labels = {"emb_h1_total": "H1", "fourier_top5": "Fourier", "absent": "x"}
    pts = labelled_points(df, labels, control_views("test_loss", "weight_l2"))
    assert list(dict.fromkeys(pts["model"])) == ["H1", "Fourier"]
    assert set(pts["condition"]) == {"clock", "norm"}
    x, y, z = (dev(df, c) for c in ("test_loss", "emb_h1_total", "weight_l2"))
    clock = pts[(pts["model"] == "H1") & (pts["condition"] == "clock")]
    assert np.isclose(clock["rho"].iloc[0], stats.spearmanr(y.ravel(), x.ravel()).statistic)
    zc = (z - z.mean()).ravel()
    rx, ry = ((v - v.mean()).ravel() for v in (x, y))
    rx, ry = (v - zc * (v @ zc) / (zc @ zc) for v in (rx, ry))
    norm = pts[(pts["model"] == "H1") & (pts["condition"] == "norm")]
    assert np.isclose(norm["rho"].iloc[0], np.corrcoef(rx, ry)[0, 1], atol=1e-10)
    got = norm.sort_values(["seed", "index"])["feature"].to_numpy()
    np.testing.assert_allclose(got, ry / np.sqrt((ry * ry).mean()), atol=1e-10)
    fourier = pts[(pts["model"] == "Fourier") & (pts["condition"] == "clock")]
    assert fourier["rho"].iloc[0] < -0.8  # the known measure: minus the loss
    png = tmp_path / "control.png"
    design = {"seeds": 3, "sesoi": 0.1, "sesoi_co": 0.1, "models": ["H1", "Fourier"]}
    figure_between_seeds(pts, "emb_h1_total", design | {"unclaimed": "vs test_loss"}, png)
    height, width = mpimg.imread(png).shape[:2]
    assert height > 500 and width > 500  # two features' rows of two views


def test_a_groups_points_are_each_feature_per_size_against_its_first_logged_loss(tmp_path):
    """labelled_points with group_views: rows "label · size" per feature; with only val loss
    logged the level view is against val loss (ρ by hand); the co-movement view is drawn whenever
    val loss is logged."""
    from topotrain.analysis.inference.seed_points import group_views, labelled_points
    from topotrain.report.plots import _label

    def group_points(df, features, targets):
        return labelled_points(df, {f: _label(f) for f in features}, group_views(targets))

    df = table(models=("a", "b"), seed=7)
    pts = group_points(df, ["h0_total"], ["val_loss"])
    label = _label("h0_total")
    assert list(dict.fromkeys(pts["model"])) == [f"{label} · a", f"{label} · b"]
    assert set(pts["view"]) == {"level", "comove"}  # val loss: the co-movement view's own
    assert set(group_points(df, ["h0_total"], ["train_loss"])["view"]) == {"level"}
    a = df[df["model"] == "a"]
    x, y = dev(a, "val_loss"), dev(a, "h0_total")
    clock = pts[(pts["model"] == f"{label} · a") & (pts["condition"] == "clock")]
    assert np.isclose(clock["rho"].iloc[0], stats.spearmanr(y.ravel(), x.ravel()).statistic)
    both = group_points(df, ["h0_total"], ["train_loss", "val_loss"])
    assert set(both["view"]) == {"level", "comove"}
    assert group_points(df, ["h0_total"], []).empty
    png = tmp_path / "group.png"
    design = {
        "seeds": 3,
        "sesoi": 0.1,
        "sesoi_co": 0.1,
        "models": list(dict.fromkeys(pts["model"])),
    }
    figure_between_seeds(both, "", design, png, title="Group g: h0_total")
    assert mpimg.imread(png).shape[0] > 400
