from topotrain.jobs import run_diagram_series_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
run_diagram_series_job(list(sm.input), dict(sm.params.items()), dict(sm.output.items()))
