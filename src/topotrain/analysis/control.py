"""The grokking control's timing rules, one place each: when a seed groks, when a feature moves,
and the lead of one over the other.

- grokking_step: the first checkpoint with test accuracy ≥ ``threshold`` (0.95); None when the
  seed never groks (reported as such and left out of the lead statistics, never dropped).
- onset_step: the first checkpoint at which a feature has made half its total change,
  |v_t − v_0| ≥ ½·|v_T − v_0| (v_T its last value). It looks ahead: v_T is known only at the end
  of the run, so it dates a change with hindsight, like the phases table's peak.
- lead = grokking step − onset step: > 0 when the feature moves before test accuracy does.
"""

from __future__ import annotations

import numpy as np

GROKKED = 0.95  # test accuracy that counts as generalised
HALF = 0.5  # onset: this fraction of the total change


def grokking_step(steps, test_accuracy, threshold: float = GROKKED) -> int | None:
    """The first step with test accuracy ≥ threshold (steps ascending), or None."""
    steps, acc = np.asarray(steps), np.asarray(test_accuracy, float)
    hit = np.flatnonzero(acc >= threshold)
    return int(steps[hit[0]]) if hit.size else None


def onset_step(steps, values, fraction: float = HALF) -> int | None:
    """The first step where |v − v_0| ≥ fraction·|v_T − v_0| (finite values, steps ascending);
    None for a series that does not change or has fewer than two finite values."""
    steps, values = np.asarray(steps), np.asarray(values, float)
    keep = np.isfinite(values)
    steps, values = steps[keep], values[keep]
    if values.size < 2 or values[-1] == values[0]:
        return None
    moved = np.abs(values - values[0]) >= fraction * abs(values[-1] - values[0])
    return int(steps[np.flatnonzero(moved)[0]])


def lead(grok: int | None, onset: int | None) -> float:
    """grokking step − onset step, NaN when either is undefined."""
    return float(grok - onset) if grok is not None and onset is not None else float("nan")
