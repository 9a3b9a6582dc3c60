"""The co-movement view at a horizon H (``seed_contrast.horizon_lag``, ``cell_deviations``): the
moves span H steps whatever the checkpoint spacing, so a denser series adds moves and keeps the
estimand; and the speed warps (``warp_regressors``) leave it, a warm-up kink included."""

import numpy as np
import pytest

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.inference.comovement import _move_basis
from topotrain.analysis.inference.primary import claim_views
from topotrain.analysis.inference.seed_contrast import (
    HORIZON,
    SCALE,
    START,
    STEPS,
    deviations,
    seed_permutations,
    view_cell,
    warp_regressors,
)


def _study(spacing_every: int, sim: dict, t: np.ndarray) -> list[dict]:
    keep = slice(None, None, spacing_every)
    return [
        {"x": sim["x"][0, m][:, keep], "y": sim["y"][0, m][:, keep], SCALE: sim["l"][0, m][:, keep]}
        | {STEPS: t[keep], HORIZON: np.array(100.0)}
        for m in range(sim["x"].shape[1])
    ]


def test_the_implied_comovement_is_the_same_at_every_spacing_that_reaches_h():
    """β_co of the level coupling at H = 100 (closed form, ``persistent.implied``): one value at
    51, 101 and 201 checkpoints over 5,000 steps, where one move spans 1, 2 and 4 spacings."""
    b = 0.5
    got = [pe.implied("level", b, pe.Setting(5, n, 0.0))["seed_comove"] for n in (51, 101, 201)]
    assert [pe.Setting(5, n).lag() for n in (51, 101, 201)] == [1, 2, 4]
    assert np.allclose(got, got[0], atol=1e-12)
    qx, qy = 1 - pe.PHI["x"], 1 - pe.PHI["y"]  # by hand at 100 steps, w = 0
    assert got[0] == pytest.approx(b * qy / np.sqrt((b * b * qy + (1 - b * b) * qx) * qy))


def test_beta_co_at_h_on_51_and_201_checkpoints_of_the_same_seeds_agree():
    """One simulated study (5 models × 5 seeds × 201 checkpoints, level coupling β = 0.6), and the
    same seeds kept at every 4th checkpoint (51): each one's β_co at H = 100 lies inside the
    other's 95 % interval (before the horizon, the moves between checkpoints measured other
    things at the two spacings: ``implied`` at lag 1 differs by 0.1 here)."""
    s = pe.Setting(5, 201, 0.0)
    sim = pe.simulate("level_b0.6", s, np.random.default_rng(11), 1)
    perms = [seed_permutations(5)] * s.models
    views = {"co_clock": ("seed_comove", None)}
    res = {}
    for every in (1, 4):
        mats = _study(every, sim, s.t())
        res[every] = claim_views(mats, perms, [1.0] * s.models, "x", "y", 0, views)
    (dense, sparse) = res[1], res[4]
    for a, b in ((dense, sparse), (sparse, dense)):
        assert b["effect_co_clock_ci_low"] <= a["effect_co_clock"] <= b["effect_co_clock_ci_high"]
    assert dense["effect_co_clock_ci_high"] - dense["effect_co_clock_ci_low"] < (
        sparse["effect_co_clock_ci_high"] - sparse["effect_co_clock_ci_low"]
    )  # more moves, more precision
    lag1 = pe.implied("level", 0.6, pe.Setting(5, 201, 0.0))
    assert dense["effect_co_clock"] > 0.2 and lag1["seed_comove"] > 0.2


def test_a_pure_speed_warp_through_a_warm_up_kink_leaves_almost_nothing():
    """Trends read at kinked(t·(1 + ε_s)), ε_s ~ N(0, 0.02²), no noise, 51 checkpoints (the kink
    on one): the H-step moves of the seed deviations less their fit on the warp regressors' moves
    keep < 0.1 % of their norm (the 90th percentile of 20 draws; one central slope kept 57 %).
    Not at 201 checkpoints: moves that straddle the kink keep 10–14 % (docs/comovement.md)."""
    s = pe.Setting(5, 51, 0.0)
    t, lag = s.t(), s.lag()
    left = []
    for draw in range(20):
        eps = np.random.default_rng(draw).normal(0, pe.WARP_SD, (5, 1))
        curves = pe._trends(pe.kinked(t * (1 + eps)))
        q = _move_basis(warp_regressors(list(curves), t, lag), lag)
        for v in curves:
            d = deviations(v)
            e = d[:, lag:] - d[:, :-lag]
            left.append(np.linalg.norm(e - e @ q @ q.T) / np.linalg.norm(e))
    assert np.percentile(left, 90) < 0.001


def test_the_warp_regressors_are_the_same_for_every_arrangement_of_the_seeds():
    rng = np.random.default_rng(3)
    t = np.arange(0, 5001, 100.0)
    curves = [rng.normal(size=(5, t.size)).cumsum(axis=1) for _ in range(3)]
    base = warp_regressors(curves, t, 1)
    assert base.shape == (t.size, 5 + 12)  # the smooth basis, 4 per curve
    for perm in seed_permutations(5)[::17]:
        assert np.allclose(warp_regressors([c[perm] for c in curves], t, 1), base, atol=1e-12)


def test_a_run_shorter_than_h_or_sparser_than_h_says_so():
    from topotrain.analysis.inference.seed_contrast import contrast_cell

    rng = np.random.default_rng(0)
    base = {"x": rng.normal(size=(3, 6)), "y": rng.normal(size=(3, 6))}
    perms = seed_permutations(3)
    sparse = base | {STEPS: np.arange(6) * 500.0, HORIZON: np.array(100.0), START: np.array(0.0)}
    row, _ = contrast_cell(sparse, "x", "y", "seed_comove", perms)
    assert np.isnan(row["p"]) and "no 100-step move" in row["note"]
    short = base | {STEPS: np.arange(6) * 10.0, HORIZON: np.array(100.0), START: np.array(0.0)}
    row, _ = contrast_cell(short, "x", "y", "seed_comove", perms)
    assert np.isnan(row["p"]) and "fewer than 2 moves" in row["note"]
    ok = base | {STEPS: np.arange(6) * 10.0, HORIZON: np.array(20.0), START: np.array(0.0)}
    row, _ = contrast_cell(ok, "x", "y", "seed_comove", perms)
    assert row["n"] == 3 * 4 and np.isfinite(row["p"])
    _, cell = view_cell(ok, "x", "y", "seed_comove")
    assert cell["x"].shape == (3, 4)
    late = ok | {START: np.array(30.0)}  # checkpoints 30, 40, 50: one 20-step move
    row, _ = contrast_cell(late, "x", "y", "seed_comove", perms)
    assert np.isnan(row["p"]) and "from step 30" in row["note"]
    _, cell = view_cell(ok | {START: np.array(20.0)}, "x", "y", "seed_comove")
    assert cell["x"].shape == (3, 2)  # 20 → 40, 30 → 50


def test_the_moves_start_h_after_the_warm_up_by_default_and_a_job_sets_its_own():
    from topotrain.analysis.inference import seed_contrast as sc
    from topotrain.config import DEFAULTS
    from topotrain.jobs.common import comove_design

    assert sc.default_start(200, 100) == 300.0
    try:
        sc.set_horizon(100)  # no start: H after the default warm-up
        assert sc.current_start() == DEFAULTS["train"]["warmup_steps"] + 100
        comove_design({"horizon": 50, "comove_from": None, "warmup_steps": 10})
        assert (sc.current_horizon(), sc.current_start()) == (50.0, 60.0)
        comove_design({"horizon": 50, "comove_from": 0, "warmup_steps": 10})
        assert sc.current_start() == 0.0
        mats = sc.model_matrices(
            __import__("pandas").DataFrame(
                {"seed": [0, 0, 1, 1], "step": [0, 50, 0, 50], "x": [1.0, 2, 3, 4]}
            ),
            ["x"],
        )
        assert float(mats[HORIZON]) == 50.0 and float(mats[START]) == 0.0
        with pytest.raises(ValueError, match="analysis.horizon"):
            sc.set_horizon(0)
        with pytest.raises(ValueError, match="analysis.comove_from"):
            sc.set_horizon(100, -5)
    finally:
        sc.set_horizon(DEFAULTS["analysis"]["horizon"])


@pytest.mark.slow
@pytest.mark.parametrize("checkpoints", [51, 201])
def test_the_comovement_pair_holds_alpha_on_a_warm_up_kink_warp(checkpoints):
    """The review's case (issue 56): a warm-up kink, 2 % spread in seed speed, noise sd 0.01, 5
    seeds: 400 studies, the co-movement pair and each of its views pass the binomial rule, with
    the moves from H after the warm-up (the default ``analysis.comove_from``)."""
    from topotrain.analysis.inference import seed_contrast as sc

    sc.set_horizon(100)  # the conftest starts unit fixtures at step 0; this is the default's
    rows = {r["view"]: r for r in pe.measure("kink_warp", pe.Setting(5, checkpoints, 0.0), 400)}
    for view in ("seed_comove", "seed_comove_l2", "comove"):
        assert rows[view]["passes"], (view, rows[view]["rate"])
