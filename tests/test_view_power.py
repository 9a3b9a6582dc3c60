"""Every view's power on a study's own noise (``calibration.view_power``): the claims' settings,
the couplings planted at Δ / Δ_co, the joint bound and power.csv's shape."""

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.calibration import view_power as vp
from topotrain.analysis.calibration.simulator import Noise


def test_a_claims_setting_carries_its_fitted_noise_clipped_to_an_ou():
    noise = Noise(loss=0.91, features=(0.98, 1.0, 0.0), scale=0.95, scale_loss=-0.6)
    noise = Noise(**(noise.__dict__ | {"loss_white": 0.03, "features_white": (0.0, 0.01, 1.0)}))
    s = vp.claim_setting(noise, 1, 4)
    assert (s.models, s.phis, s.whites, s.norm_loss) == (
        4,
        (0.91, 0.995, 0.95),
        (0.03, 0.01, 0.0),
        -0.6,
    )
    assert (
        vp.claim_setting(noise, 2, 4).phis[1] == 0.05
        and vp.claim_setting(noise, 2, 4).whites[1] == 0.95
    )
    assert vp.claim_setting(None, 0, 5) == pe.Setting(models=5)


def test_each_coupling_is_planted_at_its_delta_in_its_binding_view():
    s = vp.claim_setting(Noise(loss=0.9, features=(0.97,), scale=0.96, scale_loss=-0.5), 0, 5)
    for label, kind, b, delta in vp.cells(s, 0.1, 0.15):
        view = "seed_comove_l2" if kind == "innovation" else "seed_contrast_l2"
        assert pe.implied(kind, b, s)[view] == pytest.approx(delta, abs=1e-7), label
        if kind == "offset":  # constants: no co-movement at all
            assert pe.implied(kind, b, s)["seed_comove"] == pytest.approx(0.0, abs=1e-12)


def test_the_rows_rates_and_joint_bound_match_the_views_p_values():
    """One cell recomputed by hand from the same generator: each view's rate, each pair's (the
    larger p of two) and the joint bound (2·min of the pairs)."""
    s, draws = pe.Setting(models=2, steps=2000.0), 30  # 21 checkpoints 100 steps apart: H
    cell = vp.cells(s, 0.1, 0.1)[1]
    rows = vp.claim_rows("h0_total", s, 3, 21, cell, draws, 1)
    at = pe.Setting(3, 21, s.white, 2, steps=2000.0)
    scenario = f"innovation_b{cell[2]:.6g}"
    sim = pe.simulate(scenario, at, pe.row_rng(pe.row_name(scenario, at)), draws)
    out = pe.view_pvalues(sim, signs=True)
    p, held = out[:, :5], out[:, 5:]
    got = {r["view"]: r["power_at_sesoi"] for r in rows}
    for i, view in enumerate(pe.VIEWS):
        assert got[view] == pytest.approx(np.mean(p[:, i] <= 0.05))
    level, co = np.maximum(p[:, 0], p[:, 1]), np.maximum(p[:, 2], p[:, 3])
    assert got["level pair"] == pytest.approx(np.mean(level <= 0.05))
    assert got["co-movement pair"] == pytest.approx(np.mean(co <= 0.05))
    assert got[vp.JOINT] == pytest.approx(np.mean(p[:, 4] <= 0.05))
    assert np.all(p[:, 4] >= np.minimum(level, co) - 1e-12)  # min-p: never below the smaller p
    assert np.all(p[:, 4] <= np.minimum(1, 2 * np.minimum(level, co)) + 1e-12)  # nor Bonferroni
    best = np.where(co < level, 2, 0)  # the pair of smaller p: its two conditions' signs
    signs = (held[np.arange(draws), best] == 1) & (held[np.arange(draws), best + 1] == 1)
    joint = p[:, 4] <= 0.05
    assert got[vp.SIGNS] == pytest.approx(np.mean(joint & signs)) and got[vp.SIGNS] <= got[vp.JOINT]
    assert all(r["power_mc_low"] <= r["power_at_sesoi"] <= r["power_mc_high"] for r in rows)


def test_the_table_covers_every_design_and_marks_the_studys_own(tmp_path):
    kwargs = dict(noise=None, models=(2, 2), features=("h0_total", "np_mean"), design=(3, 11))
    kwargs |= dict(draws=4, seeds=(3, 4), checkpoints=(11, 21))
    table = vp.cached_view_power(tmp_path / "cache.json", **kwargs)
    assert list(table.columns) == vp.COLUMNS
    assert len(table) == 2 * 3 * 2 * 2 * 8  # claims × couplings × seeds × checkpoints × views
    assert set(
        table.loc[table["this_design"], ["seeds", "checkpoints"]].itertuples(index=False, name=None)
    ) == {(3, 11)}
    assert table["note"].str.startswith("persistent process, the calibration's noise").all()
    again = vp.cached_view_power(tmp_path / "cache.json", **kwargs)  # read back, not simulated
    assert again.equals(table)


def test_a_studys_sign_flags_are_the_reports_sign_and_reversal_rule():
    """study_p's last four entries: 1 where every model's effect_signs is + in that view and
    each model's own test rules out a reversal by the view's Δ (``signs.ruled_out``); at 3 seeds
    (smallest exact p 1/6) never."""
    from topotrain.analysis.inference.primary import effect_signs
    from topotrain.analysis.inference.seed_contrast import SCALE, contrast_cell, seed_permutations
    from topotrain.analysis.inference.seed_effect import effect_cell
    from topotrain.analysis.inference.signs import reversal_ps, ruled_out

    flags = set()
    for k in (3, 5):
        s = pe.Setting(k, 21, 0.1, models=3, steps=2000.0)
        sim = pe.simulate("level_b0.6", s, np.random.default_rng(5), 4)
        perms = seed_permutations(k)
        for i in range(4):
            got = pe.study_p(sim["x"][i], sim["y"][i], sim["l"][i], perms)
            mats = [
                {"x": sim["x"][i, m], "y": sim["y"][i, m], SCALE: sim["l"][i, m]} for m in range(3)
            ]
            for j, view in enumerate(pe.VIEWS):
                nulls = [contrast_cell(m, "x", "y", view, perms)[1] for m in mats]
                margin = pe.DELTA_CO if view in pe.PAIRS["comove"] else pe.DELTA
                cells = [effect_cell(m, "x", "y", view, perms) for m in mats]
                rule = (effect_signs(nulls) == 1).all() and ruled_out(
                    [reversal_ps(cells, margin)]
                ).all()
                assert got[5 + j] == float(rule)
                assert k == 5 or got[5 + j] == 0.0
                flags.add((k, got[5 + j]))
    assert {(5, 0.0), (5, 1.0)} <= flags


def test_a_fit_at_another_spacing_is_rescaled_to_the_process_and_back():
    """φ fitted per checkpoint 50 steps apart (101 checkpoints over 5,000 steps) is the process's
    φ at that spacing again: claim_setting stores φ^(100/50) at REF_SPACING, and the Setting at
    101 checkpoints reads it back; a fit at 100 steps is taken as it is."""
    from topotrain.analysis.calibration.simulator import Noise

    noise = Noise(loss=0.97, features=(0.99,), scale=0.9, features_white=(0.0,), spacing=50.0)
    s = vp.claim_setting(noise, 0, 5)
    assert s.phis == pytest.approx((0.97**2, 0.99**2, 0.9**2))
    at = pe.Setting(checkpoints=101, phis=s.phis)
    assert [at.phi(v) for v in "yxl"] == pytest.approx([0.97, 0.99, 0.9])
    same = vp.claim_setting(Noise(loss=0.94, features=(0.96,), features_white=(0.0,)), 0, 5)
    assert same.phis == pytest.approx((0.94, 0.96, 0.8))


def test_fit_noise_records_the_tables_spacing():
    from topotrain.analysis.calibration.power_design import fit_noise

    rng = np.random.default_rng(0)
    rows = [
        {"model": m, "seed": k, "step": t, "train_loss": rng.normal(), "l2_norm_mean": rng.normal()}
        for m in ("a", "b")
        for k in range(3)
        for t in range(0, 1001, 50)
    ]
    assert fit_noise(pd.DataFrame(rows), features=()).spacing == 50.0
