"""The configuration's schema (workflow/schemas/config.schema.yaml): where it lives, the defaults
it declares (the one place a knob's default is written) and the checks of a section against it.

``fill_defaults`` adds every ``default`` the schema declares and a config lacks: an object
section the config omits takes ``default: {}`` and then its keys' defaults, and a map of names
(``models``, ``runs``) that the config gives is taken whole, its entries filled key by key.
``DEFAULTS`` is the config the schema alone describes; library code (``live``, the trainer, the
series) takes its keyword defaults from it. ``config_hash`` names a validated config in a few
characters (REPORT.md's header). ``schema_problems`` is what the schema finds wrong with a whole
config, one line per problem naming its key path (``train.stepz``, ``seeds[1]``), and
``invalid_config`` the message a config that fails stops with.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
import reprlib
from collections.abc import Mapping
from pathlib import Path

import yaml

_SCHEMA = Path("workflow") / "schemas" / "config.schema.yaml"
_PACKAGE = Path(__file__).resolve().parents[1]  # src/topotrain, or site-packages/topotrain
SCHEMA = next(
    (
        base / _SCHEMA
        for base in (_PACKAGE / "_workflow", _PACKAGE.parents[1])
        if (base / _SCHEMA).is_file()
    ),
    _PACKAGE.parents[1] / _SCHEMA,
)  # the wheel's bundled workflow (setup.py), else the checkout


def load_schema() -> dict:
    """The schema as a dict (a fresh copy: callers may change it)."""
    return yaml.load(SCHEMA.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


_SCHEMA_DICT = load_schema()


def fill_defaults(config: dict, schema: dict | None = None) -> dict:
    """Add the schema's defaults that ``config`` lacks, in place and at any depth; returns
    ``config``. Nothing the config gives is replaced; what is invalid is left for validation.
    (The walk ``snakemake.utils.validate(set_default=True)`` makes, with each default a copy.)"""
    schema = _SCHEMA_DICT if schema is None else schema
    props, other = schema.get("properties", {}), schema.get("additionalProperties")
    for key, child in props.items():
        if key not in config and isinstance(child, dict) and "default" in child:
            config[key] = copy.deepcopy(child["default"])
    for key, value in config.items():
        child = props.get(key, other)
        if isinstance(value, dict) and isinstance(child, dict):
            fill_defaults(value, child)
    return config


DEFAULTS = fill_defaults({})  # read-only: the settings of a config that gives nothing
RUN_DEFAULTS = fill_defaults({"runs": {"run": {}}})["runs"]["run"]  # a runs: entry's defaults


def choices(section: str, key: str) -> tuple:
    """The values the schema allows for ``section.key`` (its ``enum``)."""
    return tuple(_SCHEMA_DICT["properties"][section]["properties"][key]["enum"])


_REASONS = {
    "enum": lambda v: "must be one of " + ", ".join(yaml.safe_dump(e).split("\n")[0] for e in v),
    "minimum": lambda v: f"must be at least {v}",
    "maximum": lambda v: f"must be at most {v}",
    "exclusiveMinimum": lambda v: f"must be greater than {v}",
    "exclusiveMaximum": lambda v: f"must be less than {v}",
    "type": lambda v: f"must be of type {v}",
}


def section_problems(section: str, values: dict) -> list[str]:
    """What the schema finds wrong with ``values`` as the config's ``section`` (empty: nothing),
    each as ``section.key=value: reason``. ``values`` may give only some of the section's keys."""
    from jsonschema import Draft202012Validator  # here: jobs that never check a section skip it

    validator = Draft202012Validator(_SCHEMA_DICT["properties"][section])
    problems = []
    for error in sorted(validator.iter_errors(values), key=lambda e: list(map(str, e.path))):
        where = ".".join([section, *map(str, error.absolute_path)])
        reason = _REASONS.get(str(error.validator))
        if reason and error.absolute_path:
            problems.append(f"{where}={error.instance!r}: {reason(error.validator_value)}")
        else:
            problems.append(f"{where}: {error.message}")
    return problems


def key_path(parts) -> str:
    """A config key's path as a person writes it: ``train.steps``, ``seeds[1]``,
    ``confirm.hypotheses[0].kind``; ``(the config)`` for the root."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f"{'.' if text else ''}{part}"
    return text or "(the config)"


LONG = 60  # a value's repr longer than this is shortened in a problem's line


def schema_problems(config: dict, schema: dict | None = None) -> list[str]:
    """What the schema finds wrong with a whole ``config`` (empty: nothing), one line each in
    the order of their keys: ``key.path: jsonschema's message`` (a long value shortened); an
    unknown key is named with the closest known one (``trian: … did you mean train?``)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    errors = Draft202012Validator(_SCHEMA_DICT if schema is None else schema).iter_errors(config)
    problems = []
    for error in errors:
        error = best_match([error])  # the alternative of an anyOf/oneOf that came closest
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and error.validator_value is False:
            problems += unknown_keys(path, error.instance, error.schema)
            continue
        message = error.message
        if len(repr(error.instance)) > LONG:
            message = message.replace(repr(error.instance), reprlib.repr(error.instance))
        problems.append(f"{key_path(path)}: {message}")
    return sorted(problems)  # by key path


def unknown_keys(path: list, instance: dict, schema: dict) -> list[str]:
    """One line per key of ``instance`` that ``schema`` (additionalProperties: false) does not
    know, with the closest key it knows."""
    known = list(schema.get("properties", {}))
    patterns = list(schema.get("patternProperties", {}))
    lines = []
    for key in instance:
        if key in known or any(re.search(p, str(key)) for p in patterns):
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f"; did you mean {key_path([*path, close[0]])}?" if close else ""
        lines.append(
            f"{key_path([*path, key])}: Additional properties are not allowed "
            f"({key!r} was unexpected{hint})"
        )
    return lines


def invalid_config(problems: list[str]) -> str:
    """The message a config with ``problems`` stops with: one problem on one line, several one
    a line below."""
    if len(problems) == 1:
        return f"invalid configuration: {problems[0]}"
    return "invalid configuration:\n  - " + "\n  - ".join(problems)


def config_hash(config: Mapping) -> str:
    """The first 12 hex digits of the sha256 of ``config`` as canonical JSON (keys sorted, no
    spaces): the same for the same validated config however its YAML was written or ordered."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
