"""The ``topotrain`` command: the workflow from any folder.

- ``topotrain init [DIR]``: the default config.yaml (commented) into DIR;
- ``topotrain run [--cores N] [SNAKEMAKE ARGS …]``: the workflow on the config where you stand
  (the schema's defaults fill in whatever it leaves out, so an overlay of just ``runs:``
  works), failed jobs' logs printed in the terminal;
- ``topotrain analyse PATH [PATH …] [--losses F] [--name N]``: checkpoint folders (or hub ids with
  ``--revisions``) as ``runs:`` entries, the GPT study and Pythia off; the config it used is
  written to ./config.yaml, so ``topotrain run`` repeats it;
- ``topotrain report``: Snakemake's HTML report of the results (``results/report.html``).

The workflow (Snakefile, config.yaml, workflow/, envs/, profiles/) comes from the installed wheel
(``topotrain/_workflow``, see setup.py) or, in a checkout, from the repository.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import yaml

from topotrain.config import NAME, NAME_RULE

BUNDLE = Path(__file__).resolve().parent / "_workflow"  # in a built wheel
CHECKOUT = Path(__file__).resolve().parents[2]  # src/topotrain/cli.py → the repository
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


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
        "--show-failed-logs",
        *args,
    ]


def run(cores: int, args: list[str], directory: str = ".") -> int:
    """Run the workflow in ``directory``; returns Snakemake's exit status."""
    cmd = snakemake_command(cores, args, directory)
    print("running:", " ".join(cmd[2:]), flush=True)
    return subprocess.call(cmd)


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


def analyse_config(paths: list[str], names: list[str] | None, **entry) -> dict:
    """The overlay ``analyse`` writes: the GPT study and Pythia off, one runs: entry per path."""
    names = names or [run_name(p) for p in paths]
    if len(names) != len(paths):
        raise CliError(f"{len(paths)} paths but {len(names)} --name values")
    for name in names:
        if not NAME.match(name):
            raise CliError(f"run name {name!r}: {NAME_RULE}")
    if len(set(names)) < len(names):
        raise CliError(f"two paths give the same run name in {names}: pass --name for each")
    runs = {name: run_entry(path, **entry) for name, path in zip(names, paths, strict=True)}
    return {"spine": {"enabled": False}, "pythia": {"enabled": False}, "runs": runs}


def analyse(paths, names, cores: int, args: list[str], force: bool = False, **entry) -> int:
    """Write ./config.yaml for ``paths`` and run the workflow on it."""
    config = analyse_config(paths, names, **entry)
    text = "# written by `topotrain analyse`; `topotrain run` repeats the analysis\n"
    text += yaml.safe_dump(config, sort_keys=False)
    target = Path("config.yaml")
    if target.exists() and target.read_text() != text and not force:
        raise CliError("./config.yaml exists and differs: run in an empty folder, or --force")
    target.write_text(text)
    print(f"wrote {target.resolve()}")
    return run(cores, args)


def report(args: list[str]) -> int:
    """Snakemake's HTML report of the results in the current folder."""
    status = run(1, ["--report", "results/report.html", *args])
    if status == 0:
        print(f"report: {Path('results/report.html').resolve()}")
    return status


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="topotrain", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    i = sub.add_parser("init", help="write the default config.yaml into DIR")
    i.add_argument("directory", nargs="?", default=".")
    i.add_argument("--force", action="store_true", help="overwrite an existing config.yaml")
    r = sub.add_parser("run", help="run the workflow on ./config.yaml (defaults underneath)")
    r.add_argument("--cores", type=int, default=1)
    a = sub.add_parser("analyse", aliases=["analyze"], help="analyse checkpoint folders or hub ids")
    a.add_argument("paths", nargs="+", metavar="PATH")
    a.add_argument("--losses", help="a CSV (step, loss columns) or a trainer_state.json")
    a.add_argument("--name", action="append", dest="names", help="run name (one per PATH)")
    a.add_argument(
        "--glob", help="which entries of a folder are checkpoints (default checkpoint-*)"
    )
    a.add_argument("--revisions", nargs="+", help="a hub id's revisions (branches)")
    a.add_argument("--cores", type=int, default=1)
    a.add_argument("--force", action="store_true", help="overwrite a different ./config.yaml")
    sub.add_parser("report", help="write results/report.html (Snakemake's HTML report)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; arguments after the known ones go to Snakemake."""
    args, rest = parser().parse_known_args(argv)
    rest = [a for a in rest if a != "--"]
    if args.command == "init":
        init(args.directory, args.force)
        return 0
    if args.command == "run":
        return run(args.cores, rest)
    if args.command in ("analyse", "analyze"):
        entry = {"losses": args.losses, "revisions": args.revisions, "glob": args.glob}
        return analyse(args.paths, args.names, args.cores, rest, args.force, **entry)
    return report(rest)


if __name__ == "__main__":
    sys.exit(main())
