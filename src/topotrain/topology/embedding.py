"""An embedding matrix as a point cloud of its rows — the grokking control's embedding of the p
residues — and how much of its energy sits in a few Fourier frequencies over the residues.

- embedding_topology: Vietoris–Rips H0/H1 total and maximum persistence of the rows scaled by
  their mean Euclidean norm (so the numbers measure shape, not the weights' size). For the p
  residues on a circle (rows cos/sin of 2πj/p) it gives one H1 bar, born at the side
  2·sin(π/p) and dying at the chord 2·sin(π⌈p/3⌉/p) (Adamaszek–Adams).
- embedding_features: the Pythia study's embedding cloud (texts × hidden size): Rips H0/H1 of
  its top PCA scores beside the spectral baselines of the full cloud.
- fourier_share: Nanda et al. (ICLR 2023)'s progress measure in closed form: with F_f the DFT of
  E over the residue axis, the energy of frequency f = 1 … ⌊p/2⌋ is Σ_d |F_f,d|² counted with its
  conjugate −f; the share of all non-constant energy held by the k largest frequencies.
"""

from __future__ import annotations

import numpy as np

from topotrain.config import DEFAULTS, ENGINE
from topotrain.topology import registry
from topotrain.topology.layers import diagrams_summaries
from topotrain.topology.spectral import covariance_spectrum, pca, spectral_summary
from topotrain.topology.summaries import max_persistence, total_persistence
from topotrain.topology.vietoris_rips import check_cloud, subsample_rows, vr_diagrams

_EMBEDDINGS = DEFAULTS["pythia"]["embeddings"]  # the schema's defaults
EMBEDDING_KEYS = (
    "n_texts",
    "dim",
    "pca_dims",
    "pca_variance_ratio",
    "n_points",
    *registry.diagram_keys(),
    "effective_rank",
    "participation_ratio",
    "spectral_alpha",
)  # embedding_features' record, in this order


def frequency_energy(E: np.ndarray) -> np.ndarray:
    """Energy of each frequency f = 1 … ⌊p/2⌋ of E (p × d) over its rows: Σ_d |F_f,d|², doubled
    for f < p/2 (the conjugate frequency p − f carries the same), by numpy's rfft."""
    E = check_cloud(E)
    p = E.shape[0]
    energy = (np.abs(np.fft.rfft(E, axis=0)) ** 2).sum(axis=1)[1:]
    double = np.arange(1, energy.size + 1) < p / 2
    return np.where(double, 2 * energy, energy)


def fourier_share(E: np.ndarray, k: int = 1) -> float:
    """Share of E's non-constant energy in its k largest frequencies (NaN when E is constant
    along the residues, up to rounding); 1 for a circle of one frequency."""
    if k < 1:
        raise ValueError(f"fourier_share: k must be >= 1, got {k}")
    E = check_cloud(E)
    energy = np.sort(frequency_energy(E))[::-1]
    total = float(energy.sum())
    scale = E.shape[0] * float((E * E).sum())  # all the energy, constant part included (Parseval)
    return float(energy[:k].sum() / total) if total > 1e-20 * scale else float("nan")


def embedding_topology(E: np.ndarray, n_threads: int = 1, engine: str = ENGINE) -> dict[str, float]:
    """h0_total, h0_max, h1_total, h1_max of the rows of E scaled by their mean norm, and that
    mean norm (``row_norm``); all zero rows give zeros. ``engine``: the Rips engine."""
    E = check_cloud(E)
    norm = float(np.linalg.norm(E, axis=1).mean())
    cloud = E / norm if norm > 0 else E
    h0, h1 = vr_diagrams(cloud, maxdim=1, n_threads=n_threads, engine=engine)
    return {
        "h0_total": total_persistence(h0),
        "h0_max": max_persistence(h0),
        "h1_total": total_persistence(h1),
        "h1_max": max_persistence(h1),
        "row_norm": norm,
    }


def embedding_features(
    E: np.ndarray,
    pca_dims: int = _EMBEDDINGS["pca_dims"],
    maxdim: int = _EMBEDDINGS["maxdim"],
    max_points: int | None = None,
    seed: int = 0,
    n_threads: int = 1,
    engine: str = ENGINE,
) -> tuple[dict, list[np.ndarray]]:
    """Record (EMBEDDING_KEYS) and Rips diagrams of the embeddings E (n texts × d); ``engine``:
    the Rips engine (``vietoris_rips.resolve_engine``).

    Topology: Rips H0/H1 of the top-pca_dims PCA scores (max_points rows drawn with seed if set).
    Spectral baselines: on the full centred E, not the PCA scores. pca_variance_ratio is the
    fraction of total variance the kept components explain.
    """
    if maxdim not in (0, 1):
        raise ValueError(f"maxdim must be 0 or 1, got {maxdim}")
    E = np.asarray(E, dtype=np.float64)
    Z, var = pca(E, pca_dims)
    cloud = Z if max_points is None else subsample_rows(Z, max_points, np.random.default_rng(seed))
    dgms = vr_diagrams(cloud, maxdim=maxdim, n_threads=n_threads, engine=engine)
    record = {
        "n_texts": int(E.shape[0]),
        "dim": int(E.shape[1]),
        "pca_dims": int(Z.shape[1]),
        "pca_variance_ratio": float(var.sum() / covariance_spectrum(E).sum()),
        "n_points": int(cloud.shape[0]),
        **diagrams_summaries(dgms, maxdim),
        **spectral_summary(E),
    }
    return {key: record[key] for key in EMBEDDING_KEYS}, dgms
