"""Power-law scaling of final-checkpoint values with parameter count N: f(N) = a·N^b + c.

Small-n honesty (the study has five sizes): Spearman p by exact permutation, adjusted R², and a
95% interval on each exponent — the F-profile interval of b for the offset fit and the t-interval of
the log-log slope (the same F-profile construction, exact for a line under Gaussian errors).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import OptimizeWarning, brentq, curve_fit

from topotrain.analysis.inference.stats import spearman_exact
from topotrain.config import CONFIDENCE

MAXFEV = 20_000
B_BOUND = 5.0  # |b| ≤ 5 inside the fit; an exponent that runs to the bound is not identified
MIN_POINTS = 4  # three parameters need at least one residual degree of freedom
CI_LEVEL = CONFIDENCE  # level of the exponent intervals
PROFILE_GRID = 2001  # grid over [−B_BOUND, B_BOUND] on which the profile of b is scanned
K_OFFSET, K_LINE = 2, 1  # fitted parameters besides the intercept (c; the log-log intercept)
LOGLOG_KEYS = (
    "loglog_slope",
    "loglog_slope_ci_low",
    "loglog_slope_ci_high",
    "loglog_intercept",
    "loglog_r2",
    "loglog_r2_adj",
)  # loglog_line's values
SCALING_COLUMNS = [
    "feature",
    "n_models",
    "a",
    "b",
    "b_ci_low",
    "b_ci_high",
    "c",
    "r2",
    "r2_adj",
    "converged",
    "message",
    *LOGLOG_KEYS,
    "spearman_rho",
    "spearman_p_exact",
    "spearman_p_asymptotic",
]


def size_power_law(n: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    """Scaling with model size: f(N) = a·N^b + c (b of either sign)."""
    return a * np.power(n, b) + c


def adjusted_r2(r2: float, n: int, k: int) -> float:
    """1 − (1 − R²)(n − 1)/(n − k − 1), k fitted parameters besides the intercept;
    NaN if n − k − 1 ≤ 0."""
    if n - k - 1 <= 0 or not np.isfinite(r2):
        return float("nan")
    return float(1 - (1 - r2) * (n - 1) / (n - k - 1))


def spearman_with_n(n: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Spearman ρ of y against N with the exact permutation p and the large-sample (t) p."""
    if n.size < 3 or np.ptp(y) == 0:
        return {"spearman_rho": np.nan, "spearman_p_exact": np.nan, "spearman_p_asymptotic": np.nan}
    rho, p_exact = spearman_exact(n, y)
    return {
        "spearman_rho": rho,
        "spearman_p_exact": p_exact,
        "spearman_p_asymptotic": float(stats.spearmanr(n, y).pvalue),
    }


def loglog_line(n: np.ndarray, y: np.ndarray) -> dict[str, float | str]:
    """Least-squares line log y = intercept + slope·log N
    (linregress) and a t-interval on the slope.

    The interval slope ± t(1−α/2; n−2)·se is the F-profile interval of a line (exact under Gaussian
    errors in log y); NaN below three points. Needs every y > 0.
    """
    out = dict.fromkeys(LOGLOG_KEYS, np.nan) | {"message": ""}
    if n.size < 2 or np.ptp(n) == 0:
        return {**out, "message": "log-log line needs two distinct N"}
    if np.any(y <= 0):
        return {**out, "message": "log-log line needs y > 0 (some final values are ≤ 0)"}
    res = stats.linregress(np.log(n), np.log(y))
    r2 = res.rvalue**2
    out |= {
        "loglog_slope": res.slope,
        "loglog_intercept": res.intercept,
        "loglog_r2": r2,
        "loglog_r2_adj": adjusted_r2(r2, n.size, K_LINE),
    }
    if n.size < 3:
        return {**out, "message": "2 points: no slope interval or adjusted R² (n − k − 1 = 0)"}
    half = stats.t.ppf(0.5 + CI_LEVEL / 2, n.size - 2) * res.stderr
    return out | {"loglog_slope_ci_low": res.slope - half, "loglog_slope_ci_high": res.slope + half}


def initial_guess(u: np.ndarray, y: np.ndarray, slope: float) -> tuple[float, float, float]:
    """(a, b, c) with least squared error over candidate b (a grid and the log-log slope).

    For a fixed b the model is linear in (a, c): b by profile_sse, then (a, c) by lstsq.
    """
    candidates = np.linspace(-3, 3, 121)
    if np.isfinite(slope) and abs(slope) < B_BOUND:
        candidates = np.r_[slope, candidates]
    candidates = candidates[np.abs(candidates) > 1e-9]
    b = float(candidates[np.argmin(profile_sse(u, y, candidates))])
    (a, c), *_ = np.linalg.lstsq(np.column_stack([u**b, np.ones_like(u)]), y, rcond=None)
    return float(a), b, float(c)


def profile_sse(u: np.ndarray, y: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min over (a, c) of Σ(y − a·u^b − c)² for each b, via the basis (u^b − 1)/b (ln u at b = 0).

    The basis spans the same model as u^b with a constant and stays well conditioned as b → 0.
    """
    b = np.atleast_1d(np.asarray(b, float))[:, None]
    log_u = np.log(u)[None, :]
    safe = np.where(b == 0, 1.0, b)
    z = np.where(b == 0, log_u, np.expm1(safe * log_u) / safe)
    z = z - z.mean(axis=1, keepdims=True)
    yc = y - y.mean()
    szz = (z**2).sum(axis=1)
    beta = np.divide(z @ yc, szz, out=np.zeros_like(szz), where=szz > 0)
    return ((yc[None, :] - beta[:, None] * z) ** 2).sum(axis=1)


def exponent_profile_ci(u: np.ndarray, y: np.ndarray, b_hat: float) -> tuple[float, float, str]:
    """F-profile interval {b : (SSE(b) − SSE_min)/(SSE_min/(n−3)) ≤ F(CI_LEVEL; 1, n−3)},
    as its hull.

    Scanned on PROFILE_GRID points of [−B_BOUND, B_BOUND] plus b̂, ends refined by brentq; an end
    that reaches the bound is ±inf (the data do not bound b there). Needs n ≥ 4.
    """
    dof = u.size - 3
    grid = np.union1d(np.linspace(-B_BOUND, B_BOUND, PROFILE_GRID), [b_hat])
    sse = profile_sse(u, y, grid)
    limit = sse.min() * (1 + stats.f.ppf(CI_LEVEL, 1, dof) / dof)
    inside = np.flatnonzero(sse <= limit)

    def excess(b: float) -> float:
        return float(profile_sse(u, y, b)[0] - limit)

    ends, note = [], ""
    for idx, step in ((inside[0], -1), (inside[-1], 1)):
        if not 0 <= idx + step < grid.size:
            ends.append(step * np.inf)
            note = f"b interval reaches the search bound |b| = {B_BOUND:g} (reported as ±inf)"
            continue
        ends.append(brentq(excess, *sorted((grid[idx], grid[idx + step])), xtol=1e-12))
    return ends[0], ends[1], note


def _failed(message: str) -> dict[str, float | bool | str]:
    return {
        "a": np.nan,
        "b": np.nan,
        "b_ci_low": np.nan,
        "b_ci_high": np.nan,
        "c": np.nan,
        "r2": np.nan,
        "r2_adj": np.nan,
        "converged": False,
        "message": message,
    }


def fit_offset_power_law(n: np.ndarray, y: np.ndarray, slope: float) -> dict:
    """a·N^b + c by curve_fit (trf, |b| ≤ B_BOUND, MAXFEV); failures are returned, not raised.

    N is divided by its geometric mean s inside the fit for conditioning; a is reported for raw N
    (a_raw = a_s·s^(−b)). R² = 1 − SS_res/SS_tot; r2_adj with k = 2 (a, b; c is the intercept):
    with n = 5, r2_adj = 1 − 2(1 − R²). b_ci_low/high: exponent_profile_ci.
    """
    if n.size < MIN_POINTS:
        return _failed(f"{n.size} points: need at least {MIN_POINTS} to fit a, b and c")
    if np.ptp(y) == 0:
        return _failed("constant final values: exponent undefined")
    scale = float(np.exp(np.log(n).mean()))
    u = n / scale
    bounds = ([-np.inf, -B_BOUND, -np.inf], [np.inf, B_BOUND, np.inf])
    try:
        with warnings.catch_warnings():  # an exact fit has no covariance: not a failure
            warnings.simplefilter("ignore", OptimizeWarning)
            (a, b, c), _, _, msg, ier = curve_fit(
                size_power_law,
                u,
                y,
                p0=initial_guess(u, y, slope),
                bounds=bounds,
                max_nfev=MAXFEV,
                full_output=True,
                ftol=1e-12,
                xtol=1e-12,
                gtol=1e-12,
            )
    except (RuntimeError, ValueError) as err:
        return _failed(f"did not converge: {err}")
    if ier not in (1, 2, 3, 4) or not np.all(np.isfinite([a, b, c])):
        return _failed(f"did not converge: {msg}")
    if np.isclose(abs(b), B_BOUND):
        return _failed(f"exponent ran to the bound |b| = {B_BOUND}: not identified")
    resid = y - size_power_law(u, a, b, c)
    r2 = 1 - (resid**2).sum() / ((y - y.mean()) ** 2).sum()
    lo, hi, note = exponent_profile_ci(u, y, b)
    return {
        "a": a * scale ** (-b),
        "b": b,
        "b_ci_low": lo,
        "b_ci_high": hi,
        "c": c,
        "r2": r2,
        "r2_adj": adjusted_r2(r2, n.size, K_OFFSET),
        "converged": True,
        "message": note,
    }


def fit_power_law(n, y) -> dict[str, float | bool | str | int]:
    """f(N) = a·N^b + c by curve_fit, the log-log line log y = intercept + slope·log N, and ρ(N, y).

    Non-finite points are dropped. A fit that fails is reported (converged False, NaN a, b, c, r2,
    and a message), never raised; messages from the fit and the log-log line are joined by '; '.
    """
    n, y = np.asarray(n, float), np.asarray(y, float)
    keep = np.isfinite(n) & np.isfinite(y) & (n > 0)
    n, y = n[keep], y[keep]
    line = loglog_line(n, y)
    fit = fit_offset_power_law(n, y, line["loglog_slope"])
    notes = [m for m in (fit["message"], line.pop("message")) if m]
    if not keep.all():
        notes.append(f"{int((~keep).sum())} non-finite points dropped")
    return {
        "n_models": int(n.size),
        **fit,
        "message": "; ".join(notes),
        **line,
        **spearman_with_n(n, y),
    }


def final_values(df: pd.DataFrame) -> pd.DataFrame:
    """Values at each model's final step, averaged over the seeds that reached it; ordered by N."""
    last = df[df["step"] == df.groupby("model")["step"].transform("max")]
    return last.groupby("model").mean(numeric_only=True).sort_values("n_params")


def scaling_table(
    df: pd.DataFrame,
    features: Sequence[str] = ("val_loss", "h0_total", "h0_mean_bar", "np_mean"),
) -> pd.DataFrame:
    """One row per feature: fit_power_law of its final value (mean over seeds) against N.

    A requested feature missing from ``df`` gets a row with n_models 0, NaN values and a message.
    Columns: SCALING_COLUMNS.
    """
    final = final_values(df)
    rows = []
    for f in features:
        if f not in final:
            rows.append(
                {"feature": f, "n_models": 0, **_failed(f"{f} is not in the feature table")}
            )
            continue
        rows.append({"feature": f, **fit_power_law(final["n_params"], final[f])})
    return pd.DataFrame(rows).reindex(columns=SCALING_COLUMNS)
