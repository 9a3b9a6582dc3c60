"""Benchmark: the tiny workflow end to end, and planning the full study's DAG.

1. Wall time of ``snakemake --cores 2`` on the tiny two-model study (.test/config/config.yaml) up
   to the feature table, vs a plain reference measured in the same run: the same jobs (corpus,
   training, per-checkpoint topology, aggregate) called one after another in this process. The
   ratio is what Snakemake's scheduling and per-job process start-up cost (with 2 cores it can be
   < 1).
2. ``snakemake -n`` on the full default study (5 models × 3 seeds × 51 checkpoints + 64 Pythia
   revisions; the job count is read from the plan) vs ``snakemake -n`` on a one-rule Snakefile: the
   DAG's own planning cost.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.study import ROOT

SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TEST_STUDY = ROOT / ".test" / "config" / "config.yaml"  # the tiny study, as CI runs it


def tiny_study() -> dict:
    """The tiny study's config, its corpus (.test/data/) named by absolute paths."""
    config = yaml.safe_load(TEST_STUDY.read_text(encoding="utf-8"))
    corpus = config["corpus"]
    corpus.update({k: str(ROOT / corpus[k]) for k in ("train", "validation")})
    return config


def timed(cmd: list[str], cwd: Path) -> float:
    """Wall seconds of running ``cmd`` in ``cwd`` (it must succeed)."""
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def planned_jobs(cmd: list[str], cwd: Path) -> int:
    """The 'total' of a dry run's job-stats table."""
    proc = subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True)
    lines = (proc.stdout + proc.stderr).splitlines()
    totals = [line.split()[-1] for line in lines if line.startswith("total")]
    return int(totals[0])


def in_process_spine(workdir: Path, config: dict) -> float:
    """The tiny study's spine jobs, serially in this process (imports already paid)."""
    from topotrain.config import checkpoint_steps, fill_defaults, layer_patterns
    from topotrain.jobs.data import prepare_corpus_job
    from topotrain.jobs.topology import weight_topology_job
    from topotrain.jobs.train import train_model_job
    from topotrain.sources.corpus import VOCAB_SIZE
    from topotrain.training.run_state import published_files

    config = fill_defaults(copy.deepcopy(config))  # the workflow's view of it
    res, steps = workdir / "inproc", checkpoint_steps(config["train"])
    start = time.perf_counter()
    corpus = {k: str(res / f"{k}.bin") for k in ("train", "validation")}
    prepare_corpus_job(config["corpus"], {**corpus, "manifest": str(res / "manifest.json")})
    train = {k: v for k, v in config["train"].items() if k != "threads"}
    topo = config["topology"]
    params = {"patterns": layer_patterns(topo), **{k: topo[k] for k in ("max_points", "seed")}}
    params.update(maxdim=topo["maxdim"], engine=topo["engine"])
    for model, arch in config["models"].items():
        run = res / model
        arch = dict(arch, context=config["context"], vocab_size=VOCAB_SIZE)  # as get_model_arch
        state = str(res / "state" / model)
        data = (corpus["train"], corpus["validation"])
        train_model_job(
            model, arch, dict(train, seed=42), *data, published_files(run, steps), state
        )
        for s in steps:
            ckpt = str(run / f"step_{s:05d}.safetensors")
            out = {"record": str(run / f"{s}.json"), "diagrams": str(run / f"{s}.npz")}
            weight_topology_job(ckpt, params, out)
    return time.perf_counter() - start


def tiny_workflow() -> dict:
    """The tiny study up to the feature table under Snakemake, against its jobs in-process."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        config = tiny_study()
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
        cmd = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "results/features/weights.parquet"]
        workflow_s = timed([*cmd, "--cores", "2", "--quiet", "all"], workdir)
        reference_s = in_process_spine(workdir, config)
        n_jobs = 1 + 2 + 2 * 5 + 1
    return {
        "benchmark": "tiny_workflow",
        "jobs": n_jobs,
        "workflow_s": workflow_s,
        "reference_in_process_s": reference_s,
        "ratio": workflow_s / reference_s,
    }


def planning() -> dict:
    """Planning the full default study (``snakemake -n``) against planning a one-rule Snakefile."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        corpus = workdir / "c.txt"
        corpus.write_text("planning only\n" * 100)
        overlay = {"corpus": {"source": "files", "train": str(corpus), "validation": str(corpus)}}
        (workdir / "files.yaml").write_text(yaml.safe_dump(overlay))
        full = [*SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "-n", "--cores", "2"]
        full += ["--configfile", str(ROOT / "config.yaml"), str(workdir / "files.yaml")]
        study_s = min(timed(full, workdir) for _ in range(3))
        jobs = planned_jobs(full, workdir)
        (workdir / "Snakefile").write_text(
            'rule one:\n    output: "x"\n    shell: "touch {output}"\n'
        )
        trivial_s = min(timed([*SNAKEMAKE, "-n", "--cores", "2"], workdir) for _ in range(3))
    return {
        "benchmark": "planning",
        "jobs": jobs,
        "study_dry_run_s": study_s,
        "reference_one_rule_dry_run_s": trivial_s,
        "ratio": study_s / trivial_s,
    }


def run() -> list[dict]:
    """The two rows: ``tiny_workflow`` and ``planning``."""
    return [tiny_workflow(), planning()]
