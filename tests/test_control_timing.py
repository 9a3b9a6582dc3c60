"""The grokking control's timing rules on hand-made curves."""

from __future__ import annotations

import numpy as np

from topotrain.analysis.control import grokking_step, lead, onset_step

STEPS = np.arange(0, 1100, 100)


def test_grokking_is_the_first_checkpoint_at_or_above_the_threshold():
    acc = [0.1, 0.5, 0.55, 0.6, 0.7, 0.94, 0.95, 0.99, 1.0, 1.0, 1.0]
    assert grokking_step(STEPS, acc) == 600
    assert grokking_step(STEPS, [0.5] * 11) is None  # never groks: None, not an error


def test_onset_is_the_first_checkpoint_past_half_the_total_change_in_either_direction():
    rising = [0, 0, 1, 2, 4, 6, 8, 9, 10, 10, 10]  # half of 10 is first reached at 6
    assert onset_step(STEPS, rising) == 500
    assert onset_step(STEPS, [-v for v in rising]) == 500
    assert onset_step(STEPS, [3.0] * 11) is None  # no change, no onset
    nan = [np.nan, 0, 1, 2, 4, 6, 8, 9, 10, 10, 10]  # v_0 is the first finite value
    assert onset_step(STEPS, nan) == 500


def test_lead_is_grokking_minus_onset_and_undefined_without_either():
    assert lead(600, 500) == 100.0 and lead(500, 600) == -100.0
    assert np.isnan(lead(None, 500)) and np.isnan(lead(600, None))
