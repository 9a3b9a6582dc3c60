# Helpers of the grokking positive control (control:).
CONTROL = config["control"]
CONTROL_ON = control_enabled(config)
CONTROL_DIR = f"{RESULTS}/control"
CONTROL_SEEDS = [int(s) for s in CONTROL["seeds"]] if CONTROL_ON else []
CONTROL_STEPS = (
    list(range(0, CONTROL["steps"] + 1, CONTROL["interval"])) if CONTROL_ON else []
)
CONTROL_RUN = f"{CONTROL_DIR}/seed{{seed}}"
CONTROL_TABLES = {
    name: f"{RESULTS}/tables/{name}.csv"
    for name in ("control", "control_seeds", "control_verdicts", "control_diagnostics")
}
CONTROL_WW = CONTROL_ON and config["topology"]["weightwatcher"]
CONTROL_KNOBS = [
    "p", "train_frac", "width", "heads", "mlp", "steps", "interval", "lr", "weight_decay", "beta2",
]  # fmt: skip


def get_control_outputs():
    """The control's tables and figure when control.enabled (nothing otherwise)."""
    if not CONTROL_ON:
        return []
    figures = [f"{RESULTS}/figures/control_curves.{ext}" for ext in ("png", "pdf")]
    return [*CONTROL_TABLES.values(), *figures]


CONTROL_LLC = CONTROL_ON and config["baselines"]["llc"]["enabled"]
CONTROL_LLC_STEPS = llc_steps(CONTROL_STEPS, config["baselines"]["llc"]["every"])


def get_control_llc(wildcards=None):
    """Every seed's LLC table when baselines.llc is on (none otherwise)."""
    if not CONTROL_LLC:
        return []
    return expand(rules.control_llc.output.table, seed=CONTROL_SEEDS)


def get_control_ww(wildcards=None):
    """Every seed's WeightWatcher table when topology.weightwatcher is on (none otherwise)."""
    if not CONTROL_WW:
        return []
    return expand(rules.control_weightwatcher.output[0], seed=CONTROL_SEEDS)


def get_control_ww_params(wildcards):
    """What a seed's WeightWatcher table depends on: every 2-D matrix, the steps, the package."""
    return dict(
        patterns=["*"],
        steps=list(CONTROL_STEPS),
        weightwatcher=package_version("weightwatcher"),
    )
