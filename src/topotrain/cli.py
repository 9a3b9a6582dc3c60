"""The ``topotrain`` command: the workflow from any folder.

- ``topotrain init [DIR]``: the default config.yaml (commented) into DIR;
- ``topotrain run [--cores N] [SNAKEMAKE ARGS …]``: the workflow on the config where you stand
  (the schema's defaults fill in whatever it leaves out, so an overlay of just ``runs:``
  works); a failed job is one line, ``topotrain: <cause> (log: <path>)`` (``cli_errors``);
- ``topotrain analyse PATH [PATH …] [--name N] [--losses F …] [--group G --seed S … --primary F …]
  [--layers P …] [--transposed P …] [--config FILE]``: checkpoint folders (or hub ids with
  ``--revisions``) as ``runs:`` entries, every key an entry can say; the GPT study and Pythia
  off; the config it used is written to ./config.yaml, so ``topotrain run`` repeats it;
- ``topotrain report``: Snakemake's HTML report of the results (``results/report.html``).

The workflow (Snakefile, config.yaml, workflow/, envs/, profiles/) comes from the installed wheel
(``topotrain/_workflow``, see setup.py) or, in a checkout, from the repository.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import yaml

from topotrain.cli_errors import CLI_ENV, filtered
from topotrain.config import NAME, NAME_RULE
from topotrain.progress import with_display

BUNDLE = Path(__file__).resolve().parent / "_workflow"  # in a built wheel
CHECKOUT = Path(__file__).resolve().parents[2]  # src/topotrain/cli.py → the repository
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
SEED_IN_NAME = re.compile(r"seed[-_]?(\d+)", re.IGNORECASE)  # pythia-14m-seed3 → 3
SIGNS = {"+": 1, "-": -1}  # --primary FEATURE:+ / FEATURE:- → {feature, sign}
ANALYSE_KEYS = ("losses", "revisions", "glob", "group", "seeds", "primary")
ANALYSE_KEYS += ("layers", "transposed", "config")  # analyse_config's keywords, as parsed


class CliError(SystemExit):
    """A usage error: exits with status 2 and the message on stderr."""

    def __init__(self, message: str) -> None:
        print(f"topotrain: {message}", file=sys.stderr)
        super().__init__(2)


def workflow_dir() -> Path:
    """The folder holding the Snakefile: the wheel's bundle, else the checkout."""
    for base in (BUNDLE, CHECKOUT):
        if (base / "Snakefile").is_file() and (base / "workflow" / "rules").is_dir():
            return base
    raise CliError(f"no workflow found in {BUNDLE} or {CHECKOUT}: reinstall topotrain")


def init(directory: str, force: bool = False) -> Path:
    """Write the default config.yaml into ``directory`` (never over an existing one unless
    ``force``); returns its path."""
    target = Path(directory) / "config.yaml"
    if target.exists() and not force:
        raise CliError(f"{target} exists; edit it, or pass --force to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text((workflow_dir() / "config.yaml").read_text())
    print(f"wrote {target} (the defaults; every key is documented inline)")
    return target


def snakemake_command(cores: int, args: list[str], directory: str = ".") -> list[str]:
    """The Snakemake command line ``run`` executes."""
    snakefile = workflow_dir() / "Snakefile"
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(snakefile),
        "--directory",
        directory,
        "--cores",
        str(cores),
        *args,
    ]


def run(
    cores: int,
    args: list[str],
    directory: str = ".",
    env: dict | None = None,
    plain: bool = False,
) -> int:
    """Run the workflow in ``directory`` (the progress display unless ``plain``,
    ``with_display``); returns Snakemake's exit status."""
    cmd = snakemake_command(cores, with_display(args, plain), directory)
    print("running:", " ".join(cmd[2:]), flush=True)
    return filtered(cmd, directory, env)


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


def analyse(
    paths, names, cores: int, args: list[str], force: bool = False, plain: bool = False, **entry
) -> int:
    """Write ./config.yaml for ``paths`` and run the workflow on it; its jobs' errors name this
    command's flags (``CLI_ENV``)."""
    config = analyse_config(paths, names, **entry)
    text = "# written by `topotrain analyse`; `topotrain run` repeats the analysis\n"
    text += yaml.safe_dump(config, sort_keys=False)
    target = Path("config.yaml")
    if target.exists() and target.read_text() != text and not force:
        raise CliError("./config.yaml exists and differs: run in an empty folder, or --force")
    target.write_text(text)
    print(f"wrote {target.resolve()}")
    return run(cores, args, env={**os.environ, CLI_ENV: "analyse"}, plain=plain)


DEMO = ".test"  # the demo study: its config (config/config.yaml) and corpus (data/)


def demo(directory: str, cores: int, args: list[str], plain: bool = False) -> int:
    """The demo study (``.test/``: two tiny models, a 2,000-character corpus) end to end in
    ``directory``: its corpus copied there (unless it is the checkout), the workflow run with its
    config, then the HTML report; REPORT.md's path printed. Snakemake's exit status."""
    import shutil

    source = workflow_dir() / DEMO
    if not (source / "config" / "config.yaml").is_file():
        raise CliError(f"no demo study in {source}: reinstall topotrain")
    target = Path(directory)
    if target.resolve() != workflow_dir().resolve():
        shutil.copytree(source / "data", target / DEMO / "data", dirs_exist_ok=True)
    config = ["--configfile", str(source / "config" / "config.yaml"), "--replace-workflow-config"]
    status = run(cores, [*config, *args], directory, plain=plain)
    if status == 0:
        status = run(1, [*config, "--report", "results/report.html"], directory)
    if status == 0:
        done = (target / "results").resolve()
        print(f"demo: {done / 'REPORT.md'} and {done / 'report.html'}")
    return status


def report(args: list[str]) -> int:
    """Snakemake's HTML report of the results in the current folder."""
    status = run(1, ["--report", "results/report.html", *args])
    if status == 0:
        print(f"report: {Path('results/report.html').resolve()}")
    return status


ANALYSE_HELP = """Checkpoint folders (or hub ids with --revisions) as runs: entries, the GPT
study and Pythia off; ./config.yaml gets the config it used. Options it does not know go to
Snakemake (-n, --profile …), except Snakemake's --config: here --config is the architecture's
config.json. Give PATHs first: --layers and the other many-valued options take every word after
them."""


PLAIN_HELP = "Snakemake's own output (a block per job) instead of the progress display"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="topotrain", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("init", help="write the default config.yaml into DIR")
    i.add_argument("directory", nargs="?", default=".")
    i.add_argument("--force", action="store_true", help="overwrite an existing config.yaml")
    r = sub.add_parser("run", help="run the workflow on ./config.yaml (defaults underneath)")
    r.add_argument("--cores", type=int, default=1)
    r.add_argument("--plain", action="store_true", help=PLAIN_HELP)
    a = sub.add_parser(
        "analyse",
        aliases=["analyze"],
        help="analyse checkpoint folders or hub ids",
        description=ANALYSE_HELP,
    )
    a.add_argument("paths", nargs="+", metavar="PATH")
    a.add_argument("--name", action="append", dest="names", help="run name (one per PATH)")
    a.add_argument(
        "--losses",
        nargs="+",
        metavar="F",
        help="a CSV (step, loss columns) or a trainer_state.json: one for all PATHs, or one each",
    )
    a.add_argument(
        "--glob", help="which entries of a folder are checkpoints (default checkpoint-*)"
    )
    a.add_argument("--revisions", nargs="+", help="a hub id's revisions (branches)")
    a.add_argument("--group", help="the PATHs are seeds of one recipe: their group's name")
    a.add_argument(
        "--seed",
        nargs="+",
        type=int,
        dest="seeds",
        metavar="S",
        help="with --group, each PATH's seed (default: the digits after 'seed' in each run name)",
    )
    a.add_argument(
        "--primary",
        nargs="+",
        metavar="F",
        help="with --group, its pre-named features: FEATURE (two-sided), FEATURE:+ or FEATURE:-",
    )
    a.add_argument(
        "--layers", nargs="+", metavar="P", help="fnmatch patterns of the matrices to analyse"
    )
    a.add_argument(
        "--transposed", nargs="+", metavar="P", help="patterns of matrices stored (in, out)"
    )
    a.add_argument(
        "--config",
        metavar="FILE",
        help="the architecture's config.json, when no checkpoint holds one (not Snakemake's "
        "--config: that one cannot be passed through analyse; use ./config.yaml and run)",
    )
    a.add_argument("--cores", type=int, default=1)
    a.add_argument("--force", action="store_true", help="overwrite a different ./config.yaml")
    a.add_argument("--plain", action="store_true", help=PLAIN_HELP)
    sub.add_parser("report", help="write results/report.html (Snakemake's HTML report)")
    d = sub.add_parser("demo", help="the demo study (2 tiny models) end to end into DIR/results")
    d.add_argument("directory", nargs="?", default="topotrain-demo")
    d.add_argument("--cores", type=int, default=2)
    d.add_argument("--plain", action="store_true", help=PLAIN_HELP)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; arguments after the known ones go to Snakemake."""
    args, rest = parser().parse_known_args(argv)
    rest = [a for a in rest if a != "--"]
    if args.command == "init":
        init(args.directory, args.force)
        return 0
    if args.command == "run":
        return run(args.cores, rest, plain=args.plain)
    if args.command in ("analyse", "analyze"):
        entry = {key: getattr(args, key) for key in ANALYSE_KEYS}
        return analyse(args.paths, args.names, args.cores, rest, args.force, args.plain, **entry)
    if args.command == "demo":
        return demo(args.directory, args.cores, rest, args.plain)
    return report(rest)


if __name__ == "__main__":
    sys.exit(main())
