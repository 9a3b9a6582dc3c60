"""baselines.llc end to end on the tiny study: an LLC job per training over every every-th
checkpoint, its rows joined to the feature table (NaN at the checkpoints it skips), and the LLC
under the same questions as the topology: associations (kind llc) and the diagnostics table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import run_snakemake, tiny_config, write_corpus

pytest.importorskip("devinterp", reason="the llc extra (devinterp) is not installed")
pytestmark = pytest.mark.long  # an end-to-end workflow run: `make test-long` (.ci/run runs it)

LLC = {"enabled": True, "every": 2, "chains": 2, "draws": 8, "batch_size": 4,
       "init_batches": 2, "sequences": 16, "lr": 1e-4}  # fmt: skip


@pytest.fixture(scope="module")
def llc_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("llc")
    train, valid = write_corpus(workdir)
    config = tiny_config(train, valid) | {"baselines": {"llc": LLC}}
    config["control"] = {"enabled": True, "seeds": [0, 1, 2], "steps": 100, "interval": 25}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    targets = ["results/tables/associations.csv", "results/tables/diagnostics.csv"]
    targets += ["results/tables/control_diagnostics.csv"]
    run_snakemake(workdir, "--cores", "2", *targets, timeout=1200)
    return workdir


def test_the_llc_column_holds_each_trainings_llc_table_at_its_steps(llc_run):
    weights = pd.read_csv(llc_run / "results/features/weights.csv")
    for (model, seed), run in weights.groupby(["model", "seed"]):
        table = pd.read_parquet(llc_run / f"results/llc/{model}/seed{seed}.parquet")
        assert table["step"].tolist() == [0, 20, 40]  # every 2nd of 0, 10, …, 40 and the last
        joined = run.set_index("step")["llc"]
        assert np.allclose(joined.loc[[0, 20, 40]], table["llc"], rtol=1e-12)
        assert joined.loc[[10, 30]].isna().all()
        traces = np.load(llc_run / f"results/llc/{model}/seed{seed}_traces.npz")
        assert sorted(traces.files) == ["trace_0", "trace_20", "trace_40"]
        assert traces["trace_20"].shape == (2, 8)


def test_the_llc_stands_under_the_same_questions_as_the_topology(llc_run):
    assoc = pd.read_csv(llc_run / "results/tables/associations.csv")
    rows = assoc[assoc["feature"] == "llc"]
    assert not rows.empty and set(rows["kind"]) == {"llc"}
    diagnostics = pd.read_csv(llc_run / "results/tables/diagnostics.csv")
    assert "llc" in set(diagnostics["feature"])
    assert diagnostics.set_index("feature").loc["llc", "kind"] == "llc"


def test_changing_the_sampler_reruns_the_llc_jobs_only_downstream(llc_run):
    from conftest import planned_counts

    overlay = llc_run / "overlay.yaml"
    overlay.write_text(yaml.safe_dump({"baselines": {"llc": LLC | {"draws": 9}}}))
    jobs = planned_counts(llc_run, "results/features/weights.csv", "--configfile", str(overlay))
    assert jobs.get("llc") == 2 and "train_model" not in jobs and "training_topology" not in jobs


def test_the_control_gets_the_llc_of_its_seeds_and_its_diagnostics_row(llc_run):
    features = pd.read_parquet(llc_run / "results/features/control.parquet")
    for seed, run in features.groupby("seed"):
        table = pd.read_parquet(llc_run / f"results/control/seed{seed}/llc.parquet")
        assert table["step"].tolist() == [0, 50, 100]  # every 2nd of 0, 25, …, 100
        joined = run.set_index("step")["llc"]
        assert np.allclose(joined.loc[[0, 50, 100]], table["llc"], rtol=1e-12)
        assert joined.loc[[25, 75]].isna().all()
    diag = pd.read_csv(llc_run / "results/tables/control_diagnostics.csv").set_index("feature")
    assert diag.loc["llc", "kind"] == "llc" and np.isfinite(diag.loc["llc", "contrast_rho"])
    assert {"rho_llc", "p_llc", "beats_llc", "split_r_llc"} <= set(diag.columns)
