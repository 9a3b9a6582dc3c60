"""Between-seed contrasts: the association with loss that no function of the step can produce.

Within one model every seed shares the schedule and the step. Centre a feature x and a loss y on
their across-seed mean at every checkpoint, d_{s,t} = x_{s,t} − mean_{s'} x_{s',t}: what is left is
how run s differs from its siblings at the same step. The ``seed_contrast`` ρ of a model is the
Spearman ρ of (d^x, d^y) over all its (seed, checkpoint) cells; ``seed_contrast_l2`` is the partial
version: the Pearson r of d^x and d^y after each is regressed on the L2 norm's deviations d^{L2}
(the feature's scale).

Null: the model's feature curves are exchangeable against its loss curves (same schedule, seeds
differ only by chance). p = #{π: |ρ_π| ≥ |ρ|} / k! over every permutation π of the k seed labels
(identity included): exact, whatever the trend, so its smallest value is 1/k! (1/6 with 3 seeds,
1/120 with 5, 1/40 320 with 8). Above ``EXACT_SEEDS`` seeds, ``MC_DRAWS`` uniform permutations.
Pooled over models: S = mean_m s_m·ρ_m (s_m = +1, or a claim's sign per model) against the product
of the models' permutation groups, enumerated when it has at most ``EXACT_LIMIT`` elements (6^5 =
7 776 for 5 models × 3 seeds, smallest p 1/7 776), else ``MC_DRAWS`` draws with p = (1 + #)/(1 + B).
The partial view keeps the loss's residual on the scale and permutes the feature's curves,
regressing them on the scale again for each arrangement (so a feature's rows travel without their
own scale); its size is measured by the calibration suite rather than exact.

Two views of the same cells. The level view (``seed_contrast``, ``_l2``) asks whether a seed
*ahead* in the loss is ahead in the feature; the co-movement view (``seed_comove``, ``_l2``)
whether its feature *moves* with its loss over H steps (``comovement``: the transform, the same
for every seed and variable, the scale's too, before the same statistic and permutation).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from topotrain.analysis.inference.comovement import (  # noqa: F401 (re-exported: the view's API)
    HORIZON,
    HORIZON_STEPS,
    START,
    STEPS,
    comovement,
    current_horizon,
    current_start,
    default_start,
    deviations,
    horizon_lag,
    horizon_note,
    lag1,
    set_horizon,
    warp_regressors,
)
from topotrain.analysis.inference.permutations import (  # noqa: F401 (re-exported: the test's API)
    EXACT_LIMIT,
    EXACT_SEEDS,
    MC_DRAWS,
    RESIDUAL_TOL,
    mc_draws,
    permutation_p,
    permutation_rhos,
    pooled_null,
    seed_permutations,
)
from topotrain.config import ALPHA

SCALE = "l2_norm_mean"
Matrices = dict[str, np.ndarray]  # one model's raw matrices, by column (model_matrices)
# view -> conditioning column: where each seed is (levels), and how it moves (co-movement)
CONTRAST_VIEWS = {
    "seed_contrast": None,
    "seed_contrast_l2": SCALE,
    "seed_comove": None,
    "seed_comove_l2": SCALE,
}
P_METHOD = "exact permutation of seed labels (all k! arrangements)"
P_METHOD_MC = "Monte Carlo permutation of seed labels"
P_METHOD_FL = "permutation of seed labels, the feature re-regressed on {cond} each time"
PARTIAL = "seed_contrast_partial"  # a partial contrast on a conditioning column the caller names
PARTIAL_CO = "seed_comove_partial"  # the co-movement view's partial on a column the caller names
COMOVE = frozenset({"seed_comove", "seed_comove_l2", PARTIAL_CO})  # views on co-movement


def model_matrices(
    rows: pd.DataFrame, columns: list[str], horizon: float | None = None, start=None
) -> Matrices:
    """column → (k, n) values of one model's rows (seeds in sorted order, steps ascending), NaN
    where a (seed, step) has no value; ``cell_deviations`` keeps each cell's shared checkpoints.
    Beside them ``STEPS`` (the n steps), ``HORIZON`` (the co-movement's H in steps; default
    the process's ``current_horizon``: ``analysis.horizon``) and ``START`` (the first step of
    its moves; default ``current_start``)."""
    seeds, steps = np.sort(rows["seed"].unique()), np.sort(rows["step"].unique())
    si, ti = np.searchsorted(seeds, rows["seed"]), np.searchsorted(steps, rows["step"])
    mats = {}
    for c in columns:
        m = np.full((seeds.size, steps.size), np.nan)
        m[si, ti] = rows[c].to_numpy(float)
        mats[c] = m
    mats[STEPS] = steps.astype(float)
    mats[HORIZON] = np.asarray(current_horizon() if horizon is None else horizon, float)
    mats[START] = np.asarray(current_start() if start is None else start, float)
    return mats


def cell_deviations(
    mats: dict[str, np.ndarray], columns: list[str], comove: bool = False
) -> dict[str, np.ndarray]:
    """column → (k, n) seed deviations of ``columns`` over the n checkpoints where every seed has
    all of them (one missing column elsewhere in ``mats`` leaves this cell alone); with
    ``comove`` their ``comovement`` over those checkpoints instead, (k, n − lag): at the
    horizon ``mats[HORIZON]`` (steps; default ``analysis.horizon``) over ``mats[STEPS]`` (each
    checkpoint's step; without them, a move is one checkpoint) from the checkpoints at or after
    ``mats[START]`` (default ``current_start``, where there are steps), less the speed warps of
    every column and of the scale (``warp_regressors``)."""
    ok = np.logical_and.reduce([np.isfinite(mats[c]).all(axis=0) for c in columns])
    if not comove:
        return {c: deviations(mats[c][:, ok]) for c in columns}
    steps = mats.get(STEPS)
    if steps is not None:
        ok = ok & (np.asarray(steps, float) >= float(mats.get(START, current_start())))
    t = np.arange(ok.size, dtype=float)[ok] if steps is None else np.asarray(steps, float)[ok]
    h = float(mats.get(HORIZON, current_horizon()))
    lag = horizon_lag(None if steps is None else t, h)
    warped = list(dict.fromkeys([*columns, *([SCALE] if SCALE in mats else [])]))
    finite = [mats[c][:, ok] for c in warped if np.isfinite(mats[c][:, ok]).all()]
    warp = warp_regressors(finite, t, lag, h)
    return {c: comovement(mats[c][:, ok], lag, warp=warp) for c in columns}


def view_cell(
    mats: dict[str, np.ndarray], feature: str, target: str, view: str, cond: str | None = None
) -> tuple[str | None, dict[str, np.ndarray] | None]:
    """The conditioning column of ``view`` (CONTRAST_VIEWS; ``PARTIAL`` takes ``cond``) and the
    cell's seed deviations (``cell_deviations`` of feature, target and it), None where one of
    them is not in ``mats``: the set-up the contrast's p and its effect share."""
    cond = cond if view in (PARTIAL, PARTIAL_CO) else CONTRAST_VIEWS[view]
    columns = list(dict.fromkeys([feature, target, *([cond] if cond else [])]))
    if any(c not in mats for c in columns):
        return cond, None
    return cond, cell_deviations(mats, columns, view in COMOVE)


def model_inputs(
    df: pd.DataFrame, names: list[str], seed: int = 0
) -> list[tuple[str, pd.DataFrame, dict[str, np.ndarray], np.ndarray]]:
    """Per model of ``df`` (in order of appearance): its name, rows, raw matrices of the columns
    ``names`` and the scale (``SCALE``) it has (``model_matrices``) and its seed permutations
    (``seed_permutations``)."""
    columns = sorted(set(names) | ({SCALE} & set(df.columns)))
    out = []
    for model, g in df.groupby("model", sort=False):
        mats = model_matrices(g, [c for c in columns if c in g])
        out.append((model, g, mats, seed_permutations(g["seed"].nunique(), seed)))
    return out


def _undefined(k: int, n: int, feature: str, cond: str | None, columns) -> str:
    """Why a model's contrast is undefined before any computation, or ''."""
    if cond is not None and cond not in columns:
        return f"no {cond} column: nothing to condition on"
    if k < 2:
        return f"{k} seed: a between-seed contrast needs at least 2"
    if n < 2:
        return f"{n} checkpoints shared by every seed: contrast undefined"
    if cond is not None and feature == cond:
        return f"feature is the conditioning variable {cond}: ρ undefined"
    return ""


def contrast_cell(
    mats: dict[str, np.ndarray],
    feature: str,
    target: str,
    view: str,
    perms: np.ndarray,
    cond: str | None = None,
) -> tuple[dict, np.ndarray]:
    """(rho, p, n, p_method, note) of one model's ``view`` of (feature, target), and its null
    (ρ under every permutation in ``perms``, observed first; NaN where undefined). The view
    names its conditioning column (CONTRAST_VIEWS); ``PARTIAL`` conditions on ``cond``."""
    cond, cell = view_cell(mats, feature, target, view, cond)
    k, raw = mats[target].shape[0], mats
    exact = len(perms) == math.factorial(k)
    method = P_METHOD_FL.format(cond=cond) if cond else P_METHOD if exact else P_METHOD_MC
    row = {"rho": np.nan, "p": np.nan, "n": 0, "p_method": method, "note": ""}
    if cell is None:
        return row | {"note": _undefined(k, 0, feature, cond, mats)}, np.full(1, np.nan)
    mats = cell
    n = mats[target].shape[1]
    row["n"] = k * n
    why = _undefined(k, n, feature, cond, mats)
    if view in COMOVE and k >= 2 and n < 2:
        why = horizon_note(raw) or why
    if why:
        return row | {"note": why}, np.full(1, np.nan)
    dz = mats[cond] if cond else None
    null = permutation_rhos(mats[feature], mats[target], perms, dz)
    if not np.isfinite(null[0]):
        what = f"after conditioning on {cond}'s" if cond else "in the"
        return row | {"note": f"nothing varies {what} seed deviations: ρ undefined"}, null
    row |= {"rho": float(null[0]), "p": permutation_p(null, "two-sided", exact)}
    if exact and 2 / len(perms) >= ALPHA:
        row["note"] = f"{k} seeds: smallest attainable two-sided p = 2/{len(perms)}"
    return row, null


POOLED = "pooled"  # the model name of rows pooled over models


def contrast_table(
    df: pd.DataFrame,
    features: list[tuple[str, str]],
    targets: list[str],
    seed: int = 0,
    inputs: list | None = None,
) -> pd.DataFrame:
    """Rows of both contrast views per (model, feature, target) (``seed`` is <NA>: one row per
    model), then pooled over models (model ``pooled``, signs +1, two-sided); p_bh, flags and
    CI columns are left to the caller. ``inputs``: ``model_inputs`` of ``df`` when the caller
    has them already."""
    if inputs is None:
        inputs = model_inputs(df, [f for f, _ in features] + list(targets), seed)
    rows, nulls = [], {}
    for model, g, mats, perms in inputs:
        head = {"model": model, "n_params": int(g["n_params"].iloc[0])}
        for (feature, kind), target, view in itertools.product(features, targets, CONTRAST_VIEWS):
            res, null = contrast_cell(mats, feature, target, view, perms)
            rows.append(
                {**head, "feature": feature, "kind": kind, "target": target, "view": view, **res}
            )
            nulls.setdefault((feature, kind, target, view), []).append(null)
    for (feature, kind, target, view), per_model in nulls.items():
        rows.append(
            {
                "model": POOLED,
                "n_params": pd.NA,
                "feature": feature,
                "kind": kind,
                "target": target,
                "view": view,
                **pooled_row(per_model, view, "two-sided", seed),
            }
        )
    out = pd.DataFrame(rows)
    out.insert(1, "seed", pd.array([pd.NA] * len(out), dtype="Int64"))
    out["n_params"] = out["n_params"].astype("Int64")
    return out


def pooled_row(
    per_model: list[np.ndarray],
    view: str,
    alternative: str,
    seed: int = 0,
    signs=None,
    cond: str | None = None,
) -> dict:
    """rho (mean over models of s_m·ρ_m), p, n (models), p_method and note of a pooled contrast
    over the models whose contrast is defined; ``signs`` default +1; ``alternative`` (two-sided,
    greater: in the direction of the signs, or less) is the caller's, never inferred."""
    signs = [1.0] * len(per_model) if signs is None else list(signs)
    keep = [i for i, n in enumerate(per_model) if np.isfinite(n[0])]
    row = {"rho": np.nan, "p": np.nan, "n": len(keep), "note": ""}
    row["p_method"] = "permutation of seed labels within each model, pooled over models"
    if not keep:
        return row | {"note": "no model with a defined contrast"}
    null, exact = pooled_null([per_model[i] for i in keep], [signs[i] for i in keep], seed)
    how = "exact" if exact else "Monte Carlo"
    method = (
        f"{how} permutation of seed labels within each model, {len(keep)} models, {alternative}"
    )
    cond = cond if view in (PARTIAL, PARTIAL_CO) else CONTRAST_VIEWS.get(view)
    if view in COMOVE:
        method += ", on the seeds' co-movement (differenced deviations, RMS-scaled per step)"
    if cond:
        method += f" (the feature re-regressed on {cond} each time)"
    missing = len(per_model) - len(keep)
    note = f"{missing} models undefined, left out" if missing else ""
    note = "; ".join(
        filter(None, [note, f"{null.size} arrangements: smallest p = {1 / null.size:.3g}"])
    )
    return row | {
        "rho": float(null[0]),
        "p": permutation_p(null, alternative, exact),
        "p_method": method,
        "note": note,
    }
