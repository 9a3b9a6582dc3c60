from topotrain.jobs import control_features_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
run_dir = sm.input.metrics.rsplit("/", 1)[0]
control_features_job(
    run_dir,
    int(sm.wildcards.seed),
    sm.params.p,
    sm.params.fourier_k,
    sm.params.topology,
    dict(sm.output.items()),
)
