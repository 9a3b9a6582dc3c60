from topotrain.jobs import models_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
models_job(sm.input[0], dict(sm.output.items()))
