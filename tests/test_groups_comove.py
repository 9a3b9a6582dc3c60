"""A group's co-movement pair (inference.groups.comove_columns): β_co against val_loss beside the
level view, planted where the feature moves as the loss does, independent of it, and absent (NaN,
said) where the group logged no val_loss; the verdicts stay the level view's."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.inference.groups import CO_COLUMNS, NO_CO, group_contrasts, group_frame
from topotrain.analysis.inference.seed_contrast import comovement, warp_regressors
from topotrain.report.groups import group_section

SEEDS = 5  # 120 orders: the smallest k with a 95 % interval (40 or more)
LEVEL = ["rho_clock", "p_clock", "rho_scale", "p_scale", "effect_clock", "effect_scale", "p"]


def run_table(seed: int, steps: int = 40) -> pd.DataFrame:
    """One seed: val_loss a falling trend plus its own random walk; h0_total is val_loss plus a
    large constant of the seed's own (its step-to-step moves are the loss's exactly); np_mean
    moves on a walk of its own; the L2 norm grows with noise of its own."""
    rng = np.random.default_rng(300 + seed)
    step = np.arange(steps) * 10
    trend = 3 * np.exp(-step / 150)
    walk, own, norm = (np.cumsum(rng.normal(0, 0.05, steps)) for _ in range(3))
    loss = trend + walk
    return pd.DataFrame(
        {"model": f"r{seed}", "seed": 0, "n_params": 3200, "step": step}
        | {"train_loss": trend + rng.normal(0, 0.05, steps), "val_loss": loss}
        | {"h0_total": loss + 5 * rng.normal(), "np_mean": trend + own}
        | {"l2_norm_mean": 10 + step / 100 + norm}
    )


def group(drop=()) -> pd.DataFrame:
    tables = {f"r{s}": run_table(s).drop(columns=list(drop)) for s in range(SEEDS)}
    df, _, _ = group_frame("g", tables, {f"r{s}": s for s in range(SEEDS)})
    return df


def brute_comove(df: pd.DataFrame, feature: str, target: str) -> tuple[float, float]:
    """Spearman ρ (scipy) of the seeds' co-movement (``comovement`` of each column's (k, n)
    matrix at the horizon H = 100 steps: 10 checkpoints 10 steps apart, less the speed warps of
    the two columns and the norm) and its two-sided p over every relabelling of the feature's
    seeds."""
    mats = {
        c: df.pivot(index="seed", columns="step", values=c).to_numpy()
        for c in (feature, target, "l2_norm_mean")
    }
    t = np.sort(df["step"].unique()).astype(float)
    warp = warp_regressors(list(mats.values()), t, 10, 100.0)
    x, y = (comovement(mats[c], 10, warp=warp) for c in (feature, target))
    null = np.array(
        [
            stats.spearmanr(x[list(p)].ravel(), y.ravel()).statistic
            for p in itertools.permutations(range(len(x)))
        ]
    )
    tol = 1e-12
    p = 2 * min(np.mean(null >= null[0] - tol), np.mean(null <= null[0] + tol))
    return float(null[0]), float(min(1.0, p))


def test_a_feature_moving_as_its_loss_has_beta_co_one_and_an_independent_one_covers_zero():
    df = group()
    table = group_contrasts(df, [{"feature": "h0_total", "sign": 1}, "np_mean"], sesoi=0.1)
    rows = table.set_index(["feature", "target"])
    assert set(table["co_target"]) == {"val_loss"}  # every row: the loss of the weights
    same = rows.loc[("h0_total", "train_loss")]
    # x − y is a constant per seed: differenced, the offsets vanish and the co-movement cells are
    # equal, so ρ_co = 1, one-sided p the identity's 1/5!, and β_co = 1 inside its interval
    assert same["rho_co_clock"] == pytest.approx(1.0) and same["p_co_clock"] == 1 / 120
    for view in ("co_clock", "co_scale"):
        low, high = same[f"effect_{view}_ci_low"], same[f"effect_{view}_ci_high"]
        assert same[f"effect_{view}"] == pytest.approx(1.0, abs=0.02) and low <= 1.0 <= high
        assert low > 0.5  # far from 0: the moves are all there is
    # the level view sees the seeds' offsets (5 × the loss's spread): not 1, not near it
    assert same["effect_clock"] < 0.5 and same["rho_clock"] < 0.5
    # the same pair on the val_loss row: one loss, one answer
    assert rows.loc[("h0_total", "val_loss"), CO_COLUMNS].tolist() == same[CO_COLUMNS].tolist()
    apart = rows.loc[("np_mean", "val_loss")]
    rho, p = brute_comove(df, "np_mean", "val_loss")
    assert apart["rho_co_clock"] == pytest.approx(rho, abs=1e-12)
    assert apart["p_co_clock"] == pytest.approx(p, abs=1e-12)
    for view in ("co_clock", "co_scale"):
        assert apart[f"effect_{view}_ci_low"] < 0 < apart[f"effect_{view}_ci_high"]
    text = group_section("g", group_frame_members(), table, [], "", [], [])
    shown = f"{same['effect_co_clock']:.2f} [{same['effect_co_clock_ci_low']:.2f}, "
    assert shown in text and "effect_co_clock" in text


def group_frame_members() -> pd.DataFrame:
    tables = {f"r{s}": run_table(s) for s in range(SEEDS)}
    return group_frame("g", tables, {f"r{s}": s for s in range(SEEDS)})[1]


def test_without_val_loss_the_co_columns_are_nan_with_a_note_and_the_verdicts_unchanged():
    with_val = group_contrasts(group(), ["h0_total", "np_mean"], sesoi=0.1)
    without = group_contrasts(group(drop=["val_loss"]), ["h0_total", "np_mean"], sesoi=0.1)
    assert set(without["target"]) == {"train_loss"}
    assert without[CO_COLUMNS].isna().all().all() and without["co_target"].isna().all()
    assert all(NO_CO in note for note in without["note"])
    assert not any(NO_CO in note for note in with_val["note"])
    # the level view and the verdict rule do not read the co-movement pair: same numbers
    train = with_val[with_val["target"] == "train_loss"].reset_index(drop=True)
    pd.testing.assert_frame_equal(train[["feature", *LEVEL]], without[["feature", *LEVEL]])
    text = group_section("g", group_frame_members(), without, [], "", [], [])
    assert "none (no val_loss)" in text
