"""Jobs of workflow/rules/aggregate.smk: the feature tables."""

from __future__ import annotations

from pathlib import Path

from topotrain.jobs.common import log

INPUTS = ("series", "gradients", "weightwatcher", "llc")  # the optional inputs, in this order


def aggregate_run_job(
    records: list[str], logs: list[str], params: dict, out: dict[str, str], *optional: list[str]
) -> None:
    """One run's feature tables (parquet only), as soon as its topology is done:
    ``records_tables`` of its records and logs."""
    records_tables(records, logs, params, out, *optional)


def records_tables(
    records: list[str], logs: list[str], params: dict, out: dict[str, str], *optional: list[str]
) -> None:
    """Join every checkpoint's features (each training's diagram series, the gradient records
    when given: one per record, same order; each training's WeightWatcher and LLC tables, when
    given) with the training logs (metrics.csv, evals.csv of
    each of ``params["trainings"]``, in its order) into the feature tables. ``optional``: the
    lists of INPUTS, in its order, as many as the caller has (confirm: series and gradients)."""
    for path in out.values():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    pairs = zip(params["trainings"], logs[::2], logs[1::2], strict=True)
    trainings = [dict(t, metrics=metrics, evals=evals) for t, metrics, evals in pairs]
    aggregate_weights(
        records,
        params["record_keys"],
        trainings,
        params["total_steps"],
        params["interval"],
        out,
        dict(zip(INPUTS, optional, strict=False)),
    )


def aggregate_weights(
    records: list[str],
    keys: list[dict],
    runs: list[dict],
    total_steps: int,
    interval: int,
    out: dict[str, str],
    inputs: dict[str, list[str] | None] | None = None,
):
    """Per-checkpoint records + run logs → the weights and weights_layers tables
    (``analysis.tables.aggregate.weights_tables``), written all or none; returns the weights table.

    ``records`` are read with ``sources.records``, each run's metrics.csv and evals.csv (the
    paths in ``runs``) here; ``out`` maps table, layers and (optionally: a run's part has
    none) table_csv, layers_csv to paths. ``inputs`` may name ``gradients`` (one record per
    record, same order) and ``series``, ``weightwatcher`` and ``llc`` (one table per run, in the
    order of ``runs``).
    """
    import pandas as pd

    from topotrain.analysis.tables.aggregate import layer_table, weights_tables
    from topotrain.sources import records as rec

    inputs = inputs or {}
    series, gradients = inputs.get("series"), inputs.get("gradients")
    weightwatcher, llc = inputs.get("weightwatcher"), inputs.get("llc")
    layers = layer_table(rec.read_weight_records(records), keys)
    grads = layer_table(rec.read_gradient_records(gradients), keys) if gradients else None
    extra = rec.read_series(series, runs) if series else None
    ww = llc_table = None
    if weightwatcher:
        ww = rec.read_run_tables(weightwatcher, runs, "WeightWatcher table", "weightwatcher")
    if llc:
        llc_table = rec.read_run_tables(llc, runs, "LLC table", "llc")
    logs = [r | {name: pd.read_csv(r[name]) for name in ("metrics", "evals")} for r in runs]
    table, layers = weights_tables(layers, logs, total_steps, interval, extra, grads, ww, llc_table)
    _write_tables(table, layers, out)
    return table


def _write_tables(table, layers, out: dict[str, str]) -> None:
    """The weights and weights_layers tables to ``out``'s table and layers (and their CSVs where
    ``out`` names table_csv and layers_csv), all or none."""
    from topotrain.analysis.tables.aggregate import table_writers
    from topotrain.io import atomic_write_all

    writers = table_writers(layers, out["layers"], out.get("layers_csv"))
    atomic_write_all({**writers, **table_writers(table, out["table"], out.get("table_csv"))})
    rows = (out["table"], len(table), out["layers"], len(layers))
    log.info("wrote %s (%d rows), %s (%d rows)", *rows)


def aggregate_features_job(tables: list[str], layers: list[str], out: dict[str, str]) -> None:
    """The study's feature tables from its runs' (rule aggregate_run, one per run in the
    config's order of models, then seeds): the rows of every run, ordered as ``weights_tables``
    orders one built from all the records at once (by n_params, model, seed, step; the layers in
    the runs' order). A part whose columns differ from the first's is an error naming it."""
    import pandas as pd

    frames = {}  # _write_tables' atomic writes make the output folders
    for kind, paths in (("table", tables), ("layers", layers)):
        parts = [pd.read_parquet(path) for path in paths]
        if not parts:
            raise ValueError(f"aggregate_features: no per-run {kind} to join")
        for path, part in zip(paths[1:], parts[1:], strict=True):
            if list(part.columns) != list(parts[0].columns):
                raise ValueError(
                    f"aggregate_features: {path} has columns {list(part.columns)}, "
                    f"not {paths[0]}'s {list(parts[0].columns)} (records of an older "
                    "topotrain in one run? `snakemake --forcerun weight_topology` redoes them)"
                )
        frames[kind] = pd.concat(parts, ignore_index=True)
    keys = ["n_params", "model", "seed", "step"]
    table = frames["table"].sort_values(keys, kind="stable").reset_index(drop=True)
    _write_tables(table, frames["layers"], out)


# The rules' adapters (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls
# them): a run's records and logs, params and outputs, and one list per optional input (INPUTS);
# the study's per-run tables.
def aggregate_features_rule(sm) -> None:
    aggregate_features_job(list(sm.input.tables), list(sm.input.layers), dict(sm.output.items()))


def aggregate_run_rule(sm) -> None:
    records, logs = list(sm.input.records), list(sm.input.logs)
    optional = (sm.input.series, sm.input.gradients, sm.input.weightwatcher, sm.input.llc)  # INPUTS
    optional = [list(paths) for paths in optional]
    aggregate_run_job(records, logs, dict(sm.params.items()), dict(sm.output.items()), *optional)
