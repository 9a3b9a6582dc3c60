"""Jobs of workflow/rules/figures.smk: the figures and REPORT.md."""

from __future__ import annotations


def training_figures_job(table: str, out: dict[str, str]) -> None:
    """Overview, loss curves, NP evolution and H0/H1 evolution figures."""
    import pandas as pd

    from topotrain.config import LOSSES
    from topotrain.report import plots
    from topotrain.topology import registry

    df = pd.read_parquet(table)
    plots.figure_overview(df, out["overview_png"], out["overview_pdf"])
    plots.figure_curves(df, list(LOSSES), out["loss_curves_png"], out["loss_curves_pdf"])
    np_columns, tp_columns = registry.columns("np_total"), registry.columns("h{k}_total")
    plots.figure_curves(df, np_columns, out["np_evolution_png"], out["np_evolution_pdf"])
    plots.figure_curves(
        df, tp_columns, out["homology_evolution_png"], out["homology_evolution_pdf"]
    )


def analysis_figures_job(inputs: dict[str, str], out: dict[str, str]) -> None:
    """Correlation heatmap, prediction MAE and scaling-fit figures."""
    import pandas as pd

    from topotrain.report import plots

    corr = pd.read_csv(inputs["correlations"])
    plots.figure_correlation_heatmap(
        corr, out["correlation_heatmap_png"], out["correlation_heatmap_pdf"]
    )
    summary = pd.read_csv(inputs["prediction"])
    plots.figure_prediction_mae(summary, out["prediction_mae_png"], out["prediction_mae_pdf"])
    plots.figure_scaling_fits(
        pd.read_parquet(inputs["table"]),
        pd.read_csv(inputs["scaling"]),
        out["scaling_fits_png"],
        out["scaling_fits_pdf"],
    )


def answer_figures_job(inputs: dict[str, str], params: dict, out: dict[str, str]) -> None:
    """The answer's figures: each claim of ``params["claims"]``'s between-seed picture
    (``seed_points`` of the checkpoint table ``inputs["table"]``) and every effect of primary.csv
    and diagnostics.csv against Δ with the verdicts and the power at Δ (power.csv)."""
    import pandas as pd

    from topotrain.analysis.inference.seed_points import seed_points
    from topotrain.jobs.common import comove_design, log
    from topotrain.report.answer import (
        claimed_signs,
        figure_between_seeds,
        figure_effects_forest,
        forest_rows,
    )
    from topotrain.report.plots import model_order

    comove_design(params)
    df = pd.read_parquet(inputs["table"])
    primary, diagnostics, power = (_csv(inputs, k) for k in ("primary", "diagnostics", "power"))
    seeds = int(df.groupby("model")["seed"].nunique().min()) if len(df) else 0
    design = {"seeds": seeds, "sesoi": params["sesoi"], "sesoi_co": params["sesoi_co"]}
    design["models"] = model_order(df)
    for feature in params["claims"]:
        points = seed_points(df, feature)
        design["claimed"] = claimed_signs(primary, feature)
        name = f"between_seeds_{feature}"
        figure_between_seeds(points, feature, design, out[f"{name}_png"], out[f"{name}_pdf"])
        log.info("%s: %d points over %d models", name, len(points), points["model"].nunique())
    rows = forest_rows(primary, diagnostics, power)
    figure_effects_forest(rows, out["effects_forest_png"], out["effects_forest_pdf"])
    log.info("effects_forest: %d effects", len(rows))
    if "horizon_profile_png" in out:  # β_co per horizon H (exploratory)
        from topotrain.analysis.inference.horizons import horizon_profile, signs_from_primary
        from topotrain.io import atomic_write_text
        from topotrain.report.answer import figure_horizon_profile

        profile = horizon_profile(df, signs_from_primary(primary))
        atomic_write_text(out["horizon_profile_csv"], profile.to_csv(index=False))
        png, pdf = out["horizon_profile_png"], out["horizon_profile_pdf"]
        figure_horizon_profile(profile, params["sesoi_co"], params["horizon"], png, pdf)
        log.info(
            "horizon_profile: %d rows over H = %s",
            len(profile),
            "/".join(f"{h:g}" for h in dict.fromkeys(profile["horizon"])),
        )


def _csv(tables: dict[str, str], key: str):
    """The table ``tables[key]`` as a DataFrame, None where the report has none."""
    import pandas as pd

    return pd.read_csv(tables[key]) if tables.get(key) else None


def report_markdown_job(
    tables: dict[str, str],
    out: str,
    bottom_html: str | None = None,
    provenance: dict[str, str] | None = None,
    front_html: str | None = None,
    demo: bool = False,
) -> None:
    """Assemble REPORT.md: its header (the demo's banner when ``demo``; ``provenance``: version,
    config_sha256, engine), the bottom line, the replication verdicts (a rule id per row, the
    rules listed once), findings from the CSV tables, then every other Markdown table explained,
    then each run's section (``tables["runs"]``). ``tables["calibration_csv"]``, when given,
    supplies the false-positive rates the bottom line quotes (else the ones docs/calibration.md
    reports); ``power_csv`` each primary claim's power at Δ. ``bottom_html``: the bottom line as
    an HTML page; ``front_html``: the HTML report's first screen (``front.front_page``)."""
    import pandas as pd

    from topotrain.analysis.inference.stats import ALPHA
    from topotrain.analysis.replication.claims import RULES
    from topotrain.io import atomic_write_text
    from topotrain.report import prose
    from topotrain.report.answer import answer_links
    from topotrain.report.bottom_line import bottom_line, replication_section, to_html
    from topotrain.report.confirm import confirm_sections
    from topotrain.report.control import control_section
    from topotrain.report.markdown import Body, assemble_report, compose, findings

    runs = list(tables.get("runs", []))  # each run's own section, after the study's
    preface, top = "", ""
    if "best_feature_csv" in tables:  # the spine's findings (spine.enabled)
        preface = findings(tables["best_feature_csv"], tables["prediction_csv"])
    # every Markdown table is a section (compose orders them and names one it does not know)
    sections = {k: p for k, p in tables.items() if k != "runs" and not k.endswith(("_csv", "_png"))}
    if "replication_csv" in tables:
        rep = pd.read_csv(tables["replication_csv"])
        primary, summary = _csv(tables, "primary_csv"), _csv(tables, "associations_summary_csv")
        calibration = _csv(tables, "calibration_csv")  # only when make calibrate has written it
        power = _csv(tables, "power_csv")
        links = answer_links(tables)  # the answer's figures, under the bottom line's table
        top = bottom_line(rep, RULES, ALPHA, primary, summary, calibration, power, links)
        if "replication" in sections:
            sections["replication"] = Body(replication_section(rep, RULES))
    if "control_csv" in tables:  # the positive control: built from its CSVs (FROM_CSVS)
        wvar = _csv(tables, "np_variance_csv")
        sections["control"] = Body(control_section(tables, _csv(tables, "primary_csv"), wvar))
    confirmed = confirm_sections(tables)  # "Confirmed on fresh seeds" (when confirm: is on)
    ordered, lead = compose(sections, confirmed)
    assemble_report(ordered, out, preface, lead, runs, top, provenance, demo)
    if bottom_html:  # the HTML report's first page; a placeholder when the spine is off
        text = top or f"## Bottom line\n\n{prose.render('front/spine_off')}"
        pictures = {k: v for k, v in tables.items() if k.endswith("_png")}
        atomic_write_text(bottom_html, to_html(text, "topotrain — bottom line", pictures))
    if front_html:  # the HTML report's first screen: the bottom line's table and the forest
        from topotrain.report.front import front_page

        rep = pd.read_csv(tables["replication_csv"]) if "replication_csv" in tables else None
        forest = tables.get("effects_forest_png")
        atomic_write_text(front_html, front_page(rep, RULES, forest, demo))


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def analysis_figures_rule(sm) -> None:
    analysis_figures_job(dict(sm.input.items()), dict(sm.output.items()))


def report_markdown_rule(sm) -> None:
    report_markdown_job(
        dict(sm.input.items()),
        sm.output.report_md,
        sm.output.bottom_html,
        sm.params.provenance,
        sm.output.front_html,
        sm.params.demo,
    )


def training_figures_rule(sm) -> None:
    training_figures_job(sm.input[0], dict(sm.output.items()))


def answer_figures_rule(sm) -> None:
    answer_figures_job(dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()))
