"""Exact tests and their corrections, the pieces every inference module shares: Spearman ρ's
exact permutation p, the sign-flip p of paired differences, ρ along an axis (the bootstraps'
statistic: from values, or from ranks, with resamples ranked by counting), and the Bonferroni and
Benjamini–Hochberg corrections over a family of p-values."""

from __future__ import annotations

import itertools
import warnings
from functools import lru_cache

import numpy as np
from scipy import stats

EXACT_MAX_N = 8  # up to 8! = 40,320 orderings the permutation p is exact
MC_PERMUTATIONS = 40_320  # random orderings (seeded) above EXACT_MAX_N


@lru_cache(maxsize=EXACT_MAX_N)
def _all_orderings(n: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(n))), dtype=np.intp)


def spearman_exact(x, y, seed: int = 0) -> tuple[float, float]:
    """Spearman ρ and its two-sided permutation p = P(|ρ_π| ≥ |ρ|) over orderings π of y.

    Exact (all n! orderings, ties as average ranks) for n ≤ EXACT_MAX_N; above, MC_PERMUTATIONS
    random orderings seeded by ``seed``, p = (hits + 1)/(draws + 1). NaN for n < 3 or
    constant x or y.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.size < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan"), float("nan")
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    scale = np.sqrt((rx @ rx) * (ry @ ry))
    rho = float(rx @ ry / scale)
    if x.size <= EXACT_MAX_N:
        orderings, extra = _all_orderings(x.size), 0
    else:
        rng = np.random.default_rng(seed)
        orderings = rng.permuted(np.tile(np.arange(x.size), (MC_PERMUTATIONS, 1)), axis=1)
        extra = 1
    null = ry[orderings] @ rx / scale
    hits = int(np.count_nonzero(np.abs(null) >= abs(rho) * (1 - 1e-9)))
    return rho, (hits + extra) / (len(orderings) + extra)


def spearman_rows(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """Spearman ρ along ``axis``: Pearson r of average ranks (scipy),
    NaN where a row is constant."""
    ra, rb = stats.rankdata(a, axis=axis), stats.rankdata(b, axis=axis)
    with warnings.catch_warnings():  # constant rows are expected in resamples; they give NaN
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        with np.errstate(invalid="ignore", divide="ignore"):
            return stats.pearsonr(ra, rb, axis=axis).statistic


def pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson r = Σ ã·b̃ / √(Σ ã² Σ b̃²) along the last axis (broadcast); NaN for a constant row."""
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=-1) / np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))


def rank_pearson(ra: np.ndarray, rb: np.ndarray) -> np.ndarray:
    """Spearman ρ from two series' average ranks along the last axis: ``pearson_rows``, clipped
    to [−1, 1]; NaN for a constant row. Equal to ``spearman_rows`` within rounding (scipy's
    ``pearsonr`` normalises in another order) at a third of its time: it computes no p."""
    return np.clip(pearson_rows(ra, rb), -1.0, 1.0)


def resampled_ranks(s: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``stats.rankdata(s[idx], axis=-1)`` for a 1-D ``s`` of finite values and (R, n) ``idx``:
    ``counted_ranks`` of s's distinct values' codes, coded once."""
    k, codes = value_codes(s)
    return counted_ranks(codes[idx], k)


def value_codes(v: np.ndarray) -> tuple[int, np.ndarray]:
    """(k, codes): the values of a 1-D ``v`` as integers 0 … k−1 in the order of its k distinct
    values (equal values, equal codes): what ``counted_ranks`` ranks."""
    distinct, codes = np.unique(v, return_inverse=True)
    return distinct.size, codes.ravel()


def counted_ranks(codes: np.ndarray, k: int) -> np.ndarray:
    """Average ranks along the last axis of integer ``codes`` in [0, k) that order as their
    values do, by counting, not sorting: per row the count of each code and the count below it;
    a code's rank is (below + 1) + (count − 1)/2, scipy's own expression for ``rankdata``'s
    average ranks, so the same floats (exact: integers and halves); a numba loop
    (``rank_kernel``). About 20 × faster than sorting each resample (``python -m benchmarks
    analysis``)."""
    from topotrain.analysis.inference.rank_kernel import counted

    shape = codes.shape
    c = codes.reshape(-1, shape[-1]) if codes.ndim else codes.reshape(1, 1)
    return counted(np.ascontiguousarray(c, dtype=np.int64), int(k)).reshape(shape)


MAX_EXACT_SIGNS = 16  # sign_flip_p enumerates 2^M sign patterns; NaN beyond this many values


def sign_flip_p(d: np.ndarray, alternative: str = "greater") -> float:
    """Exact sign-flip p of paired differences d_1 … d_M over all 2^M sign patterns (identity
    included, ties within 1e-12·Σ|d_m| count), so p ≥ 1/2^M; zero differences count as they are.

    ``greater``: that mean(d) > 0, #{s : Σ s_m·d_m ≥ Σ d_m} / 2^M; ``two-sided``: that it is not
    0, #{s : |Σ s_m·d_m| ≥ |Σ d_m|} / 2^M. NaN for M < 2, M > MAX_EXACT_SIGNS or a non-finite d_m.
    """
    d = np.asarray(d, dtype=float)
    m = d.size
    if m < 2 or m > MAX_EXACT_SIGNS or not np.isfinite(d).all():
        return float("nan")
    signs = 1 - 2 * ((np.arange(2**m)[:, None] >> np.arange(m)) & 1)
    sums, observed, tol = signs @ d, d.sum(), 1e-12 * np.abs(d).sum()
    if alternative == "two-sided":
        sums, observed = np.abs(sums), abs(observed)
    return float(np.count_nonzero(sums >= observed - tol)) / 2**m


def bonferroni(p: np.ndarray) -> np.ndarray:
    """min(1, p·m) over the m finite p-values; NaN stays NaN and is not counted in m."""
    p = np.asarray(p, float)
    return np.where(np.isfinite(p), np.minimum(1.0, p * np.isfinite(p).sum()), np.nan)


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """BH-adjusted p (scipy.stats.false_discovery_control) over the finite entries;
    NaN stays NaN."""
    p = np.asarray(p, float)
    out = np.full_like(p, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="bh")
    return out
