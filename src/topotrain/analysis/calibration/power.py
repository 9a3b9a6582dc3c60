"""Power of the primary family's claims for the design that was run, at Δ only.

Simulator: ``simulator.simulate_family`` on a ``simulator.Design`` (the calibration suite's
trends and AR noise on shared runs, ``simulator.Noise``).

Effect: the clock view's β (``seed_effect``) is r; the scale view's, partial on the norm, is
r·√(1 − c²)/√(1 − r²c²) ≤ r. The level view's p is the larger of the two views' p, so the scale
binds, and the feature is planted at r = β/√(1 − c² + β²c²) (``simulator.planted_share``): β is
the scale view's effect (= r when c = 0). That link is the simulator's model, not the data's.

Test: a claim's p in the level view (``primary.VIEWS["level"]``: the pooled seed contrast of the
clock and of the scale, one-sided in the claimed signs, through ``contrast_cell`` and
``pooled_row``; p = the larger of the two), all signs +1 here (the test is symmetric under x → −x
with its sign). The report's claim p is the joint min-p over ``analysis.primary_views`` (level and
comove by default) and asks every model's sign to hold: the co-movement view (val_loss) and the
sign rule are not simulated here, so this is the level view's power. Power of claim c
at β: the rate over n_sim studies at which Benjamini–Hochberg over the family rejects c when c
carries β and the other claims carry none (β = 0 on the same runs: their p's share the loss).
Every β reuses the same studies (common random numbers), so power rises smoothly with β.

MDE: the smallest β with power 0.8, searched on the grid β = j·Δ/GRID and interpolated linearly
between the grid points around the crossing; its Monte Carlo interval is where the curve crosses
0.8 ∓ the 95 % binomial half-width 1.96·√(0.8·0.2/n_sim). Power at Δ has its Clopper–Pearson
interval. No power is computed at an observed effect.

Cache: results keyed by the design (models, seeds, checkpoints, noise), Δ, n_sim, seed and α in
one JSON file (``results/cache/power.json`` in the workflow). The rule reruns whenever the feature
table changes, but simulates only when the design does.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from topotrain.analysis.calibration.pass_rule import Z95, clopper_pearson
from topotrain.analysis.calibration.simulator import (
    Design,
    Noise,
    claim_feature,
    simulate_family,
)
from topotrain.analysis.inference.parallel import map_tasks
from topotrain.analysis.inference.primary import CLAIMS, VIEWS
from topotrain.analysis.inference.seed_contrast import (
    SCALE,
    contrast_cell,
    pooled_row,
    seed_permutations,
)
from topotrain.analysis.inference.stats import ALPHA, benjamini_hochberg
from topotrain.config import DEFAULTS

SESOI = DEFAULTS["analysis"]["sesoi"]
SIMULATIONS = DEFAULTS["analysis"]["calibration"]["simulations"]
TARGET_POWER = 0.8
GRID = 4  # the MDE search grid: β = j·Δ/GRID for j = 0, 1, … while β ≤ 1
NOTE = "simulator's model: β planted in the level view's scale; the level pair only"
VERSION = 2  # part of the cache key: bump when the computation changes
LEVEL = VIEWS["level"][1]  # the level view's conditions: clock and scale → (contrast, partial on)
_permutations = functools.lru_cache(maxsize=4)(seed_permutations)  # 0.15 s each at 8 seeds
POWER_COLUMNS = [
    "feature",
    "models",
    "seeds",
    "checkpoints",
    "sesoi",
    "n_sim",
    "power_at_sesoi",
    "power_mc_low",
    "power_mc_high",
    "mde_80",
    "mde_mc_low",
    "mde_mc_high",
    "note",
]


def claim_p(x: np.ndarray, y: np.ndarray, scale: np.ndarray, perms: np.ndarray, seed=0) -> float:
    """A claim's p in the level view (``LEVEL``): each condition's (clock, scale) pooled seed
    contrast one-sided in the claimed signs (+1) over models given as (models, seeds,
    checkpoints) arrays, and the larger of the two (NaN when either is)."""
    mats = [{"x": a, "y": b, SCALE: c} for a, b, c in zip(x, y, scale, strict=True)]
    p = []
    for view, cond in LEVEL.values():
        nulls = [contrast_cell(m, "x", "y", view, perms, cond)[1] for m in mats]
        p.append(pooled_row(nulls, view, "greater", seed, [1.0] * len(mats), cond)["p"])
    return float(np.max(p))


def _claim_ps(task: tuple) -> list[float]:
    """``claim_p`` of each study of a chunk (x, y, scale: study, model, seed, checkpoint)."""
    x, y, scale, perms, seed = task
    return [claim_p(x[i], y[i], scale[i], perms, seed) for i in range(len(x))]


def claim_pvalues(
    sim: dict, design: Design, claim: int, beta: float, seed: int = 0, threads: int = 1
) -> np.ndarray:
    """(n_sim,) p of claim ``claim`` (an index into ``design.models``) on every simulated study
    when its feature has effect β in the scale view (``claim_feature``); the studies in chunks
    over ``threads`` processes (each study's p is the same whatever the chunking)."""
    n = design.models[claim]
    x = claim_feature(sim, design, claim, beta)
    y, scale = sim["y"][:, :n], sim["l"][:, :n]
    perms = _permutations(design.seeds, seed)
    bounds = np.linspace(0, len(x), min(len(x), 4 * max(threads, 1)) + 1).astype(int)
    spans = zip(bounds[:-1], bounds[1:], strict=True)
    tasks = [(x[a:b], y[a:b], scale[a:b], perms, seed) for a, b in spans]
    return np.array([p for chunk in map_tasks(_claim_ps, tasks, threads) for p in chunk])


def family_rejects(
    p_claim: np.ndarray, p_null: np.ndarray, claim: int, alpha: float = ALPHA
) -> np.ndarray:
    """(n_sim,) whether BH over the family rejects ``claim`` when its p's are ``p_claim`` and
    every other claim has its null p's (row of ``p_null``, claims × n_sim)."""
    family = p_null.copy()
    family[claim] = p_claim
    return np.array([benjamini_hochberg(f)[claim] < alpha for f in family.T])


class PowerCurve:
    """Power of one claim on the grid β_j = j·Δ/GRID, each β simulated once, when asked."""

    def __init__(self, sim, design: Design, claim: int, p_null, sesoi, seed, alpha, threads=1):
        self.sim, self.design, self.claim, self.p_null = sim, design, claim, p_null
        self.seed, self.alpha, self.threads = seed, alpha, threads
        self.step = sesoi / GRID
        self.top = int(math.floor(1 / self.step + 1e-9))  # the largest j with β ≤ 1
        self.hits: dict[int, np.ndarray] = {}

    def rejects(self, j: int) -> np.ndarray:
        """(n_sim,) BH rejections of the claim at β_j (β_0 = 0: the null p's themselves)."""
        if j not in self.hits:
            beta = min(1.0, j * self.step)
            p = self.p_null[self.claim] if j == 0 else None
            if p is None:
                p = claim_pvalues(self.sim, self.design, self.claim, beta, self.seed, self.threads)
            self.hits[j] = family_rejects(p, self.p_null, self.claim, self.alpha)
        return self.hits[j]

    def power(self, j: int) -> float:
        return float(self.rejects(j).mean())

    def crossing(self, level: float, start: int = GRID) -> float:
        """The β at which the power first reaches ``level`` (taken as rising in β), linear
        between the grid points around it; 0 when β = 0 reaches it, NaN when β ≤ 1 does not.
        The search doubles or halves j from ``start``, then bisects."""
        lo, hi = self._bracket(level, start)
        if hi is None:
            return math.nan
        if lo is None:
            return 0.0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.power(mid) >= level else (mid, hi)
        p_lo, p_hi = self.power(lo), self.power(hi)
        return (lo + (level - p_lo) / (p_hi - p_lo)) * self.step

    def _bracket(self, level: float, start: int) -> tuple[int | None, int | None]:
        """(lo, hi): grid indices with power(lo) < level ≤ power(hi); lo None when power(0)
        reaches the level, hi None when power(top) does not."""
        j = min(start, self.top)
        if self.power(j) >= level:
            while j > 0:
                if self.power(j // 2) < level:
                    return j // 2, j
                j //= 2
            return None, 0
        while j < self.top:
            nxt = min(max(2 * j, 1), self.top)
            if self.power(nxt) >= level:
                return j, nxt
            j = nxt
        return j, None


def power_rows(
    design: Design,
    sesoi: float = SESOI,
    n_sim: int = SIMULATIONS,
    seed=0,
    alpha=ALPHA,
    threads: int = 1,
) -> list[dict]:
    """Per claim (design.models order): power at Δ = sesoi [Clopper–Pearson 95 %], the MDE at
    TARGET_POWER and its Monte Carlo interval, on n_sim simulated studies (over ``threads``
    processes: the same rows)."""
    if not 0 < sesoi <= 1:
        raise ValueError(f"sesoi: Δ must lie in (0, 1], not {sesoi}")
    if n_sim < 1:
        raise ValueError(f"n_sim: at least 1 simulated study, not {n_sim}")
    sim = simulate_family(design, n_sim, seed)
    p_null = np.stack(
        [claim_pvalues(sim, design, c, 0.0, seed, threads) for c in range(len(design.models))]
    )
    half = Z95 * math.sqrt(TARGET_POWER * (1 - TARGET_POWER) / n_sim)
    rows = []
    for claim in range(len(design.models)):
        curve = PowerCurve(sim, design, claim, p_null, sesoi, seed, alpha, threads)
        hits = int(curve.rejects(GRID).sum())
        low, high = clopper_pearson(hits, n_sim)
        rows.append(
            {
                "power_at_sesoi": hits / n_sim,
                "power_mc_low": low,
                "power_mc_high": high,
                "mde_80": curve.crossing(TARGET_POWER),
                "mde_mc_low": curve.crossing(TARGET_POWER - half),
                "mde_mc_high": curve.crossing(TARGET_POWER + half),
            }
        )
    return rows


def cache_key(design: Design, sesoi: float, n_sim: int, seed: int, alpha: float) -> str:
    """The cache's key: every input of ``power_rows`` and the code's VERSION, as sorted JSON."""
    doc = {"version": VERSION, "grid": GRID, "target": TARGET_POWER, "sesoi": sesoi}
    doc |= {"n_sim": n_sim, "seed": seed, "alpha": alpha, **dataclasses.asdict(design)}
    return json.dumps(doc, sort_keys=True)


def cached_power(
    design: Design,
    sesoi: float = SESOI,
    n_sim: int = SIMULATIONS,
    seed: int = 0,
    alpha: float = ALPHA,
    cache: str | Path | None = None,
    threads: int = 1,
) -> list[dict]:
    """``power_rows``, read from the JSON file ``cache`` when it holds this key, else computed
    (over ``threads`` processes) and added to it (atomically); no cache: always computed."""
    from topotrain.io import atomic_write_text

    key = cache_key(design, sesoi, n_sim, seed, alpha)
    store = json.loads(Path(cache).read_text()) if cache and Path(cache).exists() else {}
    if key in store:
        return store[key]
    rows = power_rows(design, sesoi, n_sim, seed, alpha, threads)
    if cache:
        store[key] = rows
        atomic_write_text(cache, json.dumps(store, indent=1) + "\n")
    return rows


def noise_text(noise: Noise, fitted: bool) -> str:
    """'noise AR φ: loss 0, features 0/0/0, L2's own part 0.8; L2–loss correlation 0 (the
    calibration's)', with '; white shares: loss …, features …, L2 …' where one is not 0."""
    features = "/".join(f"{f:g}" for f in noise.features) or "0"
    whites = "/".join(f"{f:g}" for f in noise.features_white) or "0"
    default = Noise(features=noise.features, features_white=noise.features_white) == noise
    default = default and not any(noise.features) and not any(noise.features_white)
    source = "fitted to the study's seed deviations" if fitted else "given"
    source = "the calibration's" if default and not fitted else source
    white = any((noise.loss_white, noise.scale_white, *noise.features_white))
    white_text = (
        f"; white shares: loss {noise.loss_white:g}, features {whites}, L2 {noise.scale_white:g}"
        if white
        else ""
    )
    return (
        f"noise AR φ: loss {noise.loss:g}, features {features}, L2's own part {noise.scale:g}"
        f"{white_text}; L2–loss correlation {noise.scale_loss:g} ({source})"
    )


def power_table(
    design: Design,
    features: tuple[str, ...] = tuple(CLAIMS),
    sesoi: float = SESOI,
    n_sim: int = SIMULATIONS,
    seed: int = 0,
    cache: str | Path | None = None,
    fitted: bool = False,
    threads: int = 1,
) -> pd.DataFrame:
    """POWER_COLUMNS, one row per claim (``features``, in design.models order)."""
    rows = cached_power(design, sesoi, n_sim, seed, ALPHA, cache, threads)
    note = (
        f"{NOTE}; BH over {len(features)} claims, the others null on the same runs; "
        + noise_text(design.noise, fitted)
    )
    head = {"seeds": design.seeds, "checkpoints": design.checkpoints, "sesoi": sesoi}
    out = [
        {"feature": f, "models": m, **head, "n_sim": n_sim, **row, "note": note}
        for f, m, row in zip(features, design.models, rows, strict=True)
    ]
    return pd.DataFrame(out, columns=POWER_COLUMNS)
