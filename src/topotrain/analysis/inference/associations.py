"""Associations of features with loss that see past the shared clock of training.

Loss and every weight feature trend with training time, so Spearman ρ of levels over one run's
checkpoints is near ±1 for any monotone series, the step number included. Per run (model, seed),
feature and target (train or validation loss), four views:

- ``raw``: ρ of levels, with the paper's iid bootstrap CI and the asymptotic p;
- ``detrended``: ρ of first differences Δx_t = x_t − x_{t−1} between consecutive checkpoints;
- ``partial_step`` / ``partial_l2``: partial Spearman ρ(x, y | z) = Pearson r of the residuals of
  rank(x) and rank(y), each regressed with an intercept on rank(z), for z = step or l2_norm_mean.

The time-aware views (all but raw) get a stationary block-bootstrap CI (arch) whose block length is
the larger Politis–White estimate of the view's two stationary series (differences, or rank
residuals), clamped to [1, n/2]; the percentile CI is left NaN when more than 1 − confidence of
the resamples have undefined ρ. Their p comes from the circular-shift null on that same pair: the
second series is rotated against the first by each of the m − 1 non-trivial shifts, and
p = (1 + #{k ≠ 0: |r_k| ≥ |r_0|}) / m (the identity counted once), so the smallest p is 1/m.
Degenerate cells (a constant series, a feature that is the conditioning variable or a monotone
function of it) give NaN with a ``note``; they are never dropped or raised.
"""

from __future__ import annotations

import hashlib
import logging
import warnings
from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd
from arch.bootstrap import StationaryBootstrap, optimal_block_length
from scipy import stats

from topotrain.analysis.inference.parallel import map_tasks
from topotrain.analysis.inference.rank_stats import (
    partial_spearman,
    pearson_rows,
    rank_residuals,
)
from topotrain.analysis.inference.seed_contrast import (
    CONTRAST_VIEWS,
    POOLED,
    contrast_table,
    model_inputs,
)
from topotrain.analysis.inference.seed_effect import effect_table
from topotrain.analysis.inference.stats import (
    ALPHA,
    MIN_RUN,
    TOO_SHORT,
    benjamini_hochberg,
    feature_kinds,
    kind,
    spearman_ci,
    spearman_rows,
)
from topotrain.config import CONFIDENCE, DEFAULTS, LOSSES

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults

log = logging.getLogger(__name__)

TARGETS = list(LOSSES)
RUN_VIEWS = ["raw", "detrended", "partial_step", "partial_l2"]  # one run's checkpoints
VIEWS = [*RUN_VIEWS, *CONTRAST_VIEWS]  # then between seeds of a model (seed_contrast)
CLOCK_VIEWS = {"beats_clock": "seed_contrast", "beats_scale": "seed_contrast_l2"}
CONDITION = {"partial_step": "step", "partial_l2": "l2_norm_mean"}  # view -> conditioning variable
BLOCK = "stationary block bootstrap (arch; Politis–White block length)"
CI_METHOD = {"raw": "iid bootstrap (paper's method, not valid for trending series)"}
CI_METHOD |= dict.fromkeys(RUN_VIEWS[1:], BLOCK)
CI_METHOD |= dict.fromkeys(CONTRAST_VIEWS, "none (permutation test)")
P_METHOD = {"raw": "asymptotic Spearman (t approximation)"}
P_METHOD |= dict.fromkeys(RUN_VIEWS[1:], "circular-shift null (all shifts enumerated)")
# every row here: the paper's claims are tested in replication's primary family
FAMILY = "exploratory"
ASSOCIATION_COLUMNS = (  # the cell, the association, the flags
    ["model", "seed", "n_params", "feature", "kind", "target", "view"]
    + ["rho", "ci_low", "ci_high", "ci_method", "p", "p_method", "p_bh", "n", "block_length"]
    + ["effect", "effect_ci_low", "effect_ci_high"]  # between-seed rows (seed_effect)
    + ["beats_clock", "beats_scale", "family", "note"]
)


def cell_seed(base: int, *keys: object) -> int:
    """A 63-bit seed from sha256 of (base, *keys): a cell draws the same stream in any run order."""
    text = "\x1f".join(map(str, (base, *keys)))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little") >> 1


def block_length(a: np.ndarray, b: np.ndarray) -> float:
    """Mean block length for a paired stationary bootstrap: the larger of the Politis–White
    estimates of a and b (the pair must keep the longer memory), clamped to [1, n/2]. Where the
    estimate is undefined (near-constant series, or n ≲ 10, too short for arch's search) it is 1."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est = optimal_block_length(np.column_stack([a, b]))["stationary"].to_numpy(float)
        except (ValueError, IndexError):
            est = np.array([])
    est = est[np.isfinite(est)]
    return float(np.clip(est.max() if est.size else 1.0, 1.0, max(1.0, a.size / 2)))


def block_indices(n: int, length: float, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, n) checkpoint indices drawn by arch's StationaryBootstrap (geometric blocks of
    mean ``length``, wrapping around the end)."""
    boot = StationaryBootstrap(length, np.arange(n), seed=np.random.default_rng(seed))
    return np.stack([boot.update_indices() for _ in range(n_resamples)])


def shift_pvalue(a: np.ndarray, b: np.ndarray) -> float:
    """Circular-shift p of r = Pearson(a, b): b rotated by k = 1..m−1 (scipy.stats.monte_carlo_test
    with every shift as its 'resamples'), p = (1 + #{k: |r_k| ≥ |r_0|}) / m."""
    m = a.size
    shifts = (np.arange(m) + np.arange(1, m)[:, None]) % m

    def rotations(size: tuple[int, int]) -> np.ndarray:
        assert size == shifts.shape, size  # one call, all shifts: the null is enumerated, not drawn
        return b[shifts]

    res = stats.monte_carlo_test(
        b,
        rotations,
        lambda s, axis=-1: np.abs(pearson_rows(a, s)),
        vectorized=True,
        n_resamples=m - 1,
        alternative="greater",
    )
    return float(res.pvalue)


def _view_data(view: str, x: np.ndarray, y: np.ndarray, z: np.ndarray | None):
    """(series resampled together, their statistic, the stationary pair (a, b) with r(a, b) = ρ)."""
    if view == "detrended":
        dx, dy = np.diff(x), np.diff(y)
        return (dx, dy), spearman_rows, (stats.rankdata(dx), stats.rankdata(dy))
    return (x, y, z), partial_spearman, (rank_residuals(x, z), rank_residuals(y, z))


def _why_undefined(view: str, series: tuple, pair: tuple, cond: str) -> str:
    """Why a time-aware view's ρ is undefined for these data, or '' when it is defined."""
    what = "first differences of the " if view == "detrended" else ""
    for name, s in (("feature", series[0]), ("target", series[1])):
        if np.ptp(s) == 0:
            return f"constant {what}{name}: ρ undefined"
    if view == "detrended":
        return ""
    if np.ptp(series[2]) == 0:
        return f"constant conditioning variable {cond}: ρ undefined"
    for name, e in (("feature", pair[0]), ("target", pair[1])):
        if not e.any():
            return f"{name} is a monotone function of {cond}: nothing left after conditioning"
    return ""


def _nan(n: int, note: str) -> dict:
    nan = np.nan
    return dict(rho=nan, ci_low=nan, ci_high=nan, p=nan, n=n, block_length=nan, note=note)


def _percentiles(boot: np.ndarray, confidence: float) -> tuple[float, float, str]:
    """Percentile interval of the finite replicates, and a note counting undefined ones; NaN when
    more than 1 − confidence of them are undefined (the defined ones are then a biased subset)."""
    finite = boot[np.isfinite(boot)]
    left = boot.size - finite.size
    note = f"{left} of {boot.size} resamples had undefined ρ" if left else ""
    if left > (1 - confidence) * boot.size:
        return np.nan, np.nan, f"{note}: more than {1 - confidence:.0%}, CI not reported"
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high), note


def _time_aware(
    view: str,
    x: np.ndarray,
    y: np.ndarray,
    z: np.ndarray | None,
    cond: str,
    n_resamples: int,
    seed: int,
    confidence: float,
    alpha: float,
) -> dict:
    """ρ of a time-aware view with its block-bootstrap CI and circular-shift p (finite data)."""
    series, statistic, pair = _view_data(view, x, y, z)
    m = series[0].size
    if m < 3:
        return _nan(m, f"only {m} points in the {view} view: ρ undefined")
    why = _why_undefined(view, series, pair, cond)
    if why:
        return _nan(m, why)
    length = block_length(*pair)
    idx = block_indices(m, length, n_resamples, seed)
    low, high, note = _percentiles(statistic(*(s[idx] for s in series)), confidence)
    notes = [note] if note else []
    if 1 / m >= alpha:
        notes.append(f"shift null has {m} points: smallest attainable p = 1/{m} ≥ {alpha}")
    return dict(
        rho=float(statistic(*series)),
        ci_low=low,
        ci_high=high,
        p=shift_pvalue(*pair),
        n=m,
        block_length=length,
        note="; ".join(notes),
    )


def view_association(
    x,
    y,
    view: str,
    z=None,
    *,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    confidence: float = CONFIDENCE,
    alpha: float = ALPHA,
    cond: str = "z",
) -> dict:
    """ρ, CI, p, n, block_length, ci_method, p_method and note of one view of (x, y) over a run's
    checkpoints in step order; ``z`` is the conditioning series of a partial view (named ``cond``).
    Checkpoints with a non-finite value are dropped (before differencing) and counted in
    ``note``."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    methods = {"ci_method": CI_METHOD[view], "p_method": P_METHOD[view]}
    if (z is None) != (view not in CONDITION):
        raise ValueError(f"view {view!r} needs {'a' if view in CONDITION else 'no'} conditioning z")
    if view == "raw":
        res = spearman_ci(x, y, n_resamples, confidence, seed)
        return {**res, "block_length": np.nan, **methods}
    cols = [x, y] if z is None else [x, y, np.asarray(z, float)]
    keep = np.logical_and.reduce([np.isfinite(c) for c in cols])
    cols = [c[keep] for c in cols] + [None] * (3 - len(cols))
    res = _time_aware(view, *cols, cond, n_resamples, seed, confidence, alpha)
    if cols[0].size < MIN_RUN:  # the run rule for small n (stats.MIN_RUN): ρ, and no claim
        res |= {"ci_low": np.nan, "ci_high": np.nan, "p": np.nan}
        res["note"] = "; ".join(
            filter(None, [res["note"], TOO_SHORT.format(n=cols[0].size) + "; no p or interval"])
        )
    if not keep.all():
        dropped = f"{int((~keep).sum())} non-finite checkpoints dropped"
        res["note"] = "; ".join(filter(None, [dropped, res["note"]]))
    return {**res, **methods}


def _cell(run: pd.DataFrame, feature: str, target: str, view: str, **kw) -> dict:
    """One (feature, target, view) of a run; a feature that is the conditioning variable is NaN."""
    cond = CONDITION.get(view)
    if feature == cond:
        n = int(run[feature].notna().sum())
        res = _nan(n, f"feature is the conditioning variable {cond}: ρ undefined")
        return {**res, "ci_method": CI_METHOD[view], "p_method": P_METHOD[view]}
    z = run[cond] if cond else None
    return view_association(run[feature], run[target], view, z, cond=cond or "", **kw)


def _mean_raw_sign(table: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Sign of the mean raw ρ over the rows of each ``keys`` group."""
    raw = table[table["view"] == "raw"]
    return np.sign(raw.groupby(keys, sort=False)["rho"].mean()).rename("raw_sign")


def add_beats(table: pd.DataFrame, alpha: float = ALPHA) -> pd.DataFrame:
    """beats_clock / beats_scale on every row: the (feature, target)'s seed_contrast /
    seed_contrast_l2 row of the same model (pooled rows: the pooled one) has an exact permutation
    p < α and a ρ of the sign of the raw ρ (per run: that run's; per model: the seeds' mean; pooled:
    all runs' mean). False where the contrast is undefined (one seed: the row's note says so)."""
    keys = ["feature", "target"]
    per_run = table["view"].isin(RUN_VIEWS)
    raw = table[table["view"] == "raw"].set_index(["model", "seed", *keys])["rho"]
    own = np.sign(table.set_index(["model", "seed", *keys]).index.map(raw).to_numpy(float))
    model_sign = _mean_raw_sign(table, ["model", *keys])
    all_sign = _mean_raw_sign(table, keys)
    idx = table.set_index(["model", *keys]).index
    sign = np.where(per_run, own, idx.map(model_sign).to_numpy(float))
    pooled = (table["model"] == POOLED).to_numpy()
    sign[pooled] = table.loc[pooled].set_index(keys).index.map(all_sign).to_numpy(float)
    for col, view in CLOCK_VIEWS.items():
        part = table[table["view"] == view].set_index(["model", *keys])
        rho = idx.map(part["rho"]).to_numpy(float)
        p = idx.map(part["p"]).to_numpy(float)
        with np.errstate(invalid="ignore"):
            table[col] = (p < alpha) & (np.sign(rho) == sign) & (sign != 0)
    return table


def _run_rows(run_group: tuple, features: list, targets: Sequence[str], seed: int, kw: dict):
    """The RUN_VIEWS rows of one run (``((model, seed), rows)`` of a groupby)."""
    (model, run_seed), run = run_group
    log.info("associations: %s seed %s (%d checkpoints)", model, run_seed, len(run))
    head = {"model": model, "seed": run_seed, "n_params": int(run["n_params"].iloc[0])}
    rows = []
    for feature, feature_kind in features:
        for target in targets:
            cell = {**head, "feature": feature, "kind": feature_kind, "target": target}
            for view in RUN_VIEWS:
                s = cell_seed(seed, model, run_seed, feature, target, view)
                rows.append(
                    {**cell, "view": view, **_cell(run, feature, target, view, seed=s, **kw)}
                )
    return rows


def association_table(
    df: pd.DataFrame,
    features: Sequence[str] | None = None,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    confidence: float = CONFIDENCE,
    alpha: float = ALPHA,
    targets: Sequence[str] = TARGETS,
    threads: int = 1,
) -> pd.DataFrame:
    """One row per (model, seed, feature, target, view) with ASSOCIATION_COLUMNS: the RUN_VIEWS
    per run (the runs spread over ``threads`` processes: the same table), then the
    CONTRAST_VIEWS per model (seed <NA>) and pooled over models.

    ``features`` defaults to feature_kinds(df); ``targets`` to train and validation loss. Every
    resampling is seeded by cell_seed(seed, model, run seed, feature, target, view); p_bh is
    Benjamini–Hochberg within each view (pooled contrast rows a family of their own); every row
    is labelled exploratory (``family``): the paper's claims are tested in replication's primary
    family.
    """
    if features is None:
        features = feature_kinds(df)
    else:
        features = [(f, kind(f)) for f in features]
    missing = [c for c in [f for f, _ in features] + list(targets) if c not in df]
    if missing:
        raise ValueError(f"feature table lacks columns {missing}")
    kw = dict(n_resamples=n_resamples, confidence=confidence, alpha=alpha)
    runs = list(df.sort_values("step").groupby(["model", "seed"], sort=False))
    work = partial(_run_rows, features=features, targets=targets, seed=seed, kw=kw)
    rows = [row for part in map_tasks(work, runs, threads) for row in part]
    log.info("associations: between-seed contrasts")
    names = [f for f, _ in features] + list(targets)
    inputs = model_inputs(df, names, seed)  # the contrasts' p and their effects share them
    contrast = contrast_table(df, list(features), list(targets), seed, inputs).assign(
        ci_low=np.nan, ci_high=np.nan, block_length=np.nan, ci_method=CI_METHOD["seed_contrast"]
    )
    log.info("associations: effects [%g %% intervals] of the seed contrasts", 100 * CONFIDENCE)
    effects = effect_table(df, [f for f, _ in features], list(targets), seed, inputs)
    contrast = with_effects(contrast, effects)
    table = pd.DataFrame(rows)
    table["seed"] = table["seed"].astype("Int64")
    table["n_params"] = table["n_params"].astype("Int64")
    table = pd.concat([table, contrast], ignore_index=True)
    family = table["view"] + (table["model"] == POOLED).map({True: "/pooled", False: ""})
    table["p_bh"] = table.groupby(family)["p"].transform(lambda p: benjamini_hochberg(p.to_numpy()))
    table = add_beats(table, alpha).assign(family=FAMILY)
    table = table.sort_values(["n_params", "model", "seed"], kind="stable", na_position="last")
    return table[ASSOCIATION_COLUMNS].reset_index(drop=True)


def with_effects(contrast: pd.DataFrame, effects: pd.DataFrame) -> pd.DataFrame:
    """The contrast rows with their effect [interval] (``seed_effect.effect_table``) and, where
    there is none, its reason appended to the note."""
    keys = ["model", "feature", "target", "view"]
    out = contrast.merge(effects, on=keys, how="left", validate="one_to_one")
    why = out.pop("effect_note").fillna("")
    note = out["note"].fillna("")
    out["note"] = np.where(note.eq(""), why, np.where(why.eq(""), note, note + "; " + why))
    return out


def association_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per (model, feature, target), pooled rows last: n_seeds, beats_clock / beats_scale (the
    model's, from its seed contrasts), the contrasts' ρ and exact p (``p_seed_contrast``,
    ``p_seed_contrast_l2``), and ρ of each view averaged over seeds (rho_<view>, NaN-skipping)."""
    keys = ["model", "feature", "kind", "target"]
    runs = table[table["view"] == "raw"].groupby(keys, sort=False)["seed"].nunique()
    out = table[table["view"] == "seed_contrast"][[*keys, "n_params"]].set_index(keys)
    out["n_seeds"] = runs.reindex(out.index).fillna(0).astype(int)
    for col, view in CLOCK_VIEWS.items():
        part = table[table["view"] == view].set_index(keys)
        out[col] = part[col].reindex(out.index).eq(True)
        out[f"p_{view}"] = part["p"].reindex(out.index)
    rho = table.pivot_table(index=keys, columns="view", values="rho", aggfunc="mean", sort=False)
    for view in VIEWS:
        out[f"rho_{view}"] = rho[view].reindex(out.index) if view in rho else np.nan
    return out.reset_index()[["model", "n_params", *keys[1:], *out.columns.drop("n_params")]]
