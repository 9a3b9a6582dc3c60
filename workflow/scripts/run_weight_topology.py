from topotrain.jobs import run_weight_topology_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
run_weight_topology_job(
    list(sm.input.checkpoint),
    sm.input.layers,
    dict(sm.params.items()),
    dict(sm.output.items()),
    sm.threads,
)
