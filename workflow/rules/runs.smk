# Your own runs (config runs:): a local folder of checkpoints or a hub repo's revisions (a pattern
# over its branches resolved by a checkpoint) → the spine's weight topology per checkpoint → the
# run's feature table, analysis and REPORT.md section.


# A hub run's revision_pattern is resolved by one job, into a file; its per-revision jobs are
# planned once it has run. Delete the file (or --forcerun run_revisions) to take in new branches.
checkpoint run_revisions:
    output:
        f"{RUNS_DIR}/{{run}}/revisions.json",
    log:
        f"{RESULTS}/logs/runs/{{run}}/revisions.log",
    conda:
        "../../envs/runs.yaml"
    threads: 1
    resources:
        hub_reads=1,  # lists the hub's branches (offline, or unanswered: the cache's refs)
        mem_mb=1000,
        runtime=10,
    params:
        entry=get_run_pattern,
    script:
        "../scripts/job.py"


rule fetch_run_revision:
    output:
        f"{RUNS_DIR}/{{run}}/revisions/step_{{step}}.json",
    log:
        f"{RESULTS}/logs/runs/{{run}}/fetch_step_{{step}}.log",
    conda:
        "../../envs/runs.yaml"
    threads: 1
    resources:
        hub_reads=1,  # reads the Hugging Face hub or its cache: the preflight checks it
        mem_mb=2000,
        runtime=60,
        hf_downloads=1,
    params:
        repo=lambda wc: RUN_ENTRIES[wc.run]["hub"],
        revision=get_run_revision,
        step=lambda wc: int(wc.step),
    script:
        "../scripts/job.py"


rule run_layers:
    input:
        get_run_probe,
    output:
        f"{RUNS_DIR}/{{run}}/layers.json",
    log:
        f"{RESULTS}/logs/runs/{{run}}/layers.log",
    conda:
        "../../envs/runs.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        options=get_run_layer_options,
        entry=lambda wc: listing(RUN_ENTRIES[wc.run]),
        first=get_run_first,
    script:
        "../scripts/job.py"


# The layer map of a local run is read from its first listed checkpoint, a derived param, and the
# job has no file input: a new first checkpoint (rotation) reruns nothing; a change of the layer
# options or of the listing keys (its params) derives it again, and the run's topology with it.
rule run_weight_topology:
    input:
        checkpoint=get_run_checkpoint,
        layers=f"{RUNS_DIR}/{{run}}/layers.json",
    output:
        record=f"{RUN_TOPO}.json",
        diagrams=f"{RUN_TOPO}.npz",
    log:
        f"{RESULTS}/logs/runs/{{run}}/step_{{step}}.log",
    group:
        "topology"
    conda:
        "../../envs/runs.yaml"
    threads: config["topology"]["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        step=lambda wc: int(wc.step),
        topology=get_run_topology_params,
    script:
        "../scripts/job.py"


# A hub run's keep_weights: false gives the cache back each revision's downloaded weights once
# its record is written; run_released gathers the run's releases (a target of the run).
rule release_run_weights:
    input:
        revision=f"{RUNS_DIR}/{{run}}/revisions/step_{{step}}.json",
        records=[f"{RUN_TOPO}.json", f"{RUNS_DIR}/{{run}}/layers.json"],
    output:
        f"{RUNS_DIR}/{{run}}/released/step_{{step}}.json",
    log:
        f"{RESULTS}/logs/runs/{{run}}/released_step_{{step}}.log",
    conda:
        "../../envs/runs.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../scripts/job.py"


rule run_released:
    input:
        get_run_releases,
    output:
        f"{RUNS_DIR}/{{run}}/released.json",
    log:
        f"{RESULTS}/logs/runs/{{run}}/released.log",
    conda:
        "../../envs/runs.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    script:
        "../scripts/job.py"


rule run_diagram_series:
    input:
        get_run_checkpoint_diagrams,
    output:
        table=f"{RUNS_DIR}/{{run}}/series.parquet",
        arrays=f"{RUNS_DIR}/{{run}}/series.npz",
    log:
        f"{RESULTS}/logs/runs/{{run}}/series.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        steps=lambda wc: run_steps(wc.run),
        kept=get_run_kept,
        series=config["topology"]["series"],
    script:
        "../scripts/job.py"


rule run_features:
    input:
        unpack(get_run_feature_inputs),
    output:
        table=f"{RUNS_DIR}/{{run}}/features.parquet",
        table_csv=f"{RUNS_DIR}/{{run}}/features.csv",
        layers=f"{RUNS_DIR}/{{run}}/features_layers.parquet",
        layers_csv=f"{RUNS_DIR}/{{run}}/features_layers.csv",
    log:
        f"{RESULTS}/logs/runs/{{run}}/features.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        name=lambda wc: wc.run,
        steps=lambda wc: run_steps(wc.run),
        kept=get_run_kept,
        allow_identical_steps=lambda wc: bool(
            RUN_ENTRIES[wc.run]["allow_identical_steps"]
        ),
    script:
        "../scripts/job.py"


rule run_analysis:
    input:
        table=rules.run_features.output.table,
        layers=f"{RUNS_DIR}/{{run}}/layers.json",
    output:
        **run_figure_outputs(),
        associations_csv=f"{RUNS_DIR}/{{run}}/tables/associations.csv",
        associations_md=f"{RUNS_DIR}/{{run}}/tables/associations.md",
        summary_csv=f"{RUNS_DIR}/{{run}}/tables/associations_summary.csv",
        summary_md=f"{RUNS_DIR}/{{run}}/tables/associations_summary.md",
        phases_csv=f"{RUNS_DIR}/{{run}}/tables/phases.csv",
        phases_md=f"{RUNS_DIR}/{{run}}/tables/phases.md",
        section=f"{RUNS_DIR}/{{run}}/REPORT.md",
    log:
        f"{RESULTS}/logs/runs/{{run}}/analysis.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    params:
        run=get_run_description,
        analysis=lambda wc: {
            "n_resamples": config["analysis"]["bootstrap_resamples"],
            "seed": config["analysis"]["bootstrap_seed"],
            "threshold": config["analysis"]["phase_threshold"],
            "n_bkps": config["analysis"]["changepoints"],
        },
    script:
        "../scripts/job.py"


# A group of runs that are seeds of one recipe (runs.<name>.group): the between-seed contrast.
rule run_group:
    input:
        unpack(get_group_inputs),
    output:
        members_csv=f"{GROUPS_DIR}/{{group}}/tables/members.csv",
        members_md=f"{GROUPS_DIR}/{{group}}/tables/members.md",
        contrasts_csv=f"{GROUPS_DIR}/{{group}}/tables/contrasts.csv",
        contrasts_md=f"{GROUPS_DIR}/{{group}}/tables/contrasts.md",
        section=f"{GROUPS_DIR}/{{group}}/REPORT.md",
        between_seeds_png=f"{GROUPS_DIR}/{{group}}/figures/between_seeds.png",
    log:
        f"{RESULTS}/logs/groups/{{group}}.log",
    conda:
        "../../envs/analysis.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        group=lambda wc: wc.group,
        members=get_group_members,
        primary=lambda wc: config["groups"].get(wc.group, {}).get("primary", []),
        sesoi=config["analysis"]["sesoi"],
        sesoi_co=config["analysis"]["sesoi_co"],
        horizon=config["analysis"]["horizon"],
        comove_from=config["analysis"]["comove_from"],
        warmup_steps=config["train"]["warmup_steps"],
        seed=config["analysis"]["bootstrap_seed"],
    script:
        "../scripts/job.py"
