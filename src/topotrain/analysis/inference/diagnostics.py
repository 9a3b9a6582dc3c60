"""Topology beside the field's weight diagnostics: one row per topological feature, per
WeightWatcher metric (``ww_*_mean``) and for the gradient norm (``grad_norm``, the training's
own diagnostic: kind "baseline"; its partial on itself is undefined), pooled over the study's
models, from the associations table: raw ρ with the loss, the between-seed effect with its 95 %
interval in the clock's view (``seed_contrast``) and the scale's (``seed_contrast_l2``), whether
each beats them (exact p < α with the raw ρ's sign), and the verdict words of
``verdicts.decide_claim`` at Δ: the feature tracks the loss beyond both ("beyond clock and
scale"), the effect is shown below Δ in either view ("below Δ"), or neither ("inconclusive").
Every row is exploratory (no correction across features).

Beyond the weight variance (``np_wvar_mean``) and the gradient norm (``grad_norm``): the pooled
between-seed contrast partial on that column (``partial_contrasts``), the test the suite calibrates
as ``seed_contrast_l2`` (partial on the L2 norm, every null) and on ``alpha_latent`` (partial on a
column that is exactly what x and y share): its size holds when the conditioning column is the
quantity itself, which these two are (the question is "beyond this column"). Beyond α
(WeightWatcher's): the plain partial on α fails its calibration when α is a noisy measurement of
what it stands for (docs/calibration.md), so the column is the split-half partial instead
(``split_rows``: α over alternate layers as two measurements, each series residualised on the
half the other was not), calibrated on ``alpha_latent`` and ``alpha_noisy`` when the halves agree
(r ≥ 0.5), too liberal below: its p is given only where every model's halves agree that well.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from topotrain.analysis.inference.permutations import _permuted_traces
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    POOLED,
    RESIDUAL_TOL,
    _undefined,
    cell_deviations,
    contrast_cell,
    model_inputs,
    permutation_p,
    pooled_row,
)
from topotrain.analysis.inference.seed_effect import effect_text
from topotrain.analysis.inference.signs import holds_in_one_sign
from topotrain.analysis.inference.stats import ALPHA
from topotrain.analysis.inference.verdicts import (
    ARTEFACT,
    REPRODUCED,
    REPRODUCED_SMALL,
    decide_claim,
)

KINDS = ("topological", "weightwatcher", "llc")
# the training's own diagnostic beside them, under the same test (its partial on itself undefined)
BASELINE_ROWS = ("grad_norm",)
WORDS = {  # decide_claim's verdicts as words for one exploratory feature
    REPRODUCED: "beyond clock and scale",
    REPRODUCED_SMALL: "beyond clock and scale, below Δ",
    ARTEFACT: "below Δ in raw ρ's sign",
}
VIEWS = {"clock": "seed_contrast", "scale": "seed_contrast_l2"}
BEYOND = {"wvar": "np_wvar_mean", "grad": "grad_norm"}  # partial contrasts: name -> column
# beyond WeightWatcher's α and the LLC (each with its halves' agreement): control.diagnostics' too
MONITOR_COLUMNS = [f"{c}_alpha" for c in ("rho", "p", "beats")] + ["split_r"]
MONITOR_COLUMNS += [f"{c}_llc" for c in ("rho", "p", "beats", "split_r")]
HALVES = ("ww_alpha_half1_mean", "ww_alpha_half2_mean")  # α over alternate layers
LLC_HALVES = ("llc_half1", "llc_half2")  # the LLC of disjoint halves of its chains
SPLITS = {"alpha": HALVES, "llc": LLC_HALVES}  # split-half partials: name -> two measurements
SPLIT_OF = {"llc": "llc"}  # the feature each split measures (its own split is undefined)
SPLIT = "seed_contrast_alpha_split"  # partial on a latent measured twice: α of two layer halves
P_METHOD_SPLIT = "permutation of seed labels, the feature's residual on {} (instrumented by {})"
MIN_SPLIT_R = 0.5  # the halves' agreement below which the split-half partial is not calibrated
DIAGNOSTICS_COLUMNS = [
    "feature",
    "kind",
    "target",
    "raw_rho",
    *[f"{c}_{v}" for v in VIEWS for c in ("effect", "effect_ci_low", "effect_ci_high", "p")],
    "beats_clock",
    "beats_scale",
    *[f"{c}_{name}" for name in BEYOND for c in ("rho", "p", "beats")],
    *MONITOR_COLUMNS,
    "verdict",
]


def split_rhos(
    dx: np.ndarray, dy: np.ndarray, da1: np.ndarray, da2: np.ndarray, perms: np.ndarray
) -> np.ndarray:
    """Cross-fitted partial r of the deviations on a latent measured twice (a1, a2, independent
    errors), the feature's residual rows permuted by each row of ``perms`` (identity first). With
    X, Y, A1, A2 centred and D = ΣA1·A2: e_x = X − (ΣX·A2/D)·A1, e_y = Y − (ΣY·A1/D)·A2 (loadings
    by IV, each half instrumented by the other, so under H0, x and y sharing only the latent, e_x
    and e_y carry independent errors); r_π = Σ_i G[π(i), i] / √(Σe_x² Σe_y²), G = e_x·e_yᵀ. NaN
    when D is 0 or a residual is."""
    x, y, a1, a2 = (v - v.mean() for v in (dx, dy, da1, da2))
    d = float((a1 * a2).sum())
    ex = x - (x * a2).sum() / d * a1 if d else np.zeros_like(x)
    ey = y - (y * a1).sum() / d * a2 if d else np.zeros_like(y)
    ss_x, ss_y = float((ex * ex).sum()), float((ey * ey).sum())
    if ss_x <= RESIDUAL_TOL * (x * x).sum() or ss_y <= RESIDUAL_TOL * (y * y).sum():
        return np.full(len(perms), np.nan)
    return _permuted_traces(ex @ ey.T, perms) / np.sqrt(ss_x * ss_y)


def split_cell(
    mats: dict[str, np.ndarray], feature: str, target: str, halves: tuple[str, str], perms
) -> tuple[dict, np.ndarray]:
    """(rho, p, n, p_method, note, split_r) of one model's cross-fitted partial contrast of
    (feature, target) on the two measurements ``halves`` (``split_rhos``; two-sided, exact when
    ``perms`` are all k!) and its null; split_r: r of the halves' deviations, their agreement."""
    k, columns = mats[target].shape[0], [feature, target, *halves]
    exact = len(perms) == math.factorial(k)
    row = {"rho": np.nan, "p": np.nan, "n": 0, "p_method": P_METHOD_SPLIT.format(*halves)}
    row |= {"note": "", "split_r": np.nan}
    missing = [c for c in columns if c not in mats]
    cell = cell_deviations(mats, columns) if not missing else {target: np.zeros((k, 0))}
    row["n"] = k * cell[target].shape[1]
    why = f"no {missing[0]} column" if missing else _undefined(k, row["n"] // k, "", None, cell)
    if why or feature in halves:
        return row | {"note": why or f"feature is {feature}, a half: r undefined"}, np.full(
            1, np.nan
        )
    null = split_rhos(*(cell[c] for c in columns), perms)
    if not np.isfinite(null[0]):
        return row | {"note": "nothing varies after the split-half partial: r undefined"}, null
    row["split_r"] = float(np.corrcoef(cell[halves[0]].ravel(), cell[halves[1]].ravel())[0, 1])
    return row | {"rho": float(null[0]), "p": permutation_p(null, "two-sided", exact)}, null


def partial_contrasts(
    df: pd.DataFrame,
    features: list[str],
    target: str = "val_loss",
    beyond: dict[str, str] = BEYOND,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (feature, name of ``beyond``): the between-seed contrast of the feature with
    ``target`` partial on that column (``seed_contrast``'s PARTIAL view), pooled over the models of
    ``df`` (two-sided, +1 signs): columns feature, beyond, rho, p, note. NaN where the column is
    missing or is the feature itself."""
    conds = [c for c in beyond.values() if c in df]
    halves = [h for pair in SPLITS.values() for h in pair if h in df]
    inputs = model_inputs(df, [*features, target, *conds, *halves], seed)
    rows = []
    for feature in features:
        for name, cond in beyond.items():
            nulls = [
                contrast_cell(mats, feature, target, PARTIAL, perms, cond=cond)[1]
                for _, _, mats, perms in inputs
            ]
            res = pooled_row(nulls, PARTIAL, "two-sided", seed, cond=cond)
            rows.append({"feature": feature, "beyond": name, **res})
    for name, pair in SPLITS.items():
        if all(h in df for h in pair):
            rows += split_rows(inputs, features, target, seed, name)
    columns = ["feature", "beyond", "rho", "p", "n", "p_method", "note", "split_r"]
    return pd.DataFrame(rows).reindex(columns=columns)


def split_rows(
    inputs: list, features: list[str], target: str, seed: int = 0, name: str = "alpha"
) -> list[dict]:
    """Beyond α or the LLC (``beyond`` ``name`` of SPLITS): per feature, the split-half partial
    contrast on that pair of measurements (``split_cell``, the feature's residual rows permuted),
    pooled over models; split_r is the smallest model's agreement of the two halves. Below
    MIN_SPLIT_R the calibration suite finds the test too liberal (7–9 % at 0.25): p is then
    NaN, with a note. The suite's rows (alpha_latent, alpha_noisy: a latent measured twice with
    independent errors) are this test's whatever the pair measures: α over two halves of the
    layers, the LLC over two halves of its chains."""
    rows, pair = [], SPLITS[name]
    for feature in features:
        if SPLIT_OF.get(name) == feature:
            note = f"{feature} is what {pair[0]} and {pair[1]} measure: its own partial undefined"
            rows.append({"feature": feature, "beyond": name, "rho": np.nan, "p": np.nan} | {
                "note": note})  # fmt: skip
            continue
        cells = [split_cell(mats, feature, target, pair, perms) for _, _, mats, perms in inputs]
        rs = [c[0]["split_r"] for c in cells if np.isfinite(c[0]["split_r"])]
        split_r = float(min(rs)) if rs else np.nan
        res = pooled_row([c[1] for c in cells], SPLIT, "two-sided", seed)
        row = {"feature": feature, "beyond": name, **res, "split_r": split_r}
        if not halves_agree(split_r):
            what = "α's halves" if name == "alpha" else f"the {name}'s halves"
            row |= {"p": np.nan, "note": f"{what} agree r = {split_r:.2f} < {MIN_SPLIT_R}"}
        rows.append(row)
    return rows


def diagnostics_table(
    assoc: pd.DataFrame,
    sesoi: float,
    target: str = "val_loss",
    partials: pd.DataFrame | None = None,
    alpha: float = ALPHA,
) -> pd.DataFrame:
    """DIAGNOSTICS_COLUMNS for every feature of KINDS in ``assoc`` (ASSOCIATION_COLUMNS) and
    ``target``: raw ρ averaged over runs, the pooled contrasts' effects, p's and flags, the
    partial contrasts of ``partials`` (``partial_contrasts``; NaN without them; beats: p < alpha
    in the raw ρ's sign), the verdict at Δ = ``sesoi``; topological features first, then
    WeightWatcher's, each by |raw ρ|."""
    rows = assoc[(assoc["target"] == target) & diagnosed(assoc)]
    raw = rows[rows["view"] == "raw"].groupby("feature", sort=False)["rho"].mean()
    pooled = rows[rows["model"] == POOLED].set_index(["feature", "view"])
    out = []
    for feature, kind in rows[["feature", "kind"]].drop_duplicates().itertuples(index=False):
        row = {"feature": feature, "kind": kind, "target": target, "raw_rho": raw.get(feature)}
        for name, view in VIEWS.items():
            cell = pooled.loc[(feature, view)] if (feature, view) in pooled.index else None
            for col in ("effect", "effect_ci_low", "effect_ci_high", "p"):
                row[f"{col}_{name}"] = float(cell[col]) if cell is not None else np.nan
            row[f"beats_{name}"] = bool(cell is not None and cell[f"beats_{name}"])
        for name in (*BEYOND, *SPLITS):
            row |= _beyond(partials, feature, name, row["raw_rho"], alpha)
        for name in SPLITS:
            row[split_r_column(name)] = _split_r(partials, feature, name)
        row["verdict"] = verdict(row, sesoi)
        out.append(row)
    table = pd.DataFrame(out, columns=DIAGNOSTICS_COLUMNS)
    order = table.assign(
        _kind=table["kind"].map([*KINDS, "baseline"].index), _rho=-table["raw_rho"].abs()
    ).sort_values(["_kind", "_rho"], kind="stable")
    return table.loc[order.index].reset_index(drop=True)


def diagnosed(assoc: pd.DataFrame) -> pd.Series:
    """The rows of ``assoc`` (ASSOCIATION_COLUMNS) whose feature the diagnostics table reports:
    every feature of KINDS and the baselines of BASELINE_ROWS."""
    return assoc["kind"].isin(KINDS) | (
        assoc["kind"].eq("baseline") & assoc["feature"].isin(BASELINE_ROWS)
    )


def _beyond(partials: pd.DataFrame | None, feature: str, name: str, raw, alpha: float) -> dict:
    """rho_, p_ and beats_<name> of one feature from ``partials`` (NaN, False when absent)."""
    out = {f"rho_{name}": np.nan, f"p_{name}": np.nan, f"beats_{name}": False}
    if partials is None:
        return out
    hit = partials[(partials["feature"] == feature) & (partials["beyond"] == name)]
    if hit.empty:
        return out
    rho, p = float(hit["rho"].iloc[0]), float(hit["p"].iloc[0])
    reference = raw if raw is not None else np.nan
    return {
        f"rho_{name}": rho,
        f"p_{name}": p,
        f"beats_{name}": rejects_in_sign(p, rho, reference, alpha),
    }


def halves_agree(split_r: float) -> bool:
    """Whether α's two halves agree enough (split_r ≥ MIN_SPLIT_R) for the split-half partial's
    p to be given: below, the calibration suite finds it too liberal."""
    return bool(np.isfinite(split_r) and split_r >= MIN_SPLIT_R)


def rejects_in_sign(p: float, rho: float, reference: float, alpha: float) -> bool:
    """A contrast's "beats": p < alpha with ρ of the reference's sign (the raw ρ, or the plain
    contrast's): ``holds_in_one_sign`` of the one view in that sign; False where p or the
    reference is undefined or the reference is 0."""
    return holds_in_one_sign([p], [rho], alpha, sign=reference)


def split_r_column(name: str) -> str:
    """The diagnostics tables' column of a split's halves' agreement: ``split_r`` for α's (the
    first split), ``split_r_<name>`` for the others."""
    return "split_r" if name == "alpha" else f"split_r_{name}"


def _split_r(partials: pd.DataFrame | None, feature: str, name: str = "alpha") -> float:
    if partials is None or "split_r" not in partials:
        return np.nan
    hit = partials[(partials["feature"] == feature) & (partials["beyond"] == name)]
    return float(hit["split_r"].iloc[0]) if len(hit) else np.nan


def verdict(row: dict, sesoi: float) -> str:
    """``decide_claim`` of one feature in the sign of its raw ρ: it rejects when it beats both
    the clock and the scale; the effect is shown small when an interval's end on the raw ρ's side
    lies within Δ of 0 (|β| < Δ there); inconclusive when no contrast is defined."""
    if not np.isfinite(row["p_clock"]) or not np.isfinite(row["p_scale"]):
        return "inconclusive"
    sign = np.sign(row["raw_rho"]) or 1.0
    ends = [row[f"effect_ci_{'high' if sign > 0 else 'low'}_{v}"] for v in VIEWS]
    decided = decide_claim(
        row["beats_clock"] and row["beats_scale"], [sign * e for e in ends], sesoi
    )
    return WORDS.get(decided, "inconclusive")


def alpha_sentence(table: pd.DataFrame, feature: str = "ww_alpha_mean") -> str:
    """One sentence, with its numbers, on WeightWatcher's α as a training monitor (its GitHub issue
    #307's question): its raw ρ with the loss and whether it tracks the loss beyond the clock."""
    if feature not in set(table["feature"]):
        return "WeightWatcher's α is not in this study's tables (topology.weightwatcher is off)."
    r = table.set_index("feature").loc[feature]
    effect = effect_text(r["effect_clock"], r["effect_ci_low_clock"], r["effect_ci_high_clock"])
    beyond = "does" if r["beats_clock"] else "does not"
    between = f"its effect is {effect} (exact p {r['p_clock']:.3g})"
    if not np.isfinite(r["p_clock"]):  # no contrast: a model needs two seeds
        between = "its effect is not estimated (a between-seed contrast needs two seeds of a model)"
    elif not np.isfinite(r["effect_clock"]):  # an interval needs MIN_ARRANGEMENTS
        between = (
            f"its effect is not estimated (too few seed arrangements for an interval; exact p "
            f"{r['p_clock']:.3g})"
        )
    raw = f"raw ρ {r['raw_rho']:.2f}" if np.isfinite(r["raw_rho"]) else "an undefined raw ρ"
    return (
        f"As a training monitor, WeightWatcher's α (mean over layers) follows the {r['target']} "
        f"with {raw} over each run's checkpoints, but between seeds at the same step {between}: "
        f"it {beyond} track the loss beyond the training clock; verdict: {r['verdict']}."
    )
