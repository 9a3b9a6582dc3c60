"""REPORT.md's header: its title, what produced it (the package version, the configuration's hash,
the Vietoris–Rips engine) and where its numbers come from (templates/header/)."""

from __future__ import annotations

from collections.abc import Mapping

from topotrain.report import prose

TITLE = prose.render("header/title") + "\n"


def provenance_line(version: str, config_sha256: str, engine: str) -> str:
    """One line naming what produced the report: enough to tell two reports' origins apart."""
    return (
        prose.render(
            "header/provenance", version=version, config_sha256=config_sha256, engine=engine
        )
        + "\n"
    )


def report_header(results: str, provenance: Mapping[str, str] | None = None) -> list[str]:
    """The header's paragraphs: the title, the provenance line when given (``provenance_line``'s
    keywords), and where the numbers live under the ``results`` folder in use."""
    where = prose.render("header/where", results=results) + "\n"
    return [TITLE, *([provenance_line(**provenance)] if provenance else []), where]
