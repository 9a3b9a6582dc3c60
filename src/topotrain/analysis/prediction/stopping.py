"""Causal stopping rules on each run's checkpoints: when each would stop, the compute it saves and
the final loss it gives up, and which rules are on the Pareto front across runs and seeds.

Every rule is causal: its decision at checkpoint k reads the series at checkpoints 0 … k only
(``phases.phase_transitions`` finds the peak |Δ| over the whole run: hindsight). A rule that never
fires runs to the end (``stopped`` False: nothing saved, no penalty). Rules:

- ``topology[f]``: diminishing returns of feature f (``np_mean`` is NP, ``h0_total`` TP0). With
  Δ_i = f_i − f_{i−1} and the running peak P_k = max_{i ≤ k} |Δ_i|, stop at the first k at which
  |Δ_j| < threshold · P_j held for the last ``patience`` intervals j ≤ k, all after the peak's;
- ``plateau[x, p]``: the monitored loss improved by less than x (relative, (L_{i−1} − L_i) /
  |L_{i−1}|) over each of the last p intervals;
- ``fraction[q]``: the first checkpoint at or after q of the run's steps (a fixed budget).

Per run and rule: the stopping step, ``compute_saved`` = 1 − stop / final step, and the penalty =
validation loss at the stop − at the final checkpoint (negative where stopping early was better).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
import pandas as pd

from topotrain.config import DEFAULTS as DEFAULTS_CONFIG

STOPPING_COLUMNS = [
    "model",
    "seed",
    "n_params",
    "rule",
    "family",
    "stopped",
    "stop_step",
    "final_step",
    "compute_saved",
    "loss_at_stop",
    "final_loss",
    "penalty",
    "rel_penalty",
    "mean_compute_saved",
    "mean_penalty",
    "pareto_rank",
]
DEFAULTS = DEFAULTS_CONFIG["analysis"]["stopping"]  # the schema's (analysis.stopping)


def _check(steps, values) -> tuple[np.ndarray, np.ndarray]:
    steps, values = np.asarray(steps), np.asarray(values, dtype=float)
    if steps.shape != values.shape or steps.ndim != 1:
        raise ValueError(
            f"steps and values must be 1-D of one length, got {steps.shape}, {values.shape}"
        )
    if steps.size and np.any(np.diff(steps) <= 0):
        raise ValueError("steps must be strictly increasing")
    return steps, values


def plateau_stop(steps, loss, threshold: float, patience: int) -> int | None:
    """Index of the first checkpoint k whose last ``patience`` intervals each improved the loss by
    less than ``threshold`` (relative); None if that never happens. A non-finite loss counts as
    no improvement."""
    if patience < 1 or threshold < 0:
        raise ValueError(f"need patience >= 1 and threshold >= 0, got {patience}, {threshold}")
    _, loss = _check(steps, loss)
    run = 0
    for k in range(1, loss.size):
        prev = loss[k - 1]
        gain = (prev - loss[k]) / abs(prev) if prev != 0 else 0.0
        run = run + 1 if not np.isfinite(gain) or gain < threshold else 0
        if run >= patience:
            return k
    return None


def topology_stop(steps, values, threshold: float, patience: int) -> int | None:
    """Index of the first checkpoint k at which |Δ_j| < threshold · (running peak of |Δ| up to j)
    held for the last ``patience`` intervals j ≤ k, all after the interval of that peak; None if
    never. A constant series (no Δ ≠ 0 yet) does not fire."""
    if patience < 1 or not 0 < threshold <= 1:
        raise ValueError(f"need patience >= 1 and 0 < threshold <= 1, got {patience}, {threshold}")
    _, values = _check(steps, values)
    peak, run = 0.0, 0
    for k in range(1, values.size):
        delta = abs(values[k] - values[k - 1])
        if not np.isfinite(delta):
            run = 0
            continue
        if delta > peak:
            peak, run = delta, 0  # a new peak restarts the count
            continue
        run = run + 1 if peak > 0 and delta < threshold * peak else 0
        if run >= patience:
            return k
    return None


def fraction_stop(steps, fraction: float) -> int | None:
    """Index of the first checkpoint at or after ``fraction`` of the last step
    (0 < fraction ≤ 1)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    steps, _ = _check(steps, np.zeros(len(steps)))
    return int(np.flatnonzero(steps >= fraction * steps[-1])[0])


def rules(params: dict) -> dict[str, tuple[str, str, Callable]]:
    """name → (family, the column it watches, function(steps, values) → stop index or None)."""
    p = {**DEFAULTS, **params}
    out = {}
    for f in p["topology_features"]:
        check = partial(
            topology_stop, threshold=p["topology_threshold"], patience=p["topology_patience"]
        )
        out[f"topology[{f}]"] = ("topology", f, check)
    for x in p["plateau_thresholds"]:
        for n in p["plateau_patience"]:
            check = partial(plateau_stop, threshold=x, patience=n)
            out[f"plateau[{x:g},{n}]"] = ("loss plateau", p["monitor"], check)
    for q in p["fractions"]:
        out[f"fraction[{q:g}]"] = ("fixed fraction", "step", partial(_fraction, fraction=q))
    return out


def _fraction(steps, values, fraction: float) -> int:
    return fraction_stop(steps, fraction)


def pareto_ranks(saved: Sequence[float], penalty: Sequence[float]) -> list[int]:
    """Non-dominated sorting: rank 1 for points no other point beats (more saved and no more
    penalty, or less penalty and no less saved), rank 2 once those are removed, and so on."""
    saved, penalty = np.asarray(saved, float), np.asarray(penalty, float)
    ranks = np.zeros(saved.size, dtype=int)
    left, rank = set(range(saved.size)), 1
    while left:
        front = {
            i
            for i in left
            if not any(
                saved[j] >= saved[i]
                and penalty[j] <= penalty[i]
                and (saved[j] > saved[i] or penalty[j] < penalty[i])
                for j in left
            )
        }
        for i in front:
            ranks[i] = rank
        left -= front
        rank += 1
    return ranks.tolist()


def stopping_table(features: pd.DataFrame, params: dict | None = None) -> pd.DataFrame:
    """One row per run (model, seed) and rule (STOPPING_COLUMNS), with each rule's mean saving and
    penalty over all runs and its Pareto rank among the rules."""
    p = {**DEFAULTS, **(params or {})}
    needed = {"model", "seed", "step", "val_loss", p["monitor"], *p["topology_features"]}
    if missing := sorted(needed - set(features.columns)):
        raise ValueError(f"stopping rules: the feature table lacks {missing}")
    table = rules(p)
    rows = []
    for (model, seed), run in features.groupby(["model", "seed"], sort=True):
        run = run.sort_values("step").reset_index(drop=True)
        final_step, final_loss = int(run["step"].iloc[-1]), float(run["val_loss"].iloc[-1])
        for name, (family, column, rule) in table.items():
            k = rule(run["step"].to_numpy(), run[column].to_numpy())
            stop = len(run) - 1 if k is None else k
            loss = float(run["val_loss"].iloc[stop])
            rows.append(
                {
                    "model": model,
                    "seed": int(seed),
                    "n_params": int(run["n_params"].iloc[0]) if "n_params" in run else None,
                    "rule": name,
                    "family": family,
                    "stopped": k is not None,
                    "stop_step": int(run["step"].iloc[stop]),
                    "final_step": final_step,
                    "compute_saved": 1 - int(run["step"].iloc[stop]) / final_step
                    if final_step
                    else 0.0,
                    "loss_at_stop": loss,
                    "final_loss": final_loss,
                    "penalty": loss - final_loss,
                    "rel_penalty": (loss - final_loss) / abs(final_loss) if final_loss else np.nan,
                }
            )
    out = pd.DataFrame(rows, columns=STOPPING_COLUMNS[:-3])
    if out.empty:
        return pd.DataFrame(columns=STOPPING_COLUMNS)
    means = out.groupby("rule", sort=False)[["compute_saved", "penalty"]].mean()
    means["pareto_rank"] = pareto_ranks(means["compute_saved"], means["penalty"])
    means.columns = ["mean_compute_saved", "mean_penalty", "pareto_rank"]
    return out.join(means, on="rule")[STOPPING_COLUMNS]


def stopping_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per rule: its means over runs, how many runs it stopped, and its Pareto rank; best first."""
    if table.empty:
        return pd.DataFrame(
            columns=[
                "rule",
                "family",
                "runs",
                "stopped",
                "mean_compute_saved",
                "mean_penalty",
                "max_penalty",
                "pareto_rank",
            ]
        )
    g = table.groupby(["rule", "family"], sort=False)
    out = g.agg(
        runs=("stopped", "size"),
        stopped=("stopped", "sum"),
        mean_compute_saved=("compute_saved", "mean"),
        mean_penalty=("penalty", "mean"),
        max_penalty=("penalty", "max"),
        pareto_rank=("pareto_rank", "first"),
    ).reset_index()
    return out.sort_values(["pareto_rank", "mean_penalty"], kind="stable").reset_index(drop=True)
