from topotrain.jobs import associations_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
associations_job(sm.input[0], dict(sm.params.items()), dict(sm.output.items()), sm.threads)
