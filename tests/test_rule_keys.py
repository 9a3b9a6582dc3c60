"""Every rule's named inputs, outputs and params are the keys its script and job read: none
unused, none read that the rule does not declare. The keys a job reads are found in its source
(and in the package functions it hands the dict to), so the test needs no run."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from conftest import tiny_config, write_corpus
from run_fixtures import saved_series

import topotrain.jobs as jobs

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("input", "output", "params")
ALL = "*"  # a dict used whole (iterated, or handed to code the test cannot follow)
OPTIONAL = "?"  # marks a key read with .get: a key only some configs give


def tiny_study(workdir: Path, topology_jobs: str = "checkpoint") -> None:
    """The tiny study with every branch on: the spine (with its LLC), two local runs in a group,
    Pythia, the control, and the confirmation of the spine and the control on fresh seeds;
    ``topology_jobs``: the spine's weight topology per checkpoint or per training."""
    train, valid = write_corpus(workdir, n_chars=2_000)
    config = tiny_config(train, valid)
    config["topology"]["jobs"] = topology_jobs
    mine = saved_series(workdir / "mine", "gpt2")
    config["runs"] = {"mine": {"path": str(mine), "glob": "step-*"}}
    config["runs"]["mine"]["losses"] = str(mine / "losses.csv")
    config["runs"]["mine"].update(group="pair", seed=1)  # a group of two seeds of one recipe
    config["runs"]["mine2"] = {**config["runs"]["mine"], "seed": 2}
    config["runs"]["theirs"] = {"hub": "org/series", "revisions": ["step0", "step10"]}
    config["runs"]["theirs"]["keep_weights"] = False
    config["runs"]["branches"] = {"hub": "org/branches", "revision_pattern": r"step\d+"}
    pythia = {"models": ["EleutherAI/pythia-14m"], "steps": [0, 1000]}
    config["pythia"] = {"enabled": True, "weights": pythia, "embeddings": dict(pythia)}
    config["pythia"]["keep_weights"] = False
    config["control"] = {"enabled": True, "seeds": [0, 1], "steps": 100, "interval": 50}
    config["confirm"] = {"seeds": [43, 44], "control_seeds": [2, 3]}  # fresh seeds, both branches
    config["baselines"] = {"llc": {"enabled": True}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def load_jobs(workdir: Path) -> dict:
    """rule name → {section: named keys} over the jobs of the study's DAG (each rule's first
    job; a rule whose keys vary from job to job would show in the other jobs too, so all are
    merged and the keys every job of the rule gives are checked)."""
    from snakemake.api import SnakemakeApi
    from snakemake.io import is_flagged
    from snakemake.settings.enums import Quietness
    from snakemake.settings.types import (
        ConfigSettings,
        DAGSettings,
        OutputSettings,
        ResourceSettings,
    )

    with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
        workflow_api = api.workflow(
            resource_settings=ResourceSettings(cores=1),
            config_settings=ConfigSettings(configfiles=[workdir / "config.yaml"]),
            snakefile=ROOT / "Snakefile",
            workdir=workdir,
        )
        targets = {"all", "calibration", "question_power"}  # make calibrate's targets too
        workflow_api.dag(dag_settings=DAGSettings(targets=targets, forceall=True))
        workflow = workflow_api._workflow
        workflow._prepare_dag(forceall=True, ignore_incomplete=True, lock_warn_only=True)
        workflow._build_dag()
        found: dict = {}
        for job in workflow.dag.jobs:
            if not job.rule.script or any(is_flagged(f, "checkpoint_target") for f in job.input):
                continue  # a job waiting on a checkpoint has no inputs yet
            keys = {s: set(getattr(job, s)._names) for s in SECTIONS}
            found.setdefault(job.rule.name, []).append(keys)
    return found


def key_of(node: ast.AST, consts: dict[str, str]) -> str | None:
    """The string a key expression spells: a literal, or an f-string over bound constants."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = [
            key_of(v.value if isinstance(v, ast.FormattedValue) else v, consts)
            if not isinstance(v, ast.FormattedValue) or not isinstance(v.value, ast.Name)
            else consts.get(v.value.id)
            for v in node.values
        ]
        return "".join(parts) if all(p is not None for p in parts) else None
    return None


def local_imports(tree: ast.AST, fn) -> dict:
    """Names a function imports inside its body → the objects."""
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("topotrain"):
            module = importlib.import_module(node.module)
            found.update({a.asname or a.name: getattr(module, a.name, None) for a in node.names})
    return {**fn.__globals__, **found}


def reads(fn, param: str, consts: dict[str, str] | None = None, depth: int = 0) -> set[str]:
    """The keys function ``fn`` reads from its dict parameter ``param`` (ALL: used whole)."""
    consts = consts or {}
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    names, keys = local_imports(tree, fn), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is(node.value, param):
            keys.add(key_of(node.slice, consts) or ALL)
        elif isinstance(node, ast.Attribute) and _is(node.value, param):
            if node.attr == "get":
                continue  # the call below reads its key
            keys.add(ALL)  # items(), values(), …: every key
        elif isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and _is(node.func.value, param):
                if node.func.attr == "get" and node.args:  # optional: OPTIONAL + key
                    keys.add(OPTIONAL + (key_of(node.args[0], consts) or ALL))
                continue
            passed = [i for i, a in enumerate(node.args) if _is(a, param)]
            passed += [k.arg for k in node.keywords if _is(k.value, param)]
            if passed:
                keys |= callee_reads(node, passed, names, consts, depth)
    return keys


def callee_reads(call: ast.Call, passed: list, names: dict, consts: dict, depth: int) -> set:
    """The keys a package function reads from the dict ``call`` hands it."""
    callee = names.get(call.func.id) if isinstance(call.func, ast.Name) else None
    if not (inspect.isfunction(callee) and callee.__module__.startswith("topotrain")):
        return {ALL}
    if depth > 3:
        return {ALL}
    params = list(inspect.signature(callee).parameters)
    bound = {params[i]: key_of(a, consts) for i, a in enumerate(call.args) if i < len(params)}
    bound = {k: v for k, v in bound.items() if v is not None}
    out = set()
    for where in passed:
        target = params[where] if isinstance(where, int) else where
        out |= reads(callee, target, bound, depth + 1)
    return out


def _is(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def script_reads(rule: str) -> dict[str, tuple[set[str], set[str]]]:
    """{section: keys} the rule's adapter (``jobs.<stage>.<rule>_rule``, what the one script runs)
    reads: sm.<section>.<key>, and what its job reads of a section it hands over whole
    (``dict(sm.output.items())`` or ``sm.params``)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(jobs.rule_adapter(rule))))
    found: dict[str, set[str]] = {s: set() for s in SECTIONS}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
            inner = node.value
            if _is(inner.value, "sm") and inner.attr in SECTIONS and node.attr != "items":
                found[inner.attr].add(node.attr)
    call = next(
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == f"{rule}_job"
    )
    job = getattr(inspect.getmodule(jobs.rule_adapter(rule)), f"{rule}_job")
    params = list(inspect.signature(job).parameters)
    handed = [(params[i], a) for i, a in enumerate(call.args)]
    handed += [(k.arg, k.value) for k in call.keywords]
    for name, arg in handed:
        section = whole_section(arg)
        if section:
            found[section] |= reads(job, name)
    return {
        section: (
            {k for k in keys if not k.startswith(OPTIONAL)},
            {k[1:] for k in keys if k.startswith(OPTIONAL)},
        )
        for section, keys in found.items()
    }


def whole_section(arg: ast.AST) -> str | None:
    """``sm.<section>`` or ``dict(sm.<section>.items())`` → the section, else None."""
    if isinstance(arg, ast.Call) and _is(arg.func, "dict") and arg.args:
        arg = arg.args[0]
        if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute):
            arg = arg.func.value
    if isinstance(arg, ast.Attribute) and _is(arg.value, "sm") and arg.attr in SECTIONS:
        return arg.attr
    return None


@pytest.fixture(scope="module")
def study_jobs(tmp_path_factory) -> dict:
    """The jobs of the tiny study's DAG. Parsing the Snakefile in this process runs common.smk,
    which puts src/ on sys.path and PYTHONPATH for its jobs: both are restored after, or a later
    test's subprocess (the wheel's venv) would see this checkout's package."""
    environ, path = dict(os.environ), list(sys.path)
    try:
        jobs = {}
        for topology_jobs in ("checkpoint", "training"):  # each spine topology rule in a DAG
            workdir = tmp_path_factory.mktemp(f"keys-{topology_jobs}")
            tiny_study(workdir, topology_jobs)
            for rule, keys in load_jobs(workdir).items():
                jobs.setdefault(rule, keys)
        return jobs
    finally:
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = path


def test_every_rules_adapter_is_in_the_tiny_studys_dag(study_jobs):
    adapters = {
        name.removesuffix("_rule")
        for module in jobs_modules()
        for name, fn in vars(module).items()
        if name.endswith("_rule") and inspect.isfunction(fn)
    }
    assert len(adapters) >= 30 and adapters - set(study_jobs) == set()


def jobs_modules() -> list:
    """Every module of topotrain.jobs."""
    import pkgutil

    return [
        importlib.import_module(f"topotrain.jobs.{info.name}")
        for info in pkgutil.iter_modules(jobs.__path__)
    ]


def test_every_jobs_keys_are_the_ones_its_script_and_job_read(study_jobs):
    """Reads through ``.get`` are optional (a key some configs give); every other read must be
    declared, and every declared key read, unless the dict is used whole."""
    wrong = []
    for rule, job_keys in sorted(study_jobs.items()):
        read = script_reads(rule)
        for keys in job_keys:
            for section in SECTIONS:
                declared, (needed, optional) = keys[section], read[section]
                if undeclared := needed - declared - {ALL}:
                    wrong.append(f"{rule}: {section} keys read, not declared: {undeclared}")
                if ALL not in needed and (unused := declared - needed - optional):
                    wrong.append(f"{rule}: {section} keys declared, never read: {unused}")
    assert not wrong, "\n".join(sorted(set(wrong)))
