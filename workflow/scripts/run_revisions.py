from topotrain.jobs import run_revisions_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
run_revisions_job(sm.wildcards.run, dict(sm.params.entry), sm.output[0])
