"""Predict each run's final validation loss from its early checkpoints (frac ≤ f).

Four methods, each returning (predicted, fallback, note) per run and cutoff fraction f:
- loss_only: extrapolate a fitted power law L(t) = a·t^(−b) + c to the final step T;
- topology_only: current loss plus (loss-per-NP sensitivity) × (NP change still to come);
- combined: the mean of the two;
- learned: ridge regression on cutoff features, scored by leave-one-model-out cross-validation.
Times t are optimizer steps; losses are nats/char; NP is the table's ``np_mean``.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.optimize import OptimizeWarning, curve_fit, minimize_scalar
from scipy.stats import wilcoxon
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

METHODS = ("loss_only", "topology_only", "combined", "learned")
FRACTIONS = (0.2, 0.3, 0.5)
MAXFEV = 10_000  # curve_fit's budget of function evaluations (read at call time)
B_MAX = 10.0  # upper bound of the loss power-law exponent b
GAMMA_BOUNDS = (-1.0, 4.0)  # NP rate r(t) ∝ t^(−γ−1): from constant rate (γ=−1) to fast decay
GAMMA_GRID = 101  # coarse grid over GAMMA_BOUNDS before the bounded Brent refinement
RIDGE_ALPHA = 1.0  # L2 penalty of the learned predictor, on standardised features
MIN_MODELS = 3  # the learned predictor needs at least this many models
P_LEVEL = 0.05  # significance level used for the Wilcoxon note
FEATURES = (
    "loss_at_cutoff",
    "loss_only_pred",
    "np_at_cutoff",
    "np_slope",
    "h0_at_cutoff",
    "h0_slope",
    "log_n_params",
)


class Prediction(NamedTuple):
    """One method's prediction for one run: value, whether a fallback rule made it, and why."""

    value: float
    fallback: bool
    note: str


def observed_window(run: pd.DataFrame, fraction: float) -> pd.DataFrame:
    """Rows of one run (sorted by step) with frac ≤ fraction, with a 1e-9 float tolerance."""
    return run[run["frac"] <= fraction + 1e-9]


def last_finite(values: np.ndarray) -> float:
    """The last finite entry of ``values`` (NaN if none): the fallback 'last observed loss'."""
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if finite.size else float("nan")


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
                decay_power_law, u, yk, p0=p0, bounds=([1e-12, 1e-6, 0.0], [np.inf, B_MAX, np.inf]),
                maxfev=MAXFEV, ftol=1e-14, xtol=1e-14, gtol=1e-14,
            )  # fmt: skip
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
    """
    grid = np.linspace(*GAMMA_BOUNDS, GAMMA_GRID)
    i = int(np.argmin([_np_fit(u, n, g)[0] for g in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(
        lambda g: _np_fit(u, n, g)[0], bounds=(lo, hi), method="bounded", options={"xatol": 1e-12}
    )
    gamma = float(res.x) if res.fun <= _np_fit(u, n, grid[i])[0] else float(grid[i])
    n0, s = _np_fit(u, n, gamma)[1]
    return gamma, float(n0), float(s)


def ols_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope Σ(x−x̄)(y−ȳ) / Σ(x−x̄)²; NaN with < 2 points or constant x."""
    if x.size < 2:
        return float("nan")
    dx = x - x.mean()
    denom = float(dx @ dx)
    if denom <= 1e-24 * max(1.0, float(np.max(np.abs(x))) ** 2):
        return float("nan")
    return float(dx @ (y - y.mean())) / denom


def predict_topology_only(
    t: np.ndarray, np_mean: np.ndarray, loss: np.ndarray, total: float
) -> Prediction:
    """L̂ = L(t0) + k·ΔN, ΔN = r(t0)·t0·(1 − (t0/T)^γ)/γ (t0·r·ln(T/t0) at γ = 0), clipped ≥ 0.

    NP rate r(t) = r(t0)·(t/t0)^(−γ−1) fitted on the t > 0 window (fit_np_trajectory); k = OLS
    slope of val_loss on np_mean over the window's second half (t ≥ t0/2); t ascending.
    Fallback (flagged; < 4 points or constant NP): the last observed finite loss.
    """
    keep = (t > 0) & np.isfinite(np_mean) & np.isfinite(loss)
    tk, nk, yk = t[keep], np_mean[keep], loss[keep]
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
        return Prediction(fallback, True, "NP constant over the recent window; last loss")
    value, note = clip_at_zero(value, f"gamma={gamma:.3g}, k={k:.4g}, dNP={delta_np:.4g}")
    return Prediction(value, False, note)


def clip_at_zero(value: float, note: str) -> tuple[float, str]:
    """(max(value, 0), note): a cross-entropy cannot be negative; the note records a clip."""
    if value < 0.0:
        return 0.0, note + "; clipped at 0"
    return value, note


def combine(a: Prediction, b: Prediction) -> Prediction:
    """L̂ = (L̂_loss + L̂_topo)/2; a fallback if either part is one."""
    return Prediction(
        (a.value + b.value) / 2, a.fallback or b.fallback, "mean of loss and topology"
    )


def cutoff_features(window: pd.DataFrame, loss_pred: float, n_params: int) -> dict[str, float]:
    """Learned-predictor features at the cutoff: last values, OLS slopes per step (t > 0), log N."""
    late = window[window["step"] > 0]
    step = late["step"].to_numpy(float)
    return {
        "loss_at_cutoff": last_finite(window["val_loss"].to_numpy(float)),
        "loss_only_pred": loss_pred,
        "np_at_cutoff": last_finite(window["np_mean"].to_numpy(float)),
        "np_slope": ols_slope(step, late["np_mean"].to_numpy(float)),
        "h0_at_cutoff": last_finite(window["h0_total"].to_numpy(float)),
        "h0_slope": ols_slope(step, late["h0_total"].to_numpy(float)),
        "log_n_params": float(np.log(n_params)),
    }


def leave_one_model_out(
    x: np.ndarray, y: np.ndarray, models: np.ndarray, alpha: float = RIDGE_ALPHA
) -> tuple[np.ndarray, list[str]]:
    """Each run's prediction from StandardScaler → Ridge(alpha) fitted on the other models' runs.

    Runs with non-finite features get NaN; non-finite features or targets are left out of training.
    """
    ok = np.isfinite(x).all(axis=1)
    pred, notes = np.full(y.shape, np.nan), [""] * y.size
    for model in np.unique(models):
        test = models == model
        train = ~test & ok & np.isfinite(y)
        note = f"ridge alpha={alpha:g}, trained on {int(train.sum())} runs of other models"
        if train.sum() < 2:
            note = f"only {int(train.sum())} usable training runs"
        else:
            pipe = make_pipeline(StandardScaler(), Ridge(alpha=alpha)).fit(x[train], y[train])
            pred[test & ok] = pipe.predict(x[test & ok])
        for i in np.flatnonzero(test):
            notes[i] = note if ok[i] else "non-finite cutoff features"
    return pred, notes


def _learned_rows(rows: list[dict], feats: list[dict], alpha: float) -> list[dict]:
    """Learned-method rows for one fraction (LOMO ridge, clipped at 0); NaN with < MIN_MODELS."""
    models = np.array([r["model"] for r in rows])
    n_models = np.unique(models).size
    if n_models < MIN_MODELS:
        note = f"learned needs >= {MIN_MODELS} models, got {n_models}"
        pred, notes = np.full(len(rows), np.nan), [note] * len(rows)
    else:
        x = np.array([[f[name] for name in FEATURES] for f in feats], dtype=float)
        y = np.array([r["actual"] for r in rows], dtype=float)
        pred, notes = leave_one_model_out(x, y, models, alpha)
    out = []
    for row, value, note in zip(rows, pred, notes, strict=True):
        value, note = clip_at_zero(float(value), note)
        out.append(row | {"method": "learned", "predicted": value, "fallback": False, "note": note})
    return out


def _run_rows(run: pd.DataFrame, fraction: float) -> tuple[list[dict], dict, dict[str, float]]:
    """Loss/topology/combined rows of one run at one fraction, its base row and its features."""
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
    loss, npm = window["val_loss"].to_numpy(float), window["np_mean"].to_numpy(float)
    lo = predict_loss_only(t, loss, total)
    topo = predict_topology_only(t, npm, loss, total)
    preds = {"loss_only": lo, "topology_only": topo, "combined": combine(lo, topo)}
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
        rows += _learned_rows(base_rows, feats, alpha)
    out = pd.DataFrame(rows)
    out["abs_error"] = (out["predicted"] - out["actual"]).abs()
    out["method"] = pd.Categorical(out["method"], categories=METHODS, ordered=True)
    out = out.sort_values(["fraction", "method", "n_params", "model", "seed"], kind="stable")
    cols = ["model", "seed", "n_params", "fraction", "method", "predicted", "actual", "abs_error"]
    out["method"] = out["method"].astype(str)
    return out[cols + ["fallback", "note"]].reset_index(drop=True)


def wilcoxon_vs_reference(err: np.ndarray, ref: np.ndarray) -> tuple[float, float, int, str]:
    """Paired two-sided Wilcoxon signed-rank of err vs ref: (statistic, p, n non-zero, note).

    Rule: with n non-zero differences the smallest exact two-sided p is 2^(1−n); if that is
    ≥ P_LEVEL (n < 6 for 0.05) the note says the test cannot reach p < P_LEVEL.
    """
    n = int(np.count_nonzero(err - ref))
    if n == 0:
        return float("nan"), float("nan"), 0, "all paired differences are zero"
    try:
        res = wilcoxon(err, ref)
    except ValueError as exc:
        return float("nan"), float("nan"), n, f"wilcoxon failed: {exc}"
    note, p_min = "", 2.0 ** (1 - n)
    if p_min >= P_LEVEL:
        note = f"with n={n} paired runs the smallest two-sided p is {p_min:.4g}: "
        note += f"cannot reach p<{P_LEVEL}"
    return float(res.statistic), float(res.pvalue), n, note


def prediction_summary(pred: pd.DataFrame) -> pd.DataFrame:
    """Per (fraction, method): mae, n, improvement_pct = 100·(MAE_loss − MAE)/MAE_loss, Wilcoxon.

    Each MAE is over the method's finite errors; the Wilcoxon test (wilcoxon_vs_reference) pairs
    each method's per-run |error| with loss_only's on the runs where both are finite.
    """
    rows = []
    for fraction, group in pred.groupby("fraction", sort=True):
        errors = group.set_index(["model", "seed", "method"])["abs_error"].unstack("method")
        ref = errors["loss_only"] if "loss_only" in errors else pd.Series(dtype=float)
        mae_ref = float(ref.mean())
        for method in [m for m in METHODS if m in errors]:
            err = errors[method]
            mae = float(err.mean())
            row = {"fraction": fraction, "method": method, "mae": mae, "n": int(err.notna().sum())}
            row["improvement_pct"] = 100 * (mae_ref - mae) / mae_ref if mae_ref > 0 else np.nan
            stat, p, n_pairs, note = np.nan, np.nan, 0, "reference method"
            if method != "loss_only":
                both = err.notna() & ref.notna()
                stat, p, n_pairs, note = wilcoxon_vs_reference(
                    err[both].to_numpy(float), ref[both].to_numpy(float)
                )
            row |= {"wilcoxon_stat": stat, "wilcoxon_p": p, "wilcoxon_n": n_pairs}
            rows.append(row | {"wilcoxon_note": note})
    return pd.DataFrame(rows)
