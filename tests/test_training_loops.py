"""The training benchmark's reference loop (benchmarks/training_loops.py) draws its batches on the
CPU and moves them with ``.to(device, non_blocking=True)``: the call PyTorch accepts (a positional
True is read as a dtype and rejected, which crashed ``python -m benchmarks training --device
cuda``)."""

from __future__ import annotations

import numpy as np
import torch

from benchmarks.training_loops import Reference
from topotrain.training.model import GPTConfig
from topotrain.training.train import TrainConfig


def test_the_reference_loop_moves_its_batches_and_targets_are_inputs_shifted_by_one():
    data = (np.arange(500) % 128).astype(np.uint8)
    cfg = TrainConfig(
        steps=4, batch_size=4, warmup_steps=1, checkpoint_interval=2, device="cpu", threads=1
    )
    loop = Reference(GPTConfig(block_size=8, n_layer=1, n_head=1, n_embd=8), cfg, data)
    x, y = loop.batch()
    assert x.shape == y.shape == (4, 8) and x.device == torch.device("cpu")
    assert torch.equal(y, (x + 1) % 128)  # the corpus counts up: the next token is one more
    assert np.isfinite(loop.train(2)).all()
