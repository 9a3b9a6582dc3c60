"""Jobs of workflow/rules/aggregate.smk: the feature tables."""

from __future__ import annotations

from pathlib import Path

from topotrain.jobs.common import log

INPUTS = ("series", "gradients", "weightwatcher", "llc")  # the optional inputs, in this order


def aggregate_features_job(
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
    paths in ``runs``) here; ``out`` maps table, table_csv, layers,
    layers_csv to paths. ``inputs`` may name ``gradients`` (one record per record, same order)
    and ``series``, ``weightwatcher`` and ``llc`` (one table per run, in the order of ``runs``).
    """
    import pandas as pd

    from topotrain.analysis.tables.aggregate import layer_table, table_writers, weights_tables
    from topotrain.io import atomic_write_all
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
    writers = table_writers(layers, out["layers"], out["layers_csv"])
    atomic_write_all({**writers, **table_writers(table, out["table"], out["table_csv"])})
    log.info(
        "wrote %s (%d rows), %s (%d rows) and their CSVs",
        out["table"],
        len(table),
        out["layers"],
        len(layers),
    )
    return table


# The rule's adapter (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls
# it): its records and logs, params and outputs, and one list per optional input (INPUTS).
def aggregate_features_rule(sm) -> None:
    records, logs = list(sm.input.records), list(sm.input.logs)
    optional = (sm.input.series, sm.input.gradients, sm.input.weightwatcher, sm.input.llc)  # INPUTS
    optional = [list(paths) for paths in optional]
    aggregate_features_job(
        records, logs, dict(sm.params.items()), dict(sm.output.items()), *optional
    )
