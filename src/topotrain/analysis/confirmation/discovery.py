"""Discovery: the discovery seeds' exploratory hits, frozen with their signs (``hypotheses_table``).

A **hit** is a (feature, target) cell whose plain between-seed contrast and every partial view its
branch reports (the GPT study: the scale ``l2_norm_mean``; the control: the weight norm and the
Fourier measure) have two-sided p < α, pooled over models with signs +1 (as ``associations``), all
of one sign; a view partial on the feature itself does not exist and is left out. That sign is
**frozen**. Named hypotheses come with their own sign. The branches (``BRANCHES``: the GPT study
and the grokking control) and the columns of both tables live here; ``confirm`` tests the rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from topotrain.analysis.confirmation.named import (
    NOT_BEYOND,
    beyond_list,
    beyond_test,
    family_level,
    kind_of,
    text_of,
    tracks_statistic,
    with_halves,
)
from topotrain.analysis.control import grokking
from topotrain.analysis.inference import associations
from topotrain.analysis.inference.primary import claim_views
from topotrain.analysis.inference.seed_contrast import SCALE, model_matrices, seed_permutations
from topotrain.analysis.inference.signs import holds_in_one_sign
from topotrain.analysis.inference.stats import ALPHA


@dataclass(frozen=True)
class Branch:
    """A study's confirmation design: targets, views (name → the column the contrast is partial
    on, None for the plain one; the first is the clock), the views whose upper ends can show an
    effect small ("artefact", Bonferroni over two), and its candidate features."""

    name: str
    targets: tuple[str, ...]
    views: dict[str, str | None]
    equivalence: tuple[str, str]
    features: Callable[[pd.DataFrame], list[str]]


BRANCHES = {
    "spine": Branch(
        "spine",
        tuple(associations.TARGETS),
        {"clock": None, "scale": SCALE},
        ("clock", "scale"),
        lambda df: [f for f, _ in associations.feature_kinds(df) if f in df],
    ),
    "control": Branch(
        "control",
        (grokking.TARGET,),
        {"clock": None, "norm": grokking.NORM, "fourier": grokking.FOURIER},
        ("clock", "norm"),
        lambda df: [f for f in grokking.FEATURES if f in df],
    ),
}
HEAD = ["branch", "name", "feature", "target", "sign", "kind", "beyond", "source"]
SCREEN = ["feature", "target", "hit", "sign"]  # then rho_ and p_ per view
TAIL = ["arrangements", "seeds", "models", "discovery_table_sha256"]
NAMED = ["statistic", "family", "split_r"]  # a kind's test in words, the family's size, halves' r


def view_columns(branch: Branch, extra: Sequence[str] = ()) -> list[str]:
    """rho_, p_, effect_, effect_*_ci_low/high per view of ``branch`` and per ``extra`` view
    (a named hypothesis's view beyond a column that is none of the branch's)."""
    out = []
    for v in [*branch.views, *extra]:
        out += [f"rho_{v}", f"p_{v}", f"effect_{v}", f"effect_{v}_ci_low", f"effect_{v}_ci_high"]
    return out


def hypotheses_columns(branch: Branch, extra: Sequence[str] = ()) -> list[str]:
    return [*HEAD, *view_columns(branch, extra), *TAIL, *NAMED, "note"]


def row_views(branch: Branch, feature: str, beyond: Sequence[str] = ()) -> dict[str, str | None]:
    """A row's views: the branch's (``feature_views``), or with ``beyond`` one per column, the
    partial contrast on it, named as the branch names it (the control: norm, fourier) or by the
    column."""
    if not beyond:
        return feature_views(branch, feature)
    names = {cond: name for name, cond in branch.views.items() if cond}
    return {names.get(c, c): c for c in beyond if c != feature}


def frozen_views(branch: Branch, row) -> dict[str, str | None]:
    """``row_views`` of a frozen row (its feature and its ``beyond``)."""
    return row_views(branch, row["feature"], beyond_list(row.get("beyond")))


def feature_views(branch: Branch, feature: str) -> dict[str, str | None]:
    """The branch's views of ``feature``: a view partial on the feature itself does not exist."""
    return {name: cond for name, cond in branch.views.items() if cond != feature}


def left_out(branch: Branch, feature: str) -> str:
    gone = [name for name in branch.views if name not in feature_views(branch, feature)]
    return f"view {', '.join(gone)} left out: partial on the feature itself" if gone else ""


@dataclass(frozen=True)
class Design:
    """One side's models: their raw matrices and seed permutations, the seeds and model names."""

    mats: list[dict[str, np.ndarray]]
    perms: list[np.ndarray]
    seeds: list[int]
    models: list[str]

    def test(
        self, feature: str, target: str, views: dict, sign: float, alternative: str, seed: int
    ) -> dict:
        """``primary.claim_views`` of one cell over every model, every model in ``sign``."""
        signs = [float(sign)] * len(self.mats)
        return claim_views(self.mats, self.perms, signs, feature, target, seed, views, alternative)


def design(df: pd.DataFrame, columns: Sequence[str], seed: int = 0) -> Design:
    """The Design of a feature table (one row per model, seed and checkpoint)."""
    groups = [g for _, g in df.groupby("model", sort=True)]
    cols = [c for c in dict.fromkeys(columns) if c in df]
    return Design(
        [model_matrices(g, cols) for g in groups],
        [seed_permutations(g["seed"].nunique(), seed) for g in groups],
        sorted(int(s) for s in df["seed"].unique()),
        [str(g["model"].iloc[0]) for g in groups],
    )


def is_hit(row: dict, views: Sequence[str], alpha: float = ALPHA) -> bool:
    """Every view's two-sided p < alpha and every view's ρ of one sign (``holds_in_one_sign``;
    NaN: no hit)."""
    return holds_in_one_sign(
        [row[f"p_{v}"] for v in views], [row[f"rho_{v}"] for v in views], alpha
    )


def discovery_screen(
    df: pd.DataFrame, branch: Branch, alpha: float = ALPHA, seed: int = 0
) -> pd.DataFrame:
    """One row per candidate (feature, target) of the branch in ``df``: rho_ and two-sided p_ per
    view (signs +1, pooled over models), ``hit`` (``is_hit``) and the sign a hit freezes."""
    features = branch.features(df)
    side = design(df, [*features, *branch.targets, *filter(None, branch.views.values())], seed)
    rows = []
    for feature, target in itertools.product(features, branch.targets):
        if target not in df or feature == target:
            continue
        views = feature_views(branch, feature)
        res = side.test(feature, target, views, 1.0, "two-sided", seed)
        rho = res[f"rho_{next(iter(views))}"]
        row = {"feature": feature, "target": target, "hit": is_hit(res, views, alpha)}
        rows.append(row | {"sign": float(np.sign(rho)) if np.isfinite(rho) else np.nan} | res)
    return pd.DataFrame(rows, columns=None if rows else SCREEN)


def hypotheses_table(
    df: pd.DataFrame,
    branch: Branch,
    named: Sequence[dict] = (),
    sha256: str = "",
    alpha: float = ALPHA,
    seed: int = 0,
    source: str = "the discovery feature table",
) -> pd.DataFrame:
    """hypotheses_columns(branch): the hits of ``discovery_screen``, then the named hypotheses
    (a named cell that is also a hit keeps its named sign and kind; the note says so), each with
    its discovery ρ, two-sided p and effect [interval] per view in the frozen sign (a
    ``not_beyond`` one: its own test, ``named.beyond_test``). Header only: no hit and nothing
    named."""
    for h in named:
        columns = [h["feature"], h["target"], *beyond_list(h.get("beyond"))]
        if missing := [c for c in columns if c not in df]:
            raise ValueError(
                f"confirm.hypotheses: {h['branch']} {h['feature']} ~ {h['target']}: {missing} "
                f"not a column of {source}"
            )
    found = discovery_screen(df, branch, alpha, seed)
    found = found[found["hit"].astype(bool)]
    hits = {(f, t): s for f, t, s in found[["feature", "target", "sign"]].to_numpy()}
    cells = {key: {"sign": sign, "source": "hit", "note": ""} for key, sign in hits.items()}
    for h in named:
        key = (h["feature"], h["target"])
        also = f"also a hit, sign {hits[key]:+.0f}" if key in hits else ""
        spec = {"name": text_of(h.get("name")), "kind": kind_of(h)}
        spec["beyond"] = beyond_list(h.get("beyond"))
        cells[key] = {"sign": float(h["sign"]), "source": "named", "note": also, **spec}
    beyond = [c for cell in cells.values() for c in cell.get("beyond", [])]
    columns = {c for f, t in cells for c in (f, t)} | set(filter(None, branch.views.values()))
    side = design(df, sorted(columns | with_halves(beyond)), seed)
    rows = [
        _frozen_row(side, branch, feature, target, cell, len(cells), alpha, seed)
        for (feature, target), cell in cells.items()
    ]
    out = pd.DataFrame(rows, columns=hypotheses_columns(branch, _extra_views(branch, rows)))
    out["seeds"] = ";".join(map(str, side.seeds))
    out["models"] = ";".join(side.models)
    out["discovery_table_sha256"] = sha256
    return out


def _extra_views(branch: Branch, rows: Sequence[dict]) -> list[str]:
    """The views of ``rows`` that are none of the branch's, in order of appearance."""
    views = [v for r in rows for v in frozen_views(branch, r) if v not in branch.views]
    return list(dict.fromkeys(views))


def _frozen_row(
    side: Design,
    branch: Branch,
    feature: str,
    target: str,
    cell: dict,
    family: int,
    alpha: float,
    seed: int,
) -> dict:
    """One hypothesis on the discovery side, two-sided, in its frozen sign."""
    kind, beyond, sign = cell.get("kind", ""), cell.get("beyond", []), cell["sign"]
    views = row_views(branch, feature, beyond)
    head = {"branch": branch.name, "name": cell.get("name", ""), "feature": feature}
    head |= {"target": target, "sign": int(sign), "kind": kind, "beyond": ";".join(beyond)}
    head |= {"source": cell["source"], "family": family}
    if kind == NOT_BEYOND:
        [(view, column)] = views.items()
        level = family_level(family, alpha)
        res = beyond_test(side.mats, side.perms, feature, target, view, column, sign, seed, level)
        note = "; ".join(filter(None, [res.pop("note"), cell["note"]]))
        return head | res | {"note": note}
    res = side.test(feature, target, views, sign, "two-sided", seed)
    gone = "" if beyond else left_out(branch, feature)
    note = "; ".join(filter(None, [res.pop("note"), gone, cell["note"]]))
    return head | res | {"statistic": tracks_statistic(views) if kind else "", "note": note}
