"""End-to-end controls: a feature table with a known answer goes through the real analysis rules
(per-model views, associations, models, scaling, prediction, phases, primary family,
replication) to replication.csv.

The table has the paper's five model names × 5 seeds × 26 checkpoints. Its loss is a decelerating
curve plus each run's own fluctuation u. TP0 (``h0_total``) has the paper's sign in every run in
both studies; in one it also carries −u (a real signal: reproduced, beats the clock), in the other
it is a fixed function of step plus noise (the clock: does not beat the clock). The bottom line's
question is *moves with* (the co-movement view on val_loss, here at H = the 200-step spacing from
step 0): the planted run is reproduced; the clock's is "explained by the clock" exactly when its
family-wise bound beyond the clock is below Δ_co, else undecided. Five seeds, since "reproduced"
needs each model's own test to rule out a reversal by Δ, which 3 seeds (smallest p 1/6) never can.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import MODELS, run_snakemake, tiny_config, write_corpus

from topotrain.analysis.inference.stats import BASELINES, FEATURES

RULES = [  # the per-run tables are written here (no layers): the study's rules from them on
    "aggregate_features",
    "run_views",
    "primary_family",
    "associations",
    "models_table",
    "scaling_fits",
    "predict_final_loss",
    "phase_transitions",
    "replication",
]


def feature_table(planted: bool, n: int = 26) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    step = np.arange(n) * 200
    runs = []
    for i, (model, size) in enumerate(MODELS.items()):
        for seed in (1, 2, 3, 4, 5):
            u = rng.normal(0, 0.05, n)
            loss = 1.5 + 3 * np.exp(-step / 800) - 0.1 * i + u
            trend = 50 + 5 * np.log1p(step / 100)  # TP0 rises as the loss falls: the paper's sign
            h0 = trend - (4 * u if planted else 0) + rng.normal(0, 0.05, n)
            run = {f: 1 + np.cumsum(rng.normal(0, 0.1, n)) ** 2 for f in FEATURES}
            run.update(
                model=model,
                seed=seed,
                step=step,
                frac=step / step[-1],
                n_params=size,
                d_model=8 * (i + 1),
                n_layer=1,
                n_head=1,
                train_loss=loss,
                val_loss=loss + 0.1 + rng.normal(0, 0.01, n),
                h0_total=h0,
                np_mean=0.3 + 0.02 * np.log1p(step / 100) + rng.normal(0, 0.01, n),
                lr=3e-3 * np.minimum(1, (step + 1) / 400),
                grad_norm=1 + rng.gamma(2, 0.1, n),
                l2_norm_mean=1 + 0.1 * np.log1p(step / 500) + rng.normal(0, 0.01, n),
            )
            runs.append(pd.DataFrame(run))
    return pd.concat(runs, ignore_index=True)


@pytest.mark.long  # `make test-long` (.ci/run runs it)
@pytest.mark.parametrize("planted", [True, False], ids=["planted", "clock"])
def test_a_known_answer_gets_its_verdict_through_the_real_rules(tmp_path, planted):
    train, valid = write_corpus(tmp_path)
    config = tiny_config(train, valid)
    config["models"] = {
        m: {"d_model": 8 * (i + 1), "n_layer": 1, "n_head": 1} for i, m in enumerate(MODELS)
    }
    config["seeds"] = [1, 2, 3, 4, 5]
    # the table's checkpoints are 200 steps apart: the co-movement's horizon is one of them
    config.setdefault("analysis", {}).update(horizon=200, comove_from=0)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    table = feature_table(planted)
    for (model, seed), part in table.groupby(["model", "seed"]):  # as aggregate_run writes them
        base = tmp_path / "results" / "features" / "runs" / model / f"seed{seed}"
        base.mkdir(parents=True)
        part.to_parquet(base / "weights.parquet")
        pd.DataFrame({c: [] for c in ("model", "seed", "step", "layer")}).to_parquet(
            base / "weights_layers.parquet"
        )
    target = "results/tables/replication.csv"
    run_snakemake(tmp_path, "--cores", "2", target, "--allowed-rules", *RULES)
    rep = pd.read_csv(tmp_path / target)
    tp0 = rep[rep["claim"].str.startswith("ρ(TP0, train loss) ")]
    assert len(tp0) == 5
    primary = pd.read_csv(tmp_path / "results/tables/primary.csv").set_index("feature")
    row = primary.loc["h0_total"]
    assert row["question"] == "moves_with" and row["verdict"] == row["verdict_moves_with"]
    # the clock: the test does not reject; the rule says "explained by the clock" exactly when the
    # co-movement's family-wise upper bound beyond the clock lies below Δ_co, else "undecided"
    small = row["effect_co_clock_fw_high"] < row["sesoi_co"]
    expected = "reproduced" if planted else ("explained by the clock" if small else "undecided")
    assert set(tp0["verdict"]) == {expected}, tp0[["claim", "verdict", "note"]]
    assert row["rejected"] == planted
    low = row["effect_ci_low"]
    assert (low > 0.5) if planted else (row["effect_co_clock_ci_low"] < 0.1)
    assert primary.loc["h0_total", "arrangements"] == 120**5
    if planted:  # each model's own test rules out a reversal by Δ
        assert primary.loc["h0_total", "ruled_out"] == "5/5"
    assoc = pd.read_csv(tmp_path / "results/tables/associations.csv")
    pooled = assoc[
        (assoc["model"] == "pooled")
        & (assoc["feature"] == "h0_total")
        & (assoc["target"] == "train_loss")
        & (assoc["view"] == "seed_contrast")
    ]
    assert pooled["beats_clock"].item() == planted
    # the step is the same in every seed: it never beats the clock, in any row
    assert not assoc.loc[assoc["feature"] == "step", "beats_clock"].any()
    assert set(BASELINES) <= set(assoc["feature"])
