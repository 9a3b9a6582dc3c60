"""Every snakemake and make command that README.md and the docs pages show plans on a tiny study
(snakemake -n, make -n).

README.md and docs/*.md are read at test time: its fenced code lines and inline code spans, comments
stripped, are split with shlex. A snakemake command runs as ``python -m snakemake -n`` on the
repository's Snakefile in a temporary working directory; a ``--config`` span of the prose is tried
the same way; ``make <target> …`` runs as ``make -n <target> …`` in the repository. A snakemake
option this file does not classify fails its command's test, so a new kind of command is never
skipped silently.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_snakemake, tiny_config, write_corpus

README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]  # the README and every docs page

# Options a dry run (-n) plans as they are. Paths after PATH_OPTIONS are relative to the
# repository root (the user runs from there) and are made absolute here.
DRY_RUN = {
    "--cores",
    "-c",
    "--jobs",
    "-j",
    "-n",
    "--dry-run",
    "--dryrun",
    "--config",
    "-C",
    "--configfile",
    "--configfiles",
    "--profile",
    "--rerun-incomplete",
    "--ri",
    "--resources",
    "--res",
    "--default-resources",
    "--set-resources",
    "--group-components",
    "--keep-going",
    "-k",
    "--printshellcmds",
    "-p",
    "--show-failed-logs",
    "--forceall",
    "-F",
    "--forcerun",
    "-R",
    "--until",
    "-U",
    "--logger",  # the progress display (topotrain.progress): with -n it prints the job counts
}
PATH_OPTIONS = {"--configfile": None, "--configfiles": None, "--profile": 1}  # how many (None: all)
# Options that do something other than plan jobs, so -n does not apply: checked as described in
# check_special.
SPECIAL = {
    "--report": "builds the report of a finished study: in a fresh directory it must get as far as "
    "creating the report (workflow parsed, config valid, DAG built) and stop only at a "
    "missing output",
    "--unlock": "only removes stale locks: runs as it is, in the temporary directory",
    "--lint": "checks the workflow's code instead of planning: runs as it is and exits 0",
}
CORPUS_FILES = (("corpus", "train"), ("corpus", "validation"))  # config keys naming input files


def code_snippets(text: str) -> list[str]:
    """The lines of fenced code blocks and the inline code spans
    (joined onto one line) of Markdown."""
    snippets, prose, fenced = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            snippets.append(line)
        else:
            prose.append(line)
    spans = re.findall(r"(`+)([^`]+?)\1", "\n".join(prose))
    return snippets + [" ".join(span.split()) for _, span in spans if "\n\n" not in span]


def readme_commands() -> tuple[list, list]:
    """The README's snakemake commands as (env, args) and its make commands as argument lists."""
    snakemake, make = {}, {}
    snippets = [s for page in PAGES for s in code_snippets(page.read_text(encoding="utf-8"))]
    for snippet in snippets:
        try:
            words = shlex.split(snippet, comments=True)
        except ValueError:  # unbalanced quotes: fails below if it names snakemake
            words = ["<unparsable>", *snippet.split()]
        if words[:1] == ["make"]:
            make[shlex.join(words)] = words[1:]
        elif words[:1] == ["--config"] and len(words) > 1:
            snakemake[shlex.join(words)] = ({}, ["--cores", "1", *words])
        elif any(w == "snakemake" or w.endswith("/snakemake") for w in words):
            snakemake[shlex.join(words)] = split_snakemake(words)
    return [pytest.param(*v, id=k) for k, v in snakemake.items()], [
        pytest.param(v, id=k) for k, v in make.items()
    ]


def split_snakemake(words: list[str]) -> tuple[dict, list[str] | None]:
    """Leading VAR=value assignments and the arguments after ``snakemake`` / ``python -m
    snakemake``; arguments None when the line has another shape (then its test fails)."""
    env, words = {}, list(words)
    while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    if words and (words[0] == "snakemake" or words[0].endswith("/snakemake")):
        return env, words[1:]
    if len(words) >= 3 and "python" in Path(words[0]).name and words[1:3] == ["-m", "snakemake"]:
        return env, words[3:]
    return env, None


SNAKEMAKE_COMMANDS, MAKE_COMMANDS = readme_commands()


def options(args: list[str]) -> list[str]:
    """The option names among ``args`` (``--cores`` of ``--cores=2``);
    values and targets left out."""
    return [a.split("=", 1)[0] for a in args if a.startswith("-") and not re.fullmatch(r"-\d.*", a)]


def repo_paths(args: list[str]) -> tuple[list[str], list[Path]]:
    """``args`` with the values of PATH_OPTIONS made absolute against the repository root, and the
    config files among them."""
    out, configfiles, left, option = [], [], 0, ""
    for arg in args:
        if arg.startswith("-"):
            option, _, value = arg.partition("=")
            left = PATH_OPTIONS.get(option, 0)
            if value and option in PATH_OPTIONS:
                arg, left = f"{option}={ROOT / value}", 0
                configfiles += [ROOT / value] if option != "--profile" else []
        elif left is None or left > 0:
            assert (ROOT / arg).exists(), f"README names {arg}, which is not in the repository"
            configfiles += [ROOT / arg] if option != "--profile" else []
            arg, left = str(ROOT / arg), None if left is None else left - 1
        out.append(arg)
    return out, configfiles


def write_runs(config: dict, workdir: Path) -> None:
    """Write each local run a config file names (``runs.<name>.path``, relative) in ``workdir`` as
    a tiny transformers.Trainer run, its trainer_state.json included (run_fixtures)."""
    from run_fixtures import trainer_run

    for entry in (config.get("runs") or {}).values():
        path = entry.get("path")
        if path and not Path(path).is_absolute() and not (workdir / path).exists():
            trainer_run(workdir / path, steps=30, save_steps=10)


def mirror_corpus_files(configfiles: list[Path], workdir: Path, tmp_root: Path) -> None:
    """Make the input files the config files name relative to the repository resolve from
    ``workdir`` too (links), or skip the test when the repository's copy is absent; write the
    local runs they name (``write_runs``)."""
    for configfile in configfiles:
        config = yaml.safe_load(configfile.read_text()) or {}
        write_runs(config, workdir)
        for section, key in CORPUS_FILES:
            name = (config.get(section) or {}).get(key)
            if not name or Path(name).is_absolute():
                continue
            source = (ROOT / name).resolve()
            if not source.is_file():
                pytest.skip(f"{configfile.name} names {name}, absent beside this checkout")
            link = Path(os.path.normpath(workdir / name))
            assert link.is_relative_to(tmp_root), f"{name} would resolve outside the test directory"
            if not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(source)


@pytest.fixture
def readme_workdir(tmp_path: Path) -> Path:
    """A working directory like a checkout's root: the repository's config.yaml with the tiny
    study's values on top (its Pythia section kept), and the tiny corpus."""
    workdir = tmp_path / "checkout"
    workdir.mkdir()
    train, valid = write_corpus(workdir)
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    tiny = tiny_config(train, valid)
    tiny.pop("pythia")  # the checkout's Pythia section stays
    config.update(tiny)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return workdir


def check_special(workdir: Path, args: list[str], special: list[str]) -> None:
    """Run a command holding a SPECIAL option as its entry there describes."""
    proc = run_snakemake(workdir, *args, check=False)
    output = proc.stdout + proc.stderr
    if special == ["--report"] and proc.returncode:
        assert "Creating report..." in output, output
        assert re.search(r"File \S+ marked for report but does not exist", output), output
    else:
        assert proc.returncode == 0, output


def test_readme_shows_snakemake_and_make_commands():
    assert len(SNAKEMAKE_COMMANDS) >= 5 and len(MAKE_COMMANDS) >= 3  # the parser still finds them


def check_snakemake(workdir: Path, env: dict, args: list[str] | None, monkeypatch) -> None:
    """Plan one snakemake command line in ``workdir`` (-n), or check it as SPECIAL says."""
    assert args is not None, "not a plain `[VAR=value …] snakemake …` line: classify it here"
    unknown = sorted(set(options(args)) - DRY_RUN - set(SPECIAL))
    assert not unknown, f"options {unknown} are not classified: add them to DRY_RUN or SPECIAL"
    args, configfiles = repo_paths(args)
    mirror_corpus_files(configfiles, workdir, workdir.parent)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    special = [o for o in options(args) if o in SPECIAL]
    if special:
        check_special(workdir, args, special)
        return
    proc = run_snakemake(workdir, "-n", *args, check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    assert "This was a dry-run" in output or "Nothing to be done" in output, output


@pytest.mark.parametrize("env, args", SNAKEMAKE_COMMANDS)
def test_readme_snakemake_command_plans(readme_workdir, monkeypatch, env, args):
    check_snakemake(readme_workdir, env, args, monkeypatch)


@pytest.mark.parametrize("args", MAKE_COMMANDS)
def test_readme_make_command_resolves_and_its_snakemake_plans(readme_workdir, monkeypatch, args):
    proc = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for line in proc.stdout.splitlines():  # the recipe make would run, e.g. .venv/bin/snakemake …
        words = shlex.split(line, comments=True)
        if words and Path(words[0]).name == "snakemake":
            check_snakemake(readme_workdir, *split_snakemake(words), monkeypatch)
