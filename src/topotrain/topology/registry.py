"""The feature table: every per-layer feature of a weight matrix is one entry here.

An entry gives the feature's name (the per-layer record key; ``{k}`` in it makes one feature per
homology dimension, H0 and H1), the function that computes it (of one Rips diagram, or of the
matrix), how a checkpoint's layers combine into one value (``over_layers``), its kind, label and
unit, whether the tests contrast it (``tested``: its place in ``inference.stats.FEATURES``), and
whether it is also measured on W / RMS(W) (``scalefree``: a ``<name>_scalefree`` twin). The
record (``layers.RECORD_KEYS``), the checkpoint table (``analysis.tables.aggregate``), the tested
features, the figures' labels and docs/outputs.md's feature list derive from it.

``twin_same`` declares a feature whose W / RMS(W) twin equals it by construction (bar counts and
entropies do not change when the cloud is scaled), and ``REPEATS`` a checkpoint column that equals
another up to a constant per model: a test of either repeats the other's, so the tests run the
original only, once the data show the repeat (``repeats``).

Adding a feature: one entry here and its function (``summaries.py`` for a diagram's, a function of
W for a matrix's); ``tests/test_registry.py`` walks a toy one through the record, the feature
table, ``associations.csv`` and a figure's label.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from topotrain.topology.summaries import (
    feature_count,
    max_persistence,
    persistence_entropy,
    total_persistence,
)

DIMS = (0, 1)  # homology dimensions of the Rips diagrams (H1 is None at maxdim 0)
SCALEFREE = "_scalefree"  # suffix of a feature measured on W / RMS(W)
META = ("layer", "rows", "cols", "n_points")  # a record's fields before its features
REDUCTIONS = ("mean", "max", "sum")  # over a checkpoint's layers; the table's columns in this order


@dataclass(frozen=True)
class Feature:
    """One feature (module docstring), at its ``level``: "layer" (a weight matrix's, reduced over
    a checkpoint's layers by ``over_layers``), "checkpoint" (one value per checkpoint, from its own
    job: the LLC, WeightWatcher's α, the gradient norm) or "embedding" (the embedding cloud's, not
    summed over layers). A layer feature's ``compute`` takes one diagram (``on="diagram"``) or the
    matrix W (``on="matrix"``); None: computed with the matrix's neural persistence and norms in
    ``layers.layer_parts``, which names it."""

    name: str  # the record key ({k}: one per dimension); a checkpoint feature's: its column
    kind: str  # topological, norm, weightwatcher, llc, baseline
    label: str  # of the checkpoint table's column ({k}: the dimension)
    unit: str
    level: str = "layer"  # "layer", "checkpoint" or "embedding"
    on: str | None = None  # a layer feature's input: "diagram" or "matrix"
    compute: Callable | None = None
    over_layers: str | None = None  # a layer feature's: "mean", "max" or "sum" (REDUCTIONS)
    scalefree: bool = False  # also on W / RMS(W): <name>_scalefree
    column: str | None = None  # the checkpoint table's column (default: name, + _mean if a mean)
    spread: str | None = None  # also the SD over layers, in this column
    twin_same: bool = False  # the W / RMS(W) twin equals it by construction (a scale-free feature)
    short: str | None = None  # the report's short name ({k}: the dimension): TP0, NP
    claims: tuple[str, ...] = ()  # the paper's tables claiming it (a {k} entry: H0's, H1's)


FEATURES: list[Feature | str] = [
    Feature(
        name="np_total", kind="topological", label="neural persistence (mean over layers)",
        unit="1", on="matrix", over_layers="mean", column="np_mean", spread="np_std",
        short="NP", claims=("3",),
    ),
    Feature(
        name="np_p2", kind="topological", label="neural persistence, p = 2 (mean over layers)",
        unit="1", on="matrix", over_layers="mean", column="np_p2_mean", spread="np_p2_std",
    ),
    Feature(
        name="np_rieck", kind="topological",
        label="neural persistence, reference definition (mean over layers)", unit="1",
        on="matrix", over_layers="mean",
    ),
    Feature(
        name="h{k}_count", kind="topological", label="number of H{k} bars", unit="bars",
        on="diagram", compute=feature_count, over_layers="sum", scalefree=True, twin_same=True,
    ),
    Feature(
        name="h{k}_total", kind="topological", label="H{k} total persistence (sum over layers)",
        unit="weight units", on="diagram", compute=total_persistence, over_layers="sum",
        scalefree=True, short="TP{k}", claims=("2", "4"),
    ),
    Feature(
        name="h{k}_max", kind="topological", label="longest H{k} bar", unit="weight units",
        on="diagram", compute=max_persistence, over_layers="max", scalefree=True,
    ),
    Feature(
        name="h{k}_entropy", kind="topological",
        label="H{k} persistence entropy (mean over layers)", unit="nats", on="diagram",
        compute=persistence_entropy, over_layers="mean", scalefree=True, twin_same=True,
    ),
    Feature(
        name="l2_norm", kind="norm", label="weight L2 norm, mean over layers (baseline)",
        unit="weight units", on="matrix", over_layers="mean",
    ),
    SCALEFREE,  # here the record holds the *_scalefree twins of the entries above, in their order
    Feature(
        name="np_wvar", kind="norm", label="normalised weight variance (mean over layers)",
        unit="1", on="matrix", over_layers="mean",
    ),
    # one value per checkpoint, each from its own job (baselines, the training logs)
    Feature(
        name="llc", kind="llc", label="local learning coefficient (LLC)", unit="nats",
        level="checkpoint",
    ),
    Feature(
        name="ww_alpha_mean", kind="weightwatcher", label="WeightWatcher α (mean over layers)",
        unit="1", level="checkpoint",
    ),
    Feature(
        name="grad_norm", kind="baseline", label="gradient norm (baseline)", unit="1",
        level="checkpoint",
    ),
]  # fmt: skip


def _of_embeddings(feature: Feature) -> Feature:
    """A diagram feature's entry for the embedding cloud (sources.pythia): one diagram's summary,
    not reduced over layers; its short name "H{k} <statistic>"."""
    label = re.sub(r" \((sum|mean) over layers\)", "", feature.label) + " (embeddings)"
    short = "H{k} " + feature.name.removeprefix("h{k}_")
    fields = {"name": feature.name, "kind": feature.kind, "unit": feature.unit}
    return Feature(**fields, label=label, level="embedding", short=short)


EMBEDDING_STATS = ("total", "count", "max", "entropy")  # the embedding table's order
FEATURES += [
    _of_embeddings(f)
    for stat in EMBEDDING_STATS
    for f in FEATURES
    if isinstance(f, Feature) and f.on == "diagram" and f.name == f"h{{k}}_{stat}"
]
# the tested family (``inference.stats.FEATURES``): checkpoint-table columns, in the tests' order
TESTED = [
    "h0_total", "h1_total", "np_mean", "h0_count", "h1_count", "h0_entropy_mean",
    "h1_entropy_mean", "h0_max", "h1_max", "np_rieck_mean",
]  # fmt: skip


# Σ h0_total / Σ h0_count, where Σ h0_count = Σ (n_points − 1) over layers is one number per model
# (a Rips H0 diagram of n distinct points has n − 1 finite bars): the total up to that constant
REPEATS = {"h0_mean_bar": "h0_total", "h0_mean_bar_scalefree": "h0_total_scalefree"}


def entries(level: str = "layer") -> list[Feature]:
    """The registry's features at ``level`` (layer: in record order, the twins' marker left out)."""
    return [f for f in FEATURES if isinstance(f, Feature) and f.level == level]


def names(feature: Feature) -> list[str]:
    """The record keys of one entry: one per dimension where its name holds ``{k}``."""
    return [feature.name.format(k=k) for k in DIMS] if "{k}" in feature.name else [feature.name]


def diagram_entries() -> list[Feature]:
    """The entries computed from one diagram, in record order."""
    return [f for f in entries() if f.on == "diagram"]


def diagram_keys(suffix: str = "") -> list[str]:
    """h{k}_* keys of the diagram features, dimension by dimension (H0's, then H1's)."""
    stats = [f.name for f in diagram_entries()]
    return [name.format(k=k) + suffix for k in DIMS for name in stats]


def _expanded() -> Iterator[tuple[str, Feature]]:
    """(record key, entry) in record order: the diagram features as one block, dimension by
    dimension, where the first of them stands; the twins where the marker stands."""
    block_done = False
    for item in FEATURES:
        if isinstance(item, Feature) and item.level != "layer":
            continue
        if isinstance(item, str):
            by_name = {f.name: f for f in diagram_entries()}
            for key in diagram_keys():
                if by_name[_pattern(key)].scalefree:
                    yield key + SCALEFREE, by_name[_pattern(key)]
            for twin in (f for f in entries() if f.scalefree and f.on != "diagram"):
                yield from ((n + SCALEFREE, twin) for n in names(twin))
        elif item.on == "diagram":
            if not block_done:
                by_name = {f.name: f for f in diagram_entries()}
                for key in diagram_keys():
                    yield key, by_name[_pattern(key)]
                block_done = True
        else:
            yield from ((n, item) for n in names(item))


def _pattern(key: str) -> str:
    """h1_total → h{k}_total (the entry's name of a diagram key)."""
    return "h{k}" + key[2:] if key[:1] == "h" and key[1:2].isdigit() else key


def record_keys() -> tuple[str, ...]:
    """A per-layer record's keys, in order: META, then every feature's (and twin's) key."""
    keys = [key for key, _ in _expanded()]
    if len(set(keys)) != len(keys):
        raise ValueError(f"topology.registry names a feature twice: {keys}")
    return (*META, *keys)


def entry_of(key: str) -> Feature:
    """The entry a record key (or its twin) belongs to."""
    for name, feature in _expanded():
        if name == key:
            return feature
    raise KeyError(f"no feature {key!r} in topology.registry")


def reductions() -> dict[str, list[str]]:
    """{"mean" | "max" | "sum": record keys}, in record order, for the entries whose column is the
    key itself (+ "_mean" for a mean); those with their own ``column`` are ``named_columns``."""
    out: dict[str, list[str]] = {r: [] for r in REDUCTIONS}
    for key, feature in _expanded():
        if feature.column is None or key.endswith(SCALEFREE):
            out[feature.over_layers].append(key)
    return out


def named_columns() -> list[tuple[str, Feature]]:
    """(record key, entry) of the entries that name their own column (and spread), in order."""
    return [(k, f) for k, f in _expanded() if f.column is not None and not k.endswith(SCALEFREE)]


def column(key: str) -> str:
    """The checkpoint table's column of a record key (a twin's: its own key, + _mean if a mean)."""
    feature = entry_of(key)
    if feature.column is not None and not key.endswith(SCALEFREE):
        return feature.column
    return f"{key}_mean" if feature.over_layers == "mean" else key


def tested() -> list[str]:
    """The tested family's columns (``inference.stats.FEATURES``): TESTED, each a registered
    column (a layer feature's or a checkpoint feature's)."""
    if unknown := [c for c in TESTED if c not in labels()]:
        raise KeyError(f"topology.registry.TESTED names no registered column: {unknown}")
    return list(TESTED)


def diagram_features() -> list[str]:
    """The diagram features' keys (h0_total, h1_total, h0_count, …) in the tested order (the
    untested after them): the summaries of one Rips diagram, as the embedding records hold them."""
    keys = [key for f in diagram_entries() for key in names(f)]
    place = {c: i for i, c in enumerate(TESTED)}
    return sorted(keys, key=lambda key: place.get(column(key), len(place)))


def _at_dim(text: str, key: str, feature: Feature) -> str:
    """``text`` with ``{k}`` replaced by a record key's dimension (h1_total → 1)."""
    return text.replace("{k}", key[1]) if "{k}" in feature.name else text


def labels() -> dict[str, str]:
    """{checkpoint-table column: label} of every layer feature (twins: the label, measured on
    W/RMS; a spread: the SD over layers) and every checkpoint feature."""
    out = {}
    for key, feature in _expanded():
        label = _at_dim(feature.label, key, feature)
        if key.endswith(SCALEFREE):
            label += ", of W / RMS(W)"
        out[column(key)] = label
        if feature.spread and not key.endswith(SCALEFREE):  # np_std: "… (SD over layers)"
            out[feature.spread] = label.replace("(mean over layers)", "(SD over layers)")
    return out | {f.name: f.label for f in entries("checkpoint")}


def embedding_labels() -> dict[str, str]:
    """{embedding-table column: label} of the embedding features."""
    return {key: _at_dim(f.label, key, f) for f in entries("embedding") for key in names(f)}


def short_names(level: str = "layer") -> dict[str, str]:
    """{column: the report's short name} of the entries at ``level`` that have one (TP0, NP)."""
    out = {}
    for feature in (f for f in entries(level) if f.short):
        for key in names(feature):
            out[key if level != "layer" else column(key)] = _at_dim(feature.short, key, feature)
    return out


def of_short(short: str, level: str = "layer") -> str:
    """The column whose short name (``short_names``) is ``short``: of_short("TP0") == "h0_total"."""
    return {name: col for col, name in short_names(level).items()}[short]


def claims() -> dict[str, str]:
    """{column: the paper's table claiming it} of the layer features, by table: the primary
    family (h0_total: 2, np_mean: 3, h1_total: 4)."""
    pairs = [
        (table, column(key))
        for f in entries()
        for key, table in zip(names(f), f.claims, strict=False)
    ]
    return {col: table for table, col in sorted(pairs)}


def claimed(table: str) -> str:
    """The column the paper's ``table`` claims a result of (claimed("2") == "h0_total")."""
    return {t: col for col, t in claims().items()}[table]


def columns(name: str, level: str = "layer") -> list[str]:
    """The columns of the entry ``name`` (one per dimension; a layer feature's spread after
    them): columns("np_total") == ["np_mean", "np_std"]."""
    for feature in (f for f in entries(level) if f.name == name):
        keys = names(feature)
        if level != "layer":
            return keys
        return [column(k) for k in keys] + [feature.spread] * bool(feature.spread)
    raise KeyError(f"no {level} feature {name!r} in topology.registry")


def repeats() -> dict[str, str]:
    """{column: the column it repeats}: each ``twin_same`` feature's twin and REPEATS."""
    out = {}
    for key, feature in _expanded():
        if key.endswith(SCALEFREE) and feature.twin_same:
            out[column(key)] = column(key[: -len(SCALEFREE)])
    return out | REPEATS


def repeated(df, by: str = "model") -> list[str]:
    """The columns of ``df`` that repeat another (``repeats``) in these data: equal to it times
    one positive constant per ``by`` group (a twin: the constant 1, to 1e-9 relative). A declared
    repeat the data do not show (duplicate weight rows, say) is not listed: it is tested."""
    import numpy as np

    out = []
    for col, original in repeats().items():
        if col not in df or original not in df:
            continue
        ratio = df[col].astype(float) / df[original].astype(float).where(df[original] != 0)
        both_zero = (df[col] == 0) & (df[original] == 0)
        spread = ratio.groupby(df[by]).agg(
            lambda r: np.nanmax(r) - np.nanmin(r) if r.notna().any() else 0.0
        )
        level = ratio.groupby(df[by]).agg(
            lambda r: np.nanmax(np.abs(r)) if r.notna().any() else 1.0
        )
        if ((ratio.notna() | both_zero).all()) and (spread <= 1e-9 * level).all():
            out.append(col)
    return out
