from topotrain.jobs import pythia_texts_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
pythia_texts_job(sm.params.corpus, sm.params.texts, sm.output[0])
