"""Aggregate per-checkpoint topology records and training logs into tidy feature tables.

Two tables come out (columns documented in docs/outputs.md):
- long per-layer table: one row per (model, seed, step, layer) with every per-layer feature;
- checkpoint table: one row per (model, seed, step): losses, NP mean/std over layers, VR totals and
  counts summed over layers, entropies averaged over layers, max persistence maxed over layers (the
  *_scalefree ones alike), and the mean finite H0 bar Σ h0_total / Σ h0_count; with the per-run
  diagram series (``topology.series``): the step distances summed (W1) or maxed (bottleneck) over
  layers and the vectorisation summaries averaged over layers, under their per-layer names. Both
  name the Rips engine that computed the records (``engine``: ripser or giotto-ph) and, where the
  checkpoints recorded them, the numerics each was trained with (``numerics``, one string:
  ``analysis.numerics``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.analysis.inference.numerics import numerics_label
from topotrain.baselines.weightwatcher import METRICS as WW_METRICS
from topotrain.io import Writer
from topotrain.topology import registry
from topotrain.topology.registry import SCALEFREE
from topotrain.topology.vietoris_rips import UNNAMED

log = logging.getLogger(__name__)

FULL_LOSS = "val_loss_full"  # evals.csv's whole-split loss (training.run_state.EVAL_COLUMNS)

SERIES_AGG = {
    "w1_step": "sum",
    "bottleneck_step": "max",
    "landscape_l2": "mean",
    "image_mass": "mean",
    "betti_auc": "mean",
}  # over layers, per checkpoint


# an LLC table's columns the weights table takes: the registry's LLC features (kind llc) and their
# halves (two measurements from disjoint chains), SD over chains and drift
LLC = [f.name for f in registry.entries("checkpoint") if f.kind == "llc"]
LLC_COLUMNS = LLC + [f"{c}_{part}" for c in LLC for part in ("half1", "half2", "std", "drift")]


def ww_layer_table(ww: pd.DataFrame) -> pd.DataFrame:
    """The WeightWatcher rows as per-layer columns: ww_<metric>, ww_num_evals, ww_fit, ww_warning
    (topology.weightwatcher), keyed by model, seed, step, layer."""
    keys = ["model", "seed", "step", "layer"]
    columns = {m: f"ww_{m}" for m in (*WW_METRICS, "num_evals", "fit", "warning")}
    return ww[keys + list(columns)].rename(columns=columns)


def ww_features(ww: pd.DataFrame) -> pd.DataFrame:
    """Per checkpoint: ww_<metric>_mean over the layers WeightWatcher fitted (NaN when it fitted
    none), how many layers were fitted from fewer than 20 eigenvalues (ww_small_layers) or
    skipped (ww_skipped_layers), and α's mean over the 1st, 3rd, … and over the 2nd, 4th, …
    layer in the table's order (ww_alpha_half1_mean, ww_alpha_half2_mean: two measurements of
    the checkpoint's α with separate fit errors, for the split-half partial on α)."""
    metrics = {f"ww_{m}": pd.to_numeric(ww[f"ww_{m}"], errors="coerce") for m in WW_METRICS}
    grouped = ww.assign(**metrics).groupby(["model", "seed", "step"], sort=True)
    out = {f"ww_{m}_mean": grouped[f"ww_{m}"].mean() for m in WW_METRICS}
    out["ww_small_layers"] = grouped["ww_fit"].agg(lambda f: int((f == "small").sum()))
    out["ww_skipped_layers"] = grouped["ww_fit"].agg(lambda f: int((f == "skipped").sum()))
    for half in (0, 1):  # α over alternate layers: two measurements with their own fit errors
        out[f"ww_alpha_half{half + 1}_mean"] = grouped["ww_alpha"].agg(
            lambda a, h=half: a.iloc[h::2].mean()
        )
    return pd.DataFrame(out).reset_index()


def prefixed(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``df`` with every column but ``keys`` renamed grad_<name> (the gradient features)."""
    return df.rename(columns={c: f"grad_{c}" for c in df.columns if c not in keys})


def series_features(series: pd.DataFrame) -> pd.DataFrame:
    """Per checkpoint: SERIES_AGG over layers of each h{k}_* series column (NaN stays NaN: the
    first checkpoint has no step distance)."""
    grouped = series.groupby(["model", "seed", "step"], sort=True)
    out = {}
    for col in series.columns:
        how = SERIES_AGG.get(col.split("_", 1)[-1])
        if how == "sum":
            out[col] = grouped[col].sum(min_count=1)
        elif how:
            out[col] = grouped[col].agg(how)
    return pd.DataFrame(out).reset_index()


def layer_table(docs: Iterable[dict], keys: Iterable[dict]) -> pd.DataFrame:
    """The per-layer table of topology records (``sources.records``); ``keys`` adds
    model/seed/step, each record's Rips engine (its params') is the ``engine`` column and its
    checkpoint's training numerics, where recorded, the ``numerics`` column (``numerics_label``)."""
    rows = []  # one flat dict per layer, columns in order of first appearance (one frame is
    for doc, key in zip(docs, keys, strict=True):  # 6 × faster than a frame per record)
        extra = {"engine": (doc.get("params") or {}).get("engine", UNNAMED)}
        if label := numerics_label(doc.get("numerics")):
            extra["numerics"] = label
        for layer in doc["layers"]:
            if clash := set(key) & set(layer):
                raise ValueError(f"a topology record's layer has the key columns {sorted(clash)}")
            rows.append({**key, **layer, **extra})
    if not rows:
        raise ValueError("no topology records to aggregate")
    return pd.DataFrame(rows)


def interval_means(metrics: pd.DataFrame, steps: list[int], interval: int) -> pd.DataFrame:
    """Mean train loss and grad norm over the interval before each checkpoint.

    For checkpoint s > 0: mean over training steps t with s - interval <= t < s (the forward passes
    that led to the weights of checkpoint s); for s = 0: the value at t = 0
    (checkpoint 0's weights).
    """
    rows = []
    for s in steps:
        lo, hi = (0, 1) if s == 0 else (s - interval, s)
        window = metrics[(metrics["step"] >= lo) & (metrics["step"] < hi)]
        if window.empty:
            raise ValueError(f"metrics hold no training steps in [{lo}, {hi}) for checkpoint {s}")
        rows.append(
            {
                "step": s,
                "train_loss": window["train_loss"].mean(),
                "grad_norm": window["grad_norm"].mean(),
                "lr": window["lr"].iloc[-1],
            }
        )
    return pd.DataFrame(rows)


def checkpoint_features(layers: pd.DataFrame) -> pd.DataFrame:
    """Per-checkpoint topology features from the per-layer table (NP mean/std over layers, etc.)."""
    keys = ["model", "seed", "step"]
    grouped = layers.groupby(keys, sort=True)
    named = {"n_layers": ("layer", "size")}
    for key, feature in registry.named_columns():  # e.g. np_total → np_mean, np_std
        named[feature.column] = (key, feature.over_layers)
        if feature.spread:
            named[feature.spread] = (key, lambda x: float(np.std(x, ddof=0)))
    out = grouped.agg(**named)
    reduce = registry.reductions()  # {"mean" | "max" | "sum": record keys}, the table's order
    wanted = [c for how in reduce.values() for c in how]
    present = [c for c in wanted if c in layers]
    stale = [c for c in present if 0 < layers[c].isna().sum() < len(layers)]  # old and new mixed
    if missing := sorted(set(wanted) - set(present)) + stale:
        log.warning(
            "topology records lack %s (written by an older topotrain?): those columns are left "
            "out or partly empty; `snakemake --forcerun weight_topology` recomputes them",
            ", ".join(missing),
        )
    agg = {c: how for how in ("mean", "max") for c in reduce[how] if c in present}
    out = out.join(grouped.agg(agg))
    for c in (c for c in reduce["sum"] if c in present):  # no value in any layer stays missing
        out[c] = grouped[c].sum(min_count=1)
    out = out.rename(columns={c: f"{c}_mean" for c in reduce["mean"] if c in out})
    for col in ("engine", "numerics"):  # the Rips engine; the numerics it was trained with
        if col in layers:
            out[col] = grouped[col].first()
    for suffix in ("", SCALEFREE):
        total, count = f"h0_total{suffix}", f"h0_count{suffix}"
        if total in out and count in out:
            out[f"h0_mean_bar{suffix}"] = mean_bar(out[total], out[count])
    return out.reset_index()


def mean_bar(total: pd.Series, count: pd.Series) -> pd.Series:
    """Mean finite bar length Σ total / Σ count (per checkpoint, over layers);
    0 where count is 0."""
    count = count.astype(float)
    return (total.astype(float) / count.where(count > 0)).fillna(0.0)


def build_tables(
    layers: pd.DataFrame,
    runs: dict[tuple[str, int], dict],
    total_steps: int,
    interval: int,
    series: pd.DataFrame | None = None,
    gradients: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Join topology features (the diagram series and the gradients' features, ``grad_*``, when
    given) with each run's metrics/evals and model metadata.

    ``runs`` maps (model, seed) to {"metrics": its metrics.csv, "evals": its evals.csv (both
    DataFrames, ``jobs.aggregate`` reads them), "n_params": int, "d_model": …}.
    ``val_loss_full`` (FULL_LOSS) follows ``lr``: NaN where the run did not evaluate the whole
    validation split, everywhere for an evals.csv written before it existed.
    """
    feats = checkpoint_features(layers)
    keys = ["model", "seed", "step"]
    if series is not None:
        feats = feats.merge(series_features(series), on=keys, how="left")
    if gradients is not None:
        grad = checkpoint_features(gradients).drop(columns=["n_layers", "engine"], errors="ignore")
        grad = prefixed(grad, keys)
        feats = feats.merge(grad, on=keys, how="left")
    pieces = []
    for (model, seed), info in runs.items():
        metrics, evals = info["metrics"], info["evals"]
        sub = feats[(feats["model"] == model) & (feats["seed"] == seed)]
        steps = sorted(sub["step"].tolist())
        train = interval_means(metrics, steps, interval)
        merged = sub.merge(train, on="step", how="left").merge(evals, on="step", how="left")
        if FULL_LOSS not in merged:  # evals.csv from before the whole-split evaluation
            merged[FULL_LOSS] = np.nan
        if merged["val_loss"].isna().any():
            missing = merged.loc[merged["val_loss"].isna(), "step"].tolist()
            raise ValueError(
                f"{model} seed {seed}: evals.csv has no validation loss for steps {missing}"
            )
        meta = {c: info[c] for c in ("n_params", "d_model", "n_layer", "n_head")}
        pieces.append(merged.assign(**meta, frac=merged["step"] / total_steps))
    table = pd.concat(pieces, ignore_index=True)
    table = table.sort_values(["n_params", "model", "seed", "step"], kind="stable")
    front = ["model", "seed", "n_params", "d_model", "n_layer", "n_head", "step", "frac"]
    front += ["train_loss", "val_loss", "grad_norm", "lr", FULL_LOSS]
    return table[front + [c for c in table.columns if c not in front]].reset_index(drop=True)


def table_writers(
    df: pd.DataFrame, parquet: str | Path, csv: str | Path | None = None
) -> dict[str, Writer]:
    """Writers of one table as parquet and (when ``csv`` is given) as CSV, for
    ``atomic_write_all``."""
    writers = {str(parquet): lambda fh: df.to_parquet(fh, index=False)}
    if csv is not None:
        writers[str(csv)] = lambda fh: fh.write(df.to_csv(index=False).encode())
    return writers


def weights_tables(
    layers: pd.DataFrame,
    runs: list[dict],
    total_steps: int,
    interval: int,
    series: pd.DataFrame | None = None,
    gradients: pd.DataFrame | None = None,
    weightwatcher: pd.DataFrame | None = None,
    llc: pd.DataFrame | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(weights table, weights_layers table) of the aggregate rule, from the per-layer table of
    the records (``layer_table``) and the runs' logs.

    ``runs`` holds one dict per (model, seed) with keys model, seed, metrics, evals (its logs as
    DataFrames), n_params, d_model, n_layer, n_head; ``series``: the runs' diagram-series
    tables; ``gradients``: the gradient records' per-layer table (their features become
    ``grad_*`` columns of both tables);
    ``weightwatcher``: the runs' WeightWatcher tables (``ww_*`` columns: ``ww_features``);
    ``llc``: the runs' LLC tables (LLC_COLUMNS of the weights table, NaN at the checkpoints it
    skips). All tables carry model and seed (``sources.records.read_run_tables``).
    """
    by_run = {(r["model"], r["seed"]): r for r in runs}
    table = build_tables(layers, by_run, total_steps, interval, series, gradients)
    on = ["model", "seed", "step", "layer"]
    if weightwatcher is not None:
        ww = ww_layer_table(weightwatcher)
        layers = layers.merge(ww, on=on, how="left")
        table = table.merge(ww_features(ww), on=on[:3], how="left")
    if llc is not None:
        table = table.merge(llc[on[:3] + LLC_COLUMNS], on=on[:3], how="left")
    if series is not None:
        layers = layers.merge(series, on=on, how="left")
    if gradients is not None:
        gradients = gradients.drop(columns="engine")  # the weights' engine (one topology setting)
        layers = layers.merge(prefixed(gradients, on), on=on, how="left")
    return table, layers
