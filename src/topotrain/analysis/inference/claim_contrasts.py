"""How one claim fares between seeds in each view: its pooled contrast and p in the claimed signs,
its effect with the intervals and bounds a verdict reads, each model's effect sign and reversal
tests, and how much persistence the view leaves (``claim_views``, ``view_columns``). The primary
family (``primary``), the calibration suite and the confirmation on fresh seeds ask it of every
claim; ``family_tests`` is the size of the family its question's bounds are corrected over.
"""

from __future__ import annotations

import math

import numpy as np

from topotrain.analysis.inference.questions import CONDITIONS, MARGINS, TARGET, VIEWS
from topotrain.analysis.inference.seed_contrast import (
    PARTIAL,
    Matrices,
    contrast_cell,
    lag1,
    pooled_row,
    view_cell,
)
from topotrain.analysis.inference.seed_effect import effect_cell, effect_interval
from topotrain.analysis.inference.signs import effect_signs, reversal_ps, ruled_out, signs_held
from topotrain.analysis.inference.stats import ALPHA
from topotrain.topology import registry

EFFECT = ["effect", "effect_ci_low", "effect_ci_high"]


def family_tests(view: str) -> int:
    """The number of one-sided upper bounds a question's verdict reads: every claim × each
    condition of its view (Bonferroni over them: each bound at 1 − α/family_tests); 6."""
    return len(registry.claims()) * len(VIEWS[view][1])


def view_nulls(
    mats: list[Matrices],
    perms: list[np.ndarray],
    feature: str,
    target: str,
    cond: str | None,
    view: str | None = None,
) -> list[np.ndarray]:
    """Per model, the null of its contrast ρ (observed first; ``contrast_cell``) in ``view``
    (default: partial on ``cond``, or the clock's plain seed contrast when it is None)."""
    view = view or (PARTIAL if cond else "seed_contrast")
    return [
        contrast_cell(m, feature, target, view, p, cond)[1]
        for m, p in zip(mats, perms, strict=True)
    ]


def _sign_text(values) -> str:
    return ";".join({1.0: "+1", -1.0: "-1"}.get(float(v), "0") for v in values)


def claim_views(
    mats: list[Matrices],
    perms: list[np.ndarray],
    signs: list[float],
    feature: str,
    target: str = TARGET,
    seed: int = 0,
    views: dict | None = None,
    alternative: str = "greater",
    family_tests: int | None = None,
    nulls_out: dict | None = None,
    margins: dict[str, float] | None = None,
    bounds_only: bool = False,
) -> dict:
    """Per view (``views``: name → the column its contrast is partial on, None for the plain
    one, or → (contrast view, that column) for another view such as ``seed_comove``; default
    CONDITIONS, the clock and the scale): the pooled contrast, ``alternative`` in
    the claimed signs (rho_, p_), its effect [equal-tailed 95 % interval] (effect_,
    effect_*_ci_low/high) and each model's effect sign (effect_signs_; ``effect_signs``), over
    models given as raw matrices (``model_matrices``) with their seed permutations; signs_held
    ("k/K": models whose effect has the claimed sign in every view), and the first view's
    number of arrangements and note. With ``family_tests`` (a "greater" claim) also per view
    effect_*_bound, the one-sided 1 − α lower bound (the equal-tailed 1 − 2α interval's lower
    end), and effect_*_fw_high, the upper bound at 1 − α/family_tests (Bonferroni; the
    equal-tailed 2α/family_tests interval's upper end). ``nulls_out``: filled with each view's
    per-model nulls (``joint_p``). ``margins`` (label → m): ruled_out<label>, "k/K" models whose
    reversal by m is ruled out in every view (``signs.ruled_out``). ``bounds_only`` (with
    ``family_tests``): of the intervals only the family-wise upper bounds a verdict reads, the
    effect, its 1 − α interval and its 1 − α bound NaN (``calibration.question_power``: a third
    of the work). The report's claims, the calibration suite and the confirmation on fresh seeds
    all call this."""
    if family_tests is not None and alternative != "greater":
        raise ValueError("one-sided bounds are drawn for a 'greater' claim only")
    if bounds_only and family_tests is None:
        raise ValueError("bounds_only needs family_tests: the family-wise bounds are the bounds")
    out, by_view, reversal = {}, [], {label: [] for label in margins or {}}
    for i, (name, spec) in enumerate((views or CONDITIONS).items()):
        view, cond = spec if isinstance(spec, tuple) else (PARTIAL if spec else None, spec)
        view = view or "seed_contrast"
        nulls = view_nulls(mats, perms, feature, target, cond, view)
        if nulls_out is not None:
            nulls_out[name] = nulls
        res = pooled_row(nulls, view, alternative, seed, signs, cond)
        by_view.append(effect_signs(nulls))
        cells = [
            effect_cell(m, feature, target, view, p, cond, s)
            for m, p, s in zip(mats, perms, signs, strict=True)
        ]
        skip = dict.fromkeys(EFFECT, np.nan) | {"effect_note": ""}
        eff = skip if bounds_only else effect_interval(cells, ALPHA, seed)
        for label, margin in (margins or {}).items():
            reversal[label].append(reversal_ps(cells, margin, seed))
        out |= {f"rho_{name}": res["rho"], f"p_{name}": res["p"]}
        out |= {f"effect_{name}{c.removeprefix('effect')}": eff[c] for c in EFFECT}
        out[f"effect_signs_{name}"] = _sign_text(by_view[-1])
        if family_tests is not None:
            low = skip if bounds_only else effect_interval(cells, 2 * ALPHA, seed)
            out[f"effect_{name}_bound"] = low["effect_ci_low"]
            fw = effect_interval(cells, 2 * ALPHA / family_tests, seed)
            out[f"effect_{name}_fw_high"] = fw["effect_ci_high"]
        if i == 0:
            out["arrangements"] = math.prod(len(n) for n in nulls)
            out["note"] = "; ".join(filter(None, [res["note"], eff["effect_note"]]))
    held = signs_held(signs, by_view)
    for label, ps in reversal.items():
        out[f"ruled_out{label}"] = f"{int(ruled_out(ps).sum())}/{len(held)}"
    return out | {"signs_held": f"{int(held.sum())}/{len(held)}"}


def view_columns(
    mats: list[Matrices],
    perms: list[np.ndarray],
    claimed: list[float],
    feature: str,
    view: str,
    delta: float,
    seed: int = 0,
    bounds_only: bool = False,
) -> dict:
    """One design view's columns of a claim's row (``claim_test``'s, per view of VIEWS): its
    conditions' claim_views on its own loss, with the question's family-wise bounds
    (``family_tests``) and each model's reversal test at MARGINS × ``delta`` (its Δ); then
    held_<view>, ruled_<view><margin>, p_<view> (the larger of its conditions' p:
    intersection–union) and lag1_<view>; ``arrangements`` and ``note`` as claim_views gives
    them. Models as raw matrices (``model_matrices``) with their seed permutations, in the
    claimed signs. ``bounds_only``: claim_views' (the verdicts' columns only)."""
    target, conds = VIEWS[view]
    margins = {sfx: k * delta for sfx, k in MARGINS.items()}
    res = claim_views(
        mats, perms, claimed, feature, target, seed, conds, "greater", family_tests(view),
        None, margins, bounds_only,
    )  # fmt: skip
    out = {k: v for k, v in res.items() if k != "signs_held" and not k.startswith("ruled_out")}
    out[f"held_{view}"] = res["signs_held"]
    out |= {f"ruled_{view}{sfx}": res[f"ruled_out{sfx}"] for sfx in MARGINS}
    out[f"p_{view}"] = max(res[f"p_{c}"] for c in conds)
    out[f"lag1_{view}"] = persistence(mats, feature, target, next(iter(conds.values()))[0])
    return out


def persistence(mats: list[Matrices], feature: str, target: str, view: str) -> float:
    """Mean over models of the lag-1 autocorrelation of the feature's deviations as ``view``
    transforms them (``seed_contrast.lag1``): how much persistence the view leaves, near 1 for
    levels that keep their offsets, near 0 (or below) for co-movement."""
    values = []
    for m in mats:
        _, cell = view_cell(m, feature, target, view)
        if cell is not None and cell[feature].shape[1] > 1:
            values.append(lag1(cell[feature]))
    return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
