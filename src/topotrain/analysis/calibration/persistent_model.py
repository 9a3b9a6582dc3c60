"""The persistent-noise study model (``Setting``: models × seeds × checkpoints, φ and white share of
each variable) and the effects it implies: ``implied`` gives the correlations the seed views
estimate from the covariances of the levels and of the H-step moves (the formulas are in
``persistent``'s docstring), ``planted`` the coupling that puts a view's effect at a target.
``persistent`` draws studies from it and measures their permutation p.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from topotrain.analysis.calibration.simulator import N_MODELS
from topotrain.analysis.inference.seed_contrast import (
    CONTRAST_VIEWS,
    HORIZON_STEPS,
    horizon_lag,
)

REF_SPACING, STEPS = 100.0, 5000.0  # the study: 51 checkpoints 100 steps apart
PHI = {"y": 0.94, "x": 0.96, "l": 0.98}  # φ of each persistent part at REF_SPACING
NORM_LOSS = -0.7  # c: the norm's share of the loss's persistent part
WARP_SD = 0.02  # progress_warp: sd of a seed's relative speed ε_s
OFFSET_SD = DRIFT_SD = 1.0  # per-seed offset; drift's total over STEPS (units of the deviation sd)
# norm_only: x = g·(the norm's deviation) + √(1 − g²)·own; g·c > 0, so x tracks y through l
NORM_GAIN = -0.7
KINK, KINK_SLOPE = 200.0, 0.25  # kink_warp: progress runs at KINK_SLOPE until the warm-up's end
KINK_NOISE = 0.01  # kink_warp: the deviations' sd (NOISE elsewhere): a small noise, a large warp
NULLS = ("no_coupling", "offset_confound", "progress_warp", "norm_only", "kink_warp")
VIEWS = tuple(CONTRAST_VIEWS)  # seed_contrast, seed_contrast_l2, seed_comove, seed_comove_l2
PAIRS = {"level": VIEWS[:2], "comove": VIEWS[2:]}  # a claim's p: the larger of plain and partial
JOINT = "joint"  # the claim's p: the exact joint min-p over both pairs (primary.joint_p)
DELTA = 0.1  # Δ: the level β (the binding partial view's) the power table plants
DELTA_CO = 0.1  # Δ_co: the co-movement β (partial) proposed in docs/comovement.md


@dataclass(frozen=True)
class Setting:
    """A simulated study: models × seeds × checkpoints evenly over ``steps``, white share w; the
    noise of another study with ``phis`` (φ of y, x, l at REF_SPACING; default PHI), ``whites``
    (w of y, x, l; default ``white`` for each) and ``norm_loss`` (c; default NORM_LOSS)."""

    seeds: int = 3
    checkpoints: int = 51
    white: float = 0.1
    models: int = N_MODELS
    steps: float = STEPS
    phis: tuple[float, float, float] | None = None
    whites: tuple[float, float, float] | None = None
    norm_loss: float = NORM_LOSS

    @property
    def spacing(self) -> float:
        return self.steps / (self.checkpoints - 1)

    def phi(self, v: str) -> float:
        """φ_v = e^(−spacing/τ_v) with τ_v = −REF_SPACING / ln φ_v(REF_SPACING)."""
        ref = dict(zip("yxl", self.phis, strict=True))[v] if self.phis else PHI[v]
        return ref ** (self.spacing / REF_SPACING)

    def w(self, v: str) -> float:
        """v's white share (``whites`` where given, else ``white``)."""
        return dict(zip("yxl", self.whites, strict=True))[v] if self.whites else self.white

    def t(self) -> np.ndarray:
        return np.arange(self.checkpoints) * self.spacing

    def lag(self) -> int:
        """Checkpoints per co-movement horizon H (``seed_contrast.horizon_lag``)."""
        return horizon_lag(self.t(), HORIZON_STEPS)

    def phi_move(self, v: str) -> float:
        """φ_v over one co-movement move (``lag`` checkpoints: the horizon H)."""
        return self.phi(v) ** max(1, self.lag())


def coupling(scenario: str) -> tuple[str, float]:
    """(kind, strength) of a scenario: level/innovation/offset at b, or a null's own kind."""
    if scenario in NULLS:
        return (scenario, 1.0) if scenario == "offset_confound" else (scenario, 0.0)
    kind, b = scenario.rsplit("_b", 1)
    return kind, float(b)


def covariances(kind: str, b: float, s: Setting) -> tuple[np.ndarray, np.ndarray]:
    """(L, D): 3 × 3 covariances of (x, y, l) deviations, levels and first differences (D halved),
    per unit deviation variance, under coupling ``kind`` at strength b (module docstring): the
    persistent parts' covariances P, scaled by √(a_i·a_j) (a_v = 1 − w_v), plus w_v on D's and
    L's diagonal."""
    c = s.norm_loss  # q over a move (H steps); η is the innovation of one checkpoint
    (qx, qy, ql), var_eta = (1 - s.phi_move(v) for v in "xyl"), 1 - s.phi("y") ** 2
    beta = b if kind == "level" else 0.0
    lev = np.array([[1, beta, beta * c], [beta, 1, c], [beta * c, c, 1]])
    dif = np.array(
        [
            [beta**2 * qy + (1 - beta**2) * qx, beta * qy, beta * c * qy],
            [beta * qy, qy, c * qy],
            [beta * c * qy, c * qy, c * c * qy + (1 - c * c) * ql],
        ]
    )
    if kind == "innovation":  # x gains b·η, Var η = 1 − φ_y², Cov(Δη, ΔU) = (2 − φ_y)·Var η
        lev[0, 0] += b * b * var_eta
        lev[0, 1] = lev[1, 0] = b * var_eta
        lev[0, 2] = lev[2, 0] = b * c * var_eta
        dif[0, 0] += b * b * var_eta
        dif[0, 1] = dif[1, 0] = b * (1 + qy) * var_eta / 2
        dif[0, 2] = dif[2, 0] = c * dif[0, 1]
    white = np.array([s.w(v) for v in "xyl"])
    root = np.sqrt(1 - white)
    lev, dif = (np.outer(root, root) * m + np.diag(white) for m in (lev, dif))
    if kind == "offset":  # constants: the levels only
        lev[:2, :2] += OFFSET_SD**2 * np.array([[1, b], [b, 1]])
    return lev, dif


def correlation(cov: np.ndarray, partial: bool) -> float:
    """corr(x, y) of a 3 × 3 (x, y, l) covariance, or partial on l."""
    if partial:
        cov = cov[:2, :2] - np.outer(cov[:2, 2], cov[:2, 2]) / cov[2, 2]
    return float(cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1]))


def implied(kind: str, b: float, s: Setting) -> dict[str, float]:
    """view → the correlation it estimates under coupling ``kind`` at b (``covariances``)."""
    lev, dif = covariances(kind, b, s)
    return {v: correlation(dif if v in PAIRS["comove"] else lev, v.endswith("l2")) for v in VIEWS}


def planted(kind: str, target: float, view: str, s: Setting) -> float:
    """The strength b at which ``view``'s implied correlation is ``target`` (at s's spacing)."""
    top = 20.0 if kind == "innovation" else 0.9999  # b scales η there, a correlation elsewhere
    return optimize.brentq(lambda b: implied(kind, b, s)[view] - target, 0.0, top, xtol=1e-9)
