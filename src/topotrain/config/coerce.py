"""Strings from ``--config`` as the types the schema declares, floats where it wants integers,
and keys in the schema's order.

The workflow calls ``coerce_config`` before validation (``--config`` gives nested values as
strings) and ``order_like_schema`` after the defaults are filled, so the same settings give the
same rule params whether they came from a file or from ``--config``.
"""

from __future__ import annotations

import re


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
    """``text`` as the null, boolean, integer or number ``schema`` declares, else ``text``."""
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
