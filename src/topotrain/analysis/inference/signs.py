"""The one sign rule of every decision over views (the clock, the scale, a partial): a claim holds
when every view rejects (p < α) and every view's ρ has one sign, the claimed one when a sign is
claimed. A feature that follows the loss one way beyond the clock and the other way beyond the
scale tracks it in no one sign: the views' p's alone do not make a claim. The discovery hits
(``confirm.is_hit``), the confirmation, the groups' family, the diagnostics' "beats"
(``diagnostics.rejects_in_sign``) and the primary family all decide by ``holds_in_one_sign``.
``joint_p``: the primary claim's p over several views, each an intersection–union of its
conditions. ``reversal_ps`` / ``ruled_out``: the per-model half of "reproduced" — a claim over
several models holds only where no claimed model's effect is reversed by its view's Δ, each
model's own exact test at α (an intersection–union rule: level α whatever the other models do;
at 3 seeds, whose smallest exact p is 1/6, it never rules a reversal out)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from topotrain.analysis.inference.seed_contrast import permutation_p, pooled_null
from topotrain.analysis.inference.seed_effect import EffectCell, one_sided_ps
from topotrain.analysis.inference.stats import ALPHA


def common_sign(rhos: Sequence[float], sign: float | None = None) -> float:
    """+1 or −1 when every ρ is finite and of that sign (``sign``'s sign when one is claimed),
    else 0 (no view, an undefined ρ or a ρ of 0, views of both signs, a claimed sign 0 or NaN)."""
    s = np.sign(np.asarray(rhos, float))
    if s.size == 0 or not np.isfinite(s).all():
        return 0.0
    want = s[0] if sign is None else np.sign(float(sign))
    return float(want) if want != 0 and bool((s == want).all()) else 0.0


def holds_in_one_sign(
    ps: Sequence[float], rhos: Sequence[float], alpha: float = ALPHA, sign: float | None = None
) -> bool:
    """Every view's p < alpha and every view's ρ of one sign (``common_sign``: the claimed
    ``sign`` when given, either otherwise); False where a p or a ρ is undefined (NaN)."""
    p = np.asarray(ps, float)
    if p.size == 0 or p.size != np.size(rhos) or not np.isfinite(p).all():
        return False
    return bool((p < alpha).all() and common_sign(rhos, sign) != 0)


def joint_p(views: list[dict[str, list[np.ndarray]]], signs: list[float], seed: int = 0) -> float:
    """Joint p over design views on the same arrangements of seed labels, valid for their
    intersection–union conditions: p_c(a) is condition c's one-sided p of S_c(a) among all
    arrangements (``pooled_null``: S = mean_m s_m·ρ_m), the claim's statistic the smallest over
    views of the largest over its conditions at the observed arrangement, m₀. Only one condition
    per view need be null, so the p is the largest over choices σ of one condition per view of
    #{a: min_v p_σ(v)(a) ≤ m₀} / #arrangements (recalibrating the max over conditions would assume
    every condition null: 0.13 on ``norm_only``). Exact when enumerated, else on the shared
    ``mc_draws``; models undefined anywhere left out; NaN without a condition or a model."""
    conds = [c for v in views for c in v.values()]
    keep = (
        [i for i in range(len(conds[0])) if all(np.isfinite(c[i][0]) for c in conds)]
        if conds
        else []
    )
    if not keep or any(not v for v in views):
        return float("nan")
    per_view = []
    for view in views:
        ps = []
        for cond in view.values():
            stat, _ = pooled_null([cond[i] for i in keep], [signs[i] for i in keep], seed)
            tol = 1e-12 * max(1.0, float(np.abs(stat).max()))
            ps.append((stat.size - np.searchsorted(np.sort(stat), stat - tol, "left")) / stat.size)
        per_view.append(ps)
    m0 = min(max(p[0] for p in ps) for ps in per_view) + 1e-12  # the observed arrangement first
    return max(
        float(np.count_nonzero(np.min(chosen, axis=0) <= m0) / chosen[0].size)
        for chosen in itertools.product(*per_view)
    )


def reversal_ps(cells: Sequence[EffectCell | None], margin: float, seed: int = 0) -> np.ndarray:
    """Per model (``seed_effect.effect_cell`` in its claimed sign), the exact one-sided p of "its
    effect is at most −margin" — reversed by margin or more: p_greater of its own seed-permutation
    test at β0 = −margin (``one_sided_ps`` of that one cell). At least 1/k! with k seeds; NaN where
    the cell is undefined."""
    return np.array(
        [np.nan if c is None else one_sided_ps([c], -float(margin), seed)[0] for c in cells]
    )


def ruled_out(ps_by_condition: Sequence[np.ndarray], alpha: float = ALPHA) -> np.ndarray:
    """Per model, whether its reversal is ruled out (``reversal_ps`` < alpha) in every condition;
    False where a p is undefined."""
    ps = np.asarray(ps_by_condition, float)
    return np.all(np.nan_to_num(ps, nan=1.0) < alpha, axis=0)


def effect_signs(nulls: list[np.ndarray]) -> np.ndarray:
    """Per model, the sign of its between-seed effect's Hodges–Lehmann estimate in the raw
    direction (``seed_effect``, one model): +1 when its observed ρ lies above the centre of its
    seed-permutation null (p_greater < p_less), −1 below, 0 on a balance or where undefined. At
    β0 = 0 the effect's test is the contrast's, and g = p_greater − p_less rises with β0, so the
    estimate (where g crosses 0) has this sign."""
    out = np.zeros(len(nulls))
    for i, null in enumerate(nulls):
        if np.isfinite(null[0]):
            out[i] = np.sign(permutation_p(null, "less") - permutation_p(null, "greater"))
    return out


def signs_held(signs: list[float], by_view: list[np.ndarray]) -> np.ndarray:
    """Per model, whether its effect has its claimed sign s_m in every view (``effect_signs``)."""
    return np.all([np.asarray(e) == np.asarray(signs) for e in by_view], axis=0)


def all_held(held: object) -> bool:
    """Whether signs_held ("k/K") counts every claimed model (K > 0)."""
    k, _, total = str(held).partition("/")
    return total.isdigit() and int(total) > 0 and k == total
