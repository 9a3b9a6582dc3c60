"""A config the schema refuses, as the workflow says it: one line per problem naming the key's path
(``train.stepz``, ``seeds[1]``), the closest known key for a mistyped one, a long value shortened;
the same problems jsonschema finds with the real schema, and none for config.yaml."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import ROOT
from jsonschema import Draft202012Validator

from topotrain.config import invalid_config, key_path, load_schema, schema_problems

SCHEMA = load_schema()
CONFIG = yaml.safe_load((ROOT / "config.yaml").read_text())


def with_value(path: list, value) -> dict:
    """config.yaml with ``value`` at ``path`` (keys and list indices)."""
    config = copy.deepcopy(CONFIG)
    node = config
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return config


def test_config_yaml_has_no_problem():
    assert schema_problems(copy.deepcopy(CONFIG), SCHEMA) == []


@pytest.mark.parametrize(
    "path, value, line",
    [
        (
            ["trian"],
            {},
            "trian: Additional properties are not allowed ('trian' was unexpected; "
            "did you mean train?)",
        ),
        (
            ["train", "chekpoint_interval"],
            25,
            "train.chekpoint_interval: Additional properties are not allowed "
            "('chekpoint_interval' was unexpected; did you mean train.checkpoint_interval?)",
        ),
        (
            ["models", "tiny-3k", "n_heads"],
            1,
            "models.tiny-3k.n_heads: Additional properties are not allowed ('n_heads' was "
            "unexpected; did you mean models.tiny-3k.n_head?)",
        ),
        (["train", "lr"], "fast", "train.lr: 'fast' is not of type 'number'"),
        (["seeds", 1], "x", "seeds[1]: 'x' is not of type 'integer'"),
        (["train", "steps"], 100000, "train.steps: 100000 is greater than the maximum of 99999"),
        (["zzz"], 1, "zzz: Additional properties are not allowed ('zzz' was unexpected)"),
    ],
)
def test_one_problem_is_one_line_naming_its_key_path(path, value, line):
    config = with_value(path, value)
    assert schema_problems(config, SCHEMA) == [line]
    assert invalid_config([line]) == f"invalid configuration: {line}"
    # the same single error jsonschema finds, at the same place
    (error,) = Draft202012Validator(SCHEMA).iter_errors(config)
    named = [
        *error.absolute_path,
        *([path[-1]] if error.validator == "additionalProperties" else []),
    ]
    assert key_path(named) == line.split(": ")[0]


def test_several_problems_are_one_line_each_and_a_long_value_is_shortened():
    config = with_value(["runs"], {"mine": {"path": "x", "layers": "a" * 500}})
    config["trian"] = {}
    problems = schema_problems(config, SCHEMA)
    assert [p.split(": ")[0] for p in problems] == ["runs.mine.layers", "trian"]
    assert problems[0].endswith("is not of type 'array'") and len(problems[0]) < 120
    message = invalid_config(problems)
    assert message.splitlines() == ["invalid configuration:", *(f"  - {p}" for p in problems)]


def test_the_closest_alternative_of_a_one_of_names_the_inner_key():
    config = with_value(["groups"], {"g": {"primary": [{"feature": "h0_total", "sign": 2}]}})
    (line,) = schema_problems(config, SCHEMA)
    assert line.startswith("groups.g.primary[0]")


def test_key_paths_read_as_written():
    assert key_path(["confirm", "hypotheses", 0, "kind"]) == "confirm.hypotheses[0].kind"
    assert key_path([]) == "(the config)"
