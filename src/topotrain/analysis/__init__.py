"""Analysis stage, one room per question (reads tables, writes tables; no torch). A room imports
only rooms below it; ``inference`` is the base and imports none:

- ``inference``: is a feature tied to the loss beyond the clock and the scale? Statistics, the
  time-aware associations, the between-seed contrasts, their effects and intervals, the primary
  family, the same test on a group of your seeds, and the verdict words.
- ``tables``: what did each checkpoint measure? Records → the feature tables every question reads
  (the spine's, the Pythia revisions', your runs').
- ``prediction``: does early training (or size) predict the final loss, and when to stop?
  Final-loss predictors, scaling fits, stopping rules.
- ``control``: does the test find a real effect? The grokking control.
- ``dynamics``: how do features move through training? Phases, velocity, layer types, a run's
  associations and phases.
- ``confirmation``: does an exploratory hit hold on fresh seeds? Discovery, then confirmation.
- ``replication``: does each of the seed paper's claims hold? Its rules, their verdicts and Study
  B's perplexity correlations.
- ``calibration``: are those tests honest, and what can the design see? The simulator, the
  calibration suite, the effect intervals' miss rates, power at Δ.
"""
