"""Aggregation of per-layer records and training logs into the feature tables."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.tables.aggregate import checkpoint_features, interval_means
from topotrain.jobs.aggregate import aggregate_features_job, aggregate_weights


def test_interval_means_average_the_steps_before_each_checkpoint():
    metrics = pd.DataFrame(
        {"step": range(6), "train_loss": [6.0, 5, 4, 3, 2, 1], "grad_norm": [1.0, 2, 3, 4, 5, 6]}
    ).assign(lr=lambda d: d["step"] * 0.1)
    out = interval_means(metrics, [0, 3, 6], interval=3)
    # checkpoint 0: value at t=0; checkpoint 3: t in {0,1,2}; checkpoint 6: t in {3,4,5}
    assert out["train_loss"].tolist() == [6.0, 5.0, 2.0]
    assert out["grad_norm"].tolist() == [1.0, 2.0, 5.0]
    assert out["lr"].tolist() == pytest.approx([0.0, 0.2, 0.5])


def test_interval_means_refuse_missing_steps():
    metrics = pd.DataFrame({"step": [0, 1], "train_loss": [1.0, 1], "grad_norm": [1.0, 1], "lr": 0})
    with pytest.raises(ValueError, match="checkpoint 6"):
        interval_means(metrics, [0, 6], interval=3)


def layer_rows(step, values):
    return [
        {
            "model": "m",
            "seed": 1,
            "step": step,
            "layer": f"l{i}",
            "np_total": v,
            "np_p2": v / 2,
            "h0_count": i + 1,
            "h0_total": v * 10,
            "h1_count": 1,
            "h1_total": v,
            "h0_max": v * 3,
            "h1_max": v,
            "h0_entropy": v,
            "h1_entropy": 2 * v,
            "l2_norm": 1.0 + v,
            "h0_count_scalefree": i + 1,
            "h0_total_scalefree": v * 4,
            "h0_max_scalefree": v / 4,
            "h0_entropy_scalefree": v,
            "h1_count_scalefree": 1,
            "h1_total_scalefree": v / 2,
            "h1_max_scalefree": v / 5,
            "h1_entropy_scalefree": 2 * v,
        }
        for i, v in enumerate(values)
    ]


def test_checkpoint_features_mean_std_sum_and_max_over_layers():
    layers = pd.DataFrame(layer_rows(0, [0.2, 0.4, 0.9]))
    row = checkpoint_features(layers).iloc[0]
    assert row["np_mean"] == pytest.approx(0.5)
    assert row["np_std"] == pytest.approx(np.std([0.2, 0.4, 0.9]))
    assert row["h0_count"] == 6 and row["h0_total"] == pytest.approx(15.0)
    assert row["h0_max"] == pytest.approx(2.7) and row["h1_max"] == pytest.approx(0.9)
    assert row["h1_entropy_mean"] == pytest.approx(1.0)
    assert row["l2_norm_mean"] == pytest.approx(1.5)


def test_scalefree_and_mean_bar_columns_equal_hand_sums():
    row = checkpoint_features(pd.DataFrame(layer_rows(0, [0.2, 0.4, 0.9]))).iloc[0]
    expected = {  # layers l0, l1, l2 with v = 0.2, 0.4, 0.9; h0 counts 1, 2, 3
        "h0_count_scalefree": 6,
        "h0_total_scalefree": 0.8 + 1.6 + 3.6,
        "h0_max_scalefree": 0.9 / 4,
        "h0_entropy_scalefree_mean": (0.2 + 0.4 + 0.9) / 3,
        "h1_count_scalefree": 3,
        "h1_total_scalefree": (0.2 + 0.4 + 0.9) / 2,
        "h1_max_scalefree": 0.9 / 5,
        "h1_entropy_scalefree_mean": 2 * (0.2 + 0.4 + 0.9) / 3,
        "h0_mean_bar": (2 + 4 + 9) / 6,
        "h0_mean_bar_scalefree": (0.8 + 1.6 + 3.6) / 6,
    }
    assert {k: row[k] for k in expected} == pytest.approx(expected, rel=1e-12)
    assert "h0_entropy_scalefree" not in row  # renamed to _mean, as h0_entropy is


def test_mean_bar_is_zero_without_finite_bars():
    layers = pd.DataFrame(layer_rows(0, [0.0, 0.0])).assign(h0_count=0, h0_count_scalefree=0)
    row = checkpoint_features(layers).iloc[0]
    assert row["h0_mean_bar"] == 0.0 and row["h0_mean_bar_scalefree"] == 0.0


def aggregate_one_run(tmp_path, evals: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """aggregate_weights on one run (model m, seed 1) with checkpoints 0 and 2 and ``evals``."""
    records, keys = [], []
    for step, vals in ((0, [0.1, 0.3]), (2, [0.5, 0.7])):
        path = tmp_path / f"r{step}.json"
        rows = [
            {k: v for k, v in r.items() if k not in ("model", "seed", "step")}
            for r in layer_rows(step, vals)
        ]
        path.write_text(json.dumps({"layers": rows}))
        records.append(str(path))
        keys.append({"model": "m", "seed": 1, "step": step})
    pd.DataFrame(
        {"step": [0, 1], "train_loss": [4.0, 3.0], "grad_norm": [1.0, 0.5], "lr": [0.0, 0.1]}
    ).to_csv(tmp_path / "metrics.csv", index=False)
    evals.to_csv(tmp_path / "evals.csv", index=False)
    run = {
        "model": "m",
        "seed": 1,
        "metrics": str(tmp_path / "metrics.csv"),
        "evals": str(tmp_path / "evals.csv"),
        "n_params": 99,
        "d_model": 4,
        "n_layer": 1,
        "n_head": 1,
    }
    out = {k: str(tmp_path / f"{k}.out") for k in ("table", "table_csv", "layers", "layers_csv")}
    return aggregate_weights(records, keys, [run], total_steps=2, interval=2, out=out), out


def test_aggregate_weights_joins_records_and_logs(tmp_path):
    evals = pd.DataFrame({"step": [0, 2], "val_loss": [4.5, 3.5], "val_loss_full": [4.4, np.nan]})
    table, out = aggregate_one_run(tmp_path, evals)
    assert table["step"].tolist() == [0, 2] and table["frac"].tolist() == [0.0, 1.0]
    assert table["train_loss"].tolist() == [4.0, 3.5]
    assert table["val_loss"].tolist() == [4.5, 3.5]
    assert table["val_loss_full"].tolist()[0] == 4.4 and np.isnan(table["val_loss_full"].iloc[1])
    losses = ["train_loss", "val_loss", "grad_norm", "lr", "val_loss_full"]
    assert list(table.columns[8:13]) == losses
    assert table["np_mean"].tolist() == pytest.approx([0.2, 0.6])
    assert (table["n_params"] == 99).all()
    assert "numerics" not in table  # records without the training's numerics add no column
    assert pd.read_parquet(out["table"]).equals(table)
    assert len(pd.read_parquet(out["layers"])) == 4


def test_evals_from_before_the_whole_split_give_an_empty_val_loss_full(tmp_path):
    table, _ = aggregate_one_run(tmp_path, pd.DataFrame({"step": [0, 2], "val_loss": [4.5, 3.5]}))
    assert table["val_loss"].tolist() == [4.5, 3.5] and table["val_loss_full"].isna().all()


def test_records_from_an_older_version_are_reported_not_silently_dropped(caplog):
    """A layer table without the scale-free keys (records written before they existed) still
    aggregates, and the log names the missing columns and the command that recomputes them."""
    import logging

    from topotrain.analysis.tables.aggregate import SCALEFREE

    layers = pd.DataFrame(
        {
            "model": "m",
            "seed": 0,
            "step": 0,
            "layer": ["a", "b"],
            "np_total": [0.5, 0.7],
            "np_p2": [0.1, 0.2],
            "h0_count": [3, 4],
            "h0_total": [1.0, 2.0],
            "h0_max": [0.5, 0.9],
            "h0_entropy": [1.0, 1.2],
            "h1_count": [0, 1],
            "h1_total": [0.0, 0.1],
            "h1_max": [0.0, 0.1],
            "h1_entropy": [0.0, 0.0],
            "l2_norm": [1.0, 3.0],
        }
    )
    with caplog.at_level(logging.WARNING, logger="topotrain.analysis.tables.aggregate"):
        out = checkpoint_features(layers)
    assert out["h0_total"].iloc[0] == 3.0 and f"h0_total{SCALEFREE}" not in out
    assert f"h0_total{SCALEFREE}" in caplog.text and "--forcerun weight_topology" in caplog.text


def test_h1_sums_stay_missing_when_no_layer_has_h1():
    """topology.maxdim: 0 leaves every layer's h1_* missing: the checkpoint's sums stay missing
    (pandas would sum them to 0), while H0's sums are the layers' (1 + 2 + 3 bars)."""
    rows = layer_rows(0, [0.2, 0.4, 0.9])
    for r in rows:
        for c in ("h1_count", "h1_total", "h1_max", "h1_count_scalefree", "h1_total_scalefree"):
            r[c] = np.nan
    row = checkpoint_features(pd.DataFrame(rows)).iloc[0]
    for c in ("h1_count", "h1_total", "h1_max", "h1_count_scalefree", "h1_total_scalefree"):
        assert np.isnan(row[c]), c
    assert row["h0_count"] == 6 and row["h0_total"] == pytest.approx(15.0)


def test_layer_table_is_the_concat_of_one_frame_per_record():
    # the reference: the frame-per-record build layer_table replaced, on records that differ
    # (numerics on one checkpoint only, an extra per-layer field, an engine named or not)
    from topotrain.analysis.tables.aggregate import UNNAMED, layer_table, numerics_label

    numerics = {"dtype": "float32", "device": "cpu", "deterministic": True}
    docs = [
        {
            "layers": [
                {"layer": "a", "h0_total": 1.0, "rows": 4},
                {"layer": "b", "h0_total": 2.5, "rows": 8},
            ]
        },
        {
            "layers": [{"layer": "a", "h0_total": 0.5, "rows": 4, "h1_total": 0.25}],
            "params": {"engine": "ripser"},
            "numerics": numerics,
        },
        {"layers": [{"layer": "b", "h0_total": 3.0, "rows": 8}], "params": {}},
    ]
    keys = [{"model": "m", "seed": s, "step": t} for s, t in ((1, 0), (1, 10), (2, 0))]
    frames = []
    for doc, key in zip(docs, keys, strict=True):
        frame = pd.DataFrame(doc["layers"]).assign(
            engine=(doc.get("params") or {}).get("engine", UNNAMED)
        )
        if label := numerics_label(doc.get("numerics")):
            frame["numerics"] = label
        for col, value in reversed(key.items()):
            frame.insert(0, col, value)
        frames.append(frame)
    want = pd.concat(frames, ignore_index=True)
    got = layer_table(docs, keys)
    pd.testing.assert_frame_equal(got, want)
    assert list(got.columns[:4]) == ["model", "seed", "step", "layer"]
    assert got["h1_total"].isna().tolist() == [True, True, False, True]


def test_layer_table_refuses_a_layer_that_names_a_key_column():
    from topotrain.analysis.tables.aggregate import layer_table

    with pytest.raises(ValueError, match="key columns"):
        layer_table([{"layers": [{"layer": "a", "step": 3}]}], [{"model": "m", "step": 0}])


def run_inputs(tmp_path, model: str, seed: int, n_params: int) -> tuple[list, list, dict]:
    """One run's records, their keys and its run dict (three checkpoints, logs written)."""
    base = tmp_path / f"{model}-{seed}"
    base.mkdir()
    rng = np.random.default_rng(seed * 7 + n_params)
    records, keys = [], []
    for step in (0, 2, 4):
        rows = [
            {k: v for k, v in r.items() if k not in ("model", "seed", "step")}
            for r in layer_rows(step, rng.random(3).tolist())
        ]
        path = base / f"r{step}.json"
        path.write_text(json.dumps({"layers": rows}))
        records.append(str(path))
        keys.append({"model": model, "seed": seed, "step": step})
    losses = rng.random(5) + 3
    pd.DataFrame(
        {"step": range(5), "train_loss": losses, "grad_norm": losses / 3, "lr": 0.1}
    ).to_csv(base / "metrics.csv", index=False)
    pd.DataFrame({"step": [0, 2, 4], "val_loss": losses[:3]}).to_csv(base / "evals.csv")
    run = dict(model=model, seed=seed, n_params=n_params, d_model=4, n_layer=1, n_head=1)
    return (
        records,
        keys,
        run | {"metrics": str(base / "metrics.csv"), "evals": str(base / "evals.csv")},
    )


def test_the_models_tables_join_to_the_table_of_all_records(tmp_path):
    """Two models (the config's first the larger, so the join must reorder by n_params) of two
    seeds: aggregated per model (parquet only) and joined, the very tables, CSVs byte for byte,
    that aggregating every record at once writes."""
    runs = {
        m: [run_inputs(tmp_path, m, s, n) for s in (1, 2)] for m, n in (("big", 500), ("lil", 90))
    }

    def aggregate(parts, name, csv=True):
        records = [r for recs, _, _ in parts for r in recs]
        keys = [k for _, ks, _ in parts for k in ks]
        out = {k: str(tmp_path / f"{name}_{k}") for k in ("table", "layers")}
        if csv:
            out |= {k: str(tmp_path / f"{name}_{k}.csv") for k in ("table_csv", "layers_csv")}
        aggregate_weights(records, keys, [r for _, _, r in parts], 4, 2, out)
        return out

    whole = aggregate([p for parts in runs.values() for p in parts], "whole")
    per_model = {m: aggregate(parts, m, csv=False) for m, parts in runs.items()}
    assert not list(tmp_path.glob("big_*.csv"))  # a model's part: parquet only
    joined = {k: str(tmp_path / f"joined_{k}") for k in whole}
    tables = [per_model[m]["table"] for m in runs]
    aggregate_features_job(tables, [per_model[m]["layers"] for m in runs], joined)
    for key, path in whole.items():
        if key.endswith("csv"):
            assert Path(joined[key]).read_bytes() == Path(path).read_bytes()
        else:
            pd.testing.assert_frame_equal(pd.read_parquet(joined[key]), pd.read_parquet(path))
    table = pd.read_parquet(joined["table"])
    assert table["model"].tolist() == ["lil"] * 6 + ["big"] * 6  # by n_params, then seed, step
    assert table["step"].tolist()[:3] == [0, 2, 4]


def test_joining_models_with_different_columns_names_the_part_and_writes_nothing(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pd.DataFrame(
        {"model": ["a"], "seed": [1], "step": [0], "n_params": [1], "x": [1.0]}
    ).to_parquet(a)
    pd.DataFrame(
        {"model": ["b"], "seed": [1], "step": [0], "n_params": [2], "y": [1.0]}
    ).to_parquet(b)
    out = {k: str(tmp_path / "out" / k) for k in ("table", "table_csv", "layers", "layers_csv")}
    with pytest.raises(ValueError, match=r"b\.parquet has columns"):
        aggregate_features_job([str(a), str(b)], [str(a), str(a)], out)
    assert not list((tmp_path / "out").glob("*"))
