from topotrain.jobs import calibration_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
calibration_job(dict(sm.params.items()), dict(sm.output.items()), sm.threads)
