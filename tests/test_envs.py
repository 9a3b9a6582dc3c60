"""The per-rule conda environments (envs/*.yaml) agree with pyproject.toml's dependencies."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import ROOT

tomllib = pytest.importorskip("tomllib")  # Python ≥ 3.11

# conda-forge name → PyPI name where they differ
CONDA_TO_PYPI = {"pytorch": "torch", "huggingface_hub": "huggingface-hub"}
# needed to run the workflow itself, not inside a job's environment
WORKFLOW_ONLY = {"snakemake", "snakemake-executor-plugin-slurm", "pyyaml", "jsonschema", "tqdm"}
# used in the user's training process (topotrain.callbacks, topotrain.live), by no workflow job
TRAINING_PROCESS_ONLY = {"threadpoolctl"}
REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9_.-]+)\s*(?:>=\s*([0-9][^,;\s]*))?")


def parse(requirement: str) -> tuple[str, str | None]:
    """(normalised name, lower bound or None) of 'name>=x.y'."""
    match = REQUIREMENT.match(requirement)
    assert match, f"cannot parse requirement {requirement!r}"
    name = match.group(1).lower().replace("_", "-")
    return CONDA_TO_PYPI.get(match.group(1), name), match.group(2)


ENV_EXTRAS = ("llc",)  # extras an env installs for its rule (envs/llc.yaml: devinterp)


def pyproject_dependencies(extras: tuple[str, ...] = ()) -> dict[str, str | None]:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    deps = project["dependencies"] + [
        d for e in extras for d in project["optional-dependencies"][e]
    ]
    return dict(parse(d) for d in deps)


def env_dependencies(path) -> dict[str, str | None]:
    """Packages of one env file, conda and pip sections alike (python and pip itself left out)."""
    spec = yaml.safe_load(path.read_text())
    entries = []
    for dep in spec["dependencies"]:
        entries += dep["pip"] if isinstance(dep, dict) else [dep]
    pairs = dict(parse(e) for e in entries)
    return {k: v for k, v in pairs.items() if k not in ("python", "pip")}


ENVS = sorted((ROOT / "envs").glob("*.yaml"))


def test_parse_maps_conda_names_and_bounds():
    assert parse("pytorch>=2.2") == ("torch", "2.2")
    assert parse("huggingface_hub>=0.23") == ("huggingface-hub", "0.23")
    assert parse("giotto-ph>=0.2.4") == ("giotto-ph", "0.2.4")
    assert parse("pip") == ("pip", None)


@pytest.mark.parametrize("env", ENVS, ids=lambda p: p.name)
def test_every_env_package_is_a_project_dependency_with_the_same_lower_bound(env):
    project = pyproject_dependencies(ENV_EXTRAS)
    for name, bound in env_dependencies(env).items():
        assert name in project, f"{env.name}: {name} is not in pyproject.toml's dependencies"
        assert bound == project[name], (
            f"{env.name}: {name}>={bound} but pyproject.toml says >={project[name]}"
        )


def test_every_job_dependency_is_in_some_env():
    in_envs = set().union(*(env_dependencies(e) for e in ENVS))
    missing = set(pyproject_dependencies()) - in_envs - WORKFLOW_ONLY - TRAINING_PROCESS_ONLY
    assert not missing, f"in pyproject.toml but in no envs/*.yaml: {sorted(missing)}"


def test_every_rule_names_an_existing_env():
    rules = (ROOT / "workflow" / "rules").glob("*.smk")
    named = {m for r in rules for m in re.findall(r'"\.\./\.\./envs/([^"]+)"', r.read_text())}
    assert named == {e.name for e in ENVS}
