from topotrain.jobs import train_control_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
train_control_job(sm.params.control, int(sm.wildcards.seed), dict(sm.output.items()), sm.threads)
