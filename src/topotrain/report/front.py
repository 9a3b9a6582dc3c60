"""The HTML report's first screen: the demo's banner, the bottom line's table of questions and
their verdict counts, and the forest of every effect against Δ, as an HTML fragment that
workflow/report/workflow.rst (Snakemake's description, the page the report opens on) takes in
whole. Snakemake puts its rule graph beside the description: the fragment's style hides it behind
a checkbox, and widens the description to the answer's width."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from topotrain.report import prose
from topotrain.report.bottom_line import (
    PAGE_WIDTH,
    data_uri,
    evaluated,
    html_body,
    question_table,
    with_rule_ids,
)
from topotrain.report.header import DEMO_BANNER

FRONT_ID = "topotrain-front"  # the fragment's element: the browser test finds it
GRAPH_ID = "topotrain-rulegraph"  # the checkbox that shows Snakemake's rule graph
# Snakemake 9's report: the description sits in a ".prose" column (max 32rem) of a row centred in
# the screen, the rule graph (#rulegraph) beside it: the rule graph hidden until its checkbox is
# ticked (CSS :has, no script: the description's HTML runs none), the column as wide as the forest
# and the row from the top (the forest makes it taller than the screen: centred, its top is cut)
STYLE = (
    f"#rulegraph{{display:none}}"
    f"body:has(#{GRAPH_ID}:checked) #rulegraph{{display:block}}"
    f".prose:has(#{FRONT_ID}){{max-width:60rem}}"
    f".h-screen:has(#{FRONT_ID}){{align-items:flex-start}}"
    f"#{FRONT_ID} table{{border-collapse:collapse;margin:.5em 0}}"
    f"#{FRONT_ID} td,#{FRONT_ID} th{{border:1px solid #ccc;padding:.2em .5em}}"
    f"#{FRONT_ID} .banner{{background:#fff3cd;border:1px solid #e0b000;padding:.4em .8em}}"
    f"#{FRONT_ID} img{{width:100%;max-width:{PAGE_WIDTH}px}}"
)


def front_page(
    replication: pd.DataFrame | None,
    rules: dict[str, str],
    forest_png: str | Path | None = None,
    demo: bool = False,
) -> str:
    """The first screen's HTML fragment: the banner when ``demo``, the bottom line's heading and
    its table of questions (``bottom_line.question_table`` of ``replication``, the rule ids from
    ``rules``; None: the spine is off), where each claim's verdict and numbers are, the checkbox
    that shows the rule graph, and the forest (``forest_png``, embedded: ``bottom_line.data_uri``;
    shown at most PAGE_WIDTH wide)."""
    parts = [f"<p class='banner'><b>{html.escape(DEMO_BANNER)}</b></p>"] if demo else []
    lines = [prose.render("bottom_line/heading")]
    if replication is None:  # no spine: no claim of the paper asked
        lines.append(prose.render("front/spine_off"))
    else:
        asked = evaluated(with_rule_ids(replication, rules))
        lines.append(question_table(asked) or prose.render("bottom_line/nothing"))
        lines.append(prose.render("front/where"))
    parts.append(html_body("\n\n".join(lines)))
    said = html.escape(prose.render("front/rule_graph"))
    parts.append(f"<p><label><input type='checkbox' id='{GRAPH_ID}'> {said}</label></p>")
    if forest_png and Path(forest_png).is_file():
        alt = html.escape(prose.render("front/forest"), quote=True)
        parts.append(f"<p><img src='{data_uri(forest_png)}' alt='{alt}'></p>")
    return f"<style>{STYLE}</style><div id='{FRONT_ID}'>{''.join(parts)}</div>\n"
