"""docs/config.md, the configuration a user reads: the rendering of the current schema (so it never
drifts from it), a row checked against config.yaml and the schema by hand, and a row for every
key config.yaml gives."""

from __future__ import annotations

import yaml
from conftest import ROOT

from topotrain.config import load_schema
from topotrain.config.docs import COMMAND, render_config_page

PAGE = ROOT / "docs" / "config.md"
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def table_rows() -> dict[str, list[str]]:
    """docs/config.md's table: key (code span stripped) → its cells."""
    rows = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            rows[cells[0].strip("`")] = cells
    return rows


def test_docs_config_md_is_the_rendering_of_the_current_schema():
    assert PAGE.read_text(encoding="utf-8") == render_config_page(load_schema()), (
        f"docs/config.md is out of date with the schema: regenerate it, {COMMAND}"
    )
    assert COMMAND in PAGE.read_text(encoding="utf-8")


def test_the_checkpoint_interval_row_is_config_yamls_default_and_the_schemas_type():
    key, kind, default, _ = table_rows()["train.checkpoint_interval"]
    assert key == "`train.checkpoint_interval`"
    assert default == f"`{CONFIG['train']['checkpoint_interval']}`" == "`25`"
    assert kind == "integer, ≥ 1"
    schema = load_schema()["properties"]["train"]["properties"]["checkpoint_interval"]
    assert (schema["type"], schema["minimum"]) == ("integer", 1)


def dotted_keys(node: dict, prefix: str = "") -> list[str]:
    """Every key of a nested mapping as a dotted path, a map of names (models) as <name>."""
    keys = []
    for key, value in node.items():
        path = f"{prefix}{key}"
        keys.append(path)
        if path == "models":  # the GPT family: name → architecture
            value = {"<name>": next(iter(value.values()))}
        if isinstance(value, dict):
            keys += dotted_keys(value, f"{path}.")
    return keys


def test_every_key_of_config_yaml_has_a_row():
    rows = table_rows()
    missing = [key for key in dotted_keys(CONFIG) if key not in rows]
    assert not missing and len(rows) > len(dotted_keys(CONFIG))
