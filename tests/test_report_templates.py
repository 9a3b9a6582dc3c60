"""REPORT.md's fixed prose lives in templates (src/topotrain/report/templates/, read by
report/prose.py): the loader lists every template file, the code fills every placeholder of each
template and no other, and the built wheel carries them, so that a topotrain installed from it
renders the same report text as the source tree."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from topotrain.report import prose
from topotrain.report.markdown import SECTIONS

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "src" / "topotrain" / "report"


def template_files() -> list[str]:
    """The .md files under report/templates/, named as the loader names them."""
    folder = REPORT / "templates"
    return sorted(p.relative_to(folder).with_suffix("").as_posix() for p in folder.rglob("*.md"))


def placeholders(name: str) -> set[str]:
    """The identifiers of a template's ``$name`` / ``${name}`` placeholders."""
    template = prose.template(name)
    found = set()
    for match in template.pattern.finditer(template.template):
        assert match.group("invalid") is None, f"{name}: a '$' that is no placeholder"
        found.add(match.group("named") or match.group("braced"))
    return found - {None}


def render_calls() -> dict[str, set[str]]:
    """Every ``prose.render("<name>", key=...)`` of report/*.py: the template's name → the keys
    the code fills."""
    calls: dict[str, set[str]] = {}
    for path in REPORT.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = getattr(node, "func", None)
            if isinstance(func, ast.Attribute) and func.attr == "render":
                if isinstance(func.value, ast.Name) and func.value.id == "prose":
                    name = node.args[0].value
                    keys = {k.arg for k in node.keywords}
                    assert calls.setdefault(name, keys) == keys, f"{path.name}: {name}"
    return calls


def test_the_loader_lists_every_template_file():
    assert prose.names() == template_files()
    assert len(prose.names()) > len(SECTIONS)


def test_the_code_fills_every_placeholder_of_each_template_and_no_other():
    calls = render_calls()
    sections = {f"sections/{name}" for name in SECTIONS} | {"sections/confirmed"}
    assert set(calls) | sections == set(prose.names())  # every template is used
    for name in prose.names():
        keys = placeholders(name) - prose.levels().keys()  # the levels: every template's
        assert keys == calls.get(name, set()), name
        text = prose.render(name, **{key: "<filled>" for key in keys})
        assert "$" not in text and not text.endswith("\n"), name  # the file's newline dropped


def test_every_section_template_is_a_heading_and_its_text():
    for name in [*SECTIONS, "confirmed"]:
        heading, text = prose.section(name)
        assert heading and "\n" not in heading and text == text.strip() and text, name
    assert SECTIONS["models"][0] == "Models"


def test_a_placeholder_left_unfilled_is_named():
    with pytest.raises(KeyError, match="results"):
        prose.render("header/where")


def test_no_template_types_the_designs_seeds_or_checkpoints():
    """A design's numbers come from its tables or the config (placeholders): no template says
    "5 seeds", "51 checkpoints" or "Δ = 0.1" itself (the control's 8 seeds and the GPT study's
    3 once went stale this way)."""
    import re

    typed = re.compile(r"\b\d+ (seeds|checkpoints|models)\b|Δ(_co)? ?= ?\d")
    found = {
        n: m.group(0) for n in prose.names() if (m := typed.search(prose.template(n).template))
    }
    assert not found, found


def test_a_caller_may_not_restate_a_level():
    with pytest.raises(ValueError, match="alpha"):
        prose.render("confirm/reversed", alpha="0.1")


RENDER = """
import json, sys
from pathlib import Path
from topotrain.report import prose
from topotrain.report.markdown import SECTIONS, Body, assemble_report, findings

preface = findings(sys.argv[1], sys.argv[2])
table = Body("| x |\\n|---|\\n| 1 |\\n")
sections = [(heading, text, table) for heading, text in SECTIONS.values()]
Path("results").mkdir()
provenance = {"version": "9.9", "config_sha256": "abc", "engine": "ripser"}
assemble_report(sections, "results/REPORT.md", preface, 2, provenance=provenance)
print(json.dumps({
    "file": prose.__file__,
    "templates": {name: prose.template(name).template for name in prose.names()},
    "report": Path("results/REPORT.md").read_text(encoding="utf-8"),
}))
"""


def render_with(path: Path, tmp: Path, csvs: list[Path]) -> dict:
    """RENDER's output in a fresh interpreter whose topotrain comes from ``path`` alone."""
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(path)}
    proc = subprocess.run(
        [sys.executable, "-c", RENDER, *map(str, csvs)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def build_and_install(tmp: Path) -> Path:
    """The wheel of a copy of this checkout's files, installed (no dependencies) into a folder."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split("\n")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (tmp / "src" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tmp / "src" / name)
    pip = [sys.executable, "-m", "pip", "-q"]
    wheel = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), "."]
    subprocess.run(wheel, cwd=tmp / "src", check=True, capture_output=True, timeout=300)
    [built] = (tmp / "dist").glob("topotrain-*.whl")
    target = tmp / "installed"
    install = [*pip, "install", "--no-deps", "--target", str(target), str(built)]
    subprocess.run(install, cwd=tmp, check=True, capture_output=True, timeout=300)
    return target


def test_the_installed_wheel_renders_the_report_text_of_the_source_tree(tmp_path):
    best = dict(model="m", n_params=1000, feature="h0_total", rho=-0.99, ci_low=-1.0)
    best |= dict(ci_high=-0.98, tied_with="", best_topological="h0_total")
    best |= dict(best_topological_rho=-0.99, best_baseline="step", best_baseline_rho=-0.97)
    best |= dict(step_rho=-0.97, l2_norm_mean_rho=-0.9)
    pd.DataFrame([best]).to_csv(tmp_path / "best.csv", index=False)
    pd.DataFrame(
        {
            "fraction": [0.3, 0.3],
            "method": ["loss_only", "combined"],
            "mae": [0.2, 0.1],
            "improvement_pct": [0.0, 50.0],
            "wilcoxon_p": [float("nan"), 0.3125],
            "wilcoxon_note": ["reference method", "n too small"],
        }
    ).to_csv(tmp_path / "prediction.csv", index=False)
    csvs = [tmp_path / "best.csv", tmp_path / "prediction.csv"]
    installed = build_and_install(tmp_path)
    wheel = render_with(installed, tmp_path / "from-wheel", csvs)
    source = render_with(ROOT / "src", tmp_path / "from-source", csvs)
    assert Path(wheel["file"]).is_relative_to(installed)
    assert Path(source["file"]).is_relative_to(ROOT / "src")
    assert sorted(wheel["templates"]) == template_files()
    assert wheel["templates"] == source["templates"]
    assert wheel["report"] == source["report"]
    for heading, _ in SECTIONS.values():
        assert f"\n## {heading}\n" in wheel["report"]
    assert "## Findings" in wheel["report"] and "Produced by topotrain 9.9" in wheel["report"]
