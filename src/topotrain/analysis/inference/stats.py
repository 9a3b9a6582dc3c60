"""How closely does a feature follow the loss within a run, and how do the seeds agree? Spearman
ρ with its bootstrap CI per run, corrected over the grid; ρ across seeds; each model's best feature.
(The exact tests and the corrections are ``exact_tests``', importable here too.)

Every correlation is over one run's checkpoints (one model, one seed). Degenerate inputs (a constant
feature, too few finite points) give NaN with a ``note`` saying why;
they are never dropped or raised.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from topotrain.analysis.inference.exact_tests import (  # noqa: F401 (re-exported: callers import them here)
    MAX_EXACT_SIGNS,
    benjamini_hochberg,
    bonferroni,
    counted_ranks,
    rank_pearson,
    sign_flip_p,
    spearman_exact,
    spearman_rows,
    value_codes,
)
from topotrain.baselines.weightwatcher import METRICS as WW_METRICS
from topotrain.config import ALPHA, CONFIDENCE, DEFAULTS
from topotrain.topology import registry

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults

FEATURES = registry.tested()  # the features the tests contrast, in order (topology.registry)
BASELINES = ["step", "lr", "l2_norm_mean", "grad_norm"]  # the clock, the schedule, the scale
# WeightWatcher's metrics, mean over layers (aggregate.ww_features; α's entry: topology.registry)
WW_FEATURES = [f"ww_{m}_mean" for m in WW_METRICS]
# the registry's checkpoint features of kind llc (baselines.llc), at the checkpoints it ran
LLC_FEATURES = [f.name for f in registry.entries("checkpoint") if f.kind == "llc"]


def gradient_features(df: pd.DataFrame) -> list[str]:
    """The gradient-topology versions (grad_<feature>) of the tested features the table holds."""
    return [f"grad_{f}" for f in registry.tested() if f"grad_{f}" in df]


CLOCK_AND_SCALE = ("step", "l2_norm_mean")  # baselines every topological ρ stands beside
# a run's row begins: whose run, which feature, its ρ with the loss (dynamics.velocity's too)
ROW_START = ["model", "seed", "n_params", "feature", "kind", "rho", "p"]
CORRELATION_COLUMNS = [
    *ROW_START,
    "ci_low",
    "ci_high",
    "n",
    "p_bonferroni",
    "p_bh",
    "significant",
    "note",
]


SIZE_NORMALISED = ("h0_mean_bar",)  # TP0 per bar: included when the table has it


def feature_kinds(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(feature, kind) pairs: the tested features (topology.registry), ``h0_mean_bar`` and the
    ``*_scalefree*`` columns but those that repeat another here (``registry.repeated``), the
    gradient's (``grad_*``), WeightWatcher's (``ww_*_mean``) and the LLC (``llc``), then
    BASELINES."""
    repeats = set(registry.repeated(df))
    extra = [
        c
        for c in df.columns
        if (c in SIZE_NORMALISED or registry.SCALEFREE in c) and c not in repeats
    ]
    extra += gradient_features(df)
    extra += [c for c in WW_FEATURES + LLC_FEATURES if c in df]
    return [(f, kind(f)) for f in [*registry.tested(), *extra, *BASELINES]]


MIN_RUN = 8  # checkpoints: fewer, and a run's ρ gets an exact permutation p and no interval
TOO_SHORT = "{n} checkpoints (fewer than 8): too short for a claim"


def _nan_result(n: int, note: str) -> dict[str, float | int | str]:
    return {"rho": np.nan, "p": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n": n, "note": note}


def _degenerate(x: np.ndarray, y: np.ndarray, dropped: int) -> str:
    """Why ρ is undefined for finite (x, y), or '' when it is defined."""
    if x.size < 3:
        return f"only {x.size} finite checkpoints ({dropped} non-finite dropped): ρ undefined"
    if np.ptp(x) == 0:
        return "constant feature: ρ undefined"
    if np.ptp(y) == 0:
        return "constant target: ρ undefined"
    return ""


def _too_short(x: np.ndarray, y: np.ndarray, notes: list[str]) -> dict[str, float | int | str]:
    """Below MIN_RUN checkpoints: the exact permutation ρ and p, no interval."""
    rho, p = spearman_exact(x, y)
    short = (
        TOO_SHORT.format(n=x.size) + f"; exact permutation p over all {x.size}! orders, no interval"
    )
    return {**_nan_result(int(x.size), "; ".join([*notes, short])), "rho": rho, "p": p}


def spearman_ci(
    x,
    y,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    confidence: float = CONFIDENCE,
    seed: int = _ANALYSIS["bootstrap_seed"],
) -> dict[str, float | int | str]:
    """Spearman ρ and p of (x, y) (scipy.stats.spearmanr) with a paired percentile bootstrap CI;
    below MIN_RUN checkpoints the exact permutation p and no CI (the note says too short).

    Pairs with a non-finite value are dropped (counted in ``note``). Resamples whose ρ is undefined
    (a constant resample) are left out of the percentiles and counted in ``note``.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    keep = np.isfinite(x) & np.isfinite(y)
    dropped = int((~keep).sum())
    x, y = x[keep], y[keep]
    why = _degenerate(x, y, dropped)
    if why:
        return _nan_result(int(x.size), why)
    notes = [f"{dropped} non-finite checkpoints dropped"] if dropped else []
    if x.size < MIN_RUN:
        return _too_short(x, y, notes)
    res = stats.spearmanr(x, y)
    (kx, cx), (ky, cy) = (value_codes(v) for v in (x, y))

    def resampled_rho(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        """Spearman ρ of resamples of (x, y) given as their codes: ranked by counting
        (``exact_tests.rank_pearson``), along the last axis (scipy's bootstrap moves the
        resampled axis there and passes axis=-1)."""
        return rank_pearson(counted_ranks(a, kx), counted_ranks(b, ky))

    with warnings.catch_warnings():  # NaN resamples are handled below, not by scipy's interval
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        boot = stats.bootstrap(  # resampling the codes draws the very indices the values would
            (cx, cy),
            resampled_rho,
            paired=True,
            vectorized=True,
            n_resamples=n_resamples,
            confidence_level=confidence,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    dist = boot.bootstrap_distribution.ravel()
    finite = dist[np.isfinite(dist)]
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(finite, [tail, 100 - tail]) if finite.size else (np.nan, np.nan)
    if finite.size < dist.size:
        notes.append(f"{dist.size - finite.size} of {dist.size} resamples had undefined ρ")
    return {
        "rho": float(res.statistic),
        "p": float(res.pvalue),
        "ci_low": float(low),
        "ci_high": float(high),
        "n": int(x.size),
        "note": "; ".join(notes),
    }


def kind(feature: str) -> str:
    """'baseline' for the clock, schedule and scale (BASELINES), 'weightwatcher' for
    WeightWatcher's metrics, a checkpoint feature's registered kind (topology.registry: 'llc' for
    the LLC), else 'topological'."""
    if feature in BASELINES:
        return "baseline"
    if feature in WW_FEATURES:
        return "weightwatcher"
    kinds = {f.name: f.kind for f in registry.entries("checkpoint")}
    return kinds.get(feature, "topological")


def correlation_table(
    df: pd.DataFrame,
    features: Sequence[str] = (*FEATURES, *BASELINES),
    target: str = "val_loss",
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """One row per (model, seed, feature): ρ with ``target`` over the run's checkpoints and its CI.

    p_bonferroni and p_bh correct over the whole (model, seed, feature) grid of finite p-values;
    significant = p_bh < alpha. Columns: CORRELATION_COLUMNS.
    """
    features = list(features)
    missing = [f for f in [*features, target] if f not in df]
    if missing:
        raise ValueError(f"feature table lacks columns {missing}")
    rows = []
    for (model, run_seed), run in df.sort_values("step").groupby(["model", "seed"], sort=False):
        for feature in features:
            res = spearman_ci(run[feature], run[target], n_resamples, seed=seed)
            rows.append(
                {
                    "model": model,
                    "seed": run_seed,
                    "n_params": int(run["n_params"].iloc[0]),
                    "feature": feature,
                    "kind": kind(feature),
                    **res,
                }
            )
    table = pd.DataFrame(rows)
    table["p_bonferroni"] = bonferroni(table["p"].to_numpy())
    table["p_bh"] = benjamini_hochberg(table["p"].to_numpy())
    table["significant"] = table["p_bh"] < alpha  # NaN compares False
    table = table.sort_values(["n_params", "model", "seed"], kind="stable")
    return table[CORRELATION_COLUMNS].reset_index(drop=True)


RHO_CLIP = 1 - 1e-12  # |ρ| = 1 has Fisher z = ±inf: clipped, so the interval collapses onto ±1


def seed_interval(rho: np.ndarray, confidence: float = CONFIDENCE) -> dict[str, float | int | str]:
    """Mean ρ over seeds and an interval on Fisher's z: z = artanh ρ, z̄ ± t_{n−1}·sd(z)/√n,
    mapped back with tanh, so it stays inside [−1, 1] (NaN and a note for n < 2)."""
    rho = rho[np.isfinite(rho)]
    out = {
        "n_seeds": int(rho.size),
        "rho_mean": float(rho.mean()) if rho.size else np.nan,
        "rho_sd": np.nan,
        "rho_low": np.nan,
        "rho_high": np.nan,
        "note": "",
    }
    if rho.size < 2:
        out["note"] = f"{rho.size} seed(s) with defined ρ: an interval across seeds needs two"
        return out
    z = np.arctanh(np.clip(rho, -RHO_CLIP, RHO_CLIP))
    sd = float(z.std(ddof=1))
    out["rho_sd"] = float(rho.std(ddof=1))
    if sd == 0:
        return {**out, "rho_low": float(np.tanh(z[0])), "rho_high": float(np.tanh(z[0]))}
    low, high = stats.t.interval(confidence, z.size - 1, loc=z.mean(), scale=sd / np.sqrt(z.size))
    return {**out, "rho_low": float(np.tanh(low)), "rho_high": float(np.tanh(high))}


def seed_agreement(rho: np.ndarray, p_bh: np.ndarray, alpha: float = ALPHA) -> dict[str, int]:
    """How many seeds have the sign of the mean ρ, and how many of those are significant
    (p_bh < α)."""
    ok = np.isfinite(rho)
    sign = np.sign(rho[ok].mean()) if ok.any() else 0.0
    same = ok & (np.sign(rho) == sign) & (sign != 0)
    return {"n_same_sign": int(same.sum()), "n_significant": int((same & (p_bh < alpha)).sum())}


def across_seeds(corr: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per (model, feature): n_seeds, rho_mean, rho_sd, a Fisher-z interval across seeds
    (rho_low, rho_high), and the seeds agreeing in sign and in significance with the mean."""
    rows = [
        {
            "model": model,
            "n_params": int(g["n_params"].iloc[0]),
            "feature": feature,
            "kind": kind(feature),
            **seed_interval(g["rho"].to_numpy(float), confidence),
            **seed_agreement(g["rho"].to_numpy(float), g["p_bh"].to_numpy(float)),
        }
        for (model, feature), g in corr.groupby(["model", "feature"], sort=False)
    ]
    return pd.DataFrame(rows)


def _top(mean: pd.DataFrame) -> pd.DataFrame:
    """Per model, the row with the largest |ρ| (ties: the earlier feature in the table's order)."""
    ranked = mean.assign(abs_rho=mean["rho"].abs()).dropna(subset=["abs_rho"])
    ranked = ranked.sort_values("abs_rho", ascending=False, kind="stable")
    return ranked.drop_duplicates("model").set_index("model")


def _ties(mean: pd.DataFrame, top: pd.Series, chosen: pd.Series, tol: float = 1e-9) -> pd.Series:
    """Per model, the other features whose |ρ| equals the top |ρ| within ``tol``, as 'a;b'."""
    gap = (mean["rho"].abs() - mean["model"].map(top)).abs()
    tied = mean[(gap <= tol) & (mean["feature"] != mean["model"].map(chosen))]
    return tied.groupby("model")["feature"].agg(";".join).reindex(top.index, fill_value="")


def best_feature(corr: pd.DataFrame) -> pd.DataFrame:
    """Per model: the feature whose ρ with loss (mean over seeds) has the largest |ρ|, with its CI.

    ci_low/ci_high and p_bh are the seed means (the run's own values when there is one seed).
    tied_with lists features with the same |ρ| (ties go to the earlier feature, topological first);
    best_topological/best_baseline name the best of each kind, to compare the two.
    """
    cols = ["rho", "ci_low", "ci_high", "p_bh"]
    keys = ["model", "n_params", "feature", "kind"]
    mean = corr.groupby(keys, as_index=False, sort=False).agg(
        n_seeds=("rho", "count"), **{c: (c, "mean") for c in cols}
    )
    best = _top(mean)
    best["tied_with"] = _ties(mean, best["rho"].abs(), best["feature"])
    for k in ("topological", "baseline"):
        top = _top(mean[mean["kind"] == k])
        best[f"best_{k}"] = top["feature"]
        best[f"best_{k}_rho"] = top["rho"]
    models = corr.drop_duplicates("model").set_index("model")["n_params"]
    best = best.reindex(models.index).assign(n_params=models)  # models with no defined ρ stay, NaN
    best = best.reset_index().sort_values("n_params", kind="stable")
    order = [
        "model",
        "n_params",
        "feature",
        "kind",
        "n_seeds",
        *cols,
        "tied_with",
        "best_topological",
    ]
    order += ["best_topological_rho", "best_baseline", "best_baseline_rho"]
    for clock in CLOCK_AND_SCALE:  # every model's ρ beside those of the clock and the scale
        best[f"{clock}_rho"] = best["model"].map(
            mean[mean["feature"] == clock].set_index("model")["rho"]
        )
        order.append(f"{clock}_rho")
    return best[order].reset_index(drop=True)
