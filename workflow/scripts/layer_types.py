from topotrain.jobs import layer_types_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
layer_types_job(
    dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()), sm.threads
)
