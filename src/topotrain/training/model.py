"""A small decoder-only GPT (nanoGPT style): pre-LayerNorm blocks, learned positions, tied head.

Parameter count (vocab V, context T, width d, L layers): (V + T)·d + L·(12d² + 13d) + 2d; the
language-model head shares its weight with the token embedding and is counted once.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F

from topotrain.config import VOCAB_SIZE, choices
from topotrain.training.attention import causal_attention

log = logging.getLogger(__name__)

GELU_CHOICES = choices("train", "gelu")  # exact erf GELU (the paper's) or its tanh approximation


@dataclass(frozen=True)
class GPTConfig:
    """Architecture of one model: layers, heads, width, vocabulary and context length."""

    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int = VOCAB_SIZE
    block_size: int = 128

    @classmethod
    def from_study(cls, arch: dict, context: int, vocab_size: int = VOCAB_SIZE) -> GPTConfig:
        """The one translation of the config's words (``models:`` d_model, n_layer, n_head and
        ``context:``) into the model's (n_embd, n_layer, n_head, block_size)."""
        return cls(
            n_layer=arch["n_layer"],
            n_head=arch["n_head"],
            n_embd=arch["d_model"],
            vocab_size=vocab_size,
            block_size=context,
        )

    def __post_init__(self) -> None:
        for name in ("n_layer", "n_head", "n_embd", "vocab_size", "block_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"GPTConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd={self.n_embd} is not divisible by n_head={self.n_head}")


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused q/k/v projection; ``attention`` names the
    kernel (``topotrain.training.attention``: sdpa, the stock one, or numba)."""

    def __init__(self, config: GPTConfig, attention: str = "sdpa") -> None:
        super().__init__()
        self.n_head, self.attention = config.n_head, attention
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(causal_attention(self.c_attn(x), self.n_head, self.attention))


class MLP(nn.Module):
    """Position-wise feed-forward network d → 4d → d with GELU (``gelu``: exact erf, the paper's,
    or tanh, its faster approximation)."""

    def __init__(self, config: GPTConfig, gelu: str = "exact") -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.gelu = nn.GELU(approximate="tanh" if gelu == "tanh" else "none")
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, config: GPTConfig, attention: str = "sdpa", gelu: str = "exact") -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config, attention)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config, gelu)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Token + position embeddings, ``n_layer`` blocks, final LayerNorm, head tied to ``wte``.

    ``attention`` and ``gelu`` choose kernels, not parameters: the defaults are the stock path
    (SDPA, exact GELU); a run's choices are set per model, never on the class.
    """

    def __init__(self, config: GPTConfig, attention: str = "sdpa", gelu: str = "exact") -> None:
        if gelu not in GELU_CHOICES:
            raise ValueError(f"gelu must be one of {GELU_CHOICES}, got {gelu!r}")
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                h=nn.ModuleList([Block(config, attention, gelu) for _ in range(config.n_layer)]),
                ln_f=nn.LayerNorm(config.n_embd),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # weight tying
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):  # residual projections, GPT-2 scaling
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        log.info("GPT %s: %d parameters", config, self.num_params())

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        """Number of distinct parameters (the tied head/embedding weight counted once)."""
        return sum(p.numel() for p in self.parameters())

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (B, T, vocab) for token ids (B, T); loss = mean cross-entropy if targets given."""
        T = idx.shape[1]
        if T > self.config.block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        pos = torch.arange(T, device=idx.device)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss


def compile_error(device: torch.device) -> str | None:
    """Why ``torch.compile`` cannot build kernels on ``device`` (inductor needs a C++ compiler on
    CPU, Triton on CUDA), found by compiling a probe; None when it can."""
    try:
        torch.compile(lambda t: torch.relu(t) + 1, dynamic=False)(torch.ones(8, device=device))
    except Exception as err:  # any failure means: run eagerly
        lines = str(err).strip().splitlines()
        return lines[0] if lines else type(err).__name__
    return None


def compile_model(model: GPT, device: torch.device) -> Callable:
    """``model`` through ``torch.compile`` with static shapes, so each input shape and grad mode
    gets its own graph whatever the order of first calls (a resumed run compiles the same kernels).

    CPU: deterministic algorithms (inductor then never accumulates gradients with atomic adds, so
    runs with several threads stay bit-identical). CUDA: CUDA graphs ("reduce-overhead").
    """
    if device.type != "cuda":
        torch.use_deterministic_algorithms(True, warn_only=True)
        return torch.compile(model, dynamic=False)
    compiled = torch.compile(model, mode="reduce-overhead", dynamic=False)

    def forward(*args: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        torch.compiler.cudagraph_mark_step_begin()  # the last step's graph outputs are not read
        return compiled(*args)

    return forward
