"""Power-law scaling of final-checkpoint values with parameter count N: f(N) = a·N^b + c."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import OptimizeWarning, curve_fit

MAXFEV = 20_000
B_BOUND = 5.0  # |b| ≤ 5 inside the fit; an exponent that runs to the bound is not identified
MIN_POINTS = 4  # three parameters need at least one residual degree of freedom
SCALING_COLUMNS = [
    "feature", "n_models", "a", "b", "c", "r2", "converged", "message",
    "loglog_slope", "loglog_intercept", "loglog_r2", "spearman_rho", "spearman_p",
]  # fmt: skip


def size_power_law(n: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    """Scaling with model size: f(N) = a·N^b + c (b of either sign)."""
    return a * np.power(n, b) + c


def loglog_line(n: np.ndarray, y: np.ndarray) -> dict[str, float | str]:
    """Least-squares line log y = intercept + slope·log N (scipy.stats.linregress); needs every y > 0."""
    out = {"loglog_slope": np.nan, "loglog_intercept": np.nan, "loglog_r2": np.nan, "message": ""}
    if n.size < 2 or np.ptp(n) == 0:
        return {**out, "message": "log-log line needs two distinct N"}
    if np.any(y <= 0):
        return {**out, "message": "log-log line needs y > 0 (some final values are ≤ 0)"}
    res = stats.linregress(np.log(n), np.log(y))
    return {**out, "loglog_slope": res.slope, "loglog_intercept": res.intercept,
            "loglog_r2": res.rvalue**2}  # fmt: skip


def spearman_with_n(n: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Spearman ρ and p of y against N (NaN for fewer than 3 points or constant y)."""
    if n.size < 3 or np.ptp(y) == 0:
        return {"spearman_rho": np.nan, "spearman_p": np.nan}
    res = stats.spearmanr(n, y)
    return {"spearman_rho": float(res.statistic), "spearman_p": float(res.pvalue)}


def initial_guess(u: np.ndarray, y: np.ndarray, slope: float) -> tuple[float, float, float]:
    """(a, b, c) with least squared error over candidate b (a grid and the log-log slope).

    For a fixed b the model is linear in (a, c), so each candidate is solved exactly by lstsq.
    """
    candidates = np.linspace(-3, 3, 121)
    if np.isfinite(slope) and abs(slope) < B_BOUND:
        candidates = np.r_[slope, candidates]
    best = (np.inf, 1.0, -0.5, float(y.mean()))
    for b in candidates[np.abs(candidates) > 1e-9]:
        X = np.column_stack([u**b, np.ones_like(u)])
        (a, c), *_ = np.linalg.lstsq(X, y, rcond=None)
        sse = float(((X @ (a, c) - y) ** 2).sum())
        if sse < best[0]:
            best = (sse, a, b, c)
    return best[1:]


def _failed(message: str) -> dict[str, float | bool | str]:
    return {"a": np.nan, "b": np.nan, "c": np.nan, "r2": np.nan, "converged": False,
            "message": message}  # fmt: skip


def fit_offset_power_law(n: np.ndarray, y: np.ndarray, slope: float) -> dict:
    """a·N^b + c by curve_fit (trf, |b| ≤ B_BOUND, MAXFEV); failures are returned, not raised.

    N is divided by its geometric mean s inside the fit for conditioning; a is reported for raw N
    (a_raw = a_s·s^(−b)). R² = 1 − SS_res/SS_tot.
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
                size_power_law, u, y, p0=initial_guess(u, y, slope), bounds=bounds,
                max_nfev=MAXFEV, full_output=True, ftol=1e-12, xtol=1e-12, gtol=1e-12,
            )  # fmt: skip
    except (RuntimeError, ValueError) as err:
        return _failed(f"did not converge: {err}")
    if ier not in (1, 2, 3, 4) or not np.all(np.isfinite([a, b, c])):
        return _failed(f"did not converge: {msg}")
    if np.isclose(abs(b), B_BOUND):
        return _failed(f"exponent ran to the bound |b| = {B_BOUND}: not identified")
    resid = y - size_power_law(u, a, b, c)
    r2 = 1 - (resid**2).sum() / ((y - y.mean()) ** 2).sum()
    return {"a": a * scale ** (-b), "b": b, "c": c, "r2": r2, "converged": True, "message": ""}


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
    return {"n_models": int(n.size), **fit, "message": "; ".join(notes), **line,
            **spearman_with_n(n, y)}  # fmt: skip


def final_values(df: pd.DataFrame) -> pd.DataFrame:
    """Values at each model's final step, averaged over the seeds that reached it; ordered by N."""
    last = df[df["step"] == df.groupby("model")["step"].transform("max")]
    return last.groupby("model").mean(numeric_only=True).sort_values("n_params")


def scaling_table(
    df: pd.DataFrame, features: Sequence[str] = ("val_loss", "h0_total", "np_mean")
) -> pd.DataFrame:
    """One row per feature: fit_power_law of its final value (mean over seeds) against N.

    Columns: SCALING_COLUMNS.
    """
    final = final_values(df)
    rows = [{"feature": f, **fit_power_law(final["n_params"], final[f])} for f in features]
    return pd.DataFrame(rows)[SCALING_COLUMNS]
