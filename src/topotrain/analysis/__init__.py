"""Analysis stage: the feature table (``aggregate``), correlations and their across-seed summary
(``stats``), the time-aware associations with clock and scale baselines (``associations``), scaling
fits, final-loss prediction with its placebos, phases, the verdict per published claim
(``replication``), and the Pythia tables. Reads tables, writes tables; no torch."""
