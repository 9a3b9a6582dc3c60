"""Where and how a training runs: the device and its threads, TF32 and determinism on CUDA, and
on CPU freed memory kept for the next step (benchmarks/training.py). ``training.train`` re-exports
these names."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import TYPE_CHECKING

import torch

from topotrain.devices import resolve_device

if TYPE_CHECKING:
    from topotrain.training.train import TrainConfig

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters


def keep_freed_memory() -> bool:
    """glibc: serve allocations up to 32 MiB from the heap and keep freed pages, so each CPU step
    reuses memory instead of page-faulting in ~10⁴ fresh zeroed pages. Whether it applied."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mmap_ok = libc.mallopt(M_MMAP_THRESHOLD, 32 << 20)
        return bool(mmap_ok and libc.mallopt(M_TRIM_THRESHOLD, 1 << 30))
    except (OSError, AttributeError):  # not glibc
        return False


def cuda_determinism(warn_only: bool = False) -> None:
    """Make CUDA training repeatable: deterministic algorithms for the process (strict: with
    ``warn_only`` an op lacking a deterministic kernel only warns, and the memory-efficient
    attention backward keeps its nondeterministic default) and a fixed cuBLAS workspace (read when
    cuBLAS starts: call before the first matrix product). Measured on a GPU: docs/gpu.md."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=warn_only)
    torch.backends.cudnn.benchmark = False


def setup_device(cfg: TrainConfig) -> torch.device:
    """Resolve the device and set the thread count; on CPU keep freed memory; on CUDA use TF32 and,
    with ``deterministic``, ``cuda_determinism``."""
    torch.set_num_threads(cfg.threads)
    device = torch.device(resolve_device(cfg.device))
    if device.type == "cuda":
        torch.set_float32_matmul_precision("high")  # TF32 (inductor reads this setting)
        if cfg.deterministic:
            cuda_determinism()
    else:
        keep_freed_memory()
    return device
