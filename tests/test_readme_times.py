"""The README quotes one time per command, each from docs/cost.md's table "How long each command
takes", where it is measured (or its extrapolation explained), and none twice."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UNIT = r"(?:h|min|s)\b"
DURATION = re.compile(rf"\b\d+(?:[.,]\d+)?\s{UNIT}(?:\s\d+\s{UNIT})*")


def durations(text: str) -> list[str]:
    """Every duration written as digits and units (``2 h 50 min``, ``216 s``), in order."""
    return [m.group(0) for m in DURATION.finditer(text)]


def cost_table() -> str:
    """The "README says" column of docs/cost.md's table of commands."""
    text = (ROOT / "docs" / "cost.md").read_text()
    section = text.split("## How long each command takes", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| `")]
    return "\n".join(row[2] for row in rows)


def test_durations_are_found_as_written():
    text = "about 2 h 50 min on 2 cores; 216 s on one H200; about 10 min, then 9 min 26 s"
    assert durations(text) == ["2 h 50 min", "216 s", "10 min", "9 min 26 s"]


def test_every_time_the_readme_quotes_is_in_the_cost_table_and_quoted_once():
    readme = durations((ROOT / "README.md").read_text())
    table = durations(cost_table())
    assert len(readme) >= 4  # demo, study, test, the GPU line
    assert sorted(readme) == sorted(set(readme)), f"a time quoted twice: {readme}"
    assert set(readme) <= set(table), f"not in docs/cost.md's table: {set(readme) - set(table)}"
