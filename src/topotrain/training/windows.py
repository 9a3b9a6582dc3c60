"""Context windows of a token file: where training batches and validation windows start, the
batches gathered from them, and a checkpoint's evaluation.

Validation (issue 56, item 4): ``val_loss`` is the mean over eval_batches × eval_batch_size fixed
windows drawn with ``train.eval_seed`` (``eval_offsets``), never the run's seed, so every seed of
a model, single run or ensemble member, and every model of the same context is scored on the same
windows; ``val_loss_full`` (``full_val_loss``) is over every non-overlapping window of the whole
split, at every ``train.full_eval_every``-th checkpoint and the last (``full_eval_steps``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch

from topotrain.training.model import GPT

if TYPE_CHECKING:
    from topotrain.training.train import TrainConfig


def sample_offsets(
    n_tokens: int, block_size: int, shape: tuple[int, ...], gen: torch.Generator
) -> torch.Tensor:
    """Uniform window starts in [0, n_tokens − block_size) so that targets stay inside the data."""
    return torch.randint(n_tokens - block_size, shape, generator=gen)


def device_tokens(data: np.ndarray, device: torch.device) -> torch.Tensor:
    """The whole token file as a uint8 tensor on ``device`` (batches are then gathered there)."""
    return torch.from_numpy(np.array(data, dtype=np.uint8)).to(device)


def get_batch(
    tokens: torch.Tensor, offsets: torch.Tensor, block_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs x = tokens[i : i+T] and targets y = tokens[i+1 : i+T+1] for each offset i, as int64
    on the tokens' device; the offsets (drawn on the CPU) are copied there without a host sync."""
    if tokens.device.type == "cuda" and offsets.device.type == "cpu":
        offsets = offsets.pin_memory()
    offsets = offsets.to(tokens.device, non_blocking=True)
    span = torch.arange(block_size + 1, device=tokens.device)
    window = tokens[offsets[:, None] + span].long()
    return window[:, :-1], window[:, 1:]


def eval_offsets(n_tokens: int, block_size: int, cfg: TrainConfig) -> torch.Tensor:
    """The fixed validation windows, (eval_batches, eval_batch_size), drawn by ``sample_offsets``
    from a generator seeded ``cfg.eval_seed``, never the run's seed: every seed of a model (single
    run or ensemble member) and every model of the same context is validated on the same windows,
    so the windows add nothing to a seed's ``val_loss`` deviation (issue 56, item 4; before, each
    run drew its own with seed + 1: ``benchmarks/eval_windows.py`` measures what that added)."""
    gen = torch.Generator().manual_seed(cfg.eval_seed)
    return sample_offsets(n_tokens, block_size, (cfg.eval_batches, cfg.eval_batch_size), gen)


def full_offsets(n_tokens: int, block_size: int) -> torch.Tensor:
    """Every non-overlapping window of a split: starts 0, T, 2T, … , (n − 1) // T of them, so each
    window's targets stay inside the data; together they score every token but the last
    (n − 1) mod T targets."""
    count = (n_tokens - 1) // block_size
    if count < 1:
        raise ValueError(f"n_tokens={n_tokens}: need more than block_size={block_size} tokens")
    return torch.arange(count) * block_size


@torch.no_grad()
def full_val_loss(model: GPT, tokens: torch.Tensor, batch_size: int) -> float:
    """Mean cross-entropy (nats/token) over every target of ``full_offsets`` (the whole split),
    ``batch_size`` windows at a time (the last batch may be smaller: each batch weighted by its
    windows, summed in float64); eager, one host sync."""
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: must be at least 1")
    T = model.config.block_size
    offsets = full_offsets(len(tokens), T)
    was_training = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=tokens.device)
    for chunk in offsets.split(batch_size):
        total += model(*get_batch(tokens, chunk, T))[1].double() * len(chunk)
    model.train(was_training)
    return (total / len(offsets)).item()


def evaluate(
    model: GPT, tokens: torch.Tensor, offsets: torch.Tensor, full: bool, batch_size: int
) -> tuple[float, float]:
    """A checkpoint's evaluation: (val_loss on the fixed windows ``offsets``, val_loss_full on the
    whole split when ``full``, else NaN); the single run's and each ensemble member's."""
    val_loss = estimate_val_loss(model, tokens, offsets)
    return val_loss, full_val_loss(model, tokens, batch_size) if full else math.nan


@torch.no_grad()
def estimate_val_loss(model: GPT, tokens: torch.Tensor, offsets: torch.Tensor) -> float:
    """Mean cross-entropy (nats/token) over all windows in ``offsets`` (rows are batches); eager,
    one host sync."""
    was_training = model.training
    model.eval()
    losses = [model(*get_batch(tokens, row, model.config.block_size))[1] for row in offsets]
    model.train(was_training)
    return torch.stack(losses).mean().item()
