"""Jobs of the ``runs:`` branch: list a hub run's revisions, fetch one, find a run's matrices, the
topology of one checkpoint, a run's feature tables, and its analysis (tables, figures, its REPORT.md
section)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from topotrain.jobs.common import (
    _read_json,
    _release,
    _tables,
    _write_json,
    comove_design,
    log,
)


def run_revisions_job(name: str, entry: dict, out: str) -> None:
    """A hub run's ``revision_pattern`` resolved once (the hub's, or offline the cache's, branches
    that match it, and their steps) → JSON, read by the workflow for the run's per-revision jobs."""
    from topotrain.hub import summarise
    from topotrain.sources.runs import revisions_doc, run_checkpoints

    found = run_checkpoints(name, entry)
    _write_json(out, revisions_doc(name, entry, found))
    log.info(
        "runs.%s: %s branches matching %r: %s",
        name,
        entry["hub"],
        entry.get("revision_pattern"),
        summarise([c.revision for c in found]),
    )


def fetch_run_revision_job(repo: str, revision: str, step: int, out: str) -> None:
    """Resolve one hub revision of a run into the HF cache (one weight format);
    record where it is."""
    from topotrain.sources.hub_files import fetch_snapshot

    info = fetch_snapshot(repo, revision)
    _write_json(out, {**info, "step": int(step)})
    log.info("%s %s (step %d) → %s", repo, revision, step, info["snapshot"])


def checkpoint_files(inputs: list[str]) -> tuple[list[str], dict[str, str] | None, str]:
    """(weight files, their sha256 when a hub record gives them, a label) of one checkpoint's
    inputs: its local weight files, or the one JSON record of a fetched hub revision."""
    if len(inputs) == 1 and inputs[0].endswith(".json"):
        record = _read_json(inputs[0])
        files = [str(Path(record["snapshot"]) / f) for f in record["weights"]]
        label = f"{record['repo']}@{record['revision']} (commit {record['commit']})"
        return files, dict(record["sha256"]), label
    return list(inputs), None, str(Path(inputs[0]).parent if len(inputs) > 1 else inputs[0])


def run_layers_job(
    checkpoint: list[str],
    options: dict,
    name: str,
    out: str,
    entry: dict | None = None,
    first: list[str] | None = None,
) -> None:
    """The run's layer map (which matrices, stored how) from one checkpoint: by architecture when a
    config.json describes it, else by the entry's patterns. ``checkpoint``: a hub run's fetched
    first revision; without it (a local run), ``first``, the files of the first checkpoint of the
    workflow's one listing of ``entry``'s folder."""
    from topotrain.sources.runs import config_source, layer_map

    checkpoint = checkpoint or first
    if not checkpoint:
        raise ValueError(f"runs.{name}: no checkpoint to read the layer map from ({entry})")
    files, _, label = checkpoint_files(checkpoint)
    doc = layer_map(options, files, config_source(options, files), f"runs.{name} ({label})")
    _write_json(out, doc)
    log.info(
        "runs.%s: %d matrices (%s, %s) from %s, listed by %s",
        name,
        len(doc["layers"]),
        doc["source"],
        doc.get("architecture") or "no config",
        label,
        entry,
    )


def run_checkpoint_topology(
    files: Sequence[str], layers: Mapping, label: str, settings, n_threads: int | None = None
):
    """The Record of one checkpoint of a run: its layer-map matrices (``sources.runs.run_matrices``)
    through the spine's ``jobs.topology.measure`` (``TopologySettings.from_config(settings)``),
    its layers with WeightWatcher's ``ww_*`` fields when the settings' ``weightwatcher``."""
    from topotrain.jobs.topology import measure, with_ww_columns
    from topotrain.sources.runs import run_matrices
    from topotrain.topology.settings import TopologySettings

    settings = TopologySettings.from_config(settings, n_threads=n_threads)
    return with_ww_columns(*measure(run_matrices(files, layers, label), ["*"], settings, label))


def run_weight_topology_job(
    checkpoint: list[str], layers: str, params: dict, out: dict[str, str], threads: int = 1
) -> None:
    """Weight topology of one checkpoint of a run → JSON record (with its files' sha256) + npz."""
    from topotrain.io import write_record
    from topotrain.sources.hub_files import weight_hashes

    if not checkpoint:
        from topotrain.sources.runs import RunError

        raise RunError(
            f"{out['record']}: checkpoint step {params['step']} was deleted after its topology "
            "was computed, so it cannot be recomputed under the new settings; delete "
            f"{out['record']} (and its .npz) to drop the step from the run"
        )
    files, hashes, label = checkpoint_files(checkpoint)
    rec = run_checkpoint_topology(files, _read_json(layers), label, params["topology"], threads)
    hashes = weight_hashes(files) if hashes is None else hashes
    doc = {"checkpoint": label, "step": params["step"], "files": files, "sha256": hashes}
    doc |= {"params": rec.params, "layers": rec.layers}
    write_record(out["record"], out["diagrams"], doc, rec.diagrams)
    log.info("%s: %d layers", label, len(rec.layers))


def run_diagram_series_job(diagrams: list[str], params: dict, out: dict[str, str]) -> None:
    """A run's diagram series: the spine's (``diagram_series_job``) over its checkpoints, those
    whose weights are gone read from their kept records."""
    from topotrain.jobs.topology import diagram_series_job

    diagram_series_job(diagrams, params, out)


def run_features_job(inputs: dict, params: dict, out: dict[str, str]) -> None:
    """A run's feature tables (spine columns, losses aligned, identical weights checked first)."""
    from topotrain.analysis.tables.aggregate import table_writers
    from topotrain.analysis.tables.runs import run_tables
    from topotrain.io import atomic_write_all
    from topotrain.jobs.common import with_kept
    from topotrain.sources import records as rec
    from topotrain.sources.identity import check_identical_steps
    from topotrain.sources.losses import align_losses, coverage, read_losses

    name, steps = params["name"], params["steps"]
    docs = rec.read_run_records(
        with_kept(list(inputs["records"]), steps, params.get("kept"), ".json")
    )
    hashes = rec.record_hashes(docs, steps)
    allow = params["allow_identical_steps"]
    flags = check_identical_steps(f"runs.{name}", hashes, allow, section=f"runs.{name}")
    losses = None
    if losses_file := inputs.get("losses"):  # a run without logged losses has none
        losses = align_losses(read_losses(losses_file), steps)
        log.info(
            "runs.%s: logged values per column over %d checkpoints: %s",
            name,
            len(steps),
            coverage(losses),
        )
    meta = _read_json(inputs["layers"])
    series = inputs.get("series")
    series = rec.read_series([series], [{"model": name, "seed": 0}]) if series else None
    table, layers = run_tables(name, docs, steps, meta, losses, series, flags)
    gone = {int(step) for step in params.get("kept") or {}}
    table.insert(table.columns.get_loc("step") + 1, "weights_gone", table["step"].isin(gone))
    if gone:
        log.warning(
            "runs.%s: the weights of steps %s are gone (deleted after their topology was "
            "computed): their records are kept, flagged weights_gone",
            name,
            sorted(gone),
        )
    writers = table_writers(table, out["table"], out["table_csv"])
    atomic_write_all({**writers, **table_writers(layers, out["layers"], out["layers_csv"])})
    log.info("runs.%s: %d checkpoints, %d layer rows", name, len(table), len(layers))


def run_analysis_job(inputs: dict[str, str], params: dict, out: dict[str, str]) -> None:
    """A run's associations with its logged losses, phases, figures and REPORT.md section."""
    import pandas as pd

    from topotrain.analysis.dynamics.runs import run_analysis
    from topotrain.io import atomic_write_text
    from topotrain.report.runs import RUN_FIGURES, figure_run, run_section

    table = pd.read_parquet(inputs["table"])
    assoc, summary, phases, notes = run_analysis(
        table, params["n_resamples"], params["seed"], params["threshold"], params["n_bkps"]
    )
    if note := params.get("rotation"):  # the workflow's one reading of it (a local run's)
        log.info("runs.%s: %s", params["name"], note)
        notes.append(note)
    _tables(out, "associations", assoc, f"runs.{params['name']}: associations with loss")
    _tables(out, "summary", summary, f"runs.{params['name']}: beyond the clock")
    _tables(out, "phases", phases, f"runs.{params['name']}: phases")
    for figure, features in RUN_FIGURES.items():
        figure_run(table, features, out[f"{figure}_png"], out[f"{figure}_pdf"])
    layers = _read_json(inputs["layers"])
    text = run_section(params, table, layers, assoc, summary, phases, notes, out)
    atomic_write_text(out["section"], text)


def release_run_weights_job(inputs: dict, out: str) -> None:
    """Remove the weight blobs one hub revision's fetch downloaded (the run's keep_weights:
    false), once its record is written; record which. Blobs the cache held, or that another
    revision links to, stay."""
    _release(inputs, out)


def run_released_job(released: list[str], out: str) -> None:
    """One run's releases in one file: each revision and the blobs removed for it."""
    docs = [_read_json(path) for path in released]
    _write_json(out, {"revisions": docs, "removed": sum(len(d["removed"]) for d in docs)})


def run_group_job(inputs: dict, params: dict, out: dict[str, str]) -> None:
    """The group's members, between-seed contrasts and REPORT.md section. ``inputs``: the
    members' feature tables (``tables``, in the order of ``params["members"]``) and each member's
    latest checkpoint inputs (``probes``, ``params["members"][run]["probes"]`` of them each),
    read for what they record of the training (``analysis.inference.groups.check_recorded``)."""
    comove_design(params)
    import pandas as pd

    from topotrain.analysis.inference.groups import (
        check_recorded,
        group_contrasts,
        group_frame,
        power_note,
    )
    from topotrain.io import atomic_write_text
    from topotrain.report.groups import group_section
    from topotrain.sources.checkpoint import recorded_training

    group, members = params["group"], params["members"]
    runs = list(members)
    tables = {r: pd.read_parquet(p) for r, p in zip(runs, inputs["tables"], strict=True)}
    seeds = {r: members[r]["seed"] for r in runs}
    df, table, notes = group_frame(group, tables, seeds)
    probes, start = {}, 0
    for run in runs:
        n = members[run]["probes"]
        probes[run], start = list(inputs["probes"][start : start + n]), start + n
    recorded = {r: recorded_training(checkpoint_files(probes[r])[0]) for r in runs}
    check_recorded(group, recorded, dict(zip(table["run"], table["model"], strict=True)))
    checked = sorted({k for r in recorded.values() for k in r})
    contrasts = group_contrasts(df, params["primary"], params["sesoi"], params["seed"])
    power = power_note(df)
    for note in [*notes, power]:
        log.info("group %s: %s", group, note)
    _tables(out, "members", table, f"group {group}: its seeds")
    _tables(out, "contrasts", contrasts, f"group {group}: between-seed contrasts")
    text = group_section(group, table, contrasts, notes, power, checked, params["primary"])
    atomic_write_text(out["section"], text)
    group_between_seeds(df, group, params, out, contrasts)
    log.info(
        "group %s: %d runs, %d sizes, %d contrast rows (%d primary)",
        group,
        len(runs),
        df["model"].nunique(),
        len(contrasts),
        int((contrasts["role"] == "primary").sum()),
    )


def group_between_seeds(df, group: str, params: dict, out: dict[str, str], contrasts) -> None:
    """The group's between-seed picture: each primary feature (its most significant exploratory
    one when none is named) per size against the loss, per view (``labelled_points``)."""
    from topotrain.analysis.inference.groups import group_targets, primary_items
    from topotrain.analysis.inference.seed_points import group_views, labelled_points
    from topotrain.report.answer import figure_between_seeds
    from topotrain.report.plots import _label

    features = [f for f, _ in primary_items(params["primary"])]
    if not features and len(contrasts) and contrasts["p"].notna().any():
        features = [contrasts.loc[contrasts["p"].idxmin(), "feature"]]  # exploratory: the lead
    labels = {f: _label(f) for f in features}
    points = labelled_points(df, labels, group_views(group_targets(df)))
    seeds = int(df.groupby("model")["seed"].nunique().min()) if len(df) else 0
    design = {"seeds": seeds, "sesoi": params["sesoi"], "sesoi_co": params["sesoi_co"]}
    design |= {"models": list(dict.fromkeys(points["model"])), "unclaimed": "your seeds"}
    named = "" if params["primary"] else " (no primary feature named: the exploratory lead)"
    title = f"Group {group}: " + (", ".join(features) or "no feature to show") + named
    figure_between_seeds(points, "", design, out["between_seeds_png"], title=title)


# Each rule's adapter, <rule>_rule(sm): what the rule hands its job, unpacked from the snakemake
# object (workflow/scripts/job.py runs every rule through jobs.run_rule, which calls it).


def fetch_run_revision_rule(sm) -> None:
    fetch_run_revision_job(sm.params.repo, sm.params.revision, sm.params.step, sm.output[0])


def release_run_weights_rule(sm) -> None:
    release_run_weights_job(dict(sm.input.items()), sm.output[0])


def run_analysis_rule(sm) -> None:
    params = {**sm.params.run, **sm.params.analysis}
    run_analysis_job(dict(sm.input.items()), params, dict(sm.output.items()))


def run_diagram_series_rule(sm) -> None:
    run_diagram_series_job(list(sm.input), dict(sm.params.items()), dict(sm.output.items()))


def run_features_rule(sm) -> None:
    run_features_job(dict(sm.input.items()), dict(sm.params.items()), dict(sm.output.items()))


def run_group_rule(sm) -> None:
    run_group_job(
        {"tables": list(sm.input.tables), "probes": list(sm.input.probes)},
        dict(sm.params.items()),
        dict(sm.output.items()),
    )


def run_layers_rule(sm) -> None:
    run_layers_job(
        list(sm.input),
        sm.params.options,
        sm.wildcards.run,
        sm.output[0],
        sm.params.entry,
        sm.params.first,
    )


def run_released_rule(sm) -> None:
    run_released_job(list(sm.input), sm.output[0])


def run_revisions_rule(sm) -> None:
    run_revisions_job(sm.wildcards.run, dict(sm.params.entry), sm.output[0])


def run_weight_topology_rule(sm) -> None:
    run_weight_topology_job(
        list(sm.input.checkpoint),
        sm.input.layers,
        dict(sm.params.items()),
        dict(sm.output.items()),
        sm.threads,
    )
