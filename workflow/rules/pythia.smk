# Pythia branch: hub revisions step{n} → weight topology and embedding topology per revision.


rule pythia_texts:
    input:
        get_corpus_files(),
    output:
        f"{PYTHIA_DIR}/texts.json",
    log:
        f"{RESULTS}/logs/pythia/texts.log",
    conda:
        "../../envs/pythia.yaml"
    threads: 1
    resources:
        hub_reads=1,  # reads the Hugging Face hub or its cache: the preflight checks it
        mem_mb=1000,
        runtime=5,
    params:
        corpus=config["corpus"],
        texts=lambda wc: dict(
            n_texts=PYTHIA["embeddings"]["n_texts"],
            min_chars=PYTHIA["embeddings"]["min_chars"],
            seed=PYTHIA["embeddings"]["text_seed"],
        ),
    script:
        "../scripts/job.py"


rule fetch_pythia:
    output:
        f"{PYTHIA_DIR}/revisions/{REVISION}.json",
    log:
        f"{RESULTS}/logs/pythia/fetch/{REVISION}.log",
    conda:
        "../../envs/pythia.yaml"
    threads: 1
    resources:
        hub_reads=1,  # reads the Hugging Face hub or its cache: the preflight checks it
        mem_mb=2000,
        runtime=60,
        hf_downloads=1,
    params:
        model=model_id,
        step=lambda wc: int(wc.step),
    script:
        "../scripts/job.py"


# keep_weights: false gives the cache back the weights a revision's fetch downloaded, once the
# records that read them are written.
rule release_pythia_weights:
    input:
        revision=rules.fetch_pythia.output[0],
        records=revision_records,
    output:
        f"{PYTHIA_DIR}/released/{REVISION}.json",
    log:
        f"{RESULTS}/logs/pythia/released/{REVISION}.log",
    conda:
        "../../envs/pythia.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../scripts/job.py"


rule pythia_weight_topology:
    input:
        rules.fetch_pythia.output[0],
    output:
        f"{PYTHIA_DIR}/weights/{REVISION}.json",
    log:
        f"{RESULTS}/logs/pythia/weights/{REVISION}.log",
    conda:
        "../../envs/pythia.yaml"
    threads: 1
    resources:
        hub_reads=1,  # reads the Hugging Face hub or its cache: the preflight checks it
        mem_mb=4000,
        runtime=20,
    params:
        weights=lambda wc: {
            **{k: PYTHIA["weights"][k] for k in ("layers", "max_points", "seed")},
            "engine": RIPS_ENGINE,
            **ww_param(),
        },
    script:
        "../scripts/job.py"


rule pythia_embedding_topology:
    input:
        revision=rules.fetch_pythia.output[0],
        texts=rules.pythia_texts.output[0],
    output:
        record=f"{PYTHIA_DIR}/embeddings/{REVISION}.json",
        diagrams=f"{PYTHIA_DIR}/embeddings/{REVISION}.npz",
    log:
        f"{RESULTS}/logs/pythia/embeddings/{REVISION}.log",
    conda:
        "../../envs/pythia.yaml"
    threads: 2
    resources:
        hub_reads=1,  # reads the Hugging Face hub or its cache: the preflight checks it
        mem_mb=8000,
        runtime=30,
        gpu=pythia_device_gpu(),
    params:
        embeddings=lambda wc: {
            **{
                k: v
                for k, v in PYTHIA["embeddings"].items()
                if k not in ("models", "steps")
            },
            "engine": RIPS_ENGINE,
        },
    script:
        "../scripts/job.py"


rule pythia_weight_tables:
    input:
        pythia_paths("weights", "json"),
    output:
        weights_csv=report(
            f"{RESULTS}/tables/pythia_weights.csv",
            caption="../report/pythia_tables.rst",
            category="Pythia",
        ),
        weights_md=f"{RESULTS}/tables/pythia_weights.md",
    log:
        f"{RESULTS}/logs/pythia/weight_tables.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        allow_identical_steps=PYTHIA["allow_identical_steps"],
    script:
        "../scripts/job.py"


rule pythia_embedding_tables:
    input:
        records=pythia_paths("embeddings", "json"),
        diagrams=pythia_paths("embeddings", "npz"),
    output:
        embeddings_csv=f"{RESULTS}/tables/pythia_embeddings.csv",
        embeddings_md=f"{RESULTS}/tables/pythia_embeddings.md",
        correlations_csv=f"{RESULTS}/tables/pythia_correlations.csv",
        correlations_md=f"{RESULTS}/tables/pythia_correlations.md",
        comparison_csv=report(
            f"{RESULTS}/tables/pythia_comparison.csv",
            caption="../report/pythia_tables.rst",
            category="Pythia",
        ),
        comparison_md=f"{RESULTS}/tables/pythia_comparison.md",
        kinds_csv=f"{RESULTS}/tables/pythia_kinds.csv",
        kinds_md=f"{RESULTS}/tables/pythia_kinds.md",
    log:
        f"{RESULTS}/logs/pythia/embedding_tables.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        n_resamples=PYTHIA["bootstrap_resamples"],
        allow_identical_steps=PYTHIA["allow_identical_steps"],
    script:
        "../scripts/job.py"


rule pythia_weight_figure:
    input:
        rules.pythia_weight_tables.output.weights_csv,
    output:
        **figure_outputs(["pythia_weights"]),
    log:
        f"{RESULTS}/logs/figures/pythia_weights.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    script:
        "../scripts/job.py"


rule pythia_figures:
    input:
        embeddings=rules.pythia_embedding_tables.output.embeddings_csv,
        correlations=rules.pythia_embedding_tables.output.correlations_csv,
    output:
        **figure_outputs(list(PYTHIA_FIGURES)),
    log:
        f"{RESULTS}/logs/figures/pythia_figures.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/job.py"
