from topotrain.jobs import train_control_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
out_dir = sm.output.metrics.rsplit("/", 1)[0]
train_control_job(sm.params.control, int(sm.wildcards.seed), out_dir, sm.threads)
