"""The one sign rule of every decision over views (the clock, the scale, a partial): a claim holds
when every view rejects (p < α) and every view's ρ has one sign, the claimed one when a sign is
claimed. A feature that follows the loss one way beyond the clock and the other way beyond the
scale tracks it in no one sign: the views' p's alone do not make a claim. The discovery hits
(``confirm.is_hit``), the confirmation, the groups' family, the diagnostics' "beats"
(``diagnostics.rejects_in_sign``) and the primary family all decide by ``holds_in_one_sign``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
