from topotrain.jobs import training_topology_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
training_topology_job(list(sm.input), dict(sm.params.items()), dict(sm.output.items()), sm.threads)
