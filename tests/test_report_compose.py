"""REPORT.md composes itself: ``report.markdown.compose`` alone orders the sections, by ORDER; the
order of the mapping it is given changes nothing, the confirmed sections and the findings follow
the control and the replication, and a section ORDER lacks is an error that names it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from topotrain.report import markdown
from topotrain.report.markdown import ORDER, Body, assemble_report, compose

TEMPLATES = Path(__file__).resolve().parents[1] / "src" / "topotrain" / "report" / "templates"
NAMES = [name for name, _ in ORDER]
CONFIRMED = [("Confirmed on fresh seeds", "why", Body("| c |\n|---|\n"))]


def heading(name: str) -> str:
    """The section's heading as its template file writes it (read here, not through prose)."""
    first = (TEMPLATES / "sections" / f"{name}.md").read_text(encoding="utf-8").split("\n")[0]
    return first.removeprefix("## ")


def tables(names: list[str]) -> dict[str, Body]:
    """A one-cell table per section, named after it, in the order given."""
    return {name: Body(f"| {name} |\n|---|\n") for name in names}


def headings(path: Path) -> list[str]:
    return [line[3:] for line in path.read_text().splitlines() if line.startswith("## ")]


def test_the_order_of_the_inputs_does_not_change_the_report(tmp_path):
    texts = set()
    for seed in range(4):
        shuffled = random.Random(seed).sample(NAMES, len(NAMES))
        sections, lead = compose(tables(shuffled), CONFIRMED)
        assemble_report(sections, tmp_path / "R.md", "## Findings\n\nfound\n", lead)
        texts.add((tmp_path / "R.md").read_text())
    assert len(texts) == 1
    expected = [heading(name) for name in NAMES]
    assert headings(tmp_path / "R.md") == [
        *expected[:2],
        "Confirmed on fresh seeds",
        "Findings",
        *expected[2:],
    ]


def test_order_alone_decides_the_reading_order(monkeypatch):
    monkeypatch.setattr(markdown, "ORDER", tuple(reversed(ORDER)))
    sections, _ = compose(tables(NAMES))
    assert [head for head, _, _ in sections] == [heading(name) for name in reversed(NAMES)]
    assert [str(body).split(" ")[1] for _, _, body in sections] == NAMES[::-1]


@pytest.mark.parametrize(
    ("names", "order", "lead"),
    [
        (["models", "replication", "control"], ["control", "replication", "C", "models"], 3),
        (["models", "replication"], ["replication", "C", "models"], 2),
        (["scaling", "models"], ["C", "models", "scaling"], 1),
        (["control"], ["control", "C"], 2),
    ],
)
def test_confirmed_sections_and_the_findings_follow_the_control_and_the_replication(
    names, order, lead
):
    confirmed = [("C", "why", Body("| c |\n"))]
    sections, found = compose(tables(names), confirmed)
    by_heading = {heading(name): name for name in names} | {"C": "C"}
    assert [by_heading[head] for head, _, _ in sections] == order
    assert found == lead


def test_a_section_order_lacks_is_named():
    with pytest.raises(ValueError, match="no_such_section"):
        compose(tables(["models", "no_such_section"]))


def test_a_findings_tables_first_rows_stand_in_the_report_the_whole_table_linked(tmp_path):
    from topotrain.report.markdown import SUMMARY_ROWS, Body, assemble_report, summarised

    rows = [f"| f{i} | {i} |" for i in range(SUMMARY_ROWS + 4)]
    table = "\n".join(["| feature | rho |", "|---|---|", *rows])
    cut = summarised(f"Text before.\n\n{table}\n\nText after.", "tables/x.md")
    lines = cut.split("\n")
    assert lines[2:4] == ["| feature | rho |", "|---|---|"]
    assert [ln for ln in lines if ln in rows] == rows[:SUMMARY_ROWS]
    assert "*… 4 more rows: the whole table in [tables/x.md](tables/x.md).*" in lines
    assert lines[0] == "Text before." and lines[-1] == "Text after."
    short = "\n".join(table.split("\n")[: SUMMARY_ROWS + 2])
    assert summarised(short, "tables/x.md") == short  # fits: left whole
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "long.md").write_text(table + "\n")
    out = tmp_path / "REPORT.md"
    lead = ("Lead", "The answer.", Body(table))
    assemble_report([lead, ("Long", "A finding.", tmp_path / "tables" / "long.md")], out, lead=1)
    text = out.read_text()
    assert text.count(rows[-1]) == 1  # whole in the lead section, cut in the finding's
    assert "[tables/long.md](tables/long.md)" in text
