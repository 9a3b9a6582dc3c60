"""Run the benchmark suite and print one table: each project path beside its reference.

    python benchmarks/run.py                  # all: training, topology, workflow, pythia, callback
    python benchmarks/run.py topology pythia  # a subset

Each benchmark measures the project's path and a plain reference in the same run and reports their
ratio; results go to benchmarks/results/<name>.json (git-ignored) for comparison across commits.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MODULES = {"training": "training", "topology": "topology", "workflow": "workflow",
           "pythia": "pythia_embedding", "callback": "callback"}  # fmt: skip
COLUMNS = {  # a row's "benchmark" → columns printed: project, reference, ratio, check
    "training": ("threads", "project_tokens_per_s", "reference_tokens_per_s", "speedup",
                 "loss_rel_diff", "overhead_bound"),
    "attention": ("head_dim", "project_ms", "reference_ms", "speedup", "grad_rel_err"),
    "training_concurrency": ("two_jobs_1_thread_tokens_per_s", "one_job_2_threads_tokens_per_s",
                             "speedup"),
    "topology": ("project_ms", "reference_ms", "speedup", "max_abs_difference", "cold_job_s",
                 "series_run_s"),
    "tiny_workflow": ("workflow_s", "reference_in_process_s", "ratio"),
    "planning": ("study_dry_run_s", "reference_one_rule_dry_run_s", "ratio"),
    "callback": ("reference_s", "callback_s", "ratio", "min_ratio", "cpu_ratio",
                 "per_computation_s", "computed_share"),
    "pythia_embedding": ("project_s_per_revision", "embed_s", "reference_embed_s",
                         "embed_speedup", "max_abs_embedding_difference"),
}  # fmt: skip


def environment() -> dict:
    """Where the numbers were taken: commit, CPU count, Python and library versions."""
    import numpy
    import torch

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
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


def format_row(row: dict, columns: tuple[str, ...]) -> str:
    label = f"{row['benchmark']} {row.get('model', '')}"
    cells = [f"{c}={row[c]:.4g}" for c in columns if c in row]
    return f"{label:<28} " + "  ".join(cells)


def main(names: list[str]) -> None:
    env = environment()
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    rows = []
    print(f"benchmarks at {env['commit']} on {env['cpus']} CPUs (torch {env['torch']})", flush=True)
    for name in names:
        start = time.perf_counter()
        print(f"[{name}] running …", flush=True)
        run = importlib.import_module(MODULES[name]).run
        progress = {"progress": say} if "progress" in inspect.signature(run).parameters else {}
        result = run(**progress)
        result = result if isinstance(result, list) else [result]
        seconds = time.perf_counter() - start
        doc = {"environment": env, "seconds": seconds, "rows": result}
        (out_dir / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
        if not progress:  # benchmarks without their own progress lines: their rows now
            for row in result:
                say(format_row(row, COLUMNS[row["benchmark"]]))
        print(f"[{name}] done in {seconds:.0f} s", flush=True)
        rows += result
    print("\nsummary")
    for row in rows:
        print(format_row(row, COLUMNS[row["benchmark"]]))


def say(line: str) -> None:
    """One progress line, at once (the suite takes minutes)."""
    print(f"  {line}", flush=True)


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(MODULES)
    unknown = [n for n in chosen if n not in MODULES]
    if unknown:
        sys.exit(f"unknown benchmark(s) {unknown}; choose from {list(MODULES)}")
    main(chosen)
