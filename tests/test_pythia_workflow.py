"""The Pythia branch end to end through Snakemake, on tiny GPT-NeoX models in a
fabricated hub cache."""

from __future__ import annotations

import hashlib
import json
import os

import pandas as pd
import pytest
import yaml
from conftest import ROOT, planned_counts, run_snakemake, tiny_config, write_corpus

from topotrain.config import GPT_NEOX_LAYERS

pytestmark = pytest.mark.long  # an end-to-end workflow run: `make test-long` (.ci/run runs it)

hub_cache = pytest.importorskip("benchmarks.hub_cache")

MODELS = ["EleutherAI/pythia-tiny-a", "EleutherAI/pythia-tiny-b"]
STEPS = [0, 1, 2, 4]
TARGETS = [
    "results/tables/pythia_comparison.csv",
    "results/tables/pythia_weights.csv",
    *(f"results/figures/{n}.png" for n in ("pythia_weights", "pythia_rho", "pythia_features")),
    "results/REPORT.md",  # the weight study's report, with the Pythia tables merged in
]


def pythia_config(models, steps):
    return {
        "enabled": True,
        "weights": {
            "models": models[:1],
            "steps": steps,
            "layers": list(GPT_NEOX_LAYERS),
            "max_points": 40,
            "seed": 0,
        },
        "embeddings": {
            "models": models,
            "steps": steps,
            "n_texts": 24,
            "min_chars": 60,
            "text_seed": 0,
            "max_length": 32,
            "batch_size": 8,
            "pca_dims": 6,
            "maxdim": 1,
            "dtype": "auto",
            "device": "cpu",
        },
        "bootstrap_resamples": 200,
    }


@pytest.fixture(scope="module")
def pythia_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("pythia")
    hf_home = workdir / "hf"
    for i, model in enumerate(MODELS):
        hub_cache.make_tiny_neox_cache(hf_home, model_id=model, steps=STEPS, seed=10 * i)
    train, _ = write_corpus(workdir, n_chars=2_000)
    valid = workdir / "paragraphs.txt"
    valid.write_text("\n".join(hub_cache.paragraphs()) + "\n")
    config = tiny_config(train, valid)
    config["pythia"] = pythia_config(MODELS, STEPS)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    env = {"HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        proc = run_snakemake(workdir, "--cores", "2", *TARGETS, timeout=1800)  # CI: 2 busy cores
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return workdir, proc


def test_branch_writes_one_row_per_revision(pythia_run):
    workdir, _ = pythia_run
    tables = workdir / "results" / "tables"
    emb = pd.read_csv(tables / "pythia_embeddings.csv")
    assert sorted(zip(emb["model"], emb["step"], strict=True)) == sorted(
        (m, s) for m in MODELS for s in STEPS
    )
    assert (emb["perplexity"] > 1).all() and emb["effective_rank"].between(
        1, 24 - 1 + 1e-9
    ).all()  # ≤ rank of 24 centred texts
    assert emb.groupby("model")["wasserstein_h1"].apply(lambda w: w.isna().sum()).tolist() == [1, 1]
    weights = pd.read_csv(tables / "pythia_weights.csv")
    assert weights["step"].tolist() == STEPS and (weights["n_layers"] == 4 * 2).all()
    assert weights["ww_alpha_mean"].notna().all()  # WeightWatcher in the revision records
    assert (weights["ww_small_layers"] + weights["ww_skipped_layers"] <= 4 * 2).all()
    comparison = pd.read_csv(tables / "pythia_comparison.csv")
    assert {"topological", "spectral"} == set(comparison["kind"])
    corr = pd.read_csv(tables / "pythia_correlations.csv")
    assert len(corr) == len(MODELS) * len(comparison)
    for name in ("pythia_weights", "pythia_rho", "pythia_features"):
        assert (workdir / "results" / "figures" / f"{name}.png").stat().st_size > 1000


def test_revisions_resolve_to_their_own_snapshots(pythia_run):
    workdir, _ = pythia_run
    commits = set()
    for step in STEPS:
        rev = yaml.safe_load(
            (
                workdir / f"results/pythia/revisions/EleutherAI--pythia-tiny-a/step_{step}.json"
            ).read_text()
        )
        assert rev["revision"] == f"step{step}" and rev["snapshot"].endswith(rev["commit"])
        commits.add(rev["commit"])
    assert len(commits) == len(STEPS)


def test_missing_revision_fails_with_the_download_command(tmp_path):
    hf_home = tmp_path / "hf"
    hub_cache.make_tiny_neox_cache(hf_home, model_id=MODELS[0], steps=[0], seed=0)
    train, _ = write_corpus(tmp_path, n_chars=2_000)
    valid = tmp_path / "paragraphs.txt"
    valid.write_text("\n".join(hub_cache.paragraphs()) + "\n")
    config = tiny_config(train, valid)
    config["pythia"] = pythia_config(MODELS[:1], [0, 99])
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    os.environ.update(HF_HOME=str(hf_home), HF_HUB_OFFLINE="1")
    try:
        target = "results/pythia/revisions/EleutherAI--pythia-tiny-a/step_99.json"
        # --no-hooks skips the preflight (tests/test_preflight.py): the fetch job's own error shows
        proc = run_snakemake(tmp_path, "--cores", "1", "--no-hooks", target, check=False)
    finally:
        os.environ.pop("HF_HOME")
        os.environ.pop("HF_HUB_OFFLINE")
    log = (tmp_path / "results/logs/pythia/fetch/EleutherAI--pythia-tiny-a/step_99.log").read_text()
    assert proc.returncode != 0 and not (tmp_path / target).exists()
    assert (
        "step99" in log
        and "huggingface-cli download EleutherAI/pythia-tiny-a --revision step99" in log
    )


def test_adding_a_pythia_step_reruns_only_that_revisions_jobs(pythia_run):
    workdir, _ = pythia_run
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    for part in ("weights", "embeddings"):
        config["pythia"][part]["steps"] = [*STEPS, 8]
    (workdir / "more-steps.yaml").write_text(yaml.safe_dump(config))
    jobs = planned_counts(workdir, *TARGETS, "--configfile", str(workdir / "more-steps.yaml"))
    assert jobs == {
        "fetch_pythia": 2,  # step8 of both models (the weights model is one of them)
        "pythia_weight_topology": 1,
        "pythia_embedding_topology": 2,
        "pythia_weight_tables": 1,
        "pythia_embedding_tables": 1,
        "pythia_weight_figure": 1,
        "pythia_figures": 1,
        "replication": 1,  # reads pythia_weights.csv (Table 8)
        "report_markdown": 1,  # (primary.csv, which the answer's figures read, stands)
    }


def test_pythia_tables_and_figures_join_both_reports(pythia_run):
    workdir, _ = pythia_run
    report = (workdir / "results" / "REPORT.md").read_text()
    for title in ("Pythia: weight topology over training", "Pythia: topological vs spectral"):
        assert f"## {title}" in report
    table = (workdir / "results" / "tables" / "pythia_correlations.md").read_text()
    assert "effective_rank" in table and "participation_ratio" in table  # the whole table
    assert "[tables/pythia_correlations.md](tables/pythia_correlations.md)" in report  # linked
    run_snakemake(workdir, "--report", "report.html", *TARGETS)
    html = (workdir / "report.html").read_text(errors="replace")
    for name in ("pythia_weights.png", "pythia_rho.png", "pythia_comparison.csv"):
        assert name in html, name


def test_default_config_plans_every_pythia_revision():
    counts = planned_counts(ROOT, "--config", "results=/tmp/topotrain-plan-only")
    assert counts["pythia_weight_topology"] == 7 and counts["pythia_embedding_topology"] == 57
    assert counts["fetch_pythia"] == 7 + 57
    runs = 5 * 6  # 5 models × 6 seeds (the design since issue 56)
    assert counts["train_model"] == runs
    assert counts["training_topology"] == runs  # one job per training: 201 checkpoints each
    assert "weight_topology" not in counts


def test_identical_weights_at_two_steps_stop_the_run_unless_allowed(tmp_path):
    """step0 serves step2's weights (one blob, as on pythia-2.8b's branches): the weight-tables job
    stops naming both steps, the file and the hash; allow_identical_steps: true flags them."""
    hf_home = tmp_path / "hf"
    commits = hub_cache.make_tiny_neox_cache(
        hf_home, model_id=MODELS[0], steps=[0, 1, 2], same_weights={0: 2}
    )
    repo = hf_home / "hub" / f"models--{MODELS[0].replace('/', '--')}"
    blob = (repo / "snapshots" / commits[0] / "model.safetensors").resolve()
    sha = hashlib.sha256(blob.read_bytes()).hexdigest()
    train, _ = write_corpus(tmp_path, n_chars=2_000)
    config = tiny_config(train, train)
    config["pythia"] = pythia_config(MODELS[:1], [0, 1, 2])
    config["pythia"]["embeddings"].update(models=[], steps=[])
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    config["pythia"]["allow_identical_steps"] = True
    (tmp_path / "allow.yaml").write_text(yaml.safe_dump(config))
    target = "results/tables/pythia_weights.csv"
    env = {"HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        stopped = run_snakemake(tmp_path, "--cores", "2", target, check=False)
        log = (tmp_path / "results/logs/pythia/weight_tables.log").read_text()
        assert not (tmp_path / target).exists()
        run_snakemake(
            tmp_path, "--cores", "2", target, "--configfile", str(tmp_path / "allow.yaml")
        )
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    assert stopped.returncode != 0 and "IdenticalWeightsError" in log
    assert f"steps 0, 2 (final): model.safetensors, sha256 {sha}" in log
    weights = pd.read_csv(tmp_path / target, keep_default_na=False)
    assert weights["same_weights_as"].astype(str).tolist() == ["2", "", "0"]
    assert weights["equals_final"].tolist() == [True, False, False]


def test_keep_weights_false_releases_each_revision_after_its_records_and_spares_the_cache(
    pythia_run, monkeypatch
):
    """Offline, the fetches downloaded nothing: the release jobs run (one per revision, after
    its records, rerunning none of them) and leave every blob the cache held."""
    workdir, _ = pythia_run
    hf_home = workdir / "hf"
    blobs = {p: p.stat().st_size for p in hf_home.rglob("blobs/*")}
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["pythia"]["keep_weights"] = False
    (workdir / "release.yaml").write_text(yaml.safe_dump(config))
    revisions = {
        (model.replace("/", "--"), step)
        for part in ("weights", "embeddings")
        for model in config["pythia"][part]["models"]
        for step in config["pythia"][part]["steps"]
    }
    targets = [f"results/pythia/released/{m}/step_{s}.json" for m, s in sorted(revisions)]
    args = (*targets, "--configfile", str(workdir / "release.yaml"))
    assert planned_counts(workdir, *args) == {"release_pythia_weights": len(revisions)}
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_snakemake(workdir, "--cores", "2", *args)
    assert all(json.loads((workdir / t).read_text())["removed"] == [] for t in targets)
    assert {p: p.stat().st_size for p in hf_home.rglob("blobs/*")} == blobs
