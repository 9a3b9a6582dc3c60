"""Calibration: how often each test the report uses says "yes" when the answer is known.

Simulated runs of ``N_CHECKPOINTS`` checkpoints (steps 0, 100, …, 5000 as in the study), a feature
x, a loss y and an L2 norm l per run, grouped as studies of ``N_MODELS`` models × k seeds (seeds of
a model share the trend and differ by noise). Nulls that look like training (NULLS, x carries none
of y's fluctuation): independent random walks; a decelerating function of step plus iid, AR(0.8)
or AR(0.95) noise; an almost monotone pair (|raw ρ| ≈ 0.99); x a function of the L2 norm, whose
fluctuation y shares (a null for the scale only); x tracking y's fluctuation with the sign opposite
to the raw ρ (a null for the sign-aware flags only). Signals (SIGNALS): x carries a share r of y's
own fluctuation around its trend, for r in EFFECTS. Each (test, scenario) row gives the rate of
"yes" over n_sim draws (``measures``: the false-positive rate on a null, the power on a
signal), its 95% Clopper–Pearson Monte Carlo interval and the nominal rate; a test
whose interval lies above nominal on a null fails (``passes`` False) and may not feed a verdict.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from functools import partial

import numpy as np
import pandas as pd
from scipy import stats

from topotrain.analysis.associations import view_association
from topotrain.analysis.primary import claim_views
from topotrain.analysis.replication import REPRODUCED, monotone_verdict
from topotrain.analysis.scaling import loglog_line, spearman_exact
from topotrain.analysis.seed_contrast import (
    CONTRAST_VIEWS,
    SCALE,
    contrast_cell,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.stats import (
    ALPHA,
    benjamini_hochberg,
    seed_interval,
    sign_flip_p,
    spearman_rows,
)
from topotrain.config import DEFAULTS

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults

log = logging.getLogger(__name__)

N_CHECKPOINTS, N_MODELS, STEP = 51, 5, 100
SIMULATIONS = DEFAULTS["analysis"]["calibration"]["simulations"]  # draws per scenario
SEEDS = tuple(DEFAULTS["analysis"]["calibration"]["seeds"])  # seeds per simulated model
NOISE = 0.05  # sd of the feature's and the loss's fluctuation around their trends
EFFECTS = (0.05, 0.1, 0.2, 0.4)  # planted: share r of the loss's fluctuation in the feature's
CALIBRATION_COLUMNS = [
    "test",
    "scenario",
    "measures",
    "seeds",
    "n_sim",
    "rate",
    "mc_low",
    "mc_high",
    "nominal",
    "passes",
    "used_in_verdicts",
]
RUN_VIEWS = ("raw", "detrended", "partial_step", "partial_l2")  # one run's views: p and CI
RUN_TESTS = [f"{view} {what}" for view in RUN_VIEWS for what in ("p", "CI")]
USED = {  # tests whose result feeds a verdict or a flag
    "seed_contrast p (model)",
    "seed_contrast p (pooled)",
    "seed_contrast_l2 p (pooled)",
    "seed_contrast_l2 p (model)",
    "beats_clock (pooled)",
    "beats_scale (pooled)",
    "beats_clock (model)",
    "beats_scale (model)",
    "primary family BH (any rejection)",
    "T2/T3/T4 rule: reproduced (per size)",
    "T5 sign-flip p (paired by model)",
    "T4/T6 Spearman vs N, exact p",
    "T7 log-log slope interval excludes 0",
    "t2_monotone rule: reproduced",
}
SCALE_ONLY = {"l2_function"}  # nulls of the scale tests only (x does carry y's fluctuation)
SIGN_ONLY = {"opposite_sign"}  # nulls of the sign-aware flags only


def _ar(rng: np.random.Generator, phi: float, shape: tuple[int, ...]) -> np.ndarray:
    """Stationary AR(φ) series along the last axis with marginal sd NOISE (φ = 0: iid)."""
    e = rng.normal(0.0, NOISE * np.sqrt(1 - phi**2), shape)
    out = np.empty(shape)
    out[..., 0] = rng.normal(0.0, NOISE, shape[:-1])
    for i in range(1, shape[-1]):
        out[..., i] = phi * out[..., i - 1] + e[..., i]
    return out


def _trends(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feature, loss and L2 trends: −log1p(t/100), 2 + 3·e^(−t/800), 1 + 0.3·log1p(t/500)."""
    return -np.log1p(t / 100), 2 + 3 * np.exp(-t / 800), 1 + 0.3 * np.log1p(t / 500)


def simulate(name: str, rng: np.random.Generator, shape: tuple[int, int]) -> dict[str, np.ndarray]:
    """x, y, l of shape (models, seeds, checkpoints) for scenario ``name`` (NULLS or SIGNALS)."""
    full = (*shape, N_CHECKPOINTS)
    t = np.arange(N_CHECKPOINTS) * float(STEP)
    fx, fy, fl = _trends(t)
    if name == "random_walk":
        x, y, norm = (np.cumsum(rng.normal(0, NOISE, full), axis=-1) for _ in range(3))
        return {"x": x, "y": y, "l": norm + 1}
    phi = {"ar08": 0.8, "ar095": 0.95}.get(name.split("_")[-1] if "_ar" in name else "", 0.0)
    u, e, w = _ar(rng, phi, full), _ar(rng, phi, full), _ar(rng, 0.8, full) / 5
    if name == "near_monotone":  # tiny noise: raw ρ(x, y) ≈ −0.99
        return {"x": -fx + u / 10, "y": fy + e / 10, "l": fl + w}
    if name == "l2_function":  # x a function of the norm, y shares the norm's fluctuation
        return {"x": 2 * (fl + w) + e / 5, "y": fy + 2 * w + u, "l": fl + w}
    if name == "opposite_sign":  # trend ρ > 0, fluctuations anti-correlated
        return {"x": fx - 0.7 * u + 0.7 * e, "y": fy + u, "l": fl + w}
    r = float(name.removeprefix("signal_r")) if name.startswith("signal") else 0.0
    return {"x": fx + r * u + np.sqrt(1 - r**2) * e, "y": fy + u, "l": fl + w}


NULLS = (
    "random_walk",
    "decel_iid",
    "decel_ar08",
    "decel_ar095",
    "near_monotone",
    "l2_function",
    "opposite_sign",
)
SIGNALS = tuple(f"signal_r{r:g}" for r in EFFECTS)
PAIRED = {  # nulls of T5's paired test: per-model error differences symmetric about 0
    "paired_gaussian": lambda rng, shape: rng.normal(size=shape),
    "paired_heavy_tailed": lambda rng, shape: rng.standard_t(2, size=shape),
}


SIZES = np.array([3e3, 7e3, 21e3, 46e3, 97e3])  # the study's parameter counts
SIZE_NULLS = {  # nulls of the across-size rules: nothing changes with N
    "sizes_gaussian": lambda rng, shape: rng.normal(size=shape),
    "sizes_heavy_tailed": lambda rng, shape: rng.standard_t(3, size=shape),
}


def _size_draws(name: str, n_sim: int, seed: int) -> dict[str, np.ndarray]:
    """The across-size rules on n_sim studies where nothing depends on N: a per-size value
    (T4/T6's exact Spearman), final values e^(1 + 0.1·ε) (T7's log-log t-interval) and 3 seeds'
    ρ = tanh(1.5 + 0.3·ε) per size (t2_monotone: a strict rise with disjoint Fisher-z intervals)."""
    rng = np.random.default_rng([seed, 13, len(name)])
    draw = SIZE_NULLS[name]
    values, finals, rhos = draw(rng, (n_sim, 5)), draw(rng, (n_sim, 5)), draw(rng, (n_sim, 5, 3))
    spear = np.array([spearman_exact(SIZES, v)[1] < ALPHA for v in values])
    lines = [loglog_line(SIZES, np.exp(1 + 0.1 * f)) for f in finals]
    excl = np.array([r["loglog_slope_ci_low"] > 0 or r["loglog_slope_ci_high"] < 0 for r in lines])
    strength = -np.tanh(1.5 + 0.3 * rhos)  # |ρ| near 0.9, no trend with size
    mono = np.array(
        [monotone_verdict([seed_interval(r) for r in study]) == REPRODUCED for study in strength]
    )
    return {
        "T4/T6 Spearman vs N, exact p": spear,
        "T7 log-log slope interval excludes 0": excl,
        "t2_monotone rule: reproduced": mono,
    }


def _paired_draws(name: str, n_sim: int, seed: int) -> dict[str, np.ndarray]:
    """T5's exact sign-flip test on n_sim draws of N_MODELS per-model differences."""
    d = PAIRED[name](np.random.default_rng([seed, 11, len(name)]), (n_sim, N_MODELS))
    return {"T5 sign-flip p (paired by model)": np.array([sign_flip_p(r) < ALPHA for r in d])}


def _run_draws(name: str, n_sim: int, n_resamples: int, seed: int) -> dict[str, np.ndarray]:
    """Per-run tests' "yes" (bool arrays of n_sim runs) on scenario ``name``."""
    rng = np.random.default_rng([seed, NULLS.index(name) if name in NULLS else 99, len(name)])
    sim = simulate(name, rng, (n_sim, 1))
    t = np.arange(N_CHECKPOINTS) * float(STEP)
    out = {k: np.zeros(n_sim, bool) for k in RUN_TESTS}
    for i in range(n_sim):
        x, y, norm = (sim[k][i, 0] for k in "xyl")
        for view in RUN_VIEWS:
            z = {"partial_step": t, "partial_l2": norm}.get(view)
            res = view_association(x, y, view, z, n_resamples=n_resamples, seed=i)
            out[f"{view} p"][i] = res["p"] < ALPHA
            out[f"{view} CI"][i] = res["ci_low"] > 0 or res["ci_high"] < 0
    return out


def _contrast_study(sim: dict[str, np.ndarray], i: int, perms: np.ndarray) -> dict[str, float]:
    """Model 0's and the pooled contrast ρ and p (two-sided), and the claim's one-sided p for a
    claimed + sign through ``primary.claim_views`` (the report's own function), of simulated
    study i, beside the sign of the raw ρ (model 0's seeds' mean, all runs')."""
    models = [
        {c: sim[k][i, m] for k, c in (("x", "x"), ("y", "y"), ("l", SCALE))}
        for m in range(N_MODELS)
    ]
    out = {}
    for view in CONTRAST_VIEWS:
        cells = [contrast_cell(m, "x", "y", view, perms) for m in models]
        nulls = [null for _, null in cells]
        out[f"{view} model p"], out[f"{view} model rho"] = cells[0][0]["p"], cells[0][0]["rho"]
        pooled = pooled_row(nulls, view, "two-sided")
        out[f"{view} pooled p"], out[f"{view} pooled rho"] = pooled["p"], pooled["rho"]
    claim = claim_views(models, [perms] * N_MODELS, [1.0] * N_MODELS, "x", "y")
    out["seed_contrast claim p"], out["seed_contrast_l2 claim p"] = (
        claim["p_clock"],
        claim["p_scale"],
    )
    x, y = sim["x"][i].reshape(-1, N_CHECKPOINTS), sim["y"][i].reshape(-1, N_CHECKPOINTS)
    rho = spearman_rows(x, y)
    k = sim["x"].shape[2]
    signs = {"raw sign pooled": np.sign(rho.mean()), "raw sign model": np.sign(rho[:k].mean())}
    return out | signs | {"raw all positive model": bool(np.all(rho[:k] > 0))}


def _contrast_draws(name: str, n_sim: int, k: int, seed: int) -> dict[str, np.ndarray]:
    """Between-seed tests' "yes" over n_sim simulated studies of N_MODELS models × k seeds."""
    rng = np.random.default_rng([seed, 7, k, sum(map(ord, name))])
    sim = {
        c: v.reshape(n_sim, N_MODELS, k, N_CHECKPOINTS)
        for c, v in simulate(name, rng, (n_sim * N_MODELS, k)).items()
    }
    perms = seed_permutations(k, seed)
    rows = [_contrast_study(sim, i, perms) for i in range(n_sim)]
    return _contrast_hits(pd.DataFrame(rows))


def _contrast_hits(d: pd.DataFrame) -> dict[str, np.ndarray]:
    """ "yes" per study for each between-seed test and the flags and BH decisions built on them."""
    hits = {}
    for view, flag in (("seed_contrast", "beats_clock"), ("seed_contrast_l2", "beats_scale")):
        for level in ("model", "pooled"):
            p = d[f"{view} {level} p"].to_numpy(float)
            hits[f"{view} p ({level})"] = p < ALPHA
            same = np.sign(d[f"{view} {level} rho"]) == d[f"raw sign {level}"]
            hits[f"{flag} ({level})"] = (p < ALPHA) & same.to_numpy()
    claim = np.maximum(d["seed_contrast claim p"], d["seed_contrast_l2 claim p"]).to_numpy(float)
    # the primary family: three claims; under the global null each is an independent study's
    # claim p, so three consecutive studies form one family
    m = len(claim) // 3 * 3
    fam = claim[:m].reshape(-1, 3)
    any_rej = np.array([(benjamini_hochberg(f) < ALPHA).any() for f in fam])
    hits["primary family BH (any rejection)"] = np.repeat(any_rej, 3)[: len(claim)]
    first = np.zeros(len(claim), bool)  # the family's first claim (TP0's place), rejected by BH
    first[:m] = np.repeat([benjamini_hochberg(f)[0] < ALPHA for f in fam], 3)
    agree = d["raw all positive model"].to_numpy(bool)  # every seed shows the claim's sign (+)
    hits["T2/T3/T4 rule: reproduced (per size)"] = agree & first
    return hits


def _rows(hits: dict[str, np.ndarray], name: str, seeds: int | str) -> list[dict]:
    kind = "power" if name.startswith("signal") else "false-positive rate"
    rows = []
    for test, yes in hits.items():
        if kind != "power" and not _is_null_for(test, name):
            continue
        n, k = yes.size, int(yes.sum())
        low, high = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        passes = bool(low <= ALPHA) if kind != "power" else np.nan
        rows.append(
            {
                "test": test,
                "scenario": name,
                "measures": kind,
                "seeds": seeds,
                "n_sim": n,
                "rate": k / n,
                "mc_low": low,
                "mc_high": high,
                "nominal": ALPHA,
                "passes": passes,
                "used_in_verdicts": test in USED,
            }
        )
    return rows


def _is_null_for(test: str, scenario: str) -> bool:
    """Whether the scenario is a null of the test (its H0 holds there)."""
    scale = "l2" in test or "scale" in test
    flag = "beats" in test or "rule" in test
    claim = "primary" in test or "rule" in test  # a claim must beat the scale too
    if scenario in SCALE_ONLY:
        return scale or claim
    if scenario in SIGN_ONLY:
        return flag
    if scenario in PAIRED:
        return "T5" in test
    sizes = test.startswith(("T4/T6", "T7", "t2_monotone"))
    if scenario in SIZE_NULLS:
        return sizes
    return "T5" not in test and not sizes


def _task(task: tuple[str, int | None], n_sim: int, n_resamples: int, seed: int) -> list[dict]:
    """Rows of one scenario: its per-run tests (k None) or its between-seed tests with k seeds."""
    name, k = task
    if name in PAIRED:
        return _rows(_paired_draws(name, n_sim, seed), name, f"{N_MODELS} models")
    if name in SIZE_NULLS:
        return _rows(_size_draws(name, n_sim, seed), name, f"{N_MODELS} sizes")
    if k is None:
        return _rows(_run_draws(name, n_sim, n_resamples, seed), name, "1 run")
    return _rows(_contrast_draws(name, n_sim, k, seed), name, k)


def calibration_table(
    n_sim: int = SIMULATIONS,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seeds: tuple[int, ...] = SEEDS,
    seed: int = _ANALYSIS["bootstrap_seed"],
    threads: int = 1,
    progress: Callable[[str], None] = log.info,
) -> pd.DataFrame:
    """CALIBRATION_COLUMNS for every per-run test on n_sim runs and every between-seed test on
    n_sim studies of N_MODELS models × k seeds for each k in ``seeds``, over NULLS and SIGNALS;
    scenarios run in ``threads`` processes (the same rows in the same order for any count)."""
    tasks = [(name, k) for name in (*NULLS, *SIGNALS) for k in (None, *seeds)]
    tasks += [(name, None) for name in (*PAIRED, *SIZE_NULLS)]
    work = partial(_task, n_sim=n_sim, n_resamples=n_resamples, seed=seed)
    results: dict[tuple, list[dict]] = {}
    with ProcessPoolExecutor(threads) if threads > 1 else nullcontext() as pool:
        futures = {task: pool.submit(work, task) for task in tasks} if pool else {}
        for done, task in enumerate(tasks, 1):
            results[task] = futures[task].result() if pool else work(task)
            what = (
                f"{task[1]} seeds, "
                if task[1]
                else "per-run, "
                if task[0] in NULLS + SIGNALS
                else ""
            )
            progress(f"calibration: {done}/{len(tasks)} {task[0]} ({what}{n_sim} draws)")
    rows = [row for task in tasks for row in results[task]]
    return pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)
