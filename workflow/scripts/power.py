from topotrain.jobs import power_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
power_job(dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()), sm.threads)
