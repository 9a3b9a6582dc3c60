"""Analysis stage: the feature table (``aggregate``), correlations (``stats``), scaling fits,
final-loss prediction, phases, and the Pythia tables. Reads tables, writes tables; no torch."""
