"""One view of one run's checkpoints: ρ of a feature with a loss, its interval and p.

Loss and every weight feature trend with training time, so Spearman ρ of levels over one run's
checkpoints is near ±1 for any monotone series, the step number included. Per run (model, seed),
feature and target (train or validation loss), four views:

- ``raw``: ρ of levels, with the paper's iid bootstrap CI and the asymptotic p;
- ``detrended``: ρ of first differences Δx_t = x_t − x_{t−1} between consecutive checkpoints;
- ``partial_step`` / ``partial_l2``: partial Spearman ρ(x, y | z) = Pearson r of the residuals of
  rank(x) and rank(y), each regressed with an intercept on rank(z), for z = step or l2_norm_mean.

The time-aware views (all but raw) get a stationary block-bootstrap CI (arch) whose block length is
the larger Politis–White estimate of the view's two stationary series (differences, or rank
residuals), clamped to [1, n/2]; the percentile CI is left NaN when more than 1 − confidence of
the resamples have undefined ρ. Their p comes from the circular-shift null on that same pair: the
second series is rotated against the first by each of the m − 1 non-trivial shifts, and
p = (1 + #{k ≠ 0: |r_k| ≥ |r_0|}) / m (the identity counted once), so the smallest p is 1/m.
Degenerate cells (a constant series, a feature that is the conditioning variable or a monotone
function of it) give NaN with a ``note``; they are never dropped or raised.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from topotrain.analysis.inference.bootstrap_draws import stationary_draws
from topotrain.analysis.inference.exact_tests import pearson_rows, rank_pearson, resampled_ranks
from topotrain.analysis.inference.rank_stats import partial_from_ranks, rank_residuals
from topotrain.analysis.inference.seed_contrast import CONTRAST_VIEWS
from topotrain.analysis.inference.stats import (
    ALPHA,
    MIN_RUN,
    TOO_SHORT,
    spearman_ci,
)
from topotrain.config import CONFIDENCE, DEFAULTS

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults

RUN_VIEWS = ["raw", "detrended", "partial_step", "partial_l2"]  # one run's checkpoints
CONDITION = {"partial_step": "step", "partial_l2": "l2_norm_mean"}  # view -> conditioning variable
BLOCK = "stationary block bootstrap (arch; Politis–White block length)"
CI_METHOD = {"raw": "iid bootstrap (paper's method, not valid for trending series)"}
CI_METHOD |= dict.fromkeys(RUN_VIEWS[1:], BLOCK)
CI_METHOD |= dict.fromkeys(CONTRAST_VIEWS, "none (permutation test)")
P_METHOD = {"raw": "asymptotic Spearman (t approximation)"}
P_METHOD |= dict.fromkeys(RUN_VIEWS[1:], "circular-shift null (all shifts enumerated)")


def block_length(a: np.ndarray, b: np.ndarray) -> float:
    """Mean block length for a paired stationary bootstrap: the larger of the Politis–White
    estimates of a and b (the pair must keep the longer memory), clamped to [1, n/2]. Where the
    estimate is undefined (near-constant series, or n ≲ 10, too short for arch's search) it is 1.
    arch is imported here, not with the module: it takes about 2 s, which every job importing
    the associations paid, though only the per-run views (rule run_views) call this."""
    from arch.bootstrap import optimal_block_length

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est = optimal_block_length(np.column_stack([a, b]))["stationary"].to_numpy(float)
        except (ValueError, IndexError):
            est = np.array([])
    est = est[np.isfinite(est)]
    return float(np.clip(est.max() if est.size else 1.0, 1.0, max(1.0, a.size / 2)))


def block_indices(n: int, length: float, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, n) checkpoint indices of the stationary bootstrap (Politis and Romano:
    geometric blocks of mean ``length``, wrapping around the end), the very indices arch's
    ``StationaryBootstrap(length, …, seed=default_rng(seed)).update_indices()`` draws, one
    resample after another: per resample n uniform starts, then n uniforms, and position i
    starts a block where its uniform is ≤ 1/length (position 0 always), else continues the
    block before it (``tests/test_block_bootstrap.py`` holds them equal). The draws are made in
    bulk (``bootstrap_draws``); the blocks are laid out for every resample at once."""
    starts, u = stationary_draws(n, n_resamples, seed)
    new = u <= 1.0 / length
    new[:, 0] = True
    at = np.arange(n)
    begun = np.maximum.accumulate(np.where(new, at, 0), axis=1)  # where each block began
    return (np.take_along_axis(starts, begun, axis=1) + (at - begun)) % n


def shift_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """Circular-shift p of r = Pearson(a, b): b rotated by k = 1..m−1 (scipy.stats.monte_carlo_test
    with every shift as its 'resamples'), p = (1 + #{k: |r_k| ≥ |r_0|}) / m."""
    m = a.size
    shifts = (np.arange(m) + np.arange(1, m)[:, None]) % m

    def rotations(size: tuple[int, int]) -> np.ndarray:
        assert size == shifts.shape, size  # one call, all shifts: the null is enumerated, not drawn
        return b[shifts]

    res = stats.monte_carlo_test(
        b,
        rotations,
        lambda s, axis=-1: np.abs(pearson_rows(a, s)),
        vectorized=True,
        n_resamples=m - 1,
        alternative="greater",
    )
    return float(res.pvalue)


def _view_data(view: str, x: np.ndarray, y: np.ndarray, z: np.ndarray | None):
    """(series resampled together, their statistic from the series' average ranks along the last
    axis, the stationary pair (a, b) with r(a, b) = ρ)."""
    if view == "detrended":
        dx, dy = np.diff(x), np.diff(y)
        return (dx, dy), rank_pearson, (stats.rankdata(dx), stats.rankdata(dy))
    return (x, y, z), partial_from_ranks, (rank_residuals(x, z), rank_residuals(y, z))


def _why_undefined(view: str, series: tuple, pair: tuple, cond: str) -> str:
    """Why a time-aware view's ρ is undefined for these data, or '' when it is defined."""
    what = "first differences of the " if view == "detrended" else ""
    for name, s in (("feature", series[0]), ("target", series[1])):
        if np.ptp(s) == 0:
            return f"constant {what}{name}: ρ undefined"
    if view == "detrended":
        return ""
    if np.ptp(series[2]) == 0:
        return f"constant conditioning variable {cond}: ρ undefined"
    for name, e in (("feature", pair[0]), ("target", pair[1])):
        if not e.any():
            return f"{name} is a monotone function of {cond}: nothing left after conditioning"
    return ""


def _nan(n: int, note: str) -> dict:
    nan = np.nan
    return dict(rho=nan, ci_low=nan, ci_high=nan, p=nan, n=n, block_length=nan, note=note)


def _percentiles(boot: np.ndarray, confidence: float) -> tuple[float, float, str]:
    """Percentile interval of the finite replicates, and a note counting undefined ones; NaN when
    more than 1 − confidence of them are undefined (the defined ones are then a biased subset)."""
    finite = boot[np.isfinite(boot)]
    left = boot.size - finite.size
    note = f"{left} of {boot.size} resamples had undefined ρ" if left else ""
    if left > (1 - confidence) * boot.size:
        return np.nan, np.nan, f"{note}: more than {1 - confidence:.0%}, CI not reported"
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high), note


def _time_aware(
    view: str,
    x: np.ndarray,
    y: np.ndarray,
    z: np.ndarray | None,
    cond: str,
    n_resamples: int,
    seed: int,
    confidence: float,
    alpha: float,
) -> dict:
    """ρ of a time-aware view with its block-bootstrap CI and circular-shift p (finite data)."""
    series, statistic, pair = _view_data(view, x, y, z)
    m = series[0].size
    if m < 3:
        return _nan(m, f"only {m} points in the {view} view: ρ undefined")
    why = _why_undefined(view, series, pair, cond)
    if why:
        return _nan(m, why)
    length = block_length(*pair)
    idx = block_indices(m, length, n_resamples, seed)
    boot = statistic(*(resampled_ranks(s, idx) for s in series))
    low, high, note = _percentiles(boot, confidence)
    notes = [note] if note else []
    if 1 / m >= alpha:
        notes.append(f"shift null has {m} points: smallest attainable p = 1/{m} ≥ {alpha}")
    return dict(
        rho=float(statistic(*(stats.rankdata(s) for s in series))),
        ci_low=low,
        ci_high=high,
        p=shift_pvalue(*pair),
        n=m,
        block_length=length,
        note="; ".join(notes),
    )


def view_association(
    x,
    y,
    view: str,
    z=None,
    *,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    confidence: float = CONFIDENCE,
    alpha: float = ALPHA,
    cond: str = "z",
) -> dict:
    """ρ, CI, p, n, block_length, ci_method, p_method and note of one view of (x, y) over a run's
    checkpoints in step order; ``z`` is the conditioning series of a partial view (named ``cond``).
    Checkpoints with a non-finite value are dropped (before differencing) and counted in
    ``note``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    methods = {"ci_method": CI_METHOD[view], "p_method": P_METHOD[view]}
    if (z is None) != (view not in CONDITION):
        raise ValueError(f"view {view!r} needs {'a' if view in CONDITION else 'no'} conditioning z")
    if view == "raw":
        res = spearman_ci(x, y, n_resamples, confidence, seed)
        return {**res, "block_length": np.nan, **methods}
    cols = [x, y] if z is None else [x, y, np.asarray(z, float)]
    keep = np.logical_and.reduce([np.isfinite(c) for c in cols])
    cols = [c[keep] for c in cols] + [None] * (3 - len(cols))
    res = _time_aware(view, *cols, cond, n_resamples, seed, confidence, alpha)
    if cols[0].size < MIN_RUN:  # the run rule for small n (stats.MIN_RUN): ρ, and no claim
        res |= {"ci_low": np.nan, "ci_high": np.nan, "p": np.nan}
        res["note"] = "; ".join(
            filter(None, [res["note"], TOO_SHORT.format(n=cols[0].size) + "; no p or interval"])
        )
    if not keep.all():
        dropped = f"{int((~keep).sum())} non-finite checkpoints dropped"
        res["note"] = "; ".join(filter(None, [dropped, res["note"]]))
    return {**res, **methods}


def run_cell(run: pd.DataFrame, feature: str, target: str, view: str, **kw) -> dict:
    """One (feature, target, view) of a run; a feature that is the conditioning variable is NaN."""
    cond = CONDITION.get(view)
    if feature == cond:
        n = int(run[feature].notna().sum())
        res = _nan(n, f"feature is the conditioning variable {cond}: ρ undefined")
        return {**res, "ci_method": CI_METHOD[view], "p_method": P_METHOD[view]}
    z = run[cond] if cond else None
    return view_association(run[feature], run[target], view, z, cond=cond or "", **kw)
