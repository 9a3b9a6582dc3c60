"""Named hypotheses with a kind (issue 56 item 8), beside the hits of ``confirm``.

A named hypothesis with a ``kind`` (``confirm.hypotheses``: name, kind, beyond) is decided in
words of its own, ``confirmed``, ``refuted`` or ``undecided`` (``named_verdict``), by a test
fixed before the fresh data:
- ``tracks``: the contrast in the frozen sign holds beyond every column of ``beyond`` (each view
  the partial contrast on it; without ``beyond`` the branch's views), p the largest of their
  one-sided p's (intersection–union); confirmed when BH over the family rejects with every ρ of
  the frozen sign, refuted when it holds in the other sign or a view's effect is shown below Δ
  (the upper end of its 95 % interval under Δ: ``decide_claim``'s artefact), else undecided.
- ``not_beyond``: the feature's contrast beyond the one column of ``beyond`` is nothing: p is
  two-sided, by the split-half partial where that column is measured twice (the LLC: its chains'
  halves, ``inference.diagnostics.split_cell``, as the control's diagnostics say "beyond the
  LLC"; its p given where the halves agree, r ≥ 0.5), else the partial contrast on it. Refuted
  when BH over the family rejects (either sign); confirmed when it does not and the effect of
  the partial contrast on that column (``seed_effect``) is shown below Δ in both signs, its
  equal-tailed 1 − 2α/m interval (m: the family's rows; each end an α/m test, Bonferroni over
  the family) inside (−Δ, Δ); undecided otherwise (and when its p is undefined). The interval is
  that of the plain partial on the column: the calibration suite calibrates the split-half p
  (``alpha_latent``, ``alpha_noisy``) but neither this interval nor the equivalence rule where
  the column is a noisy measurement (what noise in it leaves of it in the feature's residual
  widens the effect away from 0, against "confirmed": an argument, not a measurement).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from topotrain.analysis.inference.diagnostics import (
    SPLIT,
    SPLIT_OF,
    SPLITS,
    halves_agree,
    split_cell,
)
from topotrain.analysis.inference.primary import EFFECT
from topotrain.analysis.inference.seed_contrast import PARTIAL, contrast_cell, pooled_row
from topotrain.analysis.inference.seed_effect import effect_cell, effect_interval
from topotrain.analysis.inference.stats import ALPHA
from topotrain.analysis.inference.verdicts import ARTEFACT, decide_claim

TRACKS, NOT_BEYOND = "tracks", "not_beyond"  # the kinds of a named hypothesis
KINDS = (TRACKS, NOT_BEYOND)
CONFIRMED, REFUTED, UNDECIDED = "confirmed", "refuted", "undecided"  # a kind's verdicts


def beyond_list(value) -> list[str]:
    """A hypothesis's ``beyond``: the config's list, or the tables' 'a;b' text ('' or NaN: none)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return []
    if isinstance(value, str):
        return [c for c in value.split(";") if c]
    return [str(c) for c in value]


def kind_of(h) -> str:
    """A hypothesis's kind: '' for a hit or a named one without a kind (the branch's rule)."""
    kind = h.get("kind", "")
    return "" if kind is None or (isinstance(kind, float) and np.isnan(kind)) else str(kind)


def split_halves(column: str) -> tuple[str, str] | None:
    """The two measurements of ``column`` where the study has them (``SPLITS``: the LLC of two
    halves of its chains), else None."""
    return next((SPLITS[s] for s, of in SPLIT_OF.items() if of == column), None)


def with_halves(columns) -> set[str]:
    """``columns`` and the two measurements of each that has them (``split_halves``)."""
    return set(columns) | {h for c in columns for h in (split_halves(c) or ())}


def family_level(family: int, alpha: float = ALPHA) -> float:
    """The level of a ``not_beyond`` row's equal-tailed interval: 1 − 2α/m over a family of m
    rows (each end an α/m test: Bonferroni over the family)."""
    return 1 - 2 * alpha / max(int(family), 1)


def tracks_statistic(views: dict[str, str | None]) -> str:
    """A ``tracks`` row's test in words."""
    parts = [f"partial on {c}" if c else "plain" for c in views.values()]
    return (
        "between-seed contrast one-sided in the frozen sign, "
        f"p the largest of {', '.join(parts)} (intersection–union)"
    )


def text_of(value) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def beyond_test(
    mats: list[dict[str, np.ndarray]],
    perms: list[np.ndarray],
    feature: str,
    target: str,
    view: str,
    column: str,
    sign: float,
    seed: int,
    level: float,
) -> dict:
    """A ``not_beyond`` row's test of (feature, target) beyond ``column`` (view ``view``) over
    models given as raw matrices (``model_matrices``) with their seed permutations, every model
    in ``sign``: rho_/p_<view>, two-sided, of the split-half partial on the
    halves of ``column`` (``split_halves``, its p NaN with a note where a model's halves
    agree r < 0.5) or, where it has none, of the partial contrast on it; effect_<view>* the
    partial contrast's effect on ``column`` and its equal-tailed ``level`` interval
    (``seed_effect``); split_r (the smallest model's), arrangements and note."""
    signs = [float(sign)] * len(mats)
    halves = split_halves(column)
    if halves is not None and all(h in m for m in mats for h in halves):
        cells = [
            split_cell(m, feature, target, halves, p) for m, p in zip(mats, perms, strict=True)
        ]
        nulls = [null for _, null in cells]
        res = pooled_row(nulls, SPLIT, "two-sided", seed, signs)
        rs = [c["split_r"] for c, _ in cells if np.isfinite(c["split_r"])]
        split_r = float(min(rs)) if rs else np.nan
        notes = [res["note"], *(c["note"] for c, _ in cells)]
        if np.isfinite(res["p"]) and not halves_agree(split_r):
            res["p"] = np.nan
            notes.append(f"{column}'s halves agree r = {split_r:.2f} < 0.5: p not calibrated")
        how = f"split-half partial on {halves[0]}/{halves[1]}"
    else:
        nulls = [
            contrast_cell(m, feature, target, PARTIAL, p, cond=column)[1]
            for m, p in zip(mats, perms, strict=True)
        ]
        res = pooled_row(nulls, PARTIAL, "two-sided", seed, signs, cond=column)
        split_r, notes, how = np.nan, [res["note"]], f"partial contrast on {column}"
    effects = [
        effect_cell(m, feature, target, PARTIAL, p, column, sign)
        for m, p in zip(mats, perms, strict=True)
    ]
    eff = effect_interval(effects, 1 - level, seed)
    statistic = (
        f"{how}, two-sided (rejects: refuted); effect: partial contrast on {column}, "
        f"{100 * level:.4g} % interval inside ±Δ: confirmed"
    )
    return {
        f"rho_{view}": res["rho"],
        f"p_{view}": res["p"],
        **{f"effect_{view}{c.removeprefix('effect')}": eff[c] for c in EFFECT},
        "split_r": split_r,
        "arrangements": math.prod(len(n) for n in nulls),
        "statistic": statistic,
        "note": "; ".join(dict.fromkeys(filter(None, [*notes, eff["effect_note"]]))),
    }


def named_verdict(
    row: pd.Series, views: dict[str, str | None], delta: float, reversed_: bool = False
) -> str:
    """A named hypothesis's verdict by its kind at Δ = ``delta`` (module docstring): confirmed,
    refuted or undecided; undecided whenever its p is undefined. ``views``: the row's
    (``confirm.row_views``), whose effects' upper ends can show a ``tracks`` one small."""
    if pd.isna(row["p"]):
        return UNDECIDED
    if kind_of(row) == NOT_BEYOND:
        if bool(row["rejected"]):
            return REFUTED
        low, high = (float(row[f"effect_ci_{end}"]) for end in ("low", "high"))
        inside = np.isfinite(low) and np.isfinite(high) and -delta < low and high < delta
        return CONFIRMED if inside else UNDECIDED
    if bool(row["rejected"]):
        return CONFIRMED
    small = decide_claim(False, [row[f"effect_{v}_ci_high"] for v in views], delta) == ARTEFACT
    return REFUTED if reversed_ or small else UNDECIDED
