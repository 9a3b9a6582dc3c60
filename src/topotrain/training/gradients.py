"""Gradient-space topology of a checkpoint, without touching training.

A checkpoint's gradient is taken on a fixed probe batch: ``batch_size`` windows of the training
split at offsets drawn by a ``torch.Generator`` seeded with ``seed`` (the same windows at every
checkpoint of every run), in eval mode (as the training job evaluates), with the training loss
(mean next-character cross-entropy). The gradient matrices of the configured layers then get the
same per-layer topology as the weights (``topology.layers.layer_records``: neural persistence and
Vietoris–Rips of the rows); the job (``jobs.topology``) writes it as a record + diagrams beside
the weights' ones.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import torch

from topotrain.topology.record import record
from topotrain.topology.settings import TopologySettings
from topotrain.training.model import GPT
from topotrain.training.run_state import load_checkpoint
from topotrain.training.train import load_tokens
from topotrain.training.windows import get_batch, sample_offsets

log = logging.getLogger(__name__)


def probe_offsets(n_tokens: int, block_size: int, batch_size: int, seed: int) -> torch.Tensor:
    """The probe batch's window starts: ``batch_size`` offsets drawn with ``seed``."""
    if batch_size < 1:
        raise ValueError(f"topology.gradients.batch_size must be >= 1, got {batch_size}")
    gen = torch.Generator().manual_seed(seed)
    return sample_offsets(n_tokens, block_size, (batch_size,), gen)


def probe_gradients(
    model: GPT, tokens: torch.Tensor, offsets: torch.Tensor
) -> tuple[dict[str, np.ndarray], float]:
    """∂loss/∂θ for every parameter (float64, by name; a tied matrix once, under its first name)
    and the probe loss, with the model in eval mode."""
    model.eval()
    model.zero_grad(set_to_none=True)
    x, y = get_batch(tokens, offsets, model.config.block_size)
    _, loss = model(x, y)
    loss.backward()
    grads = {
        name: p.grad.detach().cpu().numpy().astype(np.float64)
        for name, p in model.named_parameters()
        if p.grad is not None
    }
    return grads, float(loss.item())


def gradient_topology(
    checkpoint: str | Path,
    train_tokens: str | Path | torch.Tensor,
    patterns,
    batch_size: int,
    seed: int,
    topology: TopologySettings | dict,
    n_threads: int | None = None,
) -> tuple[dict, dict[str, np.ndarray]]:
    """The record {"checkpoint", "params", "probe_loss", "layers"} and the diagrams of one
    checkpoint's probe-batch gradients; ``topology``: the record's settings
    (``TopologySettings.from_config``: settings or a mapping; ``n_threads``, when given, its
    threads); the record's params are the Record's with the probe batch's.
    ``train_tokens``: the training split's file, or its tokens already loaded (``probe_tokens``)."""
    model, step = load_checkpoint(checkpoint)
    tokens = (
        probe_tokens(train_tokens, model) if isinstance(train_tokens, (str, Path)) else train_tokens
    )
    offsets = probe_offsets(len(tokens), model.config.block_size, batch_size, seed)
    grads, loss = probe_gradients(model, tokens, offsets)
    if not np.isfinite(loss):
        raise ValueError(f"{checkpoint}: probe loss is {loss}: the checkpoint's weights diverged")
    settings = TopologySettings.from_config(topology, n_threads=n_threads)
    rec = record(grads, patterns, settings, source=f"gradients of checkpoint {checkpoint}")
    params = {**rec.params, "batch_size": batch_size, "probe_seed": seed}
    doc = {"checkpoint": str(checkpoint), "step": step, "params": params, "probe_loss": loss}
    return {**doc, "layers": rec.layers}, rec.diagrams


def probe_tokens(train_tokens: str | Path, model: GPT) -> torch.Tensor:
    """The training split's tokens, checked against the model's vocabulary and context."""
    return torch.from_numpy(np.array(load_tokens(train_tokens, model.config), dtype=np.uint8))
