"""A group of your own seeds end to end: four real tiny trainings that differ only in their seed
(10 checkpoints each), analysed as runs of one group through the workflow; and a PolyPythias-shaped
offline hub cache (pythia-14m-seed1 … with step branches) as a group of hub runs."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import run_snakemake, tiny_config, write_corpus

from topotrain.sources.corpus import encode_text
from topotrain.training.model import GPTConfig
from topotrain.training.train import TrainConfig, train_model

pytestmark = pytest.mark.long  # an end-to-end workflow run: `make test-long` (.ci/run runs it)

hub_cache = pytest.importorskip("benchmarks.hub_cache")

SEEDS = (1, 2, 3, 4)
LAYERS = ["transformer.h.*.attn.c_attn.weight", "transformer.h.*.mlp.c_fc.weight"]


@pytest.fixture(scope="module")
def seed_runs(tmp_path_factory) -> Path:
    """root/seed<s>/: step_00000 … step_00090.safetensors and losses.csv (train and validation
    loss), one tiny GPT trained per seed on the same text, nothing else different."""
    root = tmp_path_factory.mktemp("recipe")
    train_txt, valid_txt = write_corpus(root, n_chars=12_000)
    bins = []
    for path in (train_txt, valid_txt):
        tokens, _ = encode_text(path.read_text())
        tokens.astype(np.uint8).tofile(path.with_suffix(".bin"))
        bins.append(path.with_suffix(".bin"))
    model = GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32)
    for seed in SEEDS:
        cfg = TrainConfig(
            steps=90,
            batch_size=8,
            lr=1e-2,
            warmup_steps=10,
            checkpoint_interval=10,
            eval_batches=2,
            eval_batch_size=8,
            seed=seed,
            threads=1,
            compile=False,
        )
        out = root / f"seed{seed}"
        train_model(model, cfg, *bins, out, root / f"state{seed}", progress=False)
        metrics = pd.read_csv(out / "metrics.csv")[["step", "train_loss"]]
        evals = pd.read_csv(out / "evals.csv")
        metrics.merge(evals, on="step", how="outer").to_csv(out / "losses.csv", index=False)
    return root


def group_config(workdir: Path, runs: dict, groups: dict | None = None) -> None:
    train, valid = write_corpus(workdir)
    config = tiny_config(train, valid)
    config["spine"] = {"enabled": False}
    config["analysis"]["bootstrap_resamples"] = 100
    config["topology"]["weightwatcher"] = False  # its import per checkpoint job: not tested here
    config["runs"] = runs
    config["groups"] = groups or {}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def test_four_real_seeds_analysed_with_the_cli_get_the_between_seed_rows_and_verdicts(
    seed_runs, tmp_path
):
    """topotrain analyse seed1 … seed4 --group recipe: the group's members, contrasts, family
    verdicts and report section (a --configfile beside keeps the test quick: 100 resamples, no
    WeightWatcher)."""
    fast = {"analysis": {"bootstrap_resamples": 100}, "topology": {"weightwatcher": False}}
    (tmp_path / "fast.yaml").write_text(yaml.safe_dump(fast))
    paths = [str(seed_runs / f"seed{s}") for s in SEEDS]
    losses = [str(seed_runs / f"seed{s}" / "losses.csv") for s in SEEDS]
    args = [*paths, "--group", "recipe", "--seed", *map(str, SEEDS), "--losses", *losses]
    args += ["--glob", "step_*.safetensors", "--layers", *LAYERS]
    args += ["--primary", "h0_total:+", "np_mean", "--cores", "2", "--configfile", "fast.yaml"]
    env = {k: v for k, v in os.environ.items() if k != "TOPOTRAIN_CLI"}
    proc = subprocess.run(
        [sys.executable, "-m", "topotrain.cli", "analyse", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = yaml.safe_load((tmp_path / "config.yaml").read_text())
    assert written["groups"] == {
        "recipe": {"primary": [{"feature": "h0_total", "sign": 1}, "np_mean"]}
    }
    results = tmp_path / "results"
    members = pd.read_csv(results / "groups/recipe/tables/members.csv")
    assert members["seed"].tolist() == list(SEEDS) and (members["shared_steps"] == 10).all()
    assert members["model"].nunique() == 1  # one size
    table = pd.read_csv(results / "groups/recipe/tables/contrasts.csv")
    family = table[table["role"] == "primary"]
    assert sorted(family["feature"].unique()) == ["h0_total", "np_mean"]
    assert set(family["target"]) == {"train_loss", "val_loss"}
    assert family["p_clock"].between(1 / 24, 1).all() and family["p_bh"].notna().all()
    assert set(family["verdict"]) <= {
        "tracks the loss beyond clock and scale",
        "beyond clock and scale, effect below Δ",
        "effect shown below Δ",
        "inconclusive",
    }
    # the one-sided h0_total rows' p is reachable down to 1/24; two-sided np_mean's to 2/24
    assert (family.loc[family["sign"] == "two-sided", "p_clock"] >= 2 / 24 - 1e-12).all()
    assert (table[table["role"] == "exploratory"]["verdict"] == "exploratory").all()
    report = (results / "REPORT.md").read_text()
    assert "## Group `recipe`: 4 runs, seeds of one recipe" in report
    assert "p < 0.05 is possible (smallest one-sided p 1/24, two-sided 2/24)" in report
    assert "where recorded: model_config, numerics" in report
    assert "### The pre-named family (`groups.recipe.primary`)" in report
    assert "| no interval (under 40 seed orders) |" in report  # 4 seeds: 24 orders


def test_seeds_trained_differently_stop_naming_the_runs_and_what_differs(seed_runs, tmp_path):
    """A seed of the same model trained on 2 threads instead of 1: its recorded numerics differ,
    and the group's job names the key and the runs."""
    odd = tmp_path / "odd"
    model = GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32)
    cfg = TrainConfig(
        steps=20, batch_size=4, warmup_steps=5, checkpoint_interval=10, seed=9, compile=False
    )
    bins = [seed_runs / "train.bin", seed_runs / "valid.bin"]
    train_model(model, replace(cfg, threads=2), *bins, odd, tmp_path / "state", progress=False)
    runs = {
        "a": {"path": str(seed_runs / "seed1"), "glob": "step_*.safetensors", "layers": LAYERS},
        "b": {"path": str(seed_runs / "seed2"), "glob": "step_*.safetensors", "layers": LAYERS},
        "c": {"path": str(odd), "glob": "step_*.safetensors", "layers": LAYERS},
    }
    for seed, entry in enumerate(runs.values()):
        entry.update(group="g", seed=seed)
    group_config(tmp_path, runs)
    proc = run_snakemake(tmp_path, "--cores", "2", check=False)
    assert proc.returncode != 0
    log = (tmp_path / "results/logs/groups/g.log").read_text()
    assert "group g: the seeds of size g" in log and "differ in numerics" in log
    assert "a: {" in log and "c: {" in log and "'threads': '2'" in log


def test_a_polypythias_shaped_cache_is_a_group_offline(tmp_path, monkeypatch):
    """EleutherAI/pythia-14m-seed1 … seed4, each with branches step0, step1, step2 (weights seeded
    apart), read from the Hugging Face cache with the hub unreachable; each seed's losses a CSV."""
    hf_home = tmp_path / "hf"
    runs = {}
    for seed in (1, 2, 3, 4):
        repo = f"EleutherAI/pythia-14m-seed{seed}"
        hub_cache.make_tiny_neox_cache(hf_home, model_id=repo, steps=[0, 1, 2], seed=100 * seed)
        rng = np.random.default_rng(seed)
        losses = tmp_path / f"losses-seed{seed}.csv"
        loss = np.array([5.0, 4.0, 3.5]) + rng.normal(0, 0.1, 3)
        pd.DataFrame({"step": [0, 1, 2], "loss": loss}).to_csv(losses, index=False)
        runs[f"pythia-14m-seed{seed}"] = {
            "hub": repo,
            "revisions": ["step0", "step1", "step2"],
            "losses": str(losses),
            "group": "pythia-14m",
            "seed": seed,
        }
    group_config(tmp_path, runs)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    run_snakemake(tmp_path, "--cores", "2")
    members = pd.read_csv(tmp_path / "results/groups/pythia-14m/tables/members.csv")
    assert members["run"].tolist() == [f"pythia-14m-seed{s}" for s in (1, 2, 3, 4)]
    assert (members["shared_steps"] == 3).all()
    table = pd.read_csv(tmp_path / "results/groups/pythia-14m/tables/contrasts.csv")
    assert (table["target"] == "train_loss").all() and table["p_clock"].notna().any()
    assert "## Group `pythia-14m`: 4 runs" in (tmp_path / "results/REPORT.md").read_text()
    assert os.environ["HF_HUB_OFFLINE"] == "1"
