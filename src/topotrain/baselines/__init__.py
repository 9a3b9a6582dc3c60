"""Non-topological baselines measured on the same matrices as the topology, each through its own
maintained package: WeightWatcher's spectral metrics (``weightwatcher``: imports torch, which the
weightwatcher package needs; ``topology/`` imports neither)."""
