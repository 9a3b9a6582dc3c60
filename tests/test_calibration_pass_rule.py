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
    CONFIRM_FACTOR,
    FAMILY_ROWS,
    draws_needed,
    pass_max,
    pass_probability,
    redraw_max,
    rule_pass_probability,
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


def smallest_95(n: int, a: float, level: float = 0.95) -> int:
    """The smallest c with P(Binomial(n, a) ≤ c) ≥ level (0.95), by summing the pmf up."""
    c, total = 0, pmf(0, n, a)
    while total < level:
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
    n = draws_needed(0.05, excess=1.2, factor=None)  # on the first draws alone
    assert n == 3370
    assert cdf(smallest_95(n, 0.05), n, 0.06) <= 0.2 < cdf(smallest_95(n - 1, 0.05), n - 1, 0.06)
    assert pass_probability(1000, 0.05, 0.06) == pytest.approx(0.637, abs=0.001)  # the default


FAMILY_LEVEL = 1 - 0.05 / 100  # the pooled re-draw's level: Bonferroni over 100 re-drawn rows


def two_stage(rate: float, n: int, m: int, a: float, level: float = FAMILY_LEVEL) -> float:
    """P(pass) of a row at ``rate``: its n draws pass, or they fail and n + m pooled pass at
    ``level`` (the suite's family level; 0.95 the earlier rule's)."""
    c1, c2 = smallest_95(n, a), smallest_95(n + m, a, level)
    rescued = sum(pmf(k, n, rate) * cdf(c2 - k, m, rate) for k in range(c1 + 1, min(n, c2) + 1))
    return cdf(c1, n, rate) + rescued


def replaced(rate: float, n: int, m: int, a: float) -> float:
    """P(pass) under the old rule: the Clopper–Pearson lower end ≤ a on the n draws, else on
    the m fresh ones alone (the re-draw replaced the first)."""

    def largest(size: int) -> int:
        k = np.arange(1, size + 1)
        return int(k[stats.beta.ppf(0.025, k, size - k + 1) <= a].max())

    first = stats.binom.cdf(largest(n), n, rate)
    return float(first + (1 - first) * stats.binom.cdf(largest(m), m, rate))


def test_the_whole_rule_is_designed_both_ways_for_a_suite_of_530_rows():
    """At draws_needed (191 at 5 %, 405 at 2.5 %, re-drawn on 10 × n more, pooled at the family
    level): a row at nominal passes ≥ 95 % (all but about 1 in 10 000, so 530 such rows all pass
    about 95 % of the time), one at twice nominal ≤ 20 %; pass_rule's own function agrees."""
    assert (CONFIRM_FACTOR, FAMILY_ROWS) == (10, 100)
    for a, needed in ((0.05, 191), (0.025, 405)):
        n = draws_needed(a)
        assert n == needed == draws_needed(a, factor=None)  # no more than the first draws alone
        nominal, double = two_stage(a, n, 10 * n, a), two_stage(2 * a, n, 10 * n, a)
        assert nominal >= 1 - 1.1e-4 and double <= 0.2
        assert nominal**530 >= 0.94
        assert rule_pass_probability(n, a, a) == pytest.approx(nominal, abs=1e-9)
        assert rule_pass_probability(n, a, 2 * a) == pytest.approx(double, abs=1e-9)
        assert redraw_max(11 * n, a) == smallest_95(11 * n, a, FAMILY_LEVEL)
    # a re-draw of 3 × n would need 407 first draws at 2.5 %
    assert two_stage(0.05, 406, 3 * 406, 0.025) > 0.2 >= two_stage(0.05, 407, 3 * 407, 0.025)
    assert draws_needed(0.025, factor=3) == 407


def test_pooling_the_re_draw_gives_little_second_chance():
    # the cases at the default 1,000 draws + 3,000 re-drawn: 6 % for 5 %, 3 % for 2.5 %
    assert replaced(0.06, 1000, 3000, 0.05) == pytest.approx(0.82, abs=0.01)
    assert replaced(0.03, 1000, 3000, 0.025) == pytest.approx(0.94, abs=0.01)
    assert two_stage(0.06, 1000, 3000, 0.05, 0.95) == pytest.approx(0.650, abs=0.001)
    assert two_stage(0.03, 1000, 3000, 0.025, 0.95) == pytest.approx(0.789, abs=0.001)
    # now (10 × n pooled at the family level): 0.654 and 0.838, against the first draws' 0.637
    # and 0.747 (replacing them added 18 and 19 points)
    assert two_stage(0.06, 1000, 10_000, 0.05) == pytest.approx(0.654, abs=0.001)
    assert two_stage(0.03, 1000, 10_000, 0.025) == pytest.approx(0.838, abs=0.001)
    assert pass_probability(1000, 0.05, 0.06) == pytest.approx(0.637, abs=0.001)
    assert pass_probability(1000, 0.025, 0.03) == pytest.approx(0.747, abs=0.001)
    # and a row exactly at nominal fails about 1 in 10 000 times, not 1 in 100
    assert 1 - two_stage(0.025, 1000, 3000, 0.025, 0.95) == pytest.approx(0.0105, abs=0.0005)
    assert 1 - two_stage(0.025, 1000, 10_000, 0.025) < 1.5e-4


def test_confirm_failures_decides_binomial_draws_as_the_two_stage_rule_says():
    """400 rows at a true 6 % (1,000 draws, 10,000 more when they fail) through confirm_failures:
    the pass rate is two_stage's, not the old rule's 82 %."""
    rng = np.random.default_rng(11)
    test, n, reps = "seed_contrast p (pooled)", 1000, 400

    def draw(seeds: int, size: int) -> dict:
        return _rows({test: np.arange(size) < rng.binomial(size, 0.06)}, "decel_iid", seeds)[0]

    first = pd.DataFrame([draw(i, n) for i in range(reps)], columns=CALIBRATION_COLUMNS)
    out = confirm_failures(first, lambda task, n_sim: [draw(task[1], n_sim)], n, lambda m: None)
    rate, exact = out["passes"].astype(bool).mean(), two_stage(0.06, n, 10 * n, 0.05)
    assert abs(rate - exact) <= 4 * math.sqrt(exact * (1 - exact) / reps)
    redrawn = out["first_n_sim"].notna()
    assert (out.loc[redrawn, "n_sim"] == 11 * n).all() and first["passes"].eq(False).eq(
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
