"""The package's imports run one way: the graph of src/topotrain modules (every import, those in
functions and ``if __name__`` blocks too; not those under ``if TYPE_CHECKING``, which never run)
has no cycle, and no jobs/ adapter reads the global config of the snakemake object."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "topotrain"


def module_names() -> dict[str, Path]:
    """Dotted module name → file, packages by their ``__init__.py``."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _type_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imported(name: str, code: str, modules: dict[str, Path], package: bool = False) -> set[str]:
    """The package modules that module ``name`` (source ``code``; ``package``: an
    ``__init__.py``) imports anywhere in its file."""
    tree = ast.parse(code)
    package = name if package else name.rpartition(".")[0]
    skip, found = _type_only(tree), set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            for alias in node.names:  # `from pkg import module` imports the module
                full = f"{base}.{alias.name}"
                found.add(full if full in modules else base)
    out = set()
    for target in found:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target.startswith("topotrain") and target != name:
            out.add(target)
    return out


def import_graph() -> dict[str, set[str]]:
    modules = module_names()
    return {
        name: imported(name, path.read_text(), modules, path.name == "__init__.py")
        for name, path in modules.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out, count = {}, {}, [], set(), [], 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = count
        count += 1
        stack.append(root)
        on.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = count
                    count += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_cycles_finds_a_circle_through_a_main_block_import_and_none_in_a_chain():
    chain = {"a": {"b"}, "b": {"c"}, "c": set()}
    assert cycles(chain) == []
    assert cycles(chain | {"c": {"a"}}) == [["a", "b", "c"]]
    modules = dict.fromkeys(("topotrain", "topotrain.a", "topotrain.b", "topotrain.t"), Path())
    code = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from topotrain.t import T\n"
        'def f():\n    from . import a\nif __name__ == "__main__":\n    import topotrain.a\n'
    )
    assert imported("topotrain.b", code, modules) == {"topotrain.a"}


def test_the_package_has_no_import_cycle():
    graph = import_graph()
    assert "topotrain.analysis.calibration.power" in graph  # the graph sees the package
    assert cycles(graph) == [], f"modules that import each other: {cycles(graph)}"


def test_no_jobs_adapter_reads_the_snakemake_config():
    """Every parameter a rule's result depends on reaches its job through ``params`` (so that
    Snakemake's rerun triggers see it): no jobs/ module reads ``<anything>.config``."""
    readers = []
    for path in sorted((PACKAGE / "jobs").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "config":
                readers.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr":
                if any(isinstance(a, ast.Constant) and a.value == "config" for a in node.args):
                    readers.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
    assert readers == [], f"jobs reading the global config: {readers}"
