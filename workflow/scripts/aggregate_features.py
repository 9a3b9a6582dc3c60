from topotrain.jobs import aggregate_features_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
aggregate_features_job(
    list(sm.input.records),
    list(sm.input.logs),
    dict(sm.params.items()),
    dict(sm.output.items()),
    list(sm.input.series),
    list(sm.input.gradients),
    list(sm.input.weightwatcher),
)
