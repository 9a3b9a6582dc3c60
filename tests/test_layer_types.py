"""Layer-type and depth splits: name parsing, the subsets' features, and their associations."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from topotrain.analysis.dynamics.layer_types import (
    LAYER_TYPE_COLUMNS,
    groups,
    layer_depth,
    layer_type,
    layer_type_summary,
    layer_type_table,
)
from topotrain.analysis.dynamics.model_views import model_run_rows
from topotrain.analysis.inference.associations import association_table
from topotrain.analysis.inference.stats import feature_kinds
from topotrain.analysis.tables.aggregate import checkpoint_features

NAMES = [
    f"transformer.h.{b}.{m}.weight"
    for b in (0, 1)
    for m in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
]


def test_layer_names_parse_to_type_and_depth():
    assert layer_type("transformer.h.0.attn.c_proj.weight") == "attention"
    assert layer_type("transformer.h.3.mlp.c_proj.weight") == "mlp"
    assert layer_type("gpt_neox.layers.2.attention.dense.weight") == "attention"
    assert layer_type("transformer.wte.weight") == "embedding"
    assert layer_depth("transformer.h.12.mlp.c_fc.weight") == 12
    assert layer_depth("gpt_neox.layers.2.attention.dense.weight") == 2
    assert layer_depth("transformer.wpe.weight") is None


def synthetic(seed=1):
    rng = np.random.default_rng(seed)
    steps = np.arange(12) * 10
    rows = []
    for step in steps:
        for name in NAMES:
            rows.append(
                {
                    "model": "m",
                    "seed": seed,
                    "step": int(step),
                    "layer": name,
                    "np_total": rng.random(),
                    "np_p2": rng.random(),
                    "h0_total": rng.random() + step / 100,
                    "h1_total": rng.random(),
                    "l2_norm": 1 + step / 50 + rng.random(),
                }
            )
    layers = pd.DataFrame(rows)
    loss = 3 - steps / 60 + rng.normal(0, 0.05, steps.size)
    features = pd.DataFrame(
        {
            "model": "m",
            "seed": seed,
            "step": steps,
            "n_params": 500,
            "train_loss": loss + 0.1,
            "val_loss": loss,
        }
    )
    return layers, features


def test_groups_split_by_type_and_depth():
    layers, _ = synthetic()
    masks = groups(layers)
    assert set(masks) == {
        ("type", "attention"),
        ("type", "mlp"),
        ("depth", "block 0"),
        ("depth", "block 1"),
    }
    assert masks[("type", "mlp")].sum() == 12 * 4
    assert set(layers[masks[("depth", "block 1")]]["layer"]) == set(NAMES[4:])


def cell(table, group: str, feature: str, view: str, target: str = "val_loss"):
    """The rows of ``table`` of one group, feature, target and view."""
    return table[
        (table["group"] == group)
        & (table["feature"] == feature)
        & (table["target"] == target)
        & (table["view"] == view)
    ]


def test_layer_type_table_against_a_direct_computation():
    layers, features = synthetic()
    table = layer_type_table(layers, features, n_resamples=100, seed=0)
    assert list(table.columns) == LAYER_TYPE_COLUMNS
    # raw ρ of the attention subset's NP (mean over its 4 matrices per checkpoint) with val loss
    attn = layers[layers["layer"].str.contains(".attn.", regex=False)]
    np_attn = attn.groupby("step")["np_total"].mean()
    expected = stats.spearmanr(np_attn.to_numpy(), features["val_loss"].to_numpy())[0]
    row = cell(table, "attention", "np_mean", "raw")
    assert row["rho"].item() == pytest.approx(expected, abs=1e-12)
    # H0 total of block 1 is the sum over its four matrices
    block = layers[layers["layer"].isin(NAMES[4:])].groupby("step")["h0_total"].sum()
    det = stats.spearmanr(np.diff(block.to_numpy()), np.diff(features["val_loss"].to_numpy()))[0]
    row = cell(table, "block 1", "h0_total", "detrended")
    assert row["rho"].item() == pytest.approx(det, abs=1e-12)
    assert set(table.loc[table["model"] != "pooled", "n_layers"]) == {4}
    summary = layer_type_summary(table, view="detrended")
    assert len(summary) == 4 * 3 * 2  # groups × features × targets
    assert (summary["view"] == "detrended").all()
    # beside each feature: the clock's and the subset's scale's ρ in the same view
    assert summary["step_rho"].isna().all()  # detrended: Δstep is constant
    l2 = layers[layers["layer"].isin(NAMES[4:])].groupby("step")["l2_norm"].mean()
    l2_det = stats.spearmanr(np.diff(l2.to_numpy()), np.diff(features["val_loss"].to_numpy()))[0]
    row = summary[(summary["group"] == "block 1") & (summary["target"] == "val_loss")]
    assert row["l2_norm_mean_rho"].to_numpy() == pytest.approx([l2_det] * 3, abs=1e-12)
    raw = layer_type_summary(table, view="raw")
    clock = stats.spearmanr(features["step"], features["val_loss"])[0]
    assert raw[raw["target"] == "val_loss"]["step_rho"].to_numpy() == pytest.approx(clock)


def test_layer_type_table_names_missing_columns():
    layers, features = synthetic()
    with pytest.raises(ValueError, match=r"lacks \['val_loss'\]"):
        layer_type_table(layers, features.drop(columns="val_loss"))


def test_summary_reads_the_between_seed_contrast_by_default():
    parts = [synthetic(seed) for seed in (1, 2, 3, 4)]
    layers = pd.concat([p[0] for p in parts], ignore_index=True)
    features = pd.concat([p[1] for p in parts], ignore_index=True)
    table = layer_type_table(layers, features, n_resamples=50, seed=0)
    summary = layer_type_summary(table)
    assert (summary["view"] == "seed_contrast").all()
    assert set(summary["model"]) == {"m", "pooled"} and (summary["rows"] == 1).all()
    contrast = table[(table["view"] == "seed_contrast") & (table["model"] == "m")]
    row = summary[
        (summary["model"] == "m")
        & (summary["group"] == "mlp")
        & (summary["feature"] == "np_mean")
        & (summary["target"] == "val_loss")
    ]
    cell = contrast[
        (contrast["group"] == "mlp")
        & (contrast["feature"] == "np_mean")
        & (contrast["target"] == "val_loss")
    ]
    assert row["mean_rho"].item() == pytest.approx(cell["rho"].item())
    assert row["p_below_alpha"].item() == int(cell["p"].item() < 0.05)
    assert summary["step_rho"].isna().all()  # every seed shares the step: no contrast


def test_splits_spread_over_processes_give_the_same_table():
    layers, features = synthetic()
    one = layer_type_table(layers, features, n_resamples=100, seed=0)
    pd.testing.assert_frame_equal(layer_type_table(layers, features, 100, 0, threads=2), one)


def two_models():
    """Models m (n_params 500) and n (2,000), two seeds each: (layers, features)."""
    parts = [
        [
            frame.assign(model=model, n_params=n)
            if "n_params" in frame
            else frame.assign(model=model)
            for frame in synthetic(seed + 10 * i)
        ]
        for i, (model, n) in enumerate((("n", 2000), ("m", 500)))
        for seed in (1, 2)
    ]
    layers = pd.concat([p[0] for p in parts], ignore_index=True)
    return layers, pd.concat([p[1] for p in parts], ignore_index=True)


def test_rows_computed_per_run_give_the_tables_of_the_whole_study():
    """model_run_rows of each run (rule run_views), handed to both tables, give what computing
    every run at once gives; a tampered row shows (the rows are used, not recomputed); rows of
    one model only, or a feature table of two models, are refused."""
    layers, features = two_models()
    per_checkpoint = checkpoint_features(layers).drop(columns="n_layers")
    feats = features.merge(per_checkpoint, on=["model", "seed", "step"])
    rng = np.random.default_rng(5)
    for name, _ in feature_kinds(feats):  # every feature the default list names, as a walk
        if name not in feats:
            feats[name] = np.cumsum(rng.normal(size=len(feats)))
    runs = feats.groupby(["model", "seed"])
    mine = {r: (layers["model"] == r[0]) & (layers["seed"] == r[1]) for r, _ in runs}
    own = [model_run_rows(g, layers[mine[r]], 60, 4) for r, g in runs]
    layer_rows = pd.concat([rows for _, rows in own], ignore_index=True)
    assert set(layer_rows["split"]) == {"type", "depth"}
    whole = layer_type_table(layers, features, 60, 4)
    got = layer_type_table(layers, features, 60, 4, run_rows=layer_rows)
    pd.testing.assert_frame_equal(got, whole)
    own = pd.concat([rows for rows, _ in own], ignore_index=True)
    expect = association_table(feats, n_resamples=60, seed=4)
    pd.testing.assert_frame_equal(association_table(feats, None, 60, 4, run_rows=own), expect)
    tampered = layer_rows.copy()
    tampered.loc[0, "rho"] = 0.123456
    out = layer_type_table(layers, features, 60, 4, run_rows=tampered)
    assert (out["rho"] == 0.123456).sum() == 1
    with pytest.raises(ValueError, match="rerun run_views"):
        layer_type_table(layers, features, 60, 4, run_rows=layer_rows[layer_rows["model"] == "m"])
    with pytest.raises(ValueError, match="holds models"):
        model_run_rows(features, layers, 60, 4)
