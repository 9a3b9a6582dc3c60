# Helpers of the report: the tables REPORT.md is assembled from, the replication inputs.
import topotrain
from topotrain.config import config_hash
from topotrain.config.preregistration import summary as preregistration_summary
from topotrain.report.markdown import FROM_CSVS, ORDER as REPORT_ORDER


def report_tables(wildcards=None):
    """The Markdown tables REPORT.md is assembled from (the spine's only when spine.enabled;
    none for a section built from CSVs: FROM_CSVS), in any order (report.markdown.compose
    orders them), the CSVs, the calibration suite's table when present, each run's section
    (``runs``) and each registered branch's (``branches``: BRANCHES). An input function: a
    branch's .smk, included after the report's rule, has registered by the time it runs.
    """
    parts = {
        "control": CONTROL_ON,
        "spine": SPINE_ON,
        "pythia_weights": bool(pythia_revisions("weights")),
        "pythia_embeddings": bool(pythia_revisions("embeddings")),
    }
    tables = [n for n, part in REPORT_ORDER if parts[part] and n not in FROM_CSVS]
    md = {name: f"{RESULTS}/tables/{name}.md" for name in tables}
    csv = {
        f"{name}_csv": f"{RESULTS}/tables/{name}.csv"
        for name in (
            "best_feature",
            "prediction",
            "replication",
            "primary",
            "power",
            "associations_summary",
        )
        if SPINE_ON
    }
    if CONTROL_ON:  # the control's section is built from its CSVs
        csv |= {f"{name}_csv": path for name, path in CONTROL_TABLES.items()}
        csv["control_curves_png"] = f"{RESULTS}/figures/control_curves.png"
        csv["control_between_seeds_png"] = (
            f"{RESULTS}/figures/control_between_seeds.png"
        )
    if SPINE_ON:  # NP against its layers' weight variance, in the control's section
        csv["np_variance_csv"] = f"{RESULTS}/tables/np_variance.csv"
        # the answer's figures, under the bottom line (answer_figures)
        csv |= {k: str(v) for k, v in answer_outputs().items() if k.endswith("_png")}
    csv |= get_calibration()
    csv |= get_confirm_report_tables()  # the section "Confirmed on fresh seeds"
    sections = [run_path(r, "REPORT.md") for r in RUN_ENTRIES]
    sections += [group_path(g, "REPORT.md") for g in RUN_GROUPS]  # after the runs
    branches = [branch["section"] for branch in BRANCHES.values()]
    return {**md, **csv, "runs": sections} | (
        {"branches": branches} if branches else {}
    )


def get_calibration():
    """The calibration suite's table when `make calibrate` has written it: the bottom line then
    quotes its false-positive rates (else docs/calibration.md's). The suite is off the default
    path: its table is an input only once present (then kept current like any input)."""
    path = f"{RESULTS}/tables/calibration.csv"
    return {"calibration_csv": path} if SPINE_ON and os.path.exists(path) else {}


def get_provenance():
    """What REPORT.md's header names: the package version that runs (its code, imported from
    src/ or the install), the validated config's hash, the Rips engine resolved (RIPS_ENGINE) and
    the pre-registration's sha256 and this run's departures from it (analysis.preregistration).
    """
    out = dict(
        version=topotrain.__version__,
        config_sha256=config_hash(config),
        engine=RIPS_ENGINE,
    )
    registered = config["analysis"].get("preregistration")
    # its sha256 and how this run departs from it (config/preregistration.py)
    if registered:
        path = os.path.join(workflow.basedir, registered)
        summary = preregistration_summary(path, config)
        out["preregistration"] = summary | {"path": registered}
    return out


REPLICATION_CATEGORY = (
    "1. Replication"  # the HTML report sorts categories by name: this one first
)
# The HTML report's first screen: the bottom line's table and the forest, which the report's
# description (workflow/report/workflow.rst) takes in whole from here.
FRONT_PAGE = f"{RESULTS}/report_front.html"
PAPER_VALUES = os.path.join(workflow.basedir, "workflow", "data", "paper_values.csv")


def get_replication_inputs():
    """The published values and the tables the replication verdicts read (Table 8's Pythia
    weights and Study B's embedding tables only when that part of the branch is on)."""
    names = ["models", "associations", "prediction", "phases", "scaling", "primary"]
    if pythia_revisions("weights"):
        names += ["pythia_weights"]
    if pythia_revisions("embeddings"):
        names += ["pythia_correlations", "pythia_embeddings"]
    tables = {name: f"{RESULTS}/tables/{name}.csv" for name in names}
    return {"paper": PAPER_VALUES, "features": FEATURES, **tables}
