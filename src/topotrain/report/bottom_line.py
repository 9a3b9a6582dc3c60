"""The report's first page: each study question, its verdict counts and the numbers that decide it,
then the replication table with a rule id per row and the rules listed once below it.

``rules`` (rule id → text) and ``alpha`` come from the analysis (``replication.RULES``,
``stats.ALPHA``), handed over by the report job: the report does not import the analysis. The
sentences are templates/bottom_line/*.md, filled with the numbers (a word chosen by a rule, such
as "rejects the null", stays beside the rule).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.report import prose
from topotrain.report.markdown import format_cell, to_markdown
from topotrain.report.null_rates import null_rate
from topotrain.report.question_phrases import (  # noqa: F401 (the primary family's phrases: re-exported)
    NAMES,
    PRIMARY_QUESTIONS,
    bound_phrase,
    effect_phrase,
    primary_sentence,
    question_phrase,
    view_p,
)

QUESTIONS = {  # question -> the rule ids that answer it
    "Does weight topology track training loss beyond the clock and the scale?": (
        "t2",
        "t2_p",
        "t3",
    ),
    "Do the features change with model size as the paper says?": (
        "t1",
        "t2_monotone",
        "t4",
        "t6",
        "t7",
    ),
    "Does topology improve the prediction of the final loss?": ("t5",),
    "Is there a phase transition early in training?": ("t6_peak",),
    "Do the claims hold on Pythia?": ("t8_np", "t8_tp0", "b_h1", "b_spectral"),
}


def with_rule_ids(replication: pd.DataFrame, rules: dict[str, str]) -> pd.DataFrame:
    """The replication table with the rule's id (``t2``, …) in place of its text."""
    out = replication.copy()
    out["rule"] = out["rule"].map({text: key for key, text in rules.items()}).fillna("?")
    return out


def counts(verdicts: pd.Series) -> str:
    """'3 reproduced, 2 artefact' in the order of first appearance."""
    return ", ".join(f"{n} {v}" for v, n in verdicts.value_counts(sort=False).items())


def power_sentence(power: pd.DataFrame | None) -> str:
    """One sentence per claim of power.csv: 'TP0: power at Δ = 0.1 is 0.53 [MC 0.50, 0.56]; 80 %
    power needs β ≥ 0.14 (5 models × 3 seeds × 51 checkpoints; simulator's model).' The design's
    power, fixed before the data (never at the observed effect)."""
    if power is None or power.empty:
        return ""
    views = power[power["planted"].notna()] if "planted" in power else power.iloc[:0]
    power = power[power["planted"].isna()] if "planted" in power else power
    parts = []
    for row in power.itertuples(index=False):
        name = NAMES.get(row.feature, row.feature)
        if not np.isfinite(row.power_at_sesoi):
            parts.append(prose.render("bottom_line/power_none", name=name, note=row.note))
            continue
        need = (
            prose.render("bottom_line/power_needs", mde=f"{row.mde_80:.2f}")
            if np.isfinite(row.mde_80)
            else prose.render("bottom_line/power_unreached")
        )
        parts.append(
            prose.render(
                "bottom_line/power",
                name=name,
                sesoi=f"{row.sesoi:g}",
                power=f"{row.power_at_sesoi:.2f}",
                low=f"{row.power_mc_low:.2f}",
                high=f"{row.power_mc_high:.2f}",
                need=need,
                models=f"{row.models:.0f}",
                seeds=f"{row.seeds:.0f}",
                checkpoints=f"{row.checkpoints:.0f}",
            )
        )
    return " ".join([*parts, views_power_sentence(views)]).strip()


def views_power_sentence(views: pd.DataFrame) -> str:
    """'At this design, the claim's joint test at Δ_co (innovation coupling): TP0 0.99, …, and
    "reproduced" (…): TP0 0.74, …; under the stated model at Δ: joint TP0 1.00, …, reproduced TP0
    0.96, …' from power.csv's views rows (``this_design``), or '' without them."""
    here = views[views["this_design"].astype(str).eq("True")] if len(views) else views
    if here.empty:
        return ""

    def listed(coupling: str, view: str) -> str:
        rows = here[(here["coupling"] == coupling) & (here["view"] == view)]
        return ", ".join(
            f"{NAMES.get(r.feature, r.feature)} {r.power_at_sesoi:.2f}"
            for r in rows.itertuples(index=False)
        )

    designs = views[views["this_design"].astype(str).ne("True")]  # the grid power.csv walks
    return prose.render(
        "bottom_line/views_power",
        seeds=" / ".join(map(str, sorted(designs["seeds"].unique()))),
        checkpoints=" / ".join(map(str, sorted(designs["checkpoints"].unique()))),
        innovation_joint=listed("innovation", "joint"),
        innovation_reproduced=listed("innovation", "reproduced"),
        level_joint=listed("level", "joint"),
        level_reproduced=listed("level", "reproduced"),
    )


def study_seeds(summary: pd.DataFrame) -> int:
    """Seeds per model in associations_summary.csv (the smallest over models: pooled rows hold
    none)."""
    per_model = summary.loc[summary["model"] != "pooled", "n_seeds"]
    return int(per_model.min()) if len(per_model) else 0


def beats_sentence(
    summary: pd.DataFrame | None, alpha: float, calibration: pd.DataFrame | None = None
) -> str:
    """'k of K topological features beat the clock pooled over models (expected under the null ≈
    K × rate)' from associations_summary.csv; the rate is ``null_rates.null_rate``'s for the
    pooled flag at the study's seed count (``calibration``: the rows of calibration.csv)."""
    if summary is None or "beats_clock" not in summary:
        return ""
    pooled = summary[(summary["model"] == "pooled") & (summary["kind"] == "topological")]
    pooled = pooled[pooled["target"] == "train_loss"]
    defined = pooled[pooled["p_seed_contrast"].notna()]
    k, total = int(defined["beats_clock"].astype(str).eq("True").sum()), len(defined)
    if not total:
        return ""
    rate = null_rate("beats_clock (pooled)", study_seeds(summary), calibration)
    return prose.render(
        "bottom_line/beats",
        k=k,
        total=total,
        threshold=f"{alpha:g}",
        expected=rate.expected(total),
        rate=rate.label(),
    )


def bottom_line(
    replication: pd.DataFrame,
    rules: dict[str, str],
    alpha: float,
    primary: pd.DataFrame | None = None,
    summary: pd.DataFrame | None = None,
    calibration: pd.DataFrame | None = None,
    power: pd.DataFrame | None = None,
    figures: str = "",
) -> str:
    """Markdown: a table of the questions and their verdict counts, then ``figures`` (the
    answer's pictures, ``answer.answer_links``), then per question its verdict counts and each
    claim's numbers in one line (``calibration``: the rows of calibration.csv, when the study has
    one; ``power``: power.csv, one sentence per primary claim)."""
    asked = evaluated(with_rule_ids(replication, rules))
    lines = [prose.render("bottom_line/heading") + "\n"]
    table = question_table(asked)
    if table:
        lines.append(table)
    if figures:
        lines.append(figures.strip() + "\n")
    for question, rows in asked.items():
        ids = QUESTIONS[question]
        lines.append(f"**{question}** {counts(rows['verdict'])}.")
        shared = shared_notes(rows)
        for r in rows.itertuples(index=False):
            interval = ""
            if np.isfinite(r.ours_ci_low) and np.isfinite(r.ours_ci_high):
                interval = f" [{format_cell(r.ours_ci_low)}, {format_cell(r.ours_ci_high)}]"
            note = str(r.note)
            if r.rule in shared:
                note = note[: -len(shared[r.rule])].rstrip("; ")
            lines.append(
                f"- {r.claim}: **{r.verdict}** — paper {format_cell(r.paper)}, ours "
                f"{format_cell(r.ours)}{interval} ({r.rule}; {note})"
            )
        lines += [f"- every `{rule}` row above: {tail}" for rule, tail in shared.items()]
        if "t2" in ids:
            extra = (
                primary_sentence(primary, alpha),
                power_sentence(power),
                beats_sentence(summary, alpha, calibration),
            )
            lines += [s for s in extra if s]
        lines.append("")
    if not table:
        lines.append(prose.render("bottom_line/nothing") + "\n")
    return "\n".join(lines)


def shared_notes(rows: pd.DataFrame) -> dict[str, str]:
    """rule → the end its rows' notes share (from a "; " on), for each rule with two or more
    rows whose notes end alike: the bottom line prints it once, after the rows."""
    out = {}
    for rule, group in rows.groupby("rule", sort=False):
        notes = [str(n) for n in group["note"]]
        if len(notes) < 2:
            continue
        tails = {n.split("; ", 1)[1] if "; " in n else None for n in notes}
        if len(tails) == 1 and (tail := tails.pop()):
            out[rule] = tail
    return out


def evaluated(rep: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """question → its evaluated claims' rows of ``rep`` (``with_rule_ids``), for each question of
    ``QUESTIONS`` (in order) that has one."""
    out = {}
    for question, ids in QUESTIONS.items():
        rows = rep[rep["rule"].isin(ids) & (rep["verdict"] != "not evaluated")]
        if len(rows):
            out[question] = rows
    return out


def question_table(asked: dict[str, pd.DataFrame]) -> str:
    """The bottom line's table: one row per question of ``asked`` (``evaluated``), its verdict
    counts and its claims; '' when no question has one."""
    rows = [f"| {q} | {counts(r['verdict'])} | {len(r)} |" for q, r in asked.items()]
    if not rows:
        return ""
    return "\n".join(["| Question | Verdicts | Claims |", "|---|---|---|", *rows]) + "\n"


def replication_section(replication: pd.DataFrame, rules: dict[str, str]) -> str:
    """The replication table (rule ids) of the evaluated claims, without their notes — each
    note is in the bottom line, every claim and note in the linked ``tables/replication.md``, the
    claims not evaluated named below it — and each rule used, listed once."""
    rep = with_rule_ids(replication, rules).drop(columns=["note"], errors="ignore")
    skipped = rep[rep["verdict"] == "not evaluated"]
    rep = rep.drop(skipped.index)
    used = [k for k in rules if k in set(rep["rule"])]
    legend = "\n".join(f"- `{k}`: {rules[k]}" for k in used)
    link = prose.render(
        "bottom_line/replication_link",
        skipped=len(skipped),
        claims=", ".join(skipped["claim"].astype(str)) or "none",
    )
    return f"{to_markdown(rep)}\n{link}\n\n**Rules.**\n\n{legend}\n"


IMAGE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)$")
PAGE_WIDTH = 1000  # pixels an embedded figure is shown at, at most (CSS): the first screen


def to_html(markdown: str, title: str, images: dict[str, str] | None = None) -> str:
    """A small self-contained HTML page of the bottom line's Markdown (``html_body``): the HTML
    report shows it in its "1. Replication" category."""
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:1em auto;line-height:1.4}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{html_body(markdown, images)}</body></html>\n"
    )


def html_body(markdown: str, images: dict[str, str] | None = None) -> str:
    """The HTML of the bottom line's Markdown (headings, bold, code, list items, pipe tables,
    paragraphs; an image line ``![alt](figures/NAME)`` embedded from ``images``: NAME → PNG path,
    as a data URI, so that the page shows it inside Snakemake's report, else named with where the
    report shows it; a link's text kept, its target dropped)."""
    images = {Path(p).name: p for p in (images or {}).values()}

    def inline(text: str) -> str:
        text = html.escape(re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text))
        text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
        return re.sub(r"`(.+?)`", r"<code>\1</code>", text)

    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    body, items, table = [], [], []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            if not set(line) <= set("|-: "):  # the header's rule
                tag = "th" if not table else "td"
                table.append("<tr>" + "".join(f"<{tag}>{inline(c)}</{tag}>" for c in cells(line)))
            continue
        if table:
            body.append("<table>" + "".join(r + "</tr>" for r in table) + "</table>")
            table = []
        if line.startswith("- "):
            items.append(f"<li>{inline(line[2:])}</li>")
            continue
        if items:
            body.append("<ul>" + "".join(items) + "</ul>")
            items = []
        image = IMAGE.match(line.strip())
        if image and Path(image.group(2)).name in images:
            uri = data_uri(images[Path(image.group(2)).name])
            alt = html.escape(image.group(1), quote=True)
            body.append(f"<p><img src='{uri}' alt='{alt}' style='max-width:100%'></p>")
        elif image:  # not embedded: where the report shows it
            said = prose.render(
                "bottom_line/picture_elsewhere", alt=image.group(1), file=Path(image.group(2)).name
            )
            body.append(f"<p>{inline(said)}</p>")
        elif line.startswith("## "):
            body.append(f"<h2>{inline(line[3:])}</h2>")
        elif line.strip():
            body.append(f"<p>{inline(line)}</p>")
    return "".join(body)


def data_uri(path: str | Path) -> str:
    """A PNG as a data URI, its bytes as they are: the figures are palette PNGs already
    (``figure_kit.palette_png``), and the page scales them (max-width); resampling one here
    blurred its text into more colours and made it half as large again."""
    import base64

    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()
