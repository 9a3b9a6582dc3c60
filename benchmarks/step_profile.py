"""Where a training step's time goes: torch.profiler self CPU time grouped by kind of op.

Groups: attention (SDPA flash forward/backward, or the project's numba kernel), matrix products
(mm/addmm/bmm), GELU (forward and backward), and everything else (norms, copies, loss, optimizer,
Python: the step's wall time minus the groups). Matrix products report the GFLOP/s they reached (the
profiler's FLOP count) and attention the FLOPs of its causal half (forward: QKᵀ and PV; backward:
four products of the same size), both against the machine's measured single-thread peak (a large
float32 matrix product).

    python -m benchmarks training --profile     # the table per model size, both loops

Also here: the two shares the training benchmark reports beside its rows, ``gemm_share`` (CPU) and
``device_busy`` (CUDA).
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import time

import torch

from benchmarks.training_loops import MODELS, RUN_STEPS, Project, Reference, corpus
from topotrain.training.model import GPTConfig
from topotrain.training.train import TrainConfig

GROUPS = {
    "attention": ("aten::_scaled_dot_product_flash_attention", "tiny_head_attention"),
    "matmul": ("aten::mm", "aten::addmm", "aten::bmm"),
    "gelu": ("aten::gelu",),  # aten::gelu and aten::gelu_backward
}
ORDER = ("attention", "matmul", "gelu", "other")
KERNELS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::_scaled_dot_product_flash_attention")
PROFILE_STEPS = 5


@contextlib.contextmanager
def quiet_stderr():
    """Silence the profiler's C++ chatter (kineto's start/stop lines, ``gpuGetDeviceCount failed``
    on machines without a GPU) by pointing file descriptor 2 at /dev/null meanwhile."""
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def measured_peak(n: int = 768, reps: int = 5) -> float:
    """The best GFLOP/s of an n × n float32 matrix product at the current thread count."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = min(_seconds(lambda: a @ b) for _ in range(reps))
    return 2 * n**3 / best / 1e9


def _seconds(fn) -> float:
    """Wall seconds of one call of ``fn``."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def attention_flops(batch: int, n_head: int, n_embd: int, n_layer: int, T: int) -> float:
    """FLOPs of one step's causal attention, forward + backward: six products over the causal
    half, D·T(T+1) each per (batch, head), in every layer."""
    return 6.0 * batch * n_head * (n_embd // n_head) * T * (T + 1) * n_layer


def profile_step(train, steps: int, attn_flops_per_step: float) -> dict:
    """Per group: share of the wall time, ms per step and GFLOP/s (None for elementwise groups),
    from ``steps`` calls of ``train(1)`` under torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        wall = _seconds(lambda: [train(1) for _ in range(steps)])
    self_s, flops = dict.fromkeys(ORDER, 0.0), dict.fromkeys(ORDER, 0.0)
    for e in prof.key_averages():
        group = next((g for g, keys in GROUPS.items() if e.key.startswith(keys)), None)
        if group:
            self_s[group] += e.self_cpu_time_total / 1e6
            flops[group] += e.flops or 0.0
    self_s["other"] = max(wall - sum(self_s.values()), 0.0)
    flops["attention"] = attn_flops_per_step * steps
    out = {"step_ms": 1e3 * wall / steps}
    for g in ORDER:
        rate = flops[g] / self_s[g] / 1e9 if flops[g] and self_s[g] else None
        out[g] = {"share": self_s[g] / wall, "ms": 1e3 * self_s[g] / steps, "gflops": rate}
    return out


def format_profile(name: str, loop: str, prof: dict, peak: float) -> str:
    """One block of the table: a line per group."""
    lines = [f"{name} ({loop}): {prof['step_ms']:.0f} ms per step"]
    for g in ORDER:
        cell = prof[g]
        rate = (
            f"{cell['gflops']:6.1f} GFLOP/s ({cell['gflops'] / peak:4.0%} of peak)"
            if cell["gflops"]
            else "—"
        )
        lines.append(f"  {g:<10} {cell['share']:>5.0%}  {cell['ms']:>7.1f} ms   {rate}")
    return "\n".join(lines)


def gemm_share(trainer: Reference, steps: int = 5) -> float:
    """Share of the wall time of ``steps`` reference updates spent in KERNELS (matrix products and
    flash attention, forward and backward; their self time from torch.profiler). The profiler's own
    cost lengthens the wall time, so the share is if anything too low and the bound too high."""
    from torch.profiler import ProfilerActivity, profile

    with quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        trainer.train(steps)
        wall_us = 1e6 * (time.perf_counter() - start)
    inside = sum(e.self_cpu_time_total for e in prof.key_averages() if e.key.startswith(KERNELS))
    return inside / wall_us


def device_busy(trainer: Project | Reference, steps: int = 20) -> float:
    """CUDA: the share of the wall time of ``steps`` updates during which the GPU runs kernels
    (their device time from torch.profiler; kernels of one process do not overlap here). Far under
    1: the step is bound by the host (Python, launches, syncs), not by the GPU's arithmetic."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with quiet_stderr(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        trainer.train(steps)
        torch.cuda.synchronize()
        wall_us = 1e6 * (time.perf_counter() - start)
    busy = sum(getattr(e, "self_device_time_total", 0) for e in prof.key_averages())
    return busy / wall_us


def profile_worker(conn, loop: str, model_cfg: GPTConfig, cfg: TrainConfig) -> None:
    """Child process: one loop's step profile (``profile_step``) after a warm-up."""
    trainer = (Project if loop == "project" else Reference)(model_cfg, cfg, corpus())
    trainer.train(3)
    flops = attention_flops(
        cfg.batch_size, model_cfg.n_head, model_cfg.n_embd, model_cfg.n_layer, model_cfg.block_size
    )
    conn.send(profile_step(trainer.train, PROFILE_STEPS, flops))


def profile_rows(models: list[str] | None = None, threads: int = 1, progress=print) -> list[dict]:
    """Per model and loop (the stock reference, the project's path): the step profile table, each
    loop in its own process at ``threads`` threads; printed as each finishes."""
    torch.set_num_threads(threads)
    peak = measured_peak()
    progress(f"machine peak (float32 matrix product, {threads} thread(s)): {peak:.1f} GFLOP/s")
    rows, ctx = [], mp.get_context("spawn")
    for name in models or list(MODELS):
        for loop in ("reference", "project"):
            cfg = TrainConfig(steps=RUN_STEPS, device="cpu", threads=threads, compile="false")
            parent, child = ctx.Pipe()
            proc = ctx.Process(
                target=profile_worker, args=(child, loop, MODELS[name], cfg), daemon=True
            )
            proc.start()
            prof = parent.recv()
            proc.join()
            row = {"benchmark": "step_profile", "model": name, "loop": loop, "threads": threads}
            rows.append(row | {"peak_gflops": round(peak, 1), **prof})
            progress(format_profile(name, loop, prof, peak))
    return rows
