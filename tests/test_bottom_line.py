"""The report's bottom line and its replication section, on a hand-made verdict table."""

from __future__ import annotations

import pandas as pd
from conftest import MODELS, PAPER
from primary_rows import primary_row

from topotrain.analysis.inference.stats import ALPHA
from topotrain.analysis.replication.claims import RULES, read_paper_values, replication_table
from topotrain.report.bottom_line import (
    QUESTIONS,
    beats_sentence,
    bottom_line,
    replication_section,
)


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
        [  # TP0 shown below Δ beyond the clock; NP reproduced (the bottom line's question: ranks)
            primary_row("h0_total", 0.3, upper=0.08, norm_upper=0.12, clock_p=0.2),
            primary_row("np_mean", 2 / 7776, upper=0.45, norm_upper=0.42, clock_p=1 / 7776),
        ]
    )
    tables = {"associations": pd.DataFrame(rows), "primary": primary}
    return replication_table(read_paper_values(PAPER), tables), primary


def test_bottom_line_counts_verdicts_per_question_with_the_deciding_numbers():
    rep, primary = verdicts()
    text = bottom_line(rep, RULES, ALPHA, primary)
    lines = text.split("\n")
    # first the table: a row per question with evaluated claims, its verdict counts
    assert lines[2:4] == ["| Question | Verdicts | Claims |", "|---|---|---|"]
    table = [line for line in lines if line.startswith("| ")][1:]
    asked = [q for q in QUESTIONS if f"**{q}**" in text]
    assert [row.split(" | ")[0][2:] for row in table] == asked and len(asked) >= 2
    first = next(line for line in lines if line.startswith("**"))
    assert first.startswith("**Does weight topology track training loss beyond the clock")
    said = first.split("?** ")[1].rstrip(".")  # the question's counts, e.g. "6 artefact"
    block = text.split(first)[1].split("\n\n")[0]
    # the five sizes' shared note (the claim's primary test) once, after their rows
    assert block.count("- every `t2` row above: primary test of 7776 arrangements; ranks (the") == 1
    assert block.count("primary test") == 2  # the t2 rows' shared note, and t3's (NP)
    assert block.count("(t2; 3/3 seeds with the paper") == 5
    claims = block.count("\n- ") - block.count("\n- every `")
    assert table[0].endswith(f" | {said} | {claims} |")
    assert claims == sum(int(part.split()[0]) for part in said.split(", "))
    assert said == "6 explained by the clock, 1 reproduced"  # 5 sizes + "every p < 1e-5"; NP
    assert "- ρ(TP0, train loss) xl-97k: **explained by the clock** — paper -0.907, ours -0.9" in (
        text
    )
    assert "The bottom line's question, fixed in the pre-registration: *ranks*." in text
    assert (
        "TP0 — ranks: **explained by the clock** (level view, train loss: p_clock = 0.2, p_scale = "
        "0.3, BH p = 0.3 (does not reject it, effect signs held in 4/4 models, reversal by Δ ruled "
        "out in 4/4); effect 0.04 (≥ 0, one-sided 95 % bound) at Δ = 0.1; at Δ/2: undecided, at "
        "2Δ: explained by the clock); moves with: explained by the clock (co-movement view, val "
        "loss: "
    ) in text
    assert "NP — ranks: **reproduced** (level view, train loss: p_clock = 1.286e-04" in text
    assert "smallest attainable p = 1/7,776" in text
    assert "Do the claims hold on Pythia?" not in text  # every Pythia row is not evaluated


def test_replication_section_gives_rule_ids_and_lists_each_rule_once():
    rep, _ = verdicts()
    text = replication_section(rep, RULES)
    table, legend = text.split("**Rules.**")
    assert "| t2 |" in table and RULES["t2"] not in table
    header = table.splitlines()[0]
    assert header.endswith("| verdict | rule |") and "note" not in header  # notes: linked
    assert "[tables/replication.md](tables/replication.md)" in table
    assert legend.count(RULES["t2"]) == 1 and legend.count("- `t2`:") == 1
    from topotrain.report.bottom_line import with_rule_ids

    ruled = with_rule_ids(rep, RULES)
    evaluated = ruled[ruled["verdict"] != "not evaluated"]
    assert set(line.split("`")[1] for line in legend.strip().splitlines()) == set(evaluated["rule"])
    skipped = ruled.loc[ruled["verdict"] == "not evaluated", "claim"]
    assert len(skipped) and f"Not evaluated in\nthis study ({len(skipped)}): {skipped.iloc[0]}" in (
        table
    )
    assert table.count("\n| ") == len(evaluated)  # after the header and its rule: each claim


def beats_summary(n_seeds: int) -> pd.DataFrame:
    """associations_summary.csv's rows: 20 features per model of n_seeds seeds (pooled rows hold
    no seeds), 2 of them beating the clock pooled over the models."""
    pooled = pd.DataFrame(
        {
            "model": "pooled",
            "n_seeds": 0,
            "kind": "topological",
            "target": "train_loss",
            "feature": [f"f{i}" for i in range(20)],
            "p_seed_contrast": 0.5,
            "beats_clock": [True] * 2 + [False] * 18,
        }
    )
    per_model = [pooled.assign(model=m, n_seeds=n_seeds, beats_clock=False) for m in MODELS]
    return pd.concat([*per_model, pooled], ignore_index=True)


def test_beats_statements_print_k_times_the_calibrated_rate_of_calibration_csv(tmp_path):
    rows = [  # beats_clock's false-positive rate at 5 seeds on three nulls, and at 3 seeds
        ("random_walk", 5, 0.041, 0.030, 0.055),
        ("decel_ar095", 5, 0.063, 0.049, 0.080),
        ("decel_iid", 5, 0.038, 0.027, 0.052),
        ("random_walk", 3, 0.090, 0.073, 0.110),
    ]
    table = pd.DataFrame(rows, columns=["scenario", "seeds", "rate", "mc_low", "mc_high"])
    table = table.assign(test="beats_clock (pooled)", measures="false-positive rate")
    table.to_csv(tmp_path / "calibration.csv", index=False)
    calibration = pd.read_csv(tmp_path / "calibration.csv")
    line = beats_sentence(beats_summary(5), 0.05, calibration)
    assert "2 of 20 topological features beat the clock" in line
    assert f"expected under the null ≈ {20 * 0.063:.1f} = 20 × 0.063: " in line  # the worst null
    assert "5 seeds, worst null `decel_ar095`, MC 95% [0.049, 0.080]" in line
    assert "results/tables/calibration.csv" in line
    rep = pd.DataFrame(  # one t2 row: the question the flag counts sit under
        [dict(rule=RULES["t2"], verdict="artefact", claim="ρ(TP0, train loss) tiny-3k")]
    ).assign(paper=-0.9, ours=-0.9, ours_ci_low=float("nan"), ours_ci_high=float("nan"), note="")
    text = bottom_line(rep, RULES, ALPHA, summary=beats_summary(3), calibration=calibration)
    assert f"expected under the null ≈ {20 * 0.090:.1f} = 20 × 0.090: " in text


def test_beats_statements_without_calibration_csv_quote_the_documented_rate():
    line = beats_sentence(beats_summary(8), 0.05)
    assert f"expected under the null ≈ {20 * 0.047:.1f} = 20 × 0.047: " in line
    assert "8 seeds, worst null `random_walk`" in line
    assert "docs/calibration.md, measured 2026-11-26" in line


def test_the_html_page_renders_the_bottom_line_escaped():
    from topotrain.report.bottom_line import to_html

    rep, primary = verdicts()
    page = to_html(bottom_line(rep, RULES, ALPHA, primary), "t")
    assert page.startswith("<!DOCTYPE html>") and "<h2>Bottom line</h2>" in page
    assert "<li>ρ(TP0, train loss) tiny-3k: <b>explained by the clock</b>" in page
    assert "<b>Does weight topology track training loss beyond the clock and the scale?</b>" in page
    assert to_html("- a < b & `c`", "t").count("<li>a &lt; b &amp; <code>c</code></li>") == 1
    assert "<table><tr><th>Question</th><th>Verdicts</th><th>Claims</th></tr><tr><td>" in page


def test_the_html_page_embeds_the_answers_figure_and_keeps_link_texts(tmp_path):
    import base64

    from topotrain.report.bottom_line import to_html

    png = tmp_path / "effects_forest.png"
    png.write_bytes(b"\x89PNG fake bytes")
    text = "## Bottom line\n\n![the forest](figures/effects_forest.png)\n\nsee [TP0](figures/x.png)"
    page = to_html(text, "t", {"effects_forest_png": str(png)})
    uri = "data:image/png;base64," + base64.b64encode(png.read_bytes()).decode()
    assert f"<img src='{uri}' alt='the forest'" in page
    assert "<p>see TP0</p>" in page and "figures/x.png" not in page
    named = to_html("![TP0's seeds](figures/between_seeds_h0_total.png)", "t", {})
    assert "<img" not in named  # not embedded: named, with where the report shows it
    assert "<code>between_seeds_h0_total.png</code>" in named and "&quot;Answer&quot;" in named


def test_the_bottom_line_page_embeds_the_forest_only(tmp_path):
    from topotrain.report.page import bottom_page

    pngs = {}
    for name in ("effects_forest", "between_seeds_h0_total"):
        pngs[f"{name}_png"] = tmp_path / f"{name}.png"
        pngs[f"{name}_png"].write_bytes(name.encode())
    text = "## Bottom line\n\n" + "\n\n".join(f"![{k}](figures/{p.name})" for k, p in pngs.items())
    page = bottom_page(text, {k: str(p) for k, p in pngs.items()})
    assert page.count("<img") == 1 and base64_of(b"effects_forest") in page
    assert base64_of(b"between_seeds_h0_total") not in page


def base64_of(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def test_the_report_job_quotes_calibration_csv_when_it_has_it_else_the_docs(tmp_path):
    from topotrain.jobs.figures import report_markdown_job

    rep = pd.DataFrame(
        [dict(rule=RULES["t2"], verdict="artefact", claim="ρ(TP0, train loss) tiny-3k")]
    ).assign(paper=-0.9, ours=-0.9, ours_ci_low=float("nan"), ours_ci_high=float("nan"), note="")
    rep.to_csv(tmp_path / "replication.csv", index=False)
    beats_summary(5).to_csv(tmp_path / "associations_summary.csv", index=False)
    pd.DataFrame(
        [("beats_clock (pooled)", "decel_iid", "false-positive rate", 5, 0.07, 0.055, 0.087)],
        columns=["test", "scenario", "measures", "seeds", "rate", "mc_low", "mc_high"],
    ).to_csv(tmp_path / "calibration.csv", index=False)
    tables = {
        "replication_csv": str(tmp_path / "replication.csv"),
        "associations_summary_csv": str(tmp_path / "associations_summary.csv"),
    }
    report = tmp_path / "REPORT.md"
    report_markdown_job(tables, str(report))
    assert f"≈ {20 * 0.045:.1f} = 20 × 0.045: " in report.read_text()  # the documented rate
    report_markdown_job(
        {**tables, "calibration_csv": str(tmp_path / "calibration.csv")}, str(report)
    )
    assert f"≈ {20 * 0.07:.1f} = 20 × 0.070: " in report.read_text()
    assert "`decel_iid`, MC 95% [0.055, 0.087]" in report.read_text()


def power_table() -> pd.DataFrame:
    """power.csv by hand: TP0 measured, NP out of reach at β ≤ 1, TP1 without a design."""
    design = {"seeds": 3, "checkpoints": 51, "sesoi": 0.1, "n_sim": 1000}
    return pd.DataFrame(
        [
            dict(feature="h0_total", models=5, power_at_sesoi=0.534, power_mc_low=0.5026)
            | dict(power_mc_high=0.5652, mde_80=0.1449, note="simulator's model: β = r"),
            dict(feature="np_mean", models=4, power_at_sesoi=0.05, power_mc_low=0.038)
            | dict(power_mc_high=0.065, mde_80=float("nan"), note="simulator's model: β = r"),
            dict(feature="h1_total", models=float("nan"), power_at_sesoi=float("nan"))
            | dict(power_mc_low=float("nan"), power_mc_high=float("nan"), mde_80=float("nan"))
            | dict(note="no power: 1 seed: a between-seed contrast needs at least 2 seeds"),
        ]
    ).assign(**design)


def test_the_bottom_line_gives_each_claims_power_at_delta_and_its_mde(tmp_path):
    from topotrain.report.bottom_line import power_sentence

    power_table().to_csv(tmp_path / "power.csv", index=False)
    power = pd.read_csv(tmp_path / "power.csv")  # as the report job reads it
    line = power_sentence(power)
    assert line.split(". ")[0] == (
        "TP0: power at Δ = 0.1 is 0.53 [MC 0.50, 0.57]; 80 % power needs β ≥ 0.14 "
        "(5 models × 3 seeds × 51 checkpoints; simulator's model)"
    )
    np_part = "NP: power at Δ = 0.1 is 0.05 [MC 0.04, 0.07]; 80 % power is not reached at any "
    assert np_part + "β ≤ 1 (4 models × 3 seeds" in line
    assert line.endswith("TP1: no power: 1 seed: a between-seed contrast needs at least 2 seeds.")
    assert power_sentence(None) == "" and "adding seeds" not in line
    rep, primary = verdicts()
    text = bottom_line(rep, RULES, ALPHA, primary, power=power)
    after = text.index("**Do the features change with model size")
    assert text.index("Primary family") < text.index("TP0: power at Δ") < after


def test_the_bottom_line_quotes_the_views_power_at_this_design_from_power_csv(tmp_path):
    """power.csv with views rows: the family sentences as before, then the co-movement pair's
    power at Δ_co, the joint test's and the sign rule's, read from the rows of this design only."""
    from topotrain.report.bottom_line import power_sentence

    def view_row(feature, coupling, view, power, here):
        return dict(feature=feature, coupling=coupling, view=view, power_at_sesoi=power) | dict(
            planted="…", this_design=here, seeds=3 if here else 8, checkpoints=51
        )

    table = """
        h0_total | innovation | co-movement pair | 0.634 | True
        h0_total | level      | joint            | 0.121 | True
        h0_total | innovation | co-movement pair | 0.99  | False
        np_mean  | innovation | co-movement pair | 0.51  | True
        np_mean  | level      | joint            | 0.08  | True
        np_mean  | level      | level pair       | 0.3   | True
        h0_total | level      | reproduced       | 0.094 | True
        np_mean  | level      | reproduced       | 0.02  | True
        h0_total | innovation | joint            | 0.712 | True
        np_mean  | innovation | joint            | 0.55  | True
        h0_total | innovation | reproduced       | 0.404 | True
        np_mean  | innovation | reproduced       | 0.31  | True
    """  # feature | coupling | view | power at Δ_co | this design
    cells = [[c.strip() for c in line.split("|")] for line in table.strip().splitlines()]
    views = pd.DataFrame([view_row(f, c, v, float(pw), h == "True") for f, c, v, pw, h in cells])
    pd.concat([power_table(), views]).to_csv(tmp_path / "power.csv", index=False)
    line = power_sentence(pd.read_csv(tmp_path / "power.csv"))
    assert line.startswith("TP0: power at Δ = 0.1 is 0.53 [MC 0.50, 0.57]")
    assert (
        "by the rule power.csv still simulates (the joint min-p over both views, the rule before "
        "the two questions: not the verdicts above), the joint test at Δ_co (innovation "
        "coupling): TP0 0.71, NP 0.55, "
        'and "reproduced" (every model\'s sign held and its reversal by Δ ruled out): TP0 0.40, '
        "NP 0.31; under the stated model at Δ: joint TP0 0.12, NP 0.08, reproduced TP0 0.09, NP "
        "0.02 (persistent"
    ) in line
    assert "0.99" not in line and "0.30" not in line
    assert "every view, 8 seeds × 51 checkpoints: power.csv" in line  # the grid walked
