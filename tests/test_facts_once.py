"""Each fact once: the Rips engine's default, the vocabulary size, α and the confidence level come
from their one constant (``topotrain.config.constants``), never a literal retyped in a signature,
a dataclass field or a ``.get`` default."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from topotrain.config import ALPHA, CONFIDENCE, DEFAULTS, ENGINE, VOCAB_SIZE

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "topotrain"
FACTS = {"engine", "vocab_size", "alpha", "confidence"}
HOME = PACKAGE / "config" / "constants.py"
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p != HOME)


def literal_defaults(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every literal default of a FACTS name: keyword and positional defaults,
    annotated class fields (``vocab_size: int = 128``) and ``.get("alpha", 0.05)``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            tail = positional[len(positional) - len(args.defaults) :]
            pairs = list(zip(tail, args.defaults, strict=True))
            keywords = zip(args.kwonlyargs, args.kw_defaults, strict=True)
            pairs += [(a, d) for a, d in keywords if d is not None]
            found += [(d.lineno, a.arg) for a, d in pairs if a.arg in FACTS and is_literal(d)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id in FACTS and node.value is not None and is_literal(node.value):
                found.append((node.lineno, node.target.id))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in FACTS
            and is_literal(node.args[1])
        ):
            found.append((node.lineno, node.args[0].value))
    return found


def is_literal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is not None


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_literal_default_of_a_shared_fact(path):
    found = literal_defaults(ast.parse(path.read_text()))
    assert not found, f"{path.relative_to(PACKAGE)}: literal defaults {found}: use the constant"


def test_the_check_finds_each_kind_of_retyped_default():
    code = (
        "def f(x, engine='auto', *, alpha=0.05): pass\n"
        "class C:\n    vocab_size: int = 128\n"
        "y = params.get('confidence', 0.95)\n"
        "def g(engine=ENGINE, alpha=None): return params.get('engine', ENGINE)\n"
    )
    assert sorted(literal_defaults(ast.parse(code))) == [
        (1, "alpha"),
        (1, "engine"),
        (3, "vocab_size"),
        (4, "confidence"),
    ]


def test_the_constants_hold_the_schema_and_the_study_values():
    assert ENGINE == DEFAULTS["topology"]["engine"] == "auto"
    assert (VOCAB_SIZE, ALPHA) == (128, 0.05)
    assert CONFIDENCE == pytest.approx(1 - ALPHA)
