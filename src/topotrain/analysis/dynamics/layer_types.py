"""Where the signal lives: the association views of topology with loss, split by layer type
(attention: ``c_attn``, ``c_proj`` under ``attn``; MLP: ``c_fc``, ``c_proj`` under ``mlp``) and by
depth (the block index), per model size.

Each split is a subset of a checkpoint's matrices. Its features are aggregated over that subset
exactly as the feature table aggregates them over all layers (``aggregate.checkpoint_features``:
NP averaged, H0/H1 totals summed, the L2 norm averaged), joined with the run's losses and step, and
put through ``associations.association_table``: raw, detrended, partial-on-step and
partial-on-L2 views (the L2 norm of the same subset) per run, and the between-seed contrasts per
model and pooled, with ``beats_clock`` from the contrasts. The summary reads ``seed_contrast`` by
default: the only view here whose false-positive rate the calibration suite shows at nominal.
"""

from __future__ import annotations

import re

import pandas as pd

from topotrain.analysis.inference.associations import association_table
from topotrain.analysis.inference.stats import ALPHA
from topotrain.analysis.tables.aggregate import checkpoint_features
from topotrain.config import DEFAULTS
from topotrain.topology import registry

_ANALYSIS = DEFAULTS["analysis"]  # the schema's analysis: defaults

LAYER_FEATURES = [registry.claimed(table) for table in ("3", "2", "4")]  # NP, TP0, TP1
LAYER_BASELINES = ["step", "l2_norm_mean"]  # the clock, and the subset's own scale
LAYER_TYPE_COLUMNS = [
    "split",
    "group",
    "model",
    "seed",
    "n_params",
    "n_layers",
    "feature",
    "target",
    "view",
    "rho",
    "ci_low",
    "ci_high",
    "p",
    "p_bh",
    "n",
    "beats_clock",
    "beats_scale",
    "note",
]
DEPTH = re.compile(r"\.(?:h|layers)\.(\d+)\.")


def layer_type(name: str) -> str:
    """attention, mlp, embedding or other, from a tensor name (GPT-2 or GPT-NeoX style)."""
    if ".attn." in name or ".attention." in name:
        return "attention"
    if ".mlp." in name:
        return "mlp"
    if name.endswith(("wte.weight", "wpe.weight", "embed_in.weight")):
        return "embedding"
    return "other"


def layer_depth(name: str) -> int | None:
    """The block index of a tensor name (``transformer.h.2.…`` → 2); None outside the blocks."""
    match = DEPTH.search(name)
    return int(match.group(1)) if match else None


def groups(layers: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    """(split, group) → row mask of the per-layer table: by type, and by depth (blocks only)."""
    kinds = layers["layer"].map(layer_type)
    depth = layers["layer"].map(layer_depth)
    out = {("type", t): kinds == t for t in sorted(kinds.unique())}
    for d in sorted(depth.dropna().unique()):
        out[("depth", f"block {int(d)}")] = depth == d
    return out


LOSS_COLUMNS = ["model", "seed", "step", "n_params", "train_loss", "val_loss"]


def split_tables(layers: pd.DataFrame, features: pd.DataFrame) -> list[tuple]:
    """``(split, group, its feature table, its layers' count per model)`` of every split: the
    subset's features aggregated per checkpoint (``checkpoint_features``, one run at a time, as
    the feature table's are, so a run's numbers do not depend on the others in the table;
    l2_norm_mean the subset's own scale) joined with the runs' losses and step."""
    if missing := sorted(set(LOSS_COLUMNS) - set(features.columns)):
        raise ValueError(f"layer types: the feature table lacks {missing}")
    losses = features[LOSS_COLUMNS]
    out = []
    for (split, group), mask in groups(layers).items():
        rows = layers[mask]
        runs = rows.groupby(["model", "seed"], sort=True)
        sub = pd.concat([checkpoint_features(r) for _, r in runs])
        table = sub.reset_index(drop=True).merge(losses, on=["model", "seed", "step"], how="inner")
        out.append((split, group, table, sub.groupby("model")["n_layers"].first()))
    return out


NAMES = LAYER_FEATURES + LAYER_BASELINES


def _split_table(
    task: tuple, n_resamples: int, seed: int, threads: int = 1, run_rows=None
) -> pd.DataFrame:
    """The association views of one split ``(split, group, its table, n_layers per model)``, its
    runs (or their ``run_rows``, computed apart) and effects over ``threads`` processes."""
    split, group, table, n_layers = task
    assoc = association_table(
        table, NAMES, n_resamples=n_resamples, seed=seed, threads=threads, run_rows=run_rows
    )
    return assoc.assign(split=split, group=group, n_layers=assoc["model"].map(n_layers))


def layer_type_table(
    layers: pd.DataFrame,
    features: pd.DataFrame,
    n_resamples: int = _ANALYSIS["bootstrap_resamples"],
    seed: int = _ANALYSIS["bootstrap_seed"],
    threads: int = 1,
    run_rows: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """LAYER_TYPE_COLUMNS: the association views of LAYER_FEATURES, and of LAYER_BASELINES beside
    them, of every split with train and validation loss, per run. ``layers`` is the per-layer
    table, ``features`` the feature table; each split's runs and effects spread over ``threads``
    processes, one split after the other (the same table; a process per split left a core idle
    for the last of three splits). ``run_rows``: every split's RUN_VIEWS rows already computed
    (``model_views.model_run_rows``, per run by rule run_views), with split and group
    columns."""
    tables = []
    for task in split_tables(layers, features):
        rows = None
        if run_rows is not None:
            mine = (run_rows["split"] == task[0]) & (run_rows["group"] == task[1])
            rows = run_rows[mine].drop(columns=["split", "group"]).reset_index(drop=True)
        tables.append(_split_table(task, n_resamples, seed, threads, rows))
    if not tables:
        return pd.DataFrame(columns=LAYER_TYPE_COLUMNS)
    out = pd.concat(tables, ignore_index=True)
    return (
        out[LAYER_TYPE_COLUMNS]
        .sort_values(["n_params", "model", "split", "group"], kind="stable")
        .reset_index(drop=True)
    )


def layer_type_summary(table: pd.DataFrame, view: str = "seed_contrast") -> pd.DataFrame:
    """Per model (and ``pooled``), split, group, feature (LAYER_FEATURES) and target: the rows of
    ``view`` (one per seed for a run view, one per model for a contrast), their mean ρ, how many
    have a CI excluding 0 and a p < α, how many beat the clock, and beside them the mean ρ of the
    same view for ``step`` and for the subset's ``l2_norm_mean`` (NaN for the step in the
    detrended and contrast views: its differences and deviations are constant)."""
    part = table[table["view"] == view]
    keys = ["model", "split", "group", "target"]
    base = part[part["feature"].isin(LAYER_BASELINES)]
    base = base.groupby([*keys, "feature"], sort=False)["rho"].mean().unstack("feature")
    base = base.reindex(columns=LAYER_BASELINES).add_suffix("_rho").reset_index()
    part = part[part["feature"].isin(LAYER_FEATURES)]
    excludes = (part["ci_low"] > 0) | (part["ci_high"] < 0)
    g = part.assign(ci_excludes_0=excludes).groupby(
        ["model", "n_params", "split", "group", "feature", "target"], sort=False, dropna=False
    )
    out = g.agg(
        rows=("rho", "size"),
        mean_rho=("rho", "mean"),
        ci_excludes_0=("ci_excludes_0", "sum"),
        p_below_alpha=("p", lambda p: int((p < ALPHA).sum())),
        beats_clock=("beats_clock", "sum"),
    ).reset_index()
    return out.merge(base, on=keys, how="left").assign(view=view)
