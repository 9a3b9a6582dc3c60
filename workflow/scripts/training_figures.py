from topotrain.jobs import training_figures_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
training_figures_job(sm.input[0], dict(sm.output.items()))
