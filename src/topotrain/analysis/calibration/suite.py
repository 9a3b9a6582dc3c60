"""Calibration: how often each test the report uses says "yes" when the answer is known.

Simulated studies of ``N_MODELS`` models × k seeds (``simulator``: nulls that look like
training, planted signals, and the effect scenarios where β is known), three features of the same
runs per study (the primary family's three claims share their runs), and per-run, per-model and
across-size draws for the tests that need them
(``seed_draws``, ``across_models``). Each (test, scenario) row gives the rate of "yes"
over n_sim draws (``measures``: the false-positive rate on a null, the power on a signal, an
interval end's miss rate; ``effect``), its 95 % Clopper–Pearson Monte Carlo interval and
the nominal rate. A null's row ``passes`` when its "yes" count is at most ``pass_max``
(``pass_rule``: a row at nominal passes ≥ 95 % of the time; a verdict's row at 1.5 × nominal
fails ≥ 80 % from ``verdict_draws`` on, 628 at α and 1,288 at α/2); a verdict's failing row is
re-drawn and decided on all its draws pooled, at the suite's family level
(``confirm_failures``, ``pass_rule.redraw_max``).
Each task (scenario × seeds) has its own ``task_rng``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from contextlib import nullcontext
from functools import partial

import numpy as np
import pandas as pd

from topotrain.analysis.calibration.across_models import (  # noqa: F401 (SIZES: re-exported)
    PAIRED,
    SIZE_NULLS,
    SIZES,
)
from topotrain.analysis.calibration.across_models import paired_draws as _paired_draws
from topotrain.analysis.calibration.across_models import size_draws as _size_draws
from topotrain.analysis.calibration.effect import (
    EFFECT_TESTS,
    judge_effect,
)
from topotrain.analysis.calibration.pass_rule import (
    CONFIRM_FACTOR,
    clopper_pearson,
    pass_max,
    redraw_max,
    short_of_verdict_draws,
)
from topotrain.analysis.calibration.seed_draws import (  # noqa: F401 (the draws' names too)
    ALPHA_VIEW,
    EFFECT_NOMINAL,
    FEATURES,
    RUN_TESTS,
    alpha_study,
    effect_studies,
)
from topotrain.analysis.calibration.seed_draws import contrast_draws as _contrast_draws
from topotrain.analysis.calibration.seed_draws import contrast_study as _contrast_study  # noqa: F401
from topotrain.analysis.calibration.seed_draws import run_draws as _run_draws
from topotrain.analysis.calibration.simulator import (  # noqa: F401 - the simulator's names live here too
    ALPHA_NULLS,
    ALPHA_SIGNALS,
    EFFECT_SCENARIOS,
    EFFECTS,
    N_CHECKPOINTS,
    N_MODELS,
    NOISE,
    NULLS,
    SESOI,
    SIGNALS,
    STEP,
    effect_scenarios,
    is_signal,
    simulate,
    task_rng,
)
from topotrain.analysis.inference.parallel import design_initializer
from topotrain.analysis.inference.stats import ALPHA
from topotrain.config import DEFAULTS

log = logging.getLogger(__name__)

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults
SIMULATIONS = _ANALYSIS["calibration"]["simulations"]  # draws per scenario
SEEDS = tuple(_ANALYSIS["calibration"]["seeds"])  # seeds per simulated model
CALIBRATION_COLUMNS = [  # first_*: a re-drawn row's first draws (the others: all pooled)
    *("test", "scenario", "measures", "seeds", "n_sim", "rate", "mc_low", "mc_high", "nominal"),
    *("pass_max", "passes", "used_in_verdicts", "first_n_sim", "first_rate"),
]
CONFIRM_SEED = 1  # added to the suite's seed for the re-draw
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
    *EFFECT_TESTS,
}
SCALE_ONLY = {"l2_function"}  # nulls of the scale tests only (x does carry y's fluctuation)
SIGN_ONLY = {"opposite_sign"}  # nulls of the sign-aware flags only


def _judge(test: str, name: str, sesoi: float = SESOI) -> tuple[str, float, bool] | None:
    """(measures, nominal, is_null) of a (test, scenario) row, None where the row is not made
    (a null that is not the test's)."""
    alpha = test.startswith(ALPHA_VIEW)  # SPLIT too
    if test in EFFECT_TESTS:
        return judge_effect(test, name, sesoi)
    if is_signal(name):  # the alpha_* signals: the α views' power only
        return ("power", ALPHA, False) if not name.startswith("alpha") or alpha else None
    return ("false-positive rate", ALPHA, True) if _is_null_for(test, name) else None


def _rows(
    hits: dict[str, np.ndarray], name: str, seeds: int | str, sesoi: float = SESOI
) -> list[dict]:
    rows = []
    for test, yes in hits.items():
        judged = _judge(test, name, sesoi)
        if judged is None:
            continue
        kind, nominal, null = judged
        row = {"test": test, "scenario": name, "measures": kind, "seeds": seeds}
        estimate = _estimate(int(yes.sum()), yes.size, nominal, null)
        rows.append(row | estimate | {"used_in_verdicts": test in USED})
    return rows


def _estimate(hits: int, n: int, nominal: float, null: bool, pooled: bool = False) -> dict:
    """n_sim, rate, its Clopper–Pearson 95 % interval, nominal, and on a null pass_max and
    passes (hits ≤ pass_max; ``pooled`` draws: ``redraw_max``) of ``hits`` "yes" over n draws."""
    low, high = clopper_pearson(hits, n)
    out = {"n_sim": n, "rate": hits / n, "mc_low": low, "mc_high": high, "nominal": nominal}
    if not null:
        return out | {"pass_max": pd.NA, "passes": np.nan}
    most = redraw_max(n, nominal) if pooled else pass_max(n, nominal)
    return out | {"pass_max": most, "passes": bool(hits <= most)}


def _is_null_for(test: str, scenario: str) -> bool:
    """Whether the scenario is a null of the test (its H0 holds there)."""
    if test.startswith(ALPHA_VIEW):  # x unrelated to y beyond a: every null but those where x
        carries = SCALE_ONLY | SIGN_ONLY  # carries y's fluctuation (the norm's, or anti-signed)
        return scenario in ALPHA_NULLS or (scenario in NULLS and scenario not in carries)
    if scenario in ALPHA_NULLS:
        return False
    scale = "l2" in test or "scale" in test
    flag = "beats" in test or "rule" in test
    claim = "primary" in test or "rule" in test  # a claim must beat the scale too
    if scenario in SCALE_ONLY:
        return scale or claim
    if scenario in SIGN_ONLY:  # the claims too: one-sided in the claimed sign
        return flag or claim
    if scenario in PAIRED:
        return "T5" in test
    sizes = test.startswith(("T4/T6", "T7", "t2_monotone"))
    if scenario in SIZE_NULLS:
        return sizes
    return "T5" not in test and not sizes


def _task(
    task: tuple[str, int | None], n_sim: int, n_resamples: int, seed: int, sesoi: float = SESOI
) -> list[dict]:
    """Rows of one scenario: its per-run tests (k None) or its between-seed tests with k seeds."""
    name, k = task
    if name in PAIRED:
        return _rows(_paired_draws(name, n_sim, seed), name, f"{N_MODELS} models")
    if name in SIZE_NULLS:
        return _rows(_size_draws(name, n_sim, seed), name, f"{N_MODELS} sizes")
    if k is None:
        return _rows(_run_draws(name, n_sim, n_resamples, seed), name, "1 run")
    effects = 0 if name.startswith("alpha") else None  # their β is not the simulator's to fix
    return _rows(_contrast_draws(name, n_sim, k, seed, effects, sesoi), name, k, sesoi)


def calibration_tasks(seeds: tuple[int, ...] = SEEDS, sesoi: float = SESOI) -> list[tuple]:
    """The suite's tasks, (scenario, seeds per model; None for the per-run, paired and
    across-size ones), in table order: each draws from its own ``task_rng``."""
    tasks = [(name, k) for name in (*NULLS, *SIGNALS) for k in (None, *seeds)]
    tasks += [(name, k) for name in effect_scenarios(sesoi) for k in seeds]
    tasks += [(name, k) for name in (*ALPHA_NULLS, *ALPHA_SIGNALS) for k in seeds]
    return tasks + [(name, None) for name in (*PAIRED, *SIZE_NULLS)]


def calibration_table(
    n_sim: int = SIMULATIONS,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seeds: tuple[int, ...] = SEEDS,
    seed: int = _ANALYSIS["bootstrap_seed"],
    threads: int = 1,
    progress: Callable[[str], None] = log.info,
    sesoi: float = SESOI,
) -> pd.DataFrame:
    """CALIBRATION_COLUMNS for every per-run test on n_sim runs over NULLS and SIGNALS, and
    every between-seed test on n_sim studies of N_MODELS models × k seeds for each k in
    ``seeds`` over those and ``effect_scenarios(sesoi)`` (the effect rows on ``effect_studies``
    of them; Δ = ``sesoi``, the study's ``analysis.sesoi``); scenarios run in ``threads``
    processes (the same rows in the same order for any count)."""
    tasks = calibration_tasks(seeds, sesoi)
    rows = "calibration.csv's verdict rows at α"
    if short := short_of_verdict_draws(n_sim, ALPHA, "analysis.calibration.simulations", rows):
        log.warning("calibration: %s", short)
    work = partial(_task, n_sim=n_sim, n_resamples=n_resamples, seed=seed, sesoi=sesoi)
    results: dict[tuple, list[dict]] = {}
    pool_of = partial(ProcessPoolExecutor, threads, **design_initializer())  # the job's H in each
    with pool_of() if threads > 1 else nullcontext() as pool:
        heavy_first = sorted(tasks, key=lambda task: -(task[1] or 0))  # the 8-seed ones last long
        futures = {task: pool.submit(work, task) for task in heavy_first} if pool else {}
        for done, task in enumerate(tasks, 1):
            results[task] = futures[task].result() if pool else work(task)
            what = f"{task[1]} seeds, " if task[1] else "per-run, " * (task[0] in NULLS + SIGNALS)
            progress(f"calibration: {done}/{len(tasks)} {task[0]} ({what}{n_sim} draws)")
        rows = [row for task in tasks for row in results[task]]
        table = pd.DataFrame(rows, columns=CALIBRATION_COLUMNS).astype({"pass_max": "Int64"})
        again = partial(work, seed=seed + CONFIRM_SEED)  # the re-draws' fresh generators
        return confirm_failures(table, again, n_sim, progress, pool)


def confirm_failures(table: pd.DataFrame, work: Callable, n_sim: int, progress=log.info, pool=None):
    """Re-draw CONFIRM_FACTOR × n_sim fresh studies (``work(task, n_sim=…)``: ``_task`` with a
    new seed; in the executor ``pool``'s workers if given: each task has its own generator, so the
    table is the same) for every row that fails and that a verdict or an effect interval uses, and
    decide it on all its draws pooled at the suite's family level: k₁ + k₂ ≤ redraw_max(n₁ + n₂)
    (``pass_rule``). About 5 % of rows at their nominal rate fail their first draws and one in
    20 000 fails pooled; a row at twice nominal fails pooled too. n_sim … passes become the
    pooled ones; first_n_sim, first_rate keep the first."""
    table, draws = table.copy(), CONFIRM_FACTOR * n_sim
    used = table["used_in_verdicts"] | table["test"].isin(EFFECT_TESTS)
    retry = table["passes"].eq(False) & used
    failing = list(table.loc[retry, ["scenario", "seeds"]].drop_duplicates().itertuples(False))
    tasks = [(sc, k if isinstance(k, (int, np.integer)) else None) for sc, k in failing]
    futures = [pool.submit(work, task, n_sim=draws) for task in tasks] if pool else tasks
    for (scenario, seeds), task, future in zip(failing, tasks, futures, strict=True):
        progress(f"calibration: re-drawing {scenario} ({seeds}) on {draws} draws")
        again = pd.DataFrame(future.result() if pool else work(task, n_sim=draws)).set_index("test")
        for i in table.index[retry & table["scenario"].eq(scenario) & table["seeds"].eq(seeds)]:
            first, new = table.loc[i], again.loc[table.at[i, "test"]]
            hits = round(first["rate"] * first["n_sim"]) + round(new["rate"] * new["n_sim"])
            pooled = _estimate(hits, first["n_sim"] + new["n_sim"], first["nominal"], True, True)
            table.loc[i, ["first_n_sim", "first_rate"]] = first["n_sim"], first["rate"]
            table.loc[i, list(pooled)] = list(pooled.values())
    return table
