# Config validation and every helper that computes paths or parameters from config.
import glob
import importlib.metadata
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
    check_something_to_do,
    checkpoint_steps,
    llc_steps,
    coerce_config,
    control_enabled,
    fill_defaults,
    invalid_config,
    layer_patterns,
    n_params,
    order_like_schema,
    schema_problems,
    spine_enabled,
)
from topotrain.devices import Roster, wants_ensemble, wants_gpu
from topotrain.sources.corpus import VOCAB_SIZE
from topotrain.topology import registry
from topotrain.topology.vietoris_rips import resolve_engine


def package_version(name):
    """An installed package's version (a rule's params: a new version reruns its jobs), or
    "not installed" (the job then stops, saying how to install it or turn it off)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def ww_param():
    """{"weightwatcher": its version} when topology.weightwatcher is on, else {}: a run's or a
    Pythia revision's topology job then adds WeightWatcher's fields to its record."""
    if not config["topology"]["weightwatcher"]:
        return {}
    return {"weightwatcher": package_version("weightwatcher")}


SCHEMA = os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml")
with open(SCHEMA) as fh:
    CONFIG_SCHEMA = yaml.safe_load(fh)
# In place (rules read this dict): --config gives nested values as strings; the schema's defaults
# fill what the config leaves out; --config puts its keys first, so they are put in schema order.
coerce_config(config, CONFIG_SCHEMA)
fill_defaults(
    config, CONFIG_SCHEMA
)  # each default a copy (validate's would share one object)
# A config the schema refuses stops here in a line per problem naming its key; with --verbose,
# Snakemake's own report below (the schema and the config in full).
CONFIG_PROBLEMS = schema_problems(config, CONFIG_SCHEMA)
if CONFIG_PROBLEMS and not getattr(workflow.output_settings, "verbose", False):
    raise ConfigError(invalid_config(CONFIG_PROBLEMS))
validate(config, schema=SCHEMA, set_default=True)
order_like_schema(config, CONFIG_SCHEMA)
check_config(config, schema=CONFIG_SCHEMA)

RESULTS = config["results"].rstrip("/")
# The co-movement's design, as params of every rule whose job reaches the co-movement view (so a
# change reruns them): jobs.run_rule sets it in the job's process (jobs.common.comove_design).
COMOVE_PARAMS = dict(
    horizon=config["analysis"]["horizon"],
    comove_from=config["analysis"]["comove_from"],
    warmup_steps=config["train"]["warmup_steps"],
)
# The Vietoris–Rips engine every topology job runs, resolved once: auto → giotto-ph (the `fast`
# extra) when importable here, unless jobs run in the conda envs (envs/*.yaml hold ripser only).
CONDA_JOBS = "CONDA" in {m.name for m in workflow.deployment_settings.deployment_method}
RIPS_ENGINE = resolve_engine(
    config["topology"]["engine"], fast=None if not CONDA_JOBS else False
)
SPINE_ON = spine_enabled(config)  # the paper's study, trained here (spine.enabled)
MODELS = list(config["models"]) if SPINE_ON else []
SEEDS = [int(s) for s in config["seeds"]]
STEPS = checkpoint_steps(config["train"])
TRAINING = "{model}/seed{seed}"  # one (model, seed) of the spine, trained here
CKPT = f"{RESULTS}/checkpoints/{TRAINING}/step_{{step}}.safetensors"
TOPO = f"{RESULTS}/topology/{TRAINING}/step_{{step}}"
GRAD = f"{RESULTS}/topology/{TRAINING}/grad_{{step}}"  # topology of the probe-batch gradients


wildcard_constraints:
    model="|".join(map(re.escape, MODELS)),
    seed=r"\d+",
    step=r"\d+",  # every branch names a checkpoint step_{step} (the spine pads to 5 digits)
    slug=r"[A-Za-z0-9_.-]+--[A-Za-z0-9_.-]+",
    run="|".join(map(re.escape, config["runs"])) or "(?!)",


# Input branches that register themselves (docs/layout.md's recipe): a branch's .smk adds
# BRANCHES["<name>"] = dict(outputs=[its files], section=its REPORT.md section), then the study
# asks for the outputs (get_final_output) and REPORT.md appends the section (report_tables).
BRANCHES = {}


def get_final_output():
    """Everything the study produces: feature tables, analysis tables, figures, REPORT.md (the
    spine's when spine.enabled, the Pythia branch's, each run's, each registered branch's).
    Called once every branch has registered (the default target's input): a config with no
    branch on stops here.
    """
    check_something_to_do(config, BRANCHES)
    spine = [
        f"{RESULTS}/features/weights.parquet",
        f"{RESULTS}/features/weights_layers.parquet",
        f"{RESULTS}/tables/models.csv",
        f"{RESULTS}/tables/phases.csv",
        f"{RESULTS}/tables/power.csv",
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
        *get_confirm_outputs(),
        *[path for branch in BRANCHES.values() for path in branch["outputs"]],
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


def answer_outputs():
    """The answer's figures, PNG (first in the HTML report) and PDF: every effect against Δ, then
    each primary claim's between-seed picture (one caption for the three), then β_co per horizon H
    (exploratory) with its table."""
    out = {"horizon_profile_csv": f"{RESULTS}/tables/horizon_profile.csv"}
    for name, caption in (
        [("effects_forest", "effects_forest")]
        + [(f"between_seeds_{c}", "between_seeds") for c in registry.claims()]
        + [("horizon_profile", "horizon_profile")]
    ):
        png = f"{RESULTS}/figures/{name}.png"
        out[f"{name}_png"] = report(
            png, caption=f"../report/{caption}.rst", category="Answer"
        )
        out[f"{name}_pdf"] = f"{RESULTS}/figures/{name}.pdf"
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
    "control_between_seeds": "Positive control",
}
