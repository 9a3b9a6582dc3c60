"""Diagram summaries on diagrams computed by hand."""

import math

import numpy as np
import pytest

from topotrain.topology import (
    feature_count,
    finite_bars,
    max_persistence,
    persistence_entropy,
    total_persistence,
)

DIAGRAM = np.array([[0.0, 1.0], [0.5, 1.5], [1.0, 3.0], [0.0, np.inf]])  # lengths 1, 1, 2, inf


def test_summaries_of_a_hand_diagram():
    assert finite_bars(DIAGRAM).tolist() == [1.0, 1.0, 2.0]
    assert feature_count(DIAGRAM) == 3
    assert total_persistence(DIAGRAM) == 4.0
    assert max_persistence(DIAGRAM) == 2.0
    # p = (1/4, 1/4, 1/2): −(2·¼ ln ¼ + ½ ln ½) = 1.5 ln 2
    assert persistence_entropy(DIAGRAM) == pytest.approx(1.5 * math.log(2))


def test_equal_bars_have_entropy_log_n():
    d = np.column_stack([np.zeros(5), np.full(5, 0.3)])
    assert persistence_entropy(d) == pytest.approx(math.log(5))


@pytest.mark.parametrize("d", [np.empty((0, 2)), np.array([[0.0, np.inf]])], ids=["empty", "only-inf"])
def test_empty_diagram_summaries_are_zero(d):
    assert (feature_count(d), total_persistence(d), max_persistence(d), persistence_entropy(d)) == (
        0,
        0.0,
        0.0,
        0.0,
    )
