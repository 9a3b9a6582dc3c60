"""The one sign rule of every decision over views (the clock, the scale, a partial): a claim holds
when every view rejects (p < α) and every view's ρ has one sign, the claimed one when a sign is
claimed. A feature that follows the loss one way beyond the clock and the other way beyond the
scale tracks it in no one sign: the views' p's alone do not make a claim. The discovery hits
(``confirm.is_hit``), the confirmation, the groups' family, the diagnostics' "beats"
(``diagnostics.rejects_in_sign``) and the primary family all decide by ``holds_in_one_sign``.
``joint_p``: the primary claim's p over several views, each an intersection–union of its
conditions."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from topotrain.analysis.inference.seed_contrast import pooled_null
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
