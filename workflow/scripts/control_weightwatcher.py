from topotrain.jobs import control_weightwatcher_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
control_weightwatcher_job(list(sm.input), sm.params.ww, sm.output[0])
