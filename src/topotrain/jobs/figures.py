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


def answer_figures_job(
    inputs: dict[str, str], params: dict, out: dict[str, str], threads: int = 1
) -> None:
    """The answer's figures: each claim of ``params["claims"]``'s between-seed picture
    (``seed_points`` of the checkpoint table ``inputs["table"]``), every effect of primary.csv and
    diagnostics.csv against Δ with the verdicts and the power at Δ (power.csv), and the horizon
    profile where ``out`` names it; the pictures drawn over ``threads`` processes (the same
    bytes)."""
    import pandas as pd

    from topotrain.analysis.inference.parallel import map_tasks
    from topotrain.analysis.inference.seed_points import seed_points
    from topotrain.jobs.common import comove_design, log
    from topotrain.report.answer import claimed_signs, forest_rows
    from topotrain.report.page import read_table
    from topotrain.report.plots import model_order

    comove_design(params)
    df = pd.read_parquet(inputs["table"])
    primary, diagnostics, power = (
        read_table(inputs, k) for k in ("primary", "diagnostics", "power")
    )
    seeds = int(df.groupby("model")["seed"].nunique().min()) if len(df) else 0
    design = {"seeds": seeds, "sesoi": params["sesoi"], "sesoi_co": params["sesoi_co"]}
    design["models"] = model_order(df)
    tasks = []
    for feature in params["claims"]:
        points = seed_points(df, feature)
        name = f"between_seeds_{feature}"
        paths = (out[f"{name}_png"], out[f"{name}_pdf"])
        claimed = {"claimed": claimed_signs(primary, feature)}
        tasks.append(("between", points, feature, design | claimed, paths))
    rows = forest_rows(primary, diagnostics, power)
    tasks.append(("forest", rows, (out["effects_forest_png"], out["effects_forest_pdf"])))
    if "horizon_profile_png" in out:  # β_co per horizon H (exploratory)
        tasks.append(("horizon", df, primary, params, out))
    for said in map_tasks(_answer_figure, tasks, threads):
        log.info("%s", said)


def _answer_figure(task: tuple) -> str:
    """One of the answer's pictures and its log line, by the task's tag: a claim's between-seed
    picture (``between``: ``answer.figure_between_seeds``), the effects ``forest``, or the
    ``horizon`` profile (with its CSV)."""
    if task[0] == "forest":
        from topotrain.report.answer import figure_effects_forest

        _, rows, (png, pdf) = task
        figure_effects_forest(rows, png, pdf)
        return f"effects_forest: {len(rows)} effects"
    if task[0] == "horizon":
        return _horizon_profile(*task[1:])
    from topotrain.report.answer import figure_between_seeds

    _, points, feature, design, (png, pdf) = task
    figure_between_seeds(points, feature, design, png, pdf)
    models = points["model"].nunique()
    return f"between_seeds_{feature}: {len(points)} points over {models} models"


def _horizon_profile(df, primary, params: dict, out: dict[str, str]) -> str:
    """β_co per horizon H: horizon_profile.csv, its figure (``answer.figure_horizon_profile``)."""
    from topotrain.analysis.inference.horizons import horizon_profile, signs_from_primary
    from topotrain.io import atomic_write_text
    from topotrain.report.answer import figure_horizon_profile

    profile = horizon_profile(df, signs_from_primary(primary))
    atomic_write_text(out["horizon_profile_csv"], profile.to_csv(index=False))
    png, pdf = out["horizon_profile_png"], out["horizon_profile_pdf"]
    figure_horizon_profile(profile, params["sesoi_co"], params["horizon"], png, pdf)
    horizons = "/".join(f"{h:g}" for h in dict.fromkeys(profile["horizon"]))
    return f"horizon_profile: {len(profile)} rows over H = {horizons}"


def report_markdown_job(
    tables: dict,
    out: str,
    bottom_html: str | None = None,
    provenance: dict[str, str] | None = None,
    front_html: str | None = None,
    demo: bool = False,
) -> None:
    """Write REPORT.md (``report.page.report_page`` of the report's inputs ``tables``: its header,
    with the demo's banner when ``demo`` and ``provenance``'s version, config_sha256 and engine,
    the bottom line, the sections, then each run's and branch's), ``bottom_html`` (the bottom line
    as an HTML page) and ``front_html`` (the HTML report's first screen) when given."""
    from topotrain.analysis.inference.stats import ALPHA
    from topotrain.analysis.replication.claims import RULES
    from topotrain.io import atomic_write_text
    from topotrain.report.page import bottom_page, front_screen, report_page

    text, top = report_page(tables, out, RULES, ALPHA, provenance, demo)
    atomic_write_text(out, text)
    if bottom_html:
        atomic_write_text(bottom_html, bottom_page(top, tables))
    if front_html:
        atomic_write_text(front_html, front_screen(tables, RULES, demo))


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
    answer_figures_job(
        dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()), sm.threads
    )
