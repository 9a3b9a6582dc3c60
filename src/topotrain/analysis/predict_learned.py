"""The learned final-loss predictor: ridge regression on cutoff features, cross-validated by model.

Two schemes, each returning one prediction and one note per run:
- leave_one_model_out: trained on every other model's runs;
- forward_chaining: trained only on the runs of strictly smaller models (by parameter count), as
  when a new, larger model is to be predicted from the ones already trained.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

RIDGE_ALPHA = 1.0  # L2 penalty of the learned predictor, on standardised features
MIN_TRAIN_MODELS = 2  # a learned prediction is trained on at least this many models


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
    """Each run's prediction from StandardScaler → Ridge(alpha) fitted on runs of smaller models only.

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
