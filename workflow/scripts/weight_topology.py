from topotrain.jobs import weight_topology_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
weight_topology_job(sm.input[0], sm.params.topology, dict(sm.output.items()), sm.threads)
