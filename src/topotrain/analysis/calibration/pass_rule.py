"""The calibration suite's pass rule: a binomial decision designed both ways.

A row's "yes" count k over n draws passes at nominal rate a iff k ≤ c(n, a) = F⁻¹(PASS_LEVEL;
n, a), the smallest c with P(Binomial(n, a) ≤ c) ≥ PASS_LEVEL: a row at its nominal rate passes
at least 95 % of the time. ``draws_needed(a)`` is the n from which a row at twice nominal passes
at most 1 − FAIL_POWER = 20 % of the time, P(Binomial(n, 2a) ≤ c(n, a)) ≤ 0.2: 191 draws at
5 %, 405 at 2.5 %. A re-drawn row is decided on all its draws pooled, k₁ + k₂ ≤ c(n₁ + n₂, a).
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
Z95 = float(stats.norm.ppf(1 - ALPHA / 2))  # the normal quantile of a 95 % (CONFIDENCE) interval


def clopper_pearson(hits: int, n: int) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval at CONFIDENCE = 1 − ALPHA (95 %) of a rate of
    ``hits`` "yes" in n draws: the beta quantiles at ALPHA/2 and 1 − ALPHA/2."""
    low = stats.beta.ppf(ALPHA / 2, hits, n - hits + 1) if hits else 0.0
    high = stats.beta.ppf(1 - ALPHA / 2, hits + 1, n - hits) if hits < n else 1.0
    return float(low), float(high)


def pass_max(n: int | np.ndarray, nominal: float) -> int | np.ndarray:
    """c(n, a): the largest "yes" count of n draws that passes at nominal rate a, the smallest c
    with P(Binomial(n, a) ≤ c) ≥ PASS_LEVEL."""
    c = stats.binom.ppf(PASS_LEVEL, n, nominal)
    return c.astype(int) if isinstance(c, np.ndarray) else int(c)


def passes(hits: int | np.ndarray, n: int | np.ndarray, nominal: float) -> bool | np.ndarray:
    """Whether ``hits`` "yes" of n draws pass at nominal rate a: hits ≤ c(n, a)."""
    return hits <= pass_max(n, nominal)


def pass_probability(n: int | np.ndarray, nominal: float, rate: float) -> float | np.ndarray:
    """P(pass) of a row whose true rate is ``rate`` over n draws: P(Binomial(n, rate) ≤ c(n, a))."""
    return stats.binom.cdf(pass_max(n, nominal), n, rate)


@functools.lru_cache
def draws_needed(nominal: float, excess: float = EXCESS) -> int:
    """The smallest n from which every larger n (up to four times the normal approximation's)
    fails a row at ``excess`` × nominal at least FAIL_POWER of the time: P(pass) ≤ 1 − FAIL_POWER
    (the discrete c makes P(pass) saw-tooth in n, so the first n below is not enough)."""
    z_pass, z_fail = stats.norm.ppf(PASS_LEVEL), stats.norm.ppf(FAIL_POWER)
    high = excess * nominal
    spread = z_pass * np.sqrt(nominal * (1 - nominal)) + z_fail * np.sqrt(high * (1 - high))
    horizon = int(4 * (spread / (high - nominal)) ** 2) + 100
    n = np.arange(1, horizon + 1)
    too_lenient = pass_probability(n, nominal, high) > 1 - FAIL_POWER
    return int(n[too_lenient][-1] + 1)
