"""The licence check of CI (tools/check_licences.py): licence expressions against the allow-list,
the core install's closure over fake installed distributions, a non-permissive dependency failing
with its name, and README's Licences paragraph naming every non-permissive extra."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tools.check_licences import (
    ALLOWED,
    closure,
    extra_failures,
    failures,
    is_allowed,
    main,
    parts,
    read_allowed,
)

LICENCES, PINNED = read_allowed()


@pytest.mark.parametrize(
    "expression, allowed",
    [
        ("MIT", True),
        ("BSD-3-Clause AND 0BSD AND MIT AND Zlib AND CC0-1.0", True),  # numpy
        ("Apache-2.0 AND Apache-2.0 WITH LLVM-exception AND BSL-1.0 AND MIT", True),  # torch
        ("ISC License (ISCL)", True),  # parentheses that are part of a name stay
        ("Mozilla Public License 2.0 (MPL 2.0)", True),
        ("Apache Software License; BSD License", True),  # two classifiers, both allowed
        ("MIT AND (Apache-2.0 OR GPL-3.0-only)", True),  # one alternative suffices
        ("GNU AGPLv3", False),  # giotto-ph
        ("GPL-3.0-or-later OR AGPL-3.0-only", False),
        ("BSD License; GNU General Public License (GPL); Public Domain", False),  # docutils' raw
        ("UNKNOWN", False),
        ("", False),
    ],
)
def test_licence_expressions_against_the_allow_list(expression, allowed):
    assert is_allowed(expression, LICENCES) is allowed


def test_expression_parts_split_on_and_semicolons_and_or():
    assert parts("MIT AND (BSD OR X)") == [["MIT"], ["BSD", "X"]]
    assert parts("A; B OR C") == [["A"], ["B", "C"]]


def test_allow_list_pins_the_packages_whose_metadata_falls_short():
    assert "MIT" in LICENCES and "NCSA" in LICENCES  # arch is NCSA
    assert not any("GPL" in name for name in LICENCES)  # no copyleft beyond MPL's file level
    assert PINNED["docutils"] == "Public Domain; BSD-2-Clause"
    assert PINNED["snakemake-interface-common"] == "MIT"
    assert "giotto-ph" not in PINNED and "gudhi" not in PINNED


def write_dist(site, name: str, requires: list[str], extras: list[str] = ()) -> None:
    """A fake installed distribution ``name`` 1.0 with these Requires-Dist lines."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    lines = [f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0"]
    lines += [f"Provides-Extra: {e}" for e in extras] + [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


@pytest.fixture
def fake_site(tmp_path, monkeypatch):
    """A root whose core needs core-a (which needs core-b[x], whose extra x needs core-c), with
    a `fast` extra adding fast-agpl and a requirement for Python 2 only."""
    site = tmp_path / "site"
    write_dist(
        site,
        "fake-root",
        ["core-a>=1", "fast-agpl; extra == 'fast'", "py2-only; python_version < '3'"],
        ["fast"],
    )
    write_dist(site, "core-a", ["core-b[x]"])
    write_dist(site, "core-b", ["core-c; extra == 'x'", "unused; extra == 'y'"], ["x", "y"])
    write_dist(site, "core-c", [])
    write_dist(site, "fast-agpl", [])
    monkeypatch.syspath_prepend(str(site))
    return tmp_path


def report(**licences) -> list[dict]:
    names = {k: k.replace("_", "-") for k in licences}
    return [{"Name": names[k], "Version": "1.0", "License": v} for k, v in licences.items()]


def test_the_core_closure_follows_requirements_markers_and_requested_extras(fake_site):
    core = closure("fake-root")
    assert sorted(core) == ["core-a", "core-b", "core-c", "fake-root"]
    assert sorted(closure("fake-root", frozenset({"fast"}))) == sorted([*core, "fast-agpl"])


def test_a_non_permissive_core_dependency_fails_with_its_name(fake_site, tmp_path):
    rows = report(fake_root="MIT", core_a="BSD License", core_b="GNU AGPLv3", core_c="UNKNOWN")
    assert failures(rows, closure("fake-root")) == [
        "core-b 1.0: GNU AGPLv3",
        "core-c 1.0: UNKNOWN",
    ]
    allow = tmp_path / "allowed.txt"
    allow.write_text(ALLOWED.read_text() + "core-c: MIT  # its LICENSE file, checked\n")
    assert failures(rows, closure("fake-root"), allow) == ["core-b 1.0: GNU AGPLv3"]


def fake_pip_licenses(path, rows: list[dict]):
    """An executable that prints ``rows`` as pip-licenses' JSON report, whatever its options."""
    path.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(rows))})\n")
    path.chmod(0o755)
    return path


def test_the_command_fails_naming_the_package_and_the_unnamed_extra(fake_site, capsys):
    rows = report(fake_root="MIT", core_a="MIT", core_b="BSD-3-Clause", core_c="GNU AGPLv3")
    rows += report(fast_agpl="GNU AGPLv3")
    tool = fake_pip_licenses(fake_site / "pip-licenses", rows)
    readme = fake_site / "README.md"
    readme.write_text("# x\n\n## Licences\n\nMIT. Nothing else to say.\n\n## Next\n")
    argv = ["--pip-licenses", str(tool), "--readme", str(readme), "--root", "fake-root"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "licence not on licences/allowed.txt: core-c 1.0: GNU AGPLv3" in err
    assert "does not name the extra `fast` (fast-agpl 1.0: GNU AGPLv3)" in err


def test_a_readme_that_names_the_extra_and_its_package_passes(fake_site):
    rows = report(fake_root="MIT", core_a="MIT", core_b="MIT", core_c="MIT", fast_agpl="AGPL")
    readme = fake_site / "README.md"
    readme.write_text(
        textwrap.dedent(
            """\
            ## Licences

            MIT; the `fast` extra adds fast-agpl (AGPL-3.0).
            """
        )
    )
    assert extra_failures(rows, closure("fake-root"), readme, "fake-root") == []
    readme.write_text("## Licences\n\nMIT; the `fast` extra is faster.\n")
    assert extra_failures(rows, closure("fake-root"), readme, "fake-root") == [
        "fast-agpl 1.0: AGPL (extra `fast`)"
    ]
