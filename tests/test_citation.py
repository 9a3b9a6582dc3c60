"""LICENSE, CITATION.cff and the version they name agree with the package (CI validates the
file's schema with cffconvert: `make citation`); REPORT.md's header names version, config hash and
Rips engine."""

from __future__ import annotations

import copy

import pytest
import yaml
from conftest import ROOT

import topotrain
from topotrain.config import DEFAULTS, config_hash
from topotrain.report.header import provenance_line, report_header

tomllib = pytest.importorskip("tomllib")  # Python ≥ 3.11


def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def test_the_licence_is_mit_everywhere():
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "MIT"} and citation()["license"] == "MIT"


def test_the_version_is_written_once_and_cited_as_it_is():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in pyproject["project"]["dynamic"]  # from topotrain.__version__
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "topotrain.__version__"
    }
    assert citation()["version"] == topotrain.__version__


def test_the_citation_names_the_methods_and_both_engines():
    titles = " | ".join(ref["title"] for ref in citation()["references"])
    for words in (
        "Neural Persistence: A Complexity Measure",  # Rieck et al. 2019
        "Ripser: efficient computation of Vietoris–Rips persistence barcodes",  # Bauer 2021
        "Ripser.py",  # the core engine
        "giotto-ph",  # the fast extra's engine
        "Pythia",
        "Topological Persistence of Transformer Weight Spaces",  # Study A
        "Topological Signatures of Resource-Constrained",  # Study B
    ):
        assert words in titles, words


def test_the_config_hash_ignores_order_and_follows_values():
    config = copy.deepcopy(DEFAULTS)
    reordered = dict(reversed(list(config.items())))
    assert config_hash(config) == config_hash(reordered)
    assert len(config_hash(config)) == 12 and int(config_hash(config), 16) >= 0
    config["topology"]["engine"] = "ripser"
    assert config_hash(config) != config_hash(DEFAULTS)


def test_the_report_header_names_version_config_and_engine():
    provenance = {"version": "9.9.9", "config_sha256": "0123456789ab", "engine": "ripser"}
    title, line, where = report_header("out", provenance)
    assert title.startswith("# topotrain") and "`out/features/weights.parquet`" in where
    assert line == provenance_line("9.9.9", "0123456789ab", "ripser")
    assert "topotrain 9.9.9" in line and "`0123456789ab`" in line and "engine: ripser" in line
    assert len(report_header("out")) == 2  # a library call without provenance: no such line
