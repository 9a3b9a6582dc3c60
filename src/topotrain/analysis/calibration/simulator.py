"""The calibration suite's simulator: runs that look like training, with a known answer.

A run has ``N_CHECKPOINTS`` checkpoints (steps 0, 100, …, 5000 as in the study), a loss y, an L2
norm l and one or more features x; studies group ``N_MODELS`` models × k seeds (the seeds of a
model share the trends and differ by noise). Every feature of a run shares its y and l (the
primary family's three claims are three features of the same runs) and draws its own noise.

Nulls (NULLS, x carries none of y's fluctuation): independent random walks; a decelerating function
of the step plus iid, AR(0.8) or AR(0.95) noise; an almost monotone pair (|raw ρ| ≈ 0.99); x a
function of the L2 norm, whose fluctuation y shares (a null of the scale only); x tracking y's
fluctuation with the sign opposite to the raw ρ (a null of the sign-aware flags only). Signals
(SIGNALS): x carries a share r of y's own fluctuation around its trend, for r in EFFECTS. The
effect scenarios (EFFECT_SCENARIOS) test the effect's interval where the simulator's β is known:
``decay_r<r>``, AR(0.8) noise whose sd shrinks as e^(−t/DECAY) (deviations shrink with the step),
and ``spread_r<r>``, the share differing across models (r + SPREAD, mean r).

The effect β (``seed_effect``) equals the planted share r under this simulator's model
(``true_effect``): that link is the simulator's, not a law.

The power analysis's studies (``simulate_family``, same trends and AR noise, on shared runs): a
``Design`` has max(models) models × k seeds × T checkpoints (steps 0, 100, …); every run has a loss
y = trend + u and an L2 norm l = trend + w, w ∝ c·u + √(1 − c²)·w', and claim c's feature is
x_c = trend + r·u + √(1 − r²)·e_c over the claim's first ``models[c]`` models. u, e_c and w' are
stationary series of one marginal SD, each AR(1) plus a white share v of its variance (``Noise``:
the calibration's φ = 0 for u and e, 0.8 for w', no white share and c = 0, or fitted to a study by
``power_design.fit_noise``). The feature is planted at r = β/√(1 − c² + β²c²) (``planted_share``)
so that the scale view's effect is β.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np

from topotrain.config import DEFAULTS

N_CHECKPOINTS, N_MODELS, STEP = 51, 5, 100
NOISE = 0.05  # sd of the feature's and the loss's fluctuation around their trends
EFFECTS = (0.05, 0.1, 0.2, 0.4)  # planted: share r of the loss's fluctuation in the feature's
SESOI = DEFAULTS["analysis"]["sesoi"]  # Δ: the effect scenarios are planted at it
DECAY = 2000.0  # steps: the decay scenarios' noise sd falls as e^(−t/DECAY) (0.08 at step 5000)
SPREAD = (-0.2, -0.1, 0.0, 0.1, 0.2)  # model m's share is r + SPREAD[m mod N_MODELS]
OPPOSITE = -0.7 / np.sqrt(0.98)  # opposite_sign's β: x = −0.7·u + 0.7·e against y = u
NULLS = (
    "random_walk",
    "decel_iid",
    "decel_ar08",
    "decel_ar095",
    "near_monotone",
    "l2_function",
    "opposite_sign",
)
SIGNALS = tuple(f"signal_r{r:g}" for r in EFFECTS)
# Nulls of the partial contrasts on α (seed_contrast_alpha, _split) only: feature and loss share a
# latent spectral quantity s and nothing else; "a" and "a2", α's stand-in on two halves of the
# layers, measure s exactly (alpha_latent: a = a2) or each with its own noise, as much again
# (alpha_noisy: deviations correlate 0.71 with s's, 0.5 with each other) or three times the
# variance (alpha_noisier: 0.5 and 0.25). Partialling a noisy covariate under-adjusts: the second
# measures by how much. alpha_signal_r<r>: alpha_noisy with x carrying a share r of y's own
# fluctuation (beyond s).
ALPHA_NULLS = ("alpha_latent", "alpha_noisy", "alpha_noisier")
ALPHA_SIGNALS = ("alpha_signal_r0.2",)
ALPHA_ERROR = {"alpha_latent": 0.0, "alpha_noisier": np.sqrt(3)}  # error sd / s's sd (else 1)


def effect_scenarios(sesoi: float = SESOI) -> tuple[str, ...]:
    """The effect scenarios for Δ = ``sesoi``: no effect (decay_r0), β = Δ (decay_r<Δ>), and β = Δ
    on average with a spread across models (spread_r<Δ>)."""
    return ("decay_r0", f"decay_r{sesoi:g}", f"spread_r{sesoi:g}")


EFFECT_SCENARIOS = effect_scenarios()


def task_rng(task: tuple[str, int | None], seed: int) -> np.random.Generator:
    """The generator of one calibration task (scenario, seeds per model; None for one run or one
    value per model or size): seeded by [seed, CRC-32 of the name, seeds or 0], so no two tasks,
    and no task and its re-draw at another seed, share draws."""
    name, k = task
    return np.random.default_rng([seed, zlib.crc32(name.encode()), k or 0])


def _ar(rng: np.random.Generator, phi: float, shape: tuple[int, ...]) -> np.ndarray:
    """Stationary AR(φ) series along the last axis with marginal sd NOISE (φ = 0: iid)."""
    e = rng.normal(0.0, NOISE * np.sqrt(1 - phi**2), shape)
    out = np.empty(shape)
    out[..., 0] = rng.normal(0.0, NOISE, shape[:-1])
    for i in range(1, shape[-1]):
        out[..., i] = phi * out[..., i - 1] + e[..., i]
    return out


def _alpha_trend(t: np.ndarray) -> np.ndarray:
    """α's stand-in's trend: 4 − 0.4·log1p(t/1000) (α falls as training goes on)."""
    return 4 - 0.4 * np.log1p(t / 1000)


def _trends(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Feature, loss and L2 trends: −log1p(t/100), 2 + 3·e^(−t/800), 1 + 0.3·log1p(t/500)."""
    return -np.log1p(t / 100), 2 + 3 * np.exp(-t / 800), 1 + 0.3 * np.log1p(t / 500)


def share(name: str, models: int = N_MODELS) -> np.ndarray | float:
    """The planted share r of scenario ``name`` (0 for the nulls); ``spread_r<r>``: per model,
    r + SPREAD[m mod N_MODELS] for ``models`` models, shaped (models, 1, 1)."""
    if not name.startswith(("signal_r", "decay_r", "spread_r", "alpha_signal_r")):
        return 0.0
    r = float(name.split("_r", 1)[1])
    if name.startswith("spread"):
        offsets = np.resize(np.asarray(SPREAD), models)
        return (r + offsets)[:, None, None]
    return r


def is_signal(name: str) -> bool:
    """Whether x carries a planted share of y's fluctuation (a power row, not a null)."""
    return bool(np.any(np.asarray(share(name)) != 0)) and name not in NULLS


def true_effect(name: str, view: str) -> float | None:
    """β of scenario ``name`` in ``view`` (clock or scale) where the simulator fixes it: the mean
    planted share, 0 on the nulls, −0.7/√0.98 on opposite_sign; None for l2_function's clock (x
    and y share the norm's fluctuation there: β is the simulator's accident, not a known value)."""
    if name == "l2_function":
        return 0.0 if view == "scale" else None
    if name == "opposite_sign":
        return float(OPPOSITE)
    return float(np.mean(share(name)))


def _loss_and_rule(
    name: str, rng: np.random.Generator, full: tuple[int, ...], t: np.ndarray
) -> tuple:
    """(y, l, draw_x[, a, draw_a2]) of one scenario: the loss, the norm, a rule drawing one
    feature of the same runs with fresh noise, and (alpha_*) α's stand-in and a rule drawing its
    second measurement."""
    fx, fy, fl = _trends(t)
    if name.startswith("alpha"):  # x and y share s (and a share r of u) only; a measures s
        s, u, w = _ar(rng, 0.8, full), _ar(rng, 0.8, full), _ar(rng, 0.8, full) / 5
        err, r = ALPHA_ERROR.get(name, 1.0), share(name)

        def measure() -> np.ndarray:
            return _alpha_trend(t) + s + (err * _ar(rng, 0.8, full) if err else 0.0)

        a = measure()

        def draw_x() -> np.ndarray:
            return fx + s + r * u + np.sqrt(1 - r**2) * _ar(rng, 0.8, full)

        return fy + s + u, fl + w, draw_x, a, measure
    if name == "random_walk":
        y, norm = (np.cumsum(rng.normal(0, NOISE, full), axis=-1) for _ in range(2))
        return y, norm + 1, lambda: np.cumsum(rng.normal(0, NOISE, full), axis=-1)
    phi = {"ar08": 0.8, "ar095": 0.95}.get(name.rsplit("_", 1)[-1], 0.0)
    phi = 0.8 if name.startswith("decay") else phi
    scale = np.exp(-t / DECAY) if name.startswith("decay") else 1.0
    u, w = scale * _ar(rng, phi, full), scale * _ar(rng, 0.8, full) / 5

    def noise() -> np.ndarray:
        return scale * _ar(rng, phi, full)

    if name == "near_monotone":  # tiny noise: raw ρ(x, y) ≈ −0.99
        return fy + u / 10, fl + w, lambda: -fx + noise() / 10
    if name == "l2_function":  # x a function of the norm, y shares the norm's fluctuation
        return fy + 2 * w + u, fl + w, lambda: 2 * (fl + w) + noise() / 5
    if name == "opposite_sign":  # trend ρ > 0, fluctuations anti-correlated
        return fy + u, fl + w, lambda: fx - 0.7 * u + 0.7 * noise()
    r = share(name, full[0])
    return fy + u, fl + w, lambda: fx + r * u + np.sqrt(1 - r**2) * noise()


def simulate(
    name: str, rng: np.random.Generator, shape: tuple[int, int], features: int = 1, stand_in=False
) -> dict[str, np.ndarray]:
    """x, y, l, a, a2 of shape (models, seeds, checkpoints) for scenario ``name`` (NULLS, SIGNALS,
    EFFECT_SCENARIOS, ALPHA_NULLS, ALPHA_SIGNALS or any ``signal_r<r>``); ``features`` > 1 adds
    x_2 … x_<features>, further features of the same runs (same y and l, fresh noise); "a" and
    "a2" are α's stand-in on two halves of the layers, there always in the alpha_* scenarios,
    elsewhere with ``stand_in`` (drawn last, a2 after a: the other columns stay as they were)."""
    full = (*shape, N_CHECKPOINTS)
    t = np.arange(N_CHECKPOINTS) * float(STEP)
    y, norm, draw_x, *latent = _loss_and_rule(name, rng, full, t)
    out = {"x": draw_x(), "y": y, "l": norm}
    out |= {f"x_{j}": draw_x() for j in range(2, features + 1)}
    if latent:  # alpha_*: "a" and "a2" measure what x and y share
        return out | {"a": latent[0], "a2": latent[1]()}
    if not stand_in:
        return out
    return out | {c: _alpha_trend(t) + _ar(rng, 0.8, full) for c in ("a", "a2")}


@dataclass(frozen=True)
class Noise:
    """AR(1) coefficients of the simulated fluctuations: the loss's u, each claim's own feature
    noise e_c (one per claim; empty: 0 for every claim) and the L2 norm's own part w' (what the
    loss does not explain); ``scale_loss`` the correlation c of the norm's fluctuation with u;
    the ``*_white`` fields: each series' white share v of its variance (empty: 0 for every
    claim); ``spacing``, the steps between the checkpoints the φ's describe (the persistent
    process rescales them to its own spacing). Defaults: the calibration simulator's."""

    loss: float = 0.0
    features: tuple[float, ...] = ()
    scale: float = 0.8
    scale_loss: float = 0.0
    loss_white: float = 0.0
    features_white: tuple[float, ...] = ()
    scale_white: float = 0.0
    spacing: float = 100.0


@dataclass(frozen=True)
class Design:
    """Models in each claim (CLAIMS order), seeds per model, checkpoints per run, and the noise."""

    models: tuple[int, ...]
    seeds: int
    checkpoints: int = N_CHECKPOINTS
    noise: Noise = field(default_factory=Noise)

    def __post_init__(self) -> None:
        check_design(self)


def check_design(design: Design) -> None:
    """ValueError naming the parameter when the design cannot be simulated or tested."""
    if not design.models or min(design.models) < 1:
        raise ValueError(f"models: every claim needs at least 1 model, not {design.models}")
    if design.seeds < 2:
        raise ValueError(
            f"seeds: a between-seed contrast needs at least 2 seeds per model, not {design.seeds}"
        )
    if design.checkpoints < 2:
        raise ValueError(f"checkpoints: at least 2 per run, not {design.checkpoints}")
    noise = design.noise
    for name, vs in {"features": noise.features, "features_white": noise.features_white}.items():
        if vs and len(vs) != len(design.models):
            raise ValueError(f"noise.{name}: one per claim ({len(design.models)}), not {len(vs)}")
    values = {"noise.loss": [noise.loss], "noise.scale": [noise.scale]}
    values |= {"noise.scale_loss": [noise.scale_loss], "noise.features": noise.features}
    for name, vs in values.items():
        if any(not -1 < v < 1 for v in vs):
            raise ValueError(f"{name} must lie strictly between −1 and 1, not {vs}")
    whites = [noise.loss_white, noise.scale_white, *noise.features_white]
    if any(not 0 <= v <= 1 for v in whites):
        raise ValueError(f"noise.*_white: a white share lies in [0, 1], not {whites}")


def _series(rng: np.random.Generator, phi: float, white: float, shape: tuple) -> np.ndarray:
    """√(1 − v)·AR(φ) + √v·white, marginal SD the simulator's NOISE (v = 0: ``_ar`` alone, its
    draws unchanged): lag-h autocorrelation φ^h·(1 − v) for h ≥ 1."""
    ar = _ar(rng, phi, shape)
    if not white:
        return ar
    return math.sqrt(1 - white) * ar + math.sqrt(white) * rng.normal(0.0, NOISE, shape)


def simulate_family(design: Design, n_sim: int, seed: int = 0) -> dict[str, np.ndarray]:
    """n_sim studies on shared runs: 'y' the loss and 'l' the L2 norm (n_sim, models, seeds,
    checkpoints), 'u' the loss's fluctuation, 'fx' the feature's trend (checkpoints,) and 'e'
    each claim's own feature noise (claims, n_sim, models, seeds, checkpoints)."""
    noise = design.noise
    shape = (n_sim, max(design.models), design.seeds, design.checkpoints)
    rng = np.random.default_rng([seed, 17, *shape[1:]])
    fx, fy, fl = _trends(np.arange(design.checkpoints) * float(STEP))
    u = _series(rng, noise.loss, noise.loss_white, shape)
    own = _series(rng, noise.scale, noise.scale_white, shape)
    w = (noise.scale_loss * u + math.sqrt(1 - noise.scale_loss**2) * own) / 5
    claims = len(design.models)
    phis, whites = noise.features or (0.0,) * claims, noise.features_white or (0.0,) * claims
    e = np.stack([_series(rng, phi, v, shape) for phi, v in zip(phis, whites, strict=True)])
    return {"y": fy + u, "l": fl + w, "u": u, "fx": fx, "e": e}


def planted_share(beta: float, c: float) -> float:
    """The share r of the loss's fluctuation that gives the scale view effect β when the norm
    correlates c with the loss: β = r·√(1 − c²)/√(1 − r²c²) inverted, r = β/√(1 − c² + β²c²)."""
    return min(1.0, beta / math.sqrt(1 - c * c + beta * beta * c * c))


def claim_feature(sim: dict, design: Design, claim: int, beta: float) -> np.ndarray:
    """Claim ``claim``'s feature x = trend + r·u + √(1 − r²)·e on the studies of ``sim`` (n_sim,
    its models, seeds, checkpoints), r = ``planted_share``(β, the norm–loss correlation)."""
    n = design.models[claim]
    r = planted_share(beta, design.noise.scale_loss)
    return sim["fx"] + r * sim["u"][:, :n] + math.sqrt(1 - r * r) * sim["e"][claim, :, :n]
