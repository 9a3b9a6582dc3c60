"""Per-run diagram series: how far each checkpoint's diagrams moved from the previous checkpoint's
(the "topological velocity"), and the diagrams as vectors (landscapes, images, Betti curves).

One job per run hands this module the Rips diagrams the per-checkpoint jobs saved (``{layer}/h{k}``
in each checkpoint's npz, read by ``sources.checkpoint``), so there is no chain of per-checkpoint
dependencies. Distances come from ``topology.distances`` (exact, SciPy's assignment solver),
vectorisations are NumPy here (their values equal gudhi's, tested; gudhi itself is not a
dependency: its package loads GPL-3 modules):

- ``h{k}_w1_step``: the 1-Wasserstein distance (L∞ ground metric, unmatched points to the diagonal)
  between the layer's H_k diagram at this checkpoint and at the previous one;
  ``h{k}_bottleneck_step`` the bottleneck distance. Finite bars only (H0's one infinite bar is left
  out). The first checkpoint has none (NaN).
- ``h{k}_landscape_l2``: the L2 norm of the first ``n_landscapes`` persistence landscapes
  (Bubenik's λ_j(t), the j-th largest max(0, min(t − b, d − t))) on a grid of ``resolution`` points;
- ``h{k}_image_mass``: the integral of the persistence image (Gaussian of ``image_bandwidth`` × the
  persistence range, weighted by persistence, on ``image_resolution``² pixels in birth-persistence
  coordinates);
- ``h{k}_betti_auc``: the integral of the Betti curve (bars alive at t, on [b, d)).

The grid of each (layer, H_k) is fixed across a run's checkpoints: [0, largest finite death over
the run] (a birth range padded by one bandwidth for the image), so a run's vectors are comparable.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from topotrain.config import DEFAULTS
from topotrain.topology.distances import bottleneck, finite_bars, w1_distance

SERIES_DEFAULTS = DEFAULTS["topology"]["series"]  # the schema's (topology.series)
SCALARS = ("w1_step", "bottleneck_step", "landscape_l2", "image_mass", "betti_auc")
LAYER_COLUMNS = ["step", "layer"] + [f"h{k}_{s}" for k in (0, 1) for s in SCALARS]


def landscapes(d: np.ndarray, n: int, grid: np.ndarray) -> np.ndarray:
    """(n, len(grid)) persistence landscapes λ_1 … λ_n of the finite bars on ``grid``: λ_j(t) the
    j-th largest tent max(0, min(t − b, d − t)) (Bubenik), 0 where fewer than j bars."""
    bars = finite_bars(d)
    tents = np.maximum(0.0, np.minimum(grid[None, :] - bars[:, :1], bars[:, 1:] - grid[None, :]))
    tents = np.vstack([tents, np.zeros((max(n - len(bars), 0), grid.size))])
    return -np.sort(-tents, axis=0)[:n]


def betti_curve(d: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Number of finite bars alive (b ≤ t < d) at each point of ``grid``."""
    bars = finite_bars(d)
    alive = (bars[:, :1] <= grid[None, :]) & (grid[None, :] < bars[:, 1:])
    return alive.sum(axis=0).astype(np.float64)


def persistence_image(d: np.ndarray, resolution: int, im_range: Sequence[float], sigma: float):
    """(resolution, resolution) persistence image of the finite bars, rows = persistence, columns
    = birth: Σ over bars (b, p = d − b) of p · exp(−((x − b)² + (y − p)²) / 2σ²) / (2πσ²) at the
    ``resolution`` points per side of ``im_range`` = [b_min, b_max, p_min, p_max], both ends
    included (Adams et al. 2017, weighted by persistence; gudhi's PersistenceImage, tested)."""
    bars = finite_bars(d)
    x = np.linspace(im_range[0], im_range[1], resolution)
    y = np.linspace(im_range[2], im_range[3], resolution)
    births, pers = bars[:, 0], bars[:, 1] - bars[:, 0]
    gx = np.exp(-np.square(x[None, :] - births[:, None]) / (2 * sigma**2))  # (bars, x)
    gy = np.exp(-np.square(y[None, :] - pers[:, None]) / (2 * sigma**2))  # (bars, y)
    return np.einsum("k,ky,kx->yx", pers, gy, gx) / (2 * np.pi * sigma**2)


def run_grid(diagrams: Sequence[np.ndarray], resolution: int) -> np.ndarray:
    """[0, largest finite death over ``diagrams``] in ``resolution`` points
    (a unit grid if none)."""
    bars = [finite_bars(d) for d in diagrams]
    deaths = [b[:, 1].max() for b in bars if b.size]
    top = max(deaths) if deaths and max(deaths) > 0 else 1.0
    return np.linspace(0.0, top, resolution)


def image_range(diagrams: Sequence[np.ndarray], bandwidth: float) -> tuple[list[float], float]:
    """The image's fixed [b_min, b_max, 0, p_max] over a run and its Gaussian σ (bandwidth ×
    p_max); a birth range of zero width (H0: all births 0) is padded by σ on each side."""
    bars = [finite_bars(d) for d in diagrams]
    bars = np.vstack([b for b in bars if b.size] or [np.zeros((1, 2))])
    pers = bars[:, 1] - bars[:, 0]
    top = float(pers.max()) if pers.max() > 0 else 1.0
    sigma = bandwidth * top
    lo, hi = float(bars[:, 0].min()), float(bars[:, 0].max())
    return [lo - sigma, hi + sigma, 0.0, top + sigma], sigma


def integral(values: np.ndarray, grid: np.ndarray) -> float:
    """Trapezoid rule over an even grid (along the last axis, summed over the rest)."""
    return float(np.trapezoid(values, grid, axis=-1).sum())


def layer_series(dgms: Sequence[np.ndarray], params: dict) -> tuple[dict, dict]:
    """For one layer and homology dimension over a run's checkpoints (in step order): the scalars
    (``SCALARS``, one value per checkpoint) and the arrays
    (grid, landscapes, images, Betti curves)."""
    p = {**SERIES_DEFAULTS, **params}
    dgms = [finite_bars(d) for d in dgms]  # once: every function below reads the finite bars only
    grid = run_grid(dgms, p["resolution"])
    im_range, sigma = image_range(dgms, p["image_bandwidth"])
    n = len(dgms)
    land = np.stack([landscapes(d, p["n_landscapes"], grid) for d in dgms])
    betti = np.stack([betti_curve(d, grid) for d in dgms])
    images = np.stack([persistence_image(d, p["image_resolution"], im_range, sigma) for d in dgms])
    # the image is sampled on resolution points per side, both ends included
    pixel = (
        (im_range[1] - im_range[0]) * (im_range[3] - im_range[2]) / (p["image_resolution"] - 1) ** 2
    )
    scalars = {
        "w1_step": [math.nan] + [w1_distance(dgms[i - 1], dgms[i]) for i in range(1, n)],
        "bottleneck_step": [math.nan] + [bottleneck(dgms[i - 1], dgms[i]) for i in range(1, n)],
        "landscape_l2": [math.sqrt(integral(x**2, grid)) for x in land],
        "image_mass": [float(x.sum() * pixel) for x in images],
        "betti_auc": [integral(x, grid) for x in betti],
    }
    arrays = {"grid": grid, "landscapes": land, "images": images, "betti": betti}
    return scalars, arrays


def run_series(diagrams: Sequence[tuple[int, dict[str, np.ndarray]]], params: dict):
    """A run's series from its checkpoints' diagrams [(step, {"{layer}/h{k}": diagram}), …]:
    a per-(step, layer) table (LAYER_COLUMNS) and the arrays ``{layer}/h{k}/{grid|landscapes|
    images|betti}`` plus ``steps``. Every checkpoint must hold the same layers and dimensions."""
    import pandas as pd

    if not diagrams:
        raise ValueError("diagram series: no checkpoints")
    diagrams = sorted(diagrams, key=lambda item: item[0])
    steps = [int(step) for step, _ in diagrams]
    keys = sorted(diagrams[0][1])
    for step, dgms in diagrams:
        if sorted(dgms) != keys:
            raise ValueError(
                f"diagram series: step {step} holds {sorted(dgms)}, step "
                f"{steps[0]} holds {keys}: recompute the topology of this run"
            )
    table = {(s, key.rsplit("/h", 1)[0]): {} for s in steps for key in keys}
    arrays = {"steps": np.asarray(steps)}
    for key in keys:
        layer, dim = key.rsplit("/h", 1)
        scalars, series = layer_series([dgms[key] for _, dgms in diagrams], params)
        for name, values in scalars.items():
            for s, v in zip(steps, values, strict=True):
                table[(s, layer)][f"h{dim}_{name}"] = v
        arrays |= {f"{key}/{name}": a for name, a in series.items()}
    rows = [{"step": s, "layer": layer, **cells} for (s, layer), cells in table.items()]
    return pd.DataFrame(rows).reindex(columns=LAYER_COLUMNS), arrays
