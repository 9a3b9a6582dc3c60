# Aggregate: every checkpoint's features + training logs → one tidy table per run, as soon as its
# topology is done (so its per-run analysis, rule run_views, can start), then one per study.
rule aggregate_run:
    input:
        records=one_run(lambda **kw: [p for p, _ in get_topology_records(**kw)]),
        logs=one_run(get_training_logs),
        series=one_run(get_series_tables),
        gradients=one_run(get_gradient_records),
        weightwatcher=one_run(get_ww_tables),
        llc=one_run(get_llc_tables),
    output:
        table=RUN_FEATURES,
        layers=RUN_LAYERS,
    log:
        f"{RESULTS}/logs/aggregate/{{model}}/seed{{seed}}.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        record_keys=one_run(lambda **kw: [k for _, k in get_topology_records(**kw)]),
        trainings=one_run(get_trainings),
        total_steps=config["train"]["steps"],
        interval=config["train"]["checkpoint_interval"],
    script:
        "../scripts/job.py"


rule aggregate_features:
    input:
        tables=every_run(RUN_FEATURES),
        layers=every_run(RUN_LAYERS),
    output:
        table=f"{RESULTS}/features/weights.parquet",
        table_csv=f"{RESULTS}/features/weights.csv",
        layers=f"{RESULTS}/features/weights_layers.parquet",
        layers_csv=f"{RESULTS}/features/weights_layers.csv",
    log:
        f"{RESULTS}/logs/aggregate_features.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/job.py"
