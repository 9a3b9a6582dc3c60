"""Phase transitions of training from a feature series: the largest jump, diminishing returns,
and ruptures changepoints.

Convention: Δ_i = v_i − v_{i−1} between consecutive checkpoints is attributed to the LATER step_i,
i.e. the checkpoint at which the change has happened.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topotrain.analysis.prediction.stopping import DEFAULTS, topology_stop
from topotrain.config import DEFAULTS as CONFIG_DEFAULTS

_ANALYSIS = CONFIG_DEFAULTS["analysis"]  # the schema's analysis: defaults

MIN_CHECKPOINTS = 3  # a peak Δ and at least one Δ after it
MIN_SEGMENT = 2  # checkpoints per ruptures segment


def sorted_finite(steps, values) -> tuple[np.ndarray, np.ndarray, int]:
    """(steps, values) sorted by step with non-finite values dropped, and how many were dropped."""
    steps, values = np.asarray(steps), np.asarray(values, float)
    keep = np.isfinite(values)
    order = np.argsort(steps[keep], kind="stable")
    return steps[keep][order], values[keep][order], int((~keep).sum())


def phase_transitions(
    steps, values, total_steps: int, threshold: float = _ANALYSIS["phase_threshold"]
) -> dict:
    """Peak |Δ| and the diminishing-returns step of a series sampled at checkpoints.

    Δ_i = v_i − v_{i−1} is attributed to step_i. Peak: the step with max |Δ| (first on ties).
    Diminishing returns: the first step after the peak with |Δ| < threshold·|Δ_peak|.
    Steps are ints (None when undefined); fractions are step / total_steps (NaN when undefined).
    """
    steps, values, dropped = sorted_finite(steps, values)
    out = {
        "peak_step": None,
        "peak_frac": np.nan,
        "peak_delta": np.nan,
        "diminishing_step": None,
        "diminishing_frac": np.nan,
        "note": "",
    }
    notes = [f"{dropped} non-finite values dropped"] if dropped else []
    if steps.size < MIN_CHECKPOINTS:
        notes.append(f"{steps.size} checkpoints: need at least {MIN_CHECKPOINTS}")
        return {**out, "note": "; ".join(notes)}
    delta = np.diff(values)
    i = int(np.argmax(np.abs(delta)))
    if delta[i] == 0:
        return {**out, "note": "; ".join([*notes, "constant series: no transition"])}
    out.update(
        peak_step=int(steps[i + 1]),
        peak_frac=steps[i + 1] / total_steps,
        peak_delta=float(delta[i]),
    )
    later = np.flatnonzero(np.abs(delta[i + 1 :]) < threshold * abs(delta[i]))
    if later.size == 0:
        notes.append(f"|Δ| never fell below {threshold:g}·|peak Δ| after the peak")
    else:
        j = i + 1 + int(later[0]) + 1  # index into steps of the later checkpoint of that Δ
        out.update(diminishing_step=int(steps[j]), diminishing_frac=steps[j] / total_steps)
    return {**out, "note": "; ".join(notes)}


def _detector(n_bkps: int | None, penalty: float | None, model: str, signal: np.ndarray):
    """A fitted ruptures detector: Pelt for a penalty, exact Dynp for a number of breakpoints."""
    import ruptures as rpt

    if (n_bkps is None) == (penalty is None):
        raise ValueError("give exactly one of n_bkps (Dynp) or penalty (Pelt)")
    algo = rpt.Pelt if penalty is not None else rpt.Dynp
    return algo(model=model, min_size=MIN_SEGMENT, jump=1).fit(signal)


def changepoints(
    steps, values, n_bkps: int | None = None, penalty: float | None = None, model: str = "l2"
) -> list[int]:
    """Steps at which new segments begin, by ruptures on the standardised series (v − mean)/sd.

    With n_bkps: exact segmentation (Dynp) into n_bkps + 1 segments, capped at what the series
    length allows (n // MIN_SEGMENT − 1); with penalty: Pelt. Constant or too-short series → [].
    ``model`` is the ruptures cost ('l2' for mean shifts, 'rbf' for distribution changes).
    """
    steps, values, _ = sorted_finite(steps, values)
    if n_bkps is not None:
        n_bkps = min(n_bkps, steps.size // MIN_SEGMENT - 1)
        if n_bkps < 1:
            return []
    if steps.size < 2 * MIN_SEGMENT or np.ptp(values) == 0:
        return []
    signal = ((values - values.mean()) / values.std()).reshape(-1, 1)
    algo = _detector(n_bkps, penalty, model, signal)
    ends = algo.predict(n_bkps=n_bkps) if penalty is None else algo.predict(pen=penalty)
    return [int(steps[k]) for k in ends[:-1]]  # ruptures returns segment ends; the last is n


def total_steps(run: pd.DataFrame) -> int:
    """The run's planned length: step/frac at checkpoints with frac > 0, else its last step."""
    if "frac" in run:
        ok = run["frac"] > 0
        if ok.any():
            return int(round(float((run.loc[ok, "step"] / run.loc[ok, "frac"]).median())))
    return int(run["step"].max())


def _changepoint_cell(run: pd.DataFrame, feature: str, n_bkps: int) -> tuple[str, str]:
    """Changepoints of one feature as 'step;step',
    and a note when fewer than n_bkps were possible."""
    found = changepoints(run["step"], run[feature], n_bkps=n_bkps)
    note = "" if len(found) == n_bkps else f"{feature}: {len(found)} of {n_bkps} changepoints"
    return ";".join(map(str, found)), note


def causal_step(steps, values, threshold: float, patience: int = DEFAULTS["topology_patience"]):
    """The step at which the TopologyCallback's causal rule fires on this series, or None."""
    steps, values, _ = sorted_finite(steps, values)
    if steps.size < 2:
        return None
    k = topology_stop(steps, values, threshold, patience)
    return None if k is None else int(steps[k])


def phase_table(
    df: pd.DataFrame,
    feature: str = "np_mean",
    threshold: float = _ANALYSIS["phase_threshold"],
    changepoint_feature: str = "h0_total",
    n_bkps: int = 2,
) -> pd.DataFrame:
    """One row per (model, seed): peak and diminishing-returns steps of ``feature``,
    and changepoints.

    Columns: model, seed, n_params, total_steps, checkpoint_frac (median checkpoint interval /
    total_steps: the resolution of every fraction), peak_step, peak_frac, peak_delta,
    diminishing_step, diminishing_frac, causal_step, changepoint_feature, changepoints (of
    changepoint_feature), changepoints_<feature>, note. Steps are nullable integers.

    Two rules, two names: ``diminishing_step`` is the hindsight rule above (it needs the run's
    largest Δ, known only at the end); ``causal_step`` is the TopologyCallback's rule
    (``stopping.topology_stop``: |Δ| below threshold × the running peak for ``patience``
    intervals), the step a live run would report.
    """
    rows = []
    for (model, seed), run in df.groupby(["model", "seed"], sort=False):
        total = total_steps(run)
        res = phase_transitions(run["step"], run[feature], total, threshold)
        res["causal_step"] = causal_step(run["step"], run[feature], threshold)
        cps, note_cp = _changepoint_cell(run, changepoint_feature, n_bkps)
        own, note_own = _changepoint_cell(run, feature, n_bkps)
        note = "; ".join(filter(None, [res.pop("note"), note_cp, note_own]))
        rows.append(
            {
                "model": model,
                "seed": seed,
                "n_params": int(run["n_params"].iloc[0]),
                "total_steps": total,
                "checkpoint_frac": float(np.median(np.diff(run["step"]))) / total,
                **res,
                "changepoint_feature": changepoint_feature,
                "changepoints": cps,
                f"changepoints_{feature}": own,
                "note": note,
            }
        )
    table = pd.DataFrame(rows).sort_values(["n_params", "model", "seed"], kind="stable")
    table = table.astype(
        {"peak_step": "Int64", "diminishing_step": "Int64", "causal_step": "Int64"}
    )
    return table.reset_index(drop=True)
