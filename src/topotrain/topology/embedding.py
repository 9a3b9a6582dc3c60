"""An embedding matrix as a point cloud of its rows — the grokking control's embedding of the p
residues — and how much of its energy sits in a few Fourier frequencies over the residues.

- embedding_topology: Vietoris–Rips H0/H1 total and maximum persistence of the rows scaled by
  their mean Euclidean norm (so the numbers measure shape, not the weights' size). For the p
  residues on a circle (rows cos/sin of 2πj/p) it gives one H1 bar, born at the side
  2·sin(π/p) and dying at the chord 2·sin(π⌈p/3⌉/p) (Adamaszek–Adams).
- fourier_share: Nanda et al. (ICLR 2023)'s progress measure in closed form: with F_f the DFT of
  E over the residue axis, the energy of frequency f = 1 … ⌊p/2⌋ is Σ_d |F_f,d|² counted with its
  conjugate −f; the share of all non-constant energy held by the k largest frequencies.
"""

from __future__ import annotations

import numpy as np

from topotrain.topology.summaries import max_persistence, total_persistence
from topotrain.topology.vietoris_rips import check_cloud, vr_diagrams


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


def embedding_topology(E: np.ndarray, n_threads: int = 1, engine: str = "auto") -> dict[str, float]:
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
