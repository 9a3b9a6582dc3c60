"""The power of both answers on the verdict rule (calibration.question_power, issue 56 item 5):
its simulated families go through the report's code (the verdicts equal primary_family's on a
feature table of the same numbers), its planted β is the question's Δ at the design's H, and the
noise it takes is each question's own loss's, unrounded."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.calibration import question_power as qp
from topotrain.analysis.calibration.power_design import ar_white, fit_noise
from topotrain.analysis.inference import seed_contrast as sc
from topotrain.analysis.inference.primary import (
    CLAIMS,
    CO_TARGET,
    QUESTIONS,
    TARGET,
    VIEWS,
    claimed_signs,
    clock_condition,
    norm_condition,
    primary_family,
)
from topotrain.analysis.inference.verdicts import read_paper_values

PAPER = ROOT / "workflow" / "data" / "paper_values.csv"


def test_the_simulated_claims_are_the_papers():
    """CLAIM_SIGNS: each claim's models and signs as primary.claimed_signs reads the paper."""
    paper = read_paper_values(PAPER)
    assert list(qp.CLAIM_SIGNS) == list(CLAIMS)
    for feature, signs in qp.CLAIM_SIGNS.items():
        assert claimed_signs(paper, feature).to_dict() == signs
    assert set().union(*qp.CLAIM_SIGNS.values()) == set(qp.MODELS)


def _table(sim: dict[str, np.ndarray], i: int) -> pd.DataFrame:
    """Study i of a simulated family as a feature table: one row per (model, seed, step), the
    loss as both train_loss and val_loss (each question reads its own)."""
    frames = []
    _, models, seeds, _ = sim["y"].shape
    for m, s in np.ndindex(models, seeds):
        cols = {f: sim[f][i, m, s] for f in qp.CLAIM_SIGNS}
        cols |= {TARGET: sim["y"][i, m, s], CO_TARGET: sim["y"][i, m, s]}
        cols |= {sc.SCALE: sim["l"][i, m, s]}
        head = {"model": qp.MODELS[m], "seed": 42 + s, "step": sim["t"].astype(int)}
        frames.append(pd.DataFrame(head | cols))
    return pd.concat(frames, ignore_index=True).assign(n_params=1000)


def _compared(q: str) -> list[str]:
    view = QUESTIONS[q]
    bounds = [f"effect_{c}_fw_high" for c in (clock_condition(view), norm_condition(view))]
    return [f"p_{view}", f"p_bh_{q}", f"held_{view}", f"ruled_{view}", *bounds, f"verdict_{q}"]


@pytest.mark.parametrize("condition", ["at_delta", "norm_only"])
def test_the_simulated_verdicts_are_the_reports(condition):
    """One family per condition at 5 seeds × 51 checkpoints (H = 100, moves from step 300, as the
    study): per question, family_verdicts (view_columns per claim, bounds only, then
    answer_question) gives primary_family's p, p_bh, sign and reversal counts, family-wise bounds
    and verdict on a feature table of the same numbers; planted at Δ_co the co-movement's words
    include "reproduced", on norm_only "explained by the norm"."""
    sc.set_horizon(sc.HORIZON_STEPS, qp.START_STEP)  # the study's; conftest restores its own
    claims = qp.settings(qp.DOCUMENTED, 5, 51)
    betas = [0.5] * 3 if condition == "at_delta" else [0.0] * 3  # strong: every word is walked
    sim = qp.simulate_family(condition, claims, betas, np.random.default_rng(3), 1)
    report = primary_family(_table(sim, 0), read_paper_values(PAPER)).set_index("feature")
    words = set()
    for q in QUESTIONS:
        loss = VIEWS[QUESTIONS[q]][0]
        mine = qp.family_verdicts(qp.study_mats(sim, 0, loss), q, qp.DELTAS[q]).set_index("feature")
        cols = _compared(q)
        pd.testing.assert_frame_equal(mine[cols], report[cols], check_dtype=False)
        words |= set(mine[f"verdict_{q}"])
    want = "reproduced" if condition == "at_delta" else "explained by the norm"
    assert want in words


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_the_planted_beta_is_the_questions_delta_at_h(question):
    """At Δ the question's binding view (partial on the norm) estimates Δ exactly
    (persistent.implied of the planted β), the same β at 51, 101 and 201 checkpoints: the
    co-movement's moves span H whatever the spacing; 0 elsewhere."""
    betas = {}
    for n in (51, 101, 201):
        claims = qp.settings(qp.DOCUMENTED, 5, n)
        betas[n] = qp.strengths(question, "at_delta", claims)
        for s, b in zip(claims, betas[n], strict=True):
            implied = pe.implied("level", b, s)[qp.BINDING[question]]
            assert implied == pytest.approx(qp.DELTAS[question], abs=1e-8)
        assert qp.strengths(question, "exact_null", claims) == [0.0] * 3
    assert betas[51] == pytest.approx(betas[201], abs=1e-6)
    if question == "moves_with":  # white noise enters the moves at full weight: β_co < β
        assert min(betas[201]) > qp.DELTAS[question]


def test_the_fit_is_unrounded_and_on_each_questions_loss():
    """One model, 2 seeds, 8 steps; val_loss's deviations are ±d with d by hand, train_loss's
    another series: fit_noise on val_loss, digits None, gives the white share and φ of d's
    pooled lag-1 and lag-2 autocorrelations by hand, unrounded (rounded to 0.01 by default), and
    train_loss's own by default; question_noise fits each question on its view's loss."""
    d = np.array([0.6, 0.2, 0.0, -0.5, -0.9, -1.0, 0.2, -0.6])  # φ 0.713…, v 0.436…
    other = np.array([0.2, -0.5, 0.6, 0.1, -0.4, 0.3, 0.8, -0.1])
    rows = []
    for s, sign in enumerate((1.0, -1.0)):
        for t in range(8):
            row = {"model": "m", "seed": s, "step": 100 * t, "n_params": 10}
            row |= {CO_TARGET: 3.0 + sign * d[t], TARGET: 2.0 + sign * other[t]}
            row |= {sc.SCALE: 1.0 + sign * (0.5 * d[t] + other[t])}
            rows.append(row)
    df = pd.DataFrame(rows)
    rho1 = 2 * (d[1:] * d[:-1]).sum() / (2 * (d * d).sum())  # both seeds: ±d, the same sums
    rho2 = (d[2:] * d[:-2]).sum() / (d * d).sum()
    phi = rho2 / rho1
    white = 1 - rho1 / phi
    assert 0 < white < 1 and round(white, 2) != white  # a share rounding would change
    fitted = fit_noise(df, (), target=CO_TARGET, digits=None)
    assert fitted.loss == pytest.approx(phi, abs=1e-12)
    assert fitted.loss_white == pytest.approx(white, abs=1e-12)
    rounded = fit_noise(df, (), target=CO_TARGET)
    assert (rounded.loss, rounded.loss_white) == (round(phi, 2), round(white, 2))
    assert fit_noise(df, ()).loss == ar_white([np.vstack([other, -other])])[0]
    by_question = qp.question_noise(df)
    assert by_question["moves_with"].loss_white == pytest.approx(white, abs=1e-12)
    assert by_question["ranks"] == fit_noise(df, target=TARGET, digits=None)


def test_rows_count_every_word_per_claim():
    """verdict_shares: per claim each word's share and 'shown below Δ' (clock + norm), the
    shares of the four words summing to 1, with Clopper–Pearson ends; the same rows at 1 and 2
    processes (each chunk its own generator)."""
    noise = dataclasses.replace(qp.DOCUMENTED)
    one = qp.verdict_shares("moves_with", "exact_null", 5, 51, noise, 3, threads=1)
    assert set(one["feature"]) == set(CLAIMS) and (one["draws"] == 3).all()
    for _, rows in one.groupby("feature"):
        share = rows.set_index("verdict")["share"]
        assert share[list(qp.WORDS)].sum() == pytest.approx(1.0)
        clock, norm = share["explained by the clock"], share["explained by the norm"]
        assert share[qp.BELOW] == pytest.approx(clock + norm)
        assert (rows["mc_low"] <= rows["share"]).all() and (rows["share"] <= rows["mc_high"]).all()
    two = qp.verdict_shares("moves_with", "exact_null", 5, 51, noise, 3, threads=2)
    cols = ["feature", "verdict", "share"]
    pd.testing.assert_frame_equal(one[cols], two[cols])
