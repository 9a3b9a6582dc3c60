"""A knob's default is written once, in the schema: config.yaml states the same values, the
package's defaults are the schema's, and a config that gives nothing gets them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from topotrain.config import DEFAULTS, fill_defaults, load_schema
from topotrain.training.modular import ControlConfig
from topotrain.training.train import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
# a runs: entry is a local folder (path, glob) or a hub repo (hub, revisions or revision_pattern):
# which of these an entry gives decides what it is, so none can have a default; the models'
# entries give their architecture
NO_DEFAULT = {
    "runs.*.path",
    "runs.*.hub",
    "runs.*.revisions",
    "runs.*.revision_pattern",
    "runs.*.glob",
    "models.*.d_model",
    "models.*.n_layer",
    "models.*.n_head",
    "analysis.primary_views",  # removed (issue 56): kept so that config.checks names it if set
}


def leaves(schema: dict, key: str = "") -> list[tuple[str, dict]]:
    """(dotted key, schema) of every key the schema declares; a map's entries as ``name.*``."""
    out = []
    for name, child in schema.get("properties", {}).items():
        dotted = f"{key}.{name}" if key else name
        out.append((dotted, child))
        out += leaves(child, dotted)
    other = schema.get("additionalProperties")
    if isinstance(other, dict):
        out += leaves(other, f"{key}.*")
    return out


def test_every_key_has_a_default_in_the_schema():
    missing = [k for k, s in leaves(load_schema()) if "default" not in s and k not in NO_DEFAULT]
    assert not missing, f"schema keys without a default: {missing}"
    assert NO_DEFAULT <= {k for k, _ in leaves(load_schema())}  # the exemptions still exist


def test_config_yaml_states_the_schema_defaults():
    stated = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert stated == DEFAULTS


def test_an_omitted_section_takes_its_defaults_and_a_given_map_is_taken_whole():
    config = {"train": {"steps": 300}, "models": {"m": {"d_model": 8, "n_layer": 1, "n_head": 1}}}
    config["runs"] = {"mine": {"path": "ckpts"}}
    filled = fill_defaults(copy.deepcopy(config))
    assert filled["train"]["steps"] == 300
    assert filled["train"]["batch_size"] == DEFAULTS["train"]["batch_size"] == 64
    assert filled["topology"] == DEFAULTS["topology"]
    assert filled["models"] == config["models"]  # no default model added to a given family
    entry = filled["runs"]["mine"]
    assert entry["include_head"] is False and entry["layers"] == [] and "glob" not in entry
    entry["layers"].append("x")  # each default is a copy
    assert fill_defaults({"runs": {"b": {}}})["runs"]["b"]["layers"] == []


def test_library_defaults_are_the_schemas():
    train = {k: v for k, v in DEFAULTS["train"].items() if k != "ensemble"}
    made = TrainConfig()
    assert {k: getattr(made, k) for k in train} == {**train, "compile": str(train["compile"])}
    # ensemble: the workflow resolves auto (devices.wants_ensemble); a TrainConfig is one run
    assert DEFAULTS["train"]["ensemble"] == "auto" and made.ensemble is False
    control = ControlConfig()
    assert all(getattr(control, k) == DEFAULTS["control"][k] for k in ("p", "width", "steps"))


@pytest.mark.parametrize(
    ("section", "values", "message"),
    [
        ("train", {"steps": 100, "checkpoint_interval": 30}, r"checkpoint_interval=30 .*steps=100"),
        ("train", {"threads": 0}, r"train\.threads=0: must be at least 1"),
        ("control", {"heads": 3, "width": 64}, r"control\.width=64: must be a multiple of heads=3"),
    ],
)
def test_the_library_checks_are_the_workflows(section, values, message):
    make = {"train": TrainConfig, "control": ControlConfig}[section]
    with pytest.raises(ValueError, match=message):
        make(**values)
