"""The co-movement view (``seed_contrast.comovement``): the seeds' deviations differenced along
the steps and scaled per step, under the same exact seed permutation as the level view."""

import itertools

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.inference.seed_contrast import (
    CONTRAST_VIEWS,
    HORIZON,
    SCALE,
    START,
    STEPS,
    comovement,
    contrast_cell,
    contrast_table,
    deviations,
    horizon_lag,
    lag1,
    model_matrices,
    permutation_rhos,
    seed_permutations,
    view_cell,
)


def _brute_comovement(
    values: np.ndarray, lag: int = 1, window: int = 10, warp: np.ndarray | None = None
) -> np.ndarray:
    """comovement by loops: deviation, the lag-checkpoint move, each row less its least-squares
    fit (lstsq) on the same moves of the warp regressors (at most (n − lag) // 4 of them),
    division by the RMS over seeds and the moves within ±window·lag."""
    k, n = values.shape
    e = np.zeros((k, n - lag))
    for s, t in itertools.product(range(k), range(n - lag)):
        e[s, t] = (values[s, t + lag] - values[:, t + lag].mean()) - (
            values[s, t] - values[:, t].mean()
        )
    if warp is not None:
        basis = (warp[lag:] - warp[:-lag])[:, : (n - lag) // 4]
        for s in range(k):
            e[s] -= basis @ np.linalg.lstsq(basis, e[s], rcond=None)[0]
    out = np.zeros_like(e)
    for t in range(n - lag):
        near = e[:, max(0, t - window * lag) : t + window * lag + 1]
        out[:, t] = e[:, t] / np.sqrt(np.mean(near**2))
    return out


def test_comovement_matches_a_loop_over_seeds_and_steps():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 30)).cumsum(axis=1)
    warp = rng.normal(size=(30, 3))
    for lag, window, w in ((1, 10, None), (1, 0, warp), (3, 3, warp), (4, 2, None)):
        assert np.allclose(comovement(x, lag, window, w), _brute_comovement(x, lag, window, w))
    # window 0 and no warp removed: every move's column has unit RMS over seeds
    step = comovement(x, 1, 0)
    assert np.allclose(np.sqrt((step**2).mean(axis=0)), 1.0)
    assert np.allclose(comovement(x, 2, warp=warp).sum(axis=0), 0.0)  # sum 0 across seeds
    assert comovement(x, 4).shape == (4, 26)


def test_horizon_lag_is_the_horizon_in_checkpoints():
    steps = np.arange(0, 5001, 25.0)
    assert [horizon_lag(steps, h) for h in (25, 50, 100, 200, 400)] == [1, 2, 4, 8, 16]
    assert horizon_lag(np.arange(0, 5001, 100.0), 100) == 1
    assert horizon_lag(np.arange(0, 5001, 100.0), 50) == 0  # no 50-step move exists
    assert horizon_lag(None, 100) == 1  # no steps: a move is one checkpoint
    assert horizon_lag(np.array([0.0, 30, 60, 100, 130]), 100) == 3  # median spacing 30
    with pytest.raises(ValueError, match="steps must increase"):
        horizon_lag(np.array([5.0, 5.0, 5.0]), 100)


def test_the_view_reads_the_horizon_from_the_steps_not_the_spacing():
    """One process, kept every checkpoint (201, spacing 25) and every 4th (51, spacing 100): at
    H = 100 the co-movement of the sparse series is the dense one's every 4th move (up to the
    RMS scale and the warp's fit, both over the same span of steps)."""
    rng = np.random.default_rng(5)
    k = 5
    steps = np.arange(0, 5001, 25.0)
    u = rng.normal(size=(k, steps.size)).cumsum(axis=1)
    dense = {"x": u + rng.normal(size=u.shape), "y": u, STEPS: steps}
    dense |= {HORIZON: np.array(100.0), START: np.array(0.0)}
    sparse = {c: v[..., ::4] if v.ndim else v for c, v in dense.items()}
    _, d = view_cell(dense, "x", "y", "seed_comove")
    _, s = view_cell(sparse, "x", "y", "seed_comove")
    assert d["x"].shape == (k, 197) and s["x"].shape == (k, 50)
    raw_d = np.diff(deviations(dense["y"])[:, ::4], axis=1)
    assert np.allclose(raw_d, deviations(dense["y"])[:, 4::4] - deviations(dense["y"])[:, :-4:4])
    for c in ("x", "y"):  # same direction per move: the warp fit and scale differ a little
        r = np.corrcoef(d[c][:, ::4].ravel(), s[c].ravel())[0, 1]
        assert r > 0.9, (c, r)


def test_a_per_seed_offset_and_a_shared_curve_leave_no_comovement():
    """x_{s,t} = f(t) + c_s: the level view sees c_s at every step, co-movement sees nothing."""
    t = np.linspace(0, 1, 20)
    x = np.exp(-5 * t)[None, :] + np.array([[0.3], [-0.1], [0.7]])
    assert np.array_equal(comovement(x), np.zeros((3, 19)))


def test_transform_commutes_with_permuting_seeds_so_the_test_stays_exact():
    """T(g(πX), h(Y)) = T(π·g(X), h(Y)) for every π: the statistic of the permuted raw rows is
    the null's entry at π, for the plain and the partial co-movement view."""
    rng = np.random.default_rng(1)
    k, n = 4, 12
    raw = {c: rng.normal(size=(k, n)).cumsum(axis=1) for c in ("x", "y", SCALE)}
    perms = seed_permutations(k)
    for cond in (None, SCALE):
        view = "seed_comove_l2" if cond else "seed_comove"
        _, cell = view_cell(raw, "x", "y", view)
        null = permutation_rhos(cell["x"], cell["y"], perms, cell[cond] if cond else None)
        for i, perm in enumerate(perms):
            moved = dict(raw, x=raw["x"][perm])
            _, cell_pi = view_cell(moved, "x", "y", view)
            direct = permutation_rhos(
                cell_pi["x"], cell_pi["y"], perms[:1], cell_pi[cond] if cond else None
            )[0]
            assert np.isclose(direct, null[i], atol=1e-12), (view, perm)


def test_comovement_views_find_shared_innovations_the_offsets_hide():
    """Feature and loss share each step's innovation; each seed also has a large constant offset
    of opposite sign in the two: the level view's ρ is negative, co-movement's positive and
    exact-p significant."""
    rng = np.random.default_rng(2)
    k, n = 5, 40
    u = rng.normal(size=(k, n)).cumsum(axis=1)
    off = np.linspace(-5, 5, k)[:, None]
    x = u + off + 0.3 * rng.normal(size=(k, n))
    y = u - off + 0.3 * rng.normal(size=(k, n))
    mats = {"x": x, "y": y}
    perms = seed_permutations(k)
    level, _ = contrast_cell(mats, "x", "y", "seed_contrast", perms)
    co, _ = contrast_cell(mats, "x", "y", "seed_comove", perms)
    assert level["rho"] < 0
    assert co["rho"] > 0.5 and co["p"] == 2 / len(perms)  # the identity alone at the top
    assert co["n"] == k * (n - 1)


def test_lag1_is_the_pooled_lag_one_autocorrelation():
    d = np.array([[1.0, 2.0, -1.0], [-1.0, -2.0, 1.0]])
    assert np.isclose(lag1(d), (1 * 2 + 2 * -1 + -1 * -2 + -2 * 1) / 12)
    # an AR(1) at φ: the level deviations keep φ, their co-movement far less
    rng = np.random.default_rng(3)
    e = rng.normal(size=(6, 4000))
    ar = np.zeros_like(e)
    for t in range(1, e.shape[1]):
        ar[:, t] = 0.95 * ar[:, t - 1] + e[:, t]
    assert abs(lag1(ar - ar.mean(axis=0)) - 0.95) < 0.02
    assert abs(lag1(comovement(ar))) < 0.05


def test_contrast_table_has_the_comovement_views_per_model_and_pooled():
    rng = np.random.default_rng(4)
    rows = []
    for model, seed, step in itertools.product(("a", "b"), range(3), range(6)):
        rows.append(
            {
                "model": model,
                "n_params": 10 if model == "a" else 20,
                "seed": seed,
                "step": 100 * step,  # the horizon H = 100 steps: one move per checkpoint
                "f": rng.normal(),
                "val_loss": rng.normal(),
                SCALE: rng.normal(),
            }
        )
    df = pd.DataFrame(rows)
    table = contrast_table(df, [("f", "topological")], ["val_loss"])
    assert set(table["view"]) == set(CONTRAST_VIEWS)
    co = table[table["view"] == "seed_comove"]
    assert list(co["model"]) == ["a", "b", "pooled"]
    assert (co.loc[co["model"] != "pooled", "n"] == 3 * 5).all()
    assert co["p_method"].iloc[-1].endswith("RMS-scaled per step)")
    mats = model_matrices(df[df["model"] == "a"], ["f", "val_loss"])
    direct, _ = contrast_cell(mats, "f", "val_loss", "seed_comove", seed_permutations(3))
    assert np.isclose(co["rho"].iloc[0], direct["rho"])
