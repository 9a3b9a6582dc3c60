"""The ``topotrain`` command: the workflow from any folder.

- ``topotrain init [DIR]``: the default config.yaml (commented) into DIR;
- ``topotrain run [--cores N] [SNAKEMAKE ARGS …]``: the workflow on the config where you stand
  (the schema's defaults fill in whatever it leaves out, so an overlay of just ``runs:``
  works); a failed job is one line, ``topotrain: <cause> (log: <path>)`` (``cli_errors``);
- ``topotrain analyse PATH [PATH …] [--name N] [--losses F …] [--group G --seed S … --primary F …]
  [--layers P …] [--transposed P …] [--config FILE]``: checkpoint folders (or hub ids with
  ``--revisions``) as ``runs:`` entries, every key an entry can say; the GPT study and Pythia
  off; the config it used is written to ./config.yaml, so ``topotrain run`` repeats it;
- ``topotrain report``: Snakemake's HTML report of the results (``results/report.zip``, unpacked
  into ``results/report/``);
- ``topotrain demo [DIR]``: the demo study end to end.

``--cores`` defaults to this machine's cores (``available_cores``); ``--verbose`` is Snakemake's
(a refused config in full: the schema and the config). The help shows every default.

The workflow (Snakefile, config.yaml, workflow/, envs/, profiles/) comes from the installed wheel
(``topotrain/_workflow``, see setup.py) or, in a checkout, from the repository. ``overlay``
turns analyse's flags into the runs: entries it writes; a usage error is ``CliError``
(``cli_errors``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import yaml

import topotrain
from topotrain.cli.overlay import ANALYSE_KEYS, analyse_config, run_name
from topotrain.cli_errors import CLI_ENV, CliError, filtered
from topotrain.progress import with_display

BUNDLE = Path(__file__).resolve().parents[1] / "_workflow"  # in a built wheel
CHECKOUT = Path(__file__).resolve().parents[3]  # src/topotrain/cli/__init__.py → the repository


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
    ``with_display``; a report's per-file lines counted in one unless ``plain``); returns
    Snakemake's exit status."""
    cmd = snakemake_command(cores, with_display(args, plain), directory)
    print("running:", " ".join(cmd[2:]), flush=True)
    return filtered(cmd, directory, env, summary="--report" in args and not plain)


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


DEMO = ".test"  # the demo study: its config (config/) and corpus (data/)
DEMO_CONFIGS = ("demo.yaml", "config.yaml")  # the demo's own (2 seeds per model), else the tests'


def demo_config(source: Path) -> Path:
    """The demo study's config in ``source`` (``.test/``): the first of ``DEMO_CONFIGS`` there."""
    for name in DEMO_CONFIGS:
        if (source / "config" / name).is_file():
            return source / "config" / name
    raise CliError(f"no demo study in {source}: reinstall topotrain")


def demo(directory: str, cores: int, args: list[str], plain: bool = False) -> int:
    """The demo study (``.test/``: two tiny models, a 2,000-character corpus) end to end in
    ``directory``: its corpus copied there (unless it is the checkout), the workflow run with its
    config (``demo_config``), then the HTML report; REPORT.md's path printed. Snakemake's exit
    status."""
    import shutil

    source = workflow_dir() / DEMO
    config = ["--configfile", str(demo_config(source)), "--replace-workflow-config"]
    target = Path(directory)
    if target.resolve() != workflow_dir().resolve():
        shutil.copytree(source / "data", target / DEMO / "data", dirs_exist_ok=True)
    status = run(cores, [*config, *args], directory, plain=plain)
    if status == 0:
        status = run(1, [*config, "--report", REPORT_ZIP], directory, plain=plain)
    if status == 0:
        page = unpack_report(target / REPORT_ZIP)
        print(f"demo: {(target / 'results' / 'REPORT.md').resolve()} and {page}")
    return status


REPORT_ZIP = "results/report.zip"  # Snakemake's zip form: report/report.html, results beside it


def unpack_report(archive: Path) -> Path:
    """The HTML report's zip unpacked beside it (results/report/, replacing an earlier one);
    the path of its page, report/report.html. The zip form keeps the page small: the single-file
    report.html carries ~3 MB of Snakemake's scripts and every result inside it."""
    import shutil
    import zipfile

    folder = archive.parent / "report"
    shutil.rmtree(folder, ignore_errors=True)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(archive.parent)
    return (folder / "report.html").resolve()


def report(args: list[str], plain: bool = False) -> int:
    """Snakemake's HTML report of the results in the current folder, as results/report.zip,
    unpacked into results/report/ (its page: results/report/report.html)."""
    status = run(1, ["--report", REPORT_ZIP, *args], plain=plain)
    if status == 0:
        page = unpack_report(Path(REPORT_ZIP))
        print(f"report: {page} (to share: {Path(REPORT_ZIP).resolve()})")
    return status


ANALYSE_HELP = """Checkpoint folders (or hub ids with --revisions) as runs: entries, the GPT
study and Pythia off; ./config.yaml gets the config it used. Options it does not know go to
Snakemake (-n, --profile …), except Snakemake's --config: here --config is the architecture's
config.json. Give PATHs first: --layers and the other many-valued options take every word after
them."""
DESCRIPTION = __doc__.split("\n\n")[0].replace("``", "")  # plain text, as help prints it
EPILOG = "Options a command does not know go to Snakemake (-n, --profile …)."
PLAIN_HELP = "Snakemake's own output (a block per job) instead of the progress display"
REPORT_PLAIN_HELP = (
    "Snakemake's own output (a line per rule's code and file added) instead of a count"
)
VERBOSE_HELP = "Snakemake's --verbose: a refused config in full (the schema and the config)"


def available_cores() -> int:
    """The cores this process may use: its CPU affinity where the system has one, else the
    machine's count."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's help with each option's default after it, unless its help states the default
    or it has none (None, False: an option left out)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def snakemake_options(p: argparse.ArgumentParser, cores: bool = True, plain: str = PLAIN_HELP):
    """The options of a command that runs Snakemake: --cores, --plain, --verbose."""
    if cores:
        p.add_argument(
            "--cores",
            type=int,
            default=available_cores(),
            metavar="N",
            help="cores Snakemake may use at once, jobs × their threads (default: %(default)s, "
            "the cores this process may use)",
        )
    p.add_argument("--plain", action="store_true", help=plain)
    p.add_argument("--verbose", action="store_true", help=VERBOSE_HELP)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="topotrain", description=DESCRIPTION, epilog=EPILOG, formatter_class=HelpFormatter
    )
    p.add_argument("--version", action="version", version=topotrain.__version__)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, **kwargs) -> argparse.ArgumentParser:
        kwargs.setdefault("description", summary[0].upper() + summary[1:] + ".")
        kwargs.setdefault("epilog", EPILOG)
        return sub.add_parser(name, help=summary, formatter_class=HelpFormatter, **kwargs)

    i = command("init", "write the default config.yaml into DIR", epilog=None)
    i.add_argument("directory", nargs="?", default=".", metavar="DIR", help="where to write it")
    i.add_argument("--force", action="store_true", help="overwrite an existing config.yaml")
    r = command("run", "run the workflow on ./config.yaml (defaults underneath)")
    snakemake_options(r)
    a = command(
        "analyse",
        "analyse checkpoint folders or hub ids",
        aliases=["analyze"],
        description=ANALYSE_HELP,
    )
    a.add_argument(
        "paths", nargs="+", metavar="PATH", help="checkpoint folders, or hub ids (org/name)"
    )
    a.add_argument(
        "--name",
        action="append",
        dest="names",
        help="run name, one per PATH (default: each PATH's last part, other characters as '-')",
    )
    a.add_argument(
        "--losses",
        nargs="+",
        metavar="F",
        help="a CSV (step, loss columns) or a trainer_state.json: one for all PATHs, or one "
        "each (default: none)",
    )
    a.add_argument(
        "--glob", help="which entries of a folder are checkpoints (default: checkpoint-*)"
    )
    a.add_argument(
        "--revisions", nargs="+", help="a hub id's revisions (branches); needed with a hub id"
    )
    a.add_argument(
        "--group",
        help="the PATHs are seeds of one recipe: their group's name (default: none, no "
        "between-seed contrast)",
    )
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
        help="with --group, its pre-named features: FEATURE (two-sided), FEATURE:+ or FEATURE:- "
        "(default: none, every feature exploratory)",
    )
    a.add_argument(
        "--layers",
        nargs="+",
        metavar="P",
        help="fnmatch patterns of the matrices to analyse (default: every linear map)",
    )
    a.add_argument(
        "--transposed",
        nargs="+",
        metavar="P",
        help="patterns of matrices stored (in, out) (default: as the config.json says)",
    )
    a.add_argument(
        "--config",
        metavar="FILE",
        help="the architecture's config.json, when no checkpoint holds one (not Snakemake's "
        "--config: that one cannot be passed through analyse; use ./config.yaml and run) "
        "(default: the checkpoints')",
    )
    a.add_argument("--force", action="store_true", help="overwrite a different ./config.yaml")
    snakemake_options(a)
    rep = command(
        "report",
        "write results/report.zip (Snakemake's HTML report), unpacked into results/report/",
    )
    snakemake_options(rep, cores=False, plain=REPORT_PLAIN_HELP)
    d = command("demo", "the demo study (2 tiny models) end to end into DIR/results")
    d.add_argument(
        "directory",
        nargs="?",
        default="topotrain-demo",
        metavar="DIR",
        help="the folder it runs in",
    )
    snakemake_options(d)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; arguments after the known ones go to Snakemake."""
    args, rest = parser().parse_known_args(argv)
    rest = [a for a in rest if a != "--"]
    if args.command == "init":
        init(args.directory, args.force)
        return 0
    rest += ["--verbose"] if args.verbose else []
    if args.command == "run":
        return run(args.cores, rest, plain=args.plain)
    if args.command in ("analyse", "analyze"):
        entry = {key: getattr(args, key) for key in ANALYSE_KEYS}
        return analyse(args.paths, args.names, args.cores, rest, args.force, args.plain, **entry)
    if args.command == "demo":
        return demo(args.directory, args.cores, rest, args.plain)
    return report(rest, args.plain)


__all__ = ["CliError", "analyse_config", "main", "parser", "run", "run_name", "workflow_dir"]
