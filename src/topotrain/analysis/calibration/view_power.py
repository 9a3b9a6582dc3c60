"""Power of every seed view, per claim, at 3 / 5 / 8 seeds × 51 / 101 / 201 checkpoints.

The persistent process of ``persistent`` (OU parts in continuous time plus white noise, so a denser
series has a higher φ and the same white variance), with each claim's own noise: φ of the loss, the
claim's feature and the norm's own part at the study's spacing, their white shares and the norm's
correlation with the loss — fitted to the study's seed deviations (``power_design.fit_noise``) or,
without a study, the calibration's (``persistent.PHI``, w = 0.1, c = NORM_LOSS). Per claim, three
couplings planted at the study's spacing (``persistent.planted``): the stated model (level β = Δ in
the partial level view, the binding one), innovation-only (β_co = Δ_co in the partial co-movement
view) and offset-only (level β = Δ, a per-seed constant: no co-movement). A denser series keeps the
strength, so its β_co moves (``persistent.implied``). Each row: the rate of p ≤ α over ``draws``
studies of the claim's models, per view, per pair (the larger of its plain and partial p) and
"joint", the primary claim's exact joint min-p over the two pairs (``primary.joint_p``, the
report's); "reproduced", the joint test and the sign rule (every model's effect estimate of the
claimed sign and its reversal by the pair's Δ ruled out by its own test, in both conditions of
the pair of smaller p, ``primary.signs_held`` and ``signs.ruled_out``). One claim at α: BH over
the three claims is not simulated here (``power`` simulates BH for the level pair)."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.analysis.calibration import persistent as pe
from topotrain.analysis.calibration.pass_rule import clopper_pearson
from topotrain.analysis.calibration.simulator import Noise
from topotrain.analysis.inference.primary import CLAIMS, SESOI, SESOI_CO
from topotrain.analysis.inference.stats import ALPHA

SEEDS, CHECKPOINTS = (3, 5, 8), (51, 101, 201)
DRAWS = 200  # studies per row: power's Monte Carlo half-width ≤ 0.07
VERSION = 3  # part of the cache key: bump when the computation changes
JOINT = "joint"  # the primary claim's exact joint min-p over the two pairs (primary.joint_p)
SIGNS = "reproduced"  # the joint test, every model's effect sign and its reversal by Δ ruled out
PAIR_NAMES = {"level": "level pair", "comove": "co-movement pair", pe.JOINT: "joint"}
COLUMNS = [
    "feature",
    "models",
    "seeds",
    "checkpoints",
    "view",
    "coupling",
    "planted",
    "sesoi",
    "beta",
    "n_sim",
    "power_at_sesoi",
    "power_mc_low",
    "power_mc_high",
    "this_design",
    "note",
]


def claim_setting(noise: Noise | None, claim: int, models: int) -> pe.Setting:
    """The persistent Setting of a claim: its models and ``noise`` (None: the calibration's), its
    φ's (per checkpoint at ``noise.spacing`` steps) rescaled to REF_SPACING, φ^(REF_SPACING /
    spacing), then clipped to [0.05, 0.995], and white shares to [0, 0.95] (the OU needs
    0 < φ < 1)."""
    if noise is None:
        return pe.Setting(models=models)
    feat = noise.features[claim] if noise.features else 0.0
    white = noise.features_white[claim] if noise.features_white else 0.0
    ratio = pe.REF_SPACING / noise.spacing
    phis = (noise.loss, feat, noise.scale)
    phis = tuple(float(np.clip(max(v, 0.0) ** ratio, 0.05, 0.995)) for v in phis)
    whites = (noise.loss_white, white, noise.scale_white)
    whites = tuple(float(np.clip(v, 0.0, 0.95)) for v in whites)
    c = float(np.clip(noise.scale_loss, -0.99, 0.99))
    return pe.Setting(models=models, phis=phis, whites=whites, norm_loss=c)


def cells(s: pe.Setting, sesoi: float, sesoi_co: float) -> list[tuple[str, str, float, float]]:
    """(planted, coupling, strength, the Δ it is planted at) of a claim's rows at the study's
    spacing (s's 51 checkpoints over 5,000 steps)."""
    level, co = pe.VIEWS[1], pe.VIEWS[3]  # the partial views: each pair's binding one
    return [
        ("level β = Δ (stated model)", "level", pe.planted("level", sesoi, level, s), sesoi),
        ("β_co = Δ_co (innovation only)", "innovation", pe.planted("innovation", sesoi_co, co, s),
         sesoi_co),
        ("level β = Δ (offset only)", "offset", pe.planted("offset", sesoi, level, s), sesoi),
    ]  # fmt: skip


def _rows(found: list[dict], signs: float, head: dict) -> list[dict]:
    """``persistent.rate_rows``' rows → COLUMNS (pairs by PAIR_NAMES, the joint p as JOINT),
    then the sign rule's (the joint test and every model's sign in the pair of smaller p)."""
    out = []
    for r in found:
        view = PAIR_NAMES.get(r["view"], r["view"])
        row = head | {"view": view, "beta": r["beta"], "n_sim": r["draws"]}
        out.append(row | {"power_at_sesoi": r["rate"], "power_mc_low": r["mc_low"]})
        out[-1]["power_mc_high"] = r["mc_high"]
    n = found[0]["draws"]
    low, high = clopper_pearson(round(signs * n), n)
    out.append(head | {"view": SIGNS, "beta": np.nan, "n_sim": n, "power_at_sesoi": signs})
    out[-1] |= {"power_mc_low": low, "power_mc_high": high}
    return out


def claim_rows(
    feature: str, s: pe.Setting, k: int, n: int, cell: tuple, draws: int, threads: int
) -> list[dict]:
    """One claim's rows at k seeds × n checkpoints under one coupling cell."""
    label, kind, b, delta = cell
    at = dataclasses.replace(s, seeds=k, checkpoints=n)
    scenario = f"{kind}_b{b:.6g}"
    sim = pe.simulate(scenario, at, pe.row_rng(pe.row_name(scenario, at)), draws)
    out = pe.view_pvalues(sim, threads, signs=True)
    p, held = out[:, :5], out[:, 5:]  # each view's p and the joint p; each view's all-signs flag
    betas = pe.implied(kind, b, at)
    head = {"scenario": scenario, "coupling": kind, "strength": b, "seeds": k}
    found = pe.rate_rows(p, head | {"checkpoints": n, "white": at.white}, False, betas)
    pairs = np.maximum(p[:, [0, 2]], p[:, [1, 3]])  # level, co-movement: the larger of two
    joint = p[:, 4] <= ALPHA
    best = np.argmin(pairs, axis=1)  # the pair of smaller p (the level pair on a tie)
    signs = np.minimum(held[:, [0, 2]], held[:, [1, 3]])[np.arange(len(best)), best] == 1
    head = {"feature": feature, "models": s.models, "seeds": k, "checkpoints": n}
    head |= {"coupling": kind, "planted": label, "sesoi": delta}
    return _rows(found, float((joint & signs).mean()), head)


def view_power(
    noise: Noise | None,
    models: tuple[int, ...],
    features: tuple[str, ...] = tuple(CLAIMS),
    design: tuple[int, int] | None = None,
    sesoi: float = SESOI,
    sesoi_co: float = SESOI_CO,
    draws: int = DRAWS,
    threads: int = 1,
    seeds=SEEDS,
    checkpoints=CHECKPOINTS,
) -> pd.DataFrame:
    """COLUMNS: every claim × coupling × seeds × checkpoints × view; ``design`` (seeds,
    checkpoints) of the study, marked ``this_design``; the note names the noise."""
    rows = []
    for i, (feature, m) in enumerate(zip(features, models, strict=True)):
        s = claim_setting(noise, i, m)
        for cell, k, n in itertools.product(cells(s, sesoi, sesoi_co), seeds, checkpoints):
            rows += claim_rows(feature, s, k, n, cell, draws, threads)
    out = pd.DataFrame(rows).reindex(columns=COLUMNS)
    shape = zip(out["seeds"], out["checkpoints"], strict=True)
    out["this_design"] = [(k, n) == design for k, n in shape]
    out["note"] = noise_note(noise, features)
    return out


def noise_note(noise: Noise | None, features: tuple[str, ...]) -> str:
    """'persistent process; noise fitted to the study: φ loss …, …' or the calibration's."""
    if noise is None:
        phis = "/".join(f"{pe.PHI[v]:g}" for v in "yxl")
        return (
            f"persistent process, the calibration's noise: φ y/x/l {phis}, w 0.1, c {pe.NORM_LOSS}"
        )
    feats = ", ".join(
        f"{f} {p:g} (w {w:g})"
        for f, p, w in zip(features, noise.features, noise.features_white, strict=False)
    )
    return (
        f"persistent process, noise fitted to the study's seed deviations: φ loss "
        f"{noise.loss:g} (w {noise.loss_white:g}), {feats}, norm's own part {noise.scale:g} "
        f"(w {noise.scale_white:g}); norm–loss c {noise.scale_loss:g}; φ per checkpoint "
        f"{noise.spacing:g} steps apart"
    )


def cached_view_power(cache: str | Path | None, **kwargs) -> pd.DataFrame:
    """``view_power(**kwargs)``, read from the JSON file ``cache`` (key: every input and VERSION)
    when it holds them, else computed and stored there (atomically)."""
    from topotrain.io import atomic_write_text

    noise = kwargs.get("noise")
    doc = {k: v for k, v in kwargs.items() if k not in ("noise", "threads")}
    doc |= {"version": VERSION, "noise": None if noise is None else noise.__dict__}
    key = "views " + json.dumps(doc, sort_keys=True, default=list)
    store = json.loads(Path(cache).read_text()) if cache and Path(cache).exists() else {}
    if key in store:
        return pd.DataFrame(store[key], columns=COLUMNS)
    table = view_power(**kwargs)
    if cache:
        store[key] = table.to_dict(orient="records")  # floats exactly (repr), NaN as NaN
        atomic_write_text(cache, json.dumps(store, indent=1) + "\n")
    return table
