from topotrain.jobs import pythia_embedding_topology_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
params = dict(sm.params.embeddings, threads=sm.threads)
pythia_embedding_topology_job(sm.input.revision, sm.input.texts, params, dict(sm.output.items()))
