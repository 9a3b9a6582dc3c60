from topotrain.jobs import run_analysis_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
params = {**sm.params.run, **sm.params.analysis}
run_analysis_job(dict(sm.input.items()), params, dict(sm.output.items()))
