"""Tables as CSV + Markdown, and ``REPORT.md`` assembled from them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.io import atomic_write_text, atomic_write_texts
from topotrain.report import prose
from topotrain.report.header import report_header


def format_cell(value, digits: int = 4) -> str:
    """A table cell: floats to ``digits`` significant digits (scientific when tiny), NaN as '–'."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e6):
            return f"{value:.{digits - 1}e}"
        return f"{value:.{digits}g}"
    return str(value).replace("|", "\\|")


def interval_text(effect, low, high, fmt=format_cell) -> str:
    """'0.12 [0.03, 0.21]': an effect and its 95 % interval, each number by ``fmt``; '0.12 (no
    interval)' where the interval is missing (the report's ``seed_effect.effect_text``: report/
    reads tables, it does not import the analysis)."""
    if not math.isfinite(float(low)):
        return f"{fmt(effect)} (no interval)"
    return f"{fmt(effect)} [{fmt(low)}, {fmt(high)}]"


def to_markdown(df: pd.DataFrame, digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table of ``df`` (no index)."""
    header = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = [
        "| " + " | ".join(format_cell(v, digits) for v in row) + " |"
        for row in df.itertuples(index=False, name=None)
    ]
    return "\n".join([header, rule, *rows]) + "\n"


def write_table(df: pd.DataFrame, csv: str | Path, md: str | Path, title: str = "") -> None:
    """Write ``df`` as CSV and as a Markdown table (with an optional heading): both or neither."""
    heading = f"## {title}\n\n" if title else ""
    atomic_write_texts({csv: df.to_csv(index=False), md: heading + to_markdown(df)})


def models_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per model: architecture, parameters, final train and validation loss (seed means)."""
    final = df[df["step"] == df.groupby("model")["step"].transform("max")]
    out = final.groupby(["model", "n_params", "d_model", "n_layer", "n_head"], as_index=False).agg(
        seeds=("seed", "nunique"),
        final_train_loss=("train_loss", "mean"),
        final_val_loss=("val_loss", "mean"),
    )
    return out.sort_values("n_params").reset_index(drop=True)


def rho_text(rho: float) -> str:
    """'ρ = -0.912', or 'ρ undefined' (a constant series, too few checkpoints)."""
    return f"ρ = {rho:.3f}" if np.isfinite(rho) else "ρ undefined"


def rho_interval_text(rho: float, low: float, high: float) -> str:
    """'ρ = -0.912 [-0.95, -0.85]' (``rho_text`` with its interval), the interval's absence said
    ('no interval: too few checkpoints for the bootstrap', spearman_ci's short-run case)."""
    if not np.isfinite(rho):
        return rho_text(rho)
    if np.isfinite(low) and np.isfinite(high):
        return f"{rho_text(rho)} [{low:.3f}, {high:.3f}]"
    return f"{rho_text(rho)} (no interval: too few checkpoints for the bootstrap)"


def best_feature_findings(best: pd.DataFrame) -> list[str]:
    """One sentence per model: the feature that tracks loss best, and any feature tied with it."""
    lines = []
    for row in best.itertuples(index=False):
        has_tie = isinstance(row.tied_with, str) and row.tied_with
        tied = f" (tied with {row.tied_with})" if has_tie else ""
        lines.append(
            f"- **{row.model}** ({row.n_params:,} parameters): `{row.feature}`{tied}, "
            f"{rho_interval_text(row.rho, row.ci_low, row.ci_high)}; best topological "
            f"`{row.best_topological}` {rho_text(row.best_topological_rho)}, best baseline "
            f"`{row.best_baseline}` {rho_text(row.best_baseline_rho)}; the clock `step` "
            f"{rho_text(row.step_rho)}, the scale `l2_norm_mean` {rho_text(row.l2_norm_mean_rho)}."
        )
    return lines


def prediction_findings(summary: pd.DataFrame) -> list[str]:
    """One sentence per fraction: MAE of loss-only vs combined, beside the same averaging without
    topology (mean_loss_only_last) when the table has it, the best method and the test."""
    lines = []
    for fraction, g in summary.groupby("fraction"):
        mae = g.set_index("method")["mae"]
        if unmeasured := fallen_back(g):
            lines.append(f"- **{100 * fraction:.0f}% of training:** {unmeasured}")
            continue
        comb = g[g["method"] == "combined"].iloc[0]
        best = mae.idxmin()
        verdict = "improves on" if mae["combined"] < mae["loss_only"] else "does not improve on"
        note = comb["wilcoxon_note"] if isinstance(comb["wilcoxon_note"], str) else ""
        lines.append(
            f"- **{100 * fraction:.0f}% of training:** combined (mean of loss-only and "
            f"topology-only) {verdict} loss-only: MAE {mae['combined']:.4f} vs "
            f"{mae['loss_only']:.4f} nats/char ({_pct(comb['improvement_pct'])}); Wilcoxon p = "
            f"{format_cell(comb['wilcoxon_p'])}{' — ' + note if note else ''}."
            f"{averaging_note(g)} Lowest MAE: {best} ({mae[best]:.4f}).{placebo_verdict(g)}"
        )
    return lines


def _pct(value: float) -> str:
    """'+46.5%', or 'not estimated' (no finite MAE to compare)."""
    return f"{value:+.1f}%" if np.isfinite(value) else "not estimated"


def fallen_back(g: pd.DataFrame) -> str:
    """'cannot be measured: …' when topology-only fell back to the last loss in every run of one
    fraction's rows of prediction.csv (its ``fallbacks``: too few checkpoints; combined then holds
    no topology, the replication's t5 inconclusive), else ''."""
    rows = g.set_index("method")
    if "fallbacks" not in rows or "topology_only" not in rows.index:
        return ""
    k, n = int(rows.loc["topology_only", "fallbacks"]), int(rows.loc["topology_only", "n"])
    if not 0 < n <= k:
        return ""
    return (
        f"cannot be measured: topology-only fell back to the last observed loss in all {n} runs "
        "(too few checkpoints before this fraction), so combined holds no topology; "
        "`tables/prediction_runs.md` says why per run."
    )


def averaging_note(g: pd.DataFrame) -> str:
    """' The same averaging without topology (mean_loss_only_last): +46.5%; the gain is (not)
    beyond averaging.' or '' when the control is absent."""
    rows = g.set_index("method")
    if "mean_loss_only_last" not in rows.index:
        return ""
    control = float(rows.loc["mean_loss_only_last", "improvement_pct"])
    combined = float(rows.loc["combined", "improvement_pct"])
    if not (np.isfinite(control) and np.isfinite(combined)):
        return " The same averaging without topology (`mean_loss_only_last`): not estimated."
    beyond = "beyond" if combined > control else "not beyond"
    return (
        f" The same averaging without topology (`mean_loss_only_last`): {_pct(control)}, so "
        f"the gain is {beyond} averaging."
    )


def placebo_verdict(g: pd.DataFrame) -> str:
    """' Beats loss-only, its averaging control and both placebos: topology_only no, combined yes
    (p = …).' or ''."""
    if "beats_placebos" not in g:
        return ""
    rows = g.set_index("method")
    flags = rows["beats_placebos"].dropna()
    verdicts = []
    for m, v in flags.items():
        p = rows.loc[m, "rival_p"] if "rival_p" in rows else float("nan")
        test = (
            f" (sign-flip p = {format_cell(p)} against {rows.loc[m, 'rival']})"
            if pd.notna(p)
            else ""
        )
        verdicts.append(f"{m} {'yes' if str(v) == 'True' else 'no'}{test}")
    if not verdicts:
        return ""
    return f" Beats loss-only, its averaging control and both placebos: {', '.join(verdicts)}."


def findings(best_csv: str | Path, prediction_csv: str | Path) -> str:
    """The answers a reader looks for first, computed from the tables (templates/findings.md)."""
    best = pd.read_csv(best_csv)
    summary = pd.read_csv(prediction_csv)
    return prose.render(
        "findings",
        best=prose.lines(best_feature_findings(best)),
        prediction=prose.lines(prediction_findings(summary)),
    )


class Body(str):
    """A section's Markdown itself, where assemble_report otherwise reads a table file."""


SUMMARY_ROWS = 3  # a findings section's tables in REPORT.md: their first rows, the whole linked


def summarised(body: str, link: str, rows: int = SUMMARY_ROWS) -> str:
    """``body`` with each Markdown table (a run of lines starting with '|') cut to its header,
    separator and first ``rows`` rows, a line after each cut table naming how many rows the whole
    one (``link``, relative to REPORT.md) holds; a table that fits is left whole."""
    out, table = [], []

    def flush():
        if len(table) > rows + 2:
            kept = table[: rows + 2]
            more = len(table) - len(kept)
            out.extend([*kept, "", prose.render("report/more_rows", more=more, link=link)])
        else:
            out.extend(table)
        table.clear()

    for line in body.split("\n"):
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        out.append(line)
    flush()
    return "\n".join(out)


def assemble_report(
    sections: list[tuple[str, str, str | Path]], out: str | Path, *args, **kwargs
) -> None:
    """Write REPORT.md at ``out``: ``report_text`` of the same arguments."""
    atomic_write_text(out, report_text(sections, out, *args, **kwargs))


def report_text(
    sections: list[tuple[str, str, str | Path]],
    out: str | Path,
    preface: str = "",
    lead: int = 0,
    appendix: Sequence[str | Path] = (),
    top: str = "",
    provenance: Mapping[str, str] | None = None,
    demo: bool = False,
) -> str:
    """REPORT.md's text (REPORT.md at ``out``): the header (``header.report_header``: the demo's
    banner when ``demo``, the title, ``provenance`` — version, config hash, engine — and the
    results folder in use, REPORT.md's), ``top`` (the bottom line), the first ``lead`` sections,
    an optional preface (findings), then the other sections; each section is (heading, text,
    Markdown table file or a Body); then the ``appendix`` files as they are (each run's and
    branch's section). After the ``lead`` sections, a section read from a table file shows its
    tables' first rows (``summarised``), the file linked."""
    parts = report_header(Path(out).parent.as_posix(), provenance, demo)
    if top:
        parts.append(top)
    for i, (heading, text, table) in enumerate(sections):
        if i == lead and preface:
            parts.append(preface)
        body = table if isinstance(table, Body) else Path(table).read_text()
        if body.startswith("## "):  # drop the table's own heading; the section has one
            body = body.split("\n", 2)[2]
        if i >= lead and not isinstance(table, Body):
            body = summarised(body, _relative(table, out))
        parts.append(f"## {heading}\n\n{text.strip()}\n\n{body}")
    if preface and lead >= len(sections):
        parts.append(preface)
    parts += [Path(section).read_text() for section in appendix]
    return "\n".join(parts)


def _relative(path: str | Path, out: str | Path) -> str:
    """``path`` relative to REPORT.md's folder (POSIX), else as given."""
    try:
        return Path(path).resolve().relative_to(Path(out).resolve().parent).as_posix()
    except ValueError:
        return Path(path).as_posix()


# The report's reading order, and the part of the study each section belongs to (the workflow
# asks for a section only when its part is on): control, spine, pythia_weights, pythia_embeddings.
ORDER = (
    ("control", "control"),
    ("replication", "spine"),
    ("models", "spine"),
    ("best_feature", "spine"),
    ("correlations", "spine"),
    ("associations_summary", "spine"),
    ("diagnostics", "spine"),
    ("prediction", "spine"),
    ("prediction_runs", "spine"),
    ("layer_types_summary", "spine"),
    ("scaling", "spine"),
    ("phases", "spine"),
    ("stopping_summary", "spine"),
    ("velocity_summary", "spine"),
    ("correlations_across_seeds", "spine"),
    ("pythia_weights", "pythia_weights"),
    ("pythia_kinds", "pythia_embeddings"),
    ("pythia_comparison", "pythia_embeddings"),
    ("pythia_correlations", "pythia_embeddings"),
)

LEAD = 2  # ORDER's first two (control, replication): the confirmed sections, the findings follow
FROM_CSVS = frozenset({"control"})  # sections the report builds from CSVs: no tables/<name>.md

# table name -> (section heading, what the reader learns from it): templates/sections/<name>.md
SECTIONS = {name: prose.section(name) for name, _ in ORDER}


def compose(
    tables: Mapping[str, str | Path], confirmed: Sequence[tuple[str, str, Body]] = ()
) -> tuple[list[tuple[str, str, str | Path]], int]:
    """REPORT.md's sections in ORDER, whatever the order of ``tables`` (section name → its
    Markdown table file or a Body), the ``confirmed`` ones (``confirm.confirm_sections``) after
    the LEAD sections present; and how many sections come before the findings. A name ORDER
    lacks is an error that names it (its heading and text would be missing)."""
    if unknown := sorted(set(tables) - {name for name, _ in ORDER}):
        raise ValueError(f"no report section {unknown}: add it to report.markdown.ORDER")
    present = [name for name, _ in ORDER if name in tables]
    sections = [(*SECTIONS[name], tables[name]) for name in present]
    lead = sum(name in tables for name, _ in ORDER[:LEAD])
    sections[lead:lead] = confirmed
    return sections, lead + len(confirmed)
