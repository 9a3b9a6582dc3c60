# Aggregate: every checkpoint's features + training logs → one tidy table per study.


rule aggregate_features:
    input:
        records=[path for path, _ in get_topology_records()],
        logs=get_training_logs(),
        series=get_series_tables(),
        gradients=get_gradient_records(),
        weightwatcher=get_ww_tables(),
        llc=get_llc_tables(),
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
    params:
        record_keys=[key for _, key in get_topology_records()],
        trainings=get_trainings(),
        total_steps=config["train"]["steps"],
        interval=config["train"]["checkpoint_interval"],
    script:
        "../scripts/job.py"
