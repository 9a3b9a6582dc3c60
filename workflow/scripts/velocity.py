from topotrain.jobs import velocity_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
velocity_job(sm.input[0], dict(sm.output.items()))
