"""Benchmark: training throughput of the project's path against a plain eager PyTorch loop.

For each model of the study (config.yaml's ``models:`` and ``context:``, the corpus vocabulary,
batch 64, the schedule of a 5,000-step run) it times ``topotrain.training.train.train_steps`` set up as ``train_model`` sets it up
(``setup_device`` + ``build_run``: batches gathered on the device, fused AdamW, one host sync per
chunk, freed CPU memory kept, ``torch.compile`` where ``train.compile`` asks for it) against a
nanoGPT-style reference: the same GPT class in eager mode, default ``torch.optim.AdamW``,
``loss.backward()``, ``clip_grad_norm_``, ``optimizer.step()``, default process settings.

Each loop lives in its own worker process, so that process-wide settings cannot leak from one to
the other; the parent alternates them in 4 chunks of steps so that both see the same machine load.
Both start from the same seed and draw the same batches: after the same number of steps their
losses must agree within 1%. Compile time (first update − a steady one) is reported on its own and
amortised over a 5,000-step run; the time for all five models × 5,000 steps is extrapolated.

    python benchmarks/training.py                    # CPU, 1 and 2 threads, all five models
    python benchmarks/training.py --device cuda      # one GPU: check the < 60 s target
    python benchmarks/training.py --compile true     # force torch.compile (default: as configured)
    python benchmarks/training.py --profile          # where a step's time goes, per size

The run also times one layer's attention at head dims 8, 12 and 16 (benchmarks/attention.py: the
project's numba kernel against SDPA-flash, rows with "benchmark": "attention"). The project's path
uses the configured kernels (``train.attention: auto`` → numba on CPU, exact GELU); the reference
is the stock path: the same GPT class with its defaults (SDPA, exact GELU). A line is printed per
case as it finishes.

Why the ratios stay small on a CPU: each row also profiles the reference's updates and reports
the share of their time spent inside the matrix products and the attention kernel (``gemm_share``),
work no loop structure, fused optimizer or compiler removes at these sizes. Even a path that made
everything else free could be at most 1 / gemm_share times faster (``overhead_bound``).

Results: printed, and written to benchmarks/results/training.json.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from dataclasses import replace
from pathlib import Path

import attention as attention_bench
import numpy as np
import step_profile
import torch
from study import local_corpus, study_models

from topotrain.devices import resolve_device
from topotrain.training.model import GPT, GPTConfig
from topotrain.training.train import (
    BETAS,
    TrainConfig,
    build_run,
    lr_at,
    setup_device,
    train_steps,
    use_compile,
)

ROOT = Path(__file__).resolve().parents[1]
WIKITEXT_TEST = local_corpus("train")  # the local-files overlay trains on the test split
OUT = ROOT / "benchmarks" / "results" / "training.json"
RUN_STEPS = 5000
LOSS_TOLERANCE = 0.01  # relative
LOOPS = ("project", "reference")
KERNELS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::_scaled_dot_product_flash_attention")
PROFILE_STEPS = 5


MODELS = study_models()


def corpus() -> np.ndarray:
    """WikiText-2's test split encoded as in the study (where it is absent: this repository's
    README, repeated to a million characters)."""
    from topotrain.sources.corpus import encode_text

    if WIKITEXT_TEST.is_file():
        return encode_text(WIKITEXT_TEST.read_text(encoding="utf-8"))[0]
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return encode_text(text * (1_000_000 // len(text) + 1))[0]


class Project:
    """The project's path, set up as ``train_model`` sets it up."""

    def __init__(self, model_cfg: GPTConfig, cfg: TrainConfig, data: np.ndarray):
        device = setup_device(cfg)
        self.compiled = use_compile(cfg, device)
        self.run = build_run(model_cfg, cfg, device, data, self.compiled)
        self.cfg, self.step = cfg, 0

    def train(self, n: int) -> list[float]:
        """``n`` updates; their training losses."""
        rows = train_steps(self.run, self.cfg, self.step, self.step + n)
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
        T = self.model.config.block_size
        ix = torch.randint(len(self.data) - T, (self.cfg.batch_size,), generator=self.gen)
        x = torch.stack([self.data[i : i + T] for i in ix])
        y = torch.stack([self.data[i + 1 : i + 1 + T] for i in ix])
        if self.device.type == "cuda":
            return x.pin_memory().to(self.device, True), y.pin_memory().to(self.device, True)
        return x, y

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


def gemm_share(trainer: Reference, steps: int = 5) -> float:
    """Share of the wall time of ``steps`` reference updates spent in KERNELS (matrix products and
    flash attention, forward and backward; their self time from torch.profiler). The profiler's own
    cost lengthens the wall time, so the share is if anything too low and the bound too high."""
    from torch.profiler import ProfilerActivity, profile

    with step_profile.quiet_stderr(), profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        trainer.train(steps)
        wall_us = 1e6 * (time.perf_counter() - start)
    inside = sum(e.self_cpu_time_total for e in prof.key_averages() if e.key.startswith(KERNELS))
    return inside / wall_us


def device_busy(trainer, steps: int = 20) -> float:
    """CUDA: the share of the wall time of ``steps`` updates during which the GPU runs kernels
    (their device time from torch.profiler; kernels of one process do not overlap here). Far under 1:
    the step is bound by the host (Python, launches, syncs), not by the GPU's arithmetic."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with step_profile.quiet_stderr(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        trainer.train(steps)
        torch.cuda.synchronize()
        wall_us = 1e6 * (time.perf_counter() - start)
    busy = sum(getattr(e, "self_device_time_total", 0) for e in prof.key_averages())
    return busy / wall_us


def make_trainer(loop: str, model_cfg: GPTConfig, cfg: TrainConfig):
    """``project`` (as configured), ``eager`` (the project's path with compile off) or
    ``reference``."""
    if loop == "eager":
        return Project(model_cfg, replace(cfg, compile="false"), corpus())
    return (Project if loop == "project" else Reference)(model_cfg, cfg, corpus())


def worker(conn, loop: str, model_cfg: GPTConfig, cfg: TrainConfig) -> None:
    """Child process: build one loop, then run the number of updates asked for and answer
    (seconds, last training loss) until sent None; then it answers its GPU busy share on CUDA
    (``device_busy``), and the reference its gemm_share on CPU."""
    trainer = make_trainer(loop, model_cfg, cfg)
    conn.send(trainer.compiled)
    while (n := conn.recv()) is not None:
        start = time.perf_counter()
        losses = trainer.train(n)
        conn.send((time.perf_counter() - start, losses[-1]))
    if resolve_device(cfg.device) == "cuda":
        conn.send(device_busy(trainer))
    elif loop == "reference":
        conn.send(gemm_share(trainer))


def time_both(model_cfg: GPTConfig, cfg: TrainConfig, steps: int, warmup: int, loops=LOOPS) -> dict:
    """Seconds per update of each loop over ``steps`` updates in 4 alternating chunks after
    ``warmup`` updates, the project's first update alone, and each loop's last training loss."""
    ctx, links = mp.get_context("spawn"), {}
    for loop in loops:
        links[loop], child = ctx.Pipe()
        ctx.Process(target=worker, args=(child, loop, model_cfg, cfg), daemon=True).start()
    compiled = [links[loop].recv() for loop in loops][0]

    def ask(loop: str, n: int) -> tuple[float, float]:
        links[loop].send(n)
        return links[loop].recv()

    first_s, _ = ask("project", 1)  # compiles, where compiled
    ask("project", warmup - 1)
    for loop in loops[1:]:
        ask(loop, warmup)
    seconds, loss = dict.fromkeys(loops, 0.0), {}
    for _ in range(4):
        for loop in loops:
            elapsed, loss[loop] = ask(loop, steps // 4)
            seconds[loop] += elapsed
    for loop in loops:
        links[loop].send(None)
    # after the timed chunks, so that profiling does not slow them
    if resolve_device(cfg.device) == "cuda":
        busy, share = {loop: links[loop].recv() for loop in loops}, float("nan")
    else:
        busy, share = {}, links["reference"].recv()
    per_step = {f"{loop}_s": seconds[loop] / (steps // 4 * 4) for loop in loops}
    return dict(
        per_step,
        first_s=first_s,
        compiled=compiled,
        loss=loss,
        steps=warmup + steps,
        share=share,
        busy=busy,
    )


def measure(
    name: str,
    threads: int,
    device: str,
    compile: str,
    steps: int,
    warmup: int,
    deterministic: bool = True,
) -> dict:
    """One result row. tokens/s = batch·context / seconds per update; compile time = first update
    − a steady one; amortised: over a 5,000-step run that pays the compile once."""
    model_cfg = MODELS[name]
    cfg = TrainConfig(
        steps=RUN_STEPS,
        device=device,
        threads=threads,
        compile=compile,
        deterministic=deterministic,
    )
    cuda = resolve_device(device) == "cuda"
    m = time_both(model_cfg, cfg, steps, warmup, (*LOOPS, "eager") if cuda else LOOPS)
    tokens, project_s, reference_s = (
        cfg.batch_size * model_cfg.block_size,
        m["project_s"],
        m["reference_s"],
    )
    compile_s = max(m["first_s"] - project_s, 0.0) if m["compiled"] else 0.0
    run_s = compile_s + RUN_STEPS * project_s
    loss, ref_loss = m["loss"]["project"], m["loss"]["reference"]
    return {
        "benchmark": "training",  # benchmarks/run.py's table
        "model": name,
        "params": GPT(model_cfg).num_params(),
        "device": resolve_device(device),
        "threads": threads,
        "compiled": m["compiled"],
        "compile_s": round(compile_s, 2),
        "project_tokens_per_s": round(tokens / project_s),
        "reference_tokens_per_s": round(tokens / reference_s),
        "speedup": round(reference_s / project_s, 3),
        "amortised_speedup": round(RUN_STEPS * reference_s / run_s, 3),
        "project_5000_steps_s": round(run_s, 1),
        "reference_5000_steps_s": round(RUN_STEPS * reference_s, 1),
        "steps": m["steps"],
        "project_loss": round(loss, 5),
        "reference_loss": round(ref_loss, 5),
        "loss_rel_diff": round(loss / ref_loss - 1, 5),
        "gemm_share": round(m["share"], 3),
        "overhead_bound": round(1 / m["share"], 2),
        "equal_loss": abs(loss / ref_loss - 1) <= LOSS_TOLERANCE,
    } | (cuda_columns(m, tokens, run_s) if cuda else {})


def cuda_columns(m: dict, tokens: int, run_s: float) -> dict:
    """On CUDA: the project's path without compile (eager), the CUDA-graph speed-up over it (per
    steady step, and over a 5,000-step run with the compile paid), steps/s, and each loop's GPU busy
    share (``device_busy``)."""
    eager_s = m["eager_s"]
    return {
        "eager_tokens_per_s": round(tokens / eager_s),
        "project_steps_per_s": round(1 / m["project_s"], 1),
        "eager_steps_per_s": round(1 / eager_s, 1),
        "reference_steps_per_s": round(1 / m["reference_s"], 1),
        "graph_speedup": round(eager_s / m["project_s"], 3),
        "graph_amortised_speedup": round(RUN_STEPS * eager_s / run_s, 3),
        "eager_5000_steps_s": round(RUN_STEPS * eager_s, 1),
        "eager_loss": round(m["loss"]["eager"], 5),
        **{f"{loop}_gpu_busy": round(share, 3) for loop, share in m["busy"].items()},
    }


def run(
    models: list[str] | None = None,
    threads: tuple[int, ...] = (1, 2),
    device: str = "cpu",
    compile: str = "auto",
    steps: int = 100,
    warmup: int = 5,
    progress=print,
    deterministic: bool = True,
) -> list[dict]:
    """On CPU, attention rows (benchmarks/attention.py); one row per model × thread count: the
    project's path against the reference; on a CPU with two or more cores, a
    training_concurrency row for the largest model asked for. ``progress`` gets a line per row."""
    chosen, cpu = models or list(MODELS), resolve_device(device) == "cpu"
    rows = attention_bench.run(progress=progress) if cpu else []
    for n in threads:
        for name in chosen:
            rows.append(measure(name, n, device, compile, steps, warmup, deterministic))
            progress(report([rows[-1]]).splitlines()[1])
    if cpu and len(os.sched_getaffinity(0)) >= 2:
        rows.append(concurrency(chosen[-1], steps))
        progress(report([rows[-1]]).splitlines()[-1])
    return rows


def profile_worker(conn, loop: str, model_cfg: GPTConfig, cfg: TrainConfig) -> None:
    """Child process: one loop's step profile (step_profile.profile_step) after a warm-up."""
    trainer = (Project if loop == "project" else Reference)(model_cfg, cfg, corpus())
    trainer.train(3)
    flops = step_profile.attention_flops(
        cfg.batch_size, model_cfg.n_head, model_cfg.n_embd, model_cfg.n_layer, model_cfg.block_size
    )
    conn.send(step_profile.profile_step(trainer.train, PROFILE_STEPS, flops))


def profile_rows(models: list[str] | None = None, threads: int = 1, progress=print) -> list[dict]:
    """Per model and loop (the stock reference, the project's path): the step profile table, each
    loop in its own process at ``threads`` threads; printed as each finishes."""
    torch.set_num_threads(threads)
    peak = step_profile.measured_peak()
    progress(f"machine peak (float32 matrix product, {threads} thread(s)): {peak:.1f} GFLOP/s")
    rows = []
    for name in models or list(MODELS):
        for loop in ("reference", "project"):
            cfg = TrainConfig(steps=RUN_STEPS, device="cpu", threads=threads, compile="false")
            parent, child = mp.get_context("spawn").Pipe()
            proc = mp.get_context("spawn").Process(
                target=profile_worker, args=(child, loop, MODELS[name], cfg), daemon=True
            )
            proc.start()
            prof = parent.recv()
            proc.join()
            rows.append({"benchmark": "step_profile", "model": name, "loop": loop,
                         "threads": threads, "peak_gflops": round(peak, 1), **prof})  # fmt: skip
            progress(step_profile.format_profile(name, loop, prof, peak))
    return rows


def concurrency(name: str, steps: int = 60, warmup: int = 5) -> dict:
    """Two models on a 2-core CPU: two 1-thread jobs at once (what ``snakemake --cores 2`` does with
    ``train.threads: 1``) against one 2-thread job after the other; both the project's path on
    model ``name``. Returns the tokens/s of the machine either way and their ratio."""
    model_cfg = MODELS[name]
    ctx, links = mp.get_context("spawn"), []
    for threads in (1, 1, 2):
        cfg = TrainConfig(steps=RUN_STEPS, device="cpu", threads=threads, compile="false")
        parent, child = ctx.Pipe()
        ctx.Process(target=worker, args=(child, "project", model_cfg, cfg), daemon=True).start()
        links.append(parent)
    for link in links:
        link.recv()  # built
        link.send(warmup)
        link.recv()
    start = time.perf_counter()
    for link in links[:2]:
        link.send(steps)
    for link in links[:2]:
        link.recv()
    together_s = time.perf_counter() - start
    links[2].send(steps)
    one_after_other_s = 2 * links[2].recv()[0]
    for link in links:
        link.send(None)
    tokens = 2 * steps * 64 * model_cfg.block_size
    return {
        "benchmark": "training_concurrency",
        "model": f"2× {name}",
        "two_jobs_1_thread_tokens_per_s": round(tokens / together_s),
        "one_job_2_threads_tokens_per_s": round(tokens / one_after_other_s),
        "speedup": round(one_after_other_s / together_s, 3),
    }


def report(rows: list[dict]) -> str:
    """The table, and per thread count the time for all five models × 5,000 steps."""
    head = "model       thr  comp  compile_s  project_tok/s  reference_tok/s  speedup  amortised"
    lines = [head + "  gemm_share  bound  loss(project/reference, Δ)"]
    together = [r for r in rows if r["benchmark"] == "training_concurrency"]
    attn = [r for r in rows if r["benchmark"] == "attention"]
    rows = [r for r in rows if r["benchmark"] == "training"]
    if rows and rows[0]["device"] == "cuda":
        return cuda_report(rows)
    for r in rows:
        lines.append(
            f"{r['model']:<11} {r['threads']:>3}  {'yes' if r['compiled'] else 'no':>4}"
            f"  {r['compile_s']:>9.1f}  {r['project_tokens_per_s']:>13,}"
            f"  {r['reference_tokens_per_s']:>15,}"
            f"  {r['speedup']:>6.2f}×  {r['amortised_speedup']:>8.2f}×"
            f"  {r['gemm_share']:>10.0%}  {r['overhead_bound']:>4.2f}×"
            f"  {r['project_loss']:.4f}/{r['reference_loss']:.4f} ({100 * r['loss_rel_diff']:+.2f}%)"
        )
    for n in sorted({r["threads"] for r in rows}):
        sel = [r for r in rows if r["threads"] == n]
        project = sum(r["project_5000_steps_s"] for r in sel)
        compile_s = sum(r["compile_s"] for r in sel)
        reference = sum(r["reference_5000_steps_s"] for r in sel)
        target = " (target on one GPU: < 60 s)" if sel[0]["device"] == "cuda" else ""
        lines.append(
            f"{len(sel)} models × {RUN_STEPS} steps, {n} thread(s), {sel[0]['device']}: project "
            f"{project:.0f} s (compile {compile_s:.0f} s), reference {reference:.0f} s{target}"
        )
    lines += [attention_bench.line(r) for r in attn]
    for r in together:
        lines.append(
            f"{r['model']}: two 1-thread jobs at once {r['two_jobs_1_thread_tokens_per_s']:,} tok/s,"
            f" one 2-thread job after the other {r['one_job_2_threads_tokens_per_s']:,} tok/s"
            f" ({r['speedup']:.2f}×)"
        )
    return "\n".join(lines)


def cuda_report(rows: list[dict]) -> str:
    """The CUDA table: steps/s of the project's path (CUDA graphs where compiled), the same path
    eager, and the reference; the speed-ups; the GPU busy shares; the five-model totals."""
    lines = [
        "model       comp  compile_s  steps/s: project  eager  reference  tok/s project"
        "  graph×  vs ref×  amortised×  GPU busy (project/eager/ref)  loss Δ vs ref"
    ]
    for r in rows:
        lines.append(
            f"{r['model']:<11} {'yes' if r['compiled'] else 'no':>4}  {r['compile_s']:>9.1f}"
            f"  {r['project_steps_per_s']:>16,.0f}  {r['eager_steps_per_s']:>5,.0f}"
            f"  {r['reference_steps_per_s']:>9,.0f}  {r['project_tokens_per_s']:>13,}"
            f"  {r['graph_speedup']:>5.2f}×  {r['speedup']:>6.2f}×  {r['amortised_speedup']:>9.2f}×"
            f"  {r['project_gpu_busy']:>7.0%} / {r['eager_gpu_busy']:>4.0%} /"
            f" {r['reference_gpu_busy']:>4.0%}  {100 * r['loss_rel_diff']:+.2f}%"
        )
    project = sum(r["project_5000_steps_s"] for r in rows)
    compile_s = sum(r["compile_s"] for r in rows)
    eager = sum(r["eager_5000_steps_s"] for r in rows)
    reference = sum(r["reference_5000_steps_s"] for r in rows)
    lines.append(
        f"{len(rows)} models × {RUN_STEPS} steps, one after the other on one GPU: project "
        f"{project:.0f} s (compile {compile_s:.0f} s of it), eager {eager:.0f} s, reference "
        f"{reference:.0f} s; × 3 seeds: {3 * project:.0f} s (target < 30 s)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--threads", type=int, nargs="+", help="default: 1 2 on CPU, 1 on CUDA")
    parser.add_argument("--compile", default="auto", choices=["auto", "true", "false"])
    parser.add_argument("--steps", type=int, default=100, help="timed updates per model")
    parser.add_argument("--models", nargs="+", choices=list(MODELS))
    parser.add_argument("--profile", action="store_true", help="only the step profile, per size")
    parser.add_argument(
        "--deterministic",
        default="true",
        choices=["true", "false"],
        help="train.deterministic of the project's path (CUDA only; default true, as configured)",
    )
    args = parser.parse_args(argv)
    if args.profile:
        rows = profile_rows(args.models, (args.threads or [1])[0], progress=_flush_print)
        _write(rows)
        return 0
    threads = args.threads or ([1] if resolve_device(args.device) == "cuda" else [1, 2])
    rows = run(
        args.models,
        tuple(threads),
        args.device,
        args.compile,
        args.steps,
        progress=_flush_print,
        deterministic=args.deterministic == "true",
    )
    print(report(rows))
    _write(rows)
    return 0 if all(r.get("equal_loss", r.get("equal", True)) for r in rows) else 1


def _flush_print(line: str) -> None:
    print(line, flush=True)


def _write(rows: list[dict]) -> None:
    meta = {"torch": torch.__version__, "python": platform.python_version(), "argv": sys.argv}
    out = OUT.with_name("training_profile.json") if rows and "loop" in rows[0] else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    sys.exit(main())
