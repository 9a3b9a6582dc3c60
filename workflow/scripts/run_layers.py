from topotrain.jobs import run_layers_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
run_layers_job(
    list(sm.input),
    sm.params.options,
    sm.wildcards.run,
    sm.output[0],
    sm.params.entry,
    sm.params.first,
)
