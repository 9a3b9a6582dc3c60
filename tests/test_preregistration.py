"""The pre-registration (workflow/preregistration.yaml, ``config.preregistration``): its hash, its
check against a run's configuration, and the report header's line."""

import copy
import hashlib
from pathlib import Path

import pytest

from topotrain.config import DEFAULTS
from topotrain.config import preregistration as pr
from topotrain.report.header import preregistration_line, report_header

FILE = Path(__file__).parents[1] / "workflow" / "preregistration.yaml"


def test_the_hash_is_the_files_bytes_sha256():
    assert pr.sha256(FILE) == hashlib.sha256(FILE.read_bytes()).hexdigest()


def test_the_default_configuration_is_the_registered_design_on_other_seeds():
    """config.yaml's defaults and the registration agree on every design key: only the seeds
    differ (the defaults' are not the confirmatory seeds), so a default that moves without a new
    registration fails here."""
    reg = pr.read(FILE)
    assert set(reg["design"]) <= set(pr._design_of(DEFAULTS))
    assert pr.deviations(reg, DEFAULTS) == [
        f"seeds: {DEFAULTS['seeds']} (registered confirmatory seeds {reg['confirmatory_seeds']})"
    ]
    run = copy.deepcopy(DEFAULTS) | {"seeds": list(reg["confirmatory_seeds"])}
    assert pr.deviations(reg, run) == []
    used = {*range(42, 48), 50, 51, 52, *range(90, 95)}  # development, the first look, the review
    assert not set(reg["confirmatory_seeds"]) & used
    assert not set(reg["confirmatory_seeds"]) & set(range(60, 75))  # the earlier looks' seeds


def test_a_run_that_changes_a_registered_key_is_named_with_both_values():
    reg = pr.read(FILE)
    run = copy.deepcopy(DEFAULTS) | {"seeds": list(reg["confirmatory_seeds"])}
    run["analysis"] = dict(run["analysis"], horizon=50)
    run["train"] = dict(run["train"], checkpoint_interval=100)
    got = pr.deviations(reg, run)
    assert got == ["checkpoint_interval: 100 (registered 25)", "horizon: 50 (registered 100)"]
    out = pr.summary(FILE, run)
    assert out["sha256"] == pr.sha256(FILE) and out["status"] in pr.STATUSES
    assert out["deviations"] == "; ".join(got)


def test_a_bad_registration_is_refused_naming_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="analysis.preregistration: no file"):
        pr.read(tmp_path / "none.yaml")
    bad = tmp_path / "reg.yaml"
    bad.write_text("status: maybe\nquestions: {}\nrule: x\ndesign: {}\nconfirmatory_seeds: []\n")
    with pytest.raises(ValueError, match=r"reg.yaml: status must be draft or frozen"):
        pr.read(bad)
    bad.write_text("status: draft\nrule: x\n")
    with pytest.raises(ValueError, match="reg.yaml: missing questions, design, confirmatory_seeds"):
        pr.read(bad)
    bad.write_text("- a list\n")
    with pytest.raises(ValueError, match="reg.yaml: a pre-registration is a mapping"):
        pr.read(bad)


def test_the_report_header_prints_the_hash_and_the_departures():
    provenance = {"version": "9.9", "config_sha256": "abc", "engine": "ripser"}
    reg = {"path": "workflow/preregistration.yaml", "sha256": "f00d", "status": "frozen"}
    title, line, registered, where = report_header(
        "out", provenance | {"preregistration": reg | {"deviations": "seeds: [1] (registered [2])"}}
    )
    assert "`workflow/preregistration.yaml` (frozen), sha256 `f00d`" in registered
    assert registered.strip().endswith("this run departs from it: seeds: [1] (registered [2]).")
    same = preregistration_line(**reg, deviations="")
    assert same.strip().endswith("this run has its design and seeds.")
    assert len(report_header("out", provenance)) == 3  # no registration: no such paragraph
