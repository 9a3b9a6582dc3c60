"""The numba breaks of a seed-effect interval against the NumPy expressions they replace."""

import numpy as np
import pytest

from benchmarks.analysis import numpy_breaks, numpy_nearest  # the NumPy the loops replace
from topotrain.analysis.inference.breaks import nearest_beyond, slope_breaks


def groups_of(rng, shapes, ties):
    """(x, y) per shape; with ``ties``, values drawn from a few levels (equal y: no break;
    equal breaks: repeats)."""
    out = []
    for shape in shapes:
        if ties:
            x, y = rng.integers(-3, 4, shape) / 3.0, rng.integers(-2, 3, shape) / 2.0
        else:
            x, y = rng.standard_normal(shape), rng.standard_normal(shape)
        out.append((x, y))
    return out


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("shapes", [[(5, 20)], [(3, 7), (4, 11), (6, 9)], [(2, 1)], [(1, 1)]])
def test_slope_breaks_are_the_numpy_expression_bit_for_bit(shapes, ties):
    rng = np.random.default_rng(len(shapes) + ties)
    groups = groups_of(rng, shapes, ties)
    got, want = slope_breaks(groups), numpy_breaks(groups)
    assert got.dtype == np.float64
    assert got.tobytes() == want.tobytes()


def test_slope_breaks_by_hand():
    # x = (0, 1, 3), y = (0, 2, 2): pairs (0,1) → −1/−2 = 0.5, (0,2) → −3/−2 = 1.5, (1,2) dy = 0
    assert slope_breaks([(np.array([0.0, 1.0, 3.0]), np.array([0.0, 2.0, 2.0]))]).tolist() == [
        0.5,
        1.5,
    ]
    assert slope_breaks([]).size == 0


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("count", [0, 1, 5, 64, 10_000])
def test_nearest_beyond_is_the_numpy_expression(count, ties):
    rng = np.random.default_rng(count)
    breaks = numpy_breaks(groups_of(rng, [(4, 15), (5, 12)], ties))
    for at in (-0.7, 0.0, 0.25, float(np.median(breaks)), 3.0):
        for direction in (-1.0, 1.0):
            got, every = nearest_beyond(breaks, at, direction, count)
            want, want_every = numpy_nearest(breaks, at, direction, count)
            assert every == want_every
            assert got.tobytes() == want.tobytes()


def test_nearest_beyond_by_hand():
    breaks = np.array([3.0, 1.0, 2.0, 2.0, -1.0, np.nan, 0.5])
    d, every = nearest_beyond(breaks, 0.5, 1.0, 2)  # beyond 0.5: 3, 1, 2, 2 → d 2.5, 0.5, 1.5, 1.5
    assert d.tolist() == [0.5, 1.5] and not every  # the 3 nearest with repeats: 0.5, 1.5, 1.5
    d, every = nearest_beyond(breaks, 0.5, -1.0, 5)  # below 0.5: only −1 → d 1.5
    assert d.tolist() == [1.5] and every
    d, every = nearest_beyond(breaks, 10.0, 1.0, 3)
    assert d.size == 0 and every
