"""Logging for workflow scripts: everything (logging, warnings, tqdm on stderr) goes to
the rule's log."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def setup_logging(log_path: str | Path | None = None, level: int = logging.INFO) -> None:
    """Send logging records and stderr to ``log_path`` (the rule's ``log:``),
    or to stderr if None."""
    if log_path is not None:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        stream = open(log_path, "a", buffering=1)  # noqa: SIM115 - lives for the whole job
        sys.stderr = stream
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
