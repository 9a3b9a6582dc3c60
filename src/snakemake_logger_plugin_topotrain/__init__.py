"""Snakemake's logger plugin ``topotrain`` (``snakemake --logger topotrain``): one progress
display for the whole study. The handler lives in ``topotrain.progress.handler``."""

from topotrain.progress.handler import LogHandler

__all__ = ["LogHandler"]
