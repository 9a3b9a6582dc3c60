"""The calibration suite's pass rule: a binomial decision designed both ways, for the whole suite.

A row's "yes" count k over n draws passes at nominal rate a iff k ≤ c(n, a) = F⁻¹(PASS_LEVEL;
n, a), the smallest c with P(Binomial(n, a) ≤ c) ≥ PASS_LEVEL: a row at its nominal rate passes
its first draws at least 95 % of the time. A row that fails them and that a verdict or an interval
uses is re-drawn on CONFIRM_FACTOR × n fresh draws and decided on all n₁ + n₂ pooled, at a family
level: k₁ + k₂ ≤ c_F(n₁ + n₂, a) = F⁻¹(1 − (1 − PASS_LEVEL)/FAMILY_ROWS; n₁ + n₂, a)
(``redraw_max``). Both ways (``rule_pass_probability``, exact binomial sums): a row at nominal
ends failing about 1 time in 10 000 (at 1,000 first draws: 0.0001 at 5 %, 0.0001 at 2.5 %), so
a suite of some 530 rows at nominal passes every one about 95 % of the time — with the pooled
re-draw judged at PASS_LEVEL, as before, a row at nominal ended failing about 1 % of the time
and 400 of them about four; and ``draws_needed(a)`` is the n from which the whole rule passes a
row at twice nominal at most 1 − FAIL_POWER = 20 % of the time: 191 draws at 5 %, 405 at 2.5 %.
The price is a little second chance for a row just above nominal: at 1,000 draws one at 6 %
(for 5 %) passes 0.654 of the time against its first draws' 0.637.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats

from topotrain.config import ALPHA

# a row at its nominal rate passes at least this often: the suite's own design (with FAIL_POWER
# it sets the draws a row needs), not the study's α, which the suite checks each test keeps
PASS_LEVEL = 0.95
FAIL_POWER = 0.80  # a row at EXCESS × nominal fails at least this often from draws_needed on
EXCESS = 2.0  # the rate, as a multiple of nominal, that the draws must tell from nominal
CONFIRM_FACTOR = 10  # a failing row that a verdict uses gets this many times its draws again
# the pooled decision's family: Bonferroni over this many re-drawn rows (about 5 % of the ~530
# rows the suite judges fail their first draws at nominal; the rest are the rows above nominal)
FAMILY_ROWS = 100
Z95 = float(stats.norm.ppf(1 - ALPHA / 2))  # the normal quantile of a 95 % (CONFIDENCE) interval


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval at CONFIDENCE = 1 − ALPHA (95 %) of a rate of
    ``hits`` "yes" in n draws: the beta quantiles at ALPHA/2 and 1 − ALPHA/2."""
    low = stats.beta.ppf(ALPHA / 2, hits, n - hits + 1) if hits else 0.0
    high = stats.beta.ppf(1 - ALPHA / 2, hits + 1, n - hits) if hits < n else 1.0
    return float(low), float(high)


def pass_max(n: int | np.ndarray, nominal: float, level: float = PASS_LEVEL) -> int | np.ndarray:
    """c(n, a): the largest "yes" count of n draws that passes at nominal rate a, the smallest c
    with P(Binomial(n, a) ≤ c) ≥ ``level`` (PASS_LEVEL)."""
    c = stats.binom.ppf(level, n, nominal)
    return c.astype(int) if isinstance(c, np.ndarray) else int(c)


def redraw_max(n: int | np.ndarray, nominal: float) -> int | np.ndarray:
    """c_F(n, a): the largest pooled "yes" count of a re-drawn row's n draws (first and re-drawn)
    that passes: ``pass_max`` at 1 − (1 − PASS_LEVEL)/FAMILY_ROWS."""
    return pass_max(n, nominal, 1 - (1 - PASS_LEVEL) / FAMILY_ROWS)


def passes(hits: int | np.ndarray, n: int | np.ndarray, nominal: float) -> bool | np.ndarray:
    """Whether ``hits`` "yes" of n draws pass at nominal rate a: hits ≤ c(n, a)."""
    return hits <= pass_max(n, nominal)


def pass_probability(n: int | np.ndarray, nominal: float, rate: float) -> float | np.ndarray:
    """P(pass) of a row whose true rate is ``rate`` over n draws: P(Binomial(n, rate) ≤ c(n, a))."""
    return stats.binom.cdf(pass_max(n, nominal), n, rate)


def rule_pass_probability(
    n: int, nominal: float, rate: float, factor: int = CONFIRM_FACTOR
) -> float:
    """P(pass) of a row at ``rate`` under the whole rule: its n draws pass, or they fail and
    the n + factor·n pooled pass at the family level (``redraw_max``)."""
    m = factor * n
    c1, cf = pass_max(n, nominal), redraw_max(n + m, nominal)
    k = np.arange(c1 + 1, n + 1)
    rescued = stats.binom.pmf(k, n, rate) * stats.binom.cdf(cf - k, m, rate)
    return float(stats.binom.cdf(c1, n, rate) + rescued.sum())


@functools.lru_cache
def draws_needed(
    nominal: float, excess: float = EXCESS, factor: int | None = CONFIRM_FACTOR
) -> int:
    """The smallest n from which every larger n (up to four times the normal approximation's)
    fails a row at ``excess`` × nominal at least FAIL_POWER of the time under the whole rule
    (``rule_pass_probability`` with a re-draw of ``factor`` × n; None: the first draws alone, a
    table that never re-draws): P(pass) ≤ 1 − FAIL_POWER (the discrete c makes P(pass)
    saw-tooth in n, so the first n below is not enough)."""
    z_pass, z_fail = stats.norm.ppf(PASS_LEVEL), stats.norm.ppf(FAIL_POWER)
    high = excess * nominal
    spread = z_pass * np.sqrt(nominal * (1 - nominal)) + z_fail * np.sqrt(high * (1 - high))
    horizon = int(4 * (spread / (high - nominal)) ** 2) + 100
    n = np.arange(1, horizon + 1)
    if factor is None:
        p = pass_probability(n, nominal, high)
    else:
        p = np.array([rule_pass_probability(int(i), nominal, high, factor) for i in n])
    return int(n[p > 1 - FAIL_POWER][-1] + 1)
