"""Effect sizes with intervals for the between-seed contrasts (``seed_contrast``).

Within each model m, X and Y are the feature's and the loss's seed deviations, each scaled to unit
sum of squares; in the scale view Y is the loss's residual on the scale's deviations and X is
scaled by the feature's residual sum of squares (the feature re-regressed, as the test does). The
effect β is the slope in X = β·s_m·Y + E (s_m the claimed sign, +1 for exploratory rows), common to
the pooled models. Under the calibration simulator's model (x = trend + r·u + √(1 − r²)·e,
y = trend + u, u and e alike) β ≈ r, the planted share: that link is the simulator's, not a law.

Interval: the registered statistic (a model's ρ, or the pooled S = mean_m s_m·ρ_m) applied to
X − β0·s_m·Y tests β = β0, exactly for the clock's view when E is exchangeable across seeds. The
equal-tailed 1 − α interval is {β0: p_greater(β0) ≥ α/2 and p_less(β0) ≥ α/2}, its ends found by
bisection to ``TOL``; the point estimate is Hodges–Lehmann's, the β0 where the two one-sided p
balance. At β0 = 0 the test is the row's, so the interval excludes 0 exactly when the row's
two-sided p (twice the smaller one-sided p) is below α. No bootstrap over seeds; with fewer than
``MIN_ARRANGEMENTS`` arrangements (one model of 3 seeds has 6) no interval.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from topotrain.analysis.inference.seed_contrast import (
    CONTRAST_VIEWS,
    EXACT_LIMIT,
    POOLED,
    _residual,
    mc_draws,
    model_inputs,
    permutation_p,
    permutation_rhos,
    pooled_null,
    view_cell,
)
from topotrain.analysis.inference.stats import ALPHA

MIN_ARRANGEMENTS = 40  # below this a 95 % interval's tails (2.5 % each) cannot be reached
TOL = 1e-4  # bisection stops when an end is known within this
BRACKET = 2.0**20  # largest |β0 − estimate| searched; beyond it an end is unbounded
EFFECT_COLUMNS = ["effect", "effect_ci_low", "effect_ci_high", "effect_note"]


@dataclass(frozen=True)
class EffectCell:
    """One model's standardised deviations (k seeds × n checkpoints) and its seed permutations."""

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray | None
    perms: np.ndarray
    sign: float = 1.0

    def null(self, beta0: float) -> np.ndarray:
        """ρ of X − β0·s·Y with Y under every permutation of the feature's seed rows."""
        return permutation_rhos(self.x - beta0 * self.sign * self.y, self.y, self.perms, self.z)


def effect_cell(
    mats: dict[str, np.ndarray],
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


def _edge(accepts: Callable[[float], bool], start: float, direction: float) -> float:
    """The end of {β: accepts(β)} from ``start`` (accepted) towards ``direction`` (±1): brackets
    by doubling steps, then bisects to TOL; ±inf when still accepted BRACKET away."""
    step, inside = 0.5, start
    while accepts(start + direction * step):
        inside = start + direction * step
        if step >= BRACKET:
            return direction * math.inf
        step *= 2
    outside = start + direction * step
    while abs(outside - inside) > TOL:
        mid = (inside + outside) / 2
        inside, outside = (mid, outside) if accepts(mid) else (inside, mid)
    return (inside + outside) / 2


def effect_interval(cells: list[EffectCell | None], alpha: float = ALPHA, seed: int = 0) -> dict:
    """EFFECT_COLUMNS of the pooled β over the defined cells: Hodges–Lehmann estimate and the
    equal-tailed 1 − alpha interval from inverting the pooled seed-permutation test."""
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
    low = _edge(lambda b: ps(b)[0] >= alpha / 2, balance, -1.0)
    high = _edge(lambda b: ps(b)[1] >= alpha / 2, balance, 1.0)
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
) -> pd.DataFrame:
    """EFFECT_COLUMNS per (model, feature, target, view) of both contrast views (+1 signs), then
    pooled over models (model ``pooled``): the exploratory rows' effects beside their p.
    ``inputs``: ``model_inputs`` of ``df`` when the caller has them already."""
    if inputs is None:
        inputs = model_inputs(df, list(features) + list(targets), seed)
    rows, cells = [], {}
    for model, _, mats, perms in inputs:
        for feature, target, view in itertools.product(features, targets, CONTRAST_VIEWS):
            cell = effect_cell(mats, feature, target, view, perms)
            cells.setdefault((feature, target, view), []).append(cell)
            keys = {"model": model, "feature": feature, "target": target, "view": view}
            rows.append(keys | effect_interval([cell], ALPHA, seed))
    for (feature, target, view), per_model in cells.items():
        keys = {"model": POOLED, "feature": feature, "target": target, "view": view}
        rows.append(keys | effect_interval(per_model, ALPHA, seed))
    return pd.DataFrame(rows)


def effect_text(effect: float, low: float, high: float, fmt=lambda v: f"{v:.3g}") -> str:
    """'0.12 [0.03, 0.21]': an effect and its interval, each number by ``fmt``; '0.12 (no
    interval)' where the interval is missing (too few arrangements)."""
    if not np.isfinite(float(low)):
        return f"{fmt(effect)} (no interval)"
    return f"{fmt(effect)} [{fmt(low)}, {fmt(high)}]"
