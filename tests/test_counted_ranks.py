"""Average ranks by counting (exact_tests.counted_ranks, resampled_ranks) against scipy's
rankdata, bit for bit, and the bootstrap statistics built on them against the sorting ones."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from topotrain.analysis.inference.exact_tests import (
    counted_ranks,
    rank_pearson,
    resampled_ranks,
    spearman_rows,
)
from topotrain.analysis.inference.rank_stats import partial_from_ranks, partial_spearman
from topotrain.analysis.inference.stats import spearman_ci


def series(kind: str, n: int, rng) -> np.ndarray:
    if kind == "continuous":
        return rng.standard_normal(n)
    if kind == "ties":
        return rng.integers(0, 5, n) / 4.0  # five levels: many ties in every resample
    return np.r_[np.zeros(n - 1), 1.0]  # one value apart: most resamples constant


@pytest.mark.parametrize("kind", ["continuous", "ties", "nearly_constant"])
@pytest.mark.parametrize("n", [3, 17, 201])
def test_resampled_ranks_are_scipys_rankdata_bit_for_bit(kind, n):
    rng = np.random.default_rng(n)
    s = series(kind, n, rng)
    idx = rng.integers(0, n, (40, n))
    got = resampled_ranks(s, idx)
    want = stats.rankdata(s[idx], axis=-1)
    assert got.dtype == want.dtype == np.float64
    assert got.tobytes() == want.tobytes()


def test_counted_ranks_by_hand():
    # codes 2, 0, 2, 1: sorted 0 | 1 | 2 2 → ranks 1, 2, then (3 + 4)/2 = 3.5 for both 2s
    assert counted_ranks(np.array([[2, 0, 2, 1]]), 3).tolist() == [[3.5, 1.0, 3.5, 2.0]]
    # any leading shape: ranks along the last axis only
    codes = np.array([[[0, 0]], [[1, 0]]])
    assert counted_ranks(codes, 2).tolist() == [[[1.5, 1.5]], [[2.0, 1.0]]]


def test_the_statistics_from_counted_ranks_are_the_sorting_ones():
    rng = np.random.default_rng(7)
    x, y, z = (series("ties", 60, rng) + 0.1 * rng.standard_normal(60) for _ in range(3))
    x[::7] = x[0]  # some exact ties left in
    idx = rng.integers(0, 60, (30, 60))
    rank = [resampled_ranks(v, idx) for v in (x, y, z)]
    want = partial_spearman(x[idx], y[idx], z[idx])
    assert partial_from_ranks(*rank).tobytes() == want.tobytes()
    want = spearman_rows(x[idx], y[idx])
    got = stats.pearsonr(rank[0], rank[1], axis=-1).statistic
    np.testing.assert_array_equal(got, want)


def test_rank_pearson_is_spearman_rows_within_rounding():
    rng = np.random.default_rng(11)
    x = rng.integers(0, 6, (50, 40)).astype(float)
    y = x + rng.integers(0, 3, (50, 40))
    x[0] = 1.0  # a constant row: NaN both ways
    y[1] = x[1]  # identical rows: exactly 1 (clipped)
    got = rank_pearson(stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1))
    want = spearman_rows(x, y)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    assert np.isnan(got[0]) and got[1] == 1.0
    assert np.all(np.abs(got[1:]) <= 1.0)


def test_spearman_ci_is_the_value_bootstrap():
    # spearman_ci resamples its series' codes; scipy's bootstrap of the values with the sorting
    # statistic draws the same indices, so the same interval (within rounding: rank_pearson)
    rng = np.random.default_rng(3)
    x = rng.integers(0, 30, 80) + rng.standard_normal(80) * (rng.random(80) < 0.5)
    y = 0.5 * x + rng.standard_normal(80)
    got = spearman_ci(x, y, n_resamples=300, seed=5)
    boot = stats.bootstrap(
        (x, y),
        spearman_rows,
        paired=True,
        vectorized=True,
        n_resamples=300,
        method="percentile",
        rng=np.random.default_rng(5),
    ).bootstrap_distribution
    low, high = np.percentile(boot[np.isfinite(boot)], [2.5, 97.5])
    assert got["ci_low"] == pytest.approx(low, rel=1e-13)
    assert got["ci_high"] == pytest.approx(high, rel=1e-13)
    assert got["rho"] == pytest.approx(stats.spearmanr(x, y).statistic, abs=0, rel=0)


def test_counted_ranks_refuse_codes_outside_their_range():
    with pytest.raises(ValueError, match="outside"):
        counted_ranks(np.array([[0, 3]]), 3)
    with pytest.raises(ValueError, match="outside"):
        counted_ranks(np.array([[-1, 0]]), 3)
