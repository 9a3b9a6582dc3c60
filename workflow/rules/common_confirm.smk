# Helpers of the confirmation on fresh seeds (confirm:): a branch's hits on its discovery seeds,
# frozen in tables/<branch>_hypotheses.csv, tested on its confirmation seeds' own feature table.
CONFIRM = config["confirm"]
CONFIRM_SEEDS = {  # branch -> its confirmation seeds (none while the branch is off)
    "spine": [int(s) for s in CONFIRM["seeds"]] if SPINE_ON else [],
    "control": [int(s) for s in CONFIRM["control_seeds"]] if CONTROL_ON else [],
}
CONFIRM_TABLES = (
    {  # branch -> (the discovery seeds' feature table, the confirmation seeds')
        "spine": (FEATURES, f"{RESULTS}/features/confirm/weights.parquet"),
        "control": (
            f"{RESULTS}/features/control.parquet",
            f"{RESULTS}/features/confirm/control.parquet",
        ),
    }
)
HYPOTHESES = f"{RESULTS}/tables/{{branch}}_hypotheses.csv"
CONFIRMATION = f"{RESULTS}/tables/{{branch}}_confirmation.csv"


def confirm_branches():
    """The branches that have confirmation seeds (and are on)."""
    return [branch for branch, seeds in CONFIRM_SEEDS.items() if seeds]


def get_discovery_table(wildcards):
    return CONFIRM_TABLES[wildcards.branch][0]


def get_confirmation_table(wildcards):
    return CONFIRM_TABLES[wildcards.branch][1]


def get_confirm_control_llc():
    """The control's confirmation seeds' LLC tables when baselines.llc is on (none otherwise):
    merged into their feature table as the discovery seeds' are, for the named hypotheses on
    the LLC (workflow/configs/confirm-control-llc.yaml)."""
    if not CONTROL_LLC:
        return []
    return expand(rules.control_llc.output.table, seed=CONFIRM_SEEDS["control"])


def get_named_hypotheses(wildcards):
    """The branch's named hypotheses (confirm.hypotheses), each as the config gives it."""
    return [dict(h) for h in CONFIRM["hypotheses"] if h["branch"] == wildcards.branch]


def get_confirm_outputs():
    """Each confirmed branch's hypotheses and confirmation tables."""
    return [
        path.format(branch=branch)
        for branch in confirm_branches()
        for path in (HYPOTHESES, CONFIRMATION)
    ]


def get_confirm_report_tables():
    """The report's inputs of the section "Confirmed on fresh seeds": <branch>_confirmation_csv
    per confirmed branch."""
    return {
        f"{branch}_confirmation_csv": CONFIRMATION.format(branch=branch)
        for branch in confirm_branches()
    }
