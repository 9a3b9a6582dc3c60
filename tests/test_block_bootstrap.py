"""run_views.block_indices against arch's StationaryBootstrap, the reference it replaces: the same
indices, resample for resample, from the same seed."""

from __future__ import annotations

import numpy as np
import pytest
from arch.bootstrap import StationaryBootstrap

from topotrain.analysis.inference.run_views import block_indices


@pytest.mark.parametrize(
    "n, length, resamples, seed",
    [(201, 7.3, 50, 0), (40, 1.0, 20, 3), (12, 6.0, 30, 11), (3, 1.5, 10, 5), (200, 100.0, 5, 2)],
)
def test_the_indices_are_arch_stationary_bootstraps(n, length, resamples, seed):
    boot = StationaryBootstrap(length, np.arange(n), seed=np.random.default_rng(seed))
    reference = np.stack([boot.update_indices() for _ in range(resamples)])
    np.testing.assert_array_equal(block_indices(n, length, resamples, seed), reference)


def test_blocks_wrap_around_and_have_the_mean_length():
    idx = block_indices(50, 5.0, 400, 1)
    steps = np.diff(idx, axis=1)
    assert set(np.unique(steps[(steps != 1)])) >= {-49}  # a block runs past the end to 0
    new_blocks = (steps != 1) & (steps != -49)  # a continuation is +1 (or 49 → 0)
    mean = idx.size / (new_blocks.sum() + idx.shape[0])  # blocks per resample, 1 at position 0
    assert 4.0 < mean < 6.0


def test_the_cached_draws_serve_every_block_length_alike():
    # block_indices draws once per (n, resamples, seed) and lays the blocks out per length: the
    # same indices as fresh arch draws for each length, in any order of calls
    for length in (3.0, 1.0, 12.5, 3.0):
        boot = StationaryBootstrap(length, np.arange(60), seed=np.random.default_rng(4))
        reference = np.stack([boot.update_indices() for _ in range(25)])
        np.testing.assert_array_equal(block_indices(60, length, 25, 4), reference)


@pytest.mark.parametrize(
    "n, resamples, seed", [(201, 300, 9), (200, 300, 9), (3, 40, 0), (2, 5, 1)]
)
def test_the_bulk_draws_are_the_generators_calls(n, resamples, seed):
    # the raw-output path itself (not through its own check): the generator's numbers, odd n
    # carrying a 32-bit half from one resample's starts to the next
    from topotrain.analysis.inference.bootstrap_draws import _bulk, looped

    bulk = _bulk(n, resamples, seed)
    assert bulk is not None
    for got, want in zip(bulk, looped(n, resamples, seed), strict=True):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_a_redrawn_start_falls_back_to_the_generators_calls(monkeypatch):
    # where a 32-bit draw would be redrawn the bulk path gives up and the generator is called
    # one resample at a time (here every draw counts as redrawn)
    from topotrain.analysis.inference import bootstrap_draws as bd

    assert bd.redraw_below(201) == 100  # 2³² − 201 = 201 · 21,367,995 + 100
    assert bd._bulk(1, 3, 0) is None  # integers(1) draws nothing: not the 32-bit path
    monkeypatch.setattr(bd, "redraw_below", lambda n: 2**32 - 1)
    assert bd._bulk(201, 4, 0) is None
    for got, want in zip(bd.stationary_draws(201, 4, 0), bd.looped(201, 4, 0), strict=True):
        np.testing.assert_array_equal(got, want)


def test_stationary_draws_check_their_head_against_the_generator(monkeypatch):
    # a bulk path that went wrong (here: shifted by one) is caught by the check on the first
    # resamples and replaced by the generator's own calls
    from topotrain.analysis.inference import bootstrap_draws as bd

    real = bd._bulk
    monkeypatch.setattr(bd, "_bulk", lambda *a: tuple(np.roll(x, 1) for x in real(*a)))
    for got, want in zip(bd.stationary_draws(50, 20, 3), bd.looped(50, 20, 3), strict=True):
        np.testing.assert_array_equal(got, want)
