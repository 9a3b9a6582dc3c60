# Figures (PNG for the report, PDF for papers) and the Markdown report.


rule training_figures:
    input:
        FEATURES,
    output:
        **figure_outputs(
            ["overview", "loss_curves", "np_evolution", "homology_evolution"]
        ),
    log:
        f"{RESULTS}/logs/figures/training_figures.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/job.py"


rule analysis_figures:
    input:
        table=FEATURES,
        correlations=rules.correlations.output.correlations_csv,
        prediction=rules.predict_final_loss.output.summary_csv,
        scaling=rules.scaling_fits.output.scaling_csv,
    output:
        **figure_outputs(["correlation_heatmap", "prediction_mae", "scaling_fits"]),
    log:
        f"{RESULTS}/logs/figures/analysis_figures.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/job.py"


# The answer in pictures: each primary claim's seed deviations per model and view (what the test
# permutes) and every effect against Δ; REPORT.md's bottom line shows them.
rule answer_figures:
    input:
        table=FEATURES,
        primary=f"{RESULTS}/tables/primary.csv",
        diagnostics=f"{RESULTS}/tables/diagnostics.csv",
        power=f"{RESULTS}/tables/power.csv",
    output:
        **answer_outputs(),
    log:
        f"{RESULTS}/logs/figures/answer_figures.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 5  # a process per picture (3 claims, forest, horizon profile); capped at --cores
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        claims=list(registry.claims()),
        sesoi=config["analysis"]["sesoi"],
        sesoi_co=config["analysis"]["sesoi_co"],
        horizon=config["analysis"]["horizon"],
        comove_from=config["analysis"]["comove_from"],
        warmup_steps=config["train"]["warmup_steps"],
    script:
        "../scripts/job.py"


rule report_markdown:
    input:
        unpack(report_tables),
    output:
        report_md=f"{RESULTS}/REPORT.md",
        bottom_html=report(
            f"{RESULTS}/bottom_line.html",
            caption="../report/bottom_line.rst",
            category=REPLICATION_CATEGORY,
        ),
        front_html=FRONT_PAGE,  # the HTML report's first screen (workflow/report/workflow.rst)
    log:
        f"{RESULTS}/logs/report_markdown.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        provenance=get_provenance(),
        demo=config["demo"],
    script:
        "../scripts/job.py"
