"""Scores of the final-loss predictors per (fraction, method).

MAE, Wilcoxon against loss-only, Spearman of predicted vs actual final loss across model sizes,
and whether topology beats its placebos.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from topotrain.analysis.predict import METHODS, PLACEBOS, TOPOLOGY_METHODS
from topotrain.analysis.scaling import spearman_exact

P_LEVEL = 0.05  # significance level used for the Wilcoxon note
REFERENCE = "loss_only"


def wilcoxon_vs_reference(err: np.ndarray, ref: np.ndarray) -> tuple[float, float, int, str]:
    """Paired two-sided Wilcoxon signed-rank of err vs ref: (statistic, p, n non-zero, note).

    Rule: with n non-zero differences the smallest exact two-sided p is 2^(1−n); if that is
    ≥ P_LEVEL (n < 6 for 0.05) the note says the test cannot reach p < P_LEVEL.
    """
    n = int(np.count_nonzero(err - ref))
    if n == 0:
        return float("nan"), float("nan"), 0, "all paired differences are zero"
    try:
        res = wilcoxon(err, ref)
    except ValueError as exc:
        return float("nan"), float("nan"), n, f"wilcoxon failed: {exc}"
    note, p_min = "", 2.0 ** (1 - n)
    if p_min >= P_LEVEL:
        note = f"with n={n} paired runs the smallest two-sided p is {p_min:.4g}: "
        note += f"cannot reach p<{P_LEVEL}"
    return float(res.statistic), float(res.pvalue), n, note


def spearman_across_sizes(rows: pd.DataFrame) -> dict[str, float | int]:
    """Spearman ρ of predicted vs actual final loss over models (means over seeds, finite rows).

    p is the exact permutation p (scaling.spearman_exact); NaN below 3 models or for constant values.
    """
    finite = rows[np.isfinite(rows["predicted"].to_numpy(float))]
    per_model = finite.groupby("model")[["predicted", "actual"]].mean()
    rho, p = spearman_exact(per_model["predicted"], per_model["actual"])
    return {"spearman_rho": rho, "spearman_p_exact": p, "spearman_n": len(per_model)}


def beats_placebos(mae: pd.Series, method: str) -> bool:
    """MAE of ``method`` strictly below each of its placebos' and loss-only's (all finite)."""
    rivals = [f"{method}[{p}]" for p in PLACEBOS] + [REFERENCE]
    values = [mae.get(m, np.nan) for m in [method, *rivals]]
    if not np.all(np.isfinite(values)):
        return False
    return bool(all(values[0] < v for v in values[1:]))


def flag_beats_placebos(summary: pd.DataFrame) -> pd.DataFrame:
    """Add ``beats_placebos`` for topology_only and combined per fraction (NaN for other methods).

    True only if the method's MAE is lower than both placebos' and loss-only's at that fraction;
    False also when any of those MAEs is missing.
    """
    flags = pd.Series(np.nan, index=summary.index, dtype=object)
    for _, group in summary.groupby("fraction", sort=False):
        mae = group.set_index("method")["mae"]
        for idx, method in group["method"].items():
            if method in TOPOLOGY_METHODS:
                flags[idx] = beats_placebos(mae, method)
    return summary.assign(beats_placebos=flags)


def _method_row(errors: pd.DataFrame, method: str, group: pd.DataFrame) -> dict:
    """mae, n, improvement over loss-only, Wilcoxon vs loss-only and Spearman across sizes."""
    ref = errors[REFERENCE] if REFERENCE in errors else pd.Series(dtype=float)
    mae_ref, err = float(ref.mean()), errors[method]
    mae = float(err.mean())
    row = {"method": method, "mae": mae, "n": int(err.notna().sum())}
    row["improvement_pct"] = 100 * (mae_ref - mae) / mae_ref if mae_ref > 0 else np.nan
    stat, p, n_pairs, note = np.nan, np.nan, 0, "reference method"
    if method != REFERENCE:
        both = err.notna() & ref.notna()
        stat, p, n_pairs, note = wilcoxon_vs_reference(
            err[both].to_numpy(float), ref[both].to_numpy(float)
        )
    row |= {"wilcoxon_stat": stat, "wilcoxon_p": p, "wilcoxon_n": n_pairs, "wilcoxon_note": note}
    return row | spearman_across_sizes(group[group["method"] == method])


def prediction_summary(pred: pd.DataFrame) -> pd.DataFrame:
    """Per (fraction, method): mae, n, improvement_pct = 100·(MAE_loss − MAE)/MAE_loss, Wilcoxon.

    Then spearman_rho / spearman_p_exact / spearman_n across model sizes, and beats_placebos.
    Each MAE is over the method's finite errors; the Wilcoxon test (wilcoxon_vs_reference) pairs
    each method's per-run |error| with loss_only's on the runs where both are finite. Methods in
    METHODS order, then any others by name.
    """
    rows = []
    for fraction, group in pred.groupby("fraction", sort=True):
        errors = group.set_index(["model", "seed", "method"])["abs_error"].unstack("method")
        extra = sorted(set(errors) - set(METHODS))
        for method in [m for m in METHODS if m in errors] + extra:
            rows.append({"fraction": fraction, **_method_row(errors, method, group)})
    return flag_vectors_help(flag_beats_placebos(pd.DataFrame(rows)))


def flag_vectors_help(summary: pd.DataFrame) -> pd.DataFrame:
    """``vectors_help`` on the learned[+vectors] rows: its MAE strictly below plain learned's and
    both placebos' (learned[+step], learned[+scale]) at that fraction; NaN on other rows."""
    flags = pd.Series(np.nan, index=summary.index, dtype=object)
    rivals = ["learned", "learned[+step]", "learned[+scale]"]
    for _, group in summary.groupby("fraction", sort=False):
        mae = group.set_index("method")["mae"]
        for idx, method in group["method"].items():
            if method == "learned[+vectors]":
                values = [mae.get(m, np.nan) for m in [method, *rivals]]
                ok = np.all(np.isfinite(values))
                flags[idx] = bool(ok and all(values[0] < v for v in values[1:]))
    return summary.assign(vectors_help=flags)
