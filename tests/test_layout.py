"""The repository's layout: the package's layering (imports run one way, entry → stages and
branches → topology → helpers; analysis/'s rooms one way, inference at the bottom), files under
400 lines (no count caps a folder), benchmarks/ as a package, every rule's own script and job, and
the README linking every docs page."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "topotrain"
LEVEL = {  # lower levels never import higher ones; a package may import itself
    "cli": -1,  # the topotrain command: runs Snakemake, imports nothing of the stages
    "jobs": 0,
    "callbacks": -1,  # the Trainer callback, built on live's one-call API
    "live": 0,
    "training": 1,
    "sources": 1,
    "analysis": 1,
    "report": 1,
    "topology": 2,
    "baselines": 2,  # WeightWatcher (torch): measured on the same matrices, beside topology
    "config": 3,
    "devices": 3,
    "hub": 3,
    "io": 3,
    "logs": 3,
    "heap": 3,  # glibc's thresholds for the analysis jobs (jobs.run_rule): imports nothing
    "cli_errors": 3,  # the topotrain command's reading of a failed job (and its env marker)
    "progress": 3,  # the progress display (Snakemake's logger plugin): imports no stage
}
MAX_LINES = 400


def unit(module: str) -> str:
    """The top-level unit of a dotted module name: topotrain.topology.layers → topology."""
    return module.split(".")[1] if module.count(".") else "__init__"


def imported_modules(path: Path) -> set[str]:
    """The dotted topotrain modules a source file imports, module level and inside functions
    (``from a import b`` gives a.b when b is a module or package of a, else a)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("topotrain"):
            base = PACKAGE.parent / node.module.replace(".", "/")
            subs = [a.name for a in node.names if is_module(base / a.name)]
            names |= {f"{node.module}.{n}" for n in subs} if subs else {node.module}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("topotrain.")}
    return names


def is_module(path: Path) -> bool:
    """Whether ``path`` (without suffix) names a module or a package of topotrain."""
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imported_units(path: Path) -> set[str]:
    """The topotrain units a source file imports (module level and inside functions)."""
    return {unit(module) for module in imported_modules(path)}


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


def own_unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def test_every_unit_has_a_level():
    assert {own_unit(p) for p in SOURCES} == set(LEVEL)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_one_way(path):
    me = own_unit(path)
    upward = {u for u in imported_units(path) - {me} if LEVEL[u] <= LEVEL[me]}
    assert not upward, f"{path.relative_to(PACKAGE)} ({me}, level {LEVEL[me]}) imports {upward}"


ANALYSIS = PACKAGE / "analysis"
ROOM_LEVEL = {  # analysis/'s rooms, each named by its question; a room imports only rooms below it
    # is a feature tied to the loss beyond the clock and the scale? The tests: the base every
    # other room imports, importing none of them
    "inference": 0,
    # what did each checkpoint measure? The feature tables every question reads
    "tables": 1,
    # does early training or size predict the final loss, and when can training stop?
    "prediction": 2,
    # does the between-seed test find a real effect? The grokking control
    "control": 2,
    # how do the features move through training? (phases step by prediction's stopping rule)
    "dynamics": 3,
    # does an exploratory hit hold on fresh seeds? (the control is one of its branches)
    "confirmation": 3,
    # does each published claim hold? (Tables 5–7 read dynamics' phases)
    "replication": 4,
    # are the tests honest, and what can the design see? (simulates replication's rules)
    "calibration": 5,
}


def room(module: str) -> str | None:
    """The room of a dotted analysis module: topotrain.analysis.inference.stats → inference;
    None outside analysis/ and for the package itself."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["topotrain", "analysis"] else None


ANALYSIS_SOURCES = sorted(p for p in ANALYSIS.rglob("*.py") if p != ANALYSIS / "__init__.py")


def imported_rooms(path: Path) -> set[str]:
    """The analysis rooms a source file imports, its own included."""
    return {room(m) for m in imported_modules(path)} - {None}


def test_no_module_sits_at_the_analysis_root():
    loose = sorted(p.name for p in ANALYSIS.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"analysis/ holds modules outside its rooms: {loose}"


def test_every_analysis_room_has_a_level():
    rooms = {p.relative_to(ANALYSIS).parts[0] for p in ANALYSIS_SOURCES}
    assert rooms == set(ROOM_LEVEL)


@pytest.mark.parametrize("path", ANALYSIS_SOURCES, ids=lambda p: str(p.relative_to(ANALYSIS)))
def test_analysis_rooms_import_one_way(path):
    me = path.relative_to(ANALYSIS).parts[0]
    upward = {r for r in imported_rooms(path) - {me} if ROOM_LEVEL[r] >= ROOM_LEVEL[me]}
    assert not upward, f"analysis/{path.relative_to(ANALYSIS)} ({me}) imports {upward}"


@pytest.mark.parametrize(
    "path", sorted((ANALYSIS / "inference").rglob("*.py")), ids=lambda p: p.name
)
def test_inference_imports_no_other_analysis_room(path):
    assert imported_rooms(path) <= {"inference"}


def line_count(path: Path) -> int:
    return len(path.read_text().splitlines())


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_source_file_is_over_400_lines(path):
    assert line_count(path) <= MAX_LINES


REPO = PACKAGE.parents[1]
BENCHMARKS = sorted((REPO / "benchmarks").rglob("*.py"))
WORKFLOW_FILES = sorted(
    [REPO / "Snakefile", *(REPO / "workflow").rglob("*.py"), *(REPO / "workflow").rglob("*.smk")]
)


@pytest.mark.parametrize(
    "path", BENCHMARKS + WORKFLOW_FILES, ids=lambda p: str(p.relative_to(REPO))
)
def test_no_benchmark_or_workflow_file_is_over_400_lines(path):
    assert line_count(path) <= MAX_LINES


def top_level_imports(tree: ast.AST) -> set[str]:
    """The first component of every absolute import in a parsed file (``a`` of ``import a.b``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def uses_sys_path(tree: ast.AST) -> bool:
    """Whether the code touches ``sys.path`` at all (reads included: there is no need to)."""
    return any(
        isinstance(node, ast.Attribute)
        and node.attr == "path"
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
        for node in ast.walk(tree)
    )


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: str(p.relative_to(REPO)))
def test_benchmarks_are_a_package_importing_nothing_from_tests(path):
    """benchmarks/ imports its own modules as ``benchmarks.<module>`` (never a sibling by its bare
    name, which needs a sys.path edit), nothing from tests/, and leaves sys.path alone."""
    tree = ast.parse(path.read_text())
    from_tests = {"tests", *(p.stem for p in (REPO / "tests").glob("*.py"))}
    siblings = {p.stem for p in BENCHMARKS} - {"__init__", "__main__"}
    imported = top_level_imports(tree)
    assert not imported & from_tests, f"imports from tests/: {imported & from_tests}"
    assert not imported & siblings, f"bare sibling imports: {imported & siblings}"
    assert not uses_sys_path(tree)


def top_level_functions(path: Path) -> set[str]:
    return {
        node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)
    }


def test_every_benchmark_with_an_entry_is_a_registered_case():
    """The cases are listed in one place (benchmarks.CASES): every module of benchmarks/ with a
    ``run`` or a ``main`` is one of them, and every case's module has one."""
    from benchmarks import CASES

    modules = [path for path in BENCHMARKS if path.stem != "__main__"]
    entries = {path.stem for path in modules if {"run", "main"} & top_level_functions(path)}
    assert entries == {case.module for case in CASES.values()}


RULE = re.compile(r"^(?:rule|checkpoint) (\w+):", re.M)
SCRIPT = re.compile(r'script:\s*\n\s*"\.\./scripts/(\w+)\.py"')


def rules_and_scripts() -> dict[str, str | None]:
    """rule (or checkpoint) name → the script it runs (None for a rule without one), over
    workflow/rules/*.smk."""
    out = {}
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        text = smk.read_text()
        starts = [(m.start(), m.group(1)) for m in RULE.finditer(text)] + [(len(text), None)]
        for (start, name), (end, _) in zip(starts, starts[1:], strict=False):
            script = SCRIPT.search(text[start:end])
            out[name] = script.group(1) if script else None
    return out


def test_every_rule_runs_the_one_script_whose_adapter_calls_its_own_job():
    """Every rule runs workflow/scripts/job.py (the only script), which calls jobs.run_rule; rule
    R's adapter R_rule calls R_job of its own module and only that job."""
    import inspect

    import topotrain.jobs as jobs

    pairs = {rule: script for rule, script in rules_and_scripts().items() if script}
    assert len(pairs) >= 30
    assert set(pairs.values()) == {"job"}, f"rules running another script: {pairs}"
    assert [p.name for p in (REPO / "workflow" / "scripts").glob("*.py")] == ["job.py"]
    for rule in pairs:
        text = inspect.getsource(jobs.rule_adapter(rule))
        called = set(re.findall(r"\b(\w+_job)\(", text))
        assert called == {f"{rule}_job"}, f"{rule}_rule calls {called}"
        module = inspect.getmodule(jobs.rule_adapter(rule))
        assert callable(getattr(module, f"{rule}_job", None)), f"{module.__name__}: no {rule}_job"


def test_a_rules_jobs_live_in_the_jobs_file_named_after_its_rules_file():
    """The rules of workflow/rules/<stage>.smk call jobs and adapters defined in jobs/<stage>.py."""
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        names = set(RULE.findall(smk.read_text()))
        with_script = {n for n in names if rules_and_scripts().get(n)}
        if not with_script:
            continue
        jobs_file = PACKAGE / "jobs" / f"{smk.stem}.py"
        assert jobs_file.exists(), f"{smk.name} has rules but there is no jobs/{smk.stem}.py"
        defined = top_level_functions(jobs_file)
        missing = {f"{n}_{kind}" for n in with_script for kind in ("job", "rule")} - defined
        assert not missing, f"jobs/{smk.stem}.py lacks {sorted(missing)} of {smk.name}"


def test_the_readme_is_a_front_door_that_links_every_docs_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 80  # one screen's worth: the rest lives in docs/
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)\)", readme))
    pages = {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")}
    assert pages <= linked, f"docs pages the README does not link: {sorted(pages - linked)}"


IO_CALLS = {"open", "load", "save", "savez", "savez_compressed", "read_parquet", "to_parquet"}
IO_CALLS |= {"read_csv", "to_csv", "read_text", "write_text", "read_bytes", "write_bytes"}


@pytest.mark.parametrize("path", sorted((PACKAGE / "topology").glob("*.py")), ids=lambda p: p.name)
def test_topology_reads_and_writes_no_file_and_imports_no_torch(path):
    """The kernels take matrices and return records: no torch or safetensors, nothing of io or
    sources, no call that reads or writes a file (those live in sources/ and the jobs)."""
    tree = ast.parse(path.read_text())
    modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert not {m.split(".")[0] for m in modules} & {"torch", "safetensors"}
    assert not imported_units(path) & {"io", "sources"}
    calls = {
        n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "")
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
    }
    assert not calls & IO_CALLS, f"{path.name} calls {calls & IO_CALLS}"
