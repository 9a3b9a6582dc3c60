"""The sign rule's calibration (analysis/calibration/sign_rule.py): its decision is the report's
(primary.claim_views), its planted shares and binomial bounds are checked by hand, and at telling
draw counts (slow) its false "reproduced" rate under the null is at most α."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.calibration.sign_rule import (
    CLAIM_SIGNS,
    SIGN_RULE_COLUMNS,
    claim_decision,
    planted,
    sign_rule_rows,
)
from topotrain.analysis.inference.primary import CO_TARGET, TARGET, all_held, claim_test
from topotrain.analysis.inference.seed_contrast import SCALE, seed_permutations
from topotrain.analysis.inference.stats import ALPHA


def test_planted_shares_put_one_model_against_its_claimed_sign():
    signs = CLAIM_SIGNS["mixed (-,+,+,+)"]
    assert planted("null", signs) == [0.0] * 4
    assert planted("one_wrong", signs, 0.1) == pytest.approx([0.1, 0.1, 0.1, 0.1])
    assert planted("one_wrong", (1.0,) * 5, 0.1) == pytest.approx([-0.1, 0.1, 0.1, 0.1, 0.1])
    assert planted("one_wrong_strong", signs, 0.1) == pytest.approx([0.1, 0.4, 0.4, 0.4])
    with pytest.raises(ValueError):
        planted("opposite", signs)


@pytest.mark.xfail(
    strict=True,
    reason="issue 56 item 1: the report decides per question (primary.question_verdict, one view "
    "each, no joint min-p), while calibration/sign_rule.claim_decision still simulates the joint "
    "rule over both views; to be rewritten with it",
)
def test_the_calibrated_decision_is_the_reports_claim_test():
    """On 8 hand-built studies (4 models × 3 or 5 seeds, the first model's share flipped in
    half of them; the loss y serves both views) claim_decision equals the report's claim_test:
    its joint p < α, and with it every sign held and every reversal by Δ ruled out."""
    rng = np.random.default_rng(5)
    signs = pd.Series([-1.0, 1.0, 1.0, 1.0], index=[f"m{i}" for i in range(4)])
    outcomes = set()
    for i in range(8):
        k = 3 if i % 4 == 3 else 5
        perms = [seed_permutations(k)] * 4
        flip = -1.0 if i % 2 else 1.0
        models, frames = [], []
        for m, s in enumerate(signs):
            u, e = rng.normal(0, 1, (2, k, 20))
            share = (flip if m == 0 else 1.0) * s * rng.uniform(0.3, 0.9)
            models.append({"x": share * u + e, "y": u, SCALE: rng.normal(0, 1, (k, 20))})
            for seed in range(k):
                frames.append(
                    pd.DataFrame(
                        {"model": signs.index[m], "seed": seed, "step": np.arange(20)}
                        | {"x": models[-1]["x"][seed], SCALE: models[-1][SCALE][seed]}
                        | {TARGET: u[seed], CO_TARGET: u[seed]}
                    )
                )
        row = claim_test(pd.concat(frames, ignore_index=True), "x", signs)
        rejects = row["p"] < ALPHA
        expected = (rejects, rejects and all_held(row["signs_held"]) and all_held(row["ruled_out"]))
        assert claim_decision(models, perms, list(signs)) == expected
        outcomes.add(expected)
    assert {(True, True), (True, False)} <= outcomes  # both decisions are walked


def test_rows_give_rates_and_exact_binomial_bounds():
    rows = sign_rule_rows(draws=12, seeds=(3,))
    assert list(rows.columns) == SIGN_RULE_COLUMNS
    assert len(rows) == 2 * 3 and set(rows["models"]) == {4, 5}
    for row in rows.itertuples(index=False):
        hits = round(row.rate * row.draws)
        # Clopper–Pearson's upper end by its beta-quantile formula
        high = 1.0 if hits == row.draws else stats.beta.ppf(0.975, hits + 1, row.draws - hits)
        assert row.rate_ci_high == pytest.approx(high, rel=1e-6)
        assert row.rate <= row.test_rate  # the sign rule only adds a condition
        # the suite's pass rule: c = the 95 % quantile of Binomial(draws, α)
        assert row.pass_max == stats.binom.ppf(0.95, row.draws, ALPHA)
        assert row.passes == (hits <= row.pass_max)


@pytest.mark.slow
def test_the_sign_rule_under_the_null_and_one_wrong_sign_at_telling_draws():
    """400 studies per row at 3, 5 and 8 seeds: under the null and with one model's effect at
    Δ against its sign — the others at Δ or strong (4Δ), T3's case — the "reproduced" rate is
    ≤ α (its exact binomial lower end at most α), since each model's own test must rule out a
    reversal by Δ; at 3 seeds (smallest exact p 1/6) nothing is reproduced."""
    rows = sign_rule_rows(draws=400)
    for row in rows.itertuples(index=False):
        hits = round(row.rate * row.draws)
        low = stats.binomtest(hits, row.draws).proportion_ci(0.95, method="exact").low
        assert low <= ALPHA and row.passes, row
        assert row.rate <= row.test_rate
        assert row.seeds > 3 or hits == 0
    strong = rows[rows["scenario"] == "one_wrong_strong"]
    assert (strong["rate"] < strong["test_rate"] / 2).all()
