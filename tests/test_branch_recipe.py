"""docs/layout.md's recipe for a new input branch, walked end to end: a toy branch (a folder of
.npy weight matrices, each ``step_<n>/`` a checkpoint, each ``<layer>.npy`` a layer) added to a
copy of the workflow — its reader, its jobs, its feature table, its section's prose, its rules
(registered in ``BRANCHES``), its include, its schema section and the study's config — in fewer
than ten files, and its section in REPORT.md holds each checkpoint's H0 total as SciPy's minimum
spanning trees of the layers' rows give it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import ROOT, SNAKEMAKE, tiny_config, write_corpus
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

pytestmark = pytest.mark.long

BRANCH = "npy_weights"
STEPS = (0, 10, 20)

# the branch's added files, path in the repository → text (SCHEMA, the Snakefile and
# the config are edits)
ADDED = {
    f"src/topotrain/sources/{BRANCH}.py": '''"""Folders step_<n>/ of <layer>.npy matrices."""

from pathlib import Path

import numpy as np


def checkpoints(folder):
    """{step: the checkpoint's .npy files}, by step."""
    found = {int(p.name.removeprefix("step_")): p for p in Path(folder).glob("step_*")}
    return {s: sorted(str(f) for f in found[s].glob("*.npy")) for s in sorted(found)}


def matrices(files):
    """{layer name: its matrix} of one checkpoint's files."""
    return {Path(f).stem: np.load(f) for f in files}
''',
    f"src/topotrain/jobs/{BRANCH}.py": '''"""Jobs of npy_weights.smk."""


def npy_topology_job(files, params, out):
    """One checkpoint's matrices → topology.record → io.write_record."""
    from topotrain.io import write_record
    from topotrain.sources.npy_weights import matrices
    from topotrain.topology.record import record
    from topotrain.topology.settings import TopologySettings

    rec = record(matrices(files), ["*"], TopologySettings.from_config(params), source="npy")
    doc = {"step": params["step"], "params": rec.params, "layers": rec.layers}
    write_record(out["record"], out["diagrams"], doc, rec.diagrams)


def npy_table_job(records, out):
    """The records → the branch's checkpoint table (CSV)."""
    from topotrain.analysis.tables.npy_weights import feature_table
    from topotrain.io import atomic_write_text
    from topotrain.sources.records import read_weight_records

    docs = read_weight_records(records, "npy_topology")
    atomic_write_text(out, feature_table(docs).to_csv(index=False))


def npy_section_job(table, out):
    """The branch's REPORT.md section: its template and the table's H0 totals."""
    import pandas as pd

    from topotrain.io import atomic_write_text
    from topotrain.report import prose
    from topotrain.report.markdown import to_markdown

    df = pd.read_csv(table)[["step", "n_layers", "h0_total"]]
    atomic_write_text(out, prose.render("npy_weights/section", table=to_markdown(df)))


def npy_topology_rule(sm):
    npy_topology_job(list(sm.input), dict(sm.params.items()), dict(sm.output.items()))


def npy_table_rule(sm):
    npy_table_job(list(sm.input), sm.output[0])


def npy_section_rule(sm):
    npy_section_job(sm.input[0], sm.output[0])
''',
    f"src/topotrain/analysis/tables/{BRANCH}.py": '''"""The .npy checkpoint table."""

from topotrain.analysis.tables.aggregate import checkpoint_features, layer_table


def feature_table(docs):
    """One row per checkpoint, the spine's columns."""
    keys = [{"model": "npy", "seed": 0, "step": doc["step"]} for doc in docs]
    return checkpoint_features(layer_table(docs, keys))
''',
    f"src/topotrain/report/templates/{BRANCH}/section.md": """## Weights from .npy files

Each checkpoint's H0 total, summed over its layers:

$table
""",
    f"workflow/rules/{BRANCH}.smk": """# A folder of .npy weight matrices: records, table, section.
from topotrain.sources.npy_weights import checkpoints

NPY = checkpoints(config["npy_weights"]["folder"]) if config["npy_weights"]["folder"] else {}
NPY_OUT = f"{RESULTS}/npy_weights"
if NPY:
    BRANCHES["npy_weights"] = dict(
        outputs=[f"{NPY_OUT}/features.csv"], section=f"{NPY_OUT}/section.md"
    )


rule npy_topology:
    input:
        lambda wildcards: NPY[int(wildcards.step)],
    output:
        record=f"{NPY_OUT}/step_{{step}}.json",
        diagrams=f"{NPY_OUT}/step_{{step}}.npz",
    params:
        step=lambda wildcards: int(wildcards.step),
        max_points=config["topology"]["max_points"],
        maxdim=config["topology"]["maxdim"],
        seed=config["topology"]["seed"],
        engine=RIPS_ENGINE,
    log:
        f"{RESULTS}/logs/npy_topology/step_{{step}}.log",
    script:
        "../scripts/job.py"


rule npy_table:
    input:
        [f"{NPY_OUT}/step_{step}.json" for step in NPY],
    output:
        f"{NPY_OUT}/features.csv",
    log:
        f"{RESULTS}/logs/npy_table.log",
    script:
        "../scripts/job.py"


rule npy_section:
    input:
        f"{NPY_OUT}/features.csv",
    output:
        f"{NPY_OUT}/section.md",
    log:
        f"{RESULTS}/logs/npy_section.log",
    script:
        "../scripts/job.py"
""",
}
SCHEMA = "workflow/schemas/config.schema.yaml"
SECTION = {
    "type": "object",
    "default": {},
    "additionalProperties": False,
    "properties": {"folder": {"type": "string", "default": ""}},
}


def _copy_workflow(dest: Path) -> None:
    """The workflow as a user has it: Snakefile, config.yaml, workflow/, envs/ and src/ (which
    common.smk puts first on the path, so the copy's package is the one that runs)."""
    for name in ("Snakefile", "config.yaml"):
        shutil.copy(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("workflow", "envs", "src"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)


def _add_branch(repo: Path, folder: Path) -> list[str]:
    """The branch's files written into ``repo``; the paths it added or edited."""
    for path, text in ADDED.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    schema = yaml.safe_load((repo / SCHEMA).read_text())
    schema["properties"][BRANCH] = SECTION
    (repo / SCHEMA).write_text(yaml.safe_dump(schema, sort_keys=False, allow_unicode=True))
    snakefile = (repo / "Snakefile").read_text()
    anchor = 'include: "workflow/rules/runs.smk"\n'
    assert anchor in snakefile
    include = f'{anchor}include: "workflow/rules/{BRANCH}.smk"\n'
    (repo / "Snakefile").write_text(snakefile.replace(anchor, include))
    train, valid = write_corpus(repo)
    config = tiny_config(train, valid) | {BRANCH: {"folder": str(folder)}}
    config["spine"] = {"enabled": False}  # the branch alone: no training
    (repo / "config.yaml").write_text(yaml.safe_dump(config))
    return [*ADDED, SCHEMA, "Snakefile", "config.yaml"]


def _weights(folder: Path) -> dict[int, list[np.ndarray]]:
    """Three checkpoints of two random layers each, written as .npy files."""
    rng = np.random.default_rng(7)
    out = {}
    for step in STEPS:
        (folder / f"step_{step}").mkdir(parents=True)
        out[step] = [rng.normal(size=(9 + step // 10, 4)), rng.normal(size=(6, 3))]
        for name, w in zip(("attn", "mlp"), out[step], strict=True):
            np.save(folder / f"step_{step}" / f"{name}.npy", w)
    return out


def _mst_total(w: np.ndarray) -> float:
    """H0's total persistence of the rows' Rips filtration: the minimum spanning tree's length."""
    return float(minimum_spanning_tree(squareform(pdist(w))).sum())


def test_a_new_branch_reaches_report_in_under_ten_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_workflow(repo)
    weights = _weights(tmp_path / "npy")
    touched = _add_branch(repo, tmp_path / "npy")
    assert len(touched) < 10, touched
    cmd = [*SNAKEMAKE, "--snakefile", str(repo / "Snakefile"), "--directory", str(repo)]
    env = dict(os.environ, PYTHONPATH=str(repo / "src"))  # the copy's package, from the start
    proc = subprocess.run([*cmd, "--cores", "2"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = (repo / "results" / "REPORT.md").read_text()
    assert "## Weights from .npy files" in report
    section = report[report.index("## Weights from .npy files") :]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if line.startswith("| ")][1:]
    assert [int(step) for step, *_ in rows] == list(STEPS)
    for (_, n_layers, h0_total), step_weights in zip(rows, weights.values(), strict=True):
        assert int(n_layers) == 2
        expected = sum(_mst_total(w) for w in step_weights)
        assert float(h0_total) == pytest.approx(expected, rel=1e-3)  # the table's 4 digits


def test_the_layout_page_lists_exactly_the_files_the_branch_touches(tmp_path: Path) -> None:
    """docs/layout.md's recipe quotes the count and names each file _add_branch adds or edits
    (``<branch>`` for the branch's name)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_workflow(repo)
    touched = _add_branch(repo, tmp_path / "npy")
    text = (ROOT / "docs" / "layout.md").read_text()
    assert f"**A new input branch: {len(touched)} files**" in text
    recipe = text[text.index("**A new input branch") : text.index("A branch with figures")]
    for path in touched:
        assert f"`{path.replace(BRANCH, '<branch>')}`" in recipe, path
