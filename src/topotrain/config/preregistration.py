"""The pre-registration (``analysis.preregistration``, default workflow/preregistration.yaml): the
confirmatory study's design, questions, horizon, Δ, Δ_co and rule, written down before its first
job. ``summary`` gives what REPORT.md's header prints: the file's sha256, its status (draft or
frozen) and every way this run's configuration departs from the registered ``design`` and seeds.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml

STATUSES = ("draft", "frozen")
REQUIRED = ("status", "questions", "rule", "design", "confirmatory_seeds")


def _design_of(config: dict) -> dict:
    """The registered design's keys, read from a validated configuration."""
    train, analysis = config.get("train") or {}, config.get("analysis") or {}
    return {
        "models": list(config.get("models") or {}),
        "seeds_per_model": len(config.get("seeds") or []),
        "steps": train.get("steps"),
        "warmup_steps": train.get("warmup_steps"),
        "checkpoint_interval": train.get("checkpoint_interval"),
        "horizon": analysis.get("horizon"),
        "comove_from": analysis.get("comove_from"),
        "sesoi": analysis.get("sesoi"),
        "sesoi_co": analysis.get("sesoi_co"),
        "bottom_line_question": analysis.get("bottom_line_question"),
        "eval_seed": train.get("eval_seed"),
        "full_eval_every": train.get("full_eval_every"),
    }


def read(path: str | Path) -> dict:
    """The registration as a mapping; a clear error naming the file when it is missing, not
    YAML, or lacks a required key or a known status."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"analysis.preregistration: no file {path}")
    try:
        reg = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not YAML ({err})") from err
    if not isinstance(reg, dict):
        raise ValueError(f"{path}: a pre-registration is a mapping of {', '.join(REQUIRED)}")
    missing = [k for k in REQUIRED if k not in reg]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    if reg["status"] not in STATUSES:
        raise ValueError(f"{path}: status must be draft or frozen, not {reg['status']!r}")
    if not isinstance(reg["design"], dict):
        raise ValueError(f"{path}: design must be a mapping of configuration keys")
    return reg


def sha256(path: str | Path) -> str:
    """The file's sha256, of its bytes as committed."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def deviations(reg: dict, config: dict) -> list[str]:
    """'key: run value (registered value)' for each registered design key this configuration
    sets otherwise (a key the configuration lacks reads None), then the seeds when they are not
    the registered confirmatory seeds; [] when the run is the registered study."""
    have = _design_of(config)
    out = [
        f"{key}: {have.get(key)!r} (registered {want!r})"
        for key, want in reg["design"].items()
        if have.get(key) != want
    ]
    seeds, registered = list(config.get("seeds") or []), list(reg["confirmatory_seeds"])
    if seeds != registered:
        out.append(f"seeds: {seeds} (registered confirmatory seeds {registered})")
    return out


def summary(path: str | Path, config: dict) -> dict:
    """path, sha256, status and deviations (``deviations``, '; '-joined, '' when none) of the
    registration at ``path`` against ``config``."""
    reg = read(path)
    return {
        "path": str(path),
        "sha256": sha256(path),
        "status": reg["status"],
        "deviations": "; ".join(deviations(reg, config)),
    }
