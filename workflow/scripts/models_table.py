from topotrain.jobs import models_table_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
models_table_job(sm.input[0], dict(sm.output.items()))
