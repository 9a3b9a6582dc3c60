"""Associations of features with loss that see past the shared clock of training: per run,
feature and target the four views of ``run_views``, then between seeds of a model
(``seed_contrast``, ``seed_effect``), as one table with its corrections and flags.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from functools import partial

import numpy as np
import pandas as pd

from topotrain.analysis.inference.parallel import map_tasks
from topotrain.analysis.inference.run_views import (  # noqa: F401 (imported from here)
    CI_METHOD,
    RUN_VIEWS,
    block_length,
    run_cell,
    shift_pvalue,
    view_association,
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
    benjamini_hochberg,
    feature_kinds,
    kind,
)
from topotrain.config import CONFIDENCE, DEFAULTS, LOSSES

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults

log = logging.getLogger(__name__)

TARGETS = list(LOSSES)
VIEWS = [*RUN_VIEWS, *CONTRAST_VIEWS]  # then between seeds of a model (seed_contrast)
CLOCK_VIEWS = {"beats_clock": "seed_contrast", "beats_scale": "seed_contrast_l2"}
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
                    {**cell, "view": view, **run_cell(run, feature, target, view, seed=s, **kw)}
                )
    return rows


def _task_rows(task: tuple, targets: Sequence[str], seed: int, kw: dict) -> list[dict]:
    """``_run_rows`` of a ``(features, run group)`` task."""
    features, run_group = task
    return _run_rows(run_group, features, targets, seed, kw)


def feature_list(df: pd.DataFrame, features=None, targets: Sequence[str] = TARGETS) -> list:
    """(feature, kind) pairs: ``features`` (default feature_kinds(df)), every one and every
    target a column of ``df`` (else ValueError naming the missing)."""
    features = feature_kinds(df) if features is None else [(f, kind(f)) for f in features]
    missing = [c for c in [f for f, _ in features] + list(targets) if c not in df]
    if missing:
        raise ValueError(f"feature table lacks columns {missing}")
    return features


def runs_of(df: pd.DataFrame) -> list[tuple]:
    """``((model, seed), its checkpoints in step order)`` for every run of a feature table."""
    return list(df.sort_values("step").groupby(["model", "seed"], sort=False))


def view_rows(
    tables: Sequence[tuple[pd.DataFrame, list]],
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    confidence: float = CONFIDENCE,
    alpha: float = ALPHA,
    targets: Sequence[str] = TARGETS,
    threads: int = 1,
) -> list[pd.DataFrame]:
    """The RUN_VIEWS rows (model, seed, n_params, feature, kind, target, view and run_cell's
    columns) of every run of each ``(feature table, (feature, kind) pairs)``, one frame per table:
    every run of every table one task of one pool of ``threads`` processes (the same rows)."""
    kw = dict(n_resamples=n_resamples, confidence=confidence, alpha=alpha)
    tasks = [(i, (features, run)) for i, (df, features) in enumerate(tables) for run in runs_of(df)]
    work = partial(_task_rows, targets=targets, seed=seed, kw=kw)
    parts = map_tasks(work, [task for _, task in tasks], threads)
    rows = [[] for _ in tables]
    for (i, _), part in zip(tasks, parts, strict=True):
        rows[i] += part
    return [pd.DataFrame(r) for r in rows]


def check_run_rows(rows: pd.DataFrame, df: pd.DataFrame, features: list, targets) -> None:
    """ValueError unless ``rows`` (computed apart: rule run_views) hold the RUN_VIEWS rows of
    exactly the runs, features and targets of ``df``."""
    runs = sorted(df[["model", "seed"]].drop_duplicates().itertuples(index=False, name=None))
    have = sorted(rows[["model", "seed"]].drop_duplicates().itertuples(index=False, name=None))
    cells = {(f, t, v) for f, _ in features for t in targets for v in RUN_VIEWS}
    got = set(rows[["feature", "target", "view"]].itertuples(index=False, name=None))
    if have != runs or got != cells or len(rows) != len(runs) * len(cells):
        raise ValueError(
            f"the per-run rows (rule run_views) hold runs {have} and {len(got)} cells in "
            f"{len(rows)} rows, the feature table runs {runs} and {len(cells)} cells each: "
            "rerun run_views for the feature table's runs"
        )


def association_table(
    df: pd.DataFrame,
    features: Sequence[str] | None = None,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    confidence: float = CONFIDENCE,
    alpha: float = ALPHA,
    targets: Sequence[str] = TARGETS,
    threads: int = 1,
    run_rows: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per (model, seed, feature, target, view) with ASSOCIATION_COLUMNS: the RUN_VIEWS
    per run, then the CONTRAST_VIEWS per model (seed <NA>) and pooled over models (the runs and
    the contrasts' effect intervals spread over ``threads`` processes: the same table).

    ``features`` defaults to feature_kinds(df); ``targets`` to train and validation loss. Every
    resampling is seeded by cell_seed(seed, model, run seed, feature, target, view); p_bh is
    Benjamini–Hochberg within each view (pooled contrast rows a family of their own); every row
    is labelled exploratory (``family``): the paper's claims are tested in replication's primary
    family. ``run_rows``: the RUN_VIEWS rows already computed (``view_rows``, per run by rule
    run_views, with these resamples and seed), checked to cover the table's runs.
    """
    features = feature_list(df, features, targets)
    kw = dict(n_resamples=n_resamples, confidence=confidence, alpha=alpha, targets=targets)
    if run_rows is None:
        run_rows = view_rows([(df, features)], seed=seed, threads=threads, **kw)[0]
    else:
        check_run_rows(run_rows, df, features, targets)
    log.info("associations: between-seed contrasts")
    names = [f for f, _ in features] + list(targets)
    inputs = model_inputs(df, names, seed)  # the contrasts' p and their effects share them
    contrast = contrast_table(df, list(features), list(targets), seed, inputs).assign(
        ci_low=np.nan, ci_high=np.nan, block_length=np.nan, ci_method=CI_METHOD["seed_contrast"]
    )
    log.info("associations: effects [%g %% intervals] of the seed contrasts", 100 * CONFIDENCE)
    effects = effect_table(df, [f for f, _ in features], list(targets), seed, inputs, threads)
    contrast = with_effects(contrast, effects)
    table = run_rows.copy()
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
