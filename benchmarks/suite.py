"""Run several benchmarks and print one table: each project path beside its reference.

Each case's ``run()`` measures the project's path and a plain reference in the same run and
returns rows with their ratio; the rows go to benchmarks/results/<name>.json with the environment
they were taken in, for comparison across commits.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import platform
import subprocess
import time

from benchmarks import CASES
from benchmarks.study import RESULTS, ROOT

COLUMNS = {  # a row's "benchmark" → columns printed: project, reference, ratio, check
    "gradients": (
        "per_training_s",
        "per_checkpoint_s",
        "saved_gradients_s",
        "per_checkpoint_ratio",
        "saved_gradients_ratio",
        "equal",
    ),
    "scale": (
        "params",
        "project_s",
        "project_cpu_s",
        "eager_s",
        "peak_mb",
        "eager_peak_mb",
        "working_over_largest",
        "thread_speedup",
        "equal",
    ),
    "training": (
        "threads",
        "project_tokens_per_s",
        "reference_tokens_per_s",
        "speedup",
        "loss_rel_diff",
        "overhead_bound",
    ),
    "analysis": ("size", "project_ms", "reference_ms", "speedup", "equal"),
    "attention": ("head_dim", "project_ms", "reference_ms", "speedup", "grad_rel_err"),
    "ensemble": ("threads", "project_ms", "reference_ms", "ratio"),
    "training_concurrency": (
        "two_jobs_1_thread_tokens_per_s",
        "one_job_2_threads_tokens_per_s",
        "speedup",
    ),
    "topology": (
        "project_ms",
        "reference_ms",
        "speedup",
        "max_abs_difference",
        "cold_job_s",
        "series_run_s",
    ),
    "engines": (
        "ripser_ms",
        "giotto_ph_ms",
        "ratio",
        "cold_ripser_s",
        "cold_giotto_ph_s",
        "cold_ratio",
        "max_rel_difference",
        "equal",
    ),
    "tiny_workflow": ("workflow_s", "reference_in_process_s", "ratio"),
    "planning": ("study_dry_run_s", "reference_one_rule_dry_run_s", "ratio"),
    "callback": (
        "reference_s",
        "callback_s",
        "ratio",
        "min_ratio",
        "cpu_ratio",
        "per_computation_s",
        "computed_share",
    ),
    "pythia_embedding": (
        "project_s_per_revision",
        "embed_s",
        "reference_embed_s",
        "embed_speedup",
        "max_abs_embedding_difference",
    ),
}


def environment() -> dict:
    """Where the numbers were taken: commit, CPU count, Python and library versions."""
    import numpy
    import torch

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return {
        "commit": commit,
        "machine": platform.machine(),
        "cpus": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "torch": torch.__version__,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def format_row(row: dict) -> str:
    """One line of the table: the row's benchmark and model, then its COLUMNS."""
    label = f"{row['benchmark']} {row.get('model', '')}"
    cells = [f"{c}={row[c]:.4g}" for c in COLUMNS.get(row["benchmark"], ()) if c in row]
    return f"{label:<28} " + "  ".join(cells)


def run_case(name: str, env: dict) -> list[dict]:
    """Run one case (its module's ``run()``), write its rows to RESULTS/<name>.json and print
    them (at once where the case reports its own progress)."""
    start = time.perf_counter()
    print(f"[{name}] running …", flush=True)
    run = importlib.import_module(f"benchmarks.{CASES[name].module}").run
    progress = {"progress": say} if "progress" in inspect.signature(run).parameters else {}
    result = run(**progress)
    rows = result if isinstance(result, list) else [result]
    seconds = time.perf_counter() - start
    doc = {"environment": env, "seconds": seconds, "rows": rows}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    if not progress:  # benchmarks without their own progress lines: their rows now
        for row in rows:
            say(format_row(row))
    print(f"[{name}] done in {seconds:.0f} s", flush=True)
    return rows


def run_suite(names: list[str]) -> int:
    """Run the cases ``names`` one after the other, then print the summary table. Exit status 1
    where a row's project and reference disagree (``equal`` or ``equal_loss`` false)."""
    env = environment()
    print(f"benchmarks at {env['commit']} on {env['cpus']} CPUs (torch {env['torch']})", flush=True)
    rows = [row for name in names for row in run_case(name, env)]
    print("\nsummary")
    for row in rows:
        print(format_row(row))
    return 0 if all(row.get("equal_loss", row.get("equal", True)) for row in rows) else 1


def say(line: str) -> None:
    """One progress line, at once (the suite takes minutes)."""
    print(f"  {line}", flush=True)
