"""Benchmark: training throughput of the project's path against a plain eager PyTorch loop.

For each model of the study (config.yaml's ``models:`` and ``context:``, the corpus vocabulary,
batch 64, the schedule of a 5,000-step run) it times the project's path against a nanoGPT-style
reference (benchmarks/training_loops.py: ``train_steps`` set up as ``train_model`` sets it up —
batches gathered on the device, fused AdamW, one host sync per chunk, freed CPU memory kept,
``torch.compile`` where ``train.compile`` asks for it — against the same GPT class in eager mode,
default ``torch.optim.AdamW``, ``loss.backward()``, ``clip_grad_norm_``, ``optimizer.step()``).

Each loop lives in its own worker process, so that process-wide settings cannot leak from one to
the other; the parent alternates them in 4 chunks of steps so that both see the same machine load.
Both start from the same seed and draw the same batches: after the same number of steps their
losses must agree within 1%. Compile time (first update − a steady one) is reported on its own and
amortised over a 5,000-step run; the time for all five models × 5,000 steps is extrapolated.

    python -m benchmarks training                   # CPU, 1 and 2 threads, all five models
    python -m benchmarks training --device cuda     # one GPU: check the < 60 s target
    python -m benchmarks training --compile true    # force torch.compile (default: as configured)
    python -m benchmarks training --profile         # where a step's time goes, per size

The run also times one layer's attention at head dims 8, 12 and 16 (benchmarks/attention.py: the
project's numba kernel against SDPA-flash, rows with "benchmark": "attention"). The project's path
uses the configured kernels (``train.attention: auto`` → numba on CPU, exact GELU); the reference
is the stock path: the same GPT class with its defaults (SDPA, exact GELU). A line is printed per
case as it finishes.

Why the ratios stay small on a CPU: each row also profiles the reference's updates and reports
the share of their time spent inside the matrix products and the attention kernel (``gemm_share``),
work no loop structure, fused optimizer or compiler removes at these sizes. Even a path that made
everything else free could be at most 1 / gemm_share times faster (``overhead_bound``).

Results: printed, and written to benchmarks/results/training.json (``--profile``:
training_profile.json).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time

import torch

from benchmarks import attention
from benchmarks.step_profile import device_busy, gemm_share, profile_rows
from benchmarks.study import RESULTS
from benchmarks.training_loops import MODELS, RUN_STEPS, make_trainer
from benchmarks.training_report import report
from topotrain.devices import resolve_device
from topotrain.training.model import GPT, GPTConfig
from topotrain.training.train import TrainConfig

OUT = RESULTS / "training.json"
LOSS_TOLERANCE = 0.01  # relative
LOOPS = ("project", "reference")


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
    tokens = cfg.batch_size * model_cfg.block_size
    project_s, reference_s = m["project_s"], m["reference_s"]
    compile_s = max(m["first_s"] - project_s, 0.0) if m["compiled"] else 0.0
    run_s = compile_s + RUN_STEPS * project_s
    loss, ref_loss = m["loss"]["project"], m["loss"]["reference"]
    return {
        "benchmark": "training",  # the suite's table (benchmarks/suite.py)
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
    rows = attention.run(progress=progress) if cpu else []
    for n in threads:
        for name in chosen:
            rows.append(measure(name, n, device, compile, steps, warmup, deterministic))
            progress(report([rows[-1]]).splitlines()[1])
    if cpu and len(os.sched_getaffinity(0)) >= 2:
        rows.append(concurrency(chosen[-1], steps))
        progress(report([rows[-1]]).splitlines()[-1])
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


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks training [options]``: the table (or ``--profile``'s), written out;
    exit status 1 where the project's and the reference's losses disagree."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks training", description=__doc__.splitlines()[0]
    )
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
    """A progress line, at once."""
    print(line, flush=True)


def _write(rows: list[dict]) -> None:
    """The rows with the versions and command line, to OUT (training_profile.json for the
    profile's rows)."""
    meta = {"torch": torch.__version__, "python": platform.python_version(), "argv": sys.argv}
    out = OUT.with_name("training_profile.json") if rows and "loop" in rows[0] else OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")
