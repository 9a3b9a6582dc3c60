from topotrain.jobs import control_analysis_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
control_analysis_job(
    list(sm.input.tables),
    dict(sm.output.items()),
    list(sm.input.ww),
    sm.params.seeds,
    sm.params.sesoi,
)
