"""Your own seeds under the between-seed test: a group of ``runs:`` entries that are seeds of one
recipe (``runs.<name>.group``, ``runs.<name>.seed``).

The group's runs of one size (their parameter count) are one model; sizes pool as the GPT study's
models do. Per size, the contrast uses the checkpoint steps every seed of that size has
(``group_frame``: a seed with steps the others lack is named; a size with one seed is left out,
said). Members must share what is recorded of their training (``check_recorded``: numerics, the
model config, the Trainer's batch size and length; a mismatch names the runs and the key).

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

import json
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from topotrain.analysis.inference.associations import feature_kinds
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
from topotrain.config import LOSSES, SEEDS_FOR_ALPHA

TARGETS = LOSSES  # the losses a group's features are tested against
MIN_CHECKPOINTS = 3  # a loss logged at fewer shared checkpoints is no target
P_POSSIBLE = SEEDS_FOR_ALPHA  # seeds of one size below which no one-sided p < α exists
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


class GroupError(ValueError):
    """A group that cannot be contrasted as configured: names the runs and the reason."""


def size_label(n_params: float) -> str:
    """'3.2k', '14.1M', '1.0B' parameters: a size's model name in the group's tables."""
    n = float(n_params)
    for unit, scale in (("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n:.0f}"


def group_frame(
    group: str, tables: Mapping[str, pd.DataFrame], seeds: Mapping[str, int]
) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(features, members, notes) of a group: its runs' feature tables (``run_features``, one row
    per checkpoint) stacked with ``model`` = the run's size and ``seed`` = its seed, each size cut
    to the steps all its seeds share; members: one row per run (run, model, seed, n_params, its
    steps, those kept, those only it has). A seed given twice within a size, or a group with fewer
    than two seeds of every size, is a GroupError."""
    frames, rows, notes = {}, [], []
    for run, table in tables.items():
        n_params = table["n_params"].dropna()
        label = f"{group} {size_label(n_params.iloc[0])}" if len(n_params) else group
        frames[run] = table.assign(model=label, seed=int(seeds[run]))
    by_size: dict[str, list[str]] = {}
    for run, frame in frames.items():
        by_size.setdefault(frame["model"].iloc[0], []).append(run)
    kept = []
    for model, runs in by_size.items():
        given = [int(seeds[r]) for r in runs]
        if len(set(given)) < len(given):
            twice = sorted({s for s in given if given.count(s) > 1})
            named = [r for r in runs if int(seeds[r]) in twice]
            raise GroupError(
                f"group {group}: seed {twice[0]} is given to more than one run of size {model} "
                f"({', '.join(named)}): give each run its own seed"
            )
        steps = {r: set(frames[r]["step"].astype(int)) for r in runs}
        shared = set.intersection(*steps.values())
        for run in runs:
            only = sorted(steps[run] - shared)
            rows.append(
                {
                    "run": run,
                    "model": model,
                    "seed": int(seeds[run]),
                    "n_params": frames[run]["n_params"].iloc[0],
                    "steps": len(steps[run]),
                    "shared_steps": len(shared),
                    "only_this_seed": " ".join(map(str, only)),
                }
            )
            if only:
                notes.append(
                    f"{run} (seed {seeds[run]}) has {len(only)} steps the other seeds of {model} "
                    f"lack ({_steps(only)}): left out of the contrast"
                )
        if len(runs) < 2:
            notes.append(f"size {model} has one seed ({runs[0]}): no contrast at that size")
            continue
        if len(shared) < 2:
            notes.append(f"size {model}: its seeds share {len(shared)} steps: no contrast")
            continue
        kept += [frames[r][frames[r]["step"].isin(shared)] for r in runs]
    members = pd.DataFrame(rows)
    if not kept:
        raise GroupError(
            f"group {group}: no size has two seeds sharing two checkpoint steps "
            f"({', '.join(f'{m}: {len(r)} seed(s)' for m, r in by_size.items())}): a between-seed "
            f"contrast needs at least 2 seeds of one size ({P_POSSIBLE} for p < {ALPHA:g})"
        )
    df = pd.concat(kept, ignore_index=True).sort_values(["model", "seed", "step"])
    return df.reset_index(drop=True), members, notes


def _steps(steps: Sequence[int]) -> str:
    shown = ", ".join(map(str, steps[:6]))
    return shown + (f", … {steps[-1]}" if len(steps) > 6 else "")


# What must agree across a group's seeds where it is recorded: key -> where it comes from.
RECORDED = {
    "numerics": "the numerics topotrain trained with (checkpoint metadata)",
    "model_config": "the model's config (config.json or topotrain's checkpoint metadata)",
    "train_batch_size": "trainer_state.json",
    "max_steps": "trainer_state.json",
    "num_train_epochs": "trainer_state.json",
}


def check_recorded(group: str, recorded: Mapping[str, Mapping], sizes: Mapping[str, str]) -> None:
    """GroupError naming the key, the runs and their values when two runs of one size (``sizes``:
    run → model) record different values of a RECORDED key; a key a run does not record is not
    compared for it."""
    for model in dict.fromkeys(sizes.values()):
        runs = [r for r, m in sizes.items() if m == model]
        for key, where in RECORDED.items():
            values = {r: recorded.get(r, {}).get(key) for r in runs}
            values = {r: v for r, v in values.items() if v is not None}
            if len({_canonical(v) for v in values.values()}) > 1:
                shown = "; ".join(f"{r}: {v}" for r, v in values.items())
                raise GroupError(
                    f"group {group}: the seeds of size {model} differ in {key} ({where}): "
                    f"{shown}. Seeds of one recipe must share it: take the odd run out of the "
                    "group, or give it a group of its own"
                )


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def group_targets(df: pd.DataFrame) -> list[str]:
    """The losses every seed logged at MIN_CHECKPOINTS or more of the steps kept."""
    out = []
    for target in TARGETS:
        if target in df:
            counts = df.groupby(["model", "seed"])[target].apply(lambda v: v.notna().sum())
            if len(counts) and counts.min() >= MIN_CHECKPOINTS:
                out.append(target)
    return out


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
