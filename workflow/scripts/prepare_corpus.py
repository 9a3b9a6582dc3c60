from topotrain.jobs import prepare_corpus_job
from topotrain.logs import setup_logging

setup_logging(snakemake.log[0])  # noqa: F821 - injected by Snakemake
prepare_corpus_job(snakemake.params.corpus, dict(snakemake.output.items()))  # noqa: F821
