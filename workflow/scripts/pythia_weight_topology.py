from topotrain.jobs import pythia_weight_topology_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
pythia_weight_topology_job(sm.input[0], sm.params.weights, sm.output[0])
