"""What the between-seed test permutes, as points: per model and design view, each seed's feature
deviation against its loss deviation at the steps every seed shares, after the view's transform
(levels or co-movement) and, beyond the scale, both residual on the L2 norm's deviations — the
cells ``seed_contrast.permutation_rhos`` ranks or correlates, with the ρ it computes for them.

Each axis is divided by its RMS over the model's cells (unitless, SD units), so models of any
size share the axes; the ρ and the verdicts come from the unscaled cells."""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.inference.permutations import _residual
from topotrain.analysis.inference.primary import CO_TARGET, VIEWS
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    SCALE,
    model_matrices,
    permutation_rhos,
    view_cell,
)

POINT_COLUMNS = ["model", "view", "condition", "seed", "index", "loss", "feature", "rho"]


def _scaled(v: np.ndarray) -> np.ndarray:
    rms = float(np.sqrt((v * v).mean())) if v.size else 0.0
    return v / rms if rms > 0 else v


def seed_points(df: pd.DataFrame, feature: str, views=VIEWS) -> pd.DataFrame:
    """POINT_COLUMNS for ``feature`` over every model of ``df`` (the checkpoint table) and every
    (view, condition) of ``views`` (``primary.VIEWS``: the level view against train loss, the
    co-movement view against val loss, each beyond the clock and the scale): one row per (seed,
    shared step) cell; ``index`` is the cell's column (its checkpoint among the shared ones, or
    the step-to-step move), ``rho`` the model's observed statistic. A model or view the table
    cannot give (a column missing, one seed) has no rows. Other ``views`` (the same shape) give
    other targets and conditioning columns: the grokking control's test loss and weight norm."""
    rows = []
    for model, g in df.groupby("model", sort=False):
        seeds = np.sort(g["seed"].unique())
        for view, (target, conditions) in views.items():
            conds = [cond for _, cond in conditions.values() if cond]
            columns = [c for c in dict.fromkeys((feature, target, SCALE, *conds)) if c in g]
            if feature not in columns or target not in columns or seeds.size < 2:
                continue
            mats = model_matrices(g, columns)
            for condition, (contrast, cond) in conditions.items():
                cond, d = view_cell(mats, feature, target, contrast, cond)
                if d is None or d[feature].shape[1] < 2:
                    continue
                x, y = d[target], d[feature]
                z = d[cond] if cond else None
                identity = np.arange(seeds.size)[None, :]
                rho = float(permutation_rhos(y, x, identity, z)[0])
                if z is not None:  # beyond the scale: both residual on the norm's deviations
                    x, y, z = (v - v.mean() for v in (x, y, z))
                    if (z * z).sum():  # the partial's own residual (permutations._residual)
                        x, y = _residual(x, z), _residual(y, z)
                x, y = _scaled(x), _scaled(y)
                for i, seed in enumerate(seeds):
                    for j in range(x.shape[1]):
                        rows.append((model, view, condition, seed, j, x[i, j], y[i, j], rho))
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def labelled_points(df: pd.DataFrame, features: dict[str, str], views=VIEWS) -> pd.DataFrame:
    """``seed_points`` of each of ``features`` (column → label) in one frame, each row's ``model``
    the feature's label (" · " and the model's name when ``df`` holds several): the rows of one
    figure for a control or a seed group. Features ``df`` lacks give no rows."""
    several = df["model"].nunique() > 1 if len(df) else False
    parts = []
    for feature, label in features.items():
        if feature not in df:
            continue
        points = seed_points(df, feature, views)
        model = label + " · " + points["model"].astype(str) if several else label
        parts.append(points.assign(model=model))
    parts = [p for p in parts if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=POINT_COLUMNS)


def control_views(target: str, norm: str) -> dict:
    """The grokking control's views for ``seed_points``: the level of ``target`` beyond the clock
    and beyond ``norm`` (the weight norm, partialled)."""
    return {"level": (target, {"clock": ("seed_contrast", None), "norm": (PARTIAL, norm)})}


def group_views(targets: list[str]) -> dict:
    """A seed group's views: the level of its first logged loss (train loss when logged) beyond
    the clock and the scale, and the co-movement view when val loss is logged; {} without a
    loss."""
    if not targets:
        return {}
    views = {"level": (targets[0], VIEWS["level"][1])}
    if CO_TARGET in targets:
        views["comove"] = VIEWS["comove"]
    return views
