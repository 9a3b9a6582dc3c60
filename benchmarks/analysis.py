"""Benchmark: the analysis chain's hot loops against the NumPy they replace (issue 59, item 1).

A seed-effect interval (``seed_effect.effect_interval``) lists the breaks of every pair of a
model's cells and, at each end of its interval, takes the nearest breaks past a β0. On cells of
the default study's shape (5 models × 6 seeds × 201 checkpoints, pooled: 3.6 million breaks) this
times ``breaks.slope_breaks`` and ``breaks.nearest_beyond`` (64 pieces, as ``_hull_end`` asks
first) against the NumPy expressions of their docstrings, checks the outputs bit for bit, and
reports the ratio. A run's time-aware views rank every block-bootstrap resample (1,000 × 201 at
the default): ``exact_tests.resampled_ranks`` (counting) against ``scipy.stats.rankdata`` of the
resampled values (sorting), bit for bit.

    python -m benchmarks analysis            # a few seconds
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

SHAPE = (6, 201)  # seeds × checkpoints of a model in the default study
MODELS = 5
COUNT = 64  # _hull_end's first request: 4 · SCAN_GAPS pieces
RESAMPLES = 1000  # analysis.bootstrap_resamples' default


def numpy_breaks(groups):
    """seed_effect.slope_breaks before numba: every pair's break, by triu_indices."""
    out = [np.empty(0)]
    for x, y in groups:
        x, y = x.ravel(), y.ravel()
        i, j = np.triu_indices(x.size, 1)
        dy = y[i] - y[j]
        keep = dy != 0
        out.append((x[i] - x[j])[keep] / dy[keep])
    return np.concatenate(out)


def numpy_nearest(breaks, at, direction, count):
    """seed_effect._pieces' selection before numba."""
    d = (breaks - at) * direction
    d = d[d > 0]
    every = d.size <= count
    return np.unique(d if every else np.partition(d, count)[: count + 1]), every


def best_of(fn, repeats: int) -> tuple[float, object]:
    """(median seconds over ``repeats`` calls, the last result)."""
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def run(repeats: int = 7, progress=print) -> list[dict]:
    from topotrain.analysis.inference.breaks import nearest_beyond, slope_breaks

    rng = np.random.default_rng(0)
    groups = [(rng.standard_normal(SHAPE), rng.standard_normal(SHAPE)) for _ in range(MODELS)]
    slope_breaks(groups[:1])  # numba's compile (or cache load) outside the timing
    project_s, breaks = best_of(lambda: slope_breaks(groups), repeats)
    reference_s, want = best_of(lambda: numpy_breaks(groups), repeats)
    rows = [
        {
            "benchmark": "analysis",
            "model": "slope_breaks",
            "size": int(want.size),
            "project_ms": 1e3 * project_s,
            "reference_ms": 1e3 * reference_s,
            "speedup": reference_s / project_s,
            "equal": breaks.tobytes() == want.tobytes(),
        }
    ]
    at = float(np.median(breaks))
    nearest_beyond(breaks, at, 1.0, COUNT)
    project_s, got = best_of(lambda: nearest_beyond(breaks, at, 1.0, COUNT), repeats)
    reference_s, want = best_of(lambda: numpy_nearest(breaks, at, 1.0, COUNT), repeats)
    rows.append(
        {
            "benchmark": "analysis",
            "model": "nearest_beyond",
            "size": int(breaks.size),
            "project_ms": 1e3 * project_s,
            "reference_ms": 1e3 * reference_s,
            "speedup": reference_s / project_s,
            "equal": got[0].tobytes() == want[0].tobytes() and got[1] == want[1],
        }
    )
    from scipy import stats

    from topotrain.analysis.inference.exact_tests import resampled_ranks

    s = np.round(rng.standard_normal(SHAPE[1]), 2)  # a series with a few ties
    idx = rng.integers(0, s.size, (RESAMPLES, s.size))
    project_s, got = best_of(lambda: resampled_ranks(s, idx), repeats)
    reference_s, want = best_of(lambda: stats.rankdata(s[idx], axis=-1), repeats)
    rows.append(
        {
            "benchmark": "analysis",
            "model": "resampled_ranks",
            "size": int(idx.size),
            "project_ms": 1e3 * project_s,
            "reference_ms": 1e3 * reference_s,
            "speedup": reference_s / project_s,
            "equal": got.tobytes() == want.tobytes(),
        }
    )
    for row in rows:
        progress(
            f"{row['model']}: {row['size']:,} values, {row['project_ms']:.1f} ms against "
            f"the reference's {row['reference_ms']:.1f} ms (×{row['speedup']:.2f}), "
            f"equal {row['equal']}"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks analysis", description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    rows = run(args.repeats)
    return 0 if all(row["equal"] for row in rows) else 1
