"""Discovery, then confirmation on fresh seeds (confirmation.confirm): the hits and their p against
the control's and the associations' own contrasts, the confirmation's one-sided p against brute
force over every seed order, BH over the family, the verdicts, the seeds kept apart."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.confirmation.confirm import (
    BRANCHES,
    confirmation_table,
    discovery_screen,
    hypotheses_table,
)
from topotrain.analysis.control import grokking
from topotrain.analysis.inference.seed_contrast import POOLED, contrast_table
from topotrain.config import ConfigError, check_config, fill_defaults
from topotrain.report.confirm import HEADING, NOTHING, confirm_sections

CONTROL = BRANCHES["control"]
NAMES = ("contrast", "partial_norm", "partial_fourier")  # the control table's names of the views
N_STEPS = 21


def control_table(seeds, r: float = 0.9, rng_seed: int = 0) -> pd.DataFrame:
    """A control-like table: every seed shares a trend; test loss adds the seed's own fluctuation
    u; ``emb_h0_total`` carries r·u (beyond the norm's and the Fourier measure's own
    fluctuations), ``emb_h1_total`` none."""
    rng = np.random.default_rng(rng_seed)
    steps = np.arange(N_STEPS) * 50
    trend = np.exp(-steps / 400)
    parts = []
    for seed in seeds:
        u, e, f, g, h = rng.normal(size=(5, N_STEPS))
        parts.append(
            pd.DataFrame(
                {
                    "model": "control",
                    "seed": seed,
                    "step": steps,
                    "test_loss": trend + 0.1 * u,
                    "weight_l2": 10 - 3 * trend + 0.1 * f,
                    "fourier_top5": 1 - trend + 0.1 * g,
                    "emb_h0_total": trend + 0.1 * (r * u + np.sqrt(1 - r * r) * e),
                    "emb_h1_total": 2 * trend + 0.1 * h,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_discovery_p_are_the_controls_own_contrasts_and_hits_need_every_view():
    df = control_table(range(5))
    screen = discovery_screen(df, CONTROL).set_index("feature")
    for feature in ("emb_h0_total", "emb_h1_total"):
        own = grokking._contrasts(df, feature)  # the control table's contrasts, exact p
        for view, name in zip(("clock", "norm", "fourier"), NAMES, strict=True):
            assert screen.loc[feature, f"p_{view}"] == pytest.approx(own[f"{name}_p"], abs=1e-12)
            assert screen.loc[feature, f"rho_{view}"] == pytest.approx(own[f"{name}_rho"])
    assert screen.loc["emb_h0_total", "hit"] and screen.loc["emb_h0_total", "sign"] == 1
    assert not screen.loc["emb_h1_total", "hit"]
    # the norm is not tested partial on itself: its views are the clock and the Fourier measure
    assert np.isnan(screen.loc["weight_l2", "p_norm"]) and "p_fourier" in screen
    p = screen.loc[["emb_h0_total"], ["p_clock", "p_norm", "p_fourier"]].to_numpy()
    assert (p < 0.05).all() and p.min() >= 2 / 120  # 5 seeds: smallest two-sided p 2/5!


def spine_table(models=("a", "b"), seeds=range(4), rng_seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(rng_seed)
    steps = np.arange(12) * 10
    parts = []
    for m, seed in itertools.product(models, seeds):
        u, v, e, z = rng.normal(size=(4, steps.size))
        trend = np.exp(-steps / 40)
        parts.append(
            pd.DataFrame(
                {"model": m, "seed": seed, "step": steps, "n_params": 10}
                | {"train_loss": trend + 0.1 * u, "val_loss": trend + 0.1 * v}
                | {"l2_norm_mean": 1 - trend + 0.1 * z, "h0_total": trend + 0.1 * (u + e)}
                | {"np_mean": trend + 0.1 * e}
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_the_spines_discovery_p_are_the_associations_pooled_contrasts():
    df = spine_table()
    screen = discovery_screen(df, BRANCHES["spine"]).set_index(["feature", "target"])
    features = [("h0_total", "topological"), ("np_mean", "topological")]
    table = contrast_table(df, features, ["train_loss", "val_loss"])
    pooled = table[table["model"] == POOLED].set_index(["feature", "target", "view"])
    for (feature, target), row in screen.loc[["h0_total", "np_mean"]].iterrows():
        for name, view in (("clock", "seed_contrast"), ("scale", "seed_contrast_l2")):
            assert row[f"p_{name}"] == pytest.approx(pooled.loc[(feature, target, view), "p"])
    assert screen.loc[("h0_total", "train_loss"), "hit"]  # planted: u is train loss's own
    assert set(screen.index.get_level_values("feature")) >= {"step", "l2_norm_mean"}


def brute_one_sided(df, feature, target, cond, sign) -> float:
    """p of sign·ρ over all k! orders of the feature's seed rows: Spearman of the seed deviations
    (plain) or Pearson of their residuals on the conditioning deviations, re-regressed."""

    def dev(column):
        wide = df.pivot(index="seed", columns="step", values=column).to_numpy(float)
        return wide - wide.mean(axis=0)

    dx, dy = dev(feature), dev(target)
    dz = dev(cond).ravel() if cond else None

    def resid(v):
        return v - np.polyval(np.polyfit(dz, v, 1), dz)

    null = []
    for order in itertools.permutations(range(dx.shape[0])):
        x = dx[list(order)].ravel()
        r = (
            stats.spearmanr(x, dy.ravel())[0]
            if cond is None
            else stats.pearsonr(resid(x), resid(dy.ravel()))[0]
        )
        null.append(sign * r)
    null = np.array(null)
    return float(np.mean(null >= null[0] - 1e-12))


def test_confirmation_is_one_sided_in_the_frozen_sign_over_every_seed_order():
    discovery, fresh = control_table(range(5)), control_table(range(5, 10), rng_seed=1)
    named = [{"branch": "control", "feature": "emb_h1_total", "target": "test_loss", "sign": -1}]
    hyps = hypotheses_table(discovery, CONTROL, named, sha256="abc")
    assert list(zip(hyps["feature"], hyps["source"], hyps["sign"], strict=True)) == [
        ("emb_h0_total", "hit", 1),
        ("emb_h1_total", "named", -1),
    ]
    assert (hyps["seeds"] == "0;1;2;3;4").all() and (hyps["discovery_table_sha256"] == "abc").all()
    conf = confirmation_table(hyps, fresh, CONTROL, sesoi=0.1).set_index("feature")
    for feature, sign in (("emb_h0_total", 1), ("emb_h1_total", -1)):
        for view, cond in (("clock", None), ("norm", "weight_l2"), ("fourier", "fourier_top5")):
            want = brute_one_sided(fresh, feature, "test_loss", cond, sign)
            assert conf.loc[feature, f"p_{view}"] == pytest.approx(want, abs=1e-12)
        views = conf.loc[feature, ["p_clock", "p_norm", "p_fourier"]].astype(float)
        assert conf.loc[feature, "p"] == views.max()  # intersection–union
        assert conf.loc[feature, "view"] == views.idxmax().removeprefix("p_")
    assert conf["p_bh"].to_numpy() == pytest.approx(stats.false_discovery_control(conf["p"]))
    assert conf.loc["emb_h0_total", "verdict"] == "reproduced"  # planted again: confirmed
    assert conf.loc["emb_h0_total", "effect"] > 0.5  # r = 0.9, in the frozen sign
    view = conf.loc["emb_h0_total", "view"]  # the discovery effect beside is that view's
    found = hyps.set_index("feature").loc["emb_h0_total", f"effect_{view}"]
    assert conf.loc["emb_h0_total", "discovery_effect"] == found
    assert (conf["seeds"] == "5;6;7;8;9").all() and (conf["discovery_seeds"] == "0;1;2;3;4").all()


def test_an_effect_significant_in_the_other_sign_on_fresh_seeds_is_reversed():
    """The frozen discovery's sign flipped on the fresh seeds: every view's one-sided p in the
    other sign (brute force over every seed order) is below α with every ρ of that sign, BH over
    the family: "reversed" at every Δ, not "artefact" (its interval lies below Δ, below 0)."""
    discovery = control_table(range(5))
    fresh = control_table(range(5, 10), rng_seed=1)
    fresh["emb_h0_total"] = 2 * fresh["test_loss"].mean() - fresh["emb_h0_total"]  # sign flipped
    conf = confirmation_table(hypotheses_table(discovery, CONTROL), fresh, CONTROL, sesoi=0.1)
    row = conf.set_index("feature").loc["emb_h0_total"]
    reversed_p = [
        brute_one_sided(fresh, "emb_h0_total", "test_loss", cond, -1.0)
        for cond in (None, "weight_l2", "fourier_top5")
    ]
    assert row["p_reversed"] == pytest.approx(max(reversed_p), abs=1e-12)
    assert row["p_reversed"] == pytest.approx(1 / 120)  # 5 seeds: the smallest one-sided p
    assert row["p_bh_reversed"] == pytest.approx(row["p_reversed"])  # a family of one
    assert (row[["rho_clock", "rho_norm", "rho_fourier"]].astype(float) < -0.5).all()
    assert row["effect_clock_ci_high"] < 0 < 0.1 and row["p"] > 0.5 and not row["rejected"]
    assert row["verdict"] == row["verdict_half_sesoi"] == row["verdict_double_sesoi"]
    assert row["verdict"] == "reversed"


def test_the_report_says_a_reversed_hypothesis_and_its_p_in_the_other_sign(tmp_path):
    discovery = control_table(range(5))
    fresh = control_table(range(5, 10), rng_seed=1)
    fresh["emb_h0_total"] = 2 * fresh["test_loss"].mean() - fresh["emb_h0_total"]  # sign flipped
    conf = confirmation_table(hypotheses_table(discovery, CONTROL), fresh, CONTROL, sesoi=0.1)
    conf.to_csv(tmp_path / "c.csv", index=False)
    [(_, _, body)] = confirm_sections({"control_confirmation_csv": tmp_path / "c.csv"})
    assert "tested on seeds 5–9 at Δ = 0.1: 1 reversed." in body
    assert "*reversed*: significant on the fresh seeds in the sign opposite to the frozen" in body
    head = next(x for x in body.splitlines() if x.startswith("| feature"))
    line = next(x for x in body.splitlines() if x.startswith("| emb_h0_total"))
    cells = dict(zip(head.split("|"), line.split("|"), strict=True))
    assert float(cells[" p_bh, other sign "]) == pytest.approx(1 / 120, rel=1e-3)
    assert cells[" verdict "].strip() == "reversed"


def test_an_effect_shown_small_but_not_of_the_other_sign_is_an_artefact():
    """Nothing planted on the fresh seeds: the hit neither holds nor reverses (p ≥ α in both
    signs); at Δ = 1 its interval's upper end lies below Δ: "artefact"."""
    discovery = control_table(range(5))
    fresh = control_table(range(5, 10), r=0.0, rng_seed=1)
    conf = confirmation_table(hypotheses_table(discovery, CONTROL), fresh, CONTROL, sesoi=1.0)
    row = conf.set_index("feature").loc["emb_h0_total"]
    assert row["p_bh"] >= 0.05 and row["p_bh_reversed"] >= 0.05
    assert row["effect_clock_ci_high"] < 1.0 and row["verdict"] == "artefact"


def test_no_hit_leaves_the_header_and_an_empty_family():
    df = control_table(range(5), r=0.0)
    df["emb_h0_total"] = df["emb_h1_total"]  # nothing planted anywhere
    hyps = hypotheses_table(df, CONTROL)
    assert hyps.empty and "discovery_table_sha256" in hyps and "p_fourier" in hyps
    conf = confirmation_table(hyps, control_table(range(5, 10)), CONTROL, sesoi=0.1)
    assert conf.empty and {"p", "p_bh", "verdict", "discovery_effect"} <= set(conf)
    assert not conf.columns.duplicated().any()


def test_a_seed_on_both_sides_stops_the_confirmation():
    discovery = control_table(range(5))
    hyps = hypotheses_table(discovery, CONTROL)
    with pytest.raises(ValueError, match=r"seeds \[4\] are both discovery and confirmation"):
        confirmation_table(hyps, control_table(range(4, 9)), CONTROL, sesoi=0.1)


def test_a_named_hypothesis_on_a_missing_column_names_the_key_and_the_table():
    named = [{"branch": "control", "feature": "emb_h9", "target": "test_loss", "sign": 1}]
    with pytest.raises(
        ValueError, match=r"confirm.hypotheses: control emb_h9.*not a column of t.parquet"
    ):
        hypotheses_table(control_table(range(3)), CONTROL, named, source="t.parquet")


@pytest.mark.parametrize(
    ("confirm", "message"),
    [
        ({"control_seeds": [7, 8]}, "confirm.control_seeds: seeds [7] are also discovery seeds"),
        ({"seeds": [44]}, "confirm.seeds=[44]: at least 2 seeds"),
        ({"seeds": [42, 50]}, "confirm.seeds: seeds [42] are also discovery seeds (seeds)"),
        (
            {"hypotheses": [{"branch": "spine", "feature": "h0_total", "target": "y", "sign": 1}]},
            "confirm.hypotheses[0] (h0_total): branch spine has no confirmation seeds",
        ),
    ],
)
def test_bad_confirmation_seeds_name_the_key(confirm, message):
    config = fill_defaults({"seeds": [42, 43, 44], "confirm": confirm})
    with pytest.raises(ConfigError) as err:
        check_config(config)
    assert message in str(err.value)


def test_the_report_section_sets_the_effects_side_by_side_or_says_nothing_to_confirm(tmp_path):
    hyps = hypotheses_table(control_table(range(5)), CONTROL, sha256="f" * 64)
    conf = confirmation_table(hyps, control_table(range(5, 10), rng_seed=1), CONTROL, 0.1)
    conf.to_csv(tmp_path / "c.csv", index=False)
    [(heading, _, body)] = confirm_sections({"control_confirmation_csv": tmp_path / "c.csv"})
    row = conf.iloc[0]
    found = f"{row['discovery_effect']:.2g} [{row['discovery_effect_ci_low']:.2g}, "
    again = f"{row['effect']:.2g} [{row['effect_ci_low']:.2g}, {row['effect_ci_high']:.2g}]"
    assert heading == HEADING and "### Positive control (grokking)" in body
    assert "1 hypothesis (1 hit, 0 named) frozen on seeds 0–4" in body
    assert "sha256 `ffffffffffffffff…`), tested on seeds 5–9 at Δ = 0.1: 1 reproduced." in body
    line = next(x for x in body.splitlines() if x.startswith("| emb_h0_total"))
    assert found in line and again in line and line.index(found) < line.index(again)
    conf.iloc[:0].to_csv(tmp_path / "e.csv", index=False)
    [(_, _, body)] = confirm_sections({"control_confirmation_csv": tmp_path / "e.csv"})
    assert NOTHING in body and confirm_sections({}) == []
