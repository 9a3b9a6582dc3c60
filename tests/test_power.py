"""Power of the primary claims for a design (analysis/calibration/power.py and power_design.py),
against direct counts over the same simulated studies, a hand-written BH and known AR
coefficients."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from topotrain.analysis.calibration import power
from topotrain.analysis.calibration.power import (
    GRID,
    PowerCurve,
    cached_power,
    claim_p,
    claim_pvalues,
    power_rows,
)
from topotrain.analysis.calibration.power_design import ar_white, fit_noise, study_design
from topotrain.analysis.calibration.simulator import (
    Design,
    Noise,
    claim_feature,
    planted_share,
    simulate_family,
)
from topotrain.analysis.inference.primary import claim_views
from topotrain.analysis.inference.seed_contrast import (
    SCALE,
    contrast_cell,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.inference.verdicts import read_paper_values

PAPER = ROOT / "workflow" / "data" / "paper_values.csv"
SMALL = Design((3, 2, 2), 3, 12)  # 3/2/2 models × 3 seeds × 12 checkpoints: fast


def bh_by_hand(p: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p: min over j ≥ rank of p_(j)·m/j, capped at 1."""
    m, order = len(p), np.argsort(p)
    adjusted = [min(1.0, min(p[order[j]] * m / (j + 1) for j in range(i, m))) for i in range(m)]
    out = [0.0] * m
    for i, idx in enumerate(order):
        out[idx] = adjusted[i]
    return out


def direct_p(x, y, scale, k: int) -> float:
    """One claim's p on one study, the level view's clock and scale pooled contrasts computed
    here."""
    mats = [{"x": a, "y": b, SCALE: c} for a, b, c in zip(x, y, scale, strict=True)]
    perms = seed_permutations(k)
    views = []
    for view in ("seed_contrast", "seed_contrast_l2"):
        nulls = [contrast_cell(m, "x", "y", view, perms)[1] for m in mats]
        views.append(pooled_row(nulls, view, "greater", 0, [1.0] * len(mats))["p"])
    return max(views)


def test_power_rows_over_processes_are_the_rows_of_one():
    assert power_rows(SMALL, sesoi=0.3, n_sim=12, seed=5, threads=3) == power_rows(
        SMALL, sesoi=0.3, n_sim=12, seed=5
    )


def test_power_at_sesoi_equals_a_direct_count_of_bh_rejections_over_the_same_studies():
    n_sim, delta = 25, 0.3
    rows = power_rows(SMALL, sesoi=delta, n_sim=n_sim, seed=3)
    sim = simulate_family(SMALL, n_sim, 3)
    hits = np.zeros(3, int)
    for i in range(n_sim):
        ps = {}
        for c, n in enumerate(SMALL.models):
            y, scale, u, e = sim["y"][i, :n], sim["l"][i, :n], sim["u"][i, :n], sim["e"][c, i, :n]
            for r in (0.0, delta):
                x = sim["fx"] + r * u + math.sqrt(1 - r * r) * e
                ps[c, r] = direct_p(x, y, scale, SMALL.seeds)
        for c in range(3):
            family = [ps[j, delta if j == c else 0.0] for j in range(3)]
            hits[c] += bh_by_hand(family)[c] < 0.05
    assert [row["power_at_sesoi"] for row in rows] == pytest.approx(hits / n_sim)
    assert hits.sum() > 0  # the count is not trivially 0


def test_claim_p_is_the_reports_claim_p():
    """The fast path (contrast_cell + pooled_row) gives the p of primary.claim_views."""
    sim = simulate_family(SMALL, 3, 1)
    perms = seed_permutations(3)
    for i in range(3):
        x = sim["fx"] + 0.3 * sim["u"][i, :3] + math.sqrt(1 - 0.09) * sim["e"][0, i, :3]
        y, scale = sim["y"][i, :3], sim["l"][i, :3]
        mats = [{"x": a, "y": b, SCALE: c} for a, b, c in zip(x, y, scale, strict=True)]
        views = claim_views(mats, [perms] * 3, [1.0] * 3, "x", "y")
        assert claim_p(x, y, scale, perms) == max(views["p_clock"], views["p_scale"])


def deviation_effects(x, y, scale) -> tuple[np.ndarray, np.ndarray]:
    """Per study and model of (study, model, seed, checkpoint) arrays: the clock's β (the
    correlation of the seed deviations of x and y) and the scale's (the correlation of their
    least-squares residuals on the norm's deviations, numpy's lstsq)."""
    clock, partial = [], []
    for xs, ys, ls in zip(x, y, scale, strict=True):
        for a, b, c in zip(xs, ys, ls, strict=True):
            dx, dy, dl = (v - v.mean(axis=0) for v in (a, b, c))
            dx, dy, dl = dx.ravel(), dy.ravel(), dl.ravel()
            clock.append(np.corrcoef(dx, dy)[0, 1])
            coef = np.linalg.lstsq(np.c_[dl], np.c_[dx, dy], rcond=None)[0]
            res = np.c_[dx, dy] - np.c_[dl] @ coef
            partial.append(np.corrcoef(res.T)[0, 1])
    return np.array(clock), np.array(partial)


def test_the_planted_effect_is_delta_in_the_scale_view_that_binds_the_claims_p():
    """With the norm carrying c = −0.7 of the loss's fluctuation, the feature planted at β = Δ has
    the scale view's β (the partial correlation on the norm) = Δ within Monte Carlo error, and the
    clock's β = r = Δ/√(1 − c² + Δ²c²) = 0.139 above it: the scale view is the weaker, the one the
    claim's p (the larger of the two) rests on. Planted at r = Δ it was Δ·√(1 − c²)/√(1 − Δ²c²)
    = 0.073."""
    delta, c = 0.1, -0.7
    design = Design((5, 5, 5), 8, 51, Noise(scale_loss=c))
    sim = simulate_family(design, 200, 4)
    x = claim_feature(sim, design, 0, delta)
    clock, scale = deviation_effects(x, sim["y"], sim["l"])
    se = scale.std(ddof=1) / math.sqrt(scale.size)
    assert abs(scale.mean() - delta) < 3 * se, (scale.mean(), se)
    r = delta / math.sqrt(1 - c * c + delta * delta * c * c)
    assert clock.mean() == pytest.approx(r, abs=3 * clock.std(ddof=1) / math.sqrt(clock.size))
    assert planted_share(delta, c) == pytest.approx(r)
    assert planted_share(delta, 0.0) == delta and planted_share(1.0, c) == 1.0


def test_power_at_r0_is_within_monte_carlo_error_of_at_most_alpha():
    design = Design((5, 4, 4), 3, 20)
    n_sim = 300
    sim = simulate_family(design, n_sim, 0)
    p_null = np.stack([claim_pvalues(sim, design, c, 0.0) for c in range(3)])
    se = math.sqrt(0.05 * 0.95 / n_sim)
    for c in range(3):
        assert PowerCurve(sim, design, c, p_null, 0.1, 0, 0.05).power(0) <= 0.05 + 3 * se
    any_rejection = np.mean([min(bh_by_hand(list(f))) < 0.05 for f in p_null.T])
    assert any_rejection <= 0.05 + 3 * se  # BH keeps the family-wise rate under the global null


def power_at_delta(design: Design, n_sim: int, delta: float) -> float:
    sim = simulate_family(design, n_sim, 0)
    p_null = np.stack([claim_pvalues(sim, design, c, 0.0) for c in range(3)])
    return PowerCurve(sim, design, 0, p_null, delta, 0, 0.05).power(GRID)


def test_power_increases_with_seeds():
    three = power_at_delta(Design((5, 4, 4), 3, 51), 80, 0.1)
    five = power_at_delta(Design((5, 4, 4), 5, 51), 80, 0.1)
    se = math.sqrt(0.25 / 80)
    assert five > three + 2 * math.sqrt(2) * se, (three, five)  # 0.45 → 0.85 at 100 draws


def test_mde_interpolates_between_the_grid_points_around_the_crossing():
    """A curve known by construction: power(j) = min(1, j²/100) at r = j·Δ/GRID; 0.8 is crossed
    between j = 8 (0.64) and j = 9 (0.81): r = (8 + 0.16/0.17)·Δ/GRID."""
    curve = PowerCurve(None, SMALL, 0, None, 0.1, 0, 0.05)
    asked = []

    def power_of(j: int) -> float:
        asked.append(j)
        return min(1.0, j * j / 100)

    curve.power = power_of
    assert curve.crossing(0.8) == pytest.approx((8 + 0.16 / 0.17) * 0.025)
    assert sorted(set(asked)) == [4, 8, 9, 10, 12, 16]  # doubling from Δ, then bisection
    assert curve.crossing(0.0) == 0.0
    curve.power = lambda j: j / 1000  # never reaches 0.8 at r ≤ 1
    assert math.isnan(curve.crossing(0.8))


def test_cache_returns_the_same_numbers_without_recomputing(tmp_path, monkeypatch):
    calls = []
    compute = power.power_rows

    def counted(*args, **kwargs):
        calls.append(args)
        return compute(*args, **kwargs)

    monkeypatch.setattr(power, "power_rows", counted)
    cache = tmp_path / "cache" / "power.json"
    first = cached_power(SMALL, 0.3, 8, 0, cache=cache)
    again = cached_power(SMALL, 0.3, 8, 0, cache=cache)
    assert len(calls) == 1
    np.testing.assert_equal(pd.DataFrame(again).to_numpy(), pd.DataFrame(first).to_numpy())
    cached_power(Design((3, 2, 2), 4, 12), 0.3, 8, 0, cache=cache)  # another design: computed
    cached_power(SMALL, 0.3, 9, 0, cache=cache)  # another n_sim: computed
    assert len(calls) == 3


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"models": (5, 4, 4), "seeds": 0}, "seeds"),
        ({"models": (5, 0, 4), "seeds": 3}, "models"),
        ({"models": (5, 4, 4), "seeds": 3, "checkpoints": 1}, "checkpoints"),
        ({"models": (5, 4, 4), "seeds": 3, "noise": Noise(loss=1.0)}, "noise.loss"),
        ({"models": (5, 4, 4), "seeds": 3, "noise": Noise(features=(0.5,))}, "noise.features"),
    ],
)
def test_a_bad_design_raises_naming_the_parameter(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Design(**kwargs)


def feature_table(design: Design, n_studies: int = 1, seed: int = 5) -> pd.DataFrame:
    """A feature table of simulated runs (paper's model names, r = 0 for every claim)."""
    sim = simulate_family(design, n_studies, seed)
    names = ["tiny-3k", "small-7k", "med-21k", "large-46k", "xl-97k"]
    rows = []
    for m, name in enumerate(names[: max(design.models)]):
        for s in range(design.seeds):
            for t in range(design.checkpoints):
                row = {"model": name, "seed": 42 + s, "step": 100 * t}
                row |= {"train_loss": sim["y"][0, m, s, t], SCALE: sim["l"][0, m, s, t]}
                for c, f in enumerate(("h0_total", "np_mean", "h1_total")):
                    row[f] = sim["fx"][t] + sim["e"][c, 0, m, s, t]
                rows.append(row)
    return pd.DataFrame(rows)


def assert_noise_close(fitted: Noise, noise: Noise, tol: float) -> None:
    """Every AR φ, white share v and the norm–loss correlation within ``tol``; a feature with
    φ = 0 (v then undefined) by its implied lag-1 autocorrelation φ·(1 − v) = 0."""
    for name in ("loss", "loss_white", "scale", "scale_white", "scale_loss"):
        assert getattr(fitted, name) == pytest.approx(getattr(noise, name), abs=tol), name
    for phi, v, fphi, fv in zip(
        noise.features, noise.features_white, fitted.features, fitted.features_white, strict=True
    ):
        if phi:
            assert (fphi, fv) == pytest.approx((phi, v), abs=tol)
        else:
            assert fphi * (1 - fv) == pytest.approx(0.0, abs=tol / 2)


def test_fit_noise_round_trips_ar_white_shares_and_the_norms_own_part():
    """fit → simulate → fit: AR(1) + white share per series and c recovered on long series (5
    models × 8 seeds × 1000 checkpoints), and the fit of a study simulated from the fit returns
    the fit. The norm's φ is its own part's (0.6), not its overall lag-1 autocorrelation, which
    mixes in c² of the loss's: 0.36·0.9·0.7 + 0.64·0.6·0.7 = 0.50."""
    noise = Noise(
        loss=0.9,
        features=(0.0, 0.5, 0.8),
        scale=0.6,
        scale_loss=0.6,
        loss_white=0.3,
        features_white=(0.0, 0.2, 0.4),
        scale_white=0.3,
    )
    fitted = fit_noise(feature_table(Design((5, 5, 5), 8, 1000, noise)))
    assert_noise_close(fitted, noise, 0.06)  # ≥ 3 SD: 0.005–0.018 over 20 seeds
    again = fit_noise(feature_table(Design((5, 5, 5), 8, 1000, fitted), seed=6))
    assert_noise_close(again, fitted, 0.08)  # two fits: ≥ 3 SD of their difference


def test_ar_white_solves_the_lag1_and_lag2_autocorrelations_by_hand():
    """Σd² = 8, Σd_t·d_{t+1} = 2, Σd_t·d_{t+2} = 1: ρ₁ = 1/4, ρ₂ = 1/8, φ = ρ₂/ρ₁ = 1/2 and
    v = 1 − ρ₁/φ = 1/2; ρ₂ = 0 (3/6 and 0): AR(1) alone; pooled, the sums add (5/14 and
    1/14: φ = 0.2, v = 1 − 25/14 clipped to 0); nothing varies: NaN."""
    mixed, no_lag2 = np.array([[-2.0, -1, -1, 0, 1, -1]]), np.array([[1.0, 1, 1, -1, -1, -1]])
    assert ar_white([mixed]) == (0.5, 0.5)
    assert ar_white([no_lag2]) == (0.5, 0.0)
    assert ar_white([mixed, no_lag2]) == (0.2, 0.0)
    assert math.isnan(ar_white([np.zeros((3, 5))])[0])


def test_study_design_counts_the_claims_models_seeds_and_shared_checkpoints():
    paper = read_paper_values(PAPER)
    df = feature_table(Design((5, 5, 5), 3, 10))
    df.loc[(df["model"] == "xl-97k") & (df["step"] == 900), "h0_total"] = np.nan
    design, why = study_design(df, paper, Noise())
    assert why == "" and design.models == (5, 4, 4) and design.seeds == 3
    assert design.checkpoints == 9  # TP0's xl-97k lost a checkpoint
    one_seed = df[df["seed"] == 42]
    assert study_design(one_seed, paper, Noise()) == (
        None,
        "1 seed: a between-seed contrast needs at least 2 seeds per model",
    )


def test_study_power_writes_the_level_family_then_every_views_power_on_the_fitted_noise(tmp_path):
    from topotrain.analysis.calibration.power_design import FAMILY, study_power
    from topotrain.analysis.calibration.view_power import COLUMNS, JOINT

    paper = read_paper_values(PAPER)
    df = feature_table(Design((5, 5, 5), 3, 10))
    table = study_power(df, paper, n_sim=20, cache=str(tmp_path / "c.json"), view_draws=3)
    family, views = table[table["view"] == FAMILY], table[table["view"] != FAMILY]
    assert list(family["feature"]) == ["h0_total", "np_mean", "h1_total"]
    assert family["power_at_sesoi"].notna().all() and family["planted"].isna().all()
    assert set(COLUMNS) <= set(table.columns)
    assert len(views) == 3 * 3 * 3 * 3 * 8  # claims × couplings × seeds × checkpoints × views
    assert not views["this_design"].astype(bool).any()  # 10 checkpoints: not on the grid
    assert (views["view"] == JOINT).sum() == 81
    assert views["note"].str.contains("fitted to the study's seed deviations").all()
    off = study_power(df, paper, n_sim=20, cache=str(tmp_path / "c.json"), view_draws=0)
    assert len(off) == 3 and (off["view"] == FAMILY).all()
    assert list(off["power_at_sesoi"]) == list(family["power_at_sesoi"])  # the cache's rows
