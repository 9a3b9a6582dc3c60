"""The learned final-loss predictor: ridge regression on cutoff features, cross-validated by model.

Features at the cutoff t0 (cutoff_features): FEATURES, and for each learned variant in
LEARNED_EXTRAS six more columns: the vectorised diagrams' summaries (VECTOR_FEATURES), or one of
their two placebos with as many run-varying columns, the loss curve's own shape from step and
val_loss only (LOSS_SHAPE_FEATURES, the clock placebo) or the weight and gradient scale
(SCALE_FEATURES). Two schemes, each returning one prediction and one note per run:
- leave_one_model_out: trained on every other model's runs;
- forward_chaining: trained only on the runs of strictly smaller models (by parameter count), as
  when a new, larger model is to be predicted from the ones already trained.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

RIDGE_ALPHA = 1.0  # L2 penalty of the learned predictor, on standardised features
MIN_TRAIN_MODELS = 2  # a learned prediction is trained on at least this many models
MIN_MODELS = 3  # the leave-one-model-out learned predictor needs at least this many models
FEATURES = (
    "loss_at_cutoff",
    "loss_only_pred",
    "np_at_cutoff",
    "np_slope",
    "h0_at_cutoff",
    "h0_slope",
    "log_n_params",
)
VECTOR_FEATURES = tuple(
    f"h{k}_{s}" for k in (0, 1) for s in ("landscape_l2", "image_mass", "betti_auc")
)
LOSS_SHAPE_FEATURES = (  # loss_shape_features: from step and val_loss only
    "loss_at_quarter",
    "loss_at_half",
    "loss_at_three_quarters",
    "loss_slope_first_half",
    "loss_slope_second_half",
    "loss_loglog_slope",
)
SCALE_SOURCES = ("l2_norm_mean", "grad_norm")
SCALE_FEATURES = tuple(
    f"{c}_{s}" for c in SCALE_SOURCES for s in ("at_cutoff", "slope", "slope_recent")
)
LEARNED_EXTRAS = {  # learned variants: these cutoff features added to FEATURES (six each)
    "learned[+vectors]": VECTOR_FEATURES,
    "learned[+step]": LOSS_SHAPE_FEATURES,
    "learned[+scale]": SCALE_FEATURES,
}
EXTRA_SOURCES = {  # the feature-table columns each variant's extras are computed from
    "learned[+vectors]": VECTOR_FEATURES,
    "learned[+step]": ("step", "val_loss"),
    "learned[+scale]": SCALE_SOURCES,
}


def last_finite(values: np.ndarray) -> float:
    """The last finite entry of ``values`` (NaN if none): the fallback 'last observed loss'."""
    finite = values[np.isfinite(values)]
    return float(finite[-1]) if finite.size else float("nan")


def ols_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope Σ(x−x̄)(y−ȳ) / Σ(x−x̄)²; NaN with < 2 points or constant x."""
    if x.size < 2:
        return float("nan")
    dx = x - x.mean()
    denom = float(dx @ dx)
    if denom <= 1e-24 * max(1.0, float(np.max(np.abs(x))) ** 2):
        return float("nan")
    return float(dx @ (y - y.mean())) / denom


def clip_at_zero(value: float, note: str) -> tuple[float, str]:
    """(max(value, 0), note): a cross-entropy cannot be negative; the note records a clip."""
    if value < 0.0:
        return 0.0, note + "; clipped at 0"
    return value, note


def loss_shape_features(t: np.ndarray, loss: np.ndarray) -> dict[str, float]:
    """LOSS_SHAPE_FEATURES of the loss curve on 0 < t ≤ t0 (t ascending, finite losses only).

    L at t0/4, t0/2, 3t0/4 (linear interpolation, held at the first point before it), OLS slopes
    dL/dt over t ≤ t0/2 and over t ≥ t0/2 (nats/char per step), and the local power-law exponent
    d ln L / d ln t over t ≥ t0/2 (L > 0); NaN where a part has fewer than 2 points.
    """
    keep = (t > 0) & np.isfinite(loss)
    t, loss = t[keep], loss[keep]
    if t.size == 0:
        return dict.fromkeys(LOSS_SHAPE_FEATURES, float("nan"))
    t0 = t[-1]
    first, second = t <= t0 / 2, t >= t0 / 2
    logs = second & (loss > 0)
    values = (
        *np.interp(t0 * np.array([0.25, 0.5, 0.75]), t, loss),
        ols_slope(t[first], loss[first]),
        ols_slope(t[second], loss[second]),
        ols_slope(np.log(t[logs]), np.log(loss[logs])),
    )
    return dict(zip(LOSS_SHAPE_FEATURES, map(float, values), strict=True))


def series_at_cutoff(window: pd.DataFrame, column: str) -> tuple[float, float, float]:
    """(last finite value, OLS slope per step over 0 < t ≤ t0, over t0/2 ≤ t ≤ t0);
    NaN if absent."""
    late = window[window["step"] > 0]
    if column not in window or late.empty:
        return float("nan"), float("nan"), float("nan")
    t, y = late["step"].to_numpy(float), late[column].to_numpy(float)
    ok = np.isfinite(y)
    tail = ok & (t >= t[-1] / 2)
    last = last_finite(window[column].to_numpy(float))
    return last, ols_slope(t[ok], y[ok]), ols_slope(t[tail], y[tail])


def cutoff_features(window: pd.DataFrame, loss_pred: float, n_params: int) -> dict[str, float]:
    """FEATURES and every LEARNED_EXTRAS column at the cutoff (NaN where a source is absent).

    Last values, OLS slopes per step over t > 0, log N, loss_shape_features and series_at_cutoff.
    """
    np_last, np_slope, _ = series_at_cutoff(window, "np_mean")
    h0_last, h0_slope, _ = series_at_cutoff(window, "h0_total")
    scale = [v for c in SCALE_SOURCES for v in series_at_cutoff(window, c)]
    t, loss = window["step"].to_numpy(float), window["val_loss"].to_numpy(float)
    return {
        "loss_at_cutoff": last_finite(loss),
        "loss_only_pred": loss_pred,
        "np_at_cutoff": np_last,
        "np_slope": np_slope,
        "h0_at_cutoff": h0_last,
        "h0_slope": h0_slope,
        "log_n_params": float(np.log(n_params)),
        **{
            c: last_finite(window[c].to_numpy(float)) if c in window else np.nan
            for c in VECTOR_FEATURES
        },
        **loss_shape_features(t, loss),
        **dict(zip(SCALE_FEATURES, scale, strict=True)),
    }


def _ridge_predict(x, y, train, test, alpha: float) -> np.ndarray:
    """StandardScaler → Ridge(alpha) fitted on the ``train`` rows, predicting the ``test`` rows."""
    if not test.any():
        return np.empty(0)
    pipe = make_pipeline(StandardScaler(), Ridge(alpha=alpha)).fit(x[train], y[train])
    return pipe.predict(x[test])


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
            pred[test & ok] = _ridge_predict(x, y, train, test & ok, alpha)
        for i in np.flatnonzero(test):
            notes[i] = note if ok[i] else "non-finite cutoff features"
    return pred, notes


def forward_chaining(
    x: np.ndarray,
    y: np.ndarray,
    models: np.ndarray,
    n_params: np.ndarray,
    alpha: float = RIDGE_ALPHA,
    min_models: int = MIN_TRAIN_MODELS,
) -> tuple[np.ndarray, list[str]]:
    """Each run's prediction from StandardScaler → Ridge(alpha) fitted on runs of smaller
    models only.

    A model's runs are predicted from the usable runs (finite features and target) of models with
    strictly fewer parameters; NaN with a note while fewer than ``min_models`` such models exist.
    """
    ok = np.isfinite(x).all(axis=1)
    usable = ok & np.isfinite(y)
    pred, notes = np.full(y.shape, np.nan), [""] * y.size
    for model in np.unique(models):
        test = models == model
        train = usable & (n_params < n_params[test].min())
        n_models = np.unique(models[train]).size
        if n_models < min_models:
            note = f"forward chaining needs >= {min_models} smaller models, got {n_models}"
        else:
            note = f"ridge alpha={alpha:g}, trained on {int(train.sum())} runs of "
            note += f"{n_models} smaller models"
            pred[test & ok] = _ridge_predict(x, y, train, test & ok, alpha)
        for i in np.flatnonzero(test):
            notes[i] = note if ok[i] else "non-finite cutoff features"
    return pred, notes


def _variant(x, y, models, alpha, extras: np.ndarray | None = None) -> tuple[np.ndarray, list]:
    """leave_one_model_out, or NaN rows with a note below MIN_MODELS models; notes a variant
    whose finite ``extras`` are constant across runs (the scaler zeroes them: same as learned)."""
    n_models = np.unique(models).size
    if n_models < MIN_MODELS:
        return _nan_rows(y.size, f"learned needs >= {MIN_MODELS} models, got {n_models}")
    pred, notes = leave_one_model_out(x, y, models, alpha)
    if extras is not None:
        finite = extras[np.isfinite(extras).all(axis=1)]
        if finite.shape[0] > 1 and np.all(np.ptp(finite, axis=0) == 0):
            notes = [n + "; extras constant across runs (same as learned)" for n in notes]
    return pred, notes


def _nan_rows(n: int, note: str) -> tuple[np.ndarray, list[str]]:
    """n NaN predictions, each with ``note``."""
    return np.full(n, np.nan), [note] * n


def learned_rows(
    rows: list[dict], feats: list[dict], columns: Iterable[str], alpha: float = RIDGE_ALPHA
) -> list[dict]:
    """learned, learned_forward and the LEARNED_EXTRAS variants' rows for one fraction, clipped ≥ 0.

    ``rows`` hold each run's model, n_params and actual; ``feats`` its cutoff_features; ``columns``
    the feature table's: a variant whose EXTRA_SOURCES are absent gets NaN rows saying which.
    """
    models = np.array([r["model"] for r in rows])
    y = np.array([r["actual"] for r in rows], dtype=float)
    x = np.array([[f[name] for name in FEATURES] for f in feats], dtype=float)
    sizes, present = np.array([r["n_params"] for r in rows], dtype=float), set(columns)
    variants = {
        "learned": _variant(x, y, models, alpha),
        "learned_forward": forward_chaining(x, y, models, sizes, alpha),
    }
    for method, extra in LEARNED_EXTRAS.items():
        missing = [c for c in EXTRA_SOURCES[method] if c not in present]
        xe = np.array([[f[name] for name in extra] for f in feats], dtype=float)
        variants[method] = (
            _nan_rows(len(rows), f"no {', '.join(missing)} column in the feature table")
            if missing
            else _variant(np.hstack([x, xe]), y, models, alpha, xe)
        )
    out = []
    for method, (pred, notes) in variants.items():
        for row, value, note in zip(rows, pred, notes, strict=True):
            value, note = clip_at_zero(float(value), note)
            out.append(
                row | {"method": method, "predicted": value, "fallback": False, "note": note}
            )
    return out
