from topotrain.jobs import pythia_embedding_tables_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
inputs = {"records": list(sm.input.records), "diagrams": list(sm.input.diagrams)}
pythia_embedding_tables_job(inputs, dict(sm.params.items()), dict(sm.output.items()))
