"""Hugging Face hub settings read at call time (huggingface_hub reads them once, at import)."""

from __future__ import annotations

import os
from pathlib import Path

TRUE = {"1", "true", "yes", "on"}


def hub_cache_dir() -> Path:
    """The hub cache: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or Path.home() / ".cache" / "huggingface"
    return Path(home) / "hub"


def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE asks to resolve from the cache only."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE
