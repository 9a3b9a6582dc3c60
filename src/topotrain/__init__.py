"""topotrain: the topology of transformer training, as a reproducible Snakemake workflow."""

__version__ = "0.1.0"
