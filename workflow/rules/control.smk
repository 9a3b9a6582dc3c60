# The grokking positive control (control.enabled): one training job per seed, one feature job per
# seed (embedding topology, weight topology of every matrix, baselines), one analysis job.
rule train_control:
    output:
        checkpoints=expand(
            f"{CONTROL_RUN}/step_{{step}}.safetensors",
            step=[f"{s:05d}" for s in CONTROL_STEPS],
            allow_missing=True,
        ),
        metrics=f"{CONTROL_RUN}/metrics.csv",
    log:
        f"{RESULTS}/logs/control/seed{{seed}}/train.log",
    benchmark:
        f"{RESULTS}/benchmarks/control/seed{{seed}}.tsv"
    conda:
        "../../envs/train.yaml"
    threads: CONTROL["threads"]
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        control={k: CONTROL[k] for k in CONTROL_KNOBS},
    script:
        "../scripts/job.py"


rule control_features:
    input:
        metrics=rules.train_control.output.metrics,
    output:
        table=f"{CONTROL_RUN}/features.parquet",
        layers=f"{CONTROL_RUN}/layers.parquet",
    log:
        f"{RESULTS}/logs/control/seed{{seed}}/features.log",
    conda:
        "../../envs/topology.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        p=CONTROL["p"],
        fourier_k=CONTROL["fourier_k"],
        topology={  # the GPT study's Rips settings; every 2-D matrix is analysed
            k: v for k, v in get_topology_params(None).items() if k != "patterns"
        },
    script:
        "../scripts/job.py"


# WeightWatcher's metrics of every 2-D matrix of one seed's checkpoints (topology.weightwatcher).
rule control_weightwatcher:
    input:
        rules.train_control.output.checkpoints,
    output:
        f"{CONTROL_RUN}/weightwatcher.parquet",
    log:
        f"{RESULTS}/logs/control/seed{{seed}}/weightwatcher.log",
    benchmark:
        f"{RESULTS}/benchmarks/weightwatcher/control/seed{{seed}}.tsv"
    conda:
        "../../envs/weightwatcher.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        ww=get_control_ww_params,
    script:
        "../scripts/job.py"


# The LLC of one seed's checkpoints (baselines.llc), every baselines.llc.every-th and the last.
rule control_llc:
    input:
        expand(
            f"{CONTROL_RUN}/step_{{step}}.safetensors",
            step=[f"{s:05d}" for s in CONTROL_LLC_STEPS],
            allow_missing=True,
        ),
    output:
        table=f"{CONTROL_RUN}/llc.parquet",
        traces=f"{CONTROL_RUN}/llc_traces.npz",
    log:
        f"{RESULTS}/logs/control/seed{{seed}}/llc.log",
    benchmark:
        f"{RESULTS}/benchmarks/llc/control/seed{{seed}}.tsv"
    conda:
        "../../envs/llc.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=120,
        gpu=1 if LLC["device"] == "cuda" else 0,
    params:
        llc=get_llc_params,
        control={k: CONTROL[k] for k in CONTROL_KNOBS},
    script:
        "../scripts/job.py"


rule control_analysis:
    input:
        tables=expand(rules.control_features.output.table, seed=CONTROL_SEEDS),
        ww=get_control_ww(),
        llc=get_control_llc(),
    output:
        **{f"{name}_csv": path for name, path in CONTROL_TABLES.items()},
        **figure_outputs(["control_curves", "control_between_seeds"]),
        features=f"{RESULTS}/features/control.parquet",
    log:
        f"{RESULTS}/logs/control/analysis.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        **COMOVE_PARAMS,
        seeds=CONTROL_SEEDS,
        sesoi=config["analysis"]["sesoi"],
    script:
        "../scripts/job.py"
