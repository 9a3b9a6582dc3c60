"""The runs: branch end to end: a transformers.Trainer run of a tiny GPT-2 and save_pretrained
series of a sharded Llama-style and a GPT-NeoX model, analysed by the workflow with the spine and
Pythia off; what reruns when a checkpoint or a run is added."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import planned_counts, run_snakemake, tiny_config, write_corpus
from run_fixtures import saved_series, trainer_run

from topotrain.topology.layers import layer_records

pytestmark = pytest.mark.long  # an end-to-end workflow run: `make test-long` (.ci/run runs it)

hub_cache = pytest.importorskip("benchmarks.hub_cache")

CONV1D = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")  # GPT-2 stores these (in, out)
RUN_RULES = {
    "run_layers",
    "run_weight_topology",
    "run_diagram_series",
    "run_features",
    "run_analysis",
}


def runs_config(workdir) -> dict:
    """The tiny config with the spine and Pythia off and three runs."""
    train, valid = write_corpus(workdir)
    config = tiny_config(train, valid)
    config["spine"] = {"enabled": False}
    config["analysis"]["bootstrap_resamples"] = 100
    config["runs"] = {
        "gpt2-trainer": {"path": "trainer", "losses": "trainer/checkpoint-80/trainer_state.json"},
        "llama-sharded": {"path": "llama", "glob": "step-*", "losses": "llama/losses.csv"},
        "neox": {"path": "neox", "glob": "step-*"},
    }
    return config


@pytest.fixture(scope="module")
def runs_study(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("runs-study")
    trainer_run(workdir / "trainer", steps=80, save_steps=10)
    saved_series(workdir / "llama", "llama", steps=(0, 10, 20, 30, 40), shards=True)
    saved_series(workdir / "neox", "gpt_neox", steps=(0, 100, 200, 300))
    config = runs_config(workdir)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(workdir, "--cores", "2")
    return workdir


def trainer_log(workdir) -> list[dict]:
    with open(workdir / "trainer/checkpoint-80/trainer_state.json") as fh:
        return json.load(fh)["log_history"]


def test_trainer_run_gives_one_row_per_checkpoint_with_its_logged_losses(runs_study):
    table = pd.read_parquet(runs_study / "results/runs/gpt2-trainer/features.parquet")
    assert table["step"].tolist() == list(range(10, 90, 10))
    assert (table["model"] == "gpt2-trainer").all() and (table["seed"] == 0).all()
    np.testing.assert_allclose(table["frac"], table["step"] / 80)
    log = trainer_log(runs_study)
    for row in table.itertuples():
        evals = [e["eval_loss"] for e in log if e["step"] == row.step and "eval_loss" in e]
        losses = [e["loss"] for e in log if row.step - 10 < e["step"] <= row.step and "loss" in e]
        assert row.val_loss == pytest.approx(evals[0])
        assert row.train_loss == pytest.approx(sum(losses) / len(losses))
    assert table["val_loss"].iloc[-1] < table["val_loss"].iloc[0]  # the run learned
    assert (table["n_layers"] == 8).all() and table["n_params"].iloc[0] > 0
    assert not table["equals_final"].any() and (table["same_weights_as"] == "").all()


def test_trainer_run_topology_is_the_per_layer_loop_on_transposed_conv1d_rows(runs_study):
    from safetensors.numpy import load_file

    config = yaml.safe_load((runs_study / "config.yaml").read_text())
    tensors = load_file(str(runs_study / "trainer/checkpoint-80/model.safetensors"))
    matrices = {
        k: v.T.astype(np.float64)
        for k, v in tensors.items()
        if k.endswith(tuple(f"{m}.weight" for m in CONV1D))
    }
    topo = config["topology"]
    records, _ = layer_records(
        matrices, ["*"], {k: topo[k] for k in ("max_points", "seed", "maxdim")}
    )
    table = pd.read_parquet(runs_study / "results/runs/gpt2-trainer/features.parquet")
    last = table.iloc[-1]
    assert last["np_mean"] == pytest.approx(np.mean([r["np_total"] for r in records]))
    assert last["h0_total"] == pytest.approx(sum(r["h0_total"] for r in records))
    assert last["h1_total"] == pytest.approx(sum(r["h1_total"] for r in records))
    layers = pd.read_parquet(runs_study / "results/runs/gpt2-trainer/features_layers.parquet")
    rows = layers[layers["step"] == 80].set_index("layer")["rows"].to_dict()
    assert rows["transformer.h.0.attn.c_attn.weight"] == 3 * 16  # output neurons: q, k and v
    assert rows["transformer.h.0.mlp.c_fc.weight"] == 4 * 16
    # WeightWatcher's fields in the same record (topology.weightwatcher), the package on the
    # matrices read here: 16 eigenvalues each, fits it calls small
    from topotrain.baselines.weightwatcher import ww_layers

    last_layers = layers[layers["step"] == 80].set_index("layer")
    for r in ww_layers(matrices):
        assert last_layers.loc[r["layer"], "ww_alpha"] == pytest.approx(r["alpha"], rel=1e-6)
        assert last_layers.loc[r["layer"], "ww_fit"] == r["fit"] == "small"
    fitted = [r["alpha"] for r in ww_layers(matrices)]
    assert last["ww_alpha_mean"] == pytest.approx(np.mean(fitted), rel=1e-6)
    assert last["ww_small_layers"] == 8 and last["ww_skipped_layers"] == 0


def test_every_run_has_its_analysis_and_its_section_in_the_report(runs_study):
    results = runs_study / "results"
    report = (results / "REPORT.md").read_text()
    for name in ("gpt2-trainer", "llama-sharded", "neox"):
        assert f"## Run `{name}`" in report
        for fig in ("run_losses", "run_np", "run_homology"):
            assert (results / f"runs/{name}/figures/{fig}.png").stat().st_size > 0
        phases = pd.read_csv(results / f"runs/{name}/tables/phases.csv")
        assert len(phases) == 1 and phases["model"].iloc[0] == name
    assoc = pd.read_csv(results / "runs/gpt2-trainer/tables/associations.csv")
    assert set(assoc["target"]) == {"train_loss", "val_loss"}
    assert set(assoc["view"]) == {
        "raw",
        "detrended",
        "partial_step",
        "partial_l2",
        "seed_contrast",
        "seed_contrast_l2",
        "seed_comove",
        "seed_comove_l2",
    }
    contrast = assoc[assoc["view"].str.startswith("seed_")]  # one run: nothing to contrast with
    assert contrast["p"].isna().all() and not assoc["beats_clock"].any()
    assert "A single run cannot separate topology from the clock" in report
    wanted = {"step", "l2_norm_mean", "lr", "grad_norm", "np_mean", "h0_total"}
    assert wanted <= set(assoc["feature"])
    assert "found by the architecture `GPT2LMHeadModel`" in report
    assert "8 stored (in, out) and transposed" in report
    assert "14 matrices found by the architecture `LlamaForCausalLM`" in report  # 7 per block
    neox = report.split("## Run `neox`")[1]
    assert "losses: none given" in neox and "associations with loss not computed" in neox
    assert not (results / "features").exists()  # the spine is off


def test_sharded_llama_series_reads_every_shard(runs_study):
    layers = pd.read_parquet(runs_study / "results/runs/llama-sharded/features_layers.parquet")
    assert layers.groupby("step")["layer"].nunique().tolist() == [14] * 5
    table = pd.read_parquet(runs_study / "results/runs/llama-sharded/features.parquet")
    assert table["train_loss"].notna().all()  # CSV `loss` → train_loss, `eval_loss` → val_loss
    assert table["val_loss"].iloc[0] == pytest.approx(4.2 + 1.1)  # logged at step 0


def test_finished_runs_have_nothing_to_do(runs_study):
    assert planned_counts(runs_study) == {}


def test_adding_a_checkpoint_reruns_only_that_checkpoint_and_its_runs_tables(runs_study):
    shutil.copytree(runs_study / "neox/step-300", runs_study / "neox/step-400")
    try:
        counts = planned_counts(runs_study)
    finally:
        shutil.rmtree(runs_study / "neox/step-400")
    assert counts == {
        "run_weight_topology": 1,
        "run_diagram_series": 1,
        "run_features": 1,
        "run_analysis": 1,
        "report_markdown": 1,
        "all": 1,
    }


def test_rotation_keeps_history_and_a_new_first_checkpoint_reruns_nothing_else(runs_study):
    """save_total_limit deletes step-0 and step-50 appears: step 0's topology stays in the series
    (flagged weights_gone), the layer map is not derived again and no other checkpoint's
    topology reruns; only step 50's does."""
    shutil.copytree(runs_study / "neox/step-0", runs_study / "neox/step-50")
    shutil.move(runs_study / "neox/step-0", runs_study / "step-0-aside")
    try:
        counts = planned_counts(runs_study)
    finally:
        shutil.move(runs_study / "step-0-aside", runs_study / "neox/step-0")
        shutil.rmtree(runs_study / "neox/step-50")
    assert counts == {
        "run_weight_topology": 1,
        "run_diagram_series": 1,
        "run_features": 1,
        "run_analysis": 1,
        "report_markdown": 1,
        "all": 1,
    }


def test_a_rotated_checkpoint_stays_in_the_series_flagged(runs_study, tmp_path):
    work = tmp_path / "copy"
    shutil.copytree(runs_study, work, symlinks=True)
    shutil.rmtree(work / "neox/step-0")
    run_snakemake(work, "--cores", "2")
    table = pd.read_parquet(work / "results/runs/neox/features.parquet")
    assert table["step"].tolist() == [0, 100, 200, 300]
    assert table["weights_gone"].tolist() == [True, False, False, False]
    before = pd.read_parquet(runs_study / "results/runs/neox/features.parquet")
    assert table["h0_total"].tolist() == before["h0_total"].tolist()  # the kept record's values
    report = (work / "results/REPORT.md").read_text()
    assert "whose weights are gone since their topology was computed — steps [0]" in report


def test_adding_a_run_reruns_only_that_runs_jobs(runs_study, tmp_path):
    saved_series(runs_study / "olmo", "olmo", steps=(0, 5, 10))
    overlay = tmp_path / "olmo.yaml"
    overlay.write_text(yaml.safe_dump({"runs": {"olmo": {"path": "olmo", "glob": "step-*"}}}))
    try:
        counts = planned_counts(runs_study, "--configfile", str(overlay))
    finally:
        shutil.rmtree(runs_study / "olmo")
    assert counts == {
        "run_layers": 1,
        "run_weight_topology": 3,
        "run_diagram_series": 1,
        "run_features": 1,
        "run_analysis": 1,
        "report_markdown": 1,
        "all": 1,
    }


def test_changing_a_runs_layers_reruns_its_topology_not_the_other_runs(runs_study, tmp_path):
    overlay = tmp_path / "layers.yaml"
    entry = {"path": "neox", "glob": "step-*", "layers": ["*.attention.*"]}
    overlay.write_text(yaml.safe_dump({"runs": {"neox": entry}}))
    counts = planned_counts(runs_study, "--configfile", str(overlay))
    assert counts == {
        "run_layers": 1,
        "run_weight_topology": 4,
        "run_diagram_series": 1,
        "run_features": 1,
        "run_analysis": 1,
        "report_markdown": 1,
        "all": 1,
    }


# --- hub runs: revisions from a fabricated Hugging Face cache, offline --------------------------


def hub_config(workdir, entry: dict) -> None:
    """config.yaml with one hub run, ``series`` (spine off)."""
    config = runs_config(workdir)
    config["runs"] = {"series": entry}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def hub_study(workdir, entry: dict, hf_home, *args: str):
    """Run the workflow with one hub run (spine off) offline on ``hf_home``'s cache."""
    hub_config(workdir, entry)
    env = {"HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        return run_snakemake(workdir, "--cores", "2", *args, check=False)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def test_hub_run_lists_revisions_by_pattern_from_the_offline_cache(tmp_path):
    hf_home = tmp_path / "hf"
    hub_cache.make_tiny_neox_cache(hf_home, model_id="acme/tiny", steps=[0, 1, 2, 10])
    entry = {"hub": "acme/tiny", "revision_pattern": r"step[0-9]"}  # step10 left out
    proc = hub_study(tmp_path, entry, hf_home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = pd.read_parquet(tmp_path / "results/runs/series/features.parquet")
    assert table["step"].tolist() == [0, 1, 2]
    assert (table["n_layers"] == 8).all()  # 4 linear maps per GPT-NeoX block, 2 blocks
    record = json.loads((tmp_path / "results/runs/series/revisions/step_1.json").read_text())
    assert record["revision"] == "step1" and record["weights"] == ["model.safetensors"]
    listed = json.loads((tmp_path / "results/runs/series/revisions.json").read_text())
    assert listed["revisions"] == [{"revision": f"step{s}", "step": s} for s in (0, 1, 2)]


def test_a_revision_pattern_is_resolved_once_by_its_checkpoint_job_not_while_parsing(
    tmp_path, monkeypatch
):
    """Planned before any branch is cached (a parse that listed them would stop): run_revisions and
    no per-revision job; once it has run, one fetch and one topology job per branch; a branch pushed
    later waits for --forcerun run_revisions, which then runs only its jobs and the run's tables."""
    hf_home = tmp_path / "hf"
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_config(tmp_path, {"hub": "acme/tiny", "revision_pattern": r"step\d+"})
    planned = planned_counts(tmp_path)
    assert planned["run_revisions"] == 1
    assert not {"fetch_run_revision", "run_weight_topology"} & set(planned)
    hub_cache.make_tiny_neox_cache(hf_home, model_id="acme/tiny", steps=[0, 10])
    run_snakemake(tmp_path, "--cores", "1", "results/runs/series/revisions.json")
    planned = planned_counts(tmp_path)
    assert "run_revisions" not in planned
    assert planned["fetch_run_revision"] == planned["run_weight_topology"] == 2
    run_snakemake(tmp_path, "--cores", "2")
    hub_cache.make_tiny_neox_cache(hf_home, model_id="acme/tiny", steps=[20])
    assert planned_counts(tmp_path) == {}  # the branches are those of revisions.json
    kept = [tmp_path / f"results/runs/series/{f}" for f in ("layers.json", "topology/step_0.json")]
    before = [f.stat().st_mtime_ns for f in kept]
    run_snakemake(tmp_path, "--cores", "2", "--forcerun", "run_revisions")
    assert [f.stat().st_mtime_ns for f in kept] == before
    table = pd.read_parquet(tmp_path / "results/runs/series/features.parquet")
    assert table["step"].tolist() == [0, 10, 20]


def test_identical_weights_in_a_hub_run_stop_it_naming_steps_file_and_hash(tmp_path):
    hf_home = tmp_path / "hf"
    commits = hub_cache.make_tiny_neox_cache(
        hf_home, model_id="acme/tiny", steps=[0, 1, 2], same_weights={0: 2}
    )
    snapshot = hf_home / "hub/models--acme--tiny/snapshots" / commits[0]
    sha = hashlib.sha256((snapshot / "model.safetensors").read_bytes()).hexdigest()
    entry = {"hub": "acme/tiny", "revisions": ["step0", "step1", "step2"]}
    stopped = hub_study(tmp_path, entry, hf_home)
    log = (tmp_path / "results/logs/runs/series/features.log").read_text()
    assert stopped.returncode != 0 and "IdenticalWeightsError: runs.series" in log
    assert f"steps 0, 2 (final): model.safetensors, sha256 {sha}" in log
    assert "runs.series.allow_identical_steps: true" in log
    assert not (tmp_path / "results/runs/series/features.parquet").exists()
    allowed = hub_study(tmp_path, {**entry, "allow_identical_steps": True}, hf_home)
    assert allowed.returncode == 0, allowed.stderr[-3000:]
    table = pd.read_parquet(tmp_path / "results/runs/series/features.parquet")
    assert table["same_weights_as"].tolist() == ["2", "", "0"]
    assert table["equals_final"].tolist() == [True, False, False]
    assert "equal to the final step's: [0]" in (tmp_path / "results/REPORT.md").read_text()


def test_identical_files_in_a_local_run_stop_it_too(tmp_path):
    """The same check on a local folder (sha256 of each file): a copy of the final checkpoint."""
    saved_series(tmp_path / "neox", "gpt_neox", steps=(0, 100, 200))
    shutil.copytree(tmp_path / "neox/step-200", tmp_path / "neox/step-300")
    config = runs_config(tmp_path)
    config["runs"] = {"neox": {"path": "neox", "glob": "step-*"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = run_snakemake(tmp_path, "--cores", "2", check=False)
    log = (tmp_path / "results/logs/runs/neox/features.log").read_text()
    assert proc.returncode != 0
    assert "steps 200, 300 (final): model.safetensors, sha256" in log


def test_preflight_names_a_hub_runs_revisions_missing_from_the_offline_cache(tmp_path):
    entry = {"hub": "acme/absent", "revisions": ["step0", "step100"]}
    proc = hub_study(tmp_path, entry, tmp_path / "empty-hf")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "Preflight" in output
    assert "acme/absent step0, step100" in output
    assert "huggingface-cli download acme/absent --revision step0" in output
    assert not (tmp_path / "results" / "runs").exists()
