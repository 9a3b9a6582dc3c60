from topotrain.jobs import fetch_pythia_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
fetch_pythia_job(sm.params.model, sm.params.step, sm.output[0])
