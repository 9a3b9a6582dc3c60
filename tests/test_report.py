"""Tables as Markdown/CSV, the models table, REPORT.md assembly and the figure functions."""

import numpy as np
import pandas as pd
import pytest

from topotrain.report import plots
from topotrain.report.markdown import (
    assemble_report,
    findings,
    format_cell,
    models_table,
    to_markdown,
    write_table,
)


def synthetic_table(models=(("a", 100), ("b", 400), ("c", 1600)), steps=range(0, 101, 10)):
    rows = []
    for i, (name, n) in enumerate(models):
        for seed in (1, 2):
            for s in steps:
                loss = 1 + 3 / (1 + s / 10) / (i + 1) + 0.01 * seed
                rows.append(
                    {
                        "model": name,
                        "seed": seed,
                        "n_params": n,
                        "d_model": 4 * (i + 1),
                        "n_layer": 1,
                        "n_head": 1,
                        "step": s,
                        "frac": s / 100,
                        "train_loss": loss - 0.05,
                        "val_loss": loss,
                        "np_mean": 0.5 - 0.1 / loss,
                        "np_std": 0.01,
                        "h0_total": 10 + n / 100 - loss,
                        "h1_total": 0.5 / loss,
                    }
                )
    return pd.DataFrame(rows)


def test_markdown_table_formats_numbers_and_escapes_pipes():
    df = pd.DataFrame({"name": ["a|b", "c"], "x": [0.123456, float("nan")], "ok": [True, False]})
    md = to_markdown(df)
    assert md.splitlines() == [
        "| name | x | ok |",
        "|---|---|---|",
        "| a\\|b | 0.1235 | yes |",
        "| c | – | no |",
    ]
    assert format_cell(1.5e-7) == "1.500e-07" and format_cell(7) == "7"


def test_models_table_takes_final_checkpoint_mean_over_seeds():
    df = synthetic_table()
    table = models_table(df)
    assert table["model"].tolist() == ["a", "b", "c"]
    final_a = df[(df["model"] == "a") & (df["step"] == 100)]["val_loss"].mean()
    assert table.loc[0, "final_val_loss"] == pytest.approx(final_a)
    assert (table["seeds"] == 2).all()


def test_report_sections_are_assembled_in_order(tmp_path):
    write_table(pd.DataFrame({"k": [1]}), tmp_path / "t1.csv", tmp_path / "t1.md", "Own heading")
    write_table(pd.DataFrame({"v": [2.5]}), tmp_path / "t2.csv", tmp_path / "t2.md")
    assemble_report(
        [("First", "why one", tmp_path / "t1.md"), ("Second", "why two", tmp_path / "t2.md")],
        tmp_path / "REPORT.md",
    )
    text = (tmp_path / "REPORT.md").read_text()
    assert (
        text.index("## First")
        < text.index("why one")
        < text.index("| k |")
        < text.index("## Second")
    )
    assert "Own heading" not in text and "| 2.5 |" in text
    assert pd.read_csv(tmp_path / "t2.csv")["v"].tolist() == [2.5]


def test_lead_sections_come_before_the_preface(tmp_path):
    write_table(pd.DataFrame({"k": [1]}), tmp_path / "t1.csv", tmp_path / "t1.md")
    write_table(pd.DataFrame({"v": [2]}), tmp_path / "t2.csv", tmp_path / "t2.md")
    sections = [("First", "one", tmp_path / "t1.md"), ("Second", "two", tmp_path / "t2.md")]
    for lead, order in ((0, ["Findings", "First", "Second"]), (1, ["First", "Findings", "Second"])):
        assemble_report(sections, tmp_path / "R.md", "## Findings\n\nfound\n", lead=lead)
        heads = [
            ln[3:] for ln in (tmp_path / "R.md").read_text().splitlines() if ln.startswith("## ")
        ]
        assert heads == order


def test_palette_orders_models_by_size():
    df = synthetic_table(models=(("big", 900), ("small", 10), ("mid", 90)))
    assert list(plots.model_palette(df)) == ["small", "mid", "big"]


def test_figures_are_written_as_png_and_pdf(tmp_path):
    df = synthetic_table()
    plots.figure_overview(df, tmp_path / "o.png", tmp_path / "o.pdf")
    plots.figure_curves(df, ["train_loss", "val_loss"], tmp_path / "c.png", tmp_path / "c.pdf")
    fits = pd.DataFrame(
        [
            {
                "feature": "val_loss",
                "a": 1.0,
                "b": -0.1,
                "c": 0.5,
                "r2": 0.9,
                "converged": True,
                "message": "",
            },
            {
                "feature": "h0_total",
                "a": np.nan,
                "b": np.nan,
                "c": np.nan,
                "r2": np.nan,
                "converged": False,
                "message": "no fit",
            },
        ]
    )
    plots.figure_scaling_fits(df, fits, tmp_path / "s.png", tmp_path / "s.pdf")
    for stem in "ocs":
        assert (tmp_path / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (tmp_path / f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
    assert not list(tmp_path.glob(".*"))  # no temp files left


def test_findings_name_the_best_feature_and_the_prediction_verdict(tmp_path):
    best = pd.DataFrame(
        {
            "model": ["m"],
            "n_params": [1000],
            "feature": ["h0_total"],
            "rho": [-0.99],
            "ci_low": [-1.0],
            "ci_high": [-0.98],
            "tied_with": ["l2_norm_mean"],
            "best_topological": ["h0_total"],
            "best_topological_rho": [-0.99],
            "best_baseline": ["l2_norm_mean"],
            "best_baseline_rho": [-0.99],
            "step_rho": [-0.97],
            "l2_norm_mean_rho": [-0.99],
        }
    )
    summary = pd.DataFrame(
        {
            "fraction": [0.3, 0.3],
            "method": ["loss_only", "combined"],
            "mae": [0.2, 0.1],
            "improvement_pct": [0.0, 50.0],
            "wilcoxon_p": [np.nan, 0.3125],
            "wilcoxon_note": ["reference method", "n too small"],
        }
    )
    best.to_csv(tmp_path / "b.csv", index=False)
    summary.to_csv(tmp_path / "p.csv", index=False)
    text = findings(tmp_path / "b.csv", tmp_path / "p.csv")
    assert "**m** (1,000 parameters): `h0_total` (tied with l2_norm_mean), ρ = -0.990" in text
    assert "the clock `step` ρ = -0.970, the scale `l2_norm_mean` ρ = -0.990." in text
    assert "not valid for trending series" in text
    assert "**30% of training:** combined (mean of loss-only and topology-only) improves on" in text
    assert "(+50.0%)" in text and "p = 0.3125 — n too small" in text


def test_the_report_header_names_the_results_folder_in_use(tmp_path):
    from topotrain.report.markdown import assemble_report

    out = tmp_path / "elsewhere" / "REPORT.md"
    out.parent.mkdir()
    assemble_report([], out)
    header = out.read_text().split("\n\n")[1]
    assert f"`{out.parent.as_posix()}/features/weights.parquet`" in header
    assert "`results/" not in header


def test_every_report_section_has_its_text_and_its_place_declared_once():
    from topotrain.report.markdown import ORDER, SECTIONS

    names = [name for name, _ in ORDER]
    assert len(names) == len(set(names)) and set(names) == set(SECTIONS)
    assert {part for _, part in ORDER} == {
        "control",
        "spine",
        "pythia_weights",
        "pythia_embeddings",
    }
    assert names[:2] == ["control", "replication"]  # the positive control before the verdicts
