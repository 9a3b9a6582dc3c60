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

Two questions, two views of the same cells. The level view (``seed_contrast``, ``_l2``) asks
whether a seed that is *ahead* in the loss is also ahead in the feature; a seed's persistent
offset makes its 51 checkpoints one or two independent looks. The co-movement view
(``seed_comove``, ``_l2``) asks whether a seed's feature *moves* with its loss from one checkpoint
to the next: each variable's deviations are differenced along the steps and scaled per step
(``comovement``) before the same statistic and the same exact permutation; a constant per-seed
offset leaves nothing in it. The scale is transformed the same way before it is partialled.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from topotrain.config import ALPHA, DEFAULTS

RESIDUAL_TOL = 1e-12  # rank residuals with Σe² below this fraction of Σ(r − r̄)² are exactly zero
EXACT_SEEDS = 8  # all k! permutations up to this many seeds (40 320)
EXACT_LIMIT = 2_000_000  # pooled null enumerated up to this many arrangements
MC_DRAWS = 9_999  # Monte Carlo draws beyond those limits
SCALE = "l2_norm_mean"
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
# model_matrices' keys beside the columns: the steps, the horizon H, the co-movement's first step
STEPS, HORIZON, START = "__steps__", "__horizon__", "__start__"
HORIZON_STEPS = DEFAULTS["analysis"]["horizon"]  # H: co-movement is the moves over H steps


def default_start(warmup_steps: float, horizon: float) -> float:
    """The co-movement's first step when ``analysis.comove_from`` is null: H after the warm-up's
    end. The schedule's kink sits there, and a seed a little faster or slower crosses it at
    another step: on a warm-up kink read at ±2 % speeds (``calibration.persistent``'s
    kink_warp) moves from step 0 made the pair reject 0.67 of null studies at 5 × 201, from the
    kink 0.08, from H after it none of 60."""
    return float(warmup_steps) + float(horizon)


# the process's H and first step (``set_horizon``: a job's analysis.horizon and comove_from)
_design = {"horizon": float(HORIZON_STEPS)}
_design["start"] = default_start(DEFAULTS["train"]["warmup_steps"], HORIZON_STEPS)


def set_horizon(horizon: float, start: float | None = None) -> None:
    """The horizon H (steps) and the first step of the co-movement's moves (``start``; None:
    ``default_start`` of the default warm-up) that ``model_matrices`` gives every cell of this
    process from now on: a job sets its config's once, before any contrast."""
    if not np.isfinite(horizon) or horizon <= 0:
        raise ValueError(f"analysis.horizon must be a positive number of steps, got {horizon!r}")
    if start is not None and (not np.isfinite(start) or start < 0):
        raise ValueError(f"analysis.comove_from must be a step ≥ 0, got {start!r}")
    _design["horizon"] = float(horizon)
    _design["start"] = (
        default_start(DEFAULTS["train"]["warmup_steps"], horizon) if start is None else start
    )


def current_horizon() -> float:
    """The horizon H (steps) ``model_matrices`` uses when it is not given one."""
    return _design["horizon"]


def current_start() -> float:
    """The first step of the co-movement's moves ``model_matrices`` uses by default."""
    return _design["start"]


def deviations(values: np.ndarray) -> np.ndarray:
    """(k, n) values of k seeds at n shared checkpoints minus their across-seed mean per checkpoint;
    deviations within rounding (1e-12 of the checkpoint's largest |value|) are exactly 0, so a
    series every seed shares (the step, the schedule) has none."""
    d = values - values.mean(axis=0, keepdims=True)
    tol = 1e-12 * np.abs(values).max(axis=0, keepdims=True)
    return np.where(np.abs(d) <= tol, 0.0, d)


def horizon_lag(steps: np.ndarray | None, horizon: float | None) -> int:
    """Checkpoints per horizon H (steps): round(H / spacing), the spacing the median step between
    checkpoints; 1 without steps or H (the next checkpoint's move); 0 where H is shorter than
    the spacing (no H-step move exists: the view is undefined there)."""
    if steps is None or horizon is None or len(steps) < 2:
        return 1
    spacing = float(np.median(np.diff(np.asarray(steps, float))))
    if spacing <= 0:
        raise ValueError(f"checkpoint steps must increase, got a median spacing of {spacing:g}")
    ratio = float(horizon) / spacing
    return 0 if ratio < 1 - 1e-9 else int(round(ratio))


def _sided_slopes(f: np.ndarray, t: np.ndarray, lag: int) -> tuple[np.ndarray, np.ndarray]:
    """f's slope to the checkpoint ``lag`` later and from the one ``lag`` earlier, at every
    checkpoint (the nearest one defined past the ends)."""
    n = f.size
    ahead = np.empty(n)
    ahead[: n - lag] = (f[lag:] - f[:-lag]) / (t[lag:] - t[:-lag])
    ahead[n - lag :] = ahead[n - lag - 1]
    behind = np.empty(n)
    behind[lag:], behind[:lag] = ahead[: n - lag], ahead[0]
    return ahead, behind


def smooth_warp(t: np.ndarray, horizon: float, degree: int = 5) -> np.ndarray:
    """(n, degree) Legendre polynomials of degree 1…``degree`` in log(1 + t/H) over the run: the
    span of a seed's ε·t·f′(t) where f is smooth in log-steps (a fixed basis: no noise in it)."""
    u = np.log1p(np.maximum(t, 0.0) / horizon)
    if t.size < 2 or u[-1] <= 0:
        return np.zeros((t.size, 0))
    return np.polynomial.legendre.legvander(2 * u / u[-1] - 1, degree)[:, 1:]


def warp_regressors(
    curves: list[np.ndarray], t: np.ndarray, lag: int = 1, horizon: float | None = None
) -> np.ndarray:
    """(n, r) speed-warp regressors, most telling first: the smooth basis (``smooth_warp`` in
    log(1 + t/H), H = ``horizon``, default lag × the median spacing), then from each (k, n)
    variable of ``curves``, with f̄ its across-seed mean: t·f̄′ with f̄′ the slope to the
    checkpoint a horizon (``lag`` checkpoints) later and t·f̄′ with the slope from the one a
    horizon earlier, then t²·f̄″ and t·f̄″ (f̄″ the second difference over ±a horizon); each of unit
    norm, the flat ones left out. A seed that trains ε faster deviates by ε·t·f′(t) +
    ε²·t²·f″(t)/2 + … in every variable, f′ the slope on the side its faster clock lies: a smooth
    f lies in the smooth basis (the mean curve's slope is noisy: alone it removed a smooth warp
    from 7.5 % of the co-movement's norm to 6 %, the basis to < 1 %); at a kink (a warm-up's end)
    the two sides differ and the one-sided slopes span it (a slope over h steps is f′ +
    (h/2)·f″, which the last regressor absorbs). Built from the across-seed mean and the steps:
    the same for every arrangement of the seeds."""
    n, lag = t.size, max(1, int(lag))
    if n < 2 * lag + 1:
        return np.zeros((n, 0))
    horizon = horizon or lag * float(np.median(np.diff(t)))
    first, second_order = [], []
    for v in curves:
        f = v.mean(axis=0)
        ahead, behind = _sided_slopes(f, t, lag)
        second = np.empty(n)
        half = (t[2 * lag :] - t[: n - 2 * lag]) / 2
        second[lag : n - lag] = (f[2 * lag :] - 2 * f[lag : n - lag] + f[: n - 2 * lag]) / half**2
        second[:lag], second[n - lag :] = second[lag], second[n - lag - 1]
        first += [t * ahead, t * behind]
        second_order += [t * t * second, t * second]
    regs = [*smooth_warp(t, horizon).T, *first, *second_order]
    regs = [r / m for r in regs if (m := float(np.linalg.norm(r))) > 0 and np.isfinite(m)]
    return np.column_stack(regs) if regs else np.zeros((n, 0))


def _move_basis(regressors: np.ndarray, lag: int) -> np.ndarray:
    """(n − lag, q) orthonormal basis of the regressors' ``lag``-checkpoint moves, at most
    (n − lag) // 4 of them (the first first), directions below 1e-9 of the largest singular
    value dropped."""
    moves = regressors[lag:] - regressors[:-lag]
    moves = moves[:, : moves.shape[0] // 4]
    if not moves.shape[1]:
        return moves
    u, sv, _ = np.linalg.svd(moves, full_matrices=False)
    return u[:, sv > 1e-9 * sv[0]] if sv[0] > 0 else u[:, :0]


def comovement(
    values: np.ndarray, lag: int = 1, window: int = 10, warp: np.ndarray | None = None
) -> np.ndarray:
    """(k, n − lag) co-movement of k seeds at n shared checkpoints: the overlapping
    ``lag``-checkpoint moves of the seed deviations (``deviations``; lag: the horizon H in
    checkpoints, ``horizon_lag``), e_{s,t} = d_{s,t+lag} − d_{s,t} (0 within 1e-12 of the two
    steps' largest |value|), less each row's least-squares fit on the same moves of ``warp``
    (``warp_regressors``: the seeds' speed warps; none by default), each over the RMS of e on
    all seeds and the ±``window``·lag moves around (±window horizons: the same span of steps at
    every spacing). Both maps are the same for every seed: the test stays exact, the partial
    view linear; a per-seed offset leaves nothing."""
    k, n = values.shape
    if lag < 1 or n <= lag:  # no move spans the horizon
        return np.zeros((k, 0))
    d = deviations(values)
    e = d[:, lag:] - d[:, :-lag]
    top = np.abs(values).max(axis=0)
    e = np.where(np.abs(e) <= 1e-12 * np.maximum(top[lag:], top[:-lag]), 0.0, e)  # rounding
    if warp is not None and warp.shape[1]:
        q = _move_basis(warp, lag)
        before = (e * e).sum(axis=1, keepdims=True)
        e = e - e @ q @ q.T
        e = np.where((e * e).sum(axis=1, keepdims=True) <= 1e-20 * before, 0.0, e)  # all warp
    m, span = e.shape[1], window * lag
    ms = np.r_[0.0, np.cumsum((e * e).mean(axis=0))]
    lo, hi = (np.clip(np.arange(m) + s, 0, m) for s in (-span, span + 1))
    rms = np.sqrt(np.clip(ms[hi] - ms[lo], 0.0, None) / (hi - lo))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(rms > 0, e / rms, 0.0)


def horizon_note(mats: dict[str, np.ndarray]) -> str:
    """Why a cell of ``model_matrices`` has no H-step move: H shorter than the spacing, or
    longer than the run; '' where it has them or carries no steps."""
    steps = mats.get(STEPS)
    if steps is None or len(steps) < 2:
        return ""
    h = float(mats.get(HORIZON, current_horizon()))
    start = float(mats.get(START, current_start()))
    lag = horizon_lag(steps, h)
    spacing = float(np.median(np.diff(steps)))
    if lag == 0:
        return f"no {h:g}-step move: checkpoints are {spacing:g} steps apart (analysis.horizon)"
    kept = int((np.asarray(steps) >= start).sum())
    if lag >= kept - 1:
        return (
            f"fewer than 2 moves of {h:g} steps over the {kept} checkpoints from step {start:g}"
            " (analysis.horizon, analysis.comove_from)"
        )
    return ""


def lag1(d: np.ndarray) -> float:
    """Lag-1 autocorrelation of (k, n) deviations pooled over seeds: Σ d_t·d_{t−1} / Σ d_t²
    (NaN when nothing varies): the persistence a view's transformed deviations keep."""
    den = float((d * d).sum())
    return float((d[:, 1:] * d[:, :-1]).sum() / den) if den else float("nan")


def seed_permutations(k: int, seed: int = 0) -> np.ndarray:
    """(P, k) permutations of k seed labels, the identity first: all k! up to EXACT_SEEDS, else
    the identity and MC_DRAWS uniform draws."""
    if k <= EXACT_SEEDS:
        perms = np.array(list(itertools.permutations(range(k))), dtype=np.intp)
    else:
        draws = np.argsort(np.random.default_rng(seed).random((MC_DRAWS, k)), axis=1)
        perms = np.vstack([np.arange(k), draws]).astype(np.intp)
    return np.asfortranarray(perms)  # column-major: _permuted_traces reads one position at a time


def _centred_ranks(d: np.ndarray) -> np.ndarray:
    """Average ranks over all cells (ties share their mean rank, as scipy's rankdata), centred."""
    flat = d.ravel()
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    mean_rank = starts + (np.diff(np.r_[starts, flat.size]) + 1) / 2
    r = np.empty(flat.size)
    r[order] = mean_rank[group]
    return (r - (flat.size + 1) / 2).reshape(d.shape)


def _residual(r: np.ndarray, rz: np.ndarray) -> np.ndarray:
    """r − β·rz over all cells (both centred); numerically-zero residuals become exactly 0."""
    e = r - (r * rz).sum() / (rz * rz).sum() * rz
    return np.zeros_like(e) if (e * e).sum() <= RESIDUAL_TOL * (r * r).sum() else e


def permutation_rhos(
    dx: np.ndarray, dy: np.ndarray, perms: np.ndarray, dz: np.ndarray | None = None
) -> np.ndarray:
    """ρ of the deviations with the feature's seed rows permuted by each row of ``perms``.

    Plain (Spearman): R are centred ranks over all cells, G = R_x·R_yᵀ (k × k),
    ρ_π = Σ_i G[π(i), i] / √(Σ R_x² Σ R_y²). Partial on dz (Pearson of linear residuals, so a
    feature that is a linear function of the scale plus noise leaves only the noise): with X, Y, Z
    the centred deviations, e_y = Y − (ΣYZ/ΣZ²)·Z stays; the feature's rows are permuted first and
    regressed on Z again, so with G = X·e_yᵀ and H = X·Zᵀ, ρ_π = Σ_i G[π(i), i] /
    √((Σ X² − (Σ_i H[π(i), i])² / Σ Z²) Σ e_y²) (e_y ⟂ Z). The first row of perms is the
    identity; NaN everywhere when either side has nothing left.
    """
    proj = np.zeros(len(perms))
    if dz is None:
        rx, ry = _centred_ranks(dx), _centred_ranks(dy)
    else:
        rx, ry, rz = (v - v.mean() for v in (dx, dy, dz))
        ss_z = float((rz * rz).sum())
        if not ss_z or not _residual(rx, rz).any():  # no scale, or the feature is linear in it
            return np.full(len(perms), np.nan)
        ry = _residual(ry, rz)
        proj = _permuted_traces(rx @ rz.T, perms) ** 2 / ss_z
    ss_x, ss_y = float((rx * rx).sum()), float((ry * ry).sum())
    if ss_x == 0 or ss_y == 0:
        return np.full(len(perms), np.nan)
    num = _permuted_traces(rx @ ry.T, perms)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / np.sqrt(np.clip(ss_x - proj, 0.0, None) * ss_y)


def _permuted_traces(g: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """Σ_i g[π(i), i] for every row π of ``perms``, one position i at a time (with
    ``seed_permutations``' column-major perms, ten times faster than one fancy index over all of
    them at 8 seeds)."""
    columns = np.ascontiguousarray(g.T)
    out = columns[0].take(perms[:, 0])
    for i in range(1, perms.shape[1]):
        out += columns[i].take(perms[:, i])
    return out


def permutation_p(null: np.ndarray, alternative: str, exact: bool = True) -> float:
    """p of null[0] (the observed statistic) among all of ``null``: #{s ≥ s_0}/P when exact,
    (1 + #{b ≥ 1: s_b ≥ s_0})/P for Monte Carlo draws (identity counted once either way), for
    ``alternative='greater'``; 'less' counts s ≤ s_0; 'two-sided' is twice the smaller of the
    two, capped at 1 (so an equal-tailed 1 − α interval excludes a value exactly when the
    two-sided p at it is < α). NaN when s_0 is."""
    if not np.isfinite(null[0]):
        return float("nan")
    if alternative == "two-sided":
        both = (permutation_p(null, side, exact) for side in ("greater", "less"))
        return min(1.0, 2 * min(both))
    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less, not {alternative!r}")
    s = null if alternative == "greater" else -null
    tol = 1e-12 * max(1.0, abs(s[0]))
    return (
        float(np.count_nonzero(s >= s[0] - tol) / s.size)
        if exact
        else float((1 + np.count_nonzero(s[1:] >= s[0] - tol)) / s.size)
    )


def pooled_null(
    nulls: list[np.ndarray], signs: list[float], seed: int = 0
) -> tuple[np.ndarray, bool]:
    """The pooled statistic S = mean_m s_m·ρ_m over the product of the models' permutation groups:
    (S for every arrangement with the observed one first, exact); Monte Carlo (MC_DRAWS draws plus
    the observed) when the product exceeds EXACT_LIMIT."""
    size = math.prod(len(n) for n in nulls)
    scaled = [s * n for s, n in zip(signs, nulls, strict=True)]
    if size <= EXACT_LIMIT:
        total = np.zeros(1)
        for n in scaled:
            total = (total[:, None] + n[None, :]).ravel()
        return total / len(nulls), True
    draws = sum(n[i] for n, i in zip(scaled, mc_draws([len(n) for n in nulls], seed), strict=True))
    observed = sum(n[0] for n in scaled)
    return np.concatenate([[observed], draws]) / len(nulls), False


def mc_draws(sizes: list[int], seed: int = 0) -> list[np.ndarray]:
    """The Monte Carlo pooled null's draws: MC_DRAWS indices into each model's null, model by
    model from one generator seeded ``seed`` (``pooled_null``; ``seed_effect`` evaluates only
    these permutations)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n, MC_DRAWS) for n in sizes]


def model_matrices(
    rows: pd.DataFrame, columns: list[str], horizon: float | None = None, start=None
) -> dict[str, np.ndarray]:
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
    lag = horizon_lag(None if steps is None else t, mats.get(HORIZON, current_horizon()))
    warped = list(dict.fromkeys([*columns, *([SCALE] if SCALE in mats else [])]))
    finite = [mats[c][:, ok] for c in warped if np.isfinite(mats[c][:, ok]).all()]
    warp = warp_regressors(finite, t, lag, float(mats.get(HORIZON, current_horizon())))
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
