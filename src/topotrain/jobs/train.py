"""Jobs of workflow/rules/train.smk: one training per (model, seed), alone or as one member of
its model's ensemble."""

from __future__ import annotations

from topotrain.jobs.common import log


def train_model_job(
    model: str,
    arch: dict,
    train: dict,
    train_bin: str,
    val_bin: str,
    out: dict,
    state_dir: str,
    threads: int = 1,
    seeds: list[int] | None = None,
) -> None:
    """Train one (model, seed) into the folder of ``out`` (checkpoints, metrics, evals); errors
    are re-raised with the model's name in front. With ``train["ensemble"]``, the seed is one
    member of its model's ensemble over ``seeds`` (the rule's roster: devices.Roster)."""
    from topotrain.config import checkpoint_steps
    from topotrain.jobs.common import out_folder
    from topotrain.training.cohort import train_member
    from topotrain.training.model import GPTConfig
    from topotrain.training.run_state import published_files
    from topotrain.training.train import TrainConfig, train_model

    out_dir = out_folder(out, lambda folder: published_files(folder, checkpoint_steps(train)))

    model_cfg = GPTConfig.from_study(arch, arch["context"], arch["vocab_size"])
    cfg = TrainConfig(**{**train, "threads": threads})
    log.info("training %s (seed %d) → %s", model, cfg.seed, out_dir)
    try:
        paths = (train_bin, val_bin, out_dir, state_dir)
        if cfg.ensemble:
            train_member(model_cfg, cfg, paths, seeds or [])
        else:
            train_model(model_cfg, cfg, *paths)
    except (RuntimeError, ValueError) as err:
        raise type(err)(f"model {model}, seed {cfg.seed}: {err}") from err


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def train_model_rule(sm) -> None:
    train_model_job(
        model=sm.wildcards.model,
        arch=sm.params.arch,
        train=sm.params.train,
        train_bin=sm.input.train,
        val_bin=sm.input.validation,
        out=dict(sm.output.items()),
        state_dir=sm.params.state_dir,
        threads=sm.threads,
        seeds=list(sm.params.roster.seeds),  # not a rerun trigger: devices.Roster
    )
