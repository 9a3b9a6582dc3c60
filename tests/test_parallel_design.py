"""A job's co-movement design reaches its worker processes (``parallel.map_tasks``)."""

import multiprocessing

from topotrain.analysis.inference import comovement as co
from topotrain.analysis.inference.parallel import design_initializer, map_tasks


def _design(_task) -> tuple[float, float]:
    return co.current_horizon(), co.current_start()


def test_workers_start_with_this_processs_horizon_and_first_step():
    co.set_horizon(250, 40)  # the conftest restores the unit baseline afterwards
    assert map_tasks(_design, [0, 1, 2], threads=2) == [(250.0, 40.0)] * 3
    init = design_initializer()
    assert init["initargs"] == (250.0, 40.0) and init["initializer"] is co.set_horizon


def test_a_spawned_worker_gets_it_too():
    """Under spawn a worker imports the module afresh (defaults), then runs the initializer."""
    from concurrent.futures import ProcessPoolExecutor

    co.set_horizon(75, 5)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=ctx, **design_initializer()) as pool:
        assert pool.submit(_design, 0).result() == (75.0, 5.0)
