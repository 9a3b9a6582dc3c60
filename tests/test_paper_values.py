"""workflow/data/paper_values.csv holds the published figures exactly as
../shared/docs/paper-tables.md prints them (checked against that file when it is present)."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from conftest import ROOT

VALUES = ROOT / "workflow" / "data" / "paper_values.csv"
DOC = ROOT.parent / "shared" / "docs" / "paper-tables.md"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?%?")
SECTION = {"final": "**Final checkpoint", "step0": "**At step 0", "claims": "**Claims"}


def numbers(line: str) -> list[float]:
    """Every number of a line: unicode minus and thousands separators undone, a% read as a/100."""
    line = re.sub(r"(?<=\d),(?=\d{3})", "", line.replace("−", "-").replace("+", ""))
    return [float(t[:-1]) / 100 if t.endswith("%") else float(t) for t in NUMBER.findall(line)]


def section(text: str, study: str, table: str) -> str:
    """The lines of one table of the document, up to the next bold heading."""
    start = text.index(f"**Table {table}," if study == "A" else SECTION[table])
    end = text.find("\n**", start + 2)
    return text[start : end if end > 0 else None]


def row_key(study: str, table: str, row: str) -> str:
    """How the document names a row: models as printed, fractions as percentages,
    steps with commas."""
    if study == "B" and table == "claims":
        return row.replace("h1_", "H1 ")  # h1_entropy → "H1 entropy"
    if study == "B":
        size = row.split("/")[1].removeprefix("pythia-").upper()  # EleutherAI/pythia-70m → 70M
        return f"Pythia-{size}" if table == "final" else f"({size})"
    if table == "5":
        return f"| {round(float(row) * 100)}%"
    if table == "8":
        return f"| {int(row):,} |"
    return {"val_loss": "final loss", "h0_total": "TP0", "np_mean": "NP"}.get(row, row)


def test_values_file_has_one_number_per_row_and_every_table():
    values = pd.read_csv(VALUES)
    assert values["value"].notna().all()
    assert set(values.loc[values["study"] == "A", "table"]) == {str(t) for t in range(1, 9)}
    assert not values.duplicated(["study", "table", "row", "quantity"]).any()


@pytest.mark.skipif(not DOC.is_file(), reason=f"{DOC} is absent")
def test_every_value_is_printed_in_its_table_of_the_paper_document():
    text, values = DOC.read_text(encoding="utf-8"), pd.read_csv(VALUES, dtype=str)
    for v in values.itertuples():
        lines = [
            ln
            for ln in section(text, v.study, v.table).splitlines()
            if row_key(v.study, v.table, v.row) in ln
        ]
        assert lines, f"table {v.table}: no line for {v.row}"
        found = {x for ln in lines for x in numbers(ln)}
        assert float(v.value) in found, (
            f"table {v.table}, {v.row}, {v.quantity}: {v.value} not in {lines}"
        )
