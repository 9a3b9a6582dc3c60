"""REPORT.md's header: a demo's banner, its title, what produced it (the package version, the
configuration's hash, the Vietoris–Rips engine) and where its numbers come from
(templates/header/)."""

from __future__ import annotations

from collections.abc import Mapping

from topotrain.report import prose

TITLE = prose.render("header/title") + "\n"
# the config's demo: true (.test/config/demo.yaml): the first line of REPORT.md and of the HTML
# report's first screen (``front.front_page``)
DEMO_BANNER = prose.render("header/demo")


def provenance_line(version: str, config_sha256: str, engine: str) -> str:
    """One line naming what produced the report: enough to tell two reports' origins apart."""
    return (
        prose.render(
            "header/provenance", version=version, config_sha256=config_sha256, engine=engine
        )
        + "\n"
    )


def preregistration_line(path: str, sha256: str, status: str, deviations: str) -> str:
    """The pre-registration's file, status and sha256, and whether this run is the registered
    study (``config.preregistration.summary``)."""
    match = (
        "this run has its design and seeds"
        if not deviations
        else f"this run departs from it: {deviations}"
    )
    return (
        prose.render("header/preregistration", path=path, status=status, sha256=sha256, match=match)
        + "\n"
    )


def report_header(results: str, provenance: Mapping | None = None, demo: bool = False) -> list[str]:
    """The header's paragraphs: the demo's banner (``demo``: the config's ``demo``), the title,
    the provenance line when given (``provenance_line``'s keywords, and under
    ``preregistration`` ``preregistration_line``'s, its own paragraph), and where the numbers live
    under the ``results`` folder in use."""
    where = prose.render("header/where", results=results) + "\n"
    provenance = dict(provenance or {})
    reg = provenance.pop("preregistration", None)
    lines = [provenance_line(**provenance)] if provenance else []
    lines += [preregistration_line(**reg)] if reg else []
    banner = [f"> **{DEMO_BANNER}**\n"] if demo else []
    return [*banner, TITLE, *lines, where]
