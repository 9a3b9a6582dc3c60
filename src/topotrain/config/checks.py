"""The checks of a configuration that the schema cannot express (one field against another, files
that must exist, names), and values derived from a config.

``check_config`` runs on a config whose defaults are filled and that passed the schema, so that a
bad config fails before any job runs, with a message naming each offending key. The trainer and
the control's model check their own settings with ``section_errors``: the schema's rules and the
same cross-field rules, in one place.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from topotrain.config.coerce import float_integers
from topotrain.config.constants import ALPHA, SEEDS_FOR_ALPHA, VOCAB_SIZE
from topotrain.config.schema import DEFAULTS, invalid_config, load_schema, section_problems

GPT_LAYERS = tuple(DEFAULTS["topology"]["layers"])  # the spine's four linear maps per block
EMBEDDING_LAYERS = ("transformer.wte.weight", "transformer.wpe.weight")  # include_embeddings
GPT_NEOX_LAYERS = tuple(DEFAULTS["pythia"]["weights"]["layers"])  # Pythia's linear maps


class ConfigError(ValueError):
    """A configuration that passes the schema but cannot describe a valid study."""


NAME_MAPS = ("models", "runs")  # name → entry: a config that gives one gives all of its entries
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a model's or run's name: a folder name
NAME_RULE = (
    "use letters, digits, '.', '_' or '-' (no spaces or slashes), starting with a letter or digit"
)


def train_problems(train: dict) -> list[str]:
    """The training settings' cross-field rules: the interval divides steps, warm-up within."""
    problems = []
    if train["steps"] % train["checkpoint_interval"]:
        problems.append(
            f"train.checkpoint_interval={train['checkpoint_interval']} does not divide "
            f"train.steps={train['steps']}"
        )
    if train["warmup_steps"] > train["steps"]:
        problems.append(
            f"train.warmup_steps={train['warmup_steps']} exceeds train.steps={train['steps']}"
        )
    return problems


def control_problems(control: dict) -> list[str]:
    """The control's cross-field rules: heads divide the width, the interval divides steps."""
    problems = []
    if control["width"] % control["heads"]:
        problems.append(
            f"control.width={control['width']!r}: must be a multiple of heads={control['heads']}"
        )
    if control["steps"] % control["interval"]:
        problems.append(
            f"control.interval={control['interval']!r}: must divide steps={control['steps']}"
        )
    return problems


CROSS_FIELD = {"train": train_problems, "control": control_problems}


def check_settings(section: str, settings) -> None:
    """Raise ValueError listing what is wrong with a settings dataclass (TrainConfig,
    ControlConfig) as the config's ``section``; its ``seed`` (one of the config's seeds) aside."""
    values = {k: v for k, v in asdict(settings).items() if k != "seed"}
    if section == "train":  # TrainConfig keeps YAML's true/false for compile as words
        values["compile"] = {"true": True, "false": False}.get(values["compile"], values["compile"])
    if problems := section_errors(section, values):
        raise ValueError("; ".join(problems))


def section_errors(section: str, values: dict) -> list[str]:
    """Everything wrong with ``values`` as the config's ``section``: the schema's rules, then
    (when those pass) the cross-field ones. ``values`` gives every key the cross rules read."""
    problems = section_problems(section, values)
    if not problems and section in CROSS_FIELD:
        problems = CROSS_FIELD[section](values)
    return problems


def check_config(config: dict, base_dir: str | Path = ".", schema: dict | None = None) -> None:
    """Raise ConfigError for what the schema cannot catch: floats for integers, heads vs width,
    checkpoint grid, warm-up, corpus files, empty layer patterns, the runs: entries.

    ``schema`` (default: workflow/schemas/config.schema.yaml) tells which keys take integers.
    """
    problems = float_integers(config, schema or load_schema())
    problems += [
        f"{section}: name {name!r}: {NAME_RULE}"
        for section in NAME_MAPS
        for name in config[section]
        if not NAME.match(str(name))
    ]
    for name, arch in config["models"].items():
        if arch["d_model"] % arch["n_head"]:
            problems.append(
                f"models.{name}: n_head={arch['n_head']} does not divide d_model={arch['d_model']}"
            )
    problems += train_problems(config["train"])
    corpus = config["corpus"]
    if corpus["source"] == "files":
        for key in ("train", "validation"):
            path = corpus.get(key)
            if not path:
                problems.append(f"corpus.{key} must be set when corpus.source is 'files'")
            elif not (Path(base_dir) / path).is_file():
                problems.append(f"corpus.{key}: file {path} does not exist")
    for pattern in config["topology"]["layers"]:
        if not pattern.strip():
            problems.append("topology.layers: empty pattern")
    for name, entry in config["runs"].items():
        problems += run_problems(name, entry, base_dir)
    problems += group_problems(config["runs"], config.get("groups") or {})
    if control_enabled(config):
        problems += control_problems(config["control"])
    problems += confirm_problems(config)
    problems += llc_problems(config)
    problems += removed_problems(config)
    if problems:
        raise ConfigError(invalid_config(problems))


REMOVED = {  # (section, key) → why it went and what replaces it
    ("analysis", "primary_views"): (
        "removed (issue 56): the primary family no longer takes a joint min-p over the views; "
        "each question (moves_with: the co-movement view, ranks: the level view) has its own "
        "verdict, and analysis.bottom_line_question (moves_with or ranks, fixed in the "
        "pre-registration) names the bottom line's; delete the key"
    ),
}


def check_something_to_do(config: dict, branches: Mapping[str, Mapping]) -> None:
    """Raise ConfigError when no input branch is on: the spine off, no runs, Pythia and the
    control off, and no registered branch (``branches``: common.smk's BRANCHES, name → its
    ``outputs``) with an output. A new branch registers itself and needs no line here."""
    on = [spine_enabled(config), bool(config["runs"]), pythia_enabled(config)]
    on += [control_enabled(config), *(bool(b.get("outputs")) for b in branches.values())]
    if not any(on):
        others = "".join(f", no {name}" for name in branches)
        raise ConfigError(
            invalid_config(
                [
                    "spine.enabled is false and there are no runs, no pythia and no control"
                    f"{others}: nothing to do"
                ]
            )
        )


def removed_problems(config: dict) -> list[str]:
    """A removed key still set, named with what replaces it (the schema keeps it, without a
    default, so that the message is this one and not "additional property")."""
    return [
        f"{section}.{key}: {why}"
        for (section, key), why in REMOVED.items()
        if key in (config.get(section) or {})
    ]


def llc_problems(config: dict) -> list[str]:
    """baselines.llc on without devinterp installed: said before any job runs."""
    import importlib.util

    if not config.get("baselines", {}).get("llc", {}).get("enabled"):
        return []
    if importlib.util.find_spec("devinterp") is None:
        return [
            "baselines.llc.enabled is true but devinterp is not installed: pip install "
            '"topotrain[llc]", or set baselines.llc.enabled: false'
        ]
    return []


CONFIRM_SEEDS = {"seeds": ("spine", "seeds"), "control_seeds": ("control", "control.seeds")}


def confirm_problems(config: dict) -> list[str]:
    """The confirmation's rules (confirm:): a branch's confirmation seeds are at least 2 and none
    of its discovery seeds; a named hypothesis belongs to a branch with confirmation seeds."""
    confirm, problems = config["confirm"], []
    discovery = {"seeds": config["seeds"], "control_seeds": config["control"]["seeds"]}
    for key, (_, name) in CONFIRM_SEEDS.items():
        seeds = confirm[key]
        if seeds and len(seeds) < 2:
            problems.append(f"confirm.{key}={seeds}: at least 2 seeds (a between-seed contrast)")
        if shared := sorted(set(seeds) & set(discovery[key])):
            problems.append(
                f"confirm.{key}: seeds {shared} are also discovery seeds ({name}); "
                "confirmation needs fresh seeds"
            )
    for i, named in enumerate(confirm["hypotheses"]):
        key = next(k for k, (branch, _) in CONFIRM_SEEDS.items() if branch == named["branch"])
        if not confirm[key]:
            problems.append(
                f"confirm.hypotheses[{i}] ({named['feature']}): branch {named['branch']} has no "
                f"confirmation seeds (confirm.{key} is empty)"
            )
    return problems + named_problems(confirm["hypotheses"])


def named_problems(hypotheses: list[dict]) -> list[str]:
    """A named hypothesis with a kind (confirm.hypotheses[i].kind) has a name no other has;
    beyond comes with a kind and never holds the feature; not_beyond takes exactly one column."""
    problems, names = [], {}
    for i, h in enumerate(hypotheses):
        at = f"confirm.hypotheses[{i}] ({h['feature']})"
        kind, beyond, name = h.get("kind"), list(h.get("beyond") or []), h.get("name")
        if beyond and not kind:
            problems.append(f"{at}.beyond: needs a kind (tracks or not_beyond)")
        if kind and not name:
            problems.append(f"{at}.name: a hypothesis with a kind needs a name")
        if kind == "not_beyond" and len(beyond) != 1:
            problems.append(f"{at}.beyond: kind not_beyond takes exactly one column, got {beyond}")
        if h["feature"] in beyond:
            problems.append(f"{at}.beyond: holds the feature itself, nothing to go beyond")
        if name and name in names:
            problems.append(f"{at}.name: {name!r} already names confirm.hypotheses[{names[name]}]")
        elif name:
            names[name] = i
    return problems


def control_enabled(config: dict) -> bool:
    """Whether the grokking control (control.enabled) is part of the run."""
    return bool(config["control"]["enabled"])


def spine_enabled(config: dict) -> bool:
    """Whether the paper's study (models × seeds, trained here) is part of the run."""
    return bool(config["spine"]["enabled"])


def pythia_enabled(config: dict) -> bool:
    return bool(config["pythia"]["enabled"])


def group_problems(runs: dict, groups: dict) -> list[str]:
    """What is wrong with the groups of runs: a run in a group without a seed, a seed without a
    group, a group of one run, groups: naming a group no run is in."""
    problems, members = [], {}
    for name, entry in runs.items():
        group, seed = entry.get("group"), entry.get("seed")
        if group and seed is None:
            problems.append(
                f"runs.{name}: in group {group} but no seed: give runs.{name}.seed (an integer)"
            )
        if seed is not None and not group:
            problems.append(f"runs.{name}.seed: only used with group: (seeds of one recipe)")
        if group:
            members.setdefault(group, []).append(name)
    for group, names in members.items():
        if len(names) < 2:
            problems.append(
                f"group {group} has one run ({names[0]}): a between-seed contrast needs at least "
                f"2 seeds of one recipe ({SEEDS_FOR_ALPHA} for p < {ALPHA:g})"
            )
    for group in groups:
        if group not in members:
            known = ", ".join(sorted(members)) or "none"
            problems.append(f"groups.{group}: no run is in group {group} (groups: {known})")
    return problems


def run_problems(name: str, entry: dict, base_dir: str | Path = ".") -> list[str]:
    """What is wrong with one ``runs:`` entry that the schema cannot say (empty: nothing)."""
    key, problems = f"runs.{name}", []
    local, hub = bool(entry.get("path")), bool(entry.get("hub"))
    listed, pattern = bool(entry.get("revisions")), bool(entry.get("revision_pattern"))
    if local == hub:
        problems.append(f"{key}: give either path (a local folder) or hub (a repo id)")
    elif hub and listed == pattern:
        problems.append(
            f"{key}: a hub run needs revisions (a list) or revision_pattern, one of them"
        )
    elif local and (listed or pattern):
        problems.append(f"{key}: revisions and revision_pattern are for hub runs, not path")
    if local and entry.get("keep_weights") is False:
        problems.append(f"{key}.keep_weights: false is for hub runs (your folder is never touched)")
    if hub and entry.get("glob"):
        problems.append(f"{key}: glob is for a local path, not a hub run")
    for field in ("step_regex", "revision_pattern"):
        try:
            groups = re.compile(entry.get(field) or "").groups
        except re.error as err:
            problems.append(f"{key}.{field}: not a regular expression ({err})")
            continue
        if field == "step_regex" and groups > 1:
            problems.append(f"{key}.step_regex: one group (the step), got {groups}")
    if local and not (Path(base_dir) / entry["path"]).is_dir():
        problems.append(f"{key}.path: folder {entry['path']} does not exist")
    for field in ("losses", "config"):
        if entry.get(field) and not (Path(base_dir) / entry[field]).exists():
            problems.append(f"{key}.{field}: {entry[field]} does not exist")
    if entry.get("transposed") and not entry.get("layers"):
        problems.append(f"{key}.transposed: only used with layers: patterns (no config.json)")
    problems += [f"{key}.layers: empty pattern" for p in entry.get("layers", []) if not p.strip()]
    return problems


def checkpoint_steps(train: dict) -> list[int]:
    """Steps at which checkpoints are written: 0, interval, 2·interval, …, steps."""
    return list(range(0, train["steps"] + 1, train["checkpoint_interval"]))


def llc_steps(steps: list[int], every: int) -> list[int]:
    """The checkpoints whose LLC is measured (``baselines.llc.every``): every every-th of
    ``steps`` and the last."""
    return [t for i, t in enumerate(steps) if i % every == 0 or t == steps[-1]]


def layer_patterns(topology: dict) -> list[str]:
    """The fnmatch patterns of the matrices to analyse, embeddings appended when asked for."""
    patterns = list(topology["layers"])
    if topology["include_embeddings"]:
        patterns += [
            e for e in EMBEDDING_LAYERS if not any(fnmatch.fnmatch(e, p) for p in patterns)
        ]
    return patterns


def n_params(d_model: int, n_layer: int, vocab_size: int = VOCAB_SIZE, context: int = 128) -> int:
    """Closed-form parameter count of the GPT family (tied head): (V+T)d + L(12d² + 13d) + 2d."""
    return (
        (vocab_size + context) * d_model + n_layer * (12 * d_model**2 + 13 * d_model) + 2 * d_model
    )
