"""Benchmark: the Vietoris–Rips engines, ripser.py (MIT, the core install's) vs giotto-ph (AGPL-3.0,
the `fast` extra), on the study's per-checkpoint work and on Gaussian clouds.

Project: ``topology.engine: ripser``, what a core install computes with. Reference, measured in the
same run on the same inputs: giotto-ph on one thread (the study's ``topology.threads``), what `auto`
picks where giotto-ph is installed. Per model size of the study, ``checkpoint_topology`` of one
checkpoint (every matrix: subsample, distances, MST, NP, H1) with each engine; on clouds of 128 to
1,024 points in 32 and 256 dimensions, the H1 computation alone (``rips_higher`` on the same
distance matrix). ``ratio`` = ripser's time / giotto-ph's: the price of the permissive default.
Per checkpoint also the cold job (``cold_ratio``): a fresh interpreter running the weight_topology
job, what each of the study's 765 jobs pays (imports included). Check: every feature of every
record (clouds: every bar) within 1e-5 relative.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.topology import PATTERNS, study_checkpoints, time_median

CLOUDS = [(n, d) for n in (128, 256, 512, 1024) for d in (32, 256)]
RTOL = 1e-5


def worst_relative(a: dict, b: dict) -> float:
    """The largest |a − b| / max(|b|, 1e-12) over the numbers two records share."""
    worst = 0.0
    for key, value in a.items():
        if isinstance(value, (int, float)) and value is not None and b[key] is not None:
            worst = max(worst, abs(value - b[key]) / max(abs(b[key]), 1e-12))
    return worst


def checkpoint_rows(repeats: int) -> list[dict]:
    """One row per model size: ms per checkpoint with each engine, their ratio, the worst
    relative difference between the two engines' records."""
    from topotrain.jobs.topology import checkpoint_topology

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in study_checkpoints(tmp, "engines"):
            seconds, records, cold = {}, {}, {}
            for engine in ("ripser", "giotto-ph"):
                records[engine], _ = checkpoint_topology(path, PATTERNS, engine=engine)
                seconds[engine] = time_median(
                    lambda e=engine, p=path: checkpoint_topology(p, PATTERNS, engine=e), repeats
                )
            for engine in ("ripser", "giotto-ph", "ripser", "giotto-ph", "ripser", "giotto-ph"):
                cold.setdefault(engine, []).append(cold_job_seconds(path, Path(tmp), engine))
            diff = max(
                worst_relative(a, b)
                for a, b in zip(records["ripser"], records["giotto-ph"], strict=True)
            )
            cold = {engine: float(np.median(times)) for engine, times in cold.items()}
            rows.append(checkpoint_row(name, len(records["ripser"]), seconds, cold, diff))
    return rows


def cold_job_seconds(path: Path, out: Path, engine: str) -> float:
    """Wall time of a fresh interpreter running the weight_topology job with ``engine``."""
    params = {"patterns": list(PATTERNS), "max_points": 200, "seed": 0, "maxdim": 1}
    code = (
        "from topotrain.jobs.topology import weight_topology_job; "
        f"weight_topology_job({str(path)!r}, {str(out / 'r.json')!r}, {str(out / 'r.npz')!r}, "
        f"{dict(params, engine=engine)!r}, 1)"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))
    return time.perf_counter() - start


def checkpoint_row(name: str, matrices: int, seconds: dict, cold: dict, diff: float) -> dict:
    return {
        "benchmark": "engines",
        "model": name,
        "matrices": matrices,
        "ripser_ms": 1e3 * seconds["ripser"],
        "giotto_ph_ms": 1e3 * seconds["giotto-ph"],
        "ratio": seconds["ripser"] / seconds["giotto-ph"],
        "cold_ripser_s": cold["ripser"],
        "cold_giotto_ph_s": cold["giotto-ph"],
        "cold_ratio": cold["ripser"] / cold["giotto-ph"],
        "max_rel_difference": diff,
        "equal": diff <= RTOL,
    }


def cloud_rows(repeats: int) -> list[dict]:
    """One row per Gaussian cloud (n points, d dimensions): H1 in ms with each engine."""
    from topotrain.topology.spanning import pairwise_distances
    from topotrain.topology.vietoris_rips import rips_higher

    rows = []
    for n, d in CLOUDS:
        square = pairwise_distances(np.random.default_rng(n + d).normal(size=(n, d)))
        seconds, bars = {}, {}
        for engine in ("ripser", "giotto-ph"):
            bars[engine] = np.sort(rips_higher(square, 1, 1, engine)[0], axis=0)
            seconds[engine] = time_median(
                lambda e=engine, s=square: rips_higher(s, 1, 1, e), repeats
            )
        same = bars["ripser"].shape == bars["giotto-ph"].shape and np.allclose(
            bars["ripser"], bars["giotto-ph"], rtol=RTOL, atol=0
        )
        rows.append(
            {
                "benchmark": "engines",
                "model": f"cloud {n}x{d}",
                "h1_bars": len(bars["ripser"]),
                "ripser_ms": 1e3 * seconds["ripser"],
                "giotto_ph_ms": 1e3 * seconds["giotto-ph"],
                "ratio": seconds["ripser"] / seconds["giotto-ph"],
                "equal": bool(same),
            }
        )
    return rows


def run(repeats: int = 5) -> list[dict]:
    """The study's checkpoints, then the clouds (giotto-ph must be installed: the `fast` extra)."""
    return checkpoint_rows(repeats) + cloud_rows(repeats)
