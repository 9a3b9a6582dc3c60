"""The feature table (``topology.registry``): the record, the checkpoint table, the tested family,
the figures' labels and docs/outputs.md derive from it, and a toy feature added as one entry plus
its function appears in a record, the feature table, associations.csv and a figure's label."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from topotrain.analysis.inference.associations import association_table
from topotrain.analysis.tables.aggregate import checkpoint_features
from topotrain.report.plots import _label
from topotrain.topology import registry
from topotrain.topology.layers import RECORD_KEYS, layer_records
from topotrain.topology.summaries import bar_lengths

ROOT = Path(__file__).resolve().parents[1]
STATS = ("count", "total", "max", "entropy")
# the record's keys as documented before the registry existed (docs/outputs.md, 2026-11-27)
HAND_RECORD = (
    "layer", "rows", "cols", "n_points", "np_total", "np_p2", "np_rieck",
    *(f"h{k}_{s}" for k in (0, 1) for s in STATS), "l2_norm",
    *(f"h{k}_{s}_scalefree" for k in (0, 1) for s in STATS), "np_wvar",
)  # fmt: skip
HAND_TESTED = [
    "h0_total", "h1_total", "np_mean", "h0_count", "h1_count", "h0_entropy_mean",
    "h1_entropy_mean", "h0_max", "h1_max", "np_rieck_mean",
]  # fmt: skip


def test_the_record_and_the_tested_family_are_the_documented_ones():
    assert registry.record_keys() == RECORD_KEYS == HAND_RECORD
    assert registry.tested() == HAND_TESTED


def test_each_reduction_is_the_one_the_entry_names():
    """Two layers, every record value chosen by hand: sums, means, maxima and the SD over layers
    as the registry says, each column under its registered name."""
    rng = np.random.default_rng(3)
    keys = [k for k in RECORD_KEYS if k not in registry.META]
    layers = pd.DataFrame(
        [
            {
                "layer": f"l{i}",
                **{k: float(v) for k, v in zip(keys, rng.random(len(keys)), strict=True)},
            }
            for i in (0, 1)
        ]
    ).assign(model="m", seed=1, step=0)
    row = checkpoint_features(layers).iloc[0]
    a, b = layers.iloc[0], layers.iloc[1]
    assert row["h1_total"] == pytest.approx(a["h1_total"] + b["h1_total"])
    assert row["h0_count_scalefree"] == pytest.approx(
        a["h0_count_scalefree"] + b["h0_count_scalefree"]
    )
    assert row["h0_max"] == max(a["h0_max"], b["h0_max"])
    assert row["h1_entropy_mean"] == pytest.approx((a["h1_entropy"] + b["h1_entropy"]) / 2)
    assert row["np_wvar_mean"] == pytest.approx((a["np_wvar"] + b["np_wvar"]) / 2)
    assert row["np_mean"] == pytest.approx((a["np_total"] + b["np_total"]) / 2)
    assert row["np_std"] == pytest.approx(abs(a["np_total"] - b["np_total"]) / 2)
    assert row["n_layers"] == 2


def median_bar(diagram: np.ndarray) -> float:
    """The toy feature: the median finite bar length (0 without a finite bar)."""
    lengths = bar_lengths(diagram)
    return float(np.median(lengths)) if lengths.size else 0.0


TOPOLOGICAL = {"kind": "topological", "unit": "weight units"}  # both toys'
TOY = registry.Feature(
    name="h{k}_median", label="median H{k} bar", on="diagram", compute=median_bar,
    over_layers="mean", **TOPOLOGICAL,
)  # fmt: skip


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setattr(registry, "FEATURES", [*registry.FEATURES, TOY])
    monkeypatch.setattr(registry, "TESTED", [*registry.TESTED, "h0_median_mean", "h1_median_mean"])


def test_a_toy_feature_in_one_entry_reaches_the_record_the_table_the_tests_and_a_label(toy):
    rng = np.random.default_rng(0)
    matrices = {f"h.{i}.w": rng.normal(size=(30, 6)) for i in range(2)}
    records, diagrams = layer_records(matrices, ["h.*.w"], max_points=30)
    for record in records:  # the record: the median of the diagram's own bars, by numpy
        for k in (0, 1):
            lengths = diagrams[f"{record['layer']}/h{k}"]
            finite = lengths[np.isfinite(lengths[:, 1])]
            assert record[f"h{k}_median"] == pytest.approx(np.median(finite[:, 1] - finite[:, 0]))
    layers = pd.DataFrame(records).assign(model="m", seed=1, step=0)
    table = checkpoint_features(layers)
    assert table["h1_median_mean"].iloc[0] == pytest.approx(
        np.mean([r["h1_median"] for r in records])
    )
    assert registry.tested()[-2:] == ["h0_median_mean", "h1_median_mean"]
    assert _label("h1_median_mean") == "median H1 bar"
    assoc = association_table(study_with(table.columns), n_resamples=20, seed=1)
    assert {"h0_median_mean", "h1_median_mean"} <= set(assoc["feature"])
    assert set(assoc.loc[assoc["feature"] == "h0_median_mean", "kind"]) == {"topological"}


def spectral_norm(matrices: dict[str, np.ndarray]) -> float:
    """The toy checkpoint feature: the largest singular value over the checkpoint's matrices."""
    return max(float(np.linalg.norm(w, 2)) for w in matrices.values())


CHECKPOINT_TOY = registry.Feature(
    name="spectral_norm", label="largest singular value", level="checkpoint",
    compute=spectral_norm, **TOPOLOGICAL,
)  # fmt: skip
# what adding the toy checkpoint feature edits: the registry's entry and TESTED, and the file of
# its function (here this test; a real one: a module of topology/ or baselines/)
TOY_EDITS = {
    "src/topotrain/topology/registry.py": ("FEATURES", "TESTED"),
    "tests/test_registry.py": ("spectral_norm",),
}


def test_a_toy_checkpoint_feature_in_one_entry_reaches_the_tests_and_a_label(monkeypatch):
    """A checkpoint-level feature (one value per checkpoint, as the LLC): its entry and its name in
    TESTED make it a tested column with its label and kind; its values come from its function of
    the checkpoint's matrices, in the checkpoint table's column its entry names."""
    monkeypatch.setattr(registry, "FEATURES", [*registry.FEATURES, CHECKPOINT_TOY])
    monkeypatch.setattr(registry, "TESTED", [*registry.TESTED, CHECKPOINT_TOY.name])
    assert len(TOY_EDITS) <= 3
    assert registry.tested()[-1] == "spectral_norm"
    assert _label("spectral_norm") == "largest singular value"
    assert "spectral_norm" not in registry.record_keys()  # not a per-layer record key
    rng = np.random.default_rng(2)
    study = study_with([])
    study["spectral_norm"] = [
        CHECKPOINT_TOY.compute({"w": rng.normal(size=(6, 4)) * (1 + s / 100)})
        for s in study["step"]
    ]
    w = rng.normal(size=(6, 4))
    assert spectral_norm({"w": w}) == pytest.approx(np.linalg.svd(w, compute_uv=False)[0])
    assoc = association_table(study, n_resamples=20, seed=1)
    assert set(assoc.loc[assoc["feature"] == "spectral_norm", "kind"]) == {"topological"}


def test_the_levels_name_their_columns_once():
    """The claims, the short names and the figures' columns derive from the entries; the
    checkpoint features' and the embedding features' labels are theirs."""
    from topotrain.analysis.inference.primary import CLAIMS

    assert registry.claims() == CLAIMS == {"h0_total": "2", "np_mean": "3", "h1_total": "4"}
    assert registry.short_names() == {"np_mean": "NP", "h0_total": "TP0", "h1_total": "TP1"}
    assert registry.columns("np_total") == ["np_mean", "np_std"]
    assert registry.columns("h{k}_total") == ["h0_total", "h1_total"]
    assert {"llc", "ww_alpha_mean", "grad_norm"} <= set(registry.labels())
    assert registry.embedding_labels()["h1_count"] == "number of H1 bars (embeddings)"


def study_with(columns) -> pd.DataFrame:
    """A small feature table (1 model, 3 seeds, 12 checkpoints) of random walks holding every
    tested feature (the toy's too) and the baselines."""
    rng = np.random.default_rng(5)
    runs = []
    for seed in (1, 2, 3):
        step = np.arange(12) * 10
        loss = 3 - np.log1p(step) / 3 + rng.normal(0, 0.02, 12)
        run = {f: np.cumsum(rng.normal(0, 1, 12)) for f in registry.tested()}
        run.update(model="m", seed=seed, n_params=100, step=step, train_loss=loss)
        run.update(val_loss=loss + 0.1, lr=np.full(12, 1e-3), grad_norm=rng.gamma(2, 1, 12))
        run.update(l2_norm_mean=10 + np.sqrt(step) + rng.normal(0, 0.1, 12))
        runs.append(pd.DataFrame(run))
    return pd.concat(runs, ignore_index=True)


def test_docs_outputs_lists_every_registered_column_and_the_record_in_order():
    text = (ROOT / "docs" / "outputs.md").read_text(encoding="utf-8")
    table_rows = [line for line in text.splitlines() if line.startswith("| `")]
    documented = {
        m for line in table_rows for m in re.findall(r"`([a-z0-9_]+)`", line.split("|")[1])
    }
    columns = [c for c in registry.labels() if registry.SCALEFREE not in c]
    assert set(columns) - documented == set()
    section = text.split("## `weights_layers` columns", 1)[1]
    named = re.findall(r"`([a-z0-9_]+)`", section)
    order = [k for k in named if k in RECORD_KEYS]
    first = [order.index(k) for k in RECORD_KEYS if not k.endswith("_scalefree")]
    assert first == sorted(first), "docs/outputs.md lists the record's keys out of order"


def test_scale_free_twins_repeat_their_feature_and_are_tested_once():
    """Bar counts and entropies do not move when W is scaled (checked on real records); the mean
    H0 bar is the total over one count per model; the tests keep the originals only."""
    from topotrain.analysis.inference.associations import feature_kinds

    rng = np.random.default_rng(4)
    matrices = {f"h.{i}.w": rng.normal(size=(20, 5)) * (i + 1) for i in range(3)}
    records, _ = layer_records(matrices, ["h.*.w"], max_points=20)
    for r in records:
        for k in (0, 1):
            assert r[f"h{k}_count_scalefree"] == r[f"h{k}_count"]
            assert r[f"h{k}_entropy_scalefree"] == pytest.approx(r[f"h{k}_entropy"], rel=1e-12)
    assert registry.repeats() == {
        "h0_count_scalefree": "h0_count", "h1_count_scalefree": "h1_count",
        "h0_entropy_scalefree_mean": "h0_entropy_mean",
        "h1_entropy_scalefree_mean": "h1_entropy_mean",
        "h0_mean_bar": "h0_total", "h0_mean_bar_scalefree": "h0_total_scalefree",
    }  # fmt: skip
    df = study_with([]).assign(h0_count=19.0 * 3)
    df["h0_mean_bar"] = df["h0_total"] / df["h0_count"]
    df["h0_total_scalefree"] = df["h0_total"] / df["l2_norm_mean"]
    assert registry.repeated(df) == ["h0_mean_bar"]
    kinds = dict(feature_kinds(df))
    assert "h0_mean_bar" not in kinds and "h0_total_scalefree" in kinds
    df.loc[3, "h0_mean_bar"] += 1.0  # no longer the total over a constant: tested
    assert registry.repeated(df) == [] and "h0_mean_bar" in dict(feature_kinds(df))
