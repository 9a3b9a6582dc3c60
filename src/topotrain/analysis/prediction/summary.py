"""Scores of the final-loss predictors per (fraction, method).

MAE, paired tests against loss-only (Wilcoxon over runs, and a sign-flip test clustered by model,
since a model's seeds share one leave-one-model-out fit), Spearman of predicted vs actual final
loss across model sizes, and whether topology beats its rivals (RIVALS: loss-only, the averaging
control and both placebos), with the clustered test against the strongest of them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from topotrain.analysis.inference.stats import ALPHA, sign_flip_p, spearman_exact
from topotrain.analysis.prediction.predict import METHODS, PLACEBOS, TOPOLOGY_METHODS

REFERENCE = "loss_only"
CONTROLS = {"topology_only": "last_loss", "combined": "mean_loss_only_last"}  # same averaging
RIVALS = {  # what a topology method must beat (beats_placebos); its strongest is ``rival``
    m: (REFERENCE, CONTROLS[m], *(f"{m}[{p}]" for p in PLACEBOS)) for m in TOPOLOGY_METHODS
}
VECTOR_RIVALS = {"learned[+vectors]": ("learned", "learned[+step]", "learned[+scale]")}


def model_differences(errors: pd.DataFrame, method: str, other: str) -> np.ndarray:
    """d_m = mean over model m's seeds of |err_other| − |err_method| (> 0: method better).

    ``errors`` is indexed by (model, seed) with one column per method; runs where either is NaN
    are left out, and so are models with no such run.
    """
    both = errors[[method, other]].dropna()
    diff = both[other].abs() - both[method].abs()
    return diff.groupby(level="model").mean().to_numpy(float)


def model_paired_test(errors: pd.DataFrame, method: str, other: str) -> tuple[float, float]:
    """(sign_flip_p of model_differences, its smallest reachable value 1/2^M; NaN for M < 2)."""
    if method not in errors or other not in errors:
        return float("nan"), float("nan")
    d = model_differences(errors, method, other)
    return sign_flip_p(d), 2.0**-d.size if d.size >= 2 else float("nan")


def wilcoxon_vs_reference(err: np.ndarray, ref: np.ndarray) -> tuple[float, float, int, str]:
    """Paired two-sided Wilcoxon signed-rank of err vs ref: (statistic, p, n non-zero, note).

    Rule: with n non-zero differences the smallest exact two-sided p is 2^(1−n); if that is
    ≥ ALPHA (n < 6 for 0.05) the note says the test cannot reach p < ALPHA. Runs are treated
    as independent (the paper's test) though a model's seeds share a fit: see model_paired_test.
    """
    n = int(np.count_nonzero(err - ref))
    if n == 0:
        return float("nan"), float("nan"), 0, "all paired differences are zero"
    try:
        res = wilcoxon(err, ref)
    except ValueError as exc:
        return float("nan"), float("nan"), n, f"wilcoxon failed: {exc}"
    note, p_min = "", 2.0 ** (1 - n)
    if p_min >= ALPHA:
        note = f"with n={n} paired runs the smallest two-sided p is {p_min:.4g}: "
        note += f"cannot reach p<{ALPHA:g}"
    return float(res.statistic), float(res.pvalue), n, note


def spearman_across_sizes(rows: pd.DataFrame) -> dict[str, float | int]:
    """Spearman ρ of predicted vs actual final loss over models (means over seeds, finite rows).

    p is the exact permutation p (stats.spearman_exact);
    NaN below 3 models or for constant values.
    """
    finite = rows[np.isfinite(rows["predicted"].to_numpy(float))]
    per_model = finite.groupby("model")[["predicted", "actual"]].mean()
    rho, p = spearman_exact(per_model["predicted"], per_model["actual"])
    return {"spearman_rho": rho, "spearman_p_exact": p, "spearman_n": len(per_model)}


def below_all(mae: pd.Series, method: str, rivals: tuple[str, ...]) -> bool:
    """MAE of ``method`` strictly below each rival's (all finite; False if any is missing)."""
    values = [mae.get(m, np.nan) for m in [method, *rivals]]
    if not np.all(np.isfinite(values)):
        return False
    return bool(all(values[0] < v for v in values[1:]))


def beats_placebos(mae: pd.Series, method: str) -> bool:
    """below_all its RIVALS: for topology_only loss_only, last_loss and both topology_only
    placebos; for combined loss_only, mean_loss_only_last (the same averaging without topology)
    and both combined placebos."""
    return below_all(mae, method, RIVALS[method])


def flag_below(summary: pd.DataFrame, rivals: dict[str, tuple[str, ...]], column: str):
    """Add ``column``: below_all of each method in ``rivals`` against its rivals, per fraction
    (NaN on other methods)."""
    flags = pd.Series(np.nan, index=summary.index, dtype=object)
    for _, group in summary.groupby("fraction", sort=False):
        mae = group.set_index("method")["mae"]
        for idx, method in group["method"].items():
            if method in rivals:
                flags[idx] = below_all(mae, method, rivals[method])
    return summary.assign(**{column: flags})


def flag_beats_placebos(summary: pd.DataFrame) -> pd.DataFrame:
    """Add ``beats_placebos`` for topology_only and combined per fraction (NaN for other methods).

    True only if the method's MAE is lower than each of its RIVALS' at that fraction (see
    beats_placebos); False also when any of those MAEs is missing.
    """
    return flag_below(summary, RIVALS, "beats_placebos")


def _method_row(errors: pd.DataFrame, method: str, group: pd.DataFrame) -> dict:
    """mae, n, improvement over loss-only, paired tests vs loss-only, Spearman, rival test."""
    ref = errors[REFERENCE] if REFERENCE in errors else pd.Series(dtype=float)
    mae_ref, err = float(ref.mean()), errors[method]
    mae = float(err.mean())
    row = {"method": method, "mae": mae, "n": int(err.notna().sum())}
    made = group.loc[group["method"] == method, "fallback"] if "fallback" in group else None
    row["fallbacks"] = int(made.astype(str).eq("True").sum()) if made is not None else 0
    row["improvement_pct"] = 100 * (mae_ref - mae) / mae_ref if mae_ref > 0 else np.nan
    stat, p, n_pairs, note = np.nan, np.nan, 0, "reference method"
    p_model, p_min = np.nan, np.nan
    if method != REFERENCE:
        both = err.notna() & ref.notna()
        stat, p, n_pairs, note = wilcoxon_vs_reference(
            err[both].to_numpy(float), ref[both].to_numpy(float)
        )
        p_model, p_min = model_paired_test(errors, method, REFERENCE)
    row |= {"wilcoxon_stat": stat, "wilcoxon_p": p, "wilcoxon_n": n_pairs, "wilcoxon_note": note}
    row |= {"model_paired_p": p_model, "model_paired_p_min": p_min}
    return (
        row | spearman_across_sizes(group[group["method"] == method]) | rival_test(errors, method)
    )


def rival_test(errors: pd.DataFrame, method: str) -> dict:
    """rival: the RIVALS entry of ``method`` with the lowest finite MAE (first listed on a tie);
    rival_p: model_paired_test of the method against it. NaN for other methods or no rival."""
    maes = {r: float(errors[r].mean()) for r in RIVALS.get(method, ()) if r in errors}
    maes = {r: v for r, v in maes.items() if np.isfinite(v)}
    if method not in errors or not maes:
        return {"rival": np.nan, "rival_p": np.nan}
    rival = min(maes, key=maes.get)
    return {"rival": rival, "rival_p": model_paired_test(errors, method, rival)[0]}


def prediction_summary(pred: pd.DataFrame) -> pd.DataFrame:
    """Per (fraction, method): mae, n, fallbacks (the runs whose prediction a fallback rule made:
    the last loss), improvement_pct = 100·(MAE_loss − MAE)/MAE_loss, tests.

    Each MAE is over the method's finite errors. wilcoxon_*: wilcoxon_vs_reference of each run's
    |error| against loss_only's (runs where both are finite), treating runs as independent.
    model_paired_p: sign_flip_p of model_differences against loss_only, clustered by model as a
    model's seeds share a fit; model_paired_p_min = 1/2^M, its smallest reachable value (NaN on
    loss_only). Then spearman_rho / spearman_p_exact / spearman_n across model sizes; rival and
    rival_p (rival_test) and beats_placebos on the TOPOLOGY_METHODS rows; vectors_help. Methods
    in METHODS order, then any others by name.
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
    return flag_below(summary, VECTOR_RIVALS, "vectors_help")
