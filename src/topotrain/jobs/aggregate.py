"""Jobs of workflow/rules/aggregate.smk: the feature tables."""

from __future__ import annotations

from pathlib import Path

from topotrain.jobs.common import log


def aggregate_features_job(
    records: list[str],
    logs: list[str],
    params: dict,
    out: dict[str, str],
    series: list[str] | None = None,
    gradients: list[str] | None = None,
    weightwatcher: list[str] | None = None,
    llc: list[str] | None = None,
) -> None:
    """Join every checkpoint's features (each training's diagram series, the gradient records
    when given: one per record, same order; each training's WeightWatcher and LLC tables, when
    given) with the training logs (metrics.csv, evals.csv of
    each of ``params["trainings"]``, in its order) into the feature tables."""
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
        {"series": series, "gradients": gradients, "weightwatcher": weightwatcher, "llc": llc},
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

    ``records`` are read with ``sources.records``; ``out`` maps table, table_csv, layers,
    layers_csv to paths. ``inputs`` may name ``gradients`` (one record per record, same order)
    and ``series``, ``weightwatcher`` and ``llc`` (one table per run, in the order of ``runs``).
    """
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
    table, layers = weights_tables(layers, runs, total_steps, interval, extra, grads, ww, llc_table)
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


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def aggregate_features_rule(sm) -> None:
    aggregate_features_job(
        list(sm.input.records),
        list(sm.input.logs),
        dict(sm.params.items()),
        dict(sm.output.items()),
        list(sm.input.series),
        list(sm.input.gradients),
        list(sm.input.weightwatcher),
        list(sm.input.llc),
    )
