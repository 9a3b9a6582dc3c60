"""The demo's report says what it cannot measure instead of printing "nan" or a verdict that a
fallback made: on a demo-like study (the paper's two smallest sizes, one or two seeds, five
checkpoints) run through the analysis, a predictor that fell back in every run makes its claim
"inconclusive (cannot be measured: …)", the prose names a reason wherever a number is undefined,
the demo's banner heads the report when the config asks for it, and the forest says each claim's
word as the tables say it."""

from __future__ import annotations

import copy
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import ROOT, TEST_STUDY
from snakemake.utils import validate

from topotrain.analysis.inference.associations import association_summary, association_table
from topotrain.analysis.inference.diagnostics import alpha_sentence, diagnostics_table
from topotrain.analysis.inference.primary import primary_family
from topotrain.analysis.inference.stats import ALPHA, best_feature, correlation_table
from topotrain.analysis.inference.verdicts import INCONCLUSIVE, NOT_REPRODUCED
from topotrain.analysis.prediction.predict import predict_final_loss
from topotrain.analysis.prediction.summary import prediction_summary
from topotrain.analysis.replication.claims import RULES, read_paper_values, replication_table
from topotrain.analysis.replication.sizes import prediction_rows
from topotrain.config import DEFAULTS, SCHEMA, check_config, fill_defaults
from topotrain.report.answer import forest_rows
from topotrain.report.bottom_line import bottom_line, replication_section
from topotrain.report.front import FRONT_ID, front_page
from topotrain.report.header import DEMO_BANNER
from topotrain.report.markdown import Body, assemble_report, findings, models_table
from topotrain.report.question_phrases import PRIMARY_QUESTIONS, question_word

PAPER = read_paper_values(ROOT / "workflow" / "data" / "paper_values.csv")
MODELS = {"tiny-3k": 2_168, "small-7k": 5_872}  # the demo's: the paper's two smallest sizes
FEATURES = ["np_mean", "h0_total", "h1_total", "h0_count", "ww_alpha_mean", "grad_norm"]
NAN = re.compile(r"\bnan\b", re.IGNORECASE)


def demo_features(seeds=(42, 43), steps=(0, 10, 20, 30, 40), seed: int = 0) -> pd.DataFrame:
    """The checkpoint table of a demo-like study: losses falling with the step (the larger model
    lower), features drifting with it, each run offset and noisy; the H0 count constant."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, (model, n) in enumerate(MODELS.items()):
        for s in seeds:
            off = rng.normal(scale=0.1, size=5)
            for t in steps:
                u = t / max(steps)
                loss = 2.6 - 0.1 * i + 1.2 * np.exp(-4 * u) + off[0] + 0.05 * rng.normal()
                rows.append(
                    dict(model=model, seed=s, n_params=n, step=t, frac=u, lr=1e-2 * (1 - u / 2))
                    | dict(train_loss=loss - 0.05, val_loss=loss + 0.02 * rng.normal())
                    | dict(np_mean=0.36 - 0.1 * u + off[1] + 0.01 * rng.normal(), h0_count=39.0)
                    | dict(h0_total=5 + 10 * u + off[2] + 0.3 * rng.normal())
                    | dict(h1_total=1 + 2 * u + 0.2 * rng.normal(), grad_norm=1 + rng.random())
                    | dict(l2_norm_mean=1 + 0.3 * u + off[3] + 0.02 * rng.normal())
                    | dict(ww_alpha_mean=3 - u + off[4] + 0.1 * rng.normal())
                )
    return pd.DataFrame(rows)


def demo_tables(seeds) -> dict[str, pd.DataFrame]:
    """The tables REPORT.md's prose is made from, computed by the analysis on demo_features."""
    df = demo_features(seeds)
    assoc = association_table(df, [*FEATURES, "step", "l2_norm_mean"], n_resamples=20, seed=1)
    primary = primary_family(df, PAPER)
    prediction = prediction_summary(predict_final_loss(df, [0.3, 0.5]))
    tables = dict(models=models_table(df.assign(d_model=8, n_layer=1, n_head=1)), features=df)
    tables |= dict(associations=assoc, primary=primary, prediction=prediction)
    power = pd.DataFrame(  # power.csv where no claim has power (the demo's: too few models)
        [dict(feature=f, power_at_sesoi=np.nan, note="no power: a model is missing") for f in
         ("h0_total", "np_mean", "h1_total")]
    )  # fmt: skip
    corr = correlation_table(df, [*FEATURES, "step", "l2_norm_mean"], n_resamples=20)
    return tables | dict(
        replication=replication_table(PAPER, tables),
        summary=association_summary(assoc),
        diagnostics=diagnostics_table(assoc, 0.1),
        best=best_feature(corr),
        power=power,
    )


@pytest.fixture(scope="module", params=[(42,), (42, 43)], ids=["one seed", "two seeds"])
def demo(request) -> dict[str, pd.DataFrame]:
    return demo_tables(request.param)


def render(t: dict[str, pd.DataFrame], folder, demo_flag: bool) -> str:
    """REPORT.md as the report job assembles it from ``t``: the header, the bottom line, the
    replication section, the findings, and the diagnostics' sentence."""
    for name in ("best", "prediction"):
        t[name].to_csv(folder / f"{name}.csv", index=False)
    top = bottom_line(t["replication"], RULES, ALPHA, t["primary"], t["summary"], None, t["power"])
    sections = [
        ("Replication", "", Body(replication_section(t["replication"], RULES))),
        ("Diagnostics", "", Body(alpha_sentence(t["diagnostics"]))),
    ]
    preface = findings(folder / "best.csv", folder / "prediction.csv")
    out = folder / "REPORT.md"
    assemble_report(sections, out, preface, 1, top=top, demo=demo_flag)
    return out.read_text()


def prose_nans(report: str) -> list[str]:
    """Each line (or a table's cell) of ``report`` that says 'nan', but a table's numeric cell (a
    cell a float can parse)."""
    found = []
    for line in report.splitlines():
        if not line.startswith("|"):
            found += [line] if NAN.search(line) else []
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        found += [cell for cell in cells if NAN.search(cell) and not numeric(cell)]
    return found


def numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_a_predictor_that_fell_back_in_every_run_is_inconclusive_with_its_reason():
    """Five checkpoints: before 30 % and 50 % of training too few for any fit, every run's
    loss-only and topology-only prediction is the last loss (prediction_runs' fallback), so
    combined equals loss-only by construction: inconclusive, never "not reproduced"."""
    runs = predict_final_loss(demo_features(), [0.3, 0.5])
    summary = prediction_summary(runs)
    for method in ("loss_only", "topology_only", "combined"):
        assert runs.loc[runs["method"] == method, "fallback"].all(), method
    comb = summary[summary["method"] == "combined"]
    assert (comb["improvement_pct"] == 0).all()  # what "not reproduced" read before
    rows = prediction_rows(PAPER, summary)
    assert [r["verdict"] for r in rows] == [INCONCLUSIVE, INCONCLUSIVE]
    for row in rows:
        assert row["note"].startswith("cannot be measured: every predictor fell back to the last")
        assert "combined equals loss-only by construction" in row["note"]
        assert np.isnan(row["ours"])  # no number where nothing was measured


def test_a_predictor_that_ran_keeps_the_rule_that_judges_its_gain():
    """Twenty-one checkpoints: the fits run, nothing fell back, the rule judges the gain (here
    none, and the table says so)."""
    steps = tuple(range(0, 201, 10))
    summary = prediction_summary(predict_final_loss(demo_features(steps=steps), [0.3, 0.5]))
    topology = summary[summary["method"] == "topology_only"]
    assert (topology["fallbacks"] == 0).all()
    rows = prediction_rows(PAPER, summary)
    assert all(not r["note"].startswith("cannot be measured") for r in rows)
    gains = summary.loc[summary["method"] == "combined", "improvement_pct"].to_numpy()
    for row, gain in zip(rows, gains, strict=True):
        assert row["ours"] == pytest.approx(gain / 100)
        assert row["verdict"] != NOT_REPRODUCED or gain <= 0


def test_the_report_prose_names_a_reason_wherever_a_number_is_undefined(demo, tmp_path):
    report = render(demo, tmp_path, demo_flag=False)
    assert "## Bottom line" in report and "## Findings" in report
    assert not prose_nans(report), prose_nans(report)
    t5 = [line for line in report.splitlines() if line.startswith("- combined beats loss-only")]
    assert len(t5) == 2, t5  # 30 % and 50 % of training: no fallback's "not reproduced"
    assert all(
        "**inconclusive** — paper" in line and "(t5; cannot be measured: " in line for line in t5
    )


def test_the_demo_banner_heads_the_report_only_when_asked(demo, tmp_path):
    on = render(demo, tmp_path, demo_flag=True)
    assert on.splitlines()[0] == f"> **{DEMO_BANNER}**"
    assert DEMO_BANNER == "demo: too small to decide, every verdict below shows the machinery"
    assert on.splitlines()[2].startswith("# topotrain")  # the title right after it
    off = render(demo, tmp_path, demo_flag=False)
    assert DEMO_BANNER not in off and off.startswith("# topotrain")
    front = front_page(demo["replication"], RULES, None, demo=True)
    assert front.index(DEMO_BANNER) < front.index("Bottom line") and FRONT_ID in front
    assert DEMO_BANNER not in front_page(demo["replication"], RULES, None, demo=False)
    assert "(spine) is off" in front_page(None, RULES)  # no claim asked: the table's place says so


def test_the_forest_says_each_claims_word_as_the_tables_say_it(demo):
    """Each primary claim's word per question, in the forest, in the bottom line's sentence and
    in primary.csv (question_word: its verdict, and why where it cannot be measured); each
    diagnostic's as diagnostics.csv has it; and the replication rows that quote the primary
    family's decision for the bottom-line question (t2 when every seed has the paper's sign, t3)
    say the same word."""
    primary, diagnostics = demo["primary"], demo["diagnostics"]
    rows = forest_rows(primary, diagnostics, demo["power"])
    text = bottom_line(demo["replication"], RULES, ALPHA, primary)
    for record in primary.to_dict("records"):
        name = {"h0_total": "TP0", "np_mean": "NP", "h1_total": "TP1"}[record["feature"]]
        for question, (said, *_) in PRIMARY_QUESTIONS.items():
            word = question_word(record, question)
            drawn = rows[(rows["name"] == name) & (rows["question"] == question)]["verdict"]
            assert set(drawn) == {f"{said}{bottom(record, question)}: {word}"}
            assert word.split(" (")[0] == record[f"verdict_{question}"]
            assert f"{said}: {word.split(' (')[0]}" in text.replace("**", ""), (name, question)
    ww = diagnostics[diagnostics["kind"].isin(["weightwatcher", "baseline"])]
    drawn = rows.loc[rows["group"] == "diagnostics", "verdict"]
    assert len(ww) >= 2 and set(drawn) == set(ww["verdict"])
    rep = demo["replication"]
    t2 = rep[(rep["rule"] == RULES["t2"]) & rep["note"].str.match(r"(\d+)/\1 seeds")]
    assert len(t2) == len(MODELS)  # every seed has the paper's sign: the primary's word
    decision = primary.set_index("feature").loc["h0_total", "verdict"]
    assert set(t2["verdict"]) == {decision}
    assert f"moves with (the bottom line): {decision}" in t2["note"].iloc[0]


def bottom(record: dict, question: str) -> str:
    return " (bottom line)" if record.get("question") == question else ""


def test_the_demo_config_is_the_test_study_with_two_seeds_the_papers_names_and_the_banner():
    """.test/config/demo.yaml: the test study's models (the paper's names for the same
    architectures: the primary family tests the paper's sizes), two seeds, demo: true, one
    topology job per training and power.csv's level family only; valid, its corpus found."""
    demo = yaml.safe_load((ROOT / ".test" / "config" / "demo.yaml").read_text())
    study = yaml.safe_load(TEST_STUDY.read_text())
    assert demo.pop("demo") is True and DEFAULTS["demo"] is False and "demo" not in study
    assert demo.pop("seeds") == [42, 43] and len(study.pop("seeds")) == 1
    assert list(demo["models"].values()) == list(study.pop("models").values())
    assert list(demo.pop("models")) == list(DEFAULTS["models"])[:2]  # the paper's smallest two
    assert demo["topology"].pop("jobs") == "training" == DEFAULTS["topology"]["jobs"]
    study["topology"].pop("jobs")
    assert demo["analysis"].pop("calibration") == {"power_draws": 0}
    assert demo == study  # else the test study's, key for key
    config = fill_defaults(
        copy.deepcopy(yaml.safe_load((ROOT / ".test/config/demo.yaml").read_text()))
    )
    validate(config, schema=str(SCHEMA), set_default=True)
    check_config(config, base_dir=ROOT)
