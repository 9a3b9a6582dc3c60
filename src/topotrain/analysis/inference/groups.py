"""Your own seeds under the between-seed test: a group of ``runs:`` entries that are seeds of one
recipe (``runs.<name>.group``, ``runs.<name>.seed``).

Which runs make the group, their sizes and the steps and training they share: ``group_members``.

``group_contrasts``: per (feature, target) the pooled between-seed contrast beyond the clock
(``seed_contrast``) and beyond the scale (partial on ``l2_norm_mean``), its effect β with a 95 %
interval (``primary.claim_views``, the GPT study's claims' own code). The features named under
``groups.<name>.primary`` are the group's family: one-sided in a given sign, else two-sided; a
claim's p is the larger of the two views' (both must hold) when their ρ are of one sign, the
claimed one when given, else 1 (``claim_p``: the sign rule of ``signs.holds_in_one_sign``),
Benjamini–Hochberg over the family, and the verdict words of ``verdicts.decide_claim`` at Δ
(``analysis.sesoi``): the effect is "shown small" when the interval's end in the claimed
direction (both ends, two-sided) lies within Δ of 0 in either view. Every other feature is
exploratory: its p and interval, no verdict.

Beside every row, exploratory and outside the verdict: the co-movement pair (``VIEWS["comove"]``:
``seed_comove`` and its partial on the scale; docs/comovement.md) against ``val_loss``, the loss
of each checkpoint's own weights (``train_loss`` is the mean logged over the steps before it), its
ρ, p and effect β_co [95 % interval] (``comove_columns``); NaN, said in the note, without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from topotrain.analysis.inference.associations import feature_kinds
from topotrain.analysis.inference.group_members import (  # noqa: F401 (imported from here)
    MIN_CHECKPOINTS,
    P_POSSIBLE,
    GroupError,
    check_recorded,
    group_frame,
    group_targets,
    size_label,
)
from topotrain.analysis.inference.primary import (
    CO_TARGET,
    CONDITIONS,
    EFFECT,
    VIEWS,
    claim_views,
)
from topotrain.analysis.inference.seed_contrast import SCALE, model_matrices, seed_permutations
from topotrain.analysis.inference.signs import common_sign, holds_in_one_sign
from topotrain.analysis.inference.stats import ALPHA, benjamini_hochberg
from topotrain.analysis.inference.verdicts import (
    ARTEFACT,
    INCONCLUSIVE,
    REPRODUCED,
    REPRODUCED_SMALL,
    decide_claim,
)

USEFUL = 5  # seeds of one size from which the calibration suite finds useful power
WORDS = {
    REPRODUCED: "tracks the loss beyond clock and scale",
    REPRODUCED_SMALL: "beyond clock and scale, effect below Δ",
    ARTEFACT: "effect shown below Δ",
    INCONCLUSIVE: "inconclusive",
}
CO_CONDITIONS = VIEWS["comove"][1]  # co_clock: seed_comove; co_scale: its partial on the scale
CO_COLUMNS = [
    *[f"{c}_{v}" for v in CO_CONDITIONS for c in ("rho", "p")],
    *[f"effect_{v}{c.removeprefix('effect')}" for v in CO_CONDITIONS for c in EFFECT],
]
CO_SAID = "co-movement: "  # a co-movement pair's own note, in the row's
NO_CO = (
    f"no co-movement view: no {CO_TARGET} at {MIN_CHECKPOINTS} or more shared checkpoints of "
    "every seed (train_loss, the mean logged over the steps before a checkpoint, is not a loss "
    "of its weights)"
)
CONTRAST_COLUMNS = [
    "feature",
    "kind",
    "target",
    "role",
    "sign",
    "models",
    "arrangements",
    *[f"{c}_{v}" for v in CONDITIONS for c in ("rho", "p")],
    *[f"effect_{v}{c.removeprefix('effect')}" for v in CONDITIONS for c in EFFECT],
    "co_target",
    *CO_COLUMNS,
    "p",
    "p_bh",
    "verdict",
    "note",
]


def primary_items(primary: Sequence) -> list[tuple[str, float | None]]:
    """(feature, sign or None for two-sided) of ``groups.<name>.primary``'s items."""
    out = []
    for item in primary:
        if isinstance(item, str):
            out.append((item, None))
        else:
            out.append((item["feature"], float(item["sign"])))
    return out


def group_contrasts(
    df: pd.DataFrame,
    primary: Sequence = (),
    sesoi: float = 0.1,
    seed: int = 0,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """CONTRAST_COLUMNS: one row per (feature, target) of ``df`` (``group_frame``'s), the primary
    family's rows first. A primary feature the table lacks is a GroupError listing those it has."""
    targets = group_targets(df)
    kinds = dict(f for f in feature_kinds(df) if f[0] in df and f[1] != "baseline")
    named = primary_items(primary)
    missing = [f for f, _ in named if f not in df]
    if missing:
        raise GroupError(
            f"groups primary: {', '.join(missing)} not in the group's feature table; it has "
            f"{', '.join(sorted(kinds))}"
        )
    models = list(dict.fromkeys(df["model"]))
    rows_of = [df[df["model"] == m] for m in models]
    columns = [c for c in dict.fromkeys([*kinds, *targets, SCALE]) if c in df]
    mats = [model_matrices(r, columns) for r in rows_of]
    perms = [seed_permutations(r["seed"].nunique(), seed) for r in rows_of]
    signs_of = dict(named)
    co_target = CO_TARGET if CO_TARGET in targets else None
    rows = []
    order = [f for f, _ in named] + [f for f in kinds if f not in signs_of]
    for feature in order:
        sign = signs_of.get(feature)
        role = "primary" if feature in signs_of else "exploratory"
        alternative = "two-sided" if sign is None else "greater"
        signs = [1.0 if sign is None else sign] * len(models)
        co, co_note = comove_columns(mats, perms, signs, feature, co_target, seed, alternative)
        for target in targets:
            res = claim_views(mats, perms, signs, feature, target, seed, alternative=alternative)
            rows.append(
                {
                    "feature": feature,
                    "kind": kinds.get(feature, "topological"),
                    "target": target,
                    "role": role,
                    "sign": "two-sided" if sign is None else f"{sign:+.0f}",
                    "models": ";".join(models),
                    **res,
                    **co,
                    "note": _with_co(res["note"], co_note),
                }
            )
    out = pd.DataFrame(rows).reindex(columns=CONTRAST_COLUMNS)
    claims = [claim_p(row) for _, row in out.iterrows()]
    out["p"] = [p for p, _ in claims]
    notes = out["note"].fillna("")
    out["note"] = [
        "; ".join(filter(None, [n, why])) for n, (_, why) in zip(notes, claims, strict=True)
    ]
    family = out["role"] == "primary"
    out["p_bh"] = np.nan
    if family.any():
        out.loc[family, "p_bh"] = benjamini_hochberg(out.loc[family, "p"].to_numpy(float))
    out["verdict"] = [
        _verdict(row, sesoi, alpha) if row["role"] == "primary" else "exploratory"
        for _, row in out.iterrows()
    ]
    return out


def comove_columns(
    mats: list[dict[str, np.ndarray]],
    perms: list[np.ndarray],
    signs: list[float],
    feature: str,
    co_target: str | None,
    seed: int = 0,
    alternative: str = "two-sided",
) -> tuple[dict, str]:
    """(columns, note) of the co-movement pair (CO_CONDITIONS) of ``feature`` against
    ``co_target`` (``claim_views`` in the row's signs and alternative): co_target and CO_COLUMNS,
    the note prefixed "co-movement: "; none but the note NO_CO when ``co_target`` is None."""
    if co_target is None:
        return {}, NO_CO
    res = claim_views(mats, perms, signs, feature, co_target, seed, CO_CONDITIONS, alternative)
    note = f"{CO_SAID}{res['note']}" if res["note"] else ""
    return {"co_target": co_target} | {c: res[c] for c in CO_COLUMNS}, note


def _with_co(note: str, co_note: str) -> str:
    """The row's note, then the co-movement pair's where it says something else."""
    same = co_note.removeprefix(CO_SAID) == note
    return "; ".join(filter(None, [note, "" if same else co_note]))


def _claimed(row: pd.Series) -> float | None:
    """The sign the row's ρ must have: +1 one-sided (ρ is in the claimed sign), None two-sided."""
    return None if row["sign"] == "two-sided" else 1.0


def claim_p(row: pd.Series) -> tuple[float, str]:
    """(p, note) of one row's claim: the larger of the clock's and the scale's p
    (intersection–union) when their ρ are of one sign (the claimed one, one-sided); 1 when both
    ρ are defined and not: a feature that rises with the loss in one view and falls in the other
    tracks it in no one sign, and in either sign one view's one-sided p is then about ½ or more,
    so the claim's two-sided p, 2·min(p₊, p₋) over the two signs, is about 1. NaN: undefined."""
    ps = [row[f"p_{v}"] for v in CONDITIONS]
    rhos = np.array([row[f"rho_{v}"] for v in CONDITIONS], float)
    p = float(max(ps)) if np.isfinite(ps).all() else np.nan
    if not np.isfinite(p) or not np.isfinite(rhos).all() or common_sign(rhos, _claimed(row)):
        return p, ""
    shown = ", ".join(f"{v} {r:+.2f}" for v, r in zip(CONDITIONS, rhos, strict=True))
    what = "views disagree in sign" if _claimed(row) is None else "a view's ρ is against the sign"
    return 1.0, f"{what} (ρ {shown}): p = 1, no claim of one sign holds"


def _verdict(row: pd.Series, sesoi: float, alpha: float) -> str:
    """decide_claim's words: rejected when p_bh < alpha and both views hold in one sign
    (``holds_in_one_sign``); shown small when, in either view, the interval's end in the claimed
    direction (the farther end, two-sided) is within Δ."""
    if pd.isna(row["p"]):
        return "not evaluated"
    ends = []
    for view in CONDITIONS:
        low, high = row[f"effect_{view}_ci_low"], row[f"effect_{view}_ci_high"]
        ends.append(high if row["sign"] != "two-sided" else max(abs(low), abs(high)))
    ps, rhos = [row[f"p_{v}"] for v in CONDITIONS], [row[f"rho_{v}"] for v in CONDITIONS]
    held = holds_in_one_sign(ps, rhos, alpha, _claimed(row))
    return WORDS.get(decide_claim(bool(row["p_bh"] < alpha) and held, ends, sesoi), "inconclusive")


def power_note(df: pd.DataFrame) -> str:
    """How many seeds each size has and what p can reach: the smallest one-sided p per size
    1/k!, pooled 1/Π k!; two-sided twice that; fewer than 4 seeds of one size allow no
    p < 0.05 there, 5 or more give useful power."""
    k = df.groupby("model", sort=False)["seed"].nunique()
    pooled = math.prod(math.factorial(int(n)) for n in k)
    sizes = ", ".join(f"{m}: {int(n)} seeds" for m, n in k.items())
    most = int(k.max())
    if most < P_POSSIBLE and len(k) == 1:
        say = (
            f"with {most} seeds no p below {ALPHA:g} is possible (smallest one-sided "
            f"1/{pooled}): the group needs at least {P_POSSIBLE} seeds for that and {USEFUL} for "
            "useful power"
        )
    elif most < USEFUL:
        say = (
            f"p < {ALPHA:g} is possible (smallest one-sided p 1/{pooled}, two-sided "
            f"2/{pooled}) but power is low below {USEFUL} seeds of a size: a real effect is easily "
            "missed, so an inconclusive row is no evidence of no effect"
        )
    else:
        say = (
            f"smallest one-sided p 1/{pooled}, two-sided 2/{pooled}; {USEFUL} or more seeds of a "
            "size give the contrast useful power (docs/calibration.md)"
        )
    return f"{sizes}: {say}."
