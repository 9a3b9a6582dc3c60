from topotrain.jobs import pythia_figures_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
pythia_figures_job(dict(sm.input.items()), dict(sm.output.items()))
