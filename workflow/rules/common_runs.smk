# Helpers of your own runs (runs:): checkpoints listed once per parse (a hub revision_pattern by
# the run_revisions checkpoint, once, into a file), inputs, outputs.
from topotrain.sources.runs import (
    DEFAULT_GLOB,
    gone_steps,
    layer_options,
    listing,
    listed_runs,
    read_revisions,
    run_losses,
)
from topotrain.report.runs import RUN_FIGURES

RUNS_DIR = f"{RESULTS}/runs"
RUN_ENTRIES = config["runs"]
RUN_TOPO = f"{RUNS_DIR}/{{run}}/topology/step_{{step}}"


LISTED = listed_runs(
    RUN_ENTRIES
)  # {run: {step: Checkpoint}}, a revision_pattern's aside


def checkpoints_of(run):
    """{step: Checkpoint} of a run: listed while parsing, or read from the file its run_revisions
    checkpoint wrote (an input function that calls this makes its job wait for that one).
    """
    if run in LISTED:
        return LISTED[run]
    return read_revisions(checkpoints.run_revisions.get(run=run).output[0])


RUN_LOSSES = {  # (file or None, found rather than given), looked up once per parse
    run: run_losses(entry, LISTED.get(run, {})) for run, entry in RUN_ENTRIES.items()
}


def run_path(run, name):
    return f"{RUNS_DIR}/{run}/{name}"


GONE = {  # a local run's steps whose weights are gone since their topology was computed
    run: (
        gone_steps(run_path(run, "topology"), LISTED[run])
        if run in LISTED and not e.get("hub")
        else []
    )
    for run, e in RUN_ENTRIES.items()
}


def run_steps(run):
    """The run's checkpoint steps, ascending: those listed now and those whose weights are gone."""
    return sorted(set(checkpoints_of(run)) | set(GONE[run]))


def rotation_notes():
    """{run: note} of the saves rotation removed from each local Trainer run (its newest
    trainer_state.json against the checkpoints on disk), from the one listing (LISTED), once per
    parse: said on the terminal here and in the run's REPORT.md section (run_analysis' param).
    """
    from topotrain.sources.rotation import run_rotation_note

    notes = {}
    for run, entry in RUN_ENTRIES.items():
        if run in LISTED and not entry.get("hub"):
            covered = sorted(set(LISTED[run]) | set(GONE[run]))
            notes[run] = run_rotation_note(LISTED[run], covered)
            if notes[run]:
                print(f"runs.{run}: {notes[run]}", file=sys.stderr)
    return notes


ROTATION = rotation_notes()


def checkpoint_inputs(run, step):
    """A run checkpoint's inputs: its local weight files (all shards), or the fetch record of its
    hub revision."""
    if RUN_ENTRIES[run].get("hub"):
        return [run_path(run, f"revisions/step_{step}.json")]
    return list(LISTED[run][step].files)


def get_run_checkpoint(wildcards):
    """A checkpoint's inputs; none when its weights are gone (its record is kept as it is)."""
    if int(wildcards.step) not in checkpoints_of(wildcards.run):
        return []
    return checkpoint_inputs(wildcards.run, int(wildcards.step))


def get_run_probe(wildcards):
    """The layer map's input: a hub run's first revision (fetched first); none for a local run,
    whose job reads its first listed checkpoint (get_run_first: so rotation reruns nothing).
    """
    if not RUN_ENTRIES[wildcards.run].get("hub"):
        return []
    return checkpoint_inputs(wildcards.run, min(checkpoints_of(wildcards.run)))


def get_run_first(wildcards, input):
    """A local run's first listed checkpoint's files (LISTED: the folder is listed once per
    parse), [] for a hub run. A param of (wildcards, input) is derived, so Snakemake does not
    rerun the layer map when rotation changes the first checkpoint."""
    if RUN_ENTRIES[wildcards.run].get("hub"):
        return []
    return list(LISTED[wildcards.run][min(LISTED[wildcards.run])].files)


def get_run_revision(wildcards):
    return checkpoints_of(wildcards.run)[int(wildcards.step)].revision


def get_run_pattern(wildcards):
    """What a hub run's revision_pattern resolves from (run_revisions' param: a change reruns it)."""
    entry = RUN_ENTRIES[wildcards.run]
    return {k: entry.get(k) for k in ("hub", "revision_pattern", "step_regex")}


def get_run_layer_options(wildcards):
    """The entry's options that decide which matrices are analysed (a param of the layer map's
    job, so a change reruns the run's layer map and topology)."""
    return layer_options(RUN_ENTRIES[wildcards.run])


def get_run_topology_params(wildcards):
    """The spine's topology settings (max_points, seed, maxdim, the Rips engine) for a run's
    checkpoints, and WeightWatcher's version when topology.weightwatcher is on."""
    topo = {k: config["topology"][k] for k in ("max_points", "seed", "maxdim")}
    return {**topo, "engine": RIPS_ENGINE, **ww_param()}


def get_run_checkpoint_diagrams(wildcards):
    """The diagram files of a run's listed checkpoints, in step order (run_diagram_series'
    input); those whose weights are gone come from get_run_kept."""
    return [
        f"{RUN_TOPO.format(run=wildcards.run, step=s)}.npz"
        for s in sorted(checkpoints_of(wildcards.run))
    ]


def get_run_kept(wildcards):
    """{step: record path without suffix} of the steps whose weights are gone: read by the run's
    series and feature jobs from disk, not as inputs (no job could remake them)."""
    return {s: RUN_TOPO.format(run=wildcards.run, step=s) for s in GONE[wildcards.run]}


def get_run_feature_inputs(wildcards):
    """The run's topology records, diagram series and layer map, and its losses file if any."""
    run = wildcards.run
    steps = sorted(checkpoints_of(run))
    inputs = dict(
        records=[f"{RUN_TOPO.format(run=run, step=s)}.json" for s in steps],
        series=run_path(run, "series.parquet"),
        layers=run_path(run, "layers.json"),
    )
    losses, _ = RUN_LOSSES[run]
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
        losses=RUN_LOSSES[wildcards.run][0],
        losses_found=RUN_LOSSES[wildcards.run][1],
        rotation=ROTATION.get(wildcards.run),
    )


def run_figure_outputs():
    """Each run figure as PNG (in the HTML report) and PDF."""
    out = {}
    for name in RUN_FIGURES:
        png = f"{RUNS_DIR}/{{run}}/figures/{name}.png"
        out[f"{name}_png"] = report(png, caption="../report/runs.rst", category="Runs")
        out[f"{name}_pdf"] = f"{RUNS_DIR}/{{run}}/figures/{name}.pdf"
    return out


def get_run_releases(wildcards):
    """The release record of each of a hub run's revisions (keep_weights: false)."""
    steps = sorted(checkpoints_of(wildcards.run))
    return [run_path(wildcards.run, f"released/step_{s}.json") for s in steps]


def releasing(run):
    """Whether a run gives its downloaded weights back (a hub run with keep_weights: false)."""
    return bool(RUN_ENTRIES[run].get("hub")) and not RUN_ENTRIES[run]["keep_weights"]


GROUPS_DIR = f"{RESULTS}/groups"
RUN_GROUPS = {}  # group -> its runs, in config order (runs.<name>.group)
for _run, _entry in RUN_ENTRIES.items():
    if _entry.get("group"):
        RUN_GROUPS.setdefault(_entry["group"], []).append(_run)


def group_path(group, name):
    return f"{GROUPS_DIR}/{group}/{name}"


def get_group_inputs(wildcards):
    """A group's member feature tables and each member's latest checkpoint inputs (what it
    records of its training is checked across the seeds)."""
    runs = RUN_GROUPS[wildcards.group]
    return dict(
        tables=[run_path(r, "features.parquet") for r in runs],
        probes=[f for r in runs for f in checkpoint_inputs(r, max(checkpoints_of(r)))],
    )


def get_group_members(wildcards):
    """{run: {seed, probes: how many of the probe inputs are its}} of a group, in config order."""
    return {
        run: dict(
            seed=RUN_ENTRIES[run]["seed"],
            probes=(
                1
                if RUN_ENTRIES[run].get("hub")
                else len(LISTED[run][max(LISTED[run])].files)
            ),
        )
        for run in RUN_GROUPS[wildcards.group]
    }


def get_group_outputs():
    """Each group's tables and REPORT.md section."""
    return [
        group_path(g, name)
        for g in RUN_GROUPS
        for name in ("tables/contrasts.csv", "REPORT.md")
    ]


def get_run_outputs():
    """Each run's feature table, tables, figures and REPORT.md section (and its releases), and
    each group's."""
    releases = [run_path(run, "released.json") for run in RUN_ENTRIES if releasing(run)]
    return (
        releases
        + get_group_outputs()
        + [
            path
            for run in RUN_ENTRIES
            for path in (
                run_path(run, "features.parquet"),
                run_path(run, "REPORT.md"),
                *[run_path(run, f"figures/{f}.png") for f in RUN_FIGURES],
            )
        ]
    )
