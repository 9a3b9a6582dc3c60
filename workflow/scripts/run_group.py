from topotrain.jobs import run_group_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
run_group_job(
    {"tables": list(sm.input.tables), "probes": list(sm.input.probes)},
    dict(sm.params.items()),
    dict(sm.output.items()),
)
