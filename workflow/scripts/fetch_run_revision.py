from topotrain.jobs import fetch_run_revision_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
fetch_run_revision_job(sm.params.repo, sm.params.revision, sm.params.step, sm.output[0])
