from topotrain.jobs import release_pythia_weights_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
release_pythia_weights_job(dict(sm.input.items()), sm.output[0])
