"""The primary family's two questions (issue 56): *moves with* (the co-movement view) and *ranks*
(the level view), each with its own verdict from its own view's test and bounds
(``question_verdict``, on hand-made rows: every branch and the precedence), its own BH over the
three claims and its own Bonferroni count; the bottom line's question fixed by the config, never
by the data. ``joint_p`` (the joint min-p over views, the rule before issue 56) is kept for the
calibration that still simulates it."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT, paper_study

from topotrain.analysis.inference.primary import (
    QUESTIONS,
    VIEWS,
    claimed_signs,
    joint_p,
    primary_family,
    question_verdict,
)
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    PARTIAL_CO,
    SCALE,
    model_matrices,
    seed_permutations,
)
from topotrain.analysis.inference.seed_effect import effect_cell, effect_interval
from topotrain.analysis.inference.stats import ALPHA
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


def _row(q: str = "moves_with", **kw) -> pd.Series:
    """A hand-made primary row for question ``q`` (its view's columns; Δ = 0.1): nothing
    rejected, every sign held and every reversal ruled out, every bound far above Δ, the clock's
    effect present (p_bh 0.01, signs as claimed)."""
    view = QUESTIONS[q]
    clock, norm = VIEWS[view][1]
    row = {f"p_bh_{q}": 0.5, f"held_{view}": "4/4", "signs": "-1;+1;+1;+1"}
    row |= {f"ruled_{view}{sfx}": "4/4" for sfx in ("", "_half", "_double")}
    row |= {f"effect_{c}_fw_high": 1.0 for c in (clock, norm)}
    row |= {f"p_bh_{clock}": 0.01, f"effect_signs_{clock}": "-1;+1;+1;+1"}
    return pd.Series(row | kw)


def _small(q: str, which: str) -> dict:
    """The family-wise upper bound of ``q``'s clock (0) or norm (1) condition below Δ = 0.1."""
    return {f"effect_{_cond(q, 0 if which == 'clock' else 1)}_fw_high": 0.05}


def _cond(q: str, i: int) -> str:
    return list(VIEWS[QUESTIONS[q]][1])[i]


@pytest.mark.parametrize("q", list(QUESTIONS))
def test_each_verdict_branch_of_a_question(q):
    view = QUESTIONS[q]
    clock, norm = _cond(q, 0), _cond(q, 1)
    rejects = {f"p_bh_{q}": 0.01}
    assert question_verdict(_row(q, **rejects), q, 0.1) == "reproduced"
    assert question_verdict(_row(q), q, 0.1) == "undecided"  # no rejection, nothing below Δ
    assert question_verdict(_row(q, **{f"effect_{clock}_fw_high": 0.05}), q, 0.1) == (
        "explained by the clock"
    )
    assert question_verdict(_row(q, **{f"effect_{norm}_fw_high": 0.05}), q, 0.1) == (
        "explained by the norm"
    )
    # "explained by the norm" needs the effect present beyond the clock: BH-corrected clock p < α
    norm_small = {f"effect_{norm}_fw_high": 0.05}
    absent = _row(q, **norm_small, **{f"p_bh_{clock}": 0.05})
    assert question_verdict(absent, q, 0.1) == "undecided"
    # … and every claimed model's clock effect of its claimed sign
    for signs in ("-1;+1;+1;-1", "-1;+1;0;+1", np.nan):
        wrong = _row(q, **norm_small, **{f"effect_signs_{clock}": signs})
        assert question_verdict(wrong, q, 0.1) == "undecided"
    # at the bound itself is not below it; the other question's columns are never read
    assert question_verdict(_row(q, **{f"effect_{clock}_fw_high": 0.1}), q, 0.1) == "undecided"
    other = next(o for o in QUESTIONS if o != q)
    theirs = _row(q, **_small(other, "clock"), **_small(other, "norm"), **{f"p_bh_{other}": 0.01})
    assert question_verdict(theirs, q, 0.1) == "undecided" and QUESTIONS[other] != view


@pytest.mark.parametrize("q", list(QUESTIONS))
def test_the_verdicts_precedence_and_what_reproduced_needs(q):
    view = QUESTIONS[q]
    clock, norm = _cond(q, 0), _cond(q, 1)
    both = {f"effect_{clock}_fw_high": 0.05, f"effect_{norm}_fw_high": 0.05}
    rejects = {f"p_bh_{q}": 0.01}
    # reproduced first, even with the bounds below Δ; then the clock before the norm
    assert question_verdict(_row(q, **rejects, **both), q, 0.1) == "reproduced"
    assert question_verdict(_row(q, **both), q, 0.1) == "explained by the clock"
    # rejected, but a sign fails or a reversal is not ruled out: not reproduced, and falls through
    for column in (f"held_{view}", f"ruled_{view}"):
        for value in ("3/4", "0/0", None):
            row = _row(q, **rejects, **{column: value})
            assert question_verdict(row, q, 0.1) == "undecided"
            row[f"effect_{norm}_fw_high"] = 0.05
            assert question_verdict(row, q, 0.1) == "explained by the norm"
    # the reversal columns at Δ/2 and 2Δ are read with their margin
    half = _row(q, **rejects, **{f"ruled_{view}_half": "2/4"})
    assert question_verdict(half, q, 0.05, "_half") == "undecided"
    assert question_verdict(half, q, 0.1) == "reproduced"
    # p_bh at α does not reject
    assert question_verdict(_row(q, **{f"p_bh_{q}": ALPHA}), q, 0.1) == "undecided"


@pytest.mark.parametrize("q", list(QUESTIONS))
def test_an_undefined_p_is_undecided_whatever_the_bounds(q):
    both = {**_small(q, "clock"), **_small(q, "norm")}
    for p in (np.nan, None, "nan"):
        assert question_verdict(_row(q, **both, **{f"p_bh_{q}": p}), q, 0.1) == "undecided"
    assert question_verdict(_row(q).drop(f"p_bh_{q}"), q, 0.1) == "undecided"


def _study(seeds: int = 3, n: int = 12, rng_seed: int = 5) -> pd.DataFrame:
    """5 models × seeds × n checkpoints: TP0 moves with the validation loss step to step, each
    seed with a large offset of the other sign in TP0 (so the level view sees the offsets)."""
    rng = np.random.default_rng(rng_seed)

    def columns(model, seed, step):
        u = rng.normal(0, 0.05, n).cumsum()
        return dict(
            train_loss=2 + 3 * np.exp(-step / 800) + u + rng.normal(0, 0.01, n),
            val_loss=2.1 + 3 * np.exp(-step / 800) + u,
            h0_total=50 - 4 * u + rng.normal(0, 0.01, n) + 3 * (seed - 1),
            np_mean=rng.normal(0.3, 0.01, n),
            h1_total=rng.normal(1, 0.1, n),
            l2_norm_mean=1 + 0.1 * np.log1p(step / 500) + rng.normal(0, 0.01, n),
        )

    return paper_study(columns, seeds, n, MODELS)


def test_the_bottom_line_question_comes_from_the_config_and_no_loss_data_changes_it():
    paper = read_paper_values(PAPER)
    df = _study()
    shuffled = df.assign(val_loss=np.random.default_rng(1).permutation(df["val_loss"].to_numpy()))
    for q in QUESTIONS:
        a = primary_family(df, paper, question=q)
        b = primary_family(shuffled, paper, question=q)
        assert set(a["question"]) == set(b["question"]) == {q}
        for frame in (a, b):  # the bottom line's columns are the question's own
            assert frame["verdict"].tolist() == frame[f"verdict_{q}"].tolist()
            assert frame["verdict_double_sesoi"].tolist() == (
                frame[f"verdict_{q}_double_sesoi"].tolist()
            )
            assert frame["p_bh"].equals(frame[f"p_bh_{q}"])
            assert frame["p"].equals(frame[f"p_{QUESTIONS[q]}"])
        assert a["sesoi"].eq(0.1).all()
    assert (primary_family(df, paper)["question"] == "moves_with").all()  # the schema's default
    with pytest.raises(ValueError, match="analysis.bottom_line_question"):
        primary_family(df, paper, question="level")
    with pytest.raises(TypeError):  # the joint views are gone with their key
        primary_family(df, paper, primary_views=("level", "comove"))


def test_each_question_runs_its_own_bh_over_the_three_claims():
    """p_bh_<q> is Benjamini–Hochberg over the three claims' p_<view>, by hand; the other
    view's p's never enter it; rejected_<q> = p_bh_<q> < α."""
    fam = primary_family(_study(), read_paper_values(PAPER))
    for q, view in QUESTIONS.items():
        p = fam[f"p_{view}"].to_numpy(float)
        expected = _bh_by_hand(p)
        assert fam[f"p_bh_{q}"].to_numpy(float) == pytest.approx(expected, abs=1e-15)
        assert fam[f"rejected_{q}"].tolist() == [x < ALPHA for x in expected]
        clock = list(VIEWS[view][1])[0]
        clock_bh = _bh_by_hand(fam[f"p_{clock}"].to_numpy(float))
        assert fam[f"p_bh_{clock}"].to_numpy(float) == pytest.approx(clock_bh, abs=1e-15)
    assert _bh_by_hand([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.04, 0.04])  # the helper


def _bh_by_hand(p) -> list[float]:
    """Benjamini–Hochberg over three p's: p_(i)·3/i, then the smallest from i on, at most 1."""
    return [min(1.0, *(3 * y / sum(z <= y for z in p) for y in p if y >= x)) for x in p]


def test_each_questions_bounds_are_bonferroni_over_its_own_six():
    """effect_<cond>_fw_high is the upper end of the equal-tailed effect interval at level
    2α/6 (one-sided 1 − α/6: 3 claims × the question's 2 conditions), computed here directly
    from each claimed model's cells, for every condition of both questions."""
    paper, df = read_paper_values(PAPER), _study()
    fam = primary_family(df, paper).set_index("feature")
    kinds = {"clock": "seed_contrast", "scale": PARTIAL, "co_clock": "seed_comove"}
    kinds["co_scale"] = PARTIAL_CO
    for feature in ("h0_total", "np_mean"):
        signs = claimed_signs(paper, feature)
        for target, conds in VIEWS.values():
            for cond, (_, on) in conds.items():
                cells = []
                for model, s in signs.items():
                    rows = df[df["model"] == model]
                    mats = model_matrices(rows, [feature, target, SCALE])
                    perms = seed_permutations(rows["seed"].nunique())
                    cells.append(effect_cell(mats, feature, target, kinds[cond], perms, on, s))
                high = effect_interval(cells, 2 * ALPHA / 6)["effect_ci_high"]
                assert fam.loc[feature, f"effect_{cond}_fw_high"] == pytest.approx(high, abs=1e-12)
                assert high > effect_interval(cells, ALPHA)["effect_ci_high"]  # wider than 95 %


def test_co_movement_finds_what_the_level_views_offsets_hide():
    """TP0 (claimed −) moves against the loss at every step; the level view's offsets hide it.
    Each question answers from its own view: moves with rejects, ranks does not."""
    fam = primary_family(_study(), read_paper_values(PAPER)).set_index("feature")
    tp0 = fam.loc["h0_total"]
    assert tp0["p_comove"] == pytest.approx(1 / 6**5)  # the identity alone, in every model
    assert tp0["effect_co_clock"] > 0.5 and tp0["rejected_moves_with"]
    assert (
        tp0["effect_moves_with"]
        == tp0[f"effect_{'co_scale' if tp0['p_co_scale'] > tp0['p_co_clock'] else 'co_clock'}"]
    )  # noqa: E501
    assert not tp0["rejected_ranks"] and tp0["p"] == tp0["p_comove"]
    # 3 seeds: no model's own test can rule out a reversal (p ≥ 1/6), so nothing is reproduced
    assert tp0["held_comove"] == "5/5" and tp0["ruled_comove"] == "0/5"
    assert tp0["verdict_moves_with"] != "reproduced"
    assert tp0["verdict"] == tp0["verdict_moves_with"]
    # the diagnostic: the level deviations keep their offsets, the co-movement far less
    assert tp0["lag1_level"] > 0.8 and abs(tp0["lag1_comove"]) < 0.4


def test_the_bottom_line_names_the_question_and_both_verdicts():
    from topotrain.report.bottom_line import primary_sentence

    fam = primary_family(_study(), read_paper_values(PAPER))
    text = primary_sentence(fam, ALPHA)
    assert "The bottom line's question, fixed in the pre-registration: *moves with*." in text
    tp0 = fam.set_index("feature").loc["h0_total"]
    moves = f"moves with: **{tp0['verdict_moves_with']}**"
    ranks = f"ranks: {tp0['verdict_ranks']}"
    assert moves in text and ranks in text
    tp0_part = text.split("TP0 — ")[1].split("; ranks: ")[0]
    assert tp0_part.startswith("moves with: **")  # the bottom line's question first
    assert "(co-movement view, val loss: p_clock = 1.286e-04, p_scale = " in text
    assert "at Δ_co = 0.1" in text and "at Δ = 0.1" in text
    assert "undecided" not in text or "decided nothing" in text  # never said as "no effect"
    assert "no effect" not in text
