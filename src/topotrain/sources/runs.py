"""The ``runs:`` branch: the user's own checkpoint series → the spine's weight topology.

A run is a local folder of checkpoints (``path`` + ``glob``: ``save_pretrained`` folders such as
Trainer's ``checkpoint-500/``, or weight files, several files of one step being its shards) or a
hub repo's revisions (``hub`` + ``revisions`` or ``revision_pattern``). ``step_regex`` reads the
step from each name (default: the last run of digits). The layers come from the architecture
(``sources.architectures``: every linear map, from ``config.json``) or from ``layers`` patterns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from math import prod
from pathlib import Path

import numpy as np

from topotrain.config import RUN_DEFAULTS
from topotrain.sources.architectures import (
    ArchitectureError,
    WeightMap,
    config_weight_maps,
    oriented_matrices,
    pattern_maps,
    select_maps,
)
from topotrain.sources.weights import lazy_weights, tensor_shapes, weight_files
from topotrain.topology.layers import natural_key

DEFAULT_GLOB = "checkpoint-*"  # transformers.Trainer's checkpoint folders
DEFAULT_STEP_REGEX = RUN_DEFAULTS["step_regex"]  # the schema's: the last run of digits in a name
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")


class RunError(ValueError):
    """A run entry whose checkpoints cannot be listed or analysed; the message names the run."""


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint of a run: its step, its name (folder, file or revision), its local weight
    files (all shards; none for a hub revision) and its hub revision."""

    step: int
    name: str
    files: tuple[str, ...] = ()
    revision: str | None = None


TRAINER_STATE = "trainer_state.json"  # transformers' Trainer leaves one in every checkpoint-*


def newest_trainer_state(checkpoints: Mapping[int, Checkpoint]) -> Path | None:
    """The trainer_state.json beside the newest listed checkpoint's weights that has one, or None:
    the losses a local run holds without ``losses:`` (its log_history covers every step up to it)
    and the saves rotation removed (``sources.rotation``) both read it from the one listing."""
    for step in sorted(checkpoints, reverse=True):
        files = checkpoints[step].files
        if files and (path := Path(files[0]).parent / TRAINER_STATE).is_file():
            return path
    return None


def run_losses(entry: Mapping, checkpoints: Mapping[int, Checkpoint]) -> tuple[str | None, bool]:
    """(the run's losses file or None, whether it was found rather than given): ``losses:``, else a
    local run's newest checkpoint's trainer_state.json (transformers' Trainer leaves one in each);
    a hub run without ``losses:`` has none."""
    if entry.get("losses"):
        return entry["losses"], False
    found = None if entry.get("hub") else newest_trainer_state(checkpoints)
    return (str(found), True) if found else (None, False)


def gone_steps(topology: str | Path, listed: Iterable[int]) -> list[int]:
    """Steps whose topology (``step_<n>.json`` and ``.npz`` in the folder ``topology``) an earlier
    invocation computed but whose checkpoint is not among ``listed`` now (rotated away by
    save_total_limit): kept in the run's series, flagged weights_gone."""
    listed, found = set(listed), []
    for record in Path(topology).glob("step_*.json"):
        step = re.fullmatch(r"step_(\d+)\.json", record.name)
        if step and int(step.group(1)) not in listed and record.with_suffix(".npz").exists():
            found.append(int(step.group(1)))
    return sorted(found)


def step_of(name: str, step_regex: str, label: str) -> int:
    """The step in ``name``: ``step_regex``'s first group (or whole match), searched; RunError when
    it does not match or is no integer."""
    found = re.search(step_regex, name)
    text = (found.group(1) if found.re.groups else found.group(0)) if found else None
    if text is None or not text.isdigit():
        raise RunError(f"{label}: step_regex `{step_regex}` reads no step from {name!r}")
    return int(text)


def local_checkpoints(
    path: str | Path,
    glob: str = DEFAULT_GLOB,
    step_regex: str = DEFAULT_STEP_REGEX,
    label: str = "",
) -> list[Checkpoint]:
    """The checkpoints under ``path`` matching ``glob``, by step: a folder is one checkpoint (its
    weight files: index, shards, one format); files sharing a step are the shards of one."""
    root = Path(path)
    label = label or str(root)
    if not root.is_dir():
        raise RunError(f"{label}: checkpoint folder {root} does not exist")
    found = sorted(root.glob(glob), key=lambda p: natural_key(p.name))
    if not found:
        raise RunError(f"{label}: nothing in {root} matches glob {glob!r}")
    by_step: dict[int, list[Path]] = {}
    for item in found:
        by_step.setdefault(step_of(item.name, step_regex, label), []).append(item)
    return [_checkpoint(step, items, label) for step, items in sorted(by_step.items())]


def _checkpoint(step: int, items: list[Path], label: str) -> Checkpoint:
    folders = [p for p in items if p.is_dir()]
    if folders and len(items) > 1:
        names = [p.name for p in items]
        raise RunError(f"{label}: {names} all read as step {step}: one checkpoint per step")
    if folders:
        files = weight_files(folders[0])
        if not files:
            raise RunError(f"{label}: checkpoint {folders[0]} holds no weight files")
        return Checkpoint(step, folders[0].name, tuple(map(str, files)))
    bad = [p.name for p in items if p.suffix not in WEIGHT_SUFFIXES]
    if bad:
        raise RunError(f"{label}: {bad} are not weight files ({', '.join(WEIGHT_SUFFIXES)})")
    return Checkpoint(step, items[0].name, tuple(str(p) for p in items))


def hub_checkpoints(revisions: Sequence[str], step_regex: str, label: str) -> list[Checkpoint]:
    """One checkpoint per hub revision, by step; two revisions of one step are a RunError."""
    by_step: dict[int, str] = {}
    for revision in revisions:
        step = step_of(revision, step_regex, label)
        if step in by_step:
            raise RunError(
                f"{label}: revisions {by_step[step]!r} and {revision!r} are both step {step}"
            )
        by_step[step] = revision
    return [Checkpoint(s, r, revision=r) for s, r in sorted(by_step.items())]


def run_checkpoints(name: str, entry: Mapping) -> list[Checkpoint]:
    """The checkpoints of a ``runs:`` entry (a hub ``revision_pattern`` asks the hub, or the
    cache offline, for the repo's branches: ``lists_branches``)."""
    label, entry = f"runs.{name}", {**RUN_DEFAULTS, **entry}
    regex = entry["step_regex"]
    if entry.get("path"):
        return local_checkpoints(entry["path"], entry.get("glob") or DEFAULT_GLOB, regex, label)
    revisions = entry.get("revisions") or pattern_revisions(entry, label)
    return hub_checkpoints(revisions, regex, label)


LISTING = ("path", "glob", "step_regex", "hub", "revisions", "revision_pattern")


def listing(entry: Mapping) -> dict:
    """The keys of an entry that decide which checkpoints it has (a job that lists them takes
    only these as its param, so another key's change reruns nothing of it)."""
    return {key: entry[key] for key in LISTING if key in entry}


def listed_runs(entries: Mapping[str, Mapping]) -> dict[str, dict[int, Checkpoint]]:
    """{run: {step: Checkpoint}} of the entries the workflow lists while parsing, which asks no
    hub: a local folder's glob, a hub run's ``revisions:`` (a ``revision_pattern`` is left to its
    run_revisions job). A run that cannot be listed raises ConfigError naming it."""
    from topotrain.config import ConfigError

    runs = {}
    for name, entry in entries.items():
        if lists_branches(entry):
            continue
        try:
            runs[name] = {c.step: c for c in run_checkpoints(name, entry)}
        except (RunError, OSError) as err:
            raise ConfigError(f"invalid configuration:\n  - {err}") from None
    return runs


def lists_branches(entry: Mapping) -> bool:
    """Whether an entry's checkpoints come from a ``revision_pattern`` over a hub repo's branches
    (a hub query: the workflow's run_revisions job resolves it once, into a file)."""
    return bool(entry.get("hub")) and not entry.get("revisions")


def pattern_revisions(entry: Mapping, label: str) -> list[str]:
    """The hub repo's branches that fully match the entry's ``revision_pattern`` (the hub's, or
    offline the cache's), in natural order; a HubFetchError (none match, the hub refused) names
    the run."""
    from topotrain.sources.hub_files import HubFetchError, list_revisions

    try:
        return list_revisions(entry["hub"], entry["revision_pattern"])
    except HubFetchError as err:
        raise HubFetchError(f"{label}: {err}") from err


def revisions_doc(name: str, entry: Mapping, checkpoints: Sequence[Checkpoint]) -> dict:
    """What a hub run's revisions resolve to (``read_revisions`` reads it back): the entry's repo,
    pattern and step regex, and each revision with its step, by step."""
    return {
        "run": name,
        "hub": entry["hub"],
        "revision_pattern": entry.get("revision_pattern"),
        "step_regex": entry.get("step_regex", DEFAULT_STEP_REGEX),
        "revisions": [{"revision": c.revision, "step": c.step} for c in checkpoints],
    }


def read_revisions(path: str | Path) -> dict[int, Checkpoint]:
    """{step: Checkpoint} of a file written from ``revisions_doc``."""
    doc = json.loads(Path(path).read_text())
    return {
        int(r["step"]): Checkpoint(int(r["step"]), r["revision"], revision=r["revision"])
        for r in doc["revisions"]
    }


def layer_options(entry: Mapping) -> dict:
    """The options of an entry that decide which matrices are analysed (the layer map's inputs)."""
    entry = {**RUN_DEFAULTS, **entry}
    keys = ("layers", "transposed", "include_embeddings", "include_head", "config")
    return {key: entry[key] for key in keys}


ADAPTER_CONFIG = "adapter_config.json"  # what PEFT saves beside a LoRA adapter's weights


def unknown_architecture(label: str, files: Sequence[str], shapes: Mapping[str, Sequence]) -> str:
    """The error of a run without a config.json: the ways out as the config's keys, or as
    `topotrain analyse`'s flags when it started the workflow (``CLI_ENV``); for a LoRA/PEFT adapter
    folder (adapter_config.json beside it, or lora_ tensors) the patterns of its A and B factors."""
    from os import environ

    from topotrain.cli_errors import CLI_ENV

    if environ.get(CLI_ENV) == "analyse":
        way_out = (
            "pass --config FILE (the architecture's config.json) or --layers PATTERN [PATTERN ...] "
            "(and --transposed PATTERN for matrices stored (in, out)) to topotrain analyse"
        )
        lora_b, lora_a = "--layers '*lora_B.weight'", "'*lora_A.weight'"
    else:
        way_out = (
            "give the run a `config:` (a config.json) or `layers:` patterns (and `transposed:` "
            "for matrices stored (in, out))"
        )
        lora_b, lora_a = '`layers: ["*lora_B.weight"]`', '`"*lora_A.weight"`'
    text = f"{label}: no config.json beside {files[0]}, so the architecture is unknown: {way_out}"
    beside = Path(files[0]).parent / ADAPTER_CONFIG
    if not beside.is_file() and not any("lora_" in name for name in shapes):
        return text
    return (
        f"{text}; this looks like a LoRA/PEFT adapter: {lora_b} analyses its up-projections "
        f"({lora_a} the down-projections), each stored (out, in)"
    )


def layer_map(
    options: Mapping, files: Sequence[str], config: str | Path | None, label: str
) -> dict:
    """The run's matrices: from the architecture of ``config`` (a config.json or its folder) when
    there is one, else by ``layers`` patterns over the tensors of ``files`` (one checkpoint).
    Returns {"source", "config", architecture info, "layers": [WeightMap dicts]}."""
    shapes = tensor_shapes(files)
    if config is not None:
        maps, info = config_weight_maps(config)
        chosen = select_maps(
            maps, options["layers"], options["include_embeddings"], options["include_head"]
        )
        source = "architecture"
    elif options["layers"]:
        chosen = pattern_maps(shapes, options["layers"], options["transposed"])
        info = {
            "architecture": None,
            "model_type": None,
            "d_model": None,
            "n_layer": None,
            "n_head": None,
            "n_params": int(sum(prod(s) for s in shapes.values())),
        }
        source = "patterns"
    else:
        raise RunError(unknown_architecture(label, files, shapes))
    if not chosen:
        wanted = options["layers"] or "the architecture's linear maps"
        raise RunError(
            f"{label}: no 2-D tensor matches {wanted}; the checkpoint holds {sorted(shapes)[:12]}"
        )
    missing = [m.name for m in chosen if m.name not in shapes]
    if missing:
        raise ArchitectureError(f"{label}: {files[0]} lacks {missing[:5]} of its architecture")
    doc = {"source": source, "config": None if config is None else str(config), **info}
    return {**doc, "layers": [m.to_dict() for m in chosen]}


def config_source(options: Mapping, checkpoint_files: Sequence[str]) -> Path | None:
    """The config.json that describes a run: the entry's ``config``, else the one beside the
    checkpoint's weight files, else None."""
    if options.get("config"):
        return Path(options["config"])
    beside = Path(checkpoint_files[0]).parent / "config.json"
    return beside if beside.is_file() else None


def run_matrices(files: Sequence[str], layers: Mapping, label: str) -> Mapping[str, np.ndarray]:
    """One checkpoint of a run as its layer map's matrices, read one at a time when looked up
    (Conv1D ones transposed: rows are output neurons)."""
    maps = [WeightMap(**m) for m in layers["layers"]]
    tensors = lazy_weights(files, label, names={m.name for m in maps})  # one at a time
    return oriented_matrices(maps, tensors, label)
