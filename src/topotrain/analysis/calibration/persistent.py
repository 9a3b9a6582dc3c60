"""Nulls and power like this study's: persistent deviations as one continuous-time process.

Per model, seed and variable v (loss y, feature x, L2 norm l), a value is its shared trend
(``simulator._trends``) plus NOISE × a deviation of unit variance: a persistent part of variance
1 − w, an Ornstein–Uhlenbeck process with correlation time τ_v steps (φ_v = e^(−Δt/τ_v) at
checkpoint spacing Δt; τ_v puts φ at 0.94 / 0.96 / 0.98 for y / x / l at the study's 100 steps),
plus white measurement noise of variance w per checkpoint (w is fixed at every spacing: a denser
series has a higher φ and the same white variance). With U, O_x, O_l independent unit OU and
c = NORM_LOSS: y = √a·U + √w·W_y, l = √a·(c·U + √(1 − c²)·O_l) + √w·W_l (a = 1 − w), and the
feature by coupling:

- level (the stated model): x = √a·(β·U + √(1 − β²)·O_x) + √w·W_x;
- innovation-only: x = √a·O_x + √w·W_x + b·√a·η, η_t = U_t − φ_y·U_{t−1} (y's OU innovation since
  the previous checkpoint, not its level);
- offset-only: x as under the null, plus per-seed constants o_x = ρ·o_y + √(1 − ρ²)·o′ with y's
  o_y (sd OFFSET_SD each).

Implied effects (``persistent_model.implied``), the correlations the seed views estimate, from
the covariances of the levels L and of the H-step moves D (per unit, q_v = 1 − φ_v over the
horizon H: ``Setting.phi_move``): under the level coupling L_xy = a·β, L_yl = a·c, L_xl = a·β·c,
unit variances, and D_yy = a·q_y + w, D_xx = a·(β²·q_y + (1 − β²)·q_x) + w, D_ll = a·(c²·q_y +
(1 − c²)·q_l) + w, D_xy = a·β·q_y, D_yl = a·c·q_y, D_xl = a·β·c·q_y. The level β = a·β (plain),
β_co = a·β·q_y / √(D_xx·D_yy) (plain); partial on the norm, (C_xy − C_xl·C_yl/C_ll) /
√((C_xx − C_xl²/C_ll)(C_yy − C_yl²/C_ll)) of L or D. White noise shrinks β_co far more than β;
a denser series keeps q (the moves span H), and β_co with it.

Scenarios (``simulate``): the nulls ``no_coupling`` (β = 0), ``offset_confound`` (one per-seed
offset shared by x and y), ``progress_warp`` (every trend read at t·(1 + ε_s), ε_s ~ N(0,
WARP_SD²)), ``norm_only`` (x = NORM_GAIN × the norm's deviation + its own) and ``kink_warp``
(progress_warp through a warm-up kink, ``kinked``, at noise KINK_NOISE: the review's case), each
with per-seed offsets and drifts in every variable; the signals ``level_b<β>``,
``innovation_b<b>`` and ``offset_b<ρ>``. A study's p per view is the primary family's
(``contrast_cell`` + ``pooled_row(…, "greater")`` over N_MODELS models); a pair's the larger of
its plain and partial p. Every row has its own generator (``row_rng``: CRC-32 of its name).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
import zlib

import numpy as np
import pandas as pd
from scipy import signal

from topotrain.analysis.calibration.pass_rule import clopper_pearson, pass_max
from topotrain.analysis.calibration.persistent_model import (  # noqa: F401  (imported from here)
    DELTA,
    DELTA_CO,
    DRIFT_SD,
    JOINT,
    KINK,
    KINK_NOISE,
    KINK_SLOPE,
    NORM_GAIN,
    NORM_LOSS,
    NULLS,
    OFFSET_SD,
    PAIRS,
    PHI,
    REF_SPACING,
    STEPS,
    VIEWS,
    WARP_SD,
    Setting,
    correlation,
    coupling,
    covariances,
    implied,
    planted,
)
from topotrain.analysis.calibration.simulator import N_MODELS, NOISE, _trends
from topotrain.analysis.inference.parallel import map_tasks
from topotrain.analysis.inference.primary import effect_signs, joint_p
from topotrain.analysis.inference.seed_contrast import (
    SCALE,
    contrast_cell,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.inference.seed_contrast import (
    STEPS as STEP_KEY,
)
from topotrain.analysis.inference.seed_effect import effect_cell
from topotrain.analysis.inference.signs import reversal_ps, ruled_out
from topotrain.analysis.inference.stats import ALPHA


def _ou(rng: np.random.Generator, phi: float, shape: tuple[int, ...]) -> np.ndarray:
    """Unit-variance stationary OU sampled at even spacing along the last axis (exact AR(φ))."""
    e = rng.standard_normal(shape)
    e[..., 1:] *= math.sqrt(1 - phi * phi)
    return signal.lfilter([1.0], [1.0, -phi], e, axis=-1)


def _per_seed(rng: np.random.Generator, shape: tuple[int, ...], t: np.ndarray) -> np.ndarray:
    """An independent per-seed offset plus a linear drift (sd OFFSET_SD, DRIFT_SD at STEPS)."""
    off, drift = rng.normal(0, OFFSET_SD, shape[:-1]), rng.normal(0, DRIFT_SD, shape[:-1])
    return off[..., None] + drift[..., None] * t / STEPS


def deviations(scenario: str, s: Setting, rng, n_sim: int) -> dict[str, np.ndarray]:
    """x, y, l deviations (unit variance per part; n_sim, models, seeds, checkpoints) and 'eps',
    the per-seed warp (0 except progress_warp), under ``scenario``."""
    kind, b = coupling(scenario)
    shape = (n_sim, s.models, s.seeds, s.checkpoints)
    a, c = {v: 1 - s.w(v) for v in "xyl"}, s.norm_loss
    u_ext = _ou(rng, s.phi("y"), (*shape[:-1], shape[-1] + 1))
    u, eta = u_ext[..., 1:], u_ext[..., 1:] - s.phi("y") * u_ext[..., :-1]
    own = {v: _ou(rng, s.phi(v), shape) for v in "xl"}
    white = {v: math.sqrt(s.w(v)) * rng.standard_normal(shape) for v in "xyl"}
    y = math.sqrt(a["y"]) * u + white["y"]
    norm = math.sqrt(a["l"]) * (c * u + math.sqrt(1 - c * c) * own["l"]) + white["l"]
    nuisance = scenario in NULLS  # independent per-seed offsets and drifts in x, y and l
    if nuisance:  # before x is built: norm_only's x follows the norm as measured
        y, norm = (v + _per_seed(rng, shape, s.t()) for v in (y, norm))
    beta = b if kind == "level" else 0.0
    x = math.sqrt(a["x"]) * (beta * u + math.sqrt(1 - beta**2) * own["x"]) + white["x"]
    if kind == "innovation":
        x = x + b * math.sqrt(a["x"]) * eta
    if kind == "norm_only":
        x = NORM_GAIN * norm + math.sqrt(1 - NORM_GAIN**2) * x
    if nuisance:
        x = x + _per_seed(rng, shape, s.t())
    if kind in ("offset", "offset_confound"):
        o_y = rng.normal(0, OFFSET_SD, shape[:-1])
        o_x = b * o_y + math.sqrt(1 - b * b) * rng.normal(0, OFFSET_SD, shape[:-1])
        x, y = x + o_x[..., None], y + o_y[..., None]
    out = {"x": x, "y": y, "l": norm, "eps": np.zeros(shape[:-1])}
    if kind in ("progress_warp", "kink_warp"):
        out["eps"] = rng.normal(0, WARP_SD, shape[:-1])
    return out


def kinked(t: np.ndarray) -> np.ndarray:
    """The progress a warm-up gives: KINK_SLOPE·t until KINK steps, then 1 a step (a kink in
    every trend read at it; the review's case of a rough curve)."""
    return np.where(t < KINK, KINK_SLOPE * t, KINK_SLOPE * KINK + (t - KINK))


def simulate(scenario: str, s: Setting, rng, n_sim: int) -> dict[str, np.ndarray]:
    """x, y, l values (n_sim, models, seeds, checkpoints): trend(t·(1 + ε_s)) + NOISE·deviation;
    kink_warp: trend(kinked(t·(1 + ε_s))) + KINK_NOISE·deviation."""
    dev = deviations(scenario, s, rng, n_sim)
    t = s.t() * (1 + dev["eps"][..., None])
    kink = coupling(scenario)[0] == "kink_warp"
    fx, fy, fl = _trends(kinked(t) if kink else t)
    sd = KINK_NOISE if kink else NOISE
    values = {"x": fx + sd * dev["x"], "y": fy + sd * dev["y"], "l": fl + sd * dev["l"]}
    return values | {"t": s.t()}


def row_rng(name: str, seed: int = 0) -> np.random.Generator:
    """One generator per row, seeded by [CRC-32 of the row's name, seed]."""
    return np.random.default_rng([zlib.crc32(name.encode()), seed])


def row_name(scenario: str, s: Setting) -> str:
    """'scenario|k=…|n=…|w=…', then the models, φs, white shares and c where not the default."""
    name = f"{scenario}|k={s.seeds}|n={s.checkpoints}|w={s.white:g}"
    name += f"|m={s.models}" if s.models != N_MODELS else ""
    name += "|phi=" + "/".join(f"{v:g}" for v in s.phis) if s.phis else ""
    name += "|ws=" + "/".join(f"{v:g}" for v in s.whites) if s.whites else ""
    return name + (f"|c={s.norm_loss:g}" if s.norm_loss != NORM_LOSS else "")


def study_p(x, y, norm, perms: np.ndarray, signs: bool = True, steps=None) -> np.ndarray:
    """One study's one-sided (+) pooled p per view (VIEWS order), arrays (models, seeds, n); then
    the claim's joint p over the two pairs (``primary.joint_p``: the exact Westfall–Young min-p
    the report computes over ``primary_views`` [level, comove]); with ``signs``, then per view 1
    where every model's effect has the + sign (``primary.effect_signs``) and its own exact test
    rules out a reversal by the view's Δ (DELTA, DELTA_CO; ``signs.reversal_ps``), else 0: the
    per-model half of "reproduced". ``steps``: each checkpoint's step (the moves span H there)."""
    at = {} if steps is None else {STEP_KEY: np.asarray(steps, float)}
    mats = [{"x": a, "y": b, SCALE: c} | at for a, b, c in zip(x, y, norm, strict=True)]
    ps, held, nulls = [], [], {}
    for view in VIEWS:
        nulls[view] = [contrast_cell(m, "x", "y", view, perms)[1] for m in mats]
        ps.append(pooled_row(nulls[view], view, "greater")["p"])
        if signs and (effect_signs(nulls[view]) == 1).all():
            margin = DELTA_CO if view in PAIRS["comove"] else DELTA
            cells = [effect_cell(m, "x", "y", view, perms) for m in mats]
            held.append(float(ruled_out([reversal_ps(cells, margin)]).all()))
        elif signs:
            held.append(0.0)
    pairs = [{v: nulls[v] for v in pair} for pair in PAIRS.values()]
    return np.array([*ps, joint_p(pairs, [1.0] * len(mats)), *held])


def _chunk_p(task: tuple) -> np.ndarray:
    x, y, norm, perms, signs, steps = task
    return np.array([study_p(x[i], y[i], norm[i], perms, signs, steps) for i in range(len(x))])


def study_tasks(sim: dict[str, np.ndarray], threads: int = 1, signs: bool = False) -> list[tuple]:
    """The studies of ``sim`` cut into chunks of (x, y, norm, perms, signs, steps), 4 per
    process (steps: ``sim["t"]``, None where the simulation has none)."""
    n = len(sim["x"])
    perms = seed_permutations(sim["x"].shape[2])
    cuts = np.array_split(np.arange(n), max(1, min(n, 4 * threads)))
    t = sim.get("t")
    return [(sim["x"][i], sim["y"][i], sim["l"][i], perms, signs, t) for i in cuts if i.size]


def view_pvalues(sim: dict[str, np.ndarray], threads: int = 1, signs: bool = False) -> np.ndarray:
    """(n_sim, 5) p per study: each view's and the joint (``study_p``), in ``threads``
    processes; with ``signs`` (n_sim, 9): then per view whether every model's effect sign is +
    and its reversal by the view's Δ ruled out."""
    return np.vstack(map_tasks(_chunk_p, study_tasks(sim, threads, signs), threads))


def rate_rows(p: np.ndarray, head: dict, null: bool, betas: dict | None = None) -> list[dict]:
    """Rows per view and pair (a pair's p: the larger of its two; its β: the partial view's, the
    binding one), then the claim's JOINT p where ``p`` has a fifth column: the rate of p ≤ ALPHA,
    its Clopper–Pearson 95 % interval, and on a null the pass rule's largest passing count and
    verdict (``pass_rule.pass_max``)."""
    cols = {v: p[:, i] for i, v in enumerate(VIEWS)}
    cols |= {
        k: np.maximum(p[:, VIEWS.index(a)], p[:, VIEWS.index(b)]) for k, (a, b) in PAIRS.items()
    }
    if p.shape[1] > len(VIEWS):
        cols[JOINT] = p[:, len(VIEWS)]
    betas = betas or {}
    rows = []
    for view, ps in cols.items():
        n, hits = len(ps), int(np.count_nonzero(ps <= ALPHA))
        low, high = clopper_pearson(hits, n)
        beta = betas.get(PAIRS[view][1] if view in PAIRS else view, np.nan)
        row = head | {"view": view, "beta": beta, "draws": n, "rate": hits / n}
        row |= {"mc_low": low, "mc_high": high}
        if null:
            row |= {"pass_max": pass_max(n, ALPHA), "passes": hits <= pass_max(n, ALPHA)}
        rows.append(row)
    return rows


def measure(scenario: str, s: Setting, draws: int, threads: int = 1, seed: int = 0) -> list[dict]:
    """``rate_rows`` of one row: ``draws`` studies of ``scenario`` at ``s`` from the row's own
    generator (``row_rng`` of ``row_name``), with its seconds."""
    start = time.perf_counter()
    kind, b = coupling(scenario)
    sim = simulate(scenario, s, row_rng(row_name(scenario, s), seed), draws)
    p = view_pvalues(sim, threads)
    betas = implied(kind, b, s) if kind in ("level", "innovation", "offset") else None
    head = {"scenario": scenario, "coupling": kind, "strength": b, "seeds": s.seeds}
    head |= {"checkpoints": s.checkpoints, "white": s.white}
    rows = rate_rows(p, head, scenario in NULLS, betas)
    return [r | {"seconds": time.perf_counter() - start} for r in rows]


def null_table(
    draws: int, threads: int = 1, seeds=(3, 5, 8), whites=(0.0, 0.1), scenarios=NULLS
) -> pd.DataFrame:
    """Rates of every view on every null at ``seeds`` seeds × white shares, 51 checkpoints."""
    cells = itertools.product(whites, scenarios, seeds)
    rows = [measure(n, Setting(k, white=w), draws, threads) for w, n, k in cells]
    return pd.DataFrame([r for group in rows for r in group])


def power_cells(w: float, other_white: float = 0.1) -> list[tuple[str, str, float]]:
    """(planted at, coupling, strength) of the power table at white share w, each planted at the
    study's spacing (``planted``): the stated model at level β = Δ (partial, the binding view);
    innovation-only at co-movement β_co = DELTA_CO (partial); and at w = ``other_white``
    innovation-only at the stated model's β_co and offset-only at level β = Δ."""
    ref = Setting(white=w)
    beta = planted("level", DELTA, VIEWS[1], ref)
    cells = [("level β = Δ", "level", beta)]
    cells += [("β_co = Δ_co", "innovation", planted("innovation", DELTA_CO, VIEWS[3], ref))]
    if w == other_white:
        co = implied("level", beta, ref)[VIEWS[3]]
        cells += [("β_co of level Δ", "innovation", planted("innovation", co, VIEWS[3], ref))]
        cells += [("level β = Δ", "offset", planted("offset", DELTA, VIEWS[1], ref))]
    return cells


def power_table(
    draws: int, threads: int = 1, seeds=(3, 5, 8), checkpoints=(51, 101, 201), whites=(0, 0.1, 0.3)
) -> pd.DataFrame:
    """Power per view and pair at every ``power_cells`` cell × seeds × checkpoints (5,000 steps;
    the strength stays as planted at 100 steps, so a denser series changes β_co, not β)."""
    rows = []
    for w in whites:
        for (label, kind, b), k, n in itertools.product(power_cells(w), seeds, checkpoints):
            found = measure(f"{kind}_b{b:.6g}", Setting(k, n, w), draws, threads)
            rows += [r | {"planted": label} for r in found]
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> None:
    """Write the power table (``power_table``) or, with --nulls, the null table as CSV."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200, help="simulated studies per row")
    parser.add_argument("--out", default="persistent_power.csv", help="CSV to write")
    parser.add_argument("--threads", type=int, default=1, help="worker processes")
    parser.add_argument("--nulls", action="store_true", help="the null table instead")
    args = parser.parse_args(argv)
    table = (null_table if args.nulls else power_table)(args.draws, args.threads)
    table.to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
