"""Cells of an analysis spread over processes, results in the order of the tasks: the same
table whatever the number of processes (every cell seeds its own resampling)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor


def map_tasks(work: Callable, tasks: Sequence, threads: int = 1) -> list:
    """``[work(t) for t in tasks]``, over ``threads`` processes when more than one (and more
    than one task); ``work`` and the tasks must pickle."""
    if threads <= 1 or len(tasks) <= 1:
        return [work(task) for task in tasks]
    with ProcessPoolExecutor(min(threads, len(tasks))) as pool:
        return list(pool.map(work, tasks))
