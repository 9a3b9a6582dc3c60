"""Effect sizes with intervals for the between-seed contrasts (``seed_contrast``).

Within each model m, X and Y are the feature's and the loss's seed deviations, each scaled to unit
sum of squares; in the scale view Y is the loss's residual on the scale's deviations and X is
scaled by the feature's residual sum of squares (the feature re-regressed, as the test does). The
effect β is the slope in X = β·s_m·Y + E (s_m the claimed sign, +1 for exploratory rows), common to
the pooled models. Under the calibration simulator's model (x = trend + r·u + √(1 − r²)·e,
y = trend + u, u and e alike) β ≈ r, the planted share: that link is the simulator's, not a law.

Interval: the registered statistic (a model's ρ, or the pooled S = mean_m s_m·ρ_m) applied to
X − β0·s_m·Y tests β = β0, exactly for the clock's view when E is exchangeable across seeds. The
equal-tailed 1 − α interval is the hull of the accepted set A = {β0: p_greater(β0) ≥ α/2 and
p_less(β0) ≥ α/2}: p(β0) need not be monotone (the observed ρ falls with β0, the permuted ones
need not), so A can have gaps and islands past its first ends (one size of 5 seeds at 10
checkpoints: 30 of 30 draws non-monotone, 4 with accepted β0 past the first ends). With Spearman
ranks p changes only at the breaks where two cells of a model tie (``slope_breaks``), so each end
is bisected from the estimate to ``TOL``, then one β0 in every piece between consecutive breaks
beyond it is tested until ``SCAN_GAPS`` in a row are rejected (the longest rejected run before a
re-acceptance seen was 7, over about 1,000 ends), and the end is the first rejected β0 past the
outermost accepted one, to TOL. In the scale view (Pearson of residuals) p is continuous and those
β0 serve as a grid. The point estimate is Hodges–Lehmann's, the β0 where the two one-sided p
balance. At β0 = 0 the test is the row's, so the interval excludes 0 only when the row's two-sided
p (twice the smaller one-sided p) is below α; a rejected 0 in a gap of A stays inside (1 of 300
draws of one 5-seed size at 10 checkpoints). No bootstrap over seeds; with fewer than
``MIN_ARRANGEMENTS`` arrangements (one model of 3 seeds has 6) no interval.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd

from topotrain.analysis.inference.breaks import nearest_beyond
from topotrain.analysis.inference.breaks import slope_breaks as breaks_of
from topotrain.analysis.inference.parallel import map_tasks
from topotrain.analysis.inference.permutations import _residual, target_side
from topotrain.analysis.inference.seed_contrast import (
    CONTRAST_VIEWS,
    EXACT_LIMIT,
    POOLED,
    Matrices,
    mc_draws,
    model_inputs,
    permutation_p,
    permutation_rhos,
    pooled_null,
    view_cell,
)
from topotrain.analysis.inference.stats import ALPHA
from topotrain.config.constants import MIN_ARRANGEMENTS

TOL = 1e-4  # bisection stops when an end is known within this
BRACKET = 2.0**20  # largest |β0 − estimate| searched; beyond it an end is unbounded
SCAN_GAPS = 16  # rejected pieces between breaks tested past the outermost accepted β0
EFFECT_COLUMNS = ["effect", "effect_ci_low", "effect_ci_high", "effect_note"]


@dataclass(frozen=True)
class EffectCell:
    """One model's standardised deviations (k seeds × n checkpoints) and its seed permutations."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray | None
    perms: np.ndarray
    sign: float = 1.0
    ry: np.ndarray = field(init=False, repr=False, compare=False)  # Y's side, once

    def __post_init__(self) -> None:
        object.__setattr__(self, "ry", target_side(self.y, self.z))

    def null(self, beta0: float) -> np.ndarray:
        """ρ of X − β0·s·Y with Y under every permutation of the feature's seed rows."""
        x = self.x - beta0 * self.sign * self.y
        return permutation_rhos(x, self.y, self.perms, self.z, self.ry)


def effect_cell(
    mats: Matrices,
    feature: str,
    target: str,
    view: str,
    perms: np.ndarray,
    cond: str | None = None,
    sign: float = 1.0,
) -> EffectCell | None:
    """The EffectCell of one model's ``view`` of (feature, target) from its raw (k, n) matrices
    (``model_matrices``), over the checkpoints every seed shares; None where the contrast is
    undefined (a column missing, one seed, one checkpoint, nothing left varying)."""
    cond, d = view_cell(mats, feature, target, view, cond)
    if feature == cond or d is None:
        return None
    dx, dy = d[feature], d[target]
    if dx.shape[0] < 2 or dx.shape[1] < 2:
        return None
    dz = d[cond] if cond else None
    if dz is not None:
        if not (dz * dz).sum():
            return None
        ex, dy = _residual(dx, dz), _residual(dy, dz)
    else:
        ex = dx
    sx, sy = math.sqrt(float((ex * ex).sum())), math.sqrt(float((dy * dy).sum()))
    if not sx or not sy:
        return None
    return EffectCell(dx / sx, dy / sy, dz, perms, float(sign))


def arrangements(cells: list[EffectCell]) -> int:
    """Size of the pooled null's support: the product of the models' permutation counts."""
    return math.prod(len(c.perms) for c in cells)


Drawn = list[tuple[EffectCell, np.ndarray | None]]


def drawn_cells(cells: list[EffectCell], seed: int = 0) -> Drawn | None:
    """Where the pooled null is Monte Carlo (more than EXACT_LIMIT arrangements), per cell what
    the draws of ``pooled_null`` (``mc_draws``) read, the observed first: the cell restricted to
    the drawn permutations where it has more than it draws (8 seeds: 40 320 permutations, 9 999
    draws: a quarter of the work), else the cell and the indices into its null; None when the
    pooled null is enumerated."""
    if arrangements(cells) <= EXACT_LIMIT:
        return None
    out: Drawn = []
    for c, i in zip(cells, mc_draws([len(c.perms) for c in cells], seed), strict=True):
        rows = np.r_[0, i]
        few = rows.size < len(c.perms)
        out.append((replace(c, perms=np.asfortranarray(c.perms[rows])), None) if few else (c, rows))
    return out


def one_sided_ps(
    cells: list[EffectCell], beta0: float, seed: int = 0, drawn: Drawn | None = None
) -> tuple[float, float]:
    """(p_greater, p_less) of the pooled statistic on X − β0·s_m·Y (one model: its own ρ), as
    ``pooled_null`` gives it; ``drawn`` (``drawn_cells`` of these cells and seed) saves the work
    of the permutations a Monte Carlo null does not draw."""
    drawn = drawn_cells(cells, seed) if drawn is None else drawn
    if drawn is None:
        null, exact = pooled_null([c.null(beta0) for c in cells], [c.sign for c in cells], seed)
    else:  # pooled_null's Monte Carlo sum, term by term, over the drawn permutations only
        terms = (c.sign * (c.null(beta0) if at is None else c.null(beta0)[at]) for c, at in drawn)
        null, exact = sum(terms) / len(drawn), False
    return permutation_p(null, "greater", exact), permutation_p(null, "less", exact)


def slope_breaks(cells: list[EffectCell]) -> np.ndarray:
    """The β0 = (X_i − X_j)/(s·(Y_i − Y_j)) over pairs of cells i, j of one model (unsorted): where
    two cells of X − β0·s·Y tie, so the only β0 where its ranks, and with them the Spearman
    view's ρ and p, change (``breaks.slope_breaks``)."""
    return breaks_of([(c.x, c.sign * c.y) for c in cells])


def _pieces(breaks: np.ndarray, at: float, direction: float, count: int) -> tuple[np.ndarray, bool]:
    """(β0, all): one β0 in each of the first ``count`` or so pieces that ``breaks`` cut the line
    into beyond ``at`` towards ``direction``, nearest first (the midpoints of consecutive breaks);
    where every break is in (all), one more past the last."""
    d, every = nearest_beyond(breaks, at, direction, count)
    ahead = np.r_[(d[1:] + d[:-1]) / 2, d[-1:] + 1.0 if every else []]
    return at + direction * ahead, every


def _bisect(accepts: Callable[[float], bool], inside: float, outside: float) -> tuple[float, float]:
    """(inside, outside) narrowed to TOL apart, ``inside`` still accepted, ``outside`` not."""
    while abs(outside - inside) > TOL:
        mid = (inside + outside) / 2
        inside, outside = (mid, outside) if accepts(mid) else (inside, mid)
    return inside, outside


def _bracket(
    accepts: Callable[[float], bool], start: float, direction: float
) -> tuple[float, float]:
    """(inside, outside) about the first end of {β: accepts(β)} from ``start`` (accepted) towards
    ``direction`` (±1), TOL apart: doubling steps, then bisection; outside ±inf when still
    accepted BRACKET away."""
    step, inside = 0.5, start
    while accepts(start + direction * step):
        inside = start + direction * step
        if step >= BRACKET:
            return inside, direction * math.inf
        step *= 2
    return _bisect(accepts, inside, start + direction * step)


def _edge(accepts: Callable[[float], bool], start: float, direction: float) -> float:
    """The midpoint of ``_bracket``: where ``accepts`` first turns false, to TOL; ±inf when
    still true BRACKET away."""
    inside, outside = _bracket(accepts, start, direction)
    return (inside + outside) / 2 if math.isfinite(outside) else outside


def _hull_end(
    accepts: Callable[[float], bool], start: float, direction: float, breaks: np.ndarray
) -> float:
    """The outer end of {β: accepts(β)} towards ``direction`` from ``start`` (accepted): the first
    end (``_bracket``), then one β0 in each piece between consecutive ``breaks`` beyond it,
    nearest first, until SCAN_GAPS in a row are rejected; from the outermost accepted one the end
    is bisected to its rejected neighbour. Returns the rejected side of that last bisection (TOL
    beyond the last accepted β0); ±inf when still accepted BRACKET away."""
    inside, outside = _bracket(accepts, start, direction)
    if not math.isfinite(outside):
        return outside
    count = 4 * SCAN_GAPS
    while True:
        points, every = _pieces(breaks, inside, direction, count)
        last, rejected = -1, 0
        for i, b in enumerate(points):
            if accepts(float(b)):
                last, rejected = i, 0
            elif (rejected := rejected + 1) >= SCAN_GAPS:
                break
        if every or last + SCAN_GAPS < len(points):
            break
        count *= 4  # accepted β0 up to the last piece taken: take more
    if last < 0:
        return outside
    if last == len(points) - 1:  # past every break
        return _bracket(accepts, float(points[last]), direction)[1]
    return _bisect(accepts, float(points[last]), float(points[last + 1]))[1]


def effect_interval(cells: list[EffectCell | None], alpha: float = ALPHA, seed: int = 0) -> dict:
    """EFFECT_COLUMNS of the pooled β over the defined cells: Hodges–Lehmann estimate and the
    equal-tailed 1 − alpha interval, the hull of the β0 the pooled seed-permutation test accepts
    (both one-sided p ≥ alpha/2; ``_hull_end``)."""
    out = dict.fromkeys(EFFECT_COLUMNS[:3], np.nan) | {"effect_note": ""}
    cells = [c for c in cells if c is not None]
    if not cells:
        return out | {"effect_note": "no model with a defined contrast: no effect"}
    size = arrangements(cells)
    if size < MIN_ARRANGEMENTS:
        seeds = "/".join(sorted({str(c.x.shape[0]) for c in cells}))
        what = f"{len(cells)} models × {seeds} seeds" if len(cells) > 1 else f"{seeds} seeds"
        return out | {"effect_note": f"{what}: no {1 - alpha:.0%} interval ({size} arrangements)"}
    memo: dict[float, tuple[float, float]] = {}
    drawn = drawn_cells(cells, seed)

    def ps(beta0: float) -> tuple[float, float]:
        if beta0 not in memo:
            memo[beta0] = one_sided_ps(cells, beta0, seed, drawn)
        return memo[beta0]

    guess = float(np.mean([c.sign * (c.x * c.y).sum() for c in cells]))  # least-squares slope
    balance = _hodges_lehmann(ps, guess)
    breaks = slope_breaks(cells)
    low = _hull_end(lambda b: min(ps(b)) >= alpha / 2, balance, -1.0, breaks)
    high = _hull_end(lambda b: min(ps(b)) >= alpha / 2, balance, 1.0, breaks)
    return out | {"effect": balance, "effect_ci_low": low, "effect_ci_high": high}


def _hodges_lehmann(ps: Callable[[float], tuple[float, float]], guess: float) -> float:
    """The β0 where p_greater and p_less balance: g = p_greater − p_less rises with β0, and the
    estimate is the midpoint of sup{g < 0} and inf{g > 0}, both walked to from ``guess``."""

    def g(b: float) -> float:
        greater, less = ps(b)
        return greater - less

    at = g(guess)
    below = (
        _edge(lambda b: g(b) >= 0, guess, -1.0)
        if at >= 0
        else _edge(lambda b: g(b) < 0, guess, 1.0)
    )
    above = (
        _edge(lambda b: g(b) <= 0, guess, 1.0)
        if at <= 0
        else _edge(lambda b: g(b) > 0, guess, -1.0)
    )
    return (below + above) / 2 if np.isfinite(below + above) else guess


def effect_table(
    df: pd.DataFrame,
    features: list[str],
    targets: list[str],
    seed: int = 0,
    inputs: list | None = None,
    threads: int = 1,
) -> pd.DataFrame:
    """EFFECT_COLUMNS per (model, feature, target, view) of both contrast views (+1 signs), then
    pooled over models (model ``pooled``): the exploratory rows' effects beside their p.
    ``inputs``: ``model_inputs`` of ``df`` when the caller has them already; the intervals
    spread over ``threads`` processes (``parallel.map_tasks``: the same table)."""
    if inputs is None:
        inputs = model_inputs(df, list(features) + list(targets), seed)
    keys, tasks, cells = [], [], {}
    for model, _, mats, perms in inputs:
        for feature, target, view in itertools.product(features, targets, CONTRAST_VIEWS):
            cell = effect_cell(mats, feature, target, view, perms)
            cells.setdefault((feature, target, view), []).append(cell)
            keys.append({"model": model, "feature": feature, "target": target, "view": view})
            tasks.append([cell])
    for (feature, target, view), per_model in cells.items():
        keys.append({"model": POOLED, "feature": feature, "target": target, "view": view})
        tasks.append(per_model)
    work = partial(effect_interval, alpha=ALPHA, seed=seed)
    intervals = map_tasks(work, tasks, threads)
    return pd.DataFrame([k | row for k, row in zip(keys, intervals, strict=True)])


def effect_text(effect: float, low: float, high: float, fmt=lambda v: f"{v:.3g}") -> str:
    """'0.12 [0.03, 0.21]': an effect and its interval, each number by ``fmt``; '0.12 (no
    interval)' where the interval is missing (too few arrangements)."""
    if not np.isfinite(float(low)):
        return f"{fmt(effect)} (no interval)"
    return f"{fmt(effect)} [{fmt(low)}, {fmt(high)}]"
