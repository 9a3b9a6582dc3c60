"""The test study (.test/config/config.yaml): its corpus is what ``write_corpus`` writes, it is a
valid config, the command in its header plans each training of it once from a checkout's root
(the checkout's config.yaml does not leak in), CI lints and plans it, and ``tiny_config`` is it."""

from __future__ import annotations

import copy
import shlex

import yaml
from conftest import ROOT, TEST_STUDY, planned_counts, tiny_config, write_corpus
from snakemake.utils import validate

from topotrain.config import SCHEMA, check_config, checkpoint_steps, fill_defaults

STUDY = yaml.safe_load(TEST_STUDY.read_text(encoding="utf-8"))


def header_command() -> list[str]:
    """The snakemake command the config's comment header tells the reader to run (its words)."""
    lines = [line.lstrip("#").strip() for line in TEST_STUDY.read_text().splitlines()]
    commands = [shlex.split(line) for line in lines if line.startswith("snakemake ")]
    assert len(commands) == 1, commands
    return commands[0]


def test_write_corpus_reproduces_the_committed_corpus_byte_for_byte(tmp_path):
    written = write_corpus(tmp_path)
    committed = [ROOT / STUDY["corpus"][key] for key in ("train", "validation")]
    assert [p.read_bytes() for p in written] == [p.read_bytes() for p in committed]


def test_the_test_study_is_valid_against_the_workflow_schema():
    config = fill_defaults(copy.deepcopy(STUDY))  # as workflow/rules/common.smk
    validate(config, schema=str(SCHEMA), set_default=True)
    check_config(config, base_dir=ROOT)  # its corpus files included, relative to the root


def test_the_header_command_plans_each_training_once_from_a_checkout_root(tmp_path):
    """Run from a folder like the checkout's root (its config.yaml, .test/), the header's command
    plans the test study's trainings, checkpoints and no Pythia job."""
    (tmp_path / "config.yaml").symlink_to(ROOT / "config.yaml")
    (tmp_path / ".test").symlink_to(ROOT / ".test")
    words = header_command()
    at = words.index("--configfile") + 1
    words[at] = str(ROOT / words[at])
    counts = planned_counts(tmp_path, *words[1:])
    trainings = len(STUDY["models"]) * len(STUDY["seeds"])
    expected = {
        "prepare_corpus": 1,
        "train_model": trainings,
        "weight_topology": trainings * len(checkpoint_steps(STUDY["train"])),
        "gradient_topology": trainings,  # each training's checkpoints in one job
        "diagram_series": trainings,
        "aggregate_features": 1,
    }
    assert {rule: counts.get(rule) for rule in expected} == expected
    assert not [rule for rule in counts if "pythia" in rule]


def test_ci_lints_and_plans_the_test_study_with_the_header_command():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    runs = [shlex.split(line, comments=True) for line in lines if "/bin/snakemake" in line]
    options = set(header_command()[1:]) - {"--cores", "2"}
    assert any("--lint" in words and options <= set(words) for words in runs), runs
    assert any("-n" in words and options <= set(words) for words in runs), runs


def test_tiny_config_is_the_test_study_reading_the_given_corpus(tmp_path):
    train, valid = write_corpus(tmp_path, n_chars=2_000)
    config = tiny_config(train, valid)
    assert config["corpus"] == {**STUDY["corpus"], "train": str(train), "validation": str(valid)}
    assert {k: v for k, v in config.items() if k != "corpus"} == {
        k: v for k, v in STUDY.items() if k != "corpus"
    }
    config["models"].clear()  # a fresh copy each call
    assert tiny_config(train, valid)["models"] == STUDY["models"]
