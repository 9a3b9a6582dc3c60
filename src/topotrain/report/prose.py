"""The report's fixed prose: templates under ``report/templates/``, read with importlib.resources
(so they load from the installed wheel as from the source tree) and filled by the report code.

A template is one UTF-8 Markdown file, ``string.Template`` syntax (``$name`` or ``${name}``); the
newline that ends the file is not part of it. A placeholder that stands for lines (``${notes}``)
gets each line with its own newline, nothing when there is none. ``sections/<name>.md`` is one
REPORT.md section's head: its ``## `` heading on the first line, then the text under it. Every
template also gets the levels (``levels``): ``$alpha`` ('0.05'), ``$alpha_pct`` ('5') and
``$confidence_pct`` ('95'; a template writes ``${confidence_pct}%`` or ``$confidence_pct %``).
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from string import Template

from topotrain.config.constants import ALPHA, CONFIDENCE

ROOT = "templates"
SUFFIX = ".md"


def names() -> list[str]:
    """Every template's name: its path under templates/ without ``.md`` (``sections/models``)."""
    found, folders = [], [("", files(__package__).joinpath(ROOT))]
    while folders:
        prefix, folder = folders.pop()
        for entry in folder.iterdir():
            if entry.is_dir():
                folders.append((f"{prefix}{entry.name}/", entry))
            elif entry.name.endswith(SUFFIX):
                found.append(prefix + entry.name.removesuffix(SUFFIX))
    return sorted(found)


@cache
def template(name: str) -> Template:
    """The template ``name`` (``names()``), its file's final newline dropped."""
    path = files(__package__).joinpath(ROOT)
    for part in f"{name}{SUFFIX}".split("/"):
        path = path.joinpath(part)
    text = path.read_text("utf-8")
    return Template(text.removesuffix("\n"))


def levels() -> dict[str, str]:
    """The placeholders every template gets, from the one constant each (ALPHA, CONFIDENCE)."""
    return {
        "alpha": f"{ALPHA:g}",
        "alpha_pct": f"{100 * ALPHA:g}",
        "confidence_pct": f"{100 * CONFIDENCE:g}",
    }


def render(name: str, /, **values: object) -> str:
    """The template ``name`` with every placeholder filled, the levels (``levels``) and
    ``values`` (KeyError names one left unfilled; a value may not restate a level)."""
    shared = levels()
    if restated := sorted(shared.keys() & values.keys()):
        raise ValueError(f"{name}: {restated} come from the constants, not the caller")
    return template(name).substitute(shared, **values)


def lines(items: list[str]) -> str:
    """A lines placeholder's value: each item on its own line, '' for none."""
    return "".join(f"{item}\n" for item in items)


def section(name: str) -> tuple[str, str]:
    """(heading, text) of ``sections/<name>.md``: the heading without its ``## ``."""
    heading, _, text = render(f"sections/{name}").partition("\n")
    if not heading.startswith("## "):
        raise ValueError(f"templates/sections/{name}.md: the first line is not a '## ' heading")
    return heading.removeprefix("## "), text.strip()
