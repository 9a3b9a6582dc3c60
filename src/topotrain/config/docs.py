"""The configuration as a user reads it: every key of the schema
(workflow/schemas/config.schema.yaml) as one row of a Markdown table: its dotted path, type (with
its allowed values and bounds), default and description; nested objects flattened
(``train.steps``), a map's entries as ``<name>`` (``runs.<name>.path``) and a list's items as
``[]`` (``confirm.hypotheses[].sign``).

docs/config.md is this module's output (``python -m topotrain.config.docs > docs/config.md``);
a test keeps it equal to the rendering of the current schema.
"""

from __future__ import annotations

from collections.abc import Iterator

import yaml

from topotrain.config.schema import load_schema

COMMAND = "python -m topotrain.config.docs > docs/config.md"
BOUNDS = {"minimum": "≥", "exclusiveMinimum": ">", "maximum": "≤", "exclusiveMaximum": "<"}
HEADER = f"""# Configuration: every key

Every key a config.yaml (or an overlay) can give: its type, its default (what a config that leaves
the key out gets) and what it does. `<name>` stands for a name you choose (a model, a run, a
group), `[]` for each item of a list. `topotrain run` and Snakemake refuse a key this table lacks,
naming it; config.yaml itself holds the same defaults, commented.

Generated from workflow/schemas/config.schema.yaml, the one place a key's default and rules are
written: do not edit this page, change the schema and regenerate it:

```
{COMMAND}
```

"""


def flow(value) -> str:
    """``value`` as YAML writes it on one line (``[42, 43]``, ``null``, ``auto``)."""
    text = yaml.safe_dump(
        value, default_flow_style=True, width=10**6, allow_unicode=True, sort_keys=False
    )
    return text.removesuffix("\n").removesuffix("\n...").strip()


def cell(text: str, prose: bool = False) -> str:
    """Text safe in a Markdown table cell: one line, pipes escaped; in ``prose`` (outside code
    spans) ``<`` too, so that ``<branch>`` is not read as an HTML tag."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text.replace("<", "&lt;") if prose else text


def kind(schema: dict) -> str:
    """A key's type as a person reads it: the type, then its allowed values or bounds."""
    if "oneOf" in schema or "anyOf" in schema:
        return " or ".join(kind(alt) for alt in schema.get("oneOf", schema.get("anyOf")))
    types = schema.get("type")
    text = " or ".join(types) if isinstance(types, list) else types or ""
    if text == "array" and isinstance(schema.get("items"), dict):
        item = kind(schema["items"])
        text = f"list of ({item})" if ", " in item or " or " in item else f"list of {item}"
    elif text == "object" and isinstance(schema.get("additionalProperties"), dict):
        text = "map: name → entry"
    details = [f"{sign} {flow(schema[key])}" for key, sign in BOUNDS.items() if key in schema]
    if "enum" in schema:
        details.insert(0, "one of " + ", ".join(f"`{flow(v)}`" for v in schema["enum"]))
    if "pattern" in schema:
        details.append(f"matching `{schema['pattern']}`")
    for key, word in (("minItems", "items"), ("minProperties", "entries"), ("minLength", "chars")):
        if key in schema:
            details.append("not empty" if schema[key] == 1 else f"at least {schema[key]} {word}")
    if schema.get("uniqueItems"):
        details.append("unique")
    return ", ".join(filter(None, [text, *details])) or "—"


def rows(schema: dict, path: tuple[str, ...] = ()) -> Iterator[tuple[str, str, str, str]]:
    """(key, type, default, description) of every key under ``schema``, depth first in the
    schema's order."""
    required = set(schema.get("required", []))
    children = list(schema.get("properties", {}).items())
    if isinstance(schema.get("additionalProperties"), dict):
        children.append(("<name>", schema["additionalProperties"]))
    for key, child in children:
        where = (*path, key)
        text = kind(child) + (", required" if key in required else "")
        default = f"`{flow(child['default'])}`" if "default" in child else ""
        if child.get("properties") and child.get("default") == {}:
            default = "its keys'"  # a section: each key below has its own
        yield ".".join(where), text, default, child.get("description", "")
        yield from rows(child, where)
        if isinstance(child.get("items"), dict) and "properties" in child["items"]:
            yield from rows(child["items"], (*path, f"{key}[]"))


def render_config_table(schema: dict) -> str:
    """The schema's keys as one Markdown table (key, type, default, description)."""
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for key, text, default, description in rows(schema):
        lines.append(
            f"| `{key}` | {cell(text)} | {cell(default)} | {cell(description, prose=True)} |"
        )
    return "\n".join(lines) + "\n"


def render_config_page(schema: dict | None = None) -> str:
    """docs/config.md: how to read and regenerate it, then the table of ``schema`` (default:
    the workflow's)."""
    return HEADER + render_config_table(load_schema() if schema is None else schema)


if __name__ == "__main__":
    print(render_config_page(), end="")
