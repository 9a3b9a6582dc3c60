"""The calibration suite's pass rule (``pass_rule``) against binomial probabilities written out
here, its re-draw pooled with the first draws (``confirm_failures``), and its generators: no two
tasks of the suite draw the same numbers."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.calibration import suite
from topotrain.analysis.calibration.pass_rule import (
    draws_needed,
    pass_max,
    pass_probability,
)
from topotrain.analysis.calibration.suite import (
    CALIBRATION_COLUMNS,
    CONFIRM_SEED,
    SEEDS,
    SESOI,
    _rows,
    calibration_tasks,
    confirm_failures,
)


def pmf(j: int, n: int, p: float) -> float:
    """P(Binomial(n, p) = j), from log-gamma."""
    log_comb = math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1)
    return math.exp(log_comb + j * math.log(p) + (n - j) * math.log1p(-p))


def cdf(c: int, n: int, p: float) -> float:
    return sum(pmf(j, n, p) for j in range(c + 1))


def smallest_95(n: int, a: float) -> int:
    """The smallest c with P(Binomial(n, a) ≤ c) ≥ 0.95, by summing the pmf up."""
    c, total = 0, pmf(0, n, a)
    while total < 0.95:
        c += 1
        total += pmf(c, n, a)
    return c


def test_pass_max_is_the_smallest_count_a_nominal_row_stays_under_95_percent_of_the_time():
    assert pass_max(20, 0.05) == 3  # by hand: P(k ≤ 2) = 0.925, P(k ≤ 3) = 0.984
    ns = (20, 100, 191, 405, 1000, 4000)
    for a in (0.05, 0.025):
        assert [pass_max(n, a) for n in ns] == [smallest_95(n, a) for n in ns]
        assert pass_max(np.array(ns), a).tolist() == [smallest_95(n, a) for n in ns]


@pytest.mark.parametrize("nominal, needed", [(0.05, 191), (0.025, 405)])
def test_from_draws_needed_on_a_row_at_twice_nominal_fails_at_least_80_percent(nominal, needed):
    """Both ways: at n = draws_needed a row at its nominal rate passes ≥ 95 % and one at twice
    nominal ≤ 20 %, at every n up to 3·n too, and not at n − 1 (the issue guessed 400 and 800)."""
    n = draws_needed(nominal)
    assert n == needed

    def lenient(m: int) -> bool:
        return cdf(smallest_95(m, nominal), m, 2 * nominal) > 0.2

    assert lenient(n - 1)
    assert not any(lenient(m) for m in range(n, 3 * n))
    assert cdf(smallest_95(n, nominal), n, nominal) >= 0.95
    m = np.arange(n, 3 * n)  # scipy's binomial, the same two probabilities
    c = stats.binom.ppf(0.95, m, nominal)
    assert (stats.binom.cdf(c, m, nominal) >= 0.95).all()
    assert (stats.binom.cdf(c, m, 2 * nominal) <= 0.2).all()


def test_telling_6_from_5_percent_would_take_about_3400_draws():
    n = draws_needed(0.05, excess=1.2)
    assert n == 3370
    assert cdf(smallest_95(n, 0.05), n, 0.06) <= 0.2 < cdf(smallest_95(n - 1, 0.05), n - 1, 0.06)
    assert pass_probability(1000, 0.05, 0.06) == pytest.approx(0.637, abs=0.001)  # the default


def two_stage(rate: float, n: int, m: int, a: float) -> float:
    """P(pass) of a row at ``rate``: its n draws pass, or they fail and n + m pooled pass."""
    c1, c2 = pass_max(n, a), pass_max(n + m, a)
    k = np.arange(c1 + 1, n + 1)
    rescued = stats.binom.pmf(k, n, rate) * stats.binom.cdf(c2 - k, m, rate)
    return float(stats.binom.cdf(c1, n, rate) + rescued.sum())


def replaced(rate: float, n: int, m: int, a: float) -> float:
    """P(pass) under the old rule: the Clopper–Pearson lower end ≤ a on the n draws, else on
    the m fresh ones alone (the re-draw replaced the first)."""

    def largest(size: int) -> int:
        k = np.arange(1, size + 1)
        return int(k[stats.beta.ppf(0.025, k, size - k + 1) <= a].max())

    first = stats.binom.cdf(largest(n), n, rate)
    return float(first + (1 - first) * stats.binom.cdf(largest(m), m, rate))


def test_pooling_the_re_draw_keeps_both_ways_and_gives_no_second_chance():
    for a in (0.05, 0.025):
        n = draws_needed(a)  # the design point, re-drawn on 3 × n more
        assert two_stage(a, n, 3 * n, a) >= 0.95 and two_stage(2 * a, n, 3 * n, a) <= 0.2
    # the cases at the default 1,000 draws + 3,000 re-drawn: 6 % for 5 %, 3 % for 2.5 %
    assert replaced(0.06, 1000, 3000, 0.05) == pytest.approx(0.82, abs=0.01)
    assert replaced(0.03, 1000, 3000, 0.025) == pytest.approx(0.94, abs=0.01)
    assert two_stage(0.06, 1000, 3000, 0.05) == pytest.approx(0.650, abs=0.001)
    assert two_stage(0.03, 1000, 3000, 0.025) == pytest.approx(0.789, abs=0.001)
    for rate, a in ((0.06, 0.05), (0.03, 0.025)):  # pooled, the re-draw adds 1–4 points to the
        gain = two_stage(rate, 1000, 3000, a) - pass_probability(1000, a, rate)  # first draws'
        assert 0 < gain < 0.05  # pass probability (replacing them added 9)


def test_confirm_failures_decides_binomial_draws_as_the_two_stage_rule_says():
    """400 rows at a true 6 % (1,000 draws, 3,000 more when they fail) through confirm_failures:
    the pass rate is two_stage's, not the old rule's 82 %."""
    rng = np.random.default_rng(11)
    test, n, reps = "seed_contrast p (pooled)", 1000, 400

    def draw(seeds: int, size: int) -> dict:
        return _rows({test: np.arange(size) < rng.binomial(size, 0.06)}, "decel_iid", seeds)[0]

    first = pd.DataFrame([draw(i, n) for i in range(reps)], columns=CALIBRATION_COLUMNS)
    out = confirm_failures(first, lambda task, n_sim: [draw(task[1], n_sim)], n, lambda m: None)
    rate, exact = out["passes"].astype(bool).mean(), two_stage(0.06, n, 3 * n, 0.05)
    assert abs(rate - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps)
    redrawn = out["first_n_sim"].notna()
    assert (out.loc[redrawn, "n_sim"] == 4 * n).all() and first["passes"].eq(False).eq(
        redrawn
    ).all()


class Drew(Exception):
    """Raised by the stand-in simulator once it has seen a task's generator."""


def test_no_two_tasks_of_the_suite_nor_their_re_draws_draw_the_same_numbers(monkeypatch):
    """Every task of the default suite (and its re-draw at seed + CONFIRM_SEED): the first
    numbers of the generator its simulator receives. signal_r0.2 and spread_r0.1 have the same
    character sum, signal_r0.1 / 0.2 / 0.4 the same length."""
    assert sum(map(ord, "signal_r0.2")) == sum(map(ord, "spread_r0.1"))
    first: dict[tuple, tuple] = {}
    key: list = []

    def seen(rng: np.random.Generator, *args, **kwargs):
        first[key[0]] = tuple(copy.deepcopy(rng).random(4))
        raise Drew

    monkeypatch.setattr(suite, "simulate", lambda name, rng, *a, **k: seen(rng))
    for table in (suite.PAIRED, suite.SIZE_NULLS):
        for name in table:
            monkeypatch.setitem(table, name, seen)
    tasks = calibration_tasks(SEEDS, SESOI)
    assert len(tasks) == len(set(tasks)) == 69
    for seed in (0, CONFIRM_SEED):
        for task in tasks:
            key[:] = [(task, seed)]
            with pytest.raises(Drew):
                suite._task(task, n_sim=2, n_resamples=10, seed=seed)
    assert len(first) == 2 * len(tasks)
    assert len(set(first.values())) == len(first)
