from topotrain.jobs import run_released_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
run_released_job(list(sm.input), sm.output[0])
