"""Topological velocity against the loss's: does the distance between consecutive checkpoints'
diagrams track how much the loss moved, better than the clock and the weights' scale do?

Per run, over checkpoints 1 … n (checkpoint i carries the change from i − 1 to i): Spearman ρ of
each ``*_step`` distance (``topology.series``) with |Δ validation loss|, beside two baselines: the
step itself (late intervals move the loss less, whatever the topology does) and |Δ l2_norm_mean|
(how far the weights' scale moved). A distance "beats the clock" in a run when its |ρ| exceeds the
step's. p is the circular-shift p of the associations (``associations.shift_pvalue`` on the ranks:
|Δ loss| rotated against the series by every shift), which keeps each series' autocorrelation
instead of treating consecutive intervals as independent draws.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from topotrain.analysis.inference.associations import shift_pvalue
from topotrain.analysis.inference.stats import ROW_START
from topotrain.config import ALPHA

DISTANCES = ["h0_w1_step", "h1_w1_step", "h0_bottleneck_step", "h1_bottleneck_step"]
BASELINES = ["step", "l2_norm_step"]
VELOCITY_COLUMNS = [*ROW_START, "n", "clock_rho", "beats_clock"]
MIN_POINTS = 4


def run_velocity(run: pd.DataFrame) -> list[dict]:
    """Rows (VELOCITY_COLUMNS) of one run's table, sorted by step inside."""
    run = run.sort_values("step")
    target = run["val_loss"].diff().abs().to_numpy()[1:]
    series = {"step": run["step"].to_numpy(dtype=float)[1:]}
    if "l2_norm_mean" in run:
        series["l2_norm_step"] = run["l2_norm_mean"].diff().abs().to_numpy()[1:]
    series |= {c: run[c].to_numpy(dtype=float)[1:] for c in DISTANCES if c in run}
    rows = []
    for feature, values in series.items():
        ok = np.isfinite(values) & np.isfinite(target)
        n = int(ok.sum())
        constant = n and (np.ptp(values[ok]) == 0 or np.ptp(target[ok]) == 0)
        if n < MIN_POINTS or constant:
            rho, p = np.nan, np.nan
        else:
            rho = float(stats.spearmanr(values[ok], target[ok])[0])
            p = shift_pvalue(stats.rankdata(values[ok]), stats.rankdata(target[ok]))
        kind = "baseline" if feature in BASELINES else "topology"
        rows.append({"feature": feature, "kind": kind, "rho": rho, "p": p, "n": n})
    clock = next(r["rho"] for r in rows if r["feature"] == "step")
    for r in rows:
        r["clock_rho"] = clock
        r["beats_clock"] = bool(abs(r["rho"]) > abs(clock)) if np.isfinite(r["rho"]) else False
    return rows


def velocity_table(features: pd.DataFrame) -> pd.DataFrame:
    """run_velocity for every (model, seed) of the feature table."""
    if missing := sorted({"model", "seed", "step", "val_loss"} - set(features.columns)):
        raise ValueError(f"velocity: the feature table lacks {missing}")
    rows = []
    for (model, seed), run in features.groupby(["model", "seed"], sort=False):
        n_params = int(run["n_params"].iloc[0]) if "n_params" in run else None
        rows += [
            {"model": model, "seed": int(seed), "n_params": n_params, **r}
            for r in run_velocity(run)
        ]
    out = pd.DataFrame(rows, columns=VELOCITY_COLUMNS)
    return out.sort_values(["n_params", "model", "seed"], kind="stable").reset_index(drop=True)


def velocity_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per model and feature, over seeds: mean ρ, seeds with p < 0.05, seeds beating the clock."""
    g = table.groupby(["model", "n_params", "feature", "kind"], sort=False)
    out = g.agg(
        seeds=("seed", "size"),
        mean_rho=("rho", "mean"),
        n_p05=("p", lambda p: int((p < ALPHA).sum())),
        beats_clock=("beats_clock", "sum"),
    ).reset_index()
    return out.sort_values(["n_params", "kind", "feature"], kind="stable").reset_index(drop=True)
