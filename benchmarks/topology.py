"""Benchmark: weight topology of one checkpoint per model size, project vs a plain reference.

Project: ``checkpoint_topology`` (float64 MST for H0 and neural persistence, the Rips engine
``auto`` picks for H1), warm, in-process. Reference, measured in the same run on the same matrices:
ripser.py's public wrapper per matrix for H0/H1 and a pure-Python union-find over the sorted edges
for neural persistence.
Both must agree: every diagram to 1e-6, NP to 1e-9. Also timed: a cold process running the
topology job on one checkpoint (what each Snakemake job pays: interpreter, imports, compute), and
beside it the per-run diagram-series job (``topology.series.run_series``: step distances and
vectorisations) over CHECKPOINTS checkpoints of that size (the checkpoint's diagrams, jittered per
step), as seconds per run and per checkpoint.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.study import study_models
from topotrain.config import GPT_LAYERS

PATTERNS = GPT_LAYERS
CHECKPOINTS = 51  # a study run's checkpoints


def make_checkpoint(path: Path, config, seed: int = 0) -> None:
    """A GPT of the family after a few hundred noisy updates' worth of structure: GPT-2 init plus
    a seeded low-rank component, so rows are neither isotropic nor identical."""
    import torch

    from topotrain.training.model import GPT
    from topotrain.training.run_state import save_checkpoint

    torch.manual_seed(seed)
    model = GPT(config)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                u, v = torch.randn(p.shape[0], 2), torch.randn(2, p.shape[1])
                p.add_(0.05 * u @ v / p.shape[1] ** 0.5)
    save_checkpoint(model, 0, path)


def union_find_np(W: np.ndarray) -> float:
    """Reference NP: Kruskal in pure Python over edges by decreasing |w|/max|W|;
    Σ(1 − w)/(|V|−1)."""
    rows, cols = W.shape
    a = np.abs(W) / np.abs(W).max()
    parent = list(range(rows + cols))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    total, merged = 0.0, 0
    for k in np.argsort(-a, axis=None, kind="stable"):
        i, j = divmod(int(k), cols)
        ri, rj = find(i), find(rows + j)
        if ri != rj:
            parent[ri] = rj
            total += 1.0 - float(a[i, j])
            merged += 1
    return total / merged


def reference(path: Path, patterns, max_points: int, seed: int):
    """Per layer: (NP, [H0, H1]) with ripser.py and the union-find, on the project's subsample."""
    import warnings

    import ripser

    from topotrain.sources.checkpoint import load_tensors
    from topotrain.topology.layers import layer_rng, select_layers
    from topotrain.topology.vietoris_rips import subsample_rows

    out = {}
    for layer, W in select_layers(load_tensors(path), patterns).items():
        W = W.astype(np.float64)
        cloud = subsample_rows(W, max_points, layer_rng(seed, layer))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # square clouds and wide matrices are meant
            dgms = ripser.ripser(cloud, maxdim=1)["dgms"]
        out[layer] = (union_find_np(W), [d[d[:, 1] > d[:, 0]] for d in dgms])
    return out


def max_difference(records, diagrams, ref) -> float:
    """Largest |project − reference| over NP values and sorted diagram coordinates."""
    worst = 0.0
    for rec in records:
        np_ref, dgms = ref[rec["layer"]]
        worst = max(worst, abs(rec["np_total"] - np_ref))
        for k, d in enumerate(dgms):
            ours, theirs = np.sort(diagrams[f"{rec['layer']}/h{k}"], 0), np.sort(d, 0)
            if ours.shape != theirs.shape or not (np.isinf(ours) == np.isinf(theirs)).all():
                return float("inf")
            finite = np.isfinite(ours)
            worst = max(worst, float(np.abs(ours[finite] - theirs[finite]).max(initial=0.0)))
    return worst


def cold_job_seconds(path: Path, out: Path, threads: int) -> float:
    """Wall time of a fresh interpreter running the topology job on one checkpoint."""
    code = (
        "from topotrain.jobs.topology import weight_topology_job; "
        f"weight_topology_job({str(path)!r}, {{'patterns': {list(PATTERNS)!r}, "
        f"'max_points': 200, 'seed': 0, 'maxdim': 1, 'engine': 'auto'}}, "
        f"{{'record': {str(out / 'r.json')!r}, 'diagrams': {str(out / 'r.npz')!r}}}, {threads})"
    )
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))
    return time.perf_counter() - start


def series_seconds(diagrams: dict[str, np.ndarray], checkpoints: int = CHECKPOINTS) -> float:
    """Wall time of ``run_series`` over ``checkpoints`` copies of ``diagrams``, each bar's ends
    jittered by a seeded 1 % so consecutive diagrams differ as in training."""
    from topotrain.topology.series import run_series

    rng = np.random.default_rng(0)
    series = []
    for step in range(checkpoints):
        jittered = {k: d * (1 + 0.01 * rng.random(d.shape)) for k, d in diagrams.items()}
        series.append((100 * step, jittered))
    start = time.perf_counter()
    run_series(series, {})
    return time.perf_counter() - start


def study_checkpoints(tmp: str, label: str):
    """Each study model's random checkpoint, written in ``tmp``: (name, path), announced on
    stderr as ``label: name ...``."""
    for name, config in study_models().items():
        print(f"{label}: {name} ...", file=sys.stderr, flush=True)
        path = Path(tmp) / f"{name}.safetensors"
        make_checkpoint(path, config)
        yield name, path


def time_median(fn, repeats: int) -> float:
    """Median seconds of ``repeats`` calls of ``fn``."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def run(repeats: int = 5, threads: int = 2, max_points: int = 200) -> list[dict]:
    """One row per model size: ms per checkpoint (project, reference), ratio, max difference."""
    from topotrain.jobs.topology import checkpoint_topology

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in study_checkpoints(tmp, "topology"):
            records, diagrams = checkpoint_topology(
                path, PATTERNS, max_points=max_points, n_threads=threads
            )
            ref = reference(path, PATTERNS, max_points, 0)
            project_s = time_median(
                lambda p=path: checkpoint_topology(p, PATTERNS, max_points, n_threads=threads),
                repeats,
            )
            reference_s = time_median(lambda p=path: reference(p, PATTERNS, max_points, 0), repeats)
            rows.append(
                {
                    "benchmark": "topology",
                    "model": name,
                    "matrices": len(records),
                    "threads": threads,
                    "project_ms": 1e3 * project_s,
                    "reference_ms": 1e3 * reference_s,
                    "speedup": reference_s / project_s,
                    "max_abs_difference": max_difference(records, diagrams, ref),
                    "cold_job_s": cold_job_seconds(path, Path(tmp), threads),
                    "series_run_s": (series_s := series_seconds(diagrams)),
                    "series_per_checkpoint_ms": 1e3 * series_s / CHECKPOINTS,
                }
            )
    return rows
