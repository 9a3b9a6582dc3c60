from topotrain.jobs import gradient_topology_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
gradient_topology_job(
    list(sm.input.checkpoints),
    sm.input.tokens,
    sm.params.gradients,
    dict(sm.output.items()),
    sm.threads,
)
