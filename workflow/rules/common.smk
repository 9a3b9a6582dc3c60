# Config validation and every helper that computes paths or parameters from config.
import glob
import os
import re
import sys

import yaml

from snakemake.utils import validate

# The package lives in src/: importable here and in every job (also in conda envs and on a
# cluster) without requiring `pip install -e .` first.
SRC = os.path.join(workflow.basedir, "src")
sys.path.insert(0, SRC)
os.environ.update(
    PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))
)

from topotrain.config import (
    ConfigError,
    check_config,
    checkpoint_steps,
    coerce_config,
    control_enabled,
    fill_defaults,
    layer_patterns,
    n_params,
    order_like_schema,
    spine_enabled,
)
from topotrain.devices import wants_gpu
from topotrain.sources.corpus import VOCAB_SIZE

SCHEMA = os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml")
with open(SCHEMA) as fh:
    CONFIG_SCHEMA = yaml.safe_load(fh)
DEFAULTS = os.path.join(workflow.basedir, "config.yaml")  # the package's defaults
with open(DEFAULTS) as fh:
    fill_defaults(config, yaml.safe_load(fh))
# In place (rules read this dict): --config gives nested values as strings, and puts its keys first.
coerce_config(config, CONFIG_SCHEMA)
order_like_schema(config, CONFIG_SCHEMA)
validate(config, schema=SCHEMA)
check_config(config, schema=CONFIG_SCHEMA)

RESULTS = config["results"].rstrip("/")
SPINE_ON = spine_enabled(config)  # the paper's study, trained here (spine.enabled)
MODELS = list(config["models"]) if SPINE_ON else []
SEEDS = [int(s) for s in config["seeds"]]
STEPS = checkpoint_steps(config["train"])
RUN = "{model}/seed{seed}"
CKPT = f"{RESULTS}/checkpoints/{RUN}/step_{{step}}.safetensors"
TOPO = f"{RESULTS}/topology/{RUN}/step_{{step}}"
GRAD = (
    f"{RESULTS}/topology/{RUN}/grad_{{step}}"  # topology of the probe-batch gradients
)


wildcard_constraints:
    model="|".join(map(re.escape, MODELS)),
    seed=r"\d+",
    step=r"\d{5}",
    slug=r"[A-Za-z0-9_.-]+--[A-Za-z0-9_.-]+",
    rev=r"\d+",
    run="|".join(map(re.escape, config.get("runs") or {})) or "(?!)",
    ckpt=r"\d+",


def step_tag(step):
    return f"{int(step):05d}"


def get_model_arch(wildcards):
    arch = config["models"][wildcards.model]
    return dict(arch, vocab_size=VOCAB_SIZE, context=config["context"])


def model_params(arch):
    """Parameter count of one architecture of config["models"] (tied head)."""
    return n_params(arch["d_model"], arch["n_layer"], VOCAB_SIZE, config["context"])


def get_train_params(wildcards):
    """Training hyper-parameters of one run; threads are left out (they come from the rule), and so
    is ``deterministic: true``, the default: results made before the key existed stay valid.
    """
    params = {k: v for k, v in config["train"].items() if k != "threads"}
    if params.get("deterministic") is True:
        del params["deterministic"]
    return dict(params, seed=int(wildcards.seed))


def get_train_priority(wildcards):
    """Rank of the model by parameter count (largest first): the longest training starts at once
    instead of ending the study alone on one core."""
    sizes = sorted(model_params(a) for a in config["models"].values())
    return sizes.index(model_params(config["models"][wildcards.model]))


def uses_gpu():
    """Whether training jobs will run on a GPU (topotrain.devices.wants_gpu of train.device)."""
    return wants_gpu(config["train"].get("device", "auto"))


def get_topology_params(wildcards):
    topo = config["topology"]
    return dict(
        patterns=layer_patterns(topo),
        max_points=topo["max_points"],
        seed=topo.get("seed", 0),
        maxdim=topo.get("maxdim", 1),
    )


GRADIENTS = config["topology"].get("gradients", {"enabled": False})


def get_gradient_params(wildcards):
    """The gradient job's probe batch (size, seed) and the topology it computes."""
    return dict(
        batch_size=GRADIENTS.get("batch_size", 32),
        seed=GRADIENTS.get("seed", 0),
        topology=get_topology_params(wildcards),
    )


def get_gradient_records():
    """Every checkpoint's gradient-topology record (in get_topology_records' order), or none when
    topology.gradients is off."""
    if not GRADIENTS.get("enabled", False):
        return []
    return [
        f"{GRAD.format(model=m, seed=s, step=step_tag(t))}.json"
        for m in MODELS
        for s in SEEDS
        for t in STEPS
    ]


def get_topology_records():
    """(path, key) for every per-checkpoint topology record, in a fixed order."""
    return [
        (
            f"{TOPO.format(model=m, seed=s, step=step_tag(t))}.json",
            dict(model=m, seed=s, step=t),
        )
        for m in MODELS
        for s in SEEDS
        for t in STEPS
    ]


def get_run_diagrams(wildcards):
    """The diagram files of one run's checkpoints, in step order (the diagram_series input)."""
    run = dict(model=wildcards.model, seed=wildcards.seed)
    return [f"{TOPO.format(**run, step=step_tag(t))}.npz" for t in STEPS]


def get_series_tables():
    """Each run's diagram-series table, in the order of get_runs()."""
    return [
        f"{RESULTS}/topology/{m}/seed{s}/series.parquet" for m in MODELS for s in SEEDS
    ]


def get_runs():
    """One dict per (model, seed): its logs and architecture, for the aggregate table."""
    runs = []
    for m in MODELS:
        arch = config["models"][m]
        for s in SEEDS:
            base = f"{RESULTS}/checkpoints/{m}/seed{s}"
            runs.append(
                dict(
                    model=m,
                    seed=s,
                    metrics=f"{base}/metrics.csv",
                    evals=f"{base}/evals.csv",
                    n_params=model_params(arch),
                    d_model=arch["d_model"],
                    n_layer=arch["n_layer"],
                    n_head=arch["n_head"],
                )
            )
    return runs


def get_final_output():
    """Everything the study produces: feature tables, analysis tables, figures, REPORT.md (the
    spine's when spine.enabled, the Pythia branch's, each run's)."""
    spine = [
        f"{RESULTS}/features/weights.parquet",
        f"{RESULTS}/features/weights_layers.parquet",
        f"{RESULTS}/tables/models.csv",
        f"{RESULTS}/tables/phases.csv",
        *[
            f"{RESULTS}/figures/{name}.{ext}"
            for name in FIGURES
            for ext in ("png", "pdf")
        ],
    ]
    return [
        *(spine if SPINE_ON else []),
        f"{RESULTS}/REPORT.md",
        f"{RESULTS}/bottom_line.html",
        *get_pythia_outputs(),
        *get_run_outputs(),
        *get_control_outputs(),
    ]


def get_corpus_files():
    """Local corpus files as inputs (source files), so editing them reruns the corpus job."""
    corpus = config["corpus"]
    if corpus["source"] == "files":
        return [corpus["train"], corpus["validation"]]
    return []


FEATURES = f"{RESULTS}/features/weights.parquet"

# every figure of the study: name -> category in the HTML report (caption: workflow/report/<name>.rst)
FIGURES = {
    "overview": "Overview",
    "loss_curves": "Training",
    "np_evolution": "Training",
    "homology_evolution": "Training",
    "correlation_heatmap": "Correlations",
    "prediction_mae": "Prediction",
    "scaling_fits": "Scaling",
    "stopping": "Stopping",
    "layer_types": "Correlations",
}


def figure_outputs(names):
    """Named PNG (in the HTML report, with its caption) and PDF outputs for each figure."""
    out = {}
    for name in names:
        out[f"{name}_png"] = report(
            f"{RESULTS}/figures/{name}.png",
            caption=f"../report/{name}.rst",
            category=FIGURES_ALL[name],
        )
        out[f"{name}_pdf"] = f"{RESULTS}/figures/{name}.pdf"
    return out


# ---- The grokking control (control:) ----------------------------------------------------------
CONTROL = config.get("control") or {"enabled": False}
CONTROL_ON = control_enabled(config)
CONTROL_DIR = f"{RESULTS}/control"
CONTROL_SEEDS = [int(s) for s in CONTROL.get("seeds", [])] if CONTROL_ON else []
CONTROL_STEPS = (
    list(range(0, CONTROL["steps"] + 1, CONTROL["interval"])) if CONTROL_ON else []
)
CONTROL_RUN = f"{CONTROL_DIR}/seed{{seed}}"
CONTROL_TABLES = {
    name: f"{RESULTS}/tables/{name}.csv"
    for name in ("control", "control_seeds", "control_verdicts")
}
CONTROL_KNOBS = [
    "p", "train_frac", "width", "heads", "mlp", "steps", "interval", "lr", "weight_decay", "beta2",
]  # fmt: skip


def get_control_outputs():
    """The control's tables and figure when control.enabled (nothing otherwise)."""
    if not CONTROL_ON:
        return []
    figures = [f"{RESULTS}/figures/control_curves.{ext}" for ext in ("png", "pdf")]
    return [*CONTROL_TABLES.values(), *figures]


def report_tables():
    """The Markdown tables REPORT.md is assembled from, in reading order (the spine's only when
    spine.enabled), and each run's section (``runs``)."""
    tables = (
        ["control"] if CONTROL_ON else []
    )  # the positive control, before the replication
    if SPINE_ON:
        tables += ["replication", "models", "best_feature", "correlations"]
        tables += ["associations_summary"]
        tables += ["prediction", "prediction_runs"]
        tables += ["layer_types_summary", "scaling", "phases", "stopping_summary"]
        tables += ["velocity_summary"]
        tables += ["correlations_across_seeds"]
    if pythia_revisions("weights"):
        tables += ["pythia_weights"]
    if pythia_revisions("embeddings"):
        tables += ["pythia_kinds", "pythia_comparison", "pythia_correlations"]
    md = {name: f"{RESULTS}/tables/{name}.md" for name in tables}
    csv = {
        f"{name}_csv": f"{RESULTS}/tables/{name}.csv"
        for name in (
            "best_feature",
            "prediction",
            "replication",
            "primary",
            "associations_summary",
        )
        if SPINE_ON
    }
    if CONTROL_ON:  # the control's section is built from its CSVs
        md.pop("control")
        csv |= {f"{name}_csv": path for name, path in CONTROL_TABLES.items()}
        csv["control_curves_png"] = f"{RESULTS}/figures/control_curves.png"
    if SPINE_ON:  # NP against its layers' weight variance, in the control's section
        csv["np_variance_csv"] = f"{RESULTS}/tables/np_variance.csv"
    return {**md, **csv, "runs": [run_path(r, "REPORT.md") for r in RUNS]}


REPLICATION_CATEGORY = (
    "1. Replication"  # the HTML report sorts categories by name: this one first
)
PAPER_VALUES = os.path.join(workflow.basedir, "workflow", "data", "paper_values.csv")


def get_replication_inputs():
    """The published values and the tables the replication verdicts read (Table 8's Pythia
    weights and Study B's embedding tables only when that part of the branch is on)."""
    names = ["models", "associations", "prediction", "phases", "scaling"]
    if pythia_revisions("weights"):
        names += ["pythia_weights"]
    if pythia_revisions("embeddings"):
        names += ["pythia_correlations", "pythia_embeddings"]
    tables = {name: f"{RESULTS}/tables/{name}.csv" for name in names}
    return {"paper": PAPER_VALUES, "features": FEATURES, **tables}


# ---- Pythia branch -------------------------------------------------------------------------
PYTHIA = config.get("pythia", {"enabled": False})
PYTHIA_ON = bool(PYTHIA.get("enabled", False))
PYTHIA_DIR = f"{RESULTS}/pythia"
REVISION = "{slug}/step{rev}"


HUB_SEP = "/"  # hub ids are org/name; paths use org--name


def slug(model_id):
    """Filesystem-safe name of a hub model id: EleutherAI/pythia-70m → EleutherAI--pythia-70m."""
    return model_id.replace(HUB_SEP, "--")


def model_id(wildcards):
    return wildcards.slug.replace("--", HUB_SEP, 1)


def pythia_revisions(kind):
    """(slug, step) of every revision the weights or embeddings part of the branch analyses."""
    part = PYTHIA.get(kind, {}) if PYTHIA_ON else {}
    return [
        (slug(m), int(s)) for m in part.get("models", []) for s in part.get("steps", [])
    ]


def pythia_paths(kind, suffix):
    return [
        f"{PYTHIA_DIR}/{kind}/{m}/step{s}.{suffix}" for m, s in pythia_revisions(kind)
    ]


def pythia_device_gpu():
    """GPU request of an embedding job (topotrain.devices.wants_gpu of its device)."""
    return int(wants_gpu(PYTHIA.get("embeddings", {}).get("device", "auto")))


def get_pythia_outputs():
    out = []
    if pythia_revisions("weights"):
        out += [
            f"{RESULTS}/tables/pythia_weights.csv",
            f"{RESULTS}/figures/pythia_weights.png",
        ]
    if pythia_revisions("embeddings"):
        out += [f"{RESULTS}/tables/pythia_comparison.csv"]
        out += [f"{RESULTS}/figures/{name}.png" for name in PYTHIA_FIGURES]
    return out


PYTHIA_FIGURES = {
    "pythia_perplexity": "Pythia",
    "pythia_features": "Pythia",
    "pythia_scatter": "Pythia",
    "pythia_rho": "Pythia",
    "pythia_wasserstein": "Pythia",
}
FIGURES_ALL = {
    **FIGURES,
    **PYTHIA_FIGURES,
    "pythia_weights": "Pythia",
    "control_curves": "Positive control",
}


# ---- Your own runs (runs:) --------------------------------------------------------------------
from topotrain.sources.runs import (
    DEFAULT_GLOB,
    RunError,
    layer_options,
    run_checkpoints,
    trainer_losses,
)
from topotrain.report.runs import RUN_FIGURES

RUNS_DIR = f"{RESULTS}/runs"
RUN_ENTRIES = config.get("runs") or {}
RUN_TOPO = f"{RUNS_DIR}/{{run}}/topology/step{{ckpt}}"


def resolve_runs():
    """{run: {step: Checkpoint}}: each entry's checkpoints, listed once while parsing (a local
    folder's glob; a hub revision_pattern against the hub's, or offline the cache's, branches).
    """
    runs = {}
    for name, entry in RUN_ENTRIES.items():
        try:
            runs[name] = {c.step: c for c in run_checkpoints(name, entry)}
        except (RunError, OSError, RuntimeError) as err:  # a HubFetchError too
            raise ConfigError(f"invalid configuration:\n  - {err}") from None
    return runs


RUNS = resolve_runs()


def run_losses(run):
    """(the run's losses file or None, whether it was found rather than given): ``losses:``, else
    the newest checkpoint's trainer_state.json (transformers' Trainer leaves one in each).
    """
    given = RUN_ENTRIES[run].get("losses")
    if given:
        return given, False
    found = trainer_losses(RUNS[run])
    return (str(found), True) if found else (None, False)


def run_path(run, name):
    return f"{RUNS_DIR}/{run}/{name}"


def gone_steps(run):
    """Steps of a local run whose topology (record and diagrams) was computed by an earlier
    invocation but whose checkpoint is no longer there (rotated away by save_total_limit): kept
    in the series, flagged weights_gone."""
    if RUN_ENTRIES[run].get("hub"):
        return []
    found = []
    for record in glob.glob(RUN_TOPO.format(run=run, ckpt="*") + ".json"):
        step = re.search(r"step(\d+)\.json$", record)
        if step and int(step.group(1)) not in RUNS[run]:
            if os.path.exists(record[: -len(".json")] + ".npz"):
                found.append(int(step.group(1)))
    return sorted(found)


GONE = {run: gone_steps(run) for run in RUNS}


def run_steps(run):
    """The run's checkpoint steps, ascending: those listed now and those whose weights are gone."""
    return sorted(set(RUNS[run]) | set(GONE[run]))


def checkpoint_inputs(run, step):
    """A run checkpoint's inputs: its local weight files (all shards), or the fetch record of its
    hub revision."""
    if RUN_ENTRIES[run].get("hub"):
        return [run_path(run, f"revisions/step{step}.json")]
    return list(RUNS[run][step].files)


def get_run_checkpoint(wildcards):
    """A checkpoint's inputs; none when its weights are gone (its record is kept as it is)."""
    if int(wildcards.ckpt) not in RUNS[wildcards.run]:
        return []
    return checkpoint_inputs(wildcards.run, int(wildcards.ckpt))


def get_run_probe(wildcards):
    """The layer map's input: a hub run's first revision (fetched first); none for a local run,
    whose job reads the first checkpoint it finds (so rotation reruns nothing)."""
    if not RUN_ENTRIES[wildcards.run].get("hub"):
        return []
    return checkpoint_inputs(wildcards.run, sorted(RUNS[wildcards.run])[0])


def get_run_revision(wildcards):
    return RUNS[wildcards.run][int(wildcards.ckpt)].revision


def get_run_layer_options(wildcards):
    """The entry's options that decide which matrices are analysed (a param of the layer map's
    job, so a change reruns the run's layer map and topology)."""
    return layer_options(RUN_ENTRIES[wildcards.run])


def get_run_topology_params(wildcards):
    """The spine's topology settings (max_points, seed, maxdim) for a run's checkpoints."""
    topo = config["topology"]
    return dict(
        max_points=topo["max_points"],
        seed=topo.get("seed", 0),
        maxdim=topo.get("maxdim", 1),
    )


def get_run_checkpoint_diagrams(wildcards):
    """The diagram files of a run's listed checkpoints, in step order (run_diagram_series'
    input); those whose weights are gone come from get_run_kept."""
    return [
        f"{RUN_TOPO.format(run=wildcards.run, ckpt=s)}.npz"
        for s in sorted(RUNS[wildcards.run])
    ]


def get_run_kept(wildcards):
    """{step: record path without suffix} of the steps whose weights are gone: read by the run's
    series and feature jobs from disk, not as inputs (no job could remake them)."""
    return {s: RUN_TOPO.format(run=wildcards.run, ckpt=s) for s in GONE[wildcards.run]}


def get_run_feature_inputs(wildcards):
    """The run's topology records, diagram series and layer map, and its losses file if any."""
    run = wildcards.run
    inputs = dict(
        records=[f"{RUN_TOPO.format(run=run, ckpt=s)}.json" for s in sorted(RUNS[run])],
        series=run_path(run, "series.parquet"),
        layers=run_path(run, "layers.json"),
    )
    losses, _ = run_losses(run)
    if losses:
        inputs["losses"] = losses
    return inputs


def get_run_description(wildcards):
    """Where the run comes from, for its REPORT.md section."""
    entry = RUN_ENTRIES[wildcards.run]
    return dict(
        name=wildcards.run,
        path=entry.get("path"),
        glob=entry.get("glob") or DEFAULT_GLOB,
        hub=entry.get("hub"),
        losses=run_losses(wildcards.run)[0],
        losses_found=run_losses(wildcards.run)[1],
    )


def run_figure_outputs():
    """Each run figure as PNG (in the HTML report) and PDF."""
    out = {}
    for name in RUN_FIGURES:
        png = f"{RUNS_DIR}/{{run}}/figures/{name}.png"
        out[f"{name}_png"] = report(png, caption="../report/runs.rst", category="Runs")
        out[f"{name}_pdf"] = f"{RUNS_DIR}/{{run}}/figures/{name}.pdf"
    return out


def get_run_outputs():
    """Each run's feature table, tables, figures and REPORT.md section."""
    return [
        path
        for run in RUNS
        for path in (
            run_path(run, "features.parquet"),
            run_path(run, "REPORT.md"),
            *[run_path(run, f"figures/{f}.png") for f in RUN_FIGURES],
        )
    ]


# ---- Preflight: can the hub or the HF cache serve the jobs about to run? -------------------
# Runs in `onstart`, not at parse time: Snakemake 9 parses this file before it picks the executor
# (DAGApi.__post_init__ → WorkflowApi._workflow in snakemake/api.py), so while parsing
# `workflow.dryrun` (executor_plugin.common_settings.dryrun_exec) is always False. Workflow.execute
# (snakemake/workflow.py) builds the DAG, returns early if there is nothing to do, and calls
# onstart before the scheduler starts the first job, only `if not self.dryrun and not
# self.execution_settings.no_hooks`. --lint, --report, --unlock and --list-* never call execute; jobs
# that re-run the Snakefile (cluster and group jobs) are spawned with --no-hooks
# (snakemake/spawn_jobs.py). Belt and braces: `workflow.is_main_process` (exec_mode is
# ExecMode.DEFAULT, not SUBPROCESS or REMOTE) and not `workflow.touch` (--touch runs no job).
from snakemake.logging import logger

from topotrain.hub import HubNeeds, HubUnavailable, check_hub, hub_needs, revision_name

HUB_CORPUS_RULES = {"prepare_corpus", "pythia_texts"}  # read the corpus dataset
HUB_REVISION_RULES = {
    "fetch_pythia",
    "pythia_weight_topology",
    "pythia_embedding_topology",
}


def get_hub_needs(jobs):
    """What the given jobs read from the hub: the corpus dataset if a corpus job is among them, the
    Pythia revisions of their revision jobs (hub_needs(config) narrowed to the jobs), and the
    revisions their fetch_run_revision jobs resolve (runs:)."""
    needs = hub_needs(config)
    names = {job.rule.name for job in jobs}
    revisions = {
        (model_id(job.wildcards), revision_name(int(job.wildcards.rev)))
        for job in jobs
        if job.rule.name in HUB_REVISION_RULES
    }
    runs = [
        (RUN_ENTRIES[job.wildcards.run]["hub"], get_run_revision(job.wildcards))
        for job in jobs
        if job.rule.name == "fetch_run_revision"
    ]
    pythia = [r for r in needs.revisions if r in revisions]
    return HubNeeds(
        dataset=needs.dataset if names & HUB_CORPUS_RULES else None,
        revisions=tuple(dict.fromkeys(pythia + runs)),
    )


onstart:
    if workflow.is_main_process and not workflow.touch:
        try:
            check_hub(config, get_hub_needs(list(workflow.dag.needrun_jobs())))
        except HubUnavailable as err:
            # the message alone, without a traceback or a line number
            logger.error(str(err))
            sys.exit(1)
