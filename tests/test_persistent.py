"""The persistent-noise nulls and power (``calibration.persistent``): the continuous-time process,
its closed-form level β and co-movement β_co, the scenarios and the views' p."""

import math

import numpy as np
import pandas as pd
import pytest
from conftest import unit_comove_params

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.calibration.pass_rule import pass_max
from topotrain.analysis.calibration.simulator import planted_share
from topotrain.analysis.inference.seed_contrast import comovement, warp_regressors


def _pooled_correlations(lag, dev: dict[str, np.ndarray]) -> list[float]:
    """Plain and partial-on-l correlations of the across-seed deviations of x and y, levels then
    first differences, pooled over every cell (numpy's covariance: independent of ``implied``)."""
    out = []
    for diff in (False, True):
        cols = []
        for v in "xyl":
            d = dev[v] - dev[v].mean(axis=2, keepdims=True)
            cols.append((d[..., lag:] - d[..., :-lag] if diff else d).ravel())
        c = np.cov(np.vstack(cols))
        plain = c[0, 1] / math.sqrt(c[0, 0] * c[1, 1])
        r = np.corrcoef(np.vstack(cols))
        partial = (r[0, 1] - r[0, 2] * r[1, 2]) / math.sqrt((1 - r[0, 2] ** 2) * (1 - r[1, 2] ** 2))
        out += [plain, partial]
    return out


@pytest.mark.parametrize(
    "kind, b, white, checkpoints, models, tol",
    [
        ("level", 0.5, 0.0, 2001, 4, 0.02),
        ("level", 0.5, 0.3, 4001, 4, 0.02),  # denser: φ higher, same white variance
        ("innovation", 0.8, 0.0, 2001, 4, 0.02),
        ("innovation", 0.8, 0.3, 4001, 4, 0.02),
        ("offset", 0.6, 0.1, 101, 80, 0.04),  # constants: many seeds, few checkpoints
    ],
)
def test_closed_forms_match_a_long_simulation(kind, b, white, checkpoints, models, tol):
    s = pe.Setting(50, checkpoints, white, models, steps=200_000.0)
    dev = pe.deviations(f"{kind}_b{b}", s, np.random.default_rng(7), 1)
    expected = list(pe.implied(kind, b, s).values())  # level, level_l2, comove, comove_l2
    assert np.allclose(_pooled_correlations(max(1, s.lag()), dev), expected, atol=tol), (
        _pooled_correlations(max(1, s.lag()), dev),
        expected,
    )


@pytest.mark.parametrize("kind, b", [("level", 0.5), ("innovation", 0.8)])
def test_closed_forms_hold_with_each_variables_own_noise(kind, b):
    """A fitted study's noise: φ and the white share per variable, another c."""
    s = pe.Setting(
        50,
        2001,
        0.0,
        4,
        steps=200_000.0,
        phis=(0.9, 0.97, 0.95),
        whites=(0.05, 0.2, 0.0),
        norm_loss=-0.4,
    )
    assert (s.phi("x"), s.w("x"), s.w("l")) == (pytest.approx(0.97), 0.2, 0.0)
    dev = pe.deviations(f"{kind}_b{b}", s, np.random.default_rng(11), 1)
    expected = list(pe.implied(kind, b, s).values())
    assert np.allclose(_pooled_correlations(max(1, s.lag()), dev), expected, atol=0.02)
    lev, _ = pe.covariances("level", 0.0, s)  # no coupling: x, y uncorrelated; y–l √(a_y·a_l)·c
    assert lev[0, 1] == 0 and lev[1, 2] == pytest.approx(math.sqrt(0.95) * -0.4)
    assert pe.row_name("no_coupling", s) != pe.row_name("no_coupling", pe.Setting(50, 2001, 0.0, 4))


def test_white_noise_and_persistence_shrink_beta_co_not_beta():
    """Level coupling: β = (1 − w)·β_P at any spacing; β_co = (1 − w)·β_P·q_y/√(D_xx·D_yy) with q
    over the horizon H = 100 steps: the same at 51, 101 and 201 checkpoints."""
    bp = 0.2
    for white in (0.0, 0.1, 0.3):
        for checkpoints in (51, 101, 201):
            s = pe.Setting(checkpoints=checkpoints, white=white)
            got = pe.implied("level", bp, s)
            qx, qy = 1 - 0.96, 1 - 0.94  # one move: H = 100 steps, whatever the spacing
            a = 1 - white
            dxx = a * (bp**2 * qy + (1 - bp**2) * qx) + white
            assert got["seed_contrast"] == pytest.approx(a * bp)
            assert got["seed_comove"] == pytest.approx(
                a * bp * qy / math.sqrt((a * qy + white) * dxx)
            )
    dense, sparse = (
        pe.implied("level", bp, pe.Setting(checkpoints=n, white=0.1)) for n in (201, 51)
    )
    assert dense["seed_comove"] == pytest.approx(sparse["seed_comove"])
    assert sparse["seed_comove"] < sparse["seed_contrast"]


def test_the_spacing_sets_phi_and_the_white_share_stays():
    """φ = e^(−Δt/τ): 0.94 at 100 steps, 0.94^(1/4) at 25; lag-1 autocorrelation of y's
    deviations (1 − w)·φ: the white variance per checkpoint is the same at either spacing."""
    for checkpoints, phi in ((2001, 0.94), (8001, 0.94**0.25)):
        s = pe.Setting(20, checkpoints, 0.3, 2, steps=200_000.0)
        assert s.phi("y") == pytest.approx(phi)
        y = pe.deviations("level_b0", s, np.random.default_rng(3), 1)["y"]  # no nuisance
        d = y - y.mean(axis=2, keepdims=True)
        lag1 = (d[..., 1:] * d[..., :-1]).sum() / (d * d).sum()
        assert lag1 == pytest.approx(0.7 * phi, abs=0.01)


def test_planted_strength_gives_the_target_and_matches_the_power_modules_share():
    """With no white noise the partial level β of the stated model is power.py's scale view, so
    the planted β at Δ is simulator.planted_share(Δ, c) (0.139 at c = −0.7)."""
    s = pe.Setting(white=0.0)
    b = pe.planted("level", 0.1, "seed_contrast_l2", s)
    assert b == pytest.approx(planted_share(0.1, pe.NORM_LOSS), abs=1e-6)
    for kind, view in (("innovation", "seed_comove_l2"), ("offset", "seed_contrast_l2")):
        s = pe.Setting(white=0.1)
        assert pe.implied(kind, pe.planted(kind, 0.05, view, s), s)[view] == pytest.approx(0.05)


def test_every_row_has_its_own_generator():
    s = pe.Setting(3)
    names = [pe.row_name(n, s) for n in pe.NULLS] + [pe.row_name("no_coupling", pe.Setting(5))]
    draws = [pe.row_rng(n).standard_normal(4) for n in names]
    assert len({d.tobytes() for d in draws}) == len(names)
    assert np.array_equal(pe.row_rng(names[0]).standard_normal(4), draws[0])  # stable


def test_a_shared_offset_moves_the_level_views_only():
    """offset_confound's offset is one constant per seed in x and y: the co-movement views' p are
    those without it, to the bit; the level views see it."""
    s = pe.Setting(4, 21, 0.1, models=3)
    sim = pe.simulate("no_coupling", s, np.random.default_rng(5), 6)
    off = 5 * np.random.default_rng(6).normal(size=(6, 3, 4, 1))
    perms = pe.seed_permutations(4)
    for i in range(6):
        base = pe.study_p(sim["x"][i], sim["y"][i], sim["l"][i], perms)
        moved = pe.study_p(sim["x"][i] + off[i], sim["y"][i] + off[i], sim["l"][i], perms)
        # the warp regressors see the offsets' mean only through rounding: equal to 1e-12
        assert np.allclose(base[2:4], moved[2:4], rtol=0, atol=1e-12)
        assert np.array_equal(base[7:], moved[7:])
        assert np.array_equal(moved[:2], [1 / 24**3] * 2)  # the offsets own the level views
        assert moved[4] * 24**3 in (1, 2)  # … the joint p: that arrangement, or a co-movement top
        assert np.array_equal(moved[5:7], [1.0, 1.0])  # … and every model's sign there


def test_progress_warp_moves_every_trend_by_the_seeds_speed():
    s = pe.Setting(3, 11, 0.0, models=2)
    dev = pe.deviations("progress_warp", s, np.random.default_rng(8), 1)
    sim = pe.simulate("progress_warp", s, np.random.default_rng(8), 1)
    fx, fy, fl = pe._trends(s.t() * (1 + dev["eps"][..., None]))
    assert np.allclose(sim["y"], fy + pe.NOISE * dev["y"])
    assert np.allclose(sim["x"], fx + pe.NOISE * dev["x"])
    assert 0 < np.std(dev["eps"]) < 5 * pe.WARP_SD


def test_rate_rows_count_a_pair_at_the_larger_p_and_apply_the_pass_rule():
    p = np.array([[0.01, 0.2, 0.04, 0.05], [0.01, 0.03, 0.5, 0.01], [0.3, 0.3, 0.3, 0.3]])
    rows = {r["view"]: r for r in pe.rate_rows(p, {}, null=True)}
    assert rows["seed_contrast"]["rate"] == pytest.approx(2 / 3)
    assert rows["level"]["rate"] == pytest.approx(1 / 3)  # max(0.01, 0.03) only
    assert rows["comove"]["rate"] == pytest.approx(1 / 3)  # max(0.04, 0.05) only
    assert rows["comove"]["pass_max"] == pass_max(3, 0.05)
    assert rows["seed_contrast"]["passes"] == (2 <= pass_max(3, 0.05))


def test_a_feature_linear_in_the_norm_leaves_the_partial_comovement_nothing():
    """norm_only (x = −0.7·l + own, l carries −0.7 of y's persistent part; w = 0, 3 seeds): the
    co-movement of x partial on the norm's must not keep y's. A scale per step and variable (the
    across-seed RMS of one step) makes x's slope on l differ from step to step and leaks (mean ρ
    0.081 over 300 models before it was pooled over ±10 steps)."""
    s = pe.Setting(3, 51, 0.0, models=300)
    dev = pe.deviations("norm_only", s, np.random.default_rng(0), 1)
    perms = pe.seed_permutations(3)
    rhos = [
        pe.contrast_cell(
            {"x": dev["x"][0, m], "y": dev["y"][0, m], pe.SCALE: dev["l"][0, m]},
            "x",
            "y",
            "seed_comove_l2",
            perms,
        )[0]["rho"]
        for m in range(300)
    ]
    assert abs(np.mean(rhos)) < 3 * np.std(rhos) / np.sqrt(300)


def test_a_seed_that_trains_faster_leaves_its_comovement_as_it_was():
    """Each trend read at t·(1 + ε_s), ε_s ~ N(0, 0.02²), 8 seeds, on the same persistent noise
    (w = 0): the seed deviates by ε_s·t·f′(t), which the warp regressors of the mean curves
    remove. Without them the co-movement moved by 8 % (x) and 7 % (y) of its norm."""
    s = pe.Setting(8, 51, 0.0, models=1)
    dev = pe.deviations("level_b0", s, np.random.default_rng(0), 1)
    eps = np.random.default_rng(1).normal(0, pe.WARP_SD, (8, 1))
    t = s.t()
    plain, warped = pe._trends(t), pe._trends(t * (1 + eps))
    noisy = {
        w: [c + pe.NOISE * dev[v][0, 0] for c, v in zip(w_, "xyl", strict=True)]
        for w, w_ in (("plain", plain), ("warped", warped))
    }
    warp = warp_regressors(noisy["warped"], t, 1)
    for i, v in enumerate("xyl"):
        a = comovement(noisy["plain"][i], 1, warp=warp)
        b = comovement(noisy["warped"][i], 1, warp=warp)
        assert np.linalg.norm(b - a) < 0.01 * np.linalg.norm(a), v


def test_the_warp_projection_commutes_with_permuting_seeds_and_removes_its_own_span():
    """comovement(π·X) = π·comovement(X) for every π of 4 seeds; a per-seed multiple of any
    regressor in ``warp`` added to X changes nothing, one outside it does."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 51)).cumsum(axis=1)
    t = np.arange(51) * 100.0
    warp = warp_regressors([x, rng.normal(size=(4, 51)).cumsum(axis=1)], t, 1)
    base = comovement(x, 1, warp=warp)
    for perm in pe.seed_permutations(4):
        assert np.allclose(comovement(x[perm], 1, warp=warp), base[perm], atol=1e-12)
    shift = 50 * rng.normal(size=(4, 1)) * warp[:, 2][None, :]
    assert np.allclose(comovement(x + shift, 1, warp=warp), base, atol=1e-8)
    other = 50 * rng.normal(size=(4, 1)) * np.sqrt(t)[None, :]
    assert not np.allclose(comovement(x + other, 1, warp=warp), base)


def test_the_null_table_is_written_as_csv_with_a_row_per_view_and_the_same_in_processes(tmp_path):
    out = tmp_path / "nulls.csv"
    pe.main(["--nulls", "--draws", "2", "--out", str(out)])
    table = pd.read_csv(out, keep_default_na=False)
    assert len(table) == 2 * len(pe.NULLS) * 3 * 7  # w × nulls × seeds × (4 views, 2 pairs, joint)
    assert set(table["scenario"]) == set(pe.NULLS) and (table["draws"] == 2).all()
    sim = pe.simulate("norm_only", pe.Setting(3, 11, models=2), np.random.default_rng(4), 5)
    # 500 steps apart: no 100-step move, the co-movement views NaN in both
    assert np.array_equal(pe.view_pvalues(sim, 1), pe.view_pvalues(sim, 2), equal_nan=True)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [3, 5, 8])
def test_the_comovement_pair_holds_alpha_on_every_persistent_null(seeds):
    """400 studies per null at the fitted persistence and no white noise (the warp's worst case):
    the co-movement pair (and, on norm_only, its partial view) passes the binomial rule; the
    level pair rejects the shared offset, as it should (about 0.16 / 0.36 / 0.57 at 3 / 5 / 8)."""
    for scenario in pe.NULLS:
        rows = {r["view"]: r for r in pe.measure(scenario, pe.Setting(seeds, white=0.0), 400)}
        assert rows["comove"]["passes"], (scenario, rows["comove"]["rate"])
        if scenario == "norm_only":
            assert rows["seed_comove_l2"]["passes"] and rows["seed_contrast_l2"]["passes"]
        if scenario == "offset_confound":
            assert rows["level"]["mc_low"] > pe.ALPHA


@pytest.mark.slow  # the whole suite at 20 draws: minutes
def test_make_calibrate_writes_the_views_and_the_sign_rule_tables(tmp_path):
    """calibration_job's extra tables: every null × white share × seed count × view and pair,
    each row's rate the share of its own studies (the same numbers ``measure`` gives), and the
    sign rule's rows for both claims and every scenario."""
    import pandas as pd

    from topotrain.analysis.calibration.persistent import NULLS, PAIRS, VIEWS, Setting, measure
    from topotrain.jobs.calibrate import calibration_job

    out = {
        f"{name}_{ext}": str(tmp_path / f"{name}.{ext}")
        for name in ("calibration", "views", "sign_rule", "intervals")
        for ext in ("csv", "md")
    }
    params = {
        "calibration": {"simulations": 20, "seeds": [3], "view_draws": 20},
        "n_resamples": 20,
        "seed": 0,
        "sesoi": 0.1,
    } | unit_comove_params()
    calibration_job(params, out)
    views = pd.read_csv(out["views_csv"])
    assert len(views) == 2 * len(NULLS) * (len(VIEWS) + len(PAIRS) + 1)  # + joint
    assert views["draws"].eq(20).all() and views["rate"].between(0, 1).all()
    again = pd.DataFrame(measure("norm_only", Setting(3, white=0.1), 20))
    mine = views[(views["scenario"] == "norm_only") & (views["white"] == 0.1)]
    assert mine["rate"].tolist() == again["rate"].tolist()
    signs = pd.read_csv(out["sign_rule_csv"])
    assert len(signs) == 2 * 3 and signs["draws"].eq(20).all()
    miss = pd.read_csv(out["intervals_csv"])  # 3 nulls × 2 views + norm_only + 2 signals × 2
    assert len(miss) == 2 * (3 * 2 + 1 + 2 * 2) and miss["draws"].eq(20).all()
