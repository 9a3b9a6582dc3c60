"""``python -m benchmarks [NAME …] [options]``: the benchmarks' one entry point.

Without names: the suite (every case of ``benchmarks.CASES`` marked suite). With names: those
cases, then the summary table. One name followed by options, or a case that is a tool of its own
(no ``run()``): that case's command line, ``python -m benchmarks NAME --help`` lists its options.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import itertools
import sys
from pathlib import Path

from benchmarks import CASES
from benchmarks.suite import run_suite


def about(name: str) -> str:
    """The first line of a case's module docstring, read without importing the module."""
    origin = importlib.util.find_spec(f"benchmarks.{CASES[name].module}").origin
    doc = ast.get_docstring(ast.parse(Path(origin).read_text(encoding="utf-8"))) or ""
    return doc.splitlines()[0] if doc else ""


def case_list() -> str:
    """A line per case: its name, whether the suite runs it, what it measures."""
    lines = []
    for name, case in CASES.items():
        what = about(name).removeprefix("Benchmark: ")
        lines.append(f"  {name:<15} {'suite' if case.suite else 'alone':<6} {what}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    """The options of the suite itself (a case's own come after its name)."""
    out = argparse.ArgumentParser(
        prog="python -m benchmarks",
        usage="python -m benchmarks [NAME ...] | NAME [options of NAME] | --list",
        description=__doc__.split("\n\n", 1)[1],
        epilog=f"cases:\n{case_list()}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    out.add_argument("--list", action="store_true", help="list the cases and exit")
    return out


def main(argv: list[str] | None = None) -> int:
    """Dispatch: the suite, some cases, or one case's own command line."""
    argv = sys.argv[1:] if argv is None else argv
    names = list(itertools.takewhile(lambda a: not a.startswith("-"), argv))
    options = argv[len(names) :]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser().error(f"unknown benchmark(s) {unknown}; choose from {list(CASES)}")
    if not names and options:
        if parser().parse_args(options).list:
            print(case_list())
        return 0
    modules = {n: importlib.import_module(f"benchmarks.{CASES[n].module}") for n in names}
    if len(names) == 1 and (options or not hasattr(modules[names[0]], "run")):
        if not hasattr(modules[names[0]], "main"):
            parser().error(f"{names[0]} takes no options of its own")
        return modules[names[0]].main(options)
    if options:
        parser().error("options go with one benchmark: python -m benchmarks NAME --option …")
    alone = [n for n, module in modules.items() if not hasattr(module, "run")]
    if alone:
        parser().error(f"{alone} run alone: python -m benchmarks NAME [options]")
    return run_suite(names or [name for name, case in CASES.items() if case.suite])


if __name__ == "__main__":
    sys.exit(main())
