"""The primary family over design views (``primary.VIEWS``: level, co-movement): the joint
min-p over views (Westfall–Young), the verdict's "artefact" only when every primary view shows
the effect small, and views fixed by the config, never by the data."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from topotrain.analysis.inference.primary import (
    VIEWS,
    joint_p,
    primary_family,
    view_verdict,
)
from topotrain.analysis.replication.claims import read_paper_values

PAPER = ROOT / "workflow" / "data" / "paper_values.csv"
MODELS = {"tiny-3k": 3e3, "small-7k": 7e3, "med-21k": 2.1e4, "large-46k": 4.6e4, "xl-97k": 9.7e4}


def _brute_joint_p(views, signs):
    """Enumerate every arrangement (one permutation index per model) by itertools.product."""
    sizes = [len(n) for n in next(iter(views[0].values()))]
    arrangements = list(itertools.product(*(range(s) for s in sizes)))

    def stat(cond, a):
        return np.mean([s * cond[m][i] for m, (s, i) in enumerate(zip(signs, a, strict=True))])

    def p_of(cond, a):
        all_s = [stat(cond, b) for b in arrangements]
        return np.mean([x >= stat(cond, a) - 1e-12 for x in all_s])

    m0 = min(max(p_of(c, arrangements[0]) for c in v.values()) for v in views)
    return max(  # one condition per view may be the null one: the worst choice
        np.mean([min(p_of(c, a) for c in chosen) <= m0 + 1e-12 for a in arrangements])
        for chosen in itertools.product(*(v.values() for v in views))
    )


def test_joint_p_is_the_min_p_over_views_counted_over_every_arrangement():
    rng = np.random.default_rng(0)
    signs = [1.0, -1.0]
    views = [
        {c: [rng.normal(size=6) for _ in signs] for c in ("clock", "scale")},
        {c: [rng.normal(size=6) for _ in signs] for c in ("co_clock", "co_scale")},
    ]
    for v in views:  # the observed statistic first: make it large in one view
        for c in v.values():
            c[0][0], c[1][0] = 2.0, -2.0
    assert joint_p(views, signs) == pytest.approx(_brute_joint_p(views, signs))
    assert joint_p(views, signs) == pytest.approx(1 / 36)  # the observed tops every condition
    views[1]["co_clock"][0][0] = -3.0  # the second view no longer holds
    assert joint_p(views, signs) == pytest.approx(_brute_joint_p(views, signs))
    views[0]["scale"][0][0] = -3.0  # nor the first: the joint p is the brute force's, not 1/36
    assert joint_p(views, signs) == pytest.approx(_brute_joint_p(views, signs)) != 1 / 36


def test_joint_p_holds_when_only_one_condition_of_a_view_is_null():
    """The clock condition of both views carries a strong association, the scale conditions none
    (a feature that follows the norm): each view's p is its scale's, and the joint p is at
    least the smaller of those — never the recalibrated max, which treats both conditions as
    null and falls far below it (the 0.13 of ``norm_only``)."""
    rng = np.random.default_rng(3)
    signs = [1.0, 1.0]
    views = []
    for names in (("clock", "scale"), ("co_clock", "co_scale")):
        clock = [np.r_[5.0, rng.normal(size=5)] for _ in signs]  # observed tops its null
        scale = [rng.normal(size=6) for _ in signs]
        views.append(dict(zip(names, (clock, scale), strict=True)))
    got = joint_p(views, signs)
    assert got == pytest.approx(_brute_joint_p(views, signs))
    scale_ps = []
    for v in views:
        null = np.add.outer(*(v["scale" if "scale" in v else "co_scale"])).ravel() / 2
        scale_ps.append(np.mean(null >= null[0] - 1e-12))
    assert got >= min(scale_ps) - 1e-12 and min(scale_ps) > 1 / 36  # the scales hold no signal


def test_joint_p_leaves_out_a_model_undefined_in_any_view_and_is_nan_without_views():
    nulls = [np.arange(6.0)[::-1], np.arange(6.0)[::-1]]
    undefined = [np.arange(6.0)[::-1], np.full(1, np.nan)]
    views = [{"clock": nulls}, {"co_clock": undefined}]
    assert joint_p(views, [1.0, 1.0]) == pytest.approx(1 / 6)  # model 2 left out of both
    assert np.isnan(joint_p([], [1.0])) and np.isnan(joint_p([{}], [1.0]))


def _row(**kw) -> pd.Series:
    row = {"p": 0.5, "rejected": False, "signs_held": "5/5", "ruled_out": "5/5"}
    row["best_view"] = "level"
    for c in (c for _, conds in VIEWS.values() for c in conds):
        row[f"effect_{c}_fw_high"] = 1.0
    return pd.Series(row | kw)


@pytest.mark.parametrize(
    ("small", "views", "verdict"),
    [
        (["clock"], ("level",), "artefact"),
        (["clock"], ("level", "comove"), "inconclusive"),  # co-movement can't rule it out
        (["clock", "co_scale"], ("level", "comove"), "artefact"),
        (["co_clock"], ("comove",), "artefact"),
        ([], ("level", "comove"), "inconclusive"),
    ],
)
def test_artefact_needs_every_primary_view_to_show_the_effect_small(small, views, verdict):
    row = _row(**{f"effect_{c}_fw_high": 0.05 for c in small})
    assert view_verdict(row, views, {"level": 0.1, "comove": 0.1}) == verdict


def test_a_reproduced_claim_reads_the_best_views_signs_and_smallness():
    row = _row(p=0.001, rejected=True, best_view="comove", effect_co_clock_fw_high=0.05)
    assert view_verdict(row, ("level", "comove"), {"level": 0.1, "comove": 0.1}) == (
        "reproduced, below Δ"
    )
    assert view_verdict(row, ("level", "comove"), {"level": 0.1, "comove": 0.01}) == "reproduced"
    held = row.copy()
    held["signs_held"] = "4/5"
    assert view_verdict(held, ("level", "comove"), {"level": 0.1, "comove": 0.1}) == "inconclusive"
    # one model's reversal by Δ not ruled out (its own test), or the column missing: not reproduced
    for ruled in ("4/5", None):
        one = row.copy()
        one["ruled_out"] = ruled
        assert view_verdict(one, ("level", "comove"), {"level": 0.1, "comove": 0.1}) == (
            "inconclusive"
        )
    assert view_verdict(row, ("level", "comove"), {"level": 0.1, "comove": 0.1}, "ruled_x") == (
        "inconclusive"
    )


def _study(seeds: int = 3, n: int = 12, rng_seed: int = 5) -> pd.DataFrame:
    """5 models × seeds × n checkpoints: TP0 moves with the validation loss step to step, each
    seed with a large offset of the other sign in TP0 (so the level view sees the offsets)."""
    rng = np.random.default_rng(rng_seed)
    step = np.arange(n) * 100
    rows = []
    for (model, size), seed in itertools.product(MODELS.items(), range(seeds)):
        u = rng.normal(0, 0.05, n).cumsum()
        rows.append(
            pd.DataFrame(
                {
                    "model": model,
                    "seed": seed,
                    "n_params": size,
                    "step": step,
                    "train_loss": 2 + 3 * np.exp(-step / 800) + u + rng.normal(0, 0.01, n),
                    "val_loss": 2.1 + 3 * np.exp(-step / 800) + u,
                    "h0_total": 50 - 4 * u + rng.normal(0, 0.01, n) + 3 * (seed - 1),
                    "np_mean": rng.normal(0.3, 0.01, n),
                    "h1_total": rng.normal(1, 0.1, n),
                    "l2_norm_mean": 1 + 0.1 * np.log1p(step / 500) + rng.normal(0, 0.01, n),
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def test_the_views_come_from_the_config_and_no_loss_data_changes_them():
    paper = read_paper_values(PAPER)
    df = _study()
    shuffled = df.assign(val_loss=np.random.default_rng(1).permutation(df["val_loss"].to_numpy()))
    for views in (("level",), ("comove",), ("level", "comove")):
        a = primary_family(df, paper, primary_views=views)
        b = primary_family(shuffled, paper, primary_views=views)
        assert set(a["views"]) == set(b["views"]) == {"+".join(views)}
        assert a["sesoi"].eq(0.1).all()
    with pytest.raises(ValueError, match="analysis.primary_views"):
        primary_family(df, paper, primary_views=("levels",))


def test_co_movement_finds_what_the_level_views_offsets_hide():
    """TP0 (claimed −) moves against the loss at every step; the level view's offsets hide it.
    Both views' numbers are in the table; the joint p is at most twice the better view's."""
    fam = primary_family(_study(), read_paper_values(PAPER)).set_index("feature")
    tp0 = fam.loc["h0_total"]
    assert tp0["p_comove"] == pytest.approx(1 / 6**5)  # the identity alone, in every model
    assert tp0["effect_co_clock"] > 0.5 and tp0["best_view"] == "comove"
    assert tp0["p"] <= 2 * min(tp0["p_level"], tp0["p_comove"]) + 1e-12
    assert tp0["p"] >= min(tp0["p_level"], tp0["p_comove"])
    assert tp0["views"] == "level+comove"
    # the diagnostic: the level deviations keep their offsets, the co-movement far less
    assert tp0["lag1_level"] > 0.8 and abs(tp0["lag1_comove"]) < 0.4


def test_the_bottom_line_names_each_views_p_and_the_co_movement_delta():
    from types import SimpleNamespace

    from topotrain.report.bottom_line import effect_phrase, views_text

    row = SimpleNamespace(
        p_clock=0.2, p_scale=0.3, p_co_clock=0.001, p_co_scale=0.002, p=0.004,
        views="level+comove", best_view="comove", effect=0.3, effect_ci_low=0.2,
        effect_ci_high=np.inf, sesoi=0.1, sesoi_co=0.05, verdict="reproduced",
        verdict_half_sesoi="reproduced", verdict_double_sesoi="reproduced",
    )  # fmt: skip
    text = views_text(row)
    assert "level (train loss) p_clock = 0.2, p_scale = 0.3" in text
    assert "co-movement (val loss) p_clock = 0.001, p_scale = 0.002" in text
    assert text.endswith("claim's joint min-p over level+comove = 0.004")
    assert "(co-movement view) 0.3 (≥ 0.2, one-sided 95 % bound) at Δ_co = 0.05" in (
        effect_phrase("TP0", row, 0.05)
    )
