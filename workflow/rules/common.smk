# Config validation and every helper that computes paths or parameters from config.
import os
import re
import shutil
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

from topotrain.config import check_config, checkpoint_steps, layer_patterns, n_params

SCHEMA = os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml")
validate(config, schema=SCHEMA)
with open(SCHEMA) as fh:
    check_config(config, schema=yaml.safe_load(fh))

RESULTS = config["results"].rstrip("/")
MODELS = list(config["models"])
SEEDS = [int(s) for s in config["seeds"]]
STEPS = checkpoint_steps(config["train"])
RUN = "{model}/seed{seed}"
CKPT = f"{RESULTS}/checkpoints/{RUN}/step_{{step}}.safetensors"
TOPO = f"{RESULTS}/topology/{RUN}/step_{{step}}"


wildcard_constraints:
    model="|".join(map(re.escape, MODELS)),
    seed=r"\d+",
    step=r"\d{5}",
    slug=r"[A-Za-z0-9_.-]+--[A-Za-z0-9_.-]+",
    rev=r"\d+",


def step_tag(step):
    return f"{int(step):05d}"


def get_model_arch(wildcards):
    arch = config["models"][wildcards.model]
    return dict(arch, vocab_size=128, context=config["context"])


def get_train_params(wildcards):
    """Training hyper-parameters of one run; threads are left out (they come from the rule)."""
    params = {k: v for k, v in config["train"].items() if k != "threads"}
    return dict(params, seed=int(wildcards.seed))


def get_train_priority(wildcards):
    """Rank of the model by parameter count (largest first): the longest training starts at once
    instead of ending the study alone on one core."""
    sizes = sorted(
        n_params(a["d_model"], a["n_layer"], 128, config["context"])
        for a in config["models"].values()
    )
    arch = config["models"][wildcards.model]
    return sizes.index(
        n_params(arch["d_model"], arch["n_layer"], 128, config["context"])
    )


def uses_gpu():
    """Whether training jobs will run on a GPU: device cuda, or auto with an NVIDIA driver present."""
    device = config["train"].get("device", "auto")
    return device == "cuda" or (
        device == "auto" and shutil.which("nvidia-smi") is not None
    )


def get_topology_params(wildcards):
    topo = config["topology"]
    return dict(
        patterns=layer_patterns(topo),
        max_points=topo["max_points"],
        seed=topo.get("seed", 0),
        maxdim=topo.get("maxdim", 1),
    )


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
                    n_params=n_params(
                        arch["d_model"], arch["n_layer"], 128, config["context"]
                    ),
                    d_model=arch["d_model"],
                    n_layer=arch["n_layer"],
                    n_head=arch["n_head"],
                )
            )
    return runs


def get_final_output():
    """Everything the study produces: feature tables, analysis tables, figures, REPORT.md."""
    return [
        f"{RESULTS}/features/weights.parquet",
        f"{RESULTS}/features/weights_layers.parquet",
        f"{RESULTS}/tables/models.csv",
        f"{RESULTS}/tables/phases.csv",
        f"{RESULTS}/REPORT.md",
        *[
            f"{RESULTS}/figures/{name}.{ext}"
            for name in FIGURES
            for ext in ("png", "pdf")
        ],
        *get_pythia_outputs(),
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


def report_tables():
    """The Markdown tables REPORT.md is assembled from, in reading order."""
    tables = ["models", "best_feature", "correlations", "prediction", "prediction_runs"]
    tables += ["scaling", "phases", "correlations_across_seeds"]
    if pythia_revisions("weights"):
        tables += ["pythia_weights"]
    if pythia_revisions("embeddings"):
        tables += ["pythia_kinds", "pythia_comparison", "pythia_correlations"]
    md = {name: f"{RESULTS}/tables/{name}.md" for name in tables}
    csv = {
        f"{name}_csv": f"{RESULTS}/tables/{name}.csv"
        for name in ("best_feature", "prediction")
    }
    return {**md, **csv}


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
    """GPU request of an embedding job (same rule as training's device)."""
    device = PYTHIA.get("embeddings", {}).get("device", "auto")
    return int(
        device == "cuda"
        or (device == "auto" and shutil.which("nvidia-smi") is not None)
    )


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
FIGURES_ALL = {**FIGURES, **PYTHIA_FIGURES, "pythia_weights": "Pythia"}
