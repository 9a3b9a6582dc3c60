# Analysis: correlations and associations with loss, scaling fits, final-loss prediction, phases.


rule models_table:
    input:
        FEATURES,
    output:
        models_csv=f"{RESULTS}/tables/models.csv",
        models_md=f"{RESULTS}/tables/models.md",
    log:
        f"{RESULTS}/logs/analysis/models_table.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/job.py"


rule correlations:
    input:
        FEATURES,
    output:
        correlations_csv=report(
            f"{RESULTS}/tables/correlations.csv",
            caption="../report/correlations.rst",
            category="Tables",
        ),
        correlations_md=f"{RESULTS}/tables/correlations.md",
        seeds_csv=f"{RESULTS}/tables/correlations_across_seeds.csv",
        seeds_md=f"{RESULTS}/tables/correlations_across_seeds.md",
        best_csv=f"{RESULTS}/tables/best_feature.csv",
        best_md=f"{RESULTS}/tables/best_feature.md",
    log:
        f"{RESULTS}/logs/analysis/correlations.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        n_resamples=config["analysis"]["bootstrap_resamples"],
        seed=config["analysis"]["bootstrap_seed"],
    script:
        "../scripts/job.py"


# A run's rows of associations and layer_types, as soon as it is aggregated (while others train).
rule run_views:
    input:
        table=RUN_FEATURES,
        layers=RUN_LAYERS,
    output:
        associations=f"{RUN_ROWS}/associations.parquet",
        layer_types=f"{RUN_ROWS}/layer_types.parquet",
    log:
        f"{RESULTS}/logs/analysis/run_views/{{model}}/seed{{seed}}.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1  # one core: it runs beside the trainings, the study's runs in parallel
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        n_resamples=config["analysis"]["bootstrap_resamples"],
        seed=config["analysis"]["bootstrap_seed"],
    script:
        "../scripts/job.py"


rule associations:
    input:
        table=FEATURES,
        runs=every_run(f"{RUN_ROWS}/associations.parquet"),
    output:
        associations_csv=f"{RESULTS}/tables/associations.csv",  # a row per run: too big to embed
        associations_md=f"{RESULTS}/tables/associations.md",
        summary_csv=report(
            f"{RESULTS}/tables/associations_summary.csv",
            caption="../report/associations.rst",
            category="Tables",
        ),
        summary_md=f"{RESULTS}/tables/associations_summary.md",
        diagnostics_csv=f"{RESULTS}/tables/diagnostics.csv",
        diagnostics_md=f"{RESULTS}/tables/diagnostics.md",
    log:
        f"{RESULTS}/logs/analysis/associations.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 16  # runs in parallel processes (the same table); Snakemake caps it at --cores
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        **COMOVE_PARAMS,
        n_resamples=config["analysis"]["bootstrap_resamples"],
        seed=config["analysis"]["bootstrap_seed"],
        sesoi=config["analysis"]["sesoi"],
    script:
        "../scripts/job.py"


rule scaling_fits:
    input:
        FEATURES,
    output:
        scaling_csv=report(
            f"{RESULTS}/tables/scaling.csv",
            caption="../report/scaling.rst",
            category="Tables",
        ),
        scaling_md=f"{RESULTS}/tables/scaling.md",
    log:
        f"{RESULTS}/logs/analysis/scaling_fits.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        features=config["analysis"]["scaling_features"],
    script:
        "../scripts/job.py"


rule predict_final_loss:
    input:
        FEATURES,
    output:
        runs_csv=f"{RESULTS}/tables/prediction_runs.csv",
        runs_md=f"{RESULTS}/tables/prediction_runs.md",
        summary_csv=report(
            f"{RESULTS}/tables/prediction.csv",
            caption="../report/prediction.rst",
            category="Tables",
        ),
        summary_md=f"{RESULTS}/tables/prediction.md",
    log:
        f"{RESULTS}/logs/analysis/predict_final_loss.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        fractions=config["analysis"]["prediction_fractions"],
    script:
        "../scripts/job.py"


rule phase_transitions:
    input:
        FEATURES,
    output:
        phases_csv=report(
            f"{RESULTS}/tables/phases.csv",
            caption="../report/phases.rst",
            category="Tables",
        ),
        phases_md=f"{RESULTS}/tables/phases.md",
    log:
        f"{RESULTS}/logs/analysis/phase_transitions.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        threshold=config["analysis"]["phase_threshold"],
        n_bkps=config["analysis"]["changepoints"],
    script:
        "../scripts/job.py"


rule stopping_rules:
    input:
        FEATURES,
    output:
        **figure_outputs(["stopping"]),
        stopping_csv=report(
            f"{RESULTS}/tables/stopping.csv",
            caption="../report/stopping_table.rst",
            category="Tables",
        ),
        stopping_md=f"{RESULTS}/tables/stopping.md",
        stopping_summary_csv=f"{RESULTS}/tables/stopping_summary.csv",
        stopping_summary_md=f"{RESULTS}/tables/stopping_summary.md",
    log:
        f"{RESULTS}/logs/analysis/stopping_rules.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        stopping=config["analysis"]["stopping"],
    script:
        "../scripts/job.py"


rule velocity:
    input:
        FEATURES,
    output:
        velocity_csv=report(
            f"{RESULTS}/tables/velocity.csv",
            caption="../report/velocity.rst",
            category="Tables",
        ),
        velocity_md=f"{RESULTS}/tables/velocity.md",
        velocity_summary_csv=f"{RESULTS}/tables/velocity_summary.csv",
        velocity_summary_md=f"{RESULTS}/tables/velocity_summary.md",
    log:
        f"{RESULTS}/logs/analysis/velocity.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/job.py"


rule layer_types:
    input:
        table=FEATURES,
        layers=f"{RESULTS}/features/weights_layers.parquet",
        runs=every_run(f"{RUN_ROWS}/layer_types.parquet"),
    output:
        **figure_outputs(["layer_types"]),
        layer_types_csv=f"{RESULTS}/tables/layer_types.csv",  # a row per run: too big to embed
        layer_types_md=f"{RESULTS}/tables/layer_types.md",
        layer_types_summary_csv=report(
            f"{RESULTS}/tables/layer_types_summary.csv",
            caption="../report/layer_types_table.rst",
            category="Tables",
        ),
        layer_types_summary_md=f"{RESULTS}/tables/layer_types_summary.md",
    log:
        f"{RESULTS}/logs/analysis/layer_types.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 16  # splits in parallel processes (the same table); capped at --cores
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        n_resamples=config["analysis"]["bootstrap_resamples"],
        seed=config["analysis"]["bootstrap_seed"],
    script:
        "../scripts/job.py"


# The primary family: from the feature table alone (the answer's figures need not wait for replication)
rule primary_family:
    input:
        features=FEATURES,
        paper=PAPER_VALUES,
    output:
        primary_csv=report(
            f"{RESULTS}/tables/primary.csv",
            caption="../report/primary.rst",
            category=REPLICATION_CATEGORY,
        ),
        primary_md=f"{RESULTS}/tables/primary.md",
    log:
        f"{RESULTS}/logs/analysis/primary_family.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        **COMOVE_PARAMS,
        sesoi=config["analysis"]["sesoi"],
        sesoi_co=config["analysis"]["sesoi_co"],
        bottom_line_question=config["analysis"]["bottom_line_question"],
    script:
        "../scripts/job.py"


rule replication:
    input:
        **get_replication_inputs(),
    output:
        replication_csv=report(
            f"{RESULTS}/tables/replication.csv",
            caption="../report/replication.rst",
            category=REPLICATION_CATEGORY,
        ),
        replication_md=f"{RESULTS}/tables/replication.md",
        np_variance_csv=f"{RESULTS}/tables/np_variance.csv",
        np_variance_md=f"{RESULTS}/tables/np_variance.md",
    log:
        f"{RESULTS}/logs/analysis/replication.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        warmup_steps=config["train"]["warmup_steps"],
        phase_threshold=config["analysis"]["phase_threshold"],
        sesoi=config["analysis"]["sesoi"],
    script:
        "../scripts/job.py"


rule power:
    input:
        features=FEATURES,
        paper=PAPER_VALUES,
    output:
        power_csv=report(
            f"{RESULTS}/tables/power.csv",
            caption="../report/power.rst",
            category=REPLICATION_CATEGORY,
        ),
        power_md=f"{RESULTS}/tables/power.md",
    log:
        f"{RESULTS}/logs/analysis/power.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 16  # simulated studies in parallel processes (the same table); capped at --cores
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        sesoi=config["analysis"]["sesoi"],
        simulations=config["analysis"]["calibration"]["simulations"],
        power_draws=config["analysis"]["calibration"]["power_draws"],
        sesoi_co=config["analysis"]["sesoi_co"],
        horizon=config["analysis"]["horizon"],
        comove_from=config["analysis"]["comove_from"],
        warmup_steps=config["train"]["warmup_steps"],
        seed=config["analysis"]["bootstrap_seed"],
        cache=f"{RESULTS}/cache/power.json",  # keyed by design: simulated once per design
    script:
        "../scripts/job.py"
