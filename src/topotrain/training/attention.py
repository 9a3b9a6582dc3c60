"""Causal self-attention for tiny heads on CPU: a numba kernel per (batch, head) tile.

PyTorch's CPU flash attention is slow at head dims of 8–12: it spends most of a small model's step
there (``python -m benchmarks training --profile``). ``TinyHeadAttention`` computes the same thing
per (batch, head) tile, with the 128 × 128 scores of a tile kept in cache: causal rows only, two
query rows at a time, keys and values transposed so that every inner loop runs over keys,
contiguous, and compiled for each head dim in ``KERNEL_HEAD_DIMS`` (8, 12, 16). The forward keeps
the attention probabilities for the backward (B·H·T² floats per layer).

It reads the fused q/k/v projection (B, T, 3C) and writes (B, T, C) directly, so neither the heads'
transposes nor their copies are needed. It runs on one thread (``numba_error``), so its result does
not depend on ``train.threads``. Backends (``train.attention``):

- ``sdpa``: ``torch.nn.functional.scaled_dot_product_attention`` (the stock path; CUDA, compile);
- ``numba``: this kernel (CPU, head dims 8, 12 or 16; needs the numba wheel);
- ``auto``: ``numba`` on CPU without ``torch.compile`` for head dims 8 and 12 when numba imports,
  else ``sdpa`` (at head dim 16 the two were level: benchmarks/attention.py).

The ensemble trainer (``training.ensemble``) vmaps the model over its members; there the numba
backend runs as ``MemberAttention``, which folds the member axis into the kernel's batch.
"""

from __future__ import annotations

import math
import os
import sys
from functools import cache

import torch
from torch.nn import functional as F

from topotrain.config import choices

ATTENTION_CHOICES = choices("train", "attention")  # the schema's
KERNEL_HEAD_DIMS = (8, 12, 16)  # the head dims the kernel is compiled for (attention_kernels)
AUTO_MAX_HEAD_DIM = 12  # auto picks numba up to this head dim: where it beat SDPA (benchmarks)


@cache
def numba_error() -> str | None:
    """Why the numba kernel cannot run here (numba missing or broken); None when it can.

    The kernel runs on one numba thread, whatever ``train.threads``: its pool is sized to 1 before
    numba is first imported (a wider pool spins between calls, which halved the throughput of two
    1-thread training jobs on 2 cores, and two threads gave results that differed between
    processes).
    """
    if "numba" not in sys.modules:
        os.environ["NUMBA_NUM_THREADS"] = "1"
    try:
        import numba  # noqa: F401
    except Exception as err:  # ImportError, or a numba built for another numpy
        return f"numba is not importable ({type(err).__name__}: {err}); pip install numba"
    return None


def resolve_attention(
    choice: str, device: torch.device, compiled: bool = False, head_dim: int = AUTO_MAX_HEAD_DIM
) -> str:
    """The backend a run uses: ``sdpa`` or ``numba`` (see the module docstring); ``auto`` takes
    numba only for heads of a compiled size up to AUTO_MAX_HEAD_DIM dimensions."""
    if choice not in ATTENTION_CHOICES:
        raise ValueError(f"train.attention must be one of {ATTENTION_CHOICES}, got {choice!r}")
    if choice == "sdpa":
        return "sdpa"
    if choice == "auto":
        fits = device.type == "cpu" and not compiled and head_dim <= AUTO_MAX_HEAD_DIM
        fits = fits and head_dim in KERNEL_HEAD_DIMS
        return "numba" if fits and numba_error() is None else "sdpa"
    if device.type != "cpu" or compiled:
        raise ValueError(
            "train.attention: numba runs on CPU without torch.compile; this run is on "
            f"{device.type}{' with train.compile' if compiled else ''}: use auto or sdpa"
        )
    if head_dim not in KERNEL_HEAD_DIMS:
        raise ValueError(
            f"train.attention: numba is compiled for head dims {KERNEL_HEAD_DIMS}; this model's "
            f"is {head_dim} (d_model / n_head): use auto or sdpa"
        )
    if numba_error():
        raise ValueError(f"train.attention: numba: {numba_error()}")
    return "numba"


@cache
def kernels(head_dim: int):
    """The forward and backward kernels for ``head_dim`` (numba; compiled on first use, cached on
    disk)."""
    import numba

    from topotrain.training.attention_kernels import KERNELS

    threads = torch.get_num_threads()
    # set_num_threads launches numba's pool when numba was imported before numba_error sized it
    # (by another library: arch, a user's code). Launching a pool of more than one thread starts
    # an OpenMP runtime that resets the process's OpenMP thread count, so torch's own ops ran on
    # another number of threads, with other bits, until the next torch.set_num_threads: put
    # torch's count back, whatever was imported first.
    numba.set_num_threads(1)
    torch.set_num_threads(threads)
    if head_dim not in KERNELS:
        raise ValueError(f"numba attention: head dim {head_dim} is not one of {KERNEL_HEAD_DIMS}")
    return KERNELS[head_dim]


class TinyHeadAttention(torch.autograd.Function):
    """Causal attention of a fused (B, T, 3C) q/k/v tensor → (B, T, C), float32 on CPU."""

    @staticmethod
    def forward(ctx, qkv: torch.Tensor, n_head: int) -> torch.Tensor:
        qkv = qkv.detach().contiguous()
        B, T, C3 = qkv.shape
        forward, _ = kernels(C3 // 3 // n_head)
        y = torch.empty(B, T, C3 // 3, dtype=qkv.dtype)
        save = ctx.needs_input_grad[0]
        probs = torch.empty((B, n_head, T, T) if save else (1, 1, 1, 1), dtype=qkv.dtype)
        with torch.profiler.record_function("tiny_head_attention"):
            forward(qkv.numpy(), n_head, y.numpy(), probs.numpy(), save)
        if save:
            ctx.save_for_backward(qkv, probs)
        ctx.n_head = n_head
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, None]:
        qkv, probs = ctx.saved_tensors
        _, backward = kernels(qkv.shape[2] // 3 // ctx.n_head)
        dqkv = torch.empty_like(qkv)
        with torch.profiler.record_function("tiny_head_attention_backward"):
            backward(qkv.numpy(), probs.numpy(), dy.contiguous().numpy(), ctx.n_head, dqkv.numpy())
        return dqkv, None


class MemberAttention(torch.autograd.Function):
    """``TinyHeadAttention`` for ``torch.func.vmap`` over an ensemble's members: under vmap the
    member axis is folded into the batch, (M, B, T, 3C) → (M·B, T, 3C), and the kernel runs once;
    its (batch, head) tiles are independent, so each member's output and gradient are bit-identical
    to its own call. Outside vmap it is ``TinyHeadAttention``, the backward recomputing the forward
    (a functorch-style Function keeps only its inputs and outputs)."""

    @staticmethod
    def forward(qkv: torch.Tensor, n_head: int) -> torch.Tensor:
        return TinyHeadAttention.apply(qkv, n_head)

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        qkv, ctx.n_head = inputs
        ctx.save_for_backward(qkv)

    @staticmethod
    def backward(ctx, dy: torch.Tensor) -> tuple[torch.Tensor, None]:
        (qkv,) = ctx.saved_tensors
        with torch.enable_grad():
            x = qkv.detach().requires_grad_(True)
            (dqkv,) = torch.autograd.grad(TinyHeadAttention.apply(x, ctx.n_head), x, dy)
        return dqkv, None

    @staticmethod
    def vmap(info, in_dims: tuple, qkv: torch.Tensor, n_head: int) -> tuple[torch.Tensor, int]:
        qkv = qkv.movedim(in_dims[0], 0)
        y = TinyHeadAttention.apply(qkv.flatten(0, 1), n_head)
        return y.unflatten(0, qkv.shape[:2]), 0


MEMBER_NUMBA = "numba-members"  # the numba kernel as the ensemble's vmapped members call it
# SDPA as the ensemble's vmapped members call it on CUDA: its math written out (matmul, causal
# mask, softmax, matmul). The fused kernels' vmap rule fails there in the backward (PyTorch 2.11,
# H200: "LSE is not correctly aligned (strideH)"); at head dims 8–12 the math costs nothing much.
MEMBER_SDPA = "sdpa-members"


def member_backend(attention: str, device: torch.device) -> str:
    """The kernel an ensemble's stacked model calls for a member's resolved ``attention``."""
    if attention == "numba":
        return MEMBER_NUMBA
    return MEMBER_SDPA if attention == "sdpa" and device.type == "cuda" else attention


def causal_attention(qkv: torch.Tensor, n_head: int, backend: str = "sdpa") -> torch.Tensor:
    """Multi-head causal attention of the fused projection ``qkv`` (B, T, 3C) → (B, T, C)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    if backend in ("numba", MEMBER_NUMBA):
        if qkv.device.type != "cpu" or qkv.dtype != torch.float32:
            raise ValueError(
                f"numba attention needs float32 on CPU, got {qkv.dtype} on {qkv.device}"
            )
        kernel = MemberAttention if backend == MEMBER_NUMBA else TinyHeadAttention
        return kernel.apply(qkv, n_head)
    q, k, v = (z.view(B, T, n_head, C // n_head).transpose(1, 2) for z in qkv.split(C, dim=2))
    if backend == MEMBER_SDPA:
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // n_head))
        causal = torch.ones(T, T, dtype=torch.bool, device=qkv.device).tril()
        y = att.masked_fill(~causal, float("-inf")).softmax(dim=-1) @ v
    else:
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).contiguous().view(B, T, C)
