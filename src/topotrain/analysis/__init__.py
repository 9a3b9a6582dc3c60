"""Analysis stage, one room per question (reads tables, writes tables; no torch):

- ``inference``: is a feature tied to the loss beyond the clock and the scale? Statistics, the
  time-aware associations, the between-seed contrasts, their effects and intervals, the primary
  family and the verdict words.
- ``calibration``: are those tests honest, and what can the design see? The simulator, the
  calibration suite, the effect intervals' miss rates, power at Δ.
- ``replication``: does the seed paper's each claim hold? Its rules and their verdicts.
- ``prediction``: does early training (or size) predict the final loss, and when to stop?
  Final-loss predictors, scaling fits, stopping rules.
- ``dynamics``: how do features move through training? Phases, velocity, layer types.
- ``control``: does the test find a real effect? The grokking control.

Beside them: ``aggregate`` (records → feature tables), ``pythia`` (Study B's tables), ``runs``
(your runs' tables) and ``confirm`` (discovery, then confirmation on fresh seeds).
"""
