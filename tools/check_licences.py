"""The licence check of CI (`make licences`): every package of topotrain's core install carries a
licence on the allow-list (licences/allowed.txt), and README's "Licences" paragraph names every
optional extra that brings in a package that does not.

Run it with the Python of the environment to check, and pip-licenses (which reads the packages'
metadata: License-Expression, else the licence classifiers, else License) from anywhere:

    .venv/bin/python tools/check_licences.py --pip-licenses .venv-tools/bin/pip-licenses

The core install is the closure of topotrain's requirements without extras (environment markers
evaluated here), so tools installed beside it (pytest, the `fast` extra) are not counted. A licence
expression is allowed when each of its parts (joined by ";" or AND) is, or one alternative of a
part joined by OR. A package whose metadata names no licence, or names a non-permissive one beside
the permissive licence of what it ships, needs its own line (``package: licence``, with why).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = ROOT / "licences" / "allowed.txt"


def canonical(name: str) -> str:
    """A distribution's normalised name (PEP 503): Jinja2 → jinja2, typing_extensions → ...-..."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_allowed(path: Path = ALLOWED) -> tuple[set[str], dict[str, str]]:
    """(licence names allowed, {package: licence it is taken to carry}) from the allow-list: one
    licence per line, or ``package: licence``; ``#`` starts a comment."""
    licences, packages = set(), {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if ":" in line:
            name, licence = line.split(":", 1)
            packages[canonical(name)] = licence.strip()
        elif line:
            licences.add(line)
    return licences, packages


def requirements(dist: metadata.Distribution, extras: frozenset[str]) -> list[Requirement]:
    """The requirements of ``dist`` that apply here with ``extras`` requested (none: the core)."""
    out = []
    for text in dist.requires or []:
        req = Requirement(text)
        env = [{"extra": e} for e in extras or {""}]
        if req.marker is None or any(req.marker.evaluate(e) for e in env):
            out.append(req)
    return out


class NotInstalled(LookupError):
    """A requirement of the closure is not installed here."""


def closure(root: str = "topotrain", extras: frozenset[str] = frozenset()) -> dict[str, str]:
    """{canonical name: version} of ``root`` and every distribution its requirements (with
    ``extras``) pull in, recursively; NotInstalled names a requirement that is not installed."""
    found, todo, done = {}, [(root, frozenset(extras))], set()
    while todo:
        name, wanted = todo.pop()
        if (canonical(name), wanted) in done:
            continue
        done.add((canonical(name), wanted))
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise NotInstalled(name) from None
        found[canonical(name)] = dist.version
        todo += [(req.name, frozenset(req.extras)) for req in requirements(dist, wanted)]
    return found


def parts(expression: str) -> list[list[str]]:
    """The parts of a licence expression, each a list of alternatives: "MIT AND (BSD OR X)" →
    [["MIT"], ["BSD", "X"]]; pip-licenses joins several classifiers with "; "."""
    out = []
    for piece in re.split(r";|\bAND\b", expression):
        piece = unwrap(piece)
        if piece:
            out.append([unwrap(a) for a in re.split(r"\bOR\b", piece)])
    return out


def unwrap(text: str) -> str:
    """``text`` stripped, without parentheses around all of it: "(A OR B)" → "A OR B", while
    "ISC License (ISCL)" stays whole."""
    text = text.strip()
    return text[1:-1].strip() if text.startswith("(") and text.endswith(")") else text


def is_allowed(expression: str, licences: set[str]) -> bool:
    """Whether every part of ``expression`` has an allowed alternative (UNKNOWN never is)."""
    split = parts(expression)
    return bool(split) and all(any(a in licences for a in alt) for alt in split)


def failures(report: list[dict], names: dict[str, str], allowed_path: Path = ALLOWED) -> list[str]:
    """'name version: licence' for each package of ``names`` whose licence (the allow-list's own
    line for it, else the report's) is not allowed; a package the report lacks fails too."""
    licences, pinned = read_allowed(allowed_path)
    by_name = {canonical(row["Name"]): row["License"] for row in report}
    bad = []
    for name, version in sorted(names.items()):
        licence = pinned.get(name, by_name.get(name, "not in the pip-licenses report"))
        if not is_allowed(licence, licences):
            bad.append(f"{name} {version}: {licence}")
    return bad


def pip_licenses(executable: str) -> list[dict]:
    """pip-licenses' JSON report (Name, Version, License) of this Python's environment."""
    cmd = [executable, "--python", sys.executable, "--from=mixed", "--format=json", "--with-system"]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def readme_licences(readme: Path) -> str:
    """The text of README's "Licences" paragraph (its heading to the next heading)."""
    text = readme.read_text(encoding="utf-8")
    match = re.search(r"^#+ Licences\n(.*?)(?=^#|\Z)", text, re.M | re.S)
    return match.group(1) if match else ""


def extra_failures(
    report: list[dict], core: dict[str, str], readme: Path, root: str = "topotrain"
) -> list[str]:
    """For each extra of ``root`` whose packages (beyond the core's) fail the allow-list, what
    README's "Licences" paragraph fails to name: the extra (`name`) or such a package."""
    paragraph, missing = readme_licences(readme), []
    for extra in metadata.metadata(root).get_all("Provides-Extra") or []:
        try:
            added = closure(root, frozenset({extra}))
        except NotInstalled as err:
            print(f"extra `{extra}` not checked: {err} is not installed here", file=sys.stderr)
            continue
        bad = failures(report, {n: v for n, v in added.items() if n not in core})
        if bad and f"`{extra}`" not in paragraph:
            missing.append(f"the extra `{extra}` ({'; '.join(bad)})")
        missing += [f"{b} (extra `{extra}`)" for b in bad if b.split()[0] not in paragraph.lower()]
    return missing


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--pip-licenses", default="pip-licenses", help="the pip-licenses command")
    args.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args.add_argument("--root", default="topotrain", help="the distribution whose install to check")
    opts = args.parse_args(argv)
    report, core = pip_licenses(opts.pip_licenses), closure(opts.root)
    by_name = {canonical(row["Name"]): row["License"] for row in report}
    pinned = read_allowed()[1]
    for name, version in sorted(core.items()):
        own = f"  [allow-list: {pinned[name]}]" if name in pinned else ""
        print(f"{name:38} {version:17} {by_name.get(name, '?')}{own}")
    bad = failures(report, core)
    for line in bad:
        print(f"licence not on {ALLOWED.relative_to(ROOT)}: {line}", file=sys.stderr)
    unnamed = extra_failures(report, core, opts.readme, opts.root)
    for line in unnamed:
        print(f"README's Licences paragraph does not name {line}", file=sys.stderr)
    print(f"{len(core)} packages in {opts.root}'s core install; {len(bad)} outside the allow-list")
    return 1 if bad or unnamed else 0


if __name__ == "__main__":
    sys.exit(main())
