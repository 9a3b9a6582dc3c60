"""Miss rates of the co-movement views' effect intervals, on the persistent process.

On simulated studies of ``persistent`` (the fitted persistence, white share w, per-seed offsets and
drifts on the nulls) each study's co-movement effects β_co [equal-tailed 95 % interval] come from
``primary.claim_views`` with the co-movement pair (``primary.VIEWS["comove"]``: ``seed_comove``
and, partial on the norm, ``seed_comove_l2``), the function the report calls, claimed sign +1 for
every model. Where the process fixes β_co in a view, each end's miss is counted: the lower end
above it, the upper end below it (each at most α/2 = 2.5 % for a valid interval), and judged by the
pass rule (``pass_rule.pass_max`` at α/2; the default ``view_draws``, 1,288 studies, is
``pass_rule.verdict_draws(α/2)``: the whole rule passes a row at 1.5 × nominal, 3.75 %, at most
20 % of the time). Known β_co per scenario (``truth``):

- ``no_coupling``, ``offset_confound`` (a shared per-seed constant: nothing co-moves) and
  ``progress_warp`` (a per-seed speed; the view removes the warp's smooth direction): 0 in both
  views;
- ``norm_only`` (the feature follows the norm): 0 beyond the norm; the plain view's is not 0;
- ``level_b<β>`` (the stated model) and ``innovation_b<b>``: ``persistent.implied``, the
  correlation of the seeds' step-to-step moves (population, at the study's spacing).
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.calibration.pass_rule import (
    CONFIRM_FACTOR,
    pass_max,
    redraw_max,
)
from topotrain.analysis.inference.parallel import map_tasks
from topotrain.analysis.inference.primary import SESOI_CO, VIEWS, claim_views
from topotrain.analysis.inference.seed_contrast import SCALE, STEPS
from topotrain.analysis.inference.stats import ALPHA

CONDITIONS = VIEWS["comove"][1]  # co_clock: seed_comove; co_scale: partial on the norm
NOMINAL = ALPHA / 2  # an interval end's nominal miss rate
COLUMNS = ["effect", "ci_low", "ci_high"]


def truth(scenario: str, s: pe.Setting) -> dict[str, float]:
    """co_clock / co_scale → the β_co the process fixes under ``scenario`` (absent: not fixed)."""
    kind, b = pe.coupling(scenario)
    if kind in ("no_coupling", "offset_confound", "progress_warp", "kink_warp"):
        return {"co_clock": 0.0, "co_scale": 0.0}
    if kind == "norm_only":
        return {"co_scale": 0.0}
    if kind in ("level", "innovation"):
        implied = pe.implied(kind, b, s)
        return {"co_clock": implied["seed_comove"], "co_scale": implied["seed_comove_l2"]}
    raise ValueError(f"scenario {scenario!r}: no known β_co (offset coupling has none to find)")


def study_intervals(
    x: np.ndarray, y: np.ndarray, norm: np.ndarray, perms: np.ndarray, steps=None
) -> list:
    """One study's [effect, low, high] per condition (CONDITIONS order), arrays (models, seeds,
    checkpoints); ``steps``: each checkpoint's step (the co-movement's horizon H spans them)."""
    at = {} if steps is None else {STEPS: np.asarray(steps, float)}
    mats = [{"x": a, "y": b, SCALE: c} | at for a, b, c in zip(x, y, norm, strict=True)]
    res = claim_views(mats, [perms] * len(mats), [1.0] * len(mats), "x", "y", views=CONDITIONS)
    return [
        [res[f"effect_{c}"], res[f"effect_{c}_ci_low"], res[f"effect_{c}_ci_high"]]
        for c in CONDITIONS
    ]


def _chunk(task: tuple) -> np.ndarray:
    x, y, norm, perms, _, steps = task
    return np.array([study_intervals(x[i], y[i], norm[i], perms, steps) for i in range(len(x))])


def intervals(sim: dict[str, np.ndarray], threads: int = 1) -> np.ndarray:
    """(n_sim, conditions, 3): each study's effect and interval ends, over ``threads`` processes."""
    return np.concatenate(map_tasks(_chunk, pe.study_tasks(sim, threads), threads))


def miss_rows(scenario: str, s: pe.Setting, draws: int, threads: int = 1, seed=0) -> list[dict]:
    """Per condition with a known β_co and per end: misses over ``draws`` studies (the row's own
    generator: ``row_rng`` of 'interval|' + ``row_name``), the pass rule's verdict at α/2, the
    mean estimate, and the seconds the row took."""
    start = time.perf_counter()
    known = truth(scenario, s)
    rng = pe.row_rng("interval|" + pe.row_name(scenario, s), seed)
    got = intervals(pe.simulate(scenario, s, rng, draws), threads)
    head = {"scenario": scenario, "seeds": s.seeds, "checkpoints": s.checkpoints}
    head |= {"white": s.white, "draws": draws}
    rows = []
    for j, cond in enumerate(CONDITIONS):
        if cond not in known:
            continue
        est, low, high = got[:, j, 0], got[:, j, 1], got[:, j, 2]
        ok = np.isfinite(low) & np.isfinite(high)
        for end, miss in (("lower end above β_co", low > known[cond]),
                          ("upper end below β_co", high < known[cond])):  # fmt: skip
            hits, n = int(np.count_nonzero(miss & ok)), int(ok.sum())
            rows.append(
                head
                | {"view": cond, "beta_co": known[cond], "end": end, "defined": n}
                | {"misses": hits, "rate": hits / n if n else np.nan, "nominal": NOMINAL}
                | {"pass_max": pass_max(n, NOMINAL) if n else 0}
                | {"passes": bool(n) and hits <= pass_max(n, NOMINAL)}
                | {
                    "mean_effect": float(np.nanmean(est)),
                    "mean_width": float(np.nanmean(high - low)),
                }
            )
    return [r | {"seconds": time.perf_counter() - start} for r in rows]


def pooled(first: list[dict], again: list[dict]) -> list[dict]:
    """``miss_rows`` of one row drawn twice (the second, CONFIRM_FACTOR × the draws, with another
    seed), decided on all its draws pooled at the suite's family level (``pass_rule``: k₁ + k₂ ≤
    c_F(n₁ + n₂, α/2), ``redraw_max``)."""
    out = []
    for a, b in zip(first, again, strict=True):
        hits, n = a["misses"] + b["misses"], a["defined"] + b["defined"]
        row = a | {"draws": a["draws"] + b["draws"], "defined": n, "misses": hits}
        row |= {"rate": hits / n if n else np.nan, "pass_max": redraw_max(n, NOMINAL) if n else 0}
        row |= {"passes": bool(n) and hits <= redraw_max(n, NOMINAL), "redrawn": True}
        weights = (a["draws"], b["draws"])
        row |= {c: np.average([a[c], b[c]], weights=weights) for c in ("mean_effect", "mean_width")}
        out.append(row | {"seconds": a["seconds"] + b["seconds"]})
    return out


def interval_table(
    draws: int, threads: int = 1, seeds=(3, 5, 8), white: float = 0.1, sesoi_co=SESOI_CO
) -> pd.DataFrame:
    """``miss_rows`` of every null and of the stated model and innovation coupling planted at
    β_co = Δ_co (partial co-movement view), at ``seeds`` seeds, 51 checkpoints, white share w; a
    scenario with a failing row is drawn again (seed 1, CONFIRM_FACTOR × the draws) and decided
    on its pooled draws (``pooled``)."""
    rows = []
    for k in seeds:
        s = pe.Setting(k, white=white)
        level = pe.planted("level", sesoi_co, pe.VIEWS[3], s)
        innovation = pe.planted("innovation", sesoi_co, pe.VIEWS[3], s)
        signals = (f"level_b{level:.6g}", f"innovation_b{innovation:.6g}")
        for scenario in itertools.chain(pe.NULLS, signals):
            found = miss_rows(scenario, s, draws, threads)
            if not all(r["passes"] for r in found):
                again = miss_rows(scenario, s, CONFIRM_FACTOR * draws, threads, seed=1)
                found = pooled(found, again)
            rows += [{"redrawn": False} | r for r in found]
    return pd.DataFrame(rows)
