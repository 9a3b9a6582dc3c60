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
from topotrain.report.markdown import format_cell, interval_text, to_markdown
from topotrain.report.null_rates import null_rate

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
NAMES = {"h0_total": "TP0", "np_mean": "NP", "h1_total": "TP1"}


def with_rule_ids(replication: pd.DataFrame, rules: dict[str, str]) -> pd.DataFrame:
    """The replication table with the rule's id (``t2``, …) in place of its text."""
    out = replication.copy()
    out["rule"] = out["rule"].map({text: key for key, text in rules.items()}).fillna("?")
    return out


def counts(verdicts: pd.Series) -> str:
    """'3 reproduced, 2 artefact' in the order of first appearance."""
    return ", ".join(f"{n} {v}" for v, n in verdicts.value_counts(sort=False).items())


# The primary family's two questions (primary.QUESTIONS, issue 56): name → (as said, its view, its
# loss, its conditions beyond the clock and beyond the norm, its Δ's column and symbol)
PRIMARY_QUESTIONS = {
    "moves_with": (
        "moves with", "co-movement", "val loss", ("co_clock", "co_scale"), "sesoi_co", "Δ_co"
    ),
    "ranks": ("ranks", "level", "train loss", ("clock", "scale"), "sesoi", "Δ"),
}  # fmt: skip


def primary_sentence(primary: pd.DataFrame | None, alpha: float) -> str:
    """The primary family: the bottom line's question (fixed in the pre-registration), the four
    verdict words, then per claim each question's verdict (the bottom line's first, in bold) with
    the numbers that decide it (``question_phrase``). It says what the rule decided and nothing
    more: "undecided" is never said as "no effect"."""
    if primary is None or primary.empty:
        return ""
    given = primary["question"].dropna() if "question" in primary else pd.Series(dtype=str)
    question = str(given.iloc[0]) if len(given) else ""
    order = [question, *(q for q in PRIMARY_QUESTIONS if q != question)]
    order = [q for q in order if q in PRIMARY_QUESTIONS]
    parts = []
    for row in primary.itertuples(index=False):
        name = NAMES.get(row.feature, row.feature)
        views = [getattr(row, f"p_{PRIMARY_QUESTIONS[q][3][0]}", np.nan) for q in order]
        if not np.isfinite(np.asarray(views, float)).any():
            parts.append(prose.render("bottom_line/unmeasured", name=name))
            continue
        answers = "; ".join(question_phrase(row, q, alpha, bold=q == question) for q in order)
        parts.append(prose.render("bottom_line/primary_claim", name=name, answers=answers))
    smallest = int(primary["arrangements"].max()) if primary["arrangements"].notna().any() else 0
    floor = prose.render("bottom_line/primary_floor", smallest=f"{smallest:,}") if smallest else ""
    said = PRIMARY_QUESTIONS.get(question, (question,))[0]
    return prose.render(
        "bottom_line/primary",
        floor=floor,
        question=said,
        claims="; ".join(parts),
    )


def question_phrase(row, question: str, alpha: float, bold: bool = False) -> str:
    """'moves with: **undecided** (co-movement view, val loss: p_clock = …, p_scale = …, BH p =
    … (does not reject it, effect signs held in 5/5 models, reversal by Δ_co ruled out in 0/5);
    effect 0.2 (≥ 0.1, one-sided 95 % bound) at Δ_co = 0.1; at Δ_co/2: …, at 2Δ_co: …)': one
    question's verdict on a primary row and the numbers of its own view that decide it."""
    said, view, loss, (clock, norm), sesoi, symbol = PRIMARY_QUESTIONS[question]
    key = {"moves_with": "comove", "ranks": "level"}[question]  # primary.QUESTIONS' view
    verdict = str(getattr(row, f"verdict_{question}"))
    verdict = f"**{verdict}**" if bold else verdict
    p_bh = float(getattr(row, f"p_bh_{question}"))
    if not np.isfinite(p_bh):
        return prose.render("bottom_line/question_unmeasured", question=said, verdict=verdict)
    held, ruled = getattr(row, f"held_{key}", None), getattr(row, f"ruled_{key}", None)
    signs = prose.render("bottom_line/signs_held", held=held) if isinstance(held, str) else ""
    if isinstance(ruled, str):
        signs += prose.render("bottom_line/ruled_out", ruled=ruled, delta=symbol)
    bound = float(getattr(row, f"effect_{question}_bound"))
    shown = bound_phrase(
        getattr(row, f"effect_{question}"), bound, np.inf if np.isfinite(bound) else np.nan, alpha
    )
    return prose.render(
        "bottom_line/question",
        question=said,
        verdict=verdict,
        view=view,
        loss=loss,
        pair=view_p(getattr(row, f"p_{clock}"), getattr(row, f"p_{norm}")),
        p_bh=format_cell(p_bh),
        decision="rejects the null" if p_bh < alpha else "does not reject it",
        signs=signs,
        shown=shown,
        delta=symbol,
        value=format_cell(getattr(row, sesoi)),
        half=getattr(row, f"verdict_{question}_half_sesoi"),
        double=getattr(row, f"verdict_{question}_double_sesoi"),
    )


def view_p(p_clock: float, p_scale: float) -> str:
    """'p_clock = …, p_scale = …' of one view."""
    return prose.render(
        "bottom_line/view_p", p_clock=format_cell(p_clock), p_scale=format_cell(p_scale)
    )


def bound_phrase(effect: float, low: float, high: float, alpha: float) -> str:
    """'0.31 (≥ 0.2, one-sided 95 % bound)' for a one-sided bound at ``alpha`` (an infinite end:
    '≥ low' or '≤ high'), else the interval '0.31 [0.2, 0.42]' or '0.31 (no interval)'."""
    low, high = float(low), float(high)
    side, end = ("≥", low) if np.isposinf(high) else ("≤", high) if np.isneginf(low) else ("", 0)
    if side and np.isfinite(end):
        return prose.render(
            "bottom_line/bound",
            effect=format_cell(effect),
            side=side,
            end=format_cell(end),
            level=f"{100 * (1 - alpha):g}",
        )
    return interval_text(effect, low, high)


def effect_phrase(name: str, row, alpha: float) -> str:
    """'NP effect 0.31 (≥ 0.2, one-sided 95 % bound) at Δ = 0.1: reproduced (at Δ/2: …, at 2Δ:
    …)': the bottom-line question's effect (its view's weaker condition) with the bound that
    matches its one-sided test at ``alpha`` (``bound_phrase``), and its verdicts by the rule (the
    co-movement view's Δ_co when the question is moves_with)."""
    co = getattr(row, "question", None) == "moves_with"
    return prose.render(
        "bottom_line/effect",
        name=name,
        which=" (co-movement view)" if co else "",
        shown=bound_phrase(row.effect, row.effect_ci_low, row.effect_ci_high, alpha),
        delta=f"Δ_co = {format_cell(row.sesoi_co)}" if co else f"Δ = {format_cell(row.sesoi)}",
        verdict=row.verdict,
        half=row.verdict_half_sesoi,
        double=row.verdict_double_sesoi,
    )


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


def to_html(markdown: str, title: str, images: dict[str, str] | None = None) -> str:
    """A small self-contained HTML page of the bottom line's Markdown (headings, bold, code, list
    items, pipe tables, paragraphs; an image line ``![alt](figures/NAME)`` embedded from
    ``images``: NAME → PNG path, as a data URI, so that the page shows it inside Snakemake's
    report; a link's text kept, its target dropped): the HTML report shows it first, in its
    "1. Replication" category."""
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
        elif line.startswith("## "):
            body.append(f"<h2>{inline(line[3:])}</h2>")
        elif line.strip():
            body.append(f"<p>{inline(line)}</p>")
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:1em auto;line-height:1.4}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n"
    )


def data_uri(path: str) -> str:
    """A PNG as a data URI."""
    import base64

    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode()
