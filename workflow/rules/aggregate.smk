# Aggregate: every checkpoint's features + training logs → one tidy table per model, as soon as
# that model's runs are done (so its per-run analysis, rule model_views, can start), then one
# table per study.
rule aggregate_model:
    input:
        records=one_model(lambda **kw: [p for p, _ in get_topology_records(**kw)]),
        logs=one_model(get_training_logs),
        series=one_model(get_series_tables),
        gradients=one_model(get_gradient_records),
        weightwatcher=one_model(get_ww_tables),
        llc=one_model(get_llc_tables),
    output:
        table=MODEL_FEATURES,
        layers=MODEL_LAYERS,
    log:
        f"{RESULTS}/logs/aggregate/{{model}}.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        record_keys=one_model(lambda **kw: [k for _, k in get_topology_records(**kw)]),
        trainings=one_model(get_trainings),
        total_steps=config["train"]["steps"],
        interval=config["train"]["checkpoint_interval"],
    script:
        "../scripts/job.py"


rule aggregate_features:
    input:
        tables=expand(MODEL_FEATURES, model=MODELS),
        layers=expand(MODEL_LAYERS, model=MODELS),
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
