"""The co-movement view's transform (``seed_contrast``'s ``seed_comove`` views): each seed's
deviations from its siblings, their overlapping moves over a horizon of H steps
(``analysis.horizon``) from H after the warm-up (``analysis.comove_from``), less the seeds' speed
warps (``warp_regressors``), scaled per move. Every map is the same for every seed, so the seed
permutation test stays exact; docs/comovement.md, "A horizon, not a spacing".
"""

from __future__ import annotations

import numpy as np

from topotrain.config import DEFAULTS

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


def set_horizon(
    horizon: float, start: float | None = None, warmup_steps: float | None = None
) -> None:
    """The horizon H (steps) and the first step of the co-movement's moves (``start``; None:
    ``default_start`` of ``warmup_steps``, default train.warmup_steps' default) that
    ``model_matrices`` gives every cell of this process from now on: a job sets its config's
    once, before any contrast."""
    if not np.isfinite(horizon) or horizon <= 0:
        raise ValueError(f"analysis.horizon must be a positive number of steps, got {horizon!r}")
    if start is not None and (not np.isfinite(start) or start < 0):
        raise ValueError(f"analysis.comove_from must be a step ≥ 0, got {start!r}")
    _design["horizon"] = float(horizon)
    if start is None:
        warmup = DEFAULTS["train"]["warmup_steps"] if warmup_steps is None else warmup_steps
        start = default_start(warmup, horizon)
    _design["start"] = float(start)


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
