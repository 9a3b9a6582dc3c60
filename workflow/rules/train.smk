# Training: one job per model × seed writes every checkpoint of its run; with train.ensemble the
# first job of a model trains all its unfinished seeds at once and the others take their files.


rule train_model:
    input:
        train=rules.prepare_corpus.output.train,
        validation=rules.prepare_corpus.output.validation,
    output:
        checkpoints=expand(CKPT, step=map(step_tag, STEPS), allow_missing=True),
        metrics=f"{RESULTS}/checkpoints/{TRAINING}/metrics.csv",
        evals=f"{RESULTS}/checkpoints/{TRAINING}/evals.csv",
    log:
        f"{RESULTS}/logs/train/{TRAINING}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train/{TRAINING}.tsv"
    priority: get_train_priority
    conda:
        "../../envs/train.yaml"
    threads: config["train"]["threads"]
    resources:
        mem_mb=4000,
        runtime=120,
        gpu=1 if uses_gpu() else 0,
    params:
        arch=get_model_arch,
        train=get_train_params,
        state_dir=lambda wc: f"{RESULTS}/state/train/{wc.model}/seed{wc.seed}",
        roster=Roster(tuple(SEEDS)),  # an ensemble's seeds: no rerun trigger (devices.Roster)
    script:
        "../scripts/job.py"
