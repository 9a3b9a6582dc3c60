"""The report's bottom line and its replication section, on a hand-made verdict table."""

from __future__ import annotations

import pandas as pd
from conftest import ROOT

from topotrain.analysis.replication import RULES, read_paper_values, replication_table
from topotrain.analysis.stats import ALPHA
from topotrain.report.bottom_line import beats_sentence, bottom_line, replication_section

PAPER = ROOT / "workflow" / "data" / "paper_values.csv"
MODELS = {
    "tiny-3k": 3_000,
    "small-7k": 7_000,
    "med-21k": 21_000,
    "large-46k": 46_000,
    "xl-97k": 97_000,
}


def verdicts() -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = [
        {
            "model": m,
            "seed": s,
            "n_params": n,
            "feature": "h0_total",
            "target": "train_loss",
            "view": "raw",
            "rho": -0.9,
            "p": 1e-9,
            "p_bh": 1e-9,
        }
        for m, n in MODELS.items()
        for s in range(3)
    ]
    primary = pd.DataFrame(
        [
            {
                "feature": "h0_total",
                "p_clock": 0.2,
                "p_scale": 0.3,
                "p": 0.3,
                "p_bh": 0.45,
                "arrangements": 7776,
                "rejected": False,
                "note": "",
            },
            {
                "feature": "np_mean",
                "p_clock": 1 / 7776,
                "p_scale": 2 / 7776,
                "p": 2 / 7776,
                "p_bh": 6 / 7776,
                "arrangements": 7776,
                "rejected": True,
                "note": "",
            },
        ]
    )
    tables = {"associations": pd.DataFrame(rows), "primary": primary}
    return replication_table(read_paper_values(PAPER), tables), primary


def test_bottom_line_counts_verdicts_per_question_with_the_deciding_numbers():
    rep, primary = verdicts()
    text = bottom_line(rep, RULES, ALPHA, primary)
    first = text.split("\n")[2]
    assert first.startswith("**Does weight topology track training loss beyond the clock")
    assert "6 artefact" in first  # 5 sizes + "every p < 1e-5": the sign, not beyond the clock
    assert "- ρ(TP0, train loss) xl-97k: **artefact** — paper -0.907, ours -0.9" in text
    assert "TP0 p_clock = 0.2, p_scale = 0.3, BH p = 0.45 (does not reject it)" in text
    assert "NP p_clock = 1.286e-04" in text and "smallest attainable p = 1/7,776" in text
    assert "Do the claims hold on Pythia?" not in text  # every Pythia row is not evaluated


def test_replication_section_gives_rule_ids_and_lists_each_rule_once():
    rep, _ = verdicts()
    text = replication_section(rep, RULES)
    table, legend = text.split("**Rules.**")
    assert "| t2 |" in table and RULES["t2"] not in table
    assert legend.count(RULES["t2"]) == 1 and legend.count("- `t2`:") == 1
    assert set(line.split("`")[1] for line in legend.strip().splitlines()) == set(RULES)


def test_beats_statements_print_the_number_expected_under_the_null():
    summary = pd.DataFrame(
        {
            "model": "pooled",
            "kind": "topological",
            "target": "train_loss",
            "feature": [f"f{i}" for i in range(20)],
            "p_seed_contrast": 0.5,
            "beats_clock": [True] * 2 + [False] * 18,
        }
    )
    line = beats_sentence(summary, 0.05)
    assert "2 of 20 topological features beat the clock" in line
    assert "expected under the null ≈ 0.5" in line


def test_the_html_page_renders_the_bottom_line_escaped():
    from topotrain.report.bottom_line import to_html

    rep, primary = verdicts()
    page = to_html(bottom_line(rep, RULES, ALPHA, primary), "t")
    assert page.startswith("<!DOCTYPE html>") and "<h2>Bottom line</h2>" in page
    assert "<li>ρ(TP0, train loss) tiny-3k: <b>artefact</b>" in page
    assert "<b>Does weight topology track training loss beyond the clock and the scale?</b>" in page
    assert to_html("- a < b & `c`", "t").count("<li>a &lt; b &amp; <code>c</code></li>") == 1
