"""Predict each run's final validation loss from its early checkpoints (frac ≤ f).

Methods, each returning (predicted, fallback, note) per run and cutoff fraction f:
- loss_only: extrapolate a fitted power law L(t) = a·t^(−b) + c to the final step T;
- topology_only: current loss plus (loss-per-NP sensitivity) × (NP change still to come);
- combined: the mean of the two;
- learned: ridge regression on cutoff features, scored by leave-one-model-out cross-validation;
- learned_forward: the same ridge trained only on smaller models (forward chaining by N);
- learned[+vectors]: learned with six summaries of the vectorised diagrams at the cutoff added
  (VECTOR_FEATURES); its placebos add six other run-varying columns instead (LEARNED_EXTRAS):
  learned[+step] the loss curve's own shape, learned[+scale] the L2 and gradient norms;
- placebos topology_only[p], combined[p]: NP replaced by a pacing series in PLACEBOS, put on NP's
  scale over the window (pacing_series): the clock ln(1 + t/s), or the mean weight L2 norm;
- baselines last_loss (the last observed val_loss) and mean_loss_only_last (mean of the two).
Times t are optimizer steps; losses are validation nats/char; NP is the table's ``np_mean``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.optimize import OptimizeWarning, curve_fit, minimize_scalar

from topotrain.analysis.prediction.learned import (
    LEARNED_EXTRAS,
    RIDGE_ALPHA,
    clip_at_zero,
    cutoff_features,
    last_finite,
    learned_rows,
    ols_slope,
)
from topotrain.analysis.prediction.learned import (
    VECTOR_FEATURES as VECTOR_FEATURES,  # re-exported: the diagrams' summaries
)
from topotrain.analysis.prediction.scaling import profile_sse
from topotrain.config import DEFAULTS

PACE = "np_mean"  # the topological pacing series of topology_only and combined
CLOCK = "step"  # the clock placebo: a function of the step alone (clock_pace)
PLACEBOS = (CLOCK, "l2_norm_mean")  # non-topological pacing series in NP's place
TOPOLOGY_METHODS = ("topology_only", "combined")
METHODS = (
    "loss_only",
    "topology_only",
    "combined",
    "learned",
    "learned_forward",
    *(f"{m}[{p}]" for p in PLACEBOS for m in TOPOLOGY_METHODS),
    "last_loss",
    "mean_loss_only_last",
    *LEARNED_EXTRAS,
)
FRACTIONS = tuple(DEFAULTS["analysis"]["prediction_fractions"])  # the schema's
MAXFEV = 10_000  # curve_fit's budget of function evaluations (read at call time)
B_MAX = 10.0  # upper bound of the loss power-law exponent b
GAMMA_BOUNDS = (-1.0, 4.0)  # NP rate r(t) ∝ t^(−γ−1): from constant rate (γ=−1) to fast decay
GAMMA_GRID = 101  # coarse grid over GAMMA_BOUNDS before the bounded Brent refinement


class Prediction(NamedTuple):
    """One method's prediction for one run: value, whether a fallback rule made it, and why."""

    value: float
    fallback: bool
    note: str


def observed_window(run: pd.DataFrame, fraction: float) -> pd.DataFrame:
    """Rows of one run (sorted by step) with frac ≤ fraction, with a 1e-9 float tolerance."""
    return run[run["frac"] <= fraction + 1e-9]


def decay_power_law(u: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    """Loss decay over training time: L(u) = a·u^(−b) + c (b > 0)."""
    return a * u ** (-b) + c


def predict_loss_only(t: np.ndarray, loss: np.ndarray, total: float) -> Prediction:
    """Fit L(t) = a·t^(−b) + c (a > 0, 0 < b ≤ 10, c ≥ 0) on the t > 0 points; return L(T).

    t ascending; fitted in u = t/t0 (t0 = last observed step), the same family, for conditioning.
    Fallback (flagged): the last observed finite loss.
    """
    keep = (t > 0) & np.isfinite(loss)
    tk, yk = t[keep], loss[keep]
    if tk.size < 3:
        return Prediction(last_finite(loss), True, f"only {tk.size} points with t > 0; last loss")
    u, c0 = tk / tk[-1], 0.5 * float(yk.min())
    p0 = (max(float(yk[-1]) - c0, 1e-6), 0.5, c0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OptimizeWarning)
            (a, b, c), _ = curve_fit(
                decay_power_law,
                u,
                yk,
                p0=p0,
                bounds=([1e-12, 1e-6, 0.0], [np.inf, B_MAX, np.inf]),
                maxfev=MAXFEV,
                ftol=1e-14,
                xtol=1e-14,
                gtol=1e-14,
            )
    except (RuntimeError, ValueError) as err:
        return Prediction(float(yk[-1]), True, f"power-law fit failed ({err}); last loss")
    value = float(decay_power_law(total / tk[-1], a, b, c))
    if not np.isfinite(value):
        return Prediction(float(yk[-1]), True, "non-finite extrapolation; last loss")
    return Prediction(value, False, f"a·t^-b+c with b={b:.3g}, c={c:.4g}")


def rate_integral(u: np.ndarray, gamma: float) -> np.ndarray:
    """g_γ(u) = ∫_1^u v^(−γ−1) dv = (1 − u^(−γ))/γ, and ln u at γ = 0."""
    log_u = np.log(u)
    if gamma == 0.0:
        return log_u
    return -np.expm1(-gamma * log_u) / gamma


def _np_fit(u: np.ndarray, n: np.ndarray, gamma: float) -> tuple[float, np.ndarray]:
    """Least squares of N on [1, g_γ(u)]: (residual sum of squares, (n0, s))."""
    design = np.column_stack([np.ones_like(u), rate_integral(u, gamma)])
    coef = np.linalg.lstsq(design, n, rcond=None)[0]
    return float(np.sum((design @ coef - n) ** 2)), coef


def fit_np_trajectory(u: np.ndarray, n: np.ndarray) -> tuple[float, float, float]:
    """Fit N(u) = n0 + s·g_γ(u) (u = t/t0), i.e. dN/du = s·u^(−γ−1); returns (γ, n0, s).

    Variable projection: (n0, s) by linear least squares for each γ; γ by a grid over GAMMA_BOUNDS
    refined with bounded Brent. n0 is the fitted NP at t0, s/t0 the fitted NP rate at t0.
    The grid is scanned at once by scaling.profile_sse: g_γ is its basis (u^b − 1)/b at b = −γ.
    """
    grid = np.linspace(*GAMMA_BOUNDS, GAMMA_GRID)
    i = int(np.argmin(profile_sse(u, n, -grid)))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(
        lambda g: _np_fit(u, n, g)[0], bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}
    )
    gamma = float(res.x) if res.fun <= _np_fit(u, n, grid[i])[0] else float(grid[i])
    n0, s = _np_fit(u, n, gamma)[1]
    return gamma, float(n0), float(s)


def predict_topology_only(
    t: np.ndarray, pace: np.ndarray, loss: np.ndarray, total: float
) -> Prediction:
    """L̂ = L(t0) + k·ΔN, ΔN = r(t0)·t0·(1 − (t0/T)^γ)/γ (t0·r·ln(T/t0) at γ = 0), clipped ≥ 0.

    N is the pacing series ``pace`` (NP; a placebo from pacing_series in its place).
    Its rate r(t) = r(t0)·(t/t0)^(−γ−1) is fitted on the t > 0 window (fit_np_trajectory); k = OLS
    slope of val_loss on N over the window's second half (t ≥ t0/2); t ascending.
    Fallback (flagged; < 4 points or constant N): the last observed finite loss.
    """
    keep = (t > 0) & np.isfinite(pace) & np.isfinite(loss)
    tk, nk, yk = t[keep], pace[keep], loss[keep]
    fallback = last_finite(loss)
    if tk.size < 4:
        return Prediction(fallback, True, f"only {tk.size} points with t > 0; last loss")
    t0 = float(tk[-1])
    gamma, _, s = fit_np_trajectory(tk / t0, nk)
    delta_np = s * float(rate_integral(np.array([total / t0]), gamma)[0])
    recent = tk >= t0 / 2
    k = ols_slope(nk[recent], yk[recent])
    value = float(yk[-1]) + k * delta_np
    if not np.isfinite(value):
        return Prediction(fallback, True, "pace constant over the recent window; last loss")
    value, note = clip_at_zero(value, f"gamma={gamma:.3g}, k={k:.4g}, dNP={delta_np:.4g}")
    return Prediction(value, False, note)


def combine(a: Prediction, b: Prediction, note: str = "mean of loss and topology") -> Prediction:
    """L̂ = (L̂_a + L̂_b)/2 (loss-only and topology-only by default);
    a fallback if either part is one."""
    return Prediction((a.value + b.value) / 2, a.fallback or b.fallback, note)


def method_name(method: str, pace: str) -> str:
    """'topology_only' for NP, 'topology_only[step]' for a placebo pacing series."""
    return method if pace == PACE else f"{method}[{pace}]"


def clock_pace(t: np.ndarray) -> np.ndarray:
    """The clock placebo c(t) = ln(1 + t/s), s = the first positive step in ``t``: a function of the
    step alone, decelerating (rate 1/(s + t), ≈ t^(−1) like NP's fitted rate at γ = 0 for t ≫ s)."""
    positive = t[t > 0]
    return np.log1p(t / (float(positive.min()) if positive.size else 1.0))


def on_scale(x: np.ndarray, target: np.ndarray | None, t: np.ndarray) -> np.ndarray:
    """x mapped affinely onto target's scale over the t > 0 rows: m_N + s_N·(x − m_x)/s_x.

    m, s: mean and population SD of each series' finite entries at t > 0. x is returned as is where
    there is no target or either SD is 0 or undefined. predict_topology_only is invariant to this
    map (k scales by 1/b, ΔN by b): it puts every pace in NP's units, not in NP's information.
    """
    if target is None:
        return x
    xs, ns = x[(t > 0) & np.isfinite(x)], target[(t > 0) & np.isfinite(target)]
    if xs.size < 2 or ns.size < 2 or not (xs.std() > 0 and ns.std() > 0):
        return x
    return ns.mean() + ns.std() * (x - xs.mean()) / xs.std()


def pacing_series(window: pd.DataFrame) -> dict[str, np.ndarray | None]:
    """NP and each placebo over the window (None where its column is absent), placebos on_scale.

    The clock is clock_pace(step); the other placebos are their feature-table columns.
    """
    t = window["step"].to_numpy(float)
    series = {p: window[p].to_numpy(float) if p in window else None for p in (PACE, *PLACEBOS)}
    series[CLOCK] = clock_pace(t)
    for pace in PLACEBOS:
        if series[pace] is not None:
            series[pace] = on_scale(series[pace], series[PACE], t)
    return series


def paced_predictions(
    window: pd.DataFrame, loss_only: Prediction, total: float
) -> dict[str, Prediction]:
    """topology_only and combined with NP and with each placebo pace
    (NaN if its column is absent)."""
    t, loss = window["step"].to_numpy(float), window["val_loss"].to_numpy(float)
    out = {}
    for pace, series in pacing_series(window).items():
        if series is not None:
            topo = predict_topology_only(t, series, loss, total)
        else:
            topo = Prediction(float("nan"), False, f"no {pace} column in the feature table")
        out[method_name("topology_only", pace)] = topo
        out[method_name("combined", pace)] = combine(loss_only, topo)
    return out


def _run_rows(run: pd.DataFrame, fraction: float) -> tuple[list[dict], dict, dict[str, float]]:
    """The per-run methods' rows of one run at one fraction, its base row and its features."""
    final = run.iloc[-1]
    window = observed_window(run, fraction)
    base = {
        "model": final["model"],
        "seed": int(final["seed"]),
        "n_params": int(final["n_params"]),
        "fraction": float(fraction),
        "actual": float(final["val_loss"]),
    }
    t, total = window["step"].to_numpy(float), float(final["step"])
    loss = window["val_loss"].to_numpy(float)
    lo = predict_loss_only(t, loss, total)
    last = Prediction(last_finite(loss), False, "last observed val_loss")
    preds = {"loss_only": lo, **paced_predictions(window, lo, total), "last_loss": last}
    preds["mean_loss_only_last"] = combine(lo, last, "mean of loss-only and last loss")
    rows = [{**base, "method": m, **p._asdict()} for m, p in preds.items()]
    for row in rows:
        row["predicted"] = row.pop("value")
    return rows, base, cutoff_features(window, lo.value, base["n_params"])


def predict_final_loss(
    df: pd.DataFrame, fractions: Iterable[float] = FRACTIONS, alpha: float = RIDGE_ALPHA
) -> pd.DataFrame:
    """One row per (model, seed, fraction, method): predicted vs actual final val_loss.

    Columns: model, seed, n_params, fraction, method, predicted, actual,
    abs_error = |predicted − actual|, fallback, note. A run's final step T is its largest step;
    its window is the rows with frac ≤ f. Fraction-major order, methods in METHODS order.
    """
    runs = [run.sort_values("step") for _, run in df.groupby(["model", "seed"], sort=True)]
    rows = []
    for fraction in fractions:
        base_rows, feats = [], []
        for run in runs:
            run_rows, base, feat = _run_rows(run, fraction)
            rows += run_rows
            base_rows.append(base)
            feats.append(feat)
        rows += learned_rows(base_rows, feats, df.columns, alpha)
    out = pd.DataFrame(rows)
    out["abs_error"] = (out["predicted"] - out["actual"]).abs()
    out["method"] = pd.Categorical(out["method"], categories=METHODS, ordered=True)
    out = out.sort_values(["fraction", "method", "n_params", "model", "seed"], kind="stable")
    cols = ["model", "seed", "n_params", "fraction", "method", "predicted", "actual", "abs_error"]
    out["method"] = out["method"].astype(str)
    return out[cols + ["fallback", "note"]].reset_index(drop=True)
