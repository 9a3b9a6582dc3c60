"""Effect sizes with intervals for the between-seed contrasts, against brute-force enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from topotrain.analysis.inference.seed_contrast import (
    MC_DRAWS,
    contrast_cell,
    permutation_p,
    pooled_null,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.inference.seed_effect import (
    TOL,
    drawn_cells,
    effect_cell,
    effect_interval,
    effect_text,
    one_sided_ps,
    slope_breaks,
)

ALPHA = 0.05


def raw_model(rng, k: int, n: int, beta: float) -> dict[str, np.ndarray]:
    """k seeds × n checkpoints: a shared trend, x carrying β of y's own fluctuation."""
    t = np.linspace(3, 1, n)
    u, e = rng.normal(0, 0.05, (2, k, n))
    return {"x": -t + beta * u + np.sqrt(1 - beta**2) * e, "y": t + u}


def brute_ps(models: list[dict], beta0: float, signs: list[float]) -> tuple[float, float]:
    """(p_greater, p_less) of the pooled Spearman statistic on X − β0·s·Y over every product
    arrangement, from scipy's Spearman ρ of each permuted feature (X, Y: deviations from the
    across-seed mean, each scaled to unit sum of squares)."""
    per_model = []
    for m, s in zip(models, signs, strict=True):
        dx, dy = (m[c] - m[c].mean(axis=0) for c in "xy")
        x, y = dx / np.sqrt((dx**2).sum()), dy / np.sqrt((dy**2).sum())
        shifted = x - beta0 * s * y
        orders = itertools.permutations(range(len(x)))
        rhos = [stats.spearmanr(shifted[list(p)].ravel(), y.ravel()).statistic for p in orders]
        per_model.append(s * np.array(rhos))
    pooled = [sum(c) / len(c) for c in itertools.product(*per_model)]
    pooled = np.array(pooled)
    tol = 1e-12 * max(1.0, abs(pooled[0]))
    return float(np.mean(pooled >= pooled[0] - tol)), float(np.mean(pooled <= pooled[0] + tol))


@pytest.mark.parametrize(
    ("k", "n_models", "beta", "signs"), [(5, 1, 0.3, [1.0]), (4, 2, 0.0, [1.0, -1.0])]
)
def test_interval_ends_are_where_the_enumerated_one_sided_p_cross_alpha_over_2(
    k, n_models, beta, signs
):
    rng = np.random.default_rng(7)
    models = [raw_model(rng, k, 6, s * beta) for s in signs[:n_models]]
    perms = seed_permutations(k)
    cells = [
        effect_cell(m, "x", "y", "seed_contrast", perms, sign=s)
        for m, s in zip(models, signs, strict=True)
    ]
    res = effect_interval(cells)
    low, high = res["effect_ci_low"], res["effect_ci_high"]
    assert np.isfinite(low) and np.isfinite(high) and low < res["effect"] < high
    assert brute_ps(models, low - 3 * TOL, signs)[0] < ALPHA / 2
    assert brute_ps(models, low + 3 * TOL, signs)[0] >= ALPHA / 2
    assert brute_ps(models, high + 3 * TOL, signs)[1] < ALPHA / 2
    assert brute_ps(models, high - 3 * TOL, signs)[1] >= ALPHA / 2
    for b in np.linspace(low + 3 * TOL, high - 3 * TOL, 9):  # accepted all the way across
        greater, less = brute_ps(models, b, signs)
        assert greater >= ALPHA / 2 and less >= ALPHA / 2
    greater, less = brute_ps(models, res["effect"], signs)  # Hodges–Lehmann: the p balance
    assert abs(greater - less) <= 2 / len(perms) ** n_models + 1e-12 or min(greater, less) > 0.4


@pytest.mark.parametrize("n", [3, 10, 51])
def test_the_interval_holds_every_beta0_its_own_test_accepts_on_a_fine_grid(n):
    """p(β0) of Spearman ranks is not monotone in β0: past a first rejected β0 the test can
    accept again. On 2 000 β0 spanning the interval and half its width beyond each end, every β0
    that ``one_sided_ps`` accepts (both one-sided p ≥ α/2) lies inside the reported interval:
    one size of 5 seeds (a group's smallest with an interval; 6 draws) and 3 pooled sizes of 3
    seeds (2 draws), at n checkpoints. Before the hull: 2 of 6 draws missed at 3 checkpoints
    (accepted up to 1.303, reported up to 1.195), 1 of 6 at 10 (accepted from −0.734, reported
    from −0.722)."""
    for k, n_models, draws in [(5, 1, 6), (3, 3, 2)]:
        perms = seed_permutations(k)
        for draw in range(draws):
            rng = np.random.default_rng([n, k, draw])
            beta = rng.uniform(-0.5, 0.5)
            models = [raw_model(rng, k, n, beta) for _ in range(n_models)]
            cells = [effect_cell(m, "x", "y", "seed_contrast", perms) for m in models]
            res = effect_interval(cells)
            low, high = res["effect_ci_low"], res["effect_ci_high"]
            half = (high - low) / 2
            grid = np.linspace(low - half, high + half, 2000)
            accepted = [b for b in grid if min(one_sided_ps(cells, b)) >= ALPHA / 2]
            assert low <= min(accepted) and max(accepted) <= high, (k, draw, low, high, accepted)


def test_spearman_p_changes_only_at_the_slope_breaks():
    """The scan's premise: between two consecutive β0 where two cells of X − β0·Y tie
    (``slope_breaks``), the ranks and so both one-sided p are constant; across breaks they do
    change (one size of 5 seeds × 3 checkpoints: 105 breaks, p read at 3 points per piece)."""
    rng = np.random.default_rng(8)
    cells = [
        effect_cell(raw_model(rng, 5, 3, 0.3), "x", "y", "seed_contrast", seed_permutations(5))
    ]
    breaks = np.unique(slope_breaks(cells))
    assert breaks.size == 15 * 14 // 2
    per_piece = []
    for a, b in zip(breaks[:-1], breaks[1:], strict=True):
        ps = {one_sided_ps(cells, a + f * (b - a)) for f in (0.01, 0.5, 0.99)}
        assert len(ps) == 1, (a, b, ps)
        per_piece.append(ps.pop())
    assert len(set(per_piece)) > 10


def test_interval_excludes_zero_exactly_when_the_two_sided_test_rejects():
    """Excluding 0 implies rejecting at 0 always; on these draws (4 sizes × 3 seeds × 20
    checkpoints) no rejected 0 falls in a gap of the accepted set, so the two agree."""
    rng = np.random.default_rng(11)
    perms = seed_permutations(3)
    seen = set()
    for draw in range(40):
        beta = (0.0, 0.1, 0.2, 0.3)[draw % 4]
        models = [raw_model(rng, 3, 20, beta) for _ in range(4)]
        nulls = [contrast_cell(m, "x", "y", "seed_contrast", perms)[1] for m in models]
        p = pooled_row(nulls, "seed_contrast", "two-sided")["p"]
        res = effect_interval([effect_cell(m, "x", "y", "seed_contrast", perms) for m in models])
        excludes = res["effect_ci_low"] > 0 or res["effect_ci_high"] < 0
        assert excludes == (p < ALPHA), (draw, p, res)
        seen.add(excludes)
    assert seen == {True, False}


def test_one_model_of_three_seeds_gets_no_interval_and_says_why():
    rng = np.random.default_rng(2)
    cell = effect_cell(raw_model(rng, 3, 30, 0.5), "x", "y", "seed_contrast", seed_permutations(3))
    res = effect_interval([cell])
    assert np.isnan(res["effect_ci_low"]) and res["effect_note"] == (
        "3 seeds: no 95% interval (6 arrangements)"
    )


def test_the_scale_view_standardises_the_re_regressed_feature():
    """Scale view: Y is the loss's residual on the scale, X the feature scaled by its residual
    norm; the least-squares slope (Σ X·Y) equals the Pearson r of the two lstsq residuals."""
    rng = np.random.default_rng(5)
    m = raw_model(rng, 4, 15, 0.4) | {"l2_norm_mean": rng.normal(size=(4, 15))}
    cell = effect_cell(m, "x", "y", "seed_contrast_l2", seed_permutations(4))
    d = {c: (m[c] - m[c].mean(axis=0)).ravel() for c in m}
    z = d["l2_norm_mean"][:, None]
    ex, ey = (d[c] - z @ np.linalg.lstsq(z, d[c], rcond=None)[0] for c in "xy")
    r = (ex @ ey) / np.sqrt((ex @ ex) * (ey @ ey))
    assert (cell.x * cell.y).sum() == pytest.approx(r, abs=1e-12)
    assert (cell.y**2).sum() == pytest.approx(1.0)


def test_the_effect_recovers_a_shift_planted_exactly():
    """X = β·Y + E with E a fixed exchangeable field: the estimate lies near β and the interval
    covers it (8 models × 3 seeds, 336 cells each)."""
    rng = np.random.default_rng(3)
    perms = seed_permutations(3)
    cells = []
    for _ in range(8):
        y, e = rng.normal(size=(2, 3, 112))
        y, e = y - y.mean(axis=0), e - e.mean(axis=0)
        y, e = y / np.sqrt((y**2).sum()), e / np.sqrt((e**2).sum())
        x = 0.4 * y + np.sqrt(1 - 0.4**2) * e
        cells.append(effect_cell({"x": x, "y": y}, "x", "y", "seed_contrast", perms))
    res = effect_interval(cells)
    assert res["effect_ci_low"] < 0.4 < res["effect_ci_high"]
    assert res["effect"] == pytest.approx(0.4, abs=0.08)


def test_two_sided_p_is_twice_the_smaller_one_sided_p():
    null = np.array([0.5, 0.1, 0.7, -0.2, 0.5, 0.9, -0.6, 0.3])
    greater, less = 4 / 8, 6 / 8  # s ≥ 0.5: 0.5, 0.7, 0.5, 0.9; s ≤ 0.5: six of them
    assert permutation_p(null, "greater") == greater
    assert permutation_p(null, "less") == less
    assert permutation_p(null, "two-sided") == 2 * min(greater, less)
    with pytest.raises(ValueError, match="alternative"):
        permutation_p(null, "both")


def brute_partial_ps(model: dict, beta0: float) -> tuple[float, float]:
    """(p_greater, p_less) of the scale view on X − β0·Y for one model, by lstsq: Y the loss's
    residual on the scale's deviations (unit norm), X the feature's deviations over the norm of
    their residual; every permuted feature regressed on the scale again, Pearson r with Y."""
    d = {c: model[c] - model[c].mean(axis=0) for c in model}
    z = d["l2_norm_mean"].ravel()[:, None]

    def resid(v):
        return v - z @ np.linalg.lstsq(z, v, rcond=None)[0]

    ey = resid(d["y"].ravel())
    y = ey / np.linalg.norm(ey)
    x = d["x"] / np.linalg.norm(resid(d["x"].ravel()))
    shifted = x - beta0 * y.reshape(x.shape)
    rs = []
    for p in itertools.permutations(range(len(x))):
        e = resid(shifted[list(p)].ravel())
        rs.append(e @ y / np.linalg.norm(e))
    rs = np.array(rs)
    return float(np.mean(rs >= rs[0] - 1e-12)), float(np.mean(rs <= rs[0] + 1e-12))


def test_scale_view_interval_ends_match_an_enumeration_with_lstsq():
    rng = np.random.default_rng(9)
    model = raw_model(rng, 5, 6, 0.4) | {"l2_norm_mean": rng.normal(size=(5, 6))}
    cell = effect_cell(model, "x", "y", "seed_contrast_l2", seed_permutations(5))
    res = effect_interval([cell])
    low, high = res["effect_ci_low"], res["effect_ci_high"]
    assert brute_partial_ps(model, low - 3 * TOL)[0] < ALPHA / 2
    assert brute_partial_ps(model, low + 3 * TOL)[0] >= ALPHA / 2
    assert brute_partial_ps(model, high + 3 * TOL)[1] < ALPHA / 2
    assert brute_partial_ps(model, high - 3 * TOL)[1] >= ALPHA / 2


def test_a_monte_carlo_pooled_null_reads_only_its_draws_and_gives_the_same_p():
    """Two models × 8 seeds (40 320² arrangements: Monte Carlo): one_sided_ps evaluates only the
    drawn permutations and equals pooled_null over every permutation's ρ, to the last bit."""
    rng = np.random.default_rng(4)
    perms = seed_permutations(8)
    models = [raw_model(rng, 8, 10, 0.3), raw_model(rng, 8, 10, -0.1)]
    cells = [
        effect_cell(m, "x", "y", "seed_contrast", perms, sign=s)
        for m, s in zip(models, [1.0, -1.0], strict=True)
    ]
    drawn = drawn_cells(cells, seed=3)
    assert [len(c.perms) for c, at in drawn] == [MC_DRAWS + 1] * 2  # 10 000 of 40 320 each
    for beta0 in (-0.2, 0.0, 0.25):
        null, exact = pooled_null([c.null(beta0) for c in cells], [1.0, -1.0], seed=3)
        full = (permutation_p(null, "greater", exact), permutation_p(null, "less", exact))
        assert not exact and one_sided_ps(cells, beta0, 3, drawn) == full


def test_effect_text_prints_the_estimate_and_its_interval_or_says_there_is_none():
    assert effect_text(0.1234, -0.05, 0.3) == "0.123 [-0.05, 0.3]"
    assert effect_text(0.1234, np.nan, np.nan) == "0.123 (no interval)"
    assert effect_text(0.5, 0.25, 1.0, lambda v: f"{v:.1f}") == "0.5 [0.2, 1.0]"
