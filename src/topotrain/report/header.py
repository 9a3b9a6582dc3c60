"""REPORT.md's header: its title, what produced it (the package version, the configuration's hash,
the Vietoris–Rips engine) and where its numbers come from."""

from __future__ import annotations

from collections.abc import Mapping

TITLE = "# topotrain — weight-space study report\n"


def provenance_line(version: str, config_sha256: str, engine: str) -> str:
    """One line naming what produced the report: enough to tell two reports' origins apart."""
    return (
        f"Produced by topotrain {version} from the configuration with sha256 `{config_sha256}` "
        "(the validated config, defaults filled, as canonical JSON: `topotrain.config.config_hash`)"
        f"; Vietoris–Rips engine: {engine}.\n"
    )


def report_header(results: str, provenance: Mapping[str, str] | None = None) -> list[str]:
    """The header's paragraphs: the title, the provenance line when given (``provenance_line``'s
    keywords), and where the numbers live under the ``results`` folder in use."""
    where = (
        "Every number below is produced by the workflow from its feature tables "
        f"(`{results}/features/weights.parquet`; a run's "
        f"`{results}/runs/<name>/features.parquet`); each table also exists as CSV under "
        f"`{results}/tables/` (a run's under "
        f"`{results}/runs/<name>/tables/`), figures under `{results}/figures/`.\n"
    )
    return [TITLE, *([provenance_line(**provenance)] if provenance else []), where]
