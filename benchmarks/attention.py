"""Benchmark: one layer's causal attention, forward + backward, at the study's tiny head dims.

The project's kernel (``topotrain.training.attention.TinyHeadAttention``, numba, on the fused
q/k/v tensor) against the stock path: PyTorch's ``scaled_dot_product_attention`` (flash on CPU)
with the heads split and transposed as the stock model does it, and against every head's scores
in batched matrix products (``batched``: q·kᵀ, the causal mask, softmax, ·v; issue 59's third
way). Batch 64, 4 heads, T = 128, one thread; the paths alternate, and each time is the median of
its repetitions. Outputs and input gradients must agree within a relative norm error of 1e-5.

    python -m benchmarks attention            # head dims 8, 12, 16
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
from torch.nn import functional as F

from benchmarks.study import rows_at_threads
from topotrain.training.attention import TinyHeadAttention, numba_error

TOLERANCE = 1e-5  # relative norm error of outputs and gradients
BATCH, HEADS, T = 64, 4, 128


def stock(qkv: torch.Tensor, n_head: int) -> torch.Tensor:
    """The stock model's attention: split, transpose to heads, SDPA, transpose back."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    q, k, v = (z.view(B, T, n_head, C // n_head).transpose(1, 2) for z in qkv.split(C, dim=2))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return y.transpose(1, 2).contiguous().view(B, T, C)


def batched(qkv: torch.Tensor, n_head: int) -> torch.Tensor:
    """Every head's full T × T scores in batched matrix products: q·kᵀ/√D, the causal mask,
    softmax, then ·v (the eager math SDPA's fallback writes out)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    q, k, v = (z.view(B, T, n_head, C // n_head).transpose(1, 2) for z in qkv.split(C, dim=2))
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(C // n_head)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    y = scores.masked_fill(future, float("-inf")).softmax(-1) @ v
    return y.transpose(1, 2).contiguous().view(B, T, C)


def kernel(qkv: torch.Tensor, n_head: int) -> torch.Tensor:
    """The project's attention on the fused q/k/v tensor."""
    return TinyHeadAttention.apply(qkv, n_head)


def fwd_bwd(fn, qkv: torch.Tensor, dy: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
    """Seconds for one forward + backward, the output and the input gradient."""
    x = qkv.detach().requires_grad_(True)
    start = time.perf_counter()
    y = fn(x, HEADS)
    y.backward(dy)
    return time.perf_counter() - start, y.detach(), x.grad


def measure(head_dim: int, reps: int = 15) -> dict:
    """One row: median ms of each path, their ratio, and the relative errors."""
    gen = torch.Generator().manual_seed(head_dim)
    C = HEADS * head_dim
    qkv = torch.randn(BATCH, T, 3 * C, generator=gen)
    dy = torch.randn(BATCH, T, C, generator=gen)
    paths = {"project": kernel, "reference": stock, "batched": batched}
    for fn in paths.values():  # compile (numba), warm caches
        fwd_bwd(fn, qkv, dy)
    times: dict[str, list[float]] = {name: [] for name in paths}
    got = {}
    for _ in range(reps):
        for name, fn in paths.items():
            t, y, g = fwd_bwd(fn, qkv, dy)
            times[name].append(t)
            got[name] = (y, g)
    ms = {name: 1e3 * float(np.median(t)) for name, t in times.items()}
    project_ms, reference_ms = ms["project"], ms["reference"]
    y_ref, g_ref = got["reference"]

    def errors(name: str) -> tuple[float, float]:
        y, g = got[name]
        return float((y - y_ref).norm() / y_ref.norm()), float((g - g_ref).norm() / g_ref.norm())

    (out_err, grad_err), (batched_out, batched_grad) = errors("project"), errors("batched")
    return {
        "benchmark": "attention",
        "model": f"head_dim {head_dim}",
        "head_dim": head_dim,
        "batch": BATCH,
        "heads": HEADS,
        "context": T,
        "threads": torch.get_num_threads(),
        "project_ms": round(project_ms, 2),
        "reference_ms": round(reference_ms, 2),
        "speedup": round(reference_ms / project_ms, 3),
        "out_rel_err": out_err,
        "grad_rel_err": grad_err,
        "equal": out_err <= TOLERANCE and grad_err <= TOLERANCE,
        "batched_ms": round(ms["batched"], 2),
        "batched_equal": max(batched_out, batched_grad) <= TOLERANCE,
    }


def run(head_dims: tuple[int, ...] = (8, 12, 16), progress=print) -> list[dict]:
    """One row per head dim at one thread (none if numba is missing: the project then uses SDPA)."""
    if numba_error():
        progress(f"attention: skipped, {numba_error()}")
        return []
    return rows_at_threads(1, [(d,) for d in head_dims], measure, line, progress)


def line(r: dict) -> str:
    """A row as one progress line."""
    return (
        f"attention head_dim {r['head_dim']:>2}: kernel {r['project_ms']:.1f} ms, SDPA "
        f"{r['reference_ms']:.1f} ms forward+backward → {r['speedup']:.2f}× "
        f"(grad rel err {r['grad_rel_err']:.1e}); batched products {r['batched_ms']:.1f} ms"
    )
