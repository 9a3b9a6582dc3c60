"""Jobs of workflow/rules/aggregate.smk: the feature tables."""

from __future__ import annotations

from pathlib import Path


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
    from topotrain.analysis.tables.aggregate import aggregate_weights

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
        series,
        gradients,
        weightwatcher,
        llc,
    )


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
