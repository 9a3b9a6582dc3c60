from topotrain.jobs import scaling_fits_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
scaling_fits_job(sm.input[0], dict(sm.params.items()), dict(sm.output.items()))
