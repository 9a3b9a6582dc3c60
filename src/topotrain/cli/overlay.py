"""The config overlay ``topotrain analyse`` writes: one runs: entry per PATH (a local folder, or a
hub id with its revisions) holding every key its flags give, the GPT study and Pythia off, and
``groups:`` when the PATHs are seeds of one recipe. Every refusal is a ``CliError`` naming the
flag to change.
"""

from __future__ import annotations

import re
from pathlib import Path

from topotrain.cli_errors import CliError
from topotrain.config import NAME, NAME_RULE

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
SEED_IN_NAME = re.compile(r"seed[-_]?(\d+)", re.IGNORECASE)  # pythia-14m-seed3 → 3
SIGNS = {"+": 1, "-": -1}  # --primary FEATURE:+ / FEATURE:- → {feature, sign}
ANALYSE_KEYS = ("losses", "revisions", "glob", "group", "seeds", "primary")
ANALYSE_KEYS += ("layers", "transposed", "config")  # analyse_config's keywords, as parsed


def run_name(path: str) -> str:
    """A runs: name from a folder or hub id: its last part, other characters as '-'."""
    base = Path(path.rstrip("/")).name or "run"
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", base).lstrip("-_.") or "run"
    return name


def run_entry(path: str, losses: str | None, revisions: list[str] | None, glob: str | None):
    """One runs: entry: a local folder, or a hub id with its revisions."""
    if Path(path).exists():
        entry = {"path": str(Path(path).resolve())}
        if glob:
            entry["glob"] = glob
    elif HUB_ID.match(path):
        if not revisions:
            raise CliError(f"{path} is not a folder here; as a hub id it needs --revisions")
        entry = {"hub": path, "revisions": revisions}
    else:
        raise CliError(f"{path}: no such folder (and not a hub id like org/name)")
    if losses:
        entry["losses"] = str(Path(losses).resolve())
    return entry


def per_path(values: str | list[str] | None, n: int, flag: str) -> list:
    """One value per PATH from ``flag``'s values: one for all, or one each."""
    values = [values] if isinstance(values, str) else list(values or [])
    if len(values) in (0, 1):
        return (values or [None]) * n
    if len(values) != n:
        raise CliError(f"{n} PATHs but {len(values)} {flag} values: give one for all, or one each")
    return values


def architecture_keys(layers, transposed, config: str | None) -> dict:
    """The entry keys that choose a run's matrices: ``layers``, ``transposed``, ``config``."""
    keys = {"layers": list(layers or []), "transposed": list(transposed or [])}
    keys = {key: value for key, value in keys.items() if value}
    if config is not None:
        path = Path(config)
        if not path.exists() and "=" in config:
            raise CliError(
                f"--config {config}: topotrain analyse's --config is the architecture's "
                "config.json; Snakemake's --config cannot be passed through analyse (put the "
                "key in ./config.yaml and use topotrain run)"
            )
        if not path.is_file() and not (path / "config.json").is_file():
            raise CliError(f"--config {config}: no such file (the architecture's config.json)")
        keys["config"] = str(path.resolve())
    return keys


def group_seeds(names: list[str], seeds: list[int] | None) -> list[int]:
    """Each run's seed in its group: ``seeds`` (one per PATH), else the digits after "seed" in
    every run name."""
    if seeds:
        if len(seeds) != len(names):
            raise CliError(f"{len(names)} PATHs but {len(seeds)} --seed values: give one per PATH")
        return list(seeds)
    found = [SEED_IN_NAME.findall(name) for name in names]
    if not all(found):
        lacking = [name for name, digits in zip(names, found, strict=True) if not digits]
        raise CliError(
            f"--group needs each run's seed: the run names {lacking} hold no seed<digits>, so "
            f"pass --seed with one integer per PATH ({len(names)})"
        )
    return [int(digits[-1]) for digits in found]


def primary_item(text: str) -> str | dict:
    """A --primary value: FEATURE (two-sided), or FEATURE:+ / FEATURE:- (one-sided)."""
    feature, sep, sign = text.rpartition(":")
    if not sep:
        return text
    if not feature or sign not in SIGNS:
        raise CliError(f"--primary {text}: give FEATURE (two-sided), FEATURE:+ or FEATURE:-")
    return {"feature": feature, "sign": SIGNS[sign]}


def analyse_config(
    paths: list[str],
    names: list[str] | None,
    losses: str | list[str] | None = None,
    revisions: list[str] | None = None,
    glob: str | None = None,
    *,
    group: str | None = None,
    seeds: list[int] | None = None,
    primary: list[str] | None = None,
    layers: list[str] | None = None,
    transposed: list[str] | None = None,
    config: str | None = None,
) -> dict:
    """The overlay ``analyse`` writes: the GPT study and Pythia off, one runs: entry per path
    (every flag's key in it), and ``groups:`` when ``primary`` names the group's family."""
    names = names or [run_name(p) for p in paths]
    if len(names) != len(paths):
        raise CliError(f"{len(paths)} paths but {len(names)} --name values")
    for name in names:
        if not NAME.match(name):
            raise CliError(f"run name {name!r}: {NAME_RULE}")
    if len(set(names)) < len(names):
        raise CliError(f"two paths give the same run name in {names}: pass --name for each")
    if group is None and (seeds or primary):
        raise CliError(f"--{'seed' if seeds else 'primary'} needs --group NAME")
    if group is not None and not NAME.match(group):
        raise CliError(f"group name {group!r}: {NAME_RULE}")
    each = per_path(losses, len(paths), "--losses")
    shared = architecture_keys(layers, transposed, config)
    runs = {
        name: {**run_entry(path, loss, revisions, glob), **shared}
        for name, path, loss in zip(names, paths, each, strict=True)
    }
    if group is not None:
        for name, seed in zip(names, group_seeds(names, seeds), strict=True):
            runs[name].update(group=group, seed=seed)
    overlay = {"spine": {"enabled": False}, "pythia": {"enabled": False}, "runs": runs}
    if primary:
        overlay["groups"] = {group: {"primary": [primary_item(f) for f in primary]}}
    return overlay
