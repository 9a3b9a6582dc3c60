# Discovery, then confirmation on fresh seeds (confirm:): the confirmation seeds train and are
# measured by the discovery seeds' rules into feature tables of their own; the hits of the
# discovery seeds' table are frozen (hypotheses) before the confirmation seeds' table is read,
# and tested on it alone as one family (confirmation).


rule confirm_features:
    input:
        records=[path for path, _ in get_topology_records(CONFIRM_SEEDS["spine"])],
        logs=get_training_logs(CONFIRM_SEEDS["spine"]),
        series=get_series_tables(CONFIRM_SEEDS["spine"]),
        gradients=get_gradient_records(CONFIRM_SEEDS["spine"]),
    output:
        table=CONFIRM_TABLES["spine"][1],
        table_csv=f"{RESULTS}/features/confirm/weights.csv",
        layers=f"{RESULTS}/features/confirm/weights_layers.parquet",
        layers_csv=f"{RESULTS}/features/confirm/weights_layers.csv",
    log:
        f"{RESULTS}/logs/confirm/confirm_features.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        record_keys=[key for _, key in get_topology_records(CONFIRM_SEEDS["spine"])],
        trainings=get_trainings(CONFIRM_SEEDS["spine"]),
        total_steps=config["train"]["steps"],
        interval=config["train"]["checkpoint_interval"],
    script:
        "../scripts/job.py"


rule control_confirm_features:
    input:
        tables=expand(
            rules.control_features.output.table, seed=CONFIRM_SEEDS["control"]
        ),
        llc=get_confirm_control_llc(),
    output:
        table=CONFIRM_TABLES["control"][1],
    log:
        f"{RESULTS}/logs/confirm/control_confirm_features.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        seeds=CONFIRM_SEEDS["control"],
    script:
        "../scripts/job.py"


rule hypotheses:
    input:
        table=get_discovery_table,
    output:
        hypotheses=report(
            HYPOTHESES,
            caption="../report/hypotheses.rst",
            category="Confirmation",
        ),
    log:
        f"{RESULTS}/logs/confirm/{{branch}}_hypotheses.log",
    wildcard_constraints:
        branch="spine|control",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        **COMOVE_PARAMS,
        branch=lambda wc: wc.branch,
        named=get_named_hypotheses,
        seed=config["analysis"]["bootstrap_seed"],
    script:
        "../scripts/job.py"


rule confirmation:
    input:
        hypotheses=HYPOTHESES,
        table=get_confirmation_table,
    output:
        confirmation=report(
            CONFIRMATION,
            caption="../report/confirmation.rst",
            category="Confirmation",
        ),
    log:
        f"{RESULTS}/logs/confirm/{{branch}}_confirmation.log",
    wildcard_constraints:
        branch="spine|control",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        **COMOVE_PARAMS,
        branch=lambda wc: wc.branch,
        sesoi=config["analysis"]["sesoi"],
        seed=config["analysis"]["bootstrap_seed"],
    script:
        "../scripts/job.py"
