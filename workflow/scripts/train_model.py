from topotrain.jobs import train_model_job
from topotrain.logs import setup_logging

sm = snakemake  # noqa: F821 - injected by Snakemake
setup_logging(sm.log[0])
train_model_job(
    model=sm.wildcards.model,
    arch=sm.params.arch,
    train=sm.params.train,
    train_bin=sm.input.train,
    val_bin=sm.input.validation,
    out=dict(sm.output.items()),
    state_dir=sm.params.state_dir,
    threads=sm.threads,
    seeds=sm.config["seeds"],
)
