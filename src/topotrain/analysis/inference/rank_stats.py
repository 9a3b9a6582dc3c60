"""Rank statistics along the last axis (vectorised over rows): partial Spearman ρ given a
covariate, Spearman ρ of first differences, and the pieces they share."""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy import stats

from topotrain.analysis.inference.exact_tests import pearson_rows
from topotrain.analysis.inference.seed_contrast import RESIDUAL_TOL
from topotrain.analysis.inference.stats import spearman_rows


def _centred_ranks(v: np.ndarray) -> np.ndarray:
    return _centred(stats.rankdata(v, axis=-1))


def _centred(r: np.ndarray) -> np.ndarray:
    return r - r.mean(axis=-1, keepdims=True)


def _residuals(rx: np.ndarray, rz: np.ndarray) -> np.ndarray:
    """Residuals of centred ranks rx on centred ranks rz: e = rx − β·rz, β = Σ rx·rz / Σ rz²;
    numerically-zero e (Σe² ≤ RESIDUAL_TOL·Σrx²) become exactly 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        beta = (rx * rz).sum(axis=-1, keepdims=True) / (rz * rz).sum(axis=-1, keepdims=True)
    e = rx - beta * rz
    ss_e, ss_x = (e * e).sum(axis=-1, keepdims=True), (rx * rx).sum(axis=-1, keepdims=True)
    return np.where(ss_e <= RESIDUAL_TOL * ss_x, 0.0, e)


def rank_residuals(x: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Residuals along the last axis of rank(x) regressed on rank(z) with an intercept."""
    return _residuals(_centred_ranks(x), _centred_ranks(z))


def partial_spearman(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Partial Spearman ρ(x, y | z) along the last axis: Pearson r of rank_residuals(x, z) and
    rank_residuals(y, z); NaN where nothing is left of x or y after conditioning."""
    rank = partial(stats.rankdata, axis=-1)
    return partial_from_ranks(rank(x), rank(y), rank(z))


def partial_from_ranks(rx: np.ndarray, ry: np.ndarray, rz: np.ndarray) -> np.ndarray:
    """``partial_spearman`` from the three series' average ranks along the last axis."""
    rz = _centred(rz)
    return pearson_rows(_residuals(_centred(rx), rz), _residuals(_centred(ry), rz))


def detrended_spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman ρ of first differences (Δx_t, Δy_t) along the last axis."""
    return spearman_rows(np.diff(x, axis=-1), np.diff(y, axis=-1))
