"""Config schema and semantic checks: a bad config fails before any job runs."""

import copy
from pathlib import Path

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from topotrain.config import ConfigError, check_config, checkpoint_steps, layer_patterns, n_params

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
DEFAULT = yaml.safe_load((ROOT / "config.yaml").read_text())

FAMILY = {  # the study's model family and its exact parameter counts
    "tiny-3k": (8, 1, 1, 2_936),
    "small-7k": (16, 1, 2, 7_408),
    "med-21k": (24, 2, 2, 20_640),
    "large-46k": (32, 3, 4, 46_368),
    "xl-97k": (48, 3, 4, 97_200),
}


def test_default_config_is_the_study():
    validate(copy.deepcopy(DEFAULT), SCHEMA)
    check_config(DEFAULT)
    assert {k: (v["d_model"], v["n_layer"], v["n_head"]) for k, v in DEFAULT["models"].items()} == {
        k: v[:3] for k, v in FAMILY.items()
    }
    steps = checkpoint_steps(DEFAULT["train"])
    assert len(steps) == 201 and steps[0] == 0 and steps[-1] == 5000
    assert DEFAULT["topology"]["jobs"] == "training"
    assert DEFAULT["train"]["lr"] == 3e-3 and DEFAULT["train"]["batch_size"] == 64
    assert DEFAULT["context"] == 128 and DEFAULT["seeds"] == [42, 43, 44, 45, 46, 47]


@pytest.mark.parametrize("name", list(FAMILY))
def test_closed_form_parameter_count_matches_the_study(name):
    d, layers, _, expected = FAMILY[name]
    assert n_params(d, layers) == expected


def mutated(path: str, value):
    cfg = copy.deepcopy(DEFAULT)
    *parents, leaf = path.split(".")
    node = cfg
    for p in parents:
        node = node[p]
    node[leaf] = value
    return cfg


@pytest.mark.parametrize(
    "path, value",
    [
        ("train.steps", -5),
        ("train.stepz", 10),
        ("train.lr", "fast"),
        ("topology.max_points", 1),
        ("seeds", []),
        ("corpus.source", "ftp"),
        ("models.tiny-3k.n_heads", 1),
    ],
)
def test_schema_rejects_bad_values_and_unknown_keys(path, value):
    with pytest.raises(WorkflowError):
        validate(mutated(path, value), SCHEMA)


@pytest.mark.parametrize(
    "path, value, message",
    [
        ("models.small-7k.n_head", 3, "n_head=3 does not divide d_model=16"),
        ("train.checkpoint_interval", 300, "checkpoint_interval=300 does not divide"),
        ("train.warmup_steps", 6000, "warmup_steps=6000 exceeds"),
        # removed (issue 56): named, with what replaces it
        ("analysis.primary_views", ["level"], "primary_views: removed .*bottom_line_question"),
    ],
)
def test_semantic_check_names_the_offending_key(path, value, message):
    with pytest.raises(ConfigError, match=message):
        check_config(mutated(path, value))


def test_files_source_needs_existing_files(tmp_path):
    cfg = mutated("corpus", {"source": "files", "train": "missing.txt", "validation": None})
    with pytest.raises(ConfigError) as err:
        check_config(cfg, base_dir=tmp_path)
    assert "corpus.train: file missing.txt does not exist" in str(err.value)
    assert "corpus.validation must be set" in str(err.value)


def test_embeddings_are_appended_to_layer_patterns_once():
    topo = {"layers": ["transformer.h.*.mlp.c_fc.weight"], "include_embeddings": True}
    assert layer_patterns(topo) == [
        "transformer.h.*.mlp.c_fc.weight",
        "transformer.wte.weight",
        "transformer.wpe.weight",
    ]
    topo = {"layers": ["transformer.w*.weight"], "include_embeddings": True}
    assert layer_patterns(topo) == ["transformer.w*.weight"]


def test_config_yaml_layer_patterns_are_the_code_defaults():
    """config.yaml spells out the spine's and Pythia's layer patterns; the code's defaults
    (topotrain.config) must say the same, or a default run and a configured one would differ."""
    from topotrain.config import GPT_LAYERS, GPT_NEOX_LAYERS

    assert DEFAULT["topology"]["layers"] == list(GPT_LAYERS)
    assert DEFAULT["pythia"]["weights"]["layers"] == list(GPT_NEOX_LAYERS)


def test_run_and_model_names_get_plain_words(tmp_path):
    cfg = copy.deepcopy(DEFAULT)
    cfg["runs"] = {"my run": {"path": str(tmp_path)}, "a/b": {"path": str(tmp_path)}}
    with pytest.raises(ConfigError) as err:
        check_config(cfg, base_dir=tmp_path)
    text = str(err.value)
    assert "runs: name 'my run': use letters, digits" in text and "no spaces or slashes" in text
    assert "runs: name 'a/b'" in text and "pattern" not in text


def test_a_config_with_every_branch_off_has_nothing_to_do_unless_a_branch_registered():
    from topotrain.config import check_something_to_do

    off = mutated("spine.enabled", False)
    off["pythia"]["enabled"], off["runs"] = False, {}
    off.setdefault("control", {})["enabled"] = False
    with pytest.raises(ConfigError, match=r"no control, no npy: nothing to do$"):
        check_something_to_do(off, {"npy": {"outputs": []}})  # registered, nothing to make
    check_something_to_do(off, {"npy": {"outputs": ["results/npy/section.md"]}})  # it runs alone
    check_something_to_do(DEFAULT, {})  # the spine is on
    for key, value in (("runs", {"r": {"path": "x"}}), ("pythia", {"enabled": True})):
        check_something_to_do({**off, key: value}, {})  # one branch on is enough
