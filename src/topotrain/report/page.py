"""REPORT.md's page and the HTML report's first pages, from the report's inputs (name → file):
the header, the bottom line, the sections in ``markdown.ORDER``, then the appended sections —
each run's and each registered input branch's (``APPENDIX``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from topotrain.report import prose
from topotrain.report.markdown import Body, compose, findings, report_text

# the inputs whose files are appended to REPORT.md as they are, in this order: each run's and
# group's section (``runs``), then each registered branch's (``branches``: common.smk's BRANCHES)
APPENDIX = ("runs", "branches")


def read_table(tables: Mapping[str, str], key: str) -> pd.DataFrame | None:
    """The CSV ``tables[key]`` as a DataFrame, None where the report has none."""
    return pd.read_csv(tables[key]) if tables.get(key) else None


def report_page(
    tables: Mapping,
    out: str | Path,
    rules: dict[str, str],
    alpha: float,
    provenance: Mapping | None = None,
    demo: bool = False,
) -> tuple[str, str]:
    """(REPORT.md's text, its bottom line) for REPORT.md at ``out``: the header (the demo's
    banner when ``demo``; ``provenance``: version, config_sha256, engine), the bottom line (the
    replication's ``rules`` and ``alpha``), the replication verdicts (a rule id per row), the
    findings from the CSV tables, every other Markdown table explained, then the ``APPENDIX``
    files. ``tables["calibration_csv"]``, when given, supplies the false-positive rates the
    bottom line quotes (else the ones docs/calibration.md reports); ``power_csv`` each primary
    claim's power at Δ."""
    from topotrain.report.answer import answer_links
    from topotrain.report.bottom_line import bottom_line, replication_section
    from topotrain.report.confirm import confirm_sections
    from topotrain.report.control import control_section

    appendix = [path for key in APPENDIX for path in tables.get(key, [])]
    preface, top = "", ""
    if "best_feature_csv" in tables:  # the spine's findings (spine.enabled)
        preface = findings(tables["best_feature_csv"], tables["prediction_csv"])
    # every Markdown table is a section (compose orders them and names one it does not know)
    sections = {
        k: p for k, p in tables.items() if k not in APPENDIX and not k.endswith(("_csv", "_png"))
    }
    primary = read_table(tables, "primary_csv")
    if "replication_csv" in tables:
        rep = pd.read_csv(tables["replication_csv"])
        summary = read_table(tables, "associations_summary_csv")
        calibration = read_table(tables, "calibration_csv")  # once make calibrate wrote it
        power = read_table(tables, "power_csv")
        links = answer_links(tables)  # the answer's figures, under the bottom line's table
        top = bottom_line(rep, rules, alpha, primary, summary, calibration, power, links)
        if "replication" in sections:
            sections["replication"] = Body(replication_section(rep, rules))
    if "control_csv" in tables:  # the positive control: built from its CSVs (FROM_CSVS)
        wvar = read_table(tables, "np_variance_csv")
        sections["control"] = Body(control_section(tables, primary, wvar))
    confirmed = confirm_sections(tables)  # "Confirmed on fresh seeds" (when confirm: is on)
    ordered, lead = compose(sections, confirmed)
    text = report_text(ordered, out, preface, lead, appendix, top, provenance, demo)
    return text, top


EMBEDDED = ("effects_forest_png",)  # the bottom line's page embeds the answer's figure only


def bottom_page(top: str, tables: Mapping) -> str:
    """The bottom line ``top`` as an HTML page with the forest embedded (the other pictures
    named: each embedded copy is the report's bytes again, and the default study's report stays
    within 2 MB); a placeholder when the spine is off (no bottom line)."""
    from topotrain.report.bottom_line import to_html

    text = top or f"## Bottom line\n\n{prose.render('front/spine_off')}"
    pictures = {k: v for k, v in tables.items() if k in EMBEDDED}
    return to_html(text, "topotrain — bottom line", pictures)


def front_screen(tables: Mapping, rules: dict[str, str], demo: bool = False) -> str:
    """The HTML report's first screen: the bottom line's table and the forest
    (``front.front_page``)."""
    from topotrain.report.front import front_page

    rep = read_table(tables, "replication_csv")
    return front_page(rep, rules, tables.get("effects_forest_png"), demo)
