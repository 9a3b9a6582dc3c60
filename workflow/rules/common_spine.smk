# Helpers of the GPT study (spine): run parameters, per-checkpoint records, per-run inputs.


def step_tag(step):
    return f"{int(step):05d}"


def get_model_arch(wildcards):
    arch = config["models"][wildcards.model]
    return dict(arch, vocab_size=VOCAB_SIZE, context=config["context"])


def model_params(arch):
    """Parameter count of one architecture of config["models"] (tied head)."""
    return n_params(arch["d_model"], arch["n_layer"], VOCAB_SIZE, config["context"])


def trains_ensemble():
    """Whether each model's seeds train as one ensemble (topotrain.devices.wants_ensemble)."""
    return wants_ensemble(
        config["train"].get("ensemble", "auto"), config["train"]["device"]
    )


def get_train_params(wildcards):
    """Training hyper-parameters of one run; threads are left out (they come from the rule), and so
    are ``deterministic: true`` and an ensemble that is off, the defaults on CPU: results made
    before the keys existed stay valid. ``ensemble`` is resolved (auto → true on a GPU).
    """
    params = {
        k: v for k, v in config["train"].items() if k not in ("threads", "ensemble")
    }
    if params.get("deterministic") is True:
        del params["deterministic"]
    if trains_ensemble():
        params["ensemble"] = True
    return dict(params, seed=int(wildcards.seed))


def get_train_priority(wildcards):
    """Rank of the model by parameter count (largest first): the longest training starts at once
    instead of ending the study alone on one core. In an ensemble, every model's first seed comes
    before any other seed: the first job of a model trains all its seeds, the others then only
    take their files (training.cohort)."""
    sizes = sorted(model_params(a) for a in config["models"].values())
    rank = sizes.index(model_params(config["models"][wildcards.model]))
    first = int(wildcards.seed) == min(SEEDS)
    return rank + len(sizes) * (trains_ensemble() and first)


def uses_gpu():
    """Whether training jobs will run on a GPU (topotrain.devices.wants_gpu of train.device)."""
    return wants_gpu(config["train"]["device"])


def get_topology_params(wildcards):
    """A checkpoint's topology settings, the Rips engine resolved (RIPS_ENGINE): a change reruns it."""
    topo = config["topology"]
    return dict(
        patterns=layer_patterns(topo),
        max_points=topo["max_points"],
        seed=topo["seed"],
        maxdim=topo["maxdim"],
        engine=RIPS_ENGINE,
    )


GRADIENTS = config["topology"]["gradients"]


def get_gradient_params(wildcards):
    """The gradient job's probe batch (size, seed) and the topology it computes."""
    return dict(
        batch_size=GRADIENTS["batch_size"],
        seed=GRADIENTS["seed"],
        topology=get_topology_params(wildcards),
    )


WW_TABLE = f"{RESULTS}/weightwatcher/{TRAINING}.parquet"
# One pass over a checkpoint's layers for its topology and WeightWatcher's metrics: the training's
# topology job writes both (rule training_topology) when both are on.
WW_ONE_PASS = (
    config["topology"]["weightwatcher"] and config["topology"]["jobs"] == "training"
)


def get_ww_tables(seeds=SEEDS, models=MODELS):
    """Each run's WeightWatcher table (in get_trainings' order), or none when
    topology.weightwatcher is off."""
    if not config["topology"]["weightwatcher"]:
        return []
    return [
        f"{RESULTS}/weightwatcher/{m}/seed{s}.parquet" for m in models for s in seeds
    ]


def get_ww_params(wildcards):
    """What a run's WeightWatcher table depends on: the layers, the steps, the package's version."""
    return dict(
        patterns=layer_patterns(config["topology"]),
        steps=list(STEPS),
        weightwatcher=package_version("weightwatcher"),
    )


LLC = config["baselines"]["llc"]
LLC_FILES = (
    f"{RESULTS}/llc/{TRAINING}"  # .parquet (a row per checkpoint) and _traces.npz
)
LLC_STEPS = llc_steps(STEPS, LLC["every"])


def get_llc_tables(seeds=SEEDS, models=MODELS):
    """Each run's LLC table (in get_trainings' order), or none when baselines.llc is off."""
    if not LLC["enabled"]:
        return []
    return [
        f"{LLC_FILES.format(model=m, seed=s)}.parquet" for m in models for s in seeds
    ]


def get_llc_params(wildcards):
    """What a run's LLC table depends on: the sampler's settings and devinterp's version."""
    return {k: v for k, v in LLC.items() if k not in ("enabled", "every")} | dict(
        devinterp=package_version("devinterp")
    )


def get_gradient_records(seeds=SEEDS, models=MODELS):
    """Every checkpoint's gradient-topology record (in get_topology_records' order), or none when
    topology.gradients is off."""
    if not GRADIENTS["enabled"]:
        return []
    return [
        f"{GRAD.format(model=m, seed=s, step=step_tag(t))}.json"
        for m in models
        for s in seeds
        for t in STEPS
    ]


def get_topology_records(seeds=SEEDS, models=MODELS):
    """(path, key) for every per-checkpoint topology record of ``seeds`` (default the discovery
    seeds, ``seeds:``) of ``models`` (default all; every getter here takes both), in a fixed
    order."""
    return [
        (
            f"{TOPO.format(model=m, seed=s, step=step_tag(t))}.json",
            dict(model=m, seed=s, step=t),
        )
        for m in models
        for s in seeds
        for t in STEPS
    ]


def get_run_diagrams(wildcards):
    """The diagram files of one run's checkpoints, in step order (the diagram_series input)."""
    run = dict(model=wildcards.model, seed=wildcards.seed)
    return [f"{TOPO.format(**run, step=step_tag(t))}.npz" for t in STEPS]


def get_series_tables(seeds=SEEDS, models=MODELS):
    """Each run's diagram-series table, in the order of get_trainings()."""
    return [
        f"{RESULTS}/topology/{m}/seed{s}/series.parquet" for m in models for s in seeds
    ]


def get_trainings(seeds=SEEDS, models=MODELS):
    """One dict per (model, seed) of the spine: its architecture, for the aggregate table (in
    the order of get_training_logs())."""
    trainings = []
    for m in models:
        arch = config["models"][m]
        size = dict(n_params=model_params(arch), **arch)
        trainings += [dict(model=m, seed=s, **size) for s in seeds]
    return trainings


def get_training_logs(seeds=SEEDS, models=MODELS):
    """Each training's metrics.csv and evals.csv, in the order of get_trainings()."""
    logs = [f"{RESULTS}/checkpoints/{m}/seed{s}" for m in models for s in seeds]
    return [f"{base}/{name}" for base in logs for name in ("metrics.csv", "evals.csv")]


# A run's feature tables (rule aggregate_run), as soon as its topology is done, and its rows of
# the associations and layer types (rule run_views); the study's tables join them.
RUN_FEATURES = f"{RESULTS}/features/runs/{TRAINING}/weights.parquet"
RUN_LAYERS = f"{RESULTS}/features/runs/{TRAINING}/weights_layers.parquet"
RUN_ROWS = f"{RESULTS}/tables/runs/{TRAINING}"


def one_run(getter):
    """An input or params function: ``getter`` (a common_spine list) for the job's run."""
    return lambda wildcards: getter(
        seeds=[int(wildcards.seed)], models=[wildcards.model]
    )


def every_run(path: str) -> list[str]:
    """``path`` (a RUN_ pattern) of every run of the spine, in get_trainings' order."""
    return [path.format(model=m, seed=s) for m in MODELS for s in SEEDS]
