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
    """One per-layer feature (module docstring). ``compute`` takes one diagram (``on="diagram"``)
    or the matrix W (``on="matrix"``); None: computed with the matrix's neural persistence and
    norms in ``layers.layer_parts``, which names it."""

    name: str
    on: str  # "diagram" or "matrix"
    compute: Callable | None
    over_layers: str  # "mean", "max" or "sum" (REDUCTIONS)
    kind: str  # topological, norm
    label: str  # of the checkpoint table's column ({k}: the dimension)
    unit: str
    tested: int | None = None  # place in the tested family (inference.stats.FEATURES)
    scalefree: bool = False  # also on W / RMS(W): <name>_scalefree
    column: str | None = None  # the checkpoint table's column (default: name, + _mean if a mean)
    spread: str | None = None  # also the SD over layers, in this column
    twin_same: bool = False  # the W / RMS(W) twin equals it by construction (a scale-free feature)


FEATURES: list[Feature | str] = [
    Feature(
        "np_total", "matrix", None, "mean", "topological",
        "neural persistence (mean over layers)", "1", tested=2, column="np_mean", spread="np_std",
    ),
    Feature(
        "np_p2", "matrix", None, "mean", "topological",
        "neural persistence, p = 2 (mean over layers)", "1",
        column="np_p2_mean", spread="np_p2_std",
    ),
    Feature(
        "np_rieck", "matrix", None, "mean", "topological",
        "neural persistence, reference definition (mean over layers)", "1", tested=9,
    ),
    Feature(
        "h{k}_count", "diagram", feature_count, "sum", "topological", "number of H{k} bars",
        "bars", tested=3, scalefree=True, twin_same=True,
    ),
    Feature(
        "h{k}_total", "diagram", total_persistence, "sum", "topological",
        "H{k} total persistence (sum over layers)", "weight units", tested=0, scalefree=True,
    ),
    Feature(
        "h{k}_max", "diagram", max_persistence, "max", "topological", "longest H{k} bar",
        "weight units", tested=7, scalefree=True,
    ),
    Feature(
        "h{k}_entropy", "diagram", persistence_entropy, "mean", "topological",
        "H{k} persistence entropy (mean over layers)", "nats", tested=5, scalefree=True,
        twin_same=True,
    ),
    Feature(
        "l2_norm", "matrix", None, "mean", "norm",
        "weight L2 norm, mean over layers (baseline)", "weight units",
    ),
    SCALEFREE,  # here the record holds the *_scalefree twins of the entries above, in their order
    Feature(
        "np_wvar", "matrix", None, "mean", "norm",
        "normalised weight variance (mean over layers)", "1",
    ),
]  # fmt: skip


# Σ h0_total / Σ h0_count, where Σ h0_count = Σ (n_points − 1) over layers is one number per model
# (a Rips H0 diagram of n distinct points has n − 1 finite bars): the total up to that constant
REPEATS = {"h0_mean_bar": "h0_total", "h0_mean_bar_scalefree": "h0_total_scalefree"}


def entries() -> list[Feature]:
    """The registry's features, in record order (the twins' marker left out)."""
    return [f for f in FEATURES if isinstance(f, Feature)]


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
    """The tested family's columns (``inference.stats.FEATURES``), in each entry's ``tested``
    place (a {k} entry: H0's place, then H1's next to it)."""
    ranked = sorted((f.tested, f) for f in entries() if f.tested is not None)
    return [column(key) for _, f in ranked for key in names(f)]


def diagram_features() -> list[str]:
    """The diagram features' keys (h0_total, h1_total, h0_count, …) in the tested order (the
    untested after them): the summaries of one Rips diagram, as the embedding records hold them."""
    ranked = sorted(diagram_entries(), key=lambda f: (f.tested is None, f.tested or 0))
    return [key for f in ranked for key in names(f)]


def labels() -> dict[str, str]:
    """{checkpoint-table column: label} of every feature (twins: the label, measured on W/RMS)."""
    out = {}
    for key, feature in _expanded():
        label = feature.label.replace("{k}", key[1]) if "{k}" in feature.name else feature.label
        if key.endswith(SCALEFREE):
            label += ", of W / RMS(W)"
        out[column(key)] = label
    return out


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
