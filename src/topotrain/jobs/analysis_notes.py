"""What jobs/analysis.py writes beside its tables: the diagnostics file beside the associations,
and the too-few-draws note under the calibration tables."""

from __future__ import annotations

from topotrain.jobs.common import log


def _diagnostics(df, assoc, params: dict, out: dict[str, str]) -> None:
    """diagnostics.{csv,md}: topology beside WeightWatcher's metrics (and beyond the weight
    variance and the gradient norm), with the sentence on α as a training monitor above the
    Markdown table."""
    from topotrain.analysis.inference.diagnostics import (
        alpha_sentence,
        diagnosed,
        diagnostics_table,
        partial_contrasts,
    )
    from topotrain.io import atomic_write_texts
    from topotrain.report.markdown import to_markdown

    features = list(assoc.loc[diagnosed(assoc), "feature"].drop_duplicates())
    partials = partial_contrasts(df, features, seed=params["seed"])
    table = diagnostics_table(assoc, params["sesoi"], partials=partials)
    md = f"## Topology beside the field's weight diagnostics\n\n{alpha_sentence(table)}\n\n"
    atomic_write_texts(
        {
            out["diagnostics_csv"]: table.to_csv(index=False),
            out["diagnostics_md"]: md + to_markdown(table),
        }
    )


def _verdict_note(key: str, draws: int, nominal: float, rows: str, warn: bool = True) -> str:
    """ "" when ``draws`` (config ``analysis.calibration.<key>``) reach what a verdict row at
    ``nominal`` needs (``pass_rule.verdict_draws``), else the shortfall, logged as a warning
    (``warn``) and returned as a paragraph for under the table's heading."""
    from topotrain.analysis.calibration.pass_rule import short_of_verdict_draws

    short = short_of_verdict_draws(draws, nominal, f"analysis.calibration.{key}", rows)
    if short is None:
        return ""
    if warn:
        log.warning("calibration: %s", short)
    return f"\n\n**Too few draws for a verdict row**: {short}."
