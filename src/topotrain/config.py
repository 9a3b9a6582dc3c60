"""Workflow configuration: string coercion, the checks a JSON schema cannot express, and values
derived from config.

The workflow calls ``coerce_config`` right before ``snakemake.utils.validate`` (``--config`` gives
nested values as strings) and ``check_config`` right after, so a bad config fails before any job
runs, with a message naming the offending key.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from pathlib import Path

import yaml

GPT_LAYERS = (
    "transformer.h.*.attn.c_attn.weight",
    "transformer.h.*.attn.c_proj.weight",
    "transformer.h.*.mlp.c_fc.weight",
    "transformer.h.*.mlp.c_proj.weight",
)  # the spine's four linear maps per block (config.yaml topology.layers)
EMBEDDING_LAYERS = ("transformer.wte.weight", "transformer.wpe.weight")  # include_embeddings
GPT_NEOX_LAYERS = (
    "gpt_neox.layers.*.attention.query_key_value.weight",
    "gpt_neox.layers.*.attention.dense.weight",
    "gpt_neox.layers.*.mlp.dense_h_to_4h.weight",
    "gpt_neox.layers.*.mlp.dense_4h_to_h.weight",
)  # Pythia's linear maps (config.yaml pythia.weights.layers)
_SCHEMA = Path("workflow") / "schemas" / "config.schema.yaml"
SCHEMA = next(
    (
        base / _SCHEMA
        for base in (
            Path(__file__).resolve().parent / "_workflow",
            Path(__file__).resolve().parents[2],
        )
        if (base / _SCHEMA).is_file()
    ),
    Path(__file__).resolve().parents[2] / _SCHEMA,
)  # the wheel's bundled workflow (setup.py), else the checkout


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


# coerce_config: Snakemake parses nested --config values with YAML's BaseLoader, so
# train='{steps: 1000}' arrives as the string '1000'. Strings become what the schema declares, in
# YAML's spellings: null/~/'' (where null is allowed, even beside strings), true/yes/on and
# false/no/off (lower, Title, UPPER case), 40 for integers (not 40.5 or 40.0), 1e-3 or 3.0e-3 for
# numbers. A string the schema accepts as a string stays one, and one that fits no declared type
# is kept as it is, so that validation reports it under its key. Non-strings are never touched.
_NULLS = ("", "~", "null", "Null", "NULL")
_BOOLS = {  # YAML 1.1 booleans, as PyYAML reads them in config.yaml
    spelling: value
    for value, words in ((True, ("true", "yes", "on")), (False, ("false", "no", "off")))
    for word in words
    for spelling in (word, word.title(), word.upper())
}
_INTEGER = re.compile(r"[-+]?[0-9]+")
_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_KINDS = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}


def _branches(schema: dict) -> list[dict]:
    """The alternatives of ``schema``: itself, or each anyOf/oneOf entry merged with it."""
    alternatives = schema.get("anyOf", []) + schema.get("oneOf", [])
    base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
    return [b for alt in alternatives for b in _branches({**base, **alt})] or [schema]


def _types(schema: dict) -> list[str]:
    """The JSON types ``schema`` declares (``type: integer`` or ``type: [string, "null"]``)."""
    types = schema.get("type", [])
    return [types] if isinstance(types, str) else list(types)


def _fits(schema: dict, value: str | bool | int | float | None) -> bool:
    """Whether ``value``'s JSON type, and its membership where an enum is listed, fit ``schema``."""
    types, kind = _types(schema), _KINDS[type(value)]
    listed = any(type(e) is type(value) and e == value for e in schema.get("enum", [value]))
    return listed and (not types or kind in types or (kind == "integer" and "number" in types))


def _coerce_string(text: str, schema: dict) -> str | bool | int | float | None:
    """``text`` as the null, boolean, integer or number ``schema`` declares,
    else ``text`` itself."""
    branches = _branches(schema)
    if text in _NULLS and any("null" in _types(b) or None in b.get("enum", []) for b in branches):
        return None
    candidates = [
        text,
        _BOOLS.get(text),
        int(text) if _INTEGER.fullmatch(text) else None,
        float(text) if _NUMBER.fullmatch(text) else None,
    ]
    fitting = (v for v in candidates if v is not None and any(_fits(b, v) for b in branches))
    return next(fitting, text)


def coerce_config(config: dict | list, schema: dict) -> dict | list:
    """Turn ``config``'s strings into the integers, numbers, booleans and nulls ``schema`` declares
    for them, in place and at any depth (spellings above); returns ``config``."""
    branches, is_dict = _branches(schema), isinstance(config, dict)
    for key, value in list(config.items() if is_dict else enumerate(config)):
        if is_dict:
            found = [b.get("properties", {}).get(key) for b in branches]
            found += [b.get("additionalProperties") for b in branches]
        else:
            found = [b.get("items") for b in branches]
        child = next((s for s in found if isinstance(s, dict)), None)
        if child is None:
            continue
        if isinstance(value, str):
            config[key] = _coerce_string(value, child)
        elif isinstance(value, (dict, list)):
            coerce_config(value, child)
    return config


NAME_MAPS = ("models", "runs")  # name → entry: a config that gives one gives all of its entries
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a model's or run's name: a folder name
NAME_RULE = (
    "use letters, digits, '.', '_' or '-' (no spaces or slashes), starting with a letter or digit"
)


def fill_defaults(config: dict, defaults: dict, _top: bool = True) -> dict:
    """Add every key of ``defaults`` that ``config`` lacks, in place and at any depth; returns
    ``config``. Nothing the config gives (from a file, --configfile or --config) is replaced, and
    a NAME_MAPS section it gives is taken whole (defaults add no model or run to it): so a folder
    holding only an overlay (say, just ``runs:``) runs with the package's defaults underneath."""
    for key, value in defaults.items():
        if key not in config:
            config[key] = copy.deepcopy(value)
        elif isinstance(value, dict) and isinstance(config[key], dict):
            if not (_top and key in NAME_MAPS):
                fill_defaults(config[key], value, _top=False)
    return config


def order_like_schema(config: dict, schema: dict) -> dict:
    """Reorder ``config``'s keys, in place and at any depth, as ``schema``'s ``properties`` list
    them (other keys after, in their order); returns ``config``. The same settings then give the
    same rule params whether they came from a file or from ``--config`` (which Snakemake puts
    first), so its params trigger reruns nothing."""
    props, other = schema.get("properties", {}), schema.get("additionalProperties")
    keys = [k for k in props if k in config] + [k for k in config if k not in props]
    for key, value in [(k, config.pop(k)) for k in keys]:
        child = props.get(key, other)
        if isinstance(value, dict) and isinstance(child, dict):
            order_like_schema(value, child)
        config[key] = value
    return config


def check_config(config: dict, base_dir: str | Path = ".", schema: dict | None = None) -> None:
    """Raise ConfigError for what the schema cannot catch: floats for integers, heads vs width,
    checkpoint grid, warm-up, corpus files, empty layer patterns, the runs: entries.

    ``schema`` (default: workflow/schemas/config.schema.yaml) tells which keys take integers.
    """
    problems = float_integers(config, schema or yaml.safe_load(SCHEMA.read_text()))
    problems += [
        f"{section}: name {name!r}: {NAME_RULE}"
        for section in NAME_MAPS
        for name in config.get(section) or {}
        if not NAME.match(str(name))
    ]
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
    for name, entry in (config.get("runs") or {}).items():
        problems += run_problems(name, entry, base_dir)
    if control_enabled(config):
        problems += control_problems(config["control"])
    branches = (spine_enabled(config), config.get("runs"), pythia_enabled(config))
    if not any(branches) and not control_enabled(config):
        problems.append(
            "spine.enabled is false and there are no runs, no pythia and no control: nothing to do"
        )
    if problems:
        raise ConfigError("invalid configuration:\n  - " + "\n  - ".join(problems))


CONTROL_RULES = {
    "p": "p must be at least 5",
    "train_frac": "the train fraction must lie in (0, 1)",
    "width": "the width must be a positive multiple of heads",
    "heads": "heads must be at least 1",
    "interval": "the checkpoint interval must be positive and divide steps",
}  # the grokking control's knobs the schema cannot check alone (training.modular.ControlConfig)


def control_problems(control: dict) -> list[str]:
    """What is wrong with the control's knobs (empty: nothing), each naming control.<knob>."""
    heads = control.get("heads", 1)
    bad = {
        "p": control.get("p", 5) < 5,
        "train_frac": not 0 < control.get("train_frac", 0.5) < 1,
        "width": control.get("width", 1) < 1 or control.get("width", 1) % max(heads, 1) != 0,
        "heads": heads < 1,
        "interval": control.get("interval", 1) < 1
        or control.get("steps", 0) % max(control.get("interval", 1), 1) != 0,
    }
    return [
        f"control.{knob}={control.get(knob)!r}: {CONTROL_RULES[knob]}"
        for knob, wrong in bad.items()
        if wrong
    ]


def control_enabled(config: dict) -> bool:
    """Whether the grokking control (control.enabled) is part of the run."""
    return bool((config.get("control") or {}).get("enabled", False))


def spine_enabled(config: dict) -> bool:
    """Whether the paper's study (models × seeds, trained here) is part of the run."""
    return bool((config.get("spine") or {}).get("enabled", True))


def pythia_enabled(config: dict) -> bool:
    return bool((config.get("pythia") or {}).get("enabled", False))


def run_problems(name: str, entry: dict, base_dir: str | Path = ".") -> list[str]:
    """What is wrong with one ``runs:`` entry that the schema cannot say (empty: nothing)."""
    key, problems = f"runs.{name}", []
    local, hub = bool(entry.get("path")), bool(entry.get("hub"))
    listed, pattern = bool(entry.get("revisions")), bool(entry.get("revision_pattern"))
    if local == hub:
        problems.append(f"{key}: give either path (a local folder) or hub (a repo id)")
    elif hub and listed == pattern:
        problems.append(
            f"{key}: a hub run needs revisions (a list) or revision_pattern, one of them"
        )
    elif local and (listed or pattern):
        problems.append(f"{key}: revisions and revision_pattern are for hub runs, not path")
    if hub and entry.get("glob"):
        problems.append(f"{key}: glob is for a local path, not a hub run")
    for field in ("step_regex", "revision_pattern"):
        try:
            groups = re.compile(entry.get(field) or "").groups
        except re.error as err:
            problems.append(f"{key}.{field}: not a regular expression ({err})")
            continue
        if field == "step_regex" and groups > 1:
            problems.append(f"{key}.step_regex: one group (the step), got {groups}")
    if local and not (Path(base_dir) / entry["path"]).is_dir():
        problems.append(f"{key}.path: folder {entry['path']} does not exist")
    for field in ("losses", "config"):
        if entry.get(field) and not (Path(base_dir) / entry[field]).exists():
            problems.append(f"{key}.{field}: {entry[field]} does not exist")
    if entry.get("transposed") and not entry.get("layers"):
        problems.append(f"{key}.transposed: only used with layers: patterns (no config.json)")
    problems += [f"{key}.layers: empty pattern" for p in entry.get("layers", []) if not p.strip()]
    return problems


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
