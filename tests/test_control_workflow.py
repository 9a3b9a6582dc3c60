"""The grokking control through the real rules: a tiny config (p = 23, 400 steps, 4 seeds of
which two grok and two never do), the spine and Pythia off; and bad knobs stop before any job."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from conftest import run_snakemake, tiny_config, write_corpus

from topotrain.analysis.control.grokking import NEVER

TINY_CONTROL = {
    "enabled": True,
    "p": 23,
    "train_frac": 0.9,
    "width": 32,
    "heads": 4,
    "mlp": 64,
    "steps": 400,
    "interval": 20,
    "lr": 1.0e-2,
    "weight_decay": 1.0,
    "beta2": 0.98,
    "seeds": [0, 1, 2, 3],
    "fourier_k": 5,
    "threads": 1,
}  # measured: seeds 2 and 3 grok (steps 380, 160), 0 and 1 end at 0.91


def control_config(tmp_path, **knobs) -> None:
    train, valid = write_corpus(tmp_path)
    config = tiny_config(train, valid)
    config["spine"] = {"enabled": False}
    config["control"] = {**TINY_CONTROL, **knobs}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))


def test_the_control_branch_runs_and_reports_a_seed_that_never_groks(tmp_path):
    control_config(tmp_path)
    run_snakemake(tmp_path, "--cores", "2")
    results = tmp_path / "results"
    seeds = pd.read_csv(results / "tables" / "control_seeds.csv")
    per_seed = seeds.drop_duplicates("seed").set_index("seed")
    assert per_seed["grokking_step"].notna().tolist() == [False, False, True, True]
    assert (per_seed.loc[[0, 1], "note"] == NEVER).all()  # kept and named, not dropped
    metrics = pd.read_csv(results / "control" / "seed3" / "metrics.csv")
    first = metrics[metrics["test_acc"] >= 0.95]["step"].iloc[0]
    assert per_seed.loc[3, "grokking_step"] == first
    table = pd.read_csv(results / "tables" / "control.csv").set_index("feature")
    assert table.loc["emb_h1_total", "n_grokked"] == 2
    features = pd.read_parquet(results / "features" / "control.parquet")
    assert len(features) == 4 * 21 and features["np_wvar_mean"].notna().all()
    verdicts = pd.read_csv(results / "tables" / "control_verdicts.csv").set_index("claim")
    assert verdicts.loc["topology leads grokking", "verdict"] == "not evaluated"  # 2 < 3 seeds
    report = (results / "REPORT.md").read_text()
    assert "## Positive control: grokking" in report and "Never grokked" in report
    assert (results / "figures" / "control_curves.png").stat().st_size > 0
    # WeightWatcher beside topology (topology.weightwatcher, on by default): every 2-D matrix of
    # every checkpoint: 23 to 32 eigenvalues each but the 3 × 32 positional embedding's 3
    ww = pd.read_parquet(results / "control" / "seed0" / "weightwatcher.parquet")
    assert set(ww["step"]) == set(range(0, 401, 20)) and len(ww) == 21 * 7
    assert set(ww.loc[ww["layer"] == "pos", "fit"]) == {"skipped"}
    assert set(ww.loc[ww["layer"] != "pos", "fit"]) <= {"fitted", "warned"}
    assert features["ww_alpha_mean"].notna().all() and (features["ww_small_layers"] == 0).all()
    assert (features["ww_skipped_layers"] == 1).all()
    diag = pd.read_csv(results / "tables" / "control_diagnostics.csv").set_index("feature")
    assert {"emb_h1_total", "ww_alpha_mean", "fourier_top5"} <= set(diag.index)
    assert diag.loc["ww_alpha_mean", "kind"] == "weightwatcher"
    assert table.loc["ww_alpha_mean", "kind"] == "weightwatcher"
    assert "### Beside the field's weight diagnostics" in report
    assert "Nanda et al.'s Fourier measure, the known progress measure" in report


@pytest.mark.parametrize(("knob", "value"), [("p", 4), ("train_frac", 1.0), ("interval", 30)])
def test_bad_control_knobs_stop_before_any_job(tmp_path, knob, value):
    control_config(tmp_path, **{knob: value})
    proc = run_snakemake(tmp_path, "-n", "--cores", "1", check=False)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert (
        ("control" in text and knob in text)
        if knob != "interval"
        else "control.interval=30" in text
    )
    assert not (tmp_path / "results").exists()
