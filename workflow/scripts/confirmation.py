from topotrain.jobs import confirmation_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
confirmation_job(
    sm.input.hypotheses, sm.input.table, dict(sm.params.items()), dict(sm.output.items())
)
