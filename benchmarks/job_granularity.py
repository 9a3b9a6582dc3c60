"""Benchmark: per-checkpoint topology jobs against one process filling every record, and
Snakemake's schedulers, on a finished study at this machine's cores (issue 37, item 4).

    python -m benchmarks job_granularity --dir D --configfile C [C …] [--config K=V …] [--cores N]

On a finished study (its checkpoints on disk), three ways to write every checkpoint's weight
topology record, each timed as a whole:

1. ``snakemake --forcerun weight_topology --until weight_topology``: today's design, one job (one
   Python process) per checkpoint, Snakemake's default scheduler;
2. the same with ``--scheduler greedy``;
3. one process writing the same records over a pool of ``--cores`` workers
   (``write_checkpoint_topology`` on every checkpoint Snakemake would give a job): the lower
   bound of "one job per training that fills its checkpoints' records over a pool", before that
   job's own start-up (printed beside: the seconds a fresh Python takes to import what the
   topology job imports).

Ratios 1/3 and 2/1 say what per-job start-up and the scheduler cost; the records of 3 are written
to a scratch folder and compared with Snakemake's (equal, or the benchmark stops).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks.study import RESULTS, ROOT

SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile")]
IMPORTS = "import numpy, snakemake, topotrain.jobs.topology, topotrain.topology.layers"


def snakemake_wall(args: argparse.Namespace, extra: list[str]) -> float:
    """Wall seconds of rewriting every weight_topology record through Snakemake."""
    cmd = [*SNAKEMAKE, "--directory", args.dir, "--cores", str(args.cores), "-q"]
    cmd += ["--configfile", *args.configfile, *(["--config", *args.config] if args.config else [])]
    cmd += ["--forcerun", "weight_topology", "--until", "weight_topology", *extra]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def record_jobs(results: Path, workdir: Path) -> list[tuple[Path, Path, dict]]:
    """(checkpoint, record, params) of every weight topology record under ``results`` (a
    relative checkpoint path is the study's, under ``workdir``)."""
    out = []
    for record in sorted((results / "topology").rglob("step_*.json")):
        doc = json.loads(record.read_text())
        out.append((workdir / doc["checkpoint"], record, doc["params"]))
    return out


def one_record(job: tuple[Path, Path, dict], scratch: Path) -> bool:
    """Write one record to ``scratch`` as the job does; whether it equals Snakemake's."""
    from topotrain.jobs.topology import write_checkpoint_topology

    checkpoint, record, params = job
    out = scratch / f"{abs(hash(str(record)))}.json"
    write_checkpoint_topology(checkpoint, out, out.with_suffix(".npz"), **params)
    return json.loads(out.read_text())["layers"] == json.loads(record.read_text())["layers"]


def pool_wall(jobs: list, cores: int) -> float:
    """Wall seconds of every record in one process's pool of ``cores`` workers."""
    from functools import partial

    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        with ProcessPoolExecutor(cores) as pool:
            same = list(pool.map(partial(one_record, scratch=Path(scratch)), jobs))
        wall = time.perf_counter() - start
    if not all(same):
        raise RuntimeError("the pool's records differ from Snakemake's: not the same computation")
    return wall


def import_seconds(repeats: int = 3) -> float:
    """The least wall seconds a fresh Python takes to import what a topology job imports."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS], check=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks job_granularity")
    parser.add_argument("--dir", required=True, help="the finished study's working directory")
    parser.add_argument("--configfile", nargs="+", required=True)
    parser.add_argument("--config", nargs="*", default=[])
    parser.add_argument("--results", default="results", help="its results folder (under --dir)")
    parser.add_argument("--cores", type=int, default=2)
    args = parser.parse_args(argv)
    jobs = record_jobs(Path(args.dir) / args.results, Path(args.dir))
    if not jobs:
        parser.error(f"no topology records under {args.dir}/{args.results}: run the study first")
    default = snakemake_wall(args, [])
    greedy = snakemake_wall(args, ["--scheduler", "greedy"])
    pool = pool_wall(jobs, args.cores)
    row = {
        "records": len(jobs),
        "cores": args.cores,
        "snakemake_default_s": default,
        "snakemake_greedy_s": greedy,
        "one_process_pool_s": pool,
        "job_import_s": import_seconds(),
        "per_job_over_pool": default / pool,
        "greedy_over_default": greedy / default,
    }
    print(
        f"{row['records']} records on {args.cores} cores: per-checkpoint jobs {default:.1f} s "
        f"(greedy {greedy:.1f} s, ×{row['greedy_over_default']:.2f}), one process's pool "
        f"{pool:.1f} s → per-job/pool ×{row['per_job_over_pool']:.2f}; a job's imports "
        f"{row['job_import_s']:.2f} s"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "job_granularity.json").write_text(json.dumps(row, indent=1) + "\n")
    return 0
