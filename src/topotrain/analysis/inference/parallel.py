"""Cells of an analysis spread over processes, results in the order of the tasks: the same
table whatever the number of processes (every cell seeds its own resampling)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor


def map_tasks(work: Callable, tasks: Sequence, threads: int = 1) -> list:
    """``[work(t) for t in tasks]``, over ``threads`` processes when more than one (and more
    than one task); ``work`` and the tasks must pickle. Each process starts with this one's
    co-movement design (``design_initializer``: H and the first step), whatever the start method."""
    if threads <= 1 or len(tasks) <= 1:
        return [work(task) for task in tasks]
    with ProcessPoolExecutor(min(threads, len(tasks)), **design_initializer()) as pool:
        return list(pool.map(work, tasks))


def design_initializer() -> dict:
    """ProcessPoolExecutor's initializer and its arguments: this process's co-movement H and first
    step set in each worker (``comovement.set_horizon``), so a job's ``analysis.horizon`` and
    ``comove_from`` reach its workers under spawn as under fork."""
    from topotrain.analysis.inference.comovement import (
        current_horizon,
        current_start,
        set_horizon,
    )

    return {"initializer": set_horizon, "initargs": (current_horizon(), current_start())}
