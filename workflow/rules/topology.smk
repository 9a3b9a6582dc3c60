# Weight topology: one job per checkpoint (neural persistence + Vietoris–Rips), or one per training
# (topology.jobs); never imports torch.
# Gradient topology (topology.gradients): the same per checkpoint on a probe batch's gradients (torch).
# Group "topology": on a cluster, --group-components topology=N submits N checkpoints as one job
# (profiles/slurm); local runs ignore groups.


rule weight_topology:
    input:
        CKPT,
    output:
        record=f"{TOPO}.json",
        diagrams=f"{TOPO}.npz",
    log:
        f"{RESULTS}/logs/topology/{TRAINING}/step_{{step}}.log",
    group:
        "topology"
    conda:
        "../../envs/topology.yaml"
    threads: config["topology"]["threads"]
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        topology=get_topology_params,
    script:
        "../scripts/job.py"


# topology.jobs: training — one job per training writes every checkpoint's record (the same records):
# no per-job start-up, a training's records rerun together. With topology.weightwatcher on it
# writes WeightWatcher's table too, each checkpoint's layers read once for both (WW_ONE_PASS).
rule training_topology:
    input:
        expand(CKPT, step=map(step_tag, STEPS), allow_missing=True),
    output:
        **({"weightwatcher": WW_TABLE} if WW_ONE_PASS else {}),
        records=expand(f"{TOPO}.json", step=map(step_tag, STEPS), allow_missing=True),
        diagrams=expand(f"{TOPO}.npz", step=map(step_tag, STEPS), allow_missing=True),
    log:
        f"{RESULTS}/logs/topology/{TRAINING}/weights.log",
    conda:
        "../../envs/weightwatcher.yaml" if WW_ONE_PASS else "../../envs/topology.yaml"
    threads: config["topology"]["threads"]
    resources:
        mem_mb=2000 if WW_ONE_PASS else 1000,
        runtime=30,
    params:
        **({"ww": get_ww_params} if WW_ONE_PASS else {}),
        topology=get_topology_params,
    script:
        "../scripts/job.py"


# WeightWatcher's metrics of one training's checkpoints (topology.weightwatcher) with per-checkpoint
# topology jobs: one job per training, since importing weightwatcher (matplotlib, scikit-learn,
# powerlaw) costs seconds.
rule weightwatcher:
    input:
        expand(CKPT, step=map(step_tag, STEPS), allow_missing=True),
    output:
        WW_TABLE,
    log:
        f"{RESULTS}/logs/weightwatcher/{TRAINING}.log",
    benchmark:
        f"{RESULTS}/benchmarks/weightwatcher/{TRAINING}.tsv"
    conda:
        "../../envs/weightwatcher.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        ww=get_ww_params,
    script:
        "../scripts/job.py"


# The local learning coefficient of one training's checkpoints (baselines.llc: devinterp's
# sampler), every baselines.llc.every-th and the last: one job per training, like WeightWatcher.
rule llc:
    input:
        checkpoints=expand(CKPT, step=map(step_tag, LLC_STEPS), allow_missing=True),
        tokens=rules.prepare_corpus.output.train,
    output:
        table=f"{LLC_FILES}.parquet",
        traces=f"{LLC_FILES}_traces.npz",
    log:
        f"{RESULTS}/logs/llc/{TRAINING}.log",
    benchmark:
        f"{RESULTS}/benchmarks/llc/{TRAINING}.tsv"
    conda:
        "../../envs/llc.yaml"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=120,
        gpu=1 if LLC["device"] == "cuda" else 0,
    params:
        llc=get_llc_params,
    script:
        "../scripts/job.py"


if config["topology"]["jobs"] == "training":

    ruleorder: training_topology > weight_topology
    ruleorder: training_topology > weightwatcher

else:

    ruleorder: weight_topology > training_topology


rule diagram_series:
    input:
        get_run_diagrams,
    output:
        table=f"{RESULTS}/topology/{TRAINING}/series.parquet",
        arrays=f"{RESULTS}/topology/{TRAINING}/series.npz",
    log:
        f"{RESULTS}/logs/topology/{TRAINING}/series.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        steps=STEPS,
        series=config["topology"]["series"],
    script:
        "../scripts/job.py"


# One job per training walks its checkpoints: torch and the tokens load once, not once per
# checkpoint (docs/study.md, "Gradient topology").
rule gradient_topology:
    input:
        checkpoints=expand(CKPT, step=map(step_tag, STEPS), allow_missing=True),
        tokens=rules.prepare_corpus.output.train,
    output:
        records=expand(f"{GRAD}.json", step=map(step_tag, STEPS), allow_missing=True),
        diagrams=expand(f"{GRAD}.npz", step=map(step_tag, STEPS), allow_missing=True),
    log:
        f"{RESULTS}/logs/topology/{TRAINING}/gradients.log",
    conda:
        "../../envs/gradients.yaml"
    threads: config["topology"]["threads"]
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        gradients=get_gradient_params,
    script:
        "../scripts/job.py"
