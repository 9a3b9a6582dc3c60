"""One simulated study of the verdict rule (issue 56, item 5): its design, planted condition and
the report's verdicts on it; ``question_power`` runs many per design and counts the words.

One simulated study is the study's: 5 models × k seeds × n checkpoints evenly over 5,000 steps, each
model with one loss (the question's: ``val_loss`` for *moves with*, ``train_loss`` for *ranks*), the
L2 norm and the three claimed features (TP0 ``h0_total``, NP ``np_mean``, TP1 ``h1_total``), each
feature with its own persistent noise and its own draw of the coupling, in each claimed model's sign
(``CLAIM_SIGNS``, the paper's: TP0 over 5 models, NP (−, +, +, +) and TP1 over 4). The deviations
are ``persistent``'s process (OU parts in continuous time plus white noise; the loss U, the norm c·U
+ its own part, a feature β·U + its own part) with the noise fitted on the question's loss
(``question_power.question_noise``: ``power_design.fit_noise`` on that loss, white shares
unrounded), or, with no feature table, the documented fit (``question_power.STUDY_NOISE``).

Each study then goes through the report's code: per claim ``primary.view_columns`` (the
question's view beyond the clock and beyond the norm, ``claim_views`` with its 3 claims × 2
conditions family-wise bounds and each model's reversal test at Δ; ``bounds_only``: the intervals
a verdict does not read are skipped) over matrices that carry each checkpoint's step, H and the
co-movement's first step (``STEPS``, ``HORIZON``, ``START``: H after the warm-up), then
``primary.answer_question`` (BH over the three claims, the sign and reversal rules,
``question_verdict``), the function ``primary_family`` calls. tests/test_question_power.py holds
the verdicts equal to ``primary_family``'s on a feature table of the same numbers.

Planted conditions (``CONDITIONS``), in all three claims at once: ``exact_null`` (no coupling;
per-seed offsets and linear drifts in feature, loss and norm, as ``persistent``'s nulls have),
``at_delta`` (the stated model, level coupling, planted per claim with ``persistent.planted`` so
that the question's binding view, partial on the norm, estimates its Δ exactly: β_co = Δ_co at
the design's own H for *moves with*, level β = Δ for *ranks*) and ``norm_only`` (the feature
follows the norm as measured, gain ``persistent.NORM_GAIN``, plus its own noise and per-seed
nuisance: "explained by the norm" is the right answer for the co-movement).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.calibration.simulator import NOISE, Noise, _trends
from topotrain.analysis.calibration.view_power import claim_setting
from topotrain.analysis.inference.primary import (
    CLAIMS,
    PRIMARY_COLUMNS,
    QUESTIONS,
    SESOI,
    SESOI_CO,
    answer_question,
    view_columns,
)
from topotrain.analysis.inference.seed_contrast import (
    HORIZON,
    HORIZON_STEPS,
    SCALE,
    START,
    STEPS,
    default_start,
    seed_permutations,
)
from topotrain.config import DEFAULTS

MODELS = ("tiny-3k", "small-7k", "med-21k", "large-46k", "xl-97k")  # config.yaml's, by size
# claim → {model: the paper's sign of ρ(feature, loss)} where its p < α (primary.claimed_signs of
# workflow/data/paper_values.csv; tests/test_question_power.py checks them)
CLAIM_SIGNS = {
    "h0_total": dict.fromkeys(MODELS, -1.0),
    "np_mean": {"tiny-3k": -1.0, "med-21k": 1.0, "large-46k": 1.0, "xl-97k": 1.0},
    "h1_total": dict.fromkeys(MODELS[:4], -1.0),
}
CONDITIONS = ("exact_null", "at_delta", "norm_only")  # not "null": CSV readers take it for NA
BINDING = {"moves_with": "seed_comove_l2", "ranks": "seed_contrast_l2"}  # where Δ is planted
DELTAS = {"moves_with": SESOI_CO, "ranks": SESOI}
WARMUP = float(DEFAULTS["train"]["warmup_steps"])
START_STEP = default_start(WARMUP, HORIZON_STEPS)  # analysis.comove_from null: H after warm-up


def settings(noise: Noise, seeds: int, checkpoints: int) -> list[pe.Setting]:
    """Per claim, the persistent Setting of its feature on ``noise`` (``view_power.claim_setting``:
    φ rescaled to 100 steps) at the design: 5 models × seeds × checkpoints over 5,000 steps."""
    return [
        dataclasses.replace(
            claim_setting(noise, i, len(MODELS)), seeds=seeds, checkpoints=checkpoints
        )
        for i in range(len(CLAIMS))
    ]


def strengths(
    question: str, condition: str, claims: list[pe.Setting], delta: float | None = None
) -> list[float]:
    """Per claim, the planted level coupling β: 0 except ``at_delta``, where the question's
    binding view (partial on the norm) estimates its Δ (``delta``, default DELTAS') at the
    design's H (``persistent.planted``, ``persistent.implied``)."""
    if condition != "at_delta":
        return [0.0] * len(claims)
    delta = DELTAS[question] if delta is None else delta
    return [pe.planted("level", delta, BINDING[question], s) for s in claims]


def simulate_family(
    condition: str, claims: list[pe.Setting], betas: list[float], rng, n_sim: int
) -> dict[str, np.ndarray]:
    """``n_sim`` studies: 'y' (the loss), 'l' (the norm), one array per claim under CLAIMS'
    names (the feature), each (n_sim, models, seeds, checkpoints), trend + NOISE × deviation, and
    't' (the steps). One loss U and norm per model and seed for all claims; per claim its own OU
    part (its φ and white share), its β and its models' signs (CLAIM_SIGNS)."""
    s = claims[0]
    shape = (n_sim, s.models, s.seeds, s.checkpoints)
    t, c = s.t(), s.norm_loss
    u = pe._ou(rng, s.phi("y"), shape)
    y = math.sqrt(1 - s.w("y")) * u + math.sqrt(s.w("y")) * rng.standard_normal(shape)
    own = pe._ou(rng, s.phi("l"), shape)
    norm = math.sqrt(1 - s.w("l")) * (c * u + math.sqrt(1 - c * c) * own)
    norm = norm + math.sqrt(s.w("l")) * rng.standard_normal(shape)
    nuisance = condition != "at_delta"  # the nulls' independent per-seed offsets and drifts
    if nuisance:
        y, norm = (v + pe._per_seed(rng, shape, t) for v in (y, norm))
    fx, fy, fl = _trends(t)
    out = {"y": fy + NOISE * y, "l": fl + NOISE * norm, "t": t}
    for (feature, signs), cs, b in zip(CLAIM_SIGNS.items(), claims, betas, strict=True):
        wx = cs.w("x")
        x = math.sqrt(1 - wx) * (b * u + math.sqrt(1 - b * b) * pe._ou(rng, cs.phi("x"), shape))
        x = x + math.sqrt(wx) * rng.standard_normal(shape)
        if condition == "norm_only":
            x = pe.NORM_GAIN * norm + math.sqrt(1 - pe.NORM_GAIN**2) * x
        if nuisance:
            x = x + pe._per_seed(rng, shape, t)
        sign = np.array([signs.get(m, 1.0) for m in MODELS])[:, None, None]
        out[feature] = fx + NOISE * sign * x
    return out


def study_mats(sim: dict[str, np.ndarray], i: int, loss: str) -> list[dict[str, np.ndarray]]:
    """Study i's matrices per model as ``seed_contrast.model_matrices`` gives them: each
    feature, the loss under ``loss``, the norm, the steps, H and the co-movement's first step."""
    at = {STEPS: sim["t"], HORIZON: np.asarray(HORIZON_STEPS, float)}
    at[START] = np.asarray(START_STEP, float)
    return [
        {f: sim[f][i, m] for f in CLAIM_SIGNS} | {loss: sim["y"][i, m], SCALE: sim["l"][i, m]} | at
        for m in range(len(MODELS))
    ]


def family_verdicts(
    mats: list[dict[str, np.ndarray]], question: str, delta: float, bounds_only: bool = True
) -> pd.DataFrame:
    """The primary family of one study for ``question`` (PRIMARY_COLUMNS, one row per claim):
    ``primary.view_columns`` of its view per claim over its claimed models in their signs, then
    ``primary.answer_question`` at Δ = ``delta`` (its verdict_<question> columns)."""
    view = QUESTIONS[question]
    perms = seed_permutations(mats[0][SCALE].shape[0])
    rows = []
    for feature, signs in CLAIM_SIGNS.items():
        idx = [MODELS.index(m) for m in signs]
        claimed = list(signs.values())
        cols = view_columns(
            [mats[i] for i in idx], [perms] * len(idx), claimed, feature, view, delta, 0,
            bounds_only,
        )  # fmt: skip
        head = {"feature": feature, "table": CLAIMS[feature], "models": ";".join(signs)}
        rows.append(head | {"signs": ";".join(f"{s:+.0f}" for s in claimed)} | cols)
    out = pd.DataFrame(rows).reindex(columns=PRIMARY_COLUMNS)
    answer_question(out, question, delta)
    return out
