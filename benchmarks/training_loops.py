"""The two training loops the training benchmark compares, on the study's corpus and models.

``Project``: ``topotrain.training.train.train_steps`` set up as ``train_model`` sets it up
(``setup_device`` + ``build_training``). ``Reference``: a nanoGPT-style loop, the same GPT class in
eager
mode, default ``torch.optim.AdamW``, ``loss.backward()``, ``clip_grad_norm_``, ``optimizer.step()``,
default process settings. Both start from the same seed and draw the same batches.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from benchmarks.study import local_text, study_models
from topotrain.devices import resolve_device
from topotrain.training.model import GPT, GPTConfig
from topotrain.training.train import (
    BETAS,
    TrainConfig,
    build_training,
    lr_at,
    setup_device,
    train_steps,
    use_compile,
)

RUN_STEPS = 5000  # a study run's updates: the schedule timed, and what compile time amortises over
MODELS = study_models()


def corpus() -> np.ndarray:
    """The local-files overlay's training split (WikiText-2's test split) encoded as in the study
    (where it is absent: this repository's README, repeated to a million characters)."""
    from topotrain.sources.corpus import encode_text

    return encode_text(local_text("train", 1_000_000))[0]


class Project:
    """The project's path, set up as ``train_model`` sets it up."""

    def __init__(self, model_cfg: GPTConfig, cfg: TrainConfig, data: np.ndarray):
        device = setup_device(cfg)
        self.compiled = use_compile(cfg, device)
        self.training = build_training(model_cfg, cfg, device, data, self.compiled)
        self.cfg, self.step = cfg, 0

    def train(self, n: int) -> list[float]:
        """``n`` updates; their training losses."""
        rows = train_steps(self.training, self.cfg, self.step, self.step + n)
        self.step += n
        return [row[1] for row in rows]


class Reference:
    """The plain loop (nanoGPT's train.py): eager model, default AdamW, batches stacked per step."""

    def __init__(self, model_cfg: GPTConfig, cfg: TrainConfig, data: np.ndarray):
        torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.device = torch.device(resolve_device(cfg.device))
        self.cfg, self.compiled = cfg, False
        self.model = GPT(model_cfg).to(self.device)
        params = list(self.model.parameters())
        groups = [
            {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg.weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
        ]
        self.optimizer = torch.optim.AdamW(groups, lr=cfg.lr, betas=BETAS)
        self.gen = torch.Generator().manual_seed(cfg.seed)
        self.data, self.step = torch.from_numpy(data.astype(np.int64)), 0

    def batch(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``batch_size`` random windows of the corpus and their next tokens, on the device."""
        T = self.model.config.block_size
        ix = torch.randint(len(self.data) - T, (self.cfg.batch_size,), generator=self.gen)
        x = torch.stack([self.data[i : i + T] for i in ix])
        y = torch.stack([self.data[i + 1 : i + 1 + T] for i in ix])
        if self.device.type == "cuda":
            x, y = x.pin_memory(), y.pin_memory()
        # non_blocking by keyword: PyTorch reads a second positional argument as a dtype and
        # rejects True (what crashed `python -m benchmarks training --device cuda`)
        return x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)

    def train(self, n: int) -> list[float]:
        """``n`` updates; their training losses (one host sync at the end)."""
        losses = []
        for _ in range(n):
            x, y = self.batch()
            for group in self.optimizer.param_groups:
                group["lr"] = lr_at(self.step, self.cfg)
            _, loss = self.model(x, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            losses.append(loss.detach())
            self.step += 1
        return torch.stack(losses).tolist()


def make_trainer(loop: str, model_cfg: GPTConfig, cfg: TrainConfig) -> Project | Reference:
    """``project`` (as configured), ``eager`` (the project's path with compile off) or
    ``reference``."""
    if loop == "eager":
        return Project(model_cfg, replace(cfg, compile="false"), corpus())
    return (Project if loop == "project" else Reference)(model_cfg, cfg, corpus())
