"""The ensemble's members: each seed's run as its single run starts it (resumed from its own
state), the one configuration they share, and what a run resolves and is fingerprinted under."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
from torch.optim import Optimizer

from topotrain.training.attention import resolve_attention
from topotrain.training.model import GPT, GPTConfig
from topotrain.training.run_state import clear_state, load_resume, run_fingerprint
from topotrain.training.train import (
    TrainConfig,
    build_member,
    fingerprint_settings,
    head_dim,
    setup_device,
    use_compile,
)
from topotrain.training.windows import eval_offsets

log = logging.getLogger(__name__)

ENSEMBLE = "ensemble"  # "on" in a member's fingerprint settings and numerics


@dataclass
class Member:
    """One seed's run inside the ensemble: its own model and AdamW (evaluation, its files, its
    resume file), batch RNG, validation windows, paths and rows; ``error`` once stopped."""

    cfg: TrainConfig
    model: GPT
    optimizer: Optimizer
    gen: torch.Generator
    val_offsets: torch.Tensor
    out_dir: Path
    state_dir: Path
    key: str
    metrics: list = field(default_factory=list)
    evals: list = field(default_factory=list)
    error: RuntimeError | None = None


def common_config(cfgs: list[TrainConfig], *dirs: list) -> TrainConfig:
    """The members' one configuration (seed aside); refuses configs that differ otherwise,
    repeated seeds, or a number of directories other than one per member."""
    if len({replace(c, seed=0) for c in cfgs}) != 1:
        raise ValueError("ensemble members must have identical train configs except the seed")
    if len({c.seed for c in cfgs}) != len(cfgs) or any(len(d) != len(cfgs) for d in dirs):
        raise ValueError("ensemble members need distinct seeds and one out/state dir each")
    return cfgs[0]


def build_members(
    model_cfg: GPTConfig, cfgs: list, device: torch.device, attention: str, paths: list[tuple]
) -> tuple[list[Member], int]:
    """Each member as its single run starts (``build_member``), resumed from its own state
    (``load_resume``); if the states reached different steps, all start afresh. Returns the
    members and the step reached. ``paths``: (out_dir, state_dir, fingerprint, n_val) per member."""
    members, starts = [], []
    for cfg, (out_dir, state_dir, key, n_val) in zip(cfgs, paths, strict=True):
        model, optimizer, gen = build_member(model_cfg, cfg, device, attention)
        val = eval_offsets(n_val, model_cfg.block_size, cfg)
        member = Member(cfg, model, optimizer, gen, val, Path(out_dir), Path(state_dir), key)
        member.metrics, member.evals, start = load_resume(
            member.state_dir, key, model, optimizer, gen
        )
        members.append(member)
        starts.append(start)
    if len(set(starts)) > 1:
        log.warning("ensemble members' states reached steps %s: starting all fresh", starts)
        for member in members:
            clear_state(member.state_dir)
        return build_members(model_cfg, cfgs, device, attention, paths)
    return members, starts[0]


@dataclass(frozen=True)
class Setup:
    """What a run resolves before it builds anything: device, compile, attention kernel."""

    device: torch.device
    compiled: bool
    attention: str


def ensemble_setup(model_cfg: GPTConfig, cfg: TrainConfig) -> Setup:
    """Resolve the device (and set threads, determinism), compile and kernel, as a run does."""
    device = setup_device(cfg)
    compiled = use_compile(cfg, device)
    attention = resolve_attention(cfg.attention, device, compiled, head_dim(model_cfg))
    return Setup(device, compiled, attention)


def member_key(
    model_cfg: GPTConfig, cfg: TrainConfig, setup: Setup, data: tuple, members: int | None = None
) -> str:
    """The fingerprint of a member's run (``run_fingerprint``, the ensemble marked on): what its
    published files were trained under; with ``members``, the member count too, which a resume
    file must match (the count may change a member's float rounding, not its meaning)."""
    settings = fingerprint_settings(cfg, setup.attention) | {ENSEMBLE: "on"}
    if members is not None:
        settings["members"] = members
    return run_fingerprint(model_cfg, settings, setup.device, setup.compiled, *data)
