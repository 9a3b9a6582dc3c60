"""Diagram summaries on diagrams computed by hand."""

import math

import numpy as np
import pytest

from topotrain.topology import bar_lengths, finite_bars, max_persistence  # the package's names
from topotrain.topology.summaries import feature_count, persistence_entropy, total_persistence

DIAGRAM = np.array([[0.0, 1.0], [0.5, 1.5], [1.0, 3.0], [0.0, np.inf]])  # lengths 1, 1, 2, inf


def test_summaries_of_a_hand_diagram():
    assert finite_bars(DIAGRAM).tolist() == [[0.0, 1.0], [0.5, 1.5], [1.0, 3.0]]
    assert bar_lengths(DIAGRAM).tolist() == [1.0, 1.0, 2.0]
    assert feature_count(DIAGRAM) == 3
    assert total_persistence(DIAGRAM) == 4.0  # 1 + 1 + 2
    assert max_persistence(DIAGRAM) == 2.0
    # p = (1/4, 1/4, 1/2): −(2·¼ ln ¼ + ½ ln ½) = ln 4 / 2 + ln 2 / 2 = 1.5 ln 2
    assert persistence_entropy(DIAGRAM) == pytest.approx(1.5 * math.log(2))


def test_equal_bars_have_entropy_log_n():
    d = np.column_stack([np.zeros(5), np.full(5, 0.3)])
    assert persistence_entropy(d) == pytest.approx(math.log(5))


def test_one_bar_has_zero_entropy():
    assert persistence_entropy(np.array([[0.2, 0.9]])) == 0.0


def test_zero_length_bars_count_but_carry_no_entropy():
    d = np.array([[0.0, 1.0], [0.5, 0.5], [2.0, 3.0]])  # lengths 1, 0, 1 → p = (½, ½)
    assert feature_count(d) == 3 and total_persistence(d) == 2.0
    assert persistence_entropy(d) == pytest.approx(math.log(2))


def test_entropy_is_scale_invariant():
    assert persistence_entropy(7.0 * DIAGRAM) == pytest.approx(persistence_entropy(DIAGRAM))


@pytest.mark.parametrize(
    "d",
    [np.empty((0, 2)), np.empty(0), np.array([[0.0, np.inf]])],
    ids=["empty", "flat-empty", "only-inf"],
)
def test_empty_diagram_summaries_are_zero(d):
    assert finite_bars(d).shape == (0, 2)
    summaries = (feature_count(d), total_persistence(d), max_persistence(d), persistence_entropy(d))
    assert summaries == (0, 0.0, 0.0, 0.0)


@pytest.mark.parametrize("d", [np.ones((3, 3)), np.ones(4)], ids=["3-columns", "1-D"])
def test_non_diagram_shapes_are_rejected(d):
    with pytest.raises(ValueError):
        finite_bars(d)
