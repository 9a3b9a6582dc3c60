"""The demo study end to end (.test/config/demo.yaml, what `make demo` runs): its HTML report opens
on the answer — the demo's banner, the bottom line's table and the forest inside the first window,
the rule graph one click away — and REPORT.md opens with the banner and prints no "nan"."""

from __future__ import annotations

import re
import shutil

import pytest
from conftest import ROOT, run_snakemake

from topotrain.cli import unpack_report

pytestmark = pytest.mark.long  # an end-to-end workflow run: `make test-long` (.ci/run runs it)

DEMO = ROOT / ".test" / "config" / "demo.yaml"
BANNER = "demo: too small to decide, every verdict below shows the machinery"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """The demo run once in a fresh folder (its corpus copied as `topotrain demo` copies it),
    then its HTML report in the zip form `topotrain demo` writes, unpacked as it unpacks it."""
    workdir = tmp_path_factory.mktemp("demo")
    shutil.copytree(ROOT / ".test" / "data", workdir / ".test" / "data")
    config = ["--configfile", str(DEMO), "--replace-workflow-config"]
    run_snakemake(workdir, "--cores", "2", *config)
    run_snakemake(workdir, "--cores", "1", *config, "--report", "results/report.zip")
    unpack_report(workdir / "results" / "report.zip")
    return workdir / "results"


def test_the_demo_report_opens_with_its_banner_and_prints_no_nan(demo_run):
    report = (demo_run / "REPORT.md").read_text()
    assert report.splitlines()[0] == f"> **{BANNER}**"
    prose = [line for line in report.splitlines() if not line.startswith("|")]
    assert not [line for line in prose if re.search(r"\bnan\b", line, re.IGNORECASE)]
    bottom = report.split("## Bottom line")[1].split("## Replication")[0]
    assert "combined beats loss-only" in bottom and "not reproduced" not in bottom


def test_the_demo_html_report_opens_on_the_bottom_line_and_the_forest(demo_run, tmp_path):
    """In a 1280 × 800 window, without scrolling: the banner, the bottom line's heading and its
    table of questions, and the top of the forest (a thumbnail of effects_forest.png); the rule
    graph hidden until its checkbox is clicked."""
    from browser import find_browser, first_screen

    browser = find_browser()
    if browser is None:
        pytest.skip("no headless Chromium here (Debian: apt-get install chromium-headless-shell)")
    seen = first_screen(demo_run / "report" / "report.html", browser, tmp_path / "profile")
    width, height = seen["viewport"]
    assert seen["banner"] == BANNER
    assert seen["heading_text"] == "Bottom line"
    assert seen["table_header"].replace(" ", "") == "QuestionVerdictsClaims"
    for box in (seen["heading"], seen["table"]):  # whole, inside the first window
        left, top, right, bottom = box
        assert 0 <= left < right <= width and 0 <= top < bottom <= height, seen
    left, top, right, bottom, natural = seen["forest"]
    assert natural > 0 and 0 <= top < height and right <= width  # loaded, begun on screen
    assert not seen["graph_shown"] and seen["graph_after_click"]


def test_the_demo_report_zip_is_at_most_2_mb(demo_run):
    """The zip form's size (its PNGs in 128 colours: figure_kit.palette_png); the single-file
    report.html carries ~3 MB of Snakemake's own scripts whatever the results."""
    assert (demo_run / "report.zip").stat().st_size <= 2_000_000
