"""Workflow configuration: the checks a JSON schema cannot express, and values derived from config.

The workflow calls ``check_config`` right after ``snakemake.utils.validate``, so a bad config fails
before any job runs, with a message naming the offending key.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import yaml

EMBEDDING_LAYERS = ("transformer.wte.weight", "transformer.wpe.weight")
SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A configuration that passes the schema but cannot describe a valid study."""


def float_integers(value, schema: dict, key: str = "") -> list[str]:
    """Problems for values the schema types ``integer`` that are floats such as 40.0.

    JSON Schema counts 40.0 as an integer, so ``validate`` lets it pass; Python's range() and torch
    do not. Walks ``properties``, ``additionalProperties`` and ``items`` of the schema.
    """
    if isinstance(value, float) and schema.get("type") == "integer":
        return [f"{key}: expected an integer, got {value!r} (write it without a decimal point)"]
    if isinstance(value, dict):
        props, other = schema.get("properties", {}), schema.get("additionalProperties")
        children = [(v, props.get(k, other), f"{key}.{k}" if key else k) for k, v in value.items()]
    elif isinstance(value, list):
        children = [(v, schema.get("items"), f"{key}[{i}]") for i, v in enumerate(value)]
    else:
        return []
    return [p for v, s, k in children if isinstance(s, dict) for p in float_integers(v, s, k)]


def check_config(config: dict, base_dir: str | Path = ".", schema: dict | None = None) -> None:
    """Raise ConfigError for what the schema cannot catch: floats for integers, heads vs width,
    checkpoint grid, warm-up, corpus files, empty layer patterns.

    ``schema`` (default: workflow/schemas/config.schema.yaml) tells which keys take integers.
    """
    problems = float_integers(config, schema or yaml.safe_load(SCHEMA.read_text()))
    for name, arch in config["models"].items():
        if arch["d_model"] % arch["n_head"]:
            problems.append(
                f"models.{name}: n_head={arch['n_head']} does not divide d_model={arch['d_model']}"
            )
    train = config["train"]
    if train["steps"] % train["checkpoint_interval"]:
        problems.append(
            f"train.checkpoint_interval={train['checkpoint_interval']} does not divide "
            f"train.steps={train['steps']}"
        )
    if train["warmup_steps"] > train["steps"]:
        problems.append(
            f"train.warmup_steps={train['warmup_steps']} exceeds train.steps={train['steps']}"
        )
    corpus = config["corpus"]
    if corpus["source"] == "files":
        for key in ("train", "validation"):
            path = corpus.get(key)
            if not path:
                problems.append(f"corpus.{key} must be set when corpus.source is 'files'")
            elif not (Path(base_dir) / path).is_file():
                problems.append(f"corpus.{key}: file {path} does not exist")
    for pattern in config["topology"]["layers"]:
        if not pattern.strip():
            problems.append("topology.layers: empty pattern")
    if problems:
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(problems))


def checkpoint_steps(train: dict) -> list[int]:
    """Steps at which checkpoints are written: 0, interval, 2·interval, …, steps."""
    return list(range(0, train["steps"] + 1, train["checkpoint_interval"]))


def layer_patterns(topology: dict) -> list[str]:
    """The fnmatch patterns of the matrices to analyse, embeddings appended when asked for."""
    patterns = list(topology["layers"])
    if topology.get("include_embeddings", False):
        patterns += [
            e for e in EMBEDDING_LAYERS if not any(fnmatch.fnmatch(e, p) for p in patterns)
        ]
    return patterns


def n_params(d_model: int, n_layer: int, vocab_size: int = 128, context: int = 128) -> int:
    """Closed-form parameter count of the GPT family (tied head): (V+T)d + L(12d² + 13d) + 2d."""
    return (
        (vocab_size + context) * d_model + n_layer * (12 * d_model**2 + 13 * d_model) + 2 * d_model
    )
