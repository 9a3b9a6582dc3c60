"""--config strings become the types the schema declares (coerce_config),
in unit and in the workflow."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import planned_counts, run_snakemake
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from topotrain.config import checkpoint_steps, coerce_config, order_like_schema

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_PATH = ROOT / "workflow" / "schemas" / "config.schema.yaml"
SCHEMA = yaml.safe_load(SCHEMA_PATH.read_text())
DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())


def typed(value):
    """``value`` with the type of every scalar made explicit,
    so 1 == 1.0 == True no longer holds."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def as_base_loader(config: dict) -> dict:
    """``config`` as Snakemake's --config delivers nested values: YAML BaseLoader, all strings."""
    return yaml.load(yaml.safe_dump(config), Loader=yaml.BaseLoader)


def test_all_string_default_config_comes_back_as_config_yaml_reads_it():
    strings = as_base_loader(DEFAULT)
    assert strings["train"]["steps"] == "5000" and strings["pythia"]["enabled"] == "true"
    assert typed(coerce_config(strings, SCHEMA)) == typed(DEFAULT)
    validate(strings, str(SCHEMA_PATH))


def test_keys_are_ordered_as_the_schema_lists_them_at_any_depth():
    given = {"train": {"threads": 2, "steps": 10, "lr": 0.1}, "seeds": [1], "results": "r"}
    given["models"] = {"b": {"n_head": 1, "d_model": 8, "n_layer": 1}, "a": {"d_model": 4}}
    given["extra"] = 1  # not in the schema: kept, after the known keys
    ordered = order_like_schema(given, SCHEMA)
    assert ordered is given
    assert list(given) == ["results", "models", "seeds", "train", "extra"]
    assert list(given["train"]) == ["steps", "lr", "threads"]
    assert list(given["models"]) == ["b", "a"]  # names: the user's order
    assert list(given["models"]["b"]) == ["d_model", "n_layer", "n_head"]


def test_default_config_is_already_in_schema_order():
    """config.yaml lists its keys as the schema does, so ordering changes no default rule params."""
    ordered = order_like_schema(copy.deepcopy(DEFAULT), SCHEMA)
    assert yaml.safe_dump(ordered, sort_keys=False) == yaml.safe_dump(DEFAULT, sort_keys=False)


def test_nested_strings_become_integers_numbers_and_booleans():
    config = {
        "train": {"steps": "1000", "lr": "1e-3", "weight_decay": "3.0e-3", "grad_clip": "2"},
        "models": {"wide": {"d_model": "64", "n_layer": "+2", "n_head": "4"}},
        "topology": {"include_embeddings": "true", "max_points": "40"},
        "analysis": {"phase_threshold": ".25", "prediction_fractions": ["0.3", "5e-1"]},
        "pythia": {"enabled": "False", "weights": {"steps": ["0", "1000"]}},
    }
    assert typed(coerce_config(config, SCHEMA)) == typed(
        {
            "train": {"steps": 1000, "lr": 0.001, "weight_decay": 0.003, "grad_clip": 2},
            "models": {"wide": {"d_model": 64, "n_layer": 2, "n_head": 4}},
            "topology": {"include_embeddings": True, "max_points": 40},
            "analysis": {"phase_threshold": 0.25, "prediction_fractions": [0.3, 0.5]},
            "pythia": {"enabled": False, "weights": {"steps": [0, 1000]}},
        }
    )


def test_seed_list_becomes_integers_in_place():
    config = {"seeds": ["42", "43"], "train": {"steps": "40"}}
    seeds, train = config["seeds"], config["train"]
    assert coerce_config(config, SCHEMA) is config
    assert config["seeds"] is seeds and config["train"] is train  # Snakemake's dict, not a copy
    assert typed(seeds) == [("int", 42), ("int", 43)] and typed(train) == {"steps": ("int", 40)}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("auto", "auto"),
        ("true", True),
        ("false", False),
        ("True", True),
        ("FALSE", False),
        ("yes", True),
        ("off", False),
        ("1", "1"),  # not in the enum: left for validation to report
        ("maybe", "maybe"),
    ],
)
def test_compile_enum_takes_its_string_or_a_boolean(text, expected):
    config = coerce_config({"train": {"compile": text}}, SCHEMA)
    assert typed(config["train"]["compile"]) == typed(expected)


@pytest.mark.parametrize("text", ["null", "Null", "NULL", "~", ""])
def test_null_spellings_become_none_only_where_null_is_allowed(text):
    config = {
        "corpus": {"train": text, "validation": text, "dataset": text},
        "train": {"steps": text},
    }
    coerce_config(config, SCHEMA)
    assert config["corpus"]["train"] is None and config["corpus"]["validation"] is None
    assert config["corpus"]["dataset"] == text and config["train"]["steps"] == text


def test_strings_stay_strings_where_the_schema_wants_strings():
    config = {
        "results": "123",
        "corpus": {"source": "files", "dataset": "true", "train": "data/1.txt"},
        "train": {"device": "cuda"},
        "topology": {"layers": ["1", "true"]},
        "analysis": {"scaling_features": ["1e-3"]},
        "pythia": {
            "weights": {"models": ["EleutherAI/pythia-14m"]},
            "embeddings": {"dtype": "auto"},
        },
    }
    assert typed(coerce_config(copy.deepcopy(config), SCHEMA)) == typed(config)


def test_typed_values_are_untouched():
    config = copy.deepcopy(DEFAULT)
    config["train"].update(steps=40.0, lr=3, compile=True)  # 40.0 is check_config's to reject
    config["seeds"] = [42, 7]
    expected = typed(config)
    assert typed(coerce_config(config, SCHEMA)) == expected


def test_keys_the_schema_does_not_declare_are_untouched():
    config = {"train": {"stepz": "10"}, "unknown": {"x": "1"}, "models": {"m": {"width": "8"}}}
    assert typed(coerce_config(copy.deepcopy(config), SCHEMA)) == typed(config)


@pytest.mark.parametrize(
    "section, key, text, message",
    [
        ("train", "steps", "40.5", "'40.5' is not of type 'integer'"),
        ("train", "steps", "40.0", "'40.0' is not of type 'integer'"),
        ("train", "steps", "many", "'many' is not of type 'integer'"),
        ("train", "lr", "fast", "'fast' is not of type 'number'"),
        ("train", "lr", "1_0", "'1_0' is not of type 'number'"),
        ("topology", "include_embeddings", "sure", "'sure' is not of type 'boolean'"),
        ("train", "compile", "1", "'1' is not one of ['auto', True, False]"),
        ("corpus", "source", "null", "'null' is not one of ['huggingface', 'files']"),
    ],
)
def test_uncoercible_string_is_kept_and_rejected_under_its_key(section, key, text, message):
    config = as_base_loader(DEFAULT)
    config[section][key] = text
    coerce_config(config, SCHEMA)
    assert config[section][key] == text
    with pytest.raises(WorkflowError) as err:
        validate(config, str(SCHEMA_PATH))
    assert message in str(err.value) and f"instance['{section}']['{key}']" in str(err.value)


def test_bad_list_item_is_kept_and_rejected_under_its_index():
    config = as_base_loader(DEFAULT)
    config["seeds"] = ["42", "x"]
    coerce_config(config, SCHEMA)
    assert typed(config["seeds"]) == [("int", 42), ("str", "x")]
    with pytest.raises(WorkflowError, match=r"'x' is not of type 'integer'") as err:
        validate(config, str(SCHEMA_PATH))
    assert "instance['seeds'][1]" in str(err.value)


def test_type_lists_and_alternatives_are_followed():
    schema = {
        "properties": {
            "limit": {"type": ["integer", "null"]},
            "cores": {"anyOf": [{"type": "integer", "minimum": 1}, {"enum": ["all"]}]},
            "runs": {
                "type": "array",
                "items": {"oneOf": [{"type": "number"}, {"type": "boolean"}]},
            },
            "knobs": {"type": "object", "additionalProperties": {"type": "integer"}},
        }
    }
    config = {"limit": "~", "cores": "8", "runs": ["2.5", "on", "x"], "knobs": {"a": "3"}}
    assert typed(coerce_config(config, schema)) == typed(
        {"limit": None, "cores": 8, "runs": [2.5, True, "x"], "knobs": {"a": 3}}
    )
    assert coerce_config({"cores": "all", "limit": "7"}, schema) == {"cores": "all", "limit": 7}


def expected_jobs(config: dict) -> dict[str, int]:
    """train_model and weight_topology jobs of a config: one run per model and seed, one topology
    job per checkpoint of each run."""
    runs = len(config["models"]) * len(config["seeds"])
    return {"train_model": runs, "weight_topology": runs * len(checkpoint_steps(config["train"]))}


@pytest.mark.parametrize(
    "entry, change",
    [
        ("train={steps: 1000}", {"train": {"steps": 1000}}),
        ("seeds=[42,43]", {"seeds": [42, 43]}),
        (
            "train={steps: 20, checkpoint_interval: 5}",
            {"train": {"steps": 20, "checkpoint_interval": 5}},
        ),
    ],
)
def test_command_line_config_plans_the_jobs_of_its_values(tiny_workdir, entry, change):
    config = yaml.safe_load((tiny_workdir / "config.yaml").read_text())
    for key, value in change.items():
        config[key] = {**config[key], **value} if isinstance(value, dict) else value
    planned = planned_counts(tiny_workdir, "--config", entry)
    assert {
        rule: planned.get(rule) for rule in ("train_model", "weight_topology")
    } == expected_jobs(config)


def test_training_job_receives_numbers_from_the_command_line(tiny_workdir):
    run_dir = "results/checkpoints/tiny-a/seed42"
    run_snakemake(
        tiny_workdir,
        f"{run_dir}/evals.csv",
        "--cores",
        "1",
        "--config",
        "train={steps: 10, warmup_steps: 2, lr: 2e-2}",
    )
    metrics = pd.read_csv(tiny_workdir / run_dir / "metrics.csv")
    evals = pd.read_csv(tiny_workdir / run_dir / "evals.csv")
    assert metrics["step"].tolist() == list(range(10)) and evals["step"].tolist() == [0, 10]
    assert metrics["lr"].max() == pytest.approx(2e-2)
