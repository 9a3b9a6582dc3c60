"""Each fact once: the Rips engine's default, the vocabulary size, α and the confidence level come
from their one constant (``topotrain.config.constants``), never a literal retyped in a signature,
a dataclass field or a ``.get`` default. α and the confidence level are typed nowhere else either:
no float of their values (α, 1 − α, α/2, 1 − α/2, z at 1 − α/2) outside NOT_ALPHA's list, no
module constant named as a level set to a number, no "p < 0.05" or "95 %" in a message, a rule
text or a report template (a template says ``$alpha``, ``$alpha_pct``, ``$confidence_pct``)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

from topotrain.config import ALPHA, CONFIDENCE, DEFAULTS, ENGINE, VOCAB_SIZE
from topotrain.report import prose

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "topotrain"
FACTS = {"engine", "vocab_size", "alpha", "confidence"}
HOME = PACKAGE / "config" / "constants.py"
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p != HOME)
TEMPLATES = sorted((PACKAGE / "report" / "templates").rglob("*.md"))
LEVELS = {0.05, 0.95, 0.025, 0.975, 1.959963984540054}  # α, 1 − α, α/2, 1 − α/2, z(1 − α/2)
TYPED = re.compile(r"\b0\.05\b|\b95 ?%|\b5 %")  # α or the confidence level typed in prose
LEVEL_NAME = re.compile(r"ALPHA|CONFIDENCE|LEVEL")  # a module constant named as a level
# The literals of those values (and constants of those names) that are not α or the confidence
# level, each counted and said why: (file, value or name) -> (how many, why). A new one fails.
NOT_ALPHA = {
    ("analysis/calibration/pass_rule.py", 0.95): (1, "PASS_LEVEL, below"),
    ("analysis/calibration/pass_rule.py", "PASS_LEVEL"): (1, "the suite's own pass rule"),
    ("analysis/calibration/question_power.py", 0.95): (1, "the documented fit's φ of the norm"),
    ("analysis/calibration/simulator.py", 0.05): (2, "noise sd; the smallest planted effect"),
    ("analysis/calibration/simulator.py", 0.95): (1, "the AR(0.95) noise's coefficient"),
    ("analysis/calibration/view_power.py", 0.05): (1, "an AR coefficient's lower clip"),
    ("analysis/calibration/view_power.py", 0.95): (1, "a white share's upper clip"),
    ("analysis/control/features.py", 0.95): (1, "GROKKED: the test accuracy of generalised"),
    ("analysis/prediction/learned.py", "RIDGE_ALPHA"): (1, "the ridge penalty, no level"),
    ("training/train.py", 0.95): (1, "AdamW's beta2"),
}


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


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the module's, classes' and functions' docstring nodes (prose, not facts)."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
    }


def level_literals(tree: ast.AST) -> Counter:
    """How often each LEVELS float is typed, and each module constant named as a level
    (LEVEL_NAME) is set to a number."""
    found = Counter(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and type(node.value) is float and node.value in LEVELS
    )
    for node in getattr(tree, "body", []):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        value = getattr(node, "value", None)
        number = isinstance(value, ast.Constant) and type(value.value) in (int, float)
        for target in targets:
            if number and isinstance(target, ast.Name) and LEVEL_NAME.search(target.id):
                found[target.id] += 1
    return found


def typed_levels(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string but a docstring that types α or the confidence level."""
    skip = docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and TYPED.search(node.value)
    ]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_unexplained_literal_of_a_level(path):
    name = path.relative_to(PACKAGE).as_posix()
    listed = {what: n for (file, what), (n, _) in NOT_ALPHA.items() if file == name}
    found = dict(level_literals(ast.parse(path.read_text())))
    assert found == listed, f"{name}: use ALPHA / CONFIDENCE, or list the literal in NOT_ALPHA"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_message_types_a_level(path):
    found = typed_levels(ast.parse(path.read_text()))
    assert not found, f"{path.relative_to(PACKAGE)}: {found}: format ALPHA / CONFIDENCE in"


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_template_types_a_level(path):
    found = TYPED.findall(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name}: {found}: say $alpha, $alpha_pct or $confidence_pct"


def test_the_checks_find_each_kind_of_typed_level():
    code = (
        '"""A docstring may say p < 0.05."""\n'
        "P_LEVEL = 0.01\nZ = 1.959963984540054\nLEVEL = ALPHA\n"
        'def f(p):\n    """95 % here is prose."""\n    return p < 0.05 or p > 1 - 0.025\n'
        "NOTE = f'p < 0.05 with {n} seeds'\nHEAD = 'effect [95 %]'\nCI = 'MC 95% [x]'\n"
        "RATE = 'about 5 % of rows'\n"
    )
    tree = ast.parse(code)
    assert level_literals(tree) == {"P_LEVEL": 1, 1.959963984540054: 1, 0.05: 1, 0.025: 1}
    assert sorted(line for line, _ in typed_levels(tree)) == [8, 9, 10, 11]
    said = "p < 0.05, 95% CI, 95 % interval, 5 % of rows; 0.5, 0.95, 0.055, 195 %, 2.5 %"
    assert TYPED.findall(said) == ["0.05", "95%", "95 %", "5 %", "5 %"]


def test_a_template_says_the_levels_of_the_constants(monkeypatch):
    before = prose.render("sections/correlations")
    assert "95% bootstrap CI" in before and "BH-adjusted p < 0.05" in before
    monkeypatch.setattr(prose, "ALPHA", 0.01)
    monkeypatch.setattr(prose, "CONFIDENCE", 0.99)
    after = prose.render("sections/correlations")
    assert after == before.replace("95% bootstrap", "99% bootstrap").replace("< 0.05", "< 0.01")
    keys = (
        "group",
        "n_runs",
        "members",
        "steps",
        "notes",
        "power",
        "checked",
        "family",
        "exploratory",
    )
    shared = prose.render("groups/section", **dict.fromkeys(keys, ""), n_explore=9, n_both=1)
    assert "1 of 9 exploratory rows have p < 0.01 beyond both" in shared
    assert "about 1 % of the time" in shared


NAMED_ONCE = {  # a fact stated as a literal: where it lives
    ("train_loss", "val_loss"): "config/constants.py",  # LOSSES
    ("effective_rank", "participation_ratio", "spectral_alpha"): "topology/spectral.py",  # SPECTRAL
    ("resume.pt",): "training/run_state.py",  # RESUME
    ("_scalefree",): "topology/registry.py",  # SCALEFREE
}


def literal_facts(tree: ast.AST) -> list[tuple]:
    """Every tuple or list literal of strings, and every lone string, that states a NAMED_ONCE fact
    (a docstring aside)."""
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
        ):
            value = tuple(e.value for e in node.elts)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = () if id(node) in docstrings else (node.value,)
        else:
            continue
        if value in NAMED_ONCE:
            found.append(value)
    return found


def test_the_losses_the_spectral_keys_resume_and_the_scale_free_suffix_are_stated_once():
    where = {fact: [] for fact in NAMED_ONCE}
    for path in PACKAGE.rglob("*.py"):
        for fact in literal_facts(ast.parse(path.read_text(encoding="utf-8"))):
            where[fact].append(str(path.relative_to(PACKAGE)))
    assert where == {fact: [home] for fact, home in NAMED_ONCE.items()}
