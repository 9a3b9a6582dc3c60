"""Your own seeds under the between-seed test (inference.groups): the group's frame, the recorded
training checked across seeds, the contrasts against a direct computation, the verdict words and
what the report says of the seeds' power."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.inference.groups import (
    GroupError,
    check_recorded,
    group_contrasts,
    group_frame,
    power_note,
    size_label,
)
from topotrain.config.checks import group_problems
from topotrain.report.groups import group_section


def run_table(
    seed: int, n_params: int = 3200, steps=range(0, 100, 10), tracks=True
) -> pd.DataFrame:
    """One run's feature table: a falling loss with the seed's own wiggles; h0_total tracks it
    (tracks) or is the step alone plus noise; np_mean follows the step; the L2 norm grows."""
    rng = np.random.default_rng(100 + seed)
    steps = np.asarray(list(steps))
    loss = 3 * np.exp(-steps / 40) + np.cumsum(rng.normal(0, 0.05, steps.size))
    return pd.DataFrame(
        {
            "model": f"run{seed}",
            "seed": 0,
            "n_params": n_params,
            "step": steps,
            "train_loss": loss,
            "val_loss": loss + 0.1 + rng.normal(0, 0.01, steps.size),
            "h0_total": (loss if tracks else -steps / 50) + rng.normal(0, 0.02, steps.size),
            "np_mean": steps / 100 + rng.normal(0, 0.3, steps.size),
            "l2_norm_mean": 10 + steps / 50 + rng.normal(0, 0.3, steps.size),
        }
    )


def test_the_frame_keeps_the_shared_steps_and_names_a_seed_with_extra_ones():
    tables = {f"r{s}": run_table(s) for s in range(4)}
    tables["r3"] = run_table(3, steps=range(0, 130, 10))  # three more saves than its siblings
    df, members, notes = group_frame("recipe", tables, {f"r{s}": s for s in range(4)})
    assert set(df["model"]) == {"recipe 3.2k"} and sorted(df["seed"].unique()) == [0, 1, 2, 3]
    assert sorted(df["step"].unique()) == list(range(0, 100, 10))
    assert members.set_index("run").loc["r3", "only_this_seed"] == "100 110 120"
    assert notes == [
        "r3 (seed 3) has 3 steps the other seeds of recipe 3.2k lack (100, 110, 120): "
        "left out of the contrast"
    ]


def test_a_seed_twice_in_one_size_and_a_group_without_two_seeds_stop_naming_the_runs():
    tables = {"a": run_table(1), "b": run_table(2)}
    with pytest.raises(GroupError, match=r"seed 1 is given to more than one run .*\(a, b\)"):
        group_frame("g", tables, {"a": 1, "b": 1})
    sizes = {"a": run_table(1, n_params=3200), "b": run_table(2, n_params=7000)}
    with pytest.raises(GroupError, match="no size has two seeds"):
        group_frame("g", sizes, {"a": 1, "b": 2})
    # two sizes, one with a single seed: that size is left out, and said
    tables = {"a": run_table(1), "b": run_table(2), "c": run_table(3, n_params=7000)}
    df, _, notes = group_frame("g", tables, {"a": 1, "b": 2, "c": 3})
    assert set(df["model"]) == {"g 3.2k"} and "size g 7.0k has one seed (c)" in notes[0]


def test_recorded_training_must_agree_within_a_size_and_a_mismatch_is_named():
    sizes = {"a": "g 3.2k", "b": "g 3.2k", "c": "g 7.0k"}
    same = {"model_config": {"n_embd": 8}, "train_batch_size": 8}
    check_recorded("g", {"a": same, "b": dict(same), "c": {"train_batch_size": 16}}, sizes)
    check_recorded("g", {"a": same, "b": {}}, sizes)  # unrecorded: not compared
    with pytest.raises(GroupError, match=r"differ in train_batch_size .*a: 8; b: 16"):
        check_recorded("g", {"a": same, "b": {**same, "train_batch_size": 16}}, sizes)
    with pytest.raises(GroupError, match="differ in numerics"):
        check_recorded("g", {"a": {"numerics": {"dtype": "fp32"}}, "b": {"numerics": {}}}, sizes)


def brute_one_sided(
    df: pd.DataFrame, feature: str, target: str, sign: float
) -> tuple[float, float]:
    """One model: Spearman ρ of the seeds' deviations and its one-sided p in ``sign`` over all
    k! relabellings of the feature's seeds, with scipy."""
    x = df.pivot(index="seed", columns="step", values=feature).to_numpy()
    y = df.pivot(index="seed", columns="step", values=target).to_numpy()
    dx, dy = x - x.mean(0), y - y.mean(0)
    k = x.shape[0]
    null = np.array(
        [
            stats.spearmanr(dx[list(p)].ravel(), dy.ravel()).statistic
            for p in itertools.permutations(range(k))
        ]
    )
    rho = null[0]
    return rho, float(np.mean(sign * null >= sign * rho - 1e-12))


def test_contrasts_match_a_direct_computation_and_a_planted_feature_gets_its_verdict():
    tables = {f"r{s}": run_table(s) for s in range(5)}
    df, _, _ = group_frame("g", tables, {f"r{s}": s for s in range(5)})
    table = group_contrasts(df, [{"feature": "h0_total", "sign": 1}, "np_mean"], sesoi=0.1)
    rows = table.set_index(["feature", "target"])
    assert list(table["feature"].drop_duplicates()) == ["h0_total", "np_mean"]
    assert set(table["role"]) == {"primary"} and set(table["target"]) == {"train_loss", "val_loss"}
    rho, p = brute_one_sided(df, "h0_total", "train_loss", 1.0)
    assert rows.loc[("h0_total", "train_loss"), "rho_clock"] == pytest.approx(rho, abs=1e-12)
    assert rows.loc[("h0_total", "train_loss"), "p_clock"] == pytest.approx(p, abs=1e-12)
    assert p == pytest.approx(1 / 120)
    planted = rows.loc[("h0_total", "train_loss")]
    assert planted["verdict"] == "tracks the loss beyond clock and scale"
    assert planted["effect_clock_ci_low"] > 0 and planted["sign"] == "+1"
    clock = rows.loc[("np_mean", "train_loss")]
    assert (
        clock["sign"] == "two-sided"
        and clock["verdict"] != "tracks the loss beyond clock and scale"
    )
    m = len(
        table
    )  # Benjamini–Hochberg over the family, written out: min over j ≥ rank of m·p_(j)/j
    ordered = np.sort(table["p"].to_numpy())
    for p_i, bh in zip(table["p"], table["p_bh"], strict=True):
        rank = int(np.searchsorted(ordered, p_i, side="right"))
        want = min(min(1.0, m * ordered[j - 1] / j) for j in range(rank, m + 1))
        assert bh == pytest.approx(want)


def test_unnamed_features_are_exploratory_and_a_misspelt_primary_stops():
    tables = {f"r{s}": run_table(s, tracks=False) for s in range(4)}
    df, _, _ = group_frame("g", tables, {f"r{s}": s for s in range(4)})
    table = group_contrasts(df)
    assert set(table["role"]) == {"exploratory"} and set(table["verdict"]) == {"exploratory"}
    assert table["p_bh"].isna().all() and {"h0_total", "np_mean"} <= set(table["feature"])
    assert table["effect_clock_ci_low"].isna().all()  # 4 seeds: 24 orders, no 95 % interval
    with pytest.raises(GroupError, match="h0_totl not in the group's feature table"):
        group_contrasts(df, ["h0_totl"])


@pytest.mark.parametrize(
    ("k", "says"),
    [
        (3, "with 3 seeds no p below 0.05 is possible (smallest one-sided 1/6)"),
        (4, "p < 0.05 is possible (smallest one-sided p 1/24, two-sided 2/24) but power is low"),
        (5, "smallest one-sided p 1/120, two-sided 2/120; 5 or more seeds"),
    ],
)
def test_the_power_note_says_what_p_the_seeds_can_reach(k, says):
    df = pd.DataFrame({"model": "g", "seed": range(k), "step": 0})
    assert says in power_note(df) and power_note(df).startswith(f"g: {k} seeds")


def test_config_checks_name_a_run_without_seed_a_lone_run_and_an_unknown_group():
    runs = {
        "a": {"group": "g", "seed": 1},
        "b": {"group": "g", "seed": None},
        "c": {"group": "h", "seed": 2},
        "d": {"seed": 3},
    }
    problems = group_problems(runs, {"g": {"primary": []}, "nope": {}})
    assert "runs.b: in group g but no seed: give runs.b.seed (an integer)" in problems
    assert any(p.startswith("group h has one run (c)") for p in problems)
    assert "runs.d.seed: only used with group: (seeds of one recipe)" in problems
    assert "groups.nope: no run is in group nope (groups: g, h)" in problems
    assert size_label(14_067_712) == "14.1M" and size_label(3_200) == "3.2k"


def test_sizes_of_one_recipe_pool_as_the_gpt_studys_models():
    """Two sizes × 3 seeds: one model per size, the pooled null over 3!·3! = 36 arrangements; its
    S is the mean of the two sizes' ρ (each checked on its own)."""
    tables = {f"a{s}": run_table(s) for s in range(3)}
    tables |= {f"b{s}": run_table(10 + s, n_params=7_000) for s in range(3)}
    seeds = {f"a{s}": s for s in range(3)} | {f"b{s}": s for s in range(3)}
    df, members, _ = group_frame("r", tables, seeds)
    assert sorted(members["model"].unique()) == ["r 3.2k", "r 7.0k"]
    pooled = group_contrasts(df).set_index(["feature", "target"]).loc[("h0_total", "train_loss")]
    assert pooled["models"] == "r 3.2k;r 7.0k" and pooled["arrangements"] == 36
    per_size = [
        brute_one_sided(df[df["model"] == m], "h0_total", "train_loss", 1.0)[0]
        for m in ("r 3.2k", "r 7.0k")
    ]
    assert pooled["rho_clock"] == pytest.approx(np.mean(per_size), abs=1e-12)
    assert "r 3.2k: 3 seeds, r 7.0k: 3 seeds" in power_note(df)


def opposite_table(seed: int, steps=range(0, 100, 10)) -> pd.DataFrame:
    """One run where h0_total follows the L2 norm up and the loss down (2·norm − loss): between
    seeds it rises with the loss beyond the clock (the norm's own wiggles carry the loss's) and
    falls with it beyond the norm; np_mean follows the loss in both views."""
    rng = np.random.default_rng(200 + seed)
    steps = np.asarray(list(steps))
    trend = np.exp(-steps / 40)
    u, e, n, m = rng.normal(size=(4, steps.size))
    loss = 3 * trend + 0.1 * u
    norm = 10 - 3 * trend + 0.1 * (u + 0.3 * e)
    return pd.DataFrame(
        {"model": f"run{seed}", "seed": 0, "n_params": 3200, "step": steps}
        | {"train_loss": loss, "l2_norm_mean": norm, "np_mean": loss + 0.02 * m}
        | {"h0_total": 2 * (norm - 10) - loss + 0.005 * n}
    )


def test_a_two_sided_claim_whose_views_disagree_in_sign_is_not_rejected():
    """The issue's case: clock ρ > 0 and scale ρ < 0, both two-sided p small (here 2/5! each):
    no one sign tracks the loss in both views, so the claim's p is 1 and it is not rejected; a
    feature of one sign in both views keeps p = the larger view's p and its verdict."""
    tables = {f"r{s}": opposite_table(s) for s in range(5)}
    df, members, _ = group_frame("g", tables, {f"r{s}": s for s in range(5)})
    table = group_contrasts(df, ["h0_total", "np_mean"], sesoi=0.1)
    row = table.set_index("feature").loc["h0_total"]
    one_sided = [brute_one_sided(df, "h0_total", "train_loss", s) for s in (1.0, -1.0)]
    assert row["rho_clock"] == pytest.approx(one_sided[0][0], abs=1e-12)
    assert row["p_clock"] == pytest.approx(min(1.0, 2 * min(one_sided[0][1], one_sided[1][1])))
    assert row["rho_clock"] > 0.5 and row["rho_scale"] < -0.9
    assert row["p_clock"] == pytest.approx(2 / 120) and row["p_scale"] == pytest.approx(2 / 120)
    assert row["p"] == 1.0 and row["p_bh"] == 1.0 and "views disagree in sign" in row["note"]
    assert row["verdict"] == "inconclusive"  # intervals ±0.5 to ±1.1: not shown small either
    same = table.set_index("feature").loc["np_mean"]
    assert same["rho_clock"] > 0 and same["rho_scale"] > 0
    assert same["p"] == max(same["p_clock"], same["p_scale"]) == pytest.approx(2 / 120)
    assert same["p_bh"] == pytest.approx(2 * same["p"])  # BH over the two claims, p's 1/60, 1
    assert same["verdict"] == "tracks the loss beyond clock and scale"
    explore = group_contrasts(df, sesoi=0.1)  # unnamed: exploratory, the report counts np_mean
    assert explore.set_index("feature").loc["h0_total", "p"] == 1.0
    text = group_section("g", members, explore, [], "", [], [])
    assert (
        "1 of 2 exploratory rows have p < 0.05 beyond both the clock and the scale in one sign"
        in text
    )
