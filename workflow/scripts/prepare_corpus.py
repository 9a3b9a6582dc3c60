from topotrain.jobs import prepare_corpus_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
prepare_corpus_job(sm.params.corpus, dict(sm.output.items()))
