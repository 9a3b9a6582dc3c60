# Corpus: WikiText-2 (hub or local files) → character codes (uint8) + manifest.


rule prepare_corpus:
    input:
        get_corpus_files(),
    output:
        train=f"{RESULTS}/corpus/train.bin",
        validation=f"{RESULTS}/corpus/validation.bin",
        manifest=f"{RESULTS}/corpus/manifest.json",
    log:
        f"{RESULTS}/logs/prepare_corpus.log",
    conda:
        "../../envs/data.yaml"
    threads: 1
    resources:
        hub_reads=1,  # reads the Hugging Face hub or its cache: the preflight checks it
        mem_mb=2000,
        runtime=10,
    params:
        corpus=config["corpus"],
    script:
        "../scripts/job.py"
