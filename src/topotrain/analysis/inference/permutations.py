"""Seed-label permutations: the exact or Monte Carlo null of a between-seed contrast.

A model's null permutes its k seed labels: all k! arrangements up to ``EXACT_SEEDS`` seeds, else
``MC_DRAWS`` uniform ones (``seed_permutations``). ``permutation_rhos`` gives the statistic under
each (Spearman ρ of the centred-rank deviations, or the partial r after the scale is regressed out
again per arrangement), ``permutation_p`` the p of the observed one among them, and
``pooled_null`` the null of S = mean_m s_m·ρ_m over the product of the models' groups: enumerated
up to ``EXACT_LIMIT`` arrangements, else ``MC_DRAWS`` draws (``mc_draws``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

RESIDUAL_TOL = 1e-12  # rank residuals with Σe² below this fraction of Σ(r − r̄)² are exactly zero
EXACT_SEEDS = 8  # all k! permutations up to this many seeds (40 320)
EXACT_LIMIT = 2_000_000  # pooled null enumerated up to this many arrangements
MC_DRAWS = 9_999  # Monte Carlo draws beyond those limits


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


def target_side(dy: np.ndarray, dz: np.ndarray | None = None) -> np.ndarray:
    """``dy``'s side of ``permutation_rhos``, which the permutations leave alone: its centred
    ranks, or (partial on ``dz``) its centred deviations' residual on dz's; a caller that tests
    many features against one target computes it once."""
    if dz is None:
        return _centred_ranks(dy)
    return _residual(dy - dy.mean(), dz - dz.mean())


def permutation_rhos(
    dx: np.ndarray,
    dy: np.ndarray,
    perms: np.ndarray,
    dz: np.ndarray | None = None,
    ry: np.ndarray | None = None,
) -> np.ndarray:
    """ρ of the deviations with the feature's seed rows permuted by each row of ``perms``.

    Plain (Spearman): R are centred ranks over all cells, G = R_x·R_yᵀ (k × k),
    ρ_π = Σ_i G[π(i), i] / √(Σ R_x² Σ R_y²). Partial on dz (Pearson of linear residuals, so a
    feature that is a linear function of the scale plus noise leaves only the noise): with X, Y, Z
    the centred deviations, e_y = Y − (ΣYZ/ΣZ²)·Z stays; the feature's rows are permuted first and
    regressed on Z again, so with G = X·e_yᵀ and H = X·Zᵀ, ρ_π = Σ_i G[π(i), i] /
    √((Σ X² − (Σ_i H[π(i), i])² / Σ Z²) Σ e_y²) (e_y ⟂ Z). The first row of perms is the
    identity; NaN everywhere when either side has nothing left. ``ry``: ``target_side(dy, dz)``
    when the caller has it (the same numbers, not computed again).
    """
    proj = np.zeros(len(perms))
    if dz is None:
        rx = _centred_ranks(dx)
    else:
        rx, rz = dx - dx.mean(), dz - dz.mean()
        ss_z = float((rz * rz).sum())
        if not ss_z or not _residual(rx, rz).any():  # no scale, or the feature is linear in it
            return np.full(len(perms), np.nan)
        proj = _permuted_traces(rx @ rz.T, perms) ** 2 / ss_z
    ry = target_side(dy, dz) if ry is None else ry
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
