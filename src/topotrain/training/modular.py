"""The grokking control: a one-layer transformer learning a + b mod p (Nanda et al., ICLR 2023).

Every pair (a, b) of residues is one example, the sequence ``a b =`` (token p is ``=``); a seeded
permutation puts ``train_frac`` of the p² pairs in the training set and the rest in the test set.
Training is full batch: AdamW on the mean cross-entropy of the answer at the last position. Every
``interval`` steps (step 0 included) the weights go to ``step_NNNNN.safetensors`` (atomic,
canonical bytes) and the train/test loss and accuracy to a row of ``metrics.csv``. On the CPU with
one thread the run is bit-identical for a given config, and a killed run resumes from its last
checkpoint to the same bytes.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from topotrain.config import DEFAULTS, check_settings
from topotrain.io import atomic_save_safetensors, atomic_torch_save
from topotrain.training.numerics import run_numerics
from topotrain.training.run_state import (
    METRICS_FILE,
    RESUME,  # model, optimizer, step, metrics at the last checkpoint
    checkpoint_name,
    write_csv,
)

METRICS = ("step", "train_loss", "test_loss", "train_acc", "test_acc")
ATTENTION = "mha"  # torch's nn.MultiheadAttention, the numerics' attention field


_CONTROL = DEFAULTS["control"]  # the schema's defaults


@dataclass(frozen=True)
class ControlConfig:
    """The control's knobs (defaults and checks: the schema's ``control:``); a bad one raises
    ValueError naming ``control.<knob>``."""

    p: int = _CONTROL["p"]
    train_frac: float = _CONTROL["train_frac"]
    width: int = _CONTROL["width"]
    heads: int = _CONTROL["heads"]
    mlp: int = _CONTROL["mlp"]
    steps: int = _CONTROL["steps"]
    interval: int = _CONTROL["interval"]
    lr: float = _CONTROL["lr"]
    weight_decay: float = _CONTROL["weight_decay"]
    beta2: float = _CONTROL["beta2"]
    seed: int = _CONTROL["seeds"][0]

    def __post_init__(self) -> None:
        check_settings("control", self)


def split_pairs(p: int, train_frac: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, test) rows of (a, b, (a + b) mod p), a seeded split of all p² pairs."""
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    pairs = torch.stack([a.ravel(), b.ravel(), (a.ravel() + b.ravel()) % p], dim=1)
    order = torch.randperm(p * p, generator=torch.Generator().manual_seed(seed))
    cut = int(round(train_frac * p * p))
    return pairs[order[:cut]], pairs[order[cut:]]


class ModularTransformer(nn.Module):
    """Embedding (p + 1 tokens) + positions (3), one pre-norm-free block (attention, ReLU MLP),
    unembedding to p residues; logits at the ``=`` position."""

    def __init__(self, cfg: ControlConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.p + 1, cfg.width)
        self.pos = nn.Parameter(torch.randn(3, cfg.width) / math.sqrt(cfg.width))
        self.attn = nn.MultiheadAttention(cfg.width, cfg.heads, bias=False, batch_first=True)
        self.mlp = nn.Sequential(
            nn.Linear(cfg.width, cfg.mlp), nn.ReLU(), nn.Linear(cfg.mlp, cfg.width)
        )
        self.unembed = nn.Linear(cfg.width, cfg.p, bias=False)
        self.equals = cfg.p

    def forward(self, ab: torch.Tensor) -> torch.Tensor:
        tokens = torch.cat([ab, torch.full_like(ab[:, :1], self.equals)], dim=1)
        x = self.embed(tokens) + self.pos
        x = x + self.attn(x, x, x, need_weights=False)[0]
        x = x + self.mlp(x)
        return self.unembed(x[:, -1])


def evaluate(model: ModularTransformer, rows: torch.Tensor) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of the answers ``rows[:, 2]``."""
    with torch.no_grad():
        logits = model(rows[:, :2])
        loss = nn.functional.cross_entropy(logits, rows[:, 2])
        return float(loss), float((logits.argmax(dim=1) == rows[:, 2]).float().mean())


def save_weights(model: ModularTransformer, step: int, cfg: ControlConfig, out: Path) -> None:
    """Float32 weights; metadata: step, the config and the numerics the run trains with."""
    tensors = {k: v.detach().to(torch.float32).contiguous() for k, v in model.state_dict().items()}
    numerics = run_numerics(model, compiled=False, attention=ATTENTION)
    meta = {"step": str(step), "control": repr(asdict(cfg)), "numerics": json.dumps(numerics)}
    atomic_save_safetensors(tensors, out / checkpoint_name(step), metadata=meta)


def load_weights(path: str | Path, model: ModularTransformer) -> int:
    """``save_weights``' file at ``path`` loaded into ``model``; returns its step."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as fh:
        model.load_state_dict({name: fh.get_tensor(name) for name in fh.keys()})
        return int(fh.metadata()["step"])


def _resume(path: Path, cfg: ControlConfig, model: nn.Module, opt: torch.optim.Optimizer):
    """(step, rows) saved at ``path`` with the model's and optimizer's state loaded; (0, []) when
    there is none. A state saved under another config is an error naming the file."""
    if not path.exists():
        return 0, []
    state = torch.load(path, weights_only=True)
    if state["config"] != repr(asdict(cfg)):
        raise ValueError(f"{path}: saved by another control config; delete it to start over")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    return int(state["step"]), [tuple(r) for r in state["rows"]]


def train_control(cfg: ControlConfig, out: str | Path) -> list[tuple]:
    """Train one seed; write its checkpoints and metrics.csv under ``out``; return the metric rows.

    Resumable: at every checkpoint the model, the optimizer and the rows so far go to
    ``out/resume.pt`` (atomic); a rerun after a kill continues from there and ends with the same
    bytes as an uninterrupted run; the file is removed once metrics.csv is written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(cfg.seed)
    train, test = split_pairs(cfg.p, cfg.train_frac, cfg.seed)
    model = ModularTransformer(cfg)
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, cfg.beta2)
    )
    start, rows = _resume(out / RESUME, cfg, model, opt)
    for step in range(start, cfg.steps + 1):
        if step % cfg.interval == 0 and not (rows and step == start):
            save_weights(model, step, cfg, out)
            (train_loss, train_acc), (test_loss, test_acc) = (
                evaluate(model, train),
                evaluate(model, test),
            )
            rows.append((step, train_loss, test_loss, train_acc, test_acc))
            state = {
                "config": repr(asdict(cfg)),
                "step": step,
                "rows": rows,
                "model": model.state_dict(),
                "opt": opt.state_dict(),
            }
            atomic_torch_save(state, out / RESUME)
        if step == cfg.steps:
            break
        loss = nn.functional.cross_entropy(model(train[:, :2]), train[:, 2])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    write_csv(out / METRICS_FILE, METRICS, rows)
    (out / RESUME).unlink()
    return rows
