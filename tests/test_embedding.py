"""The embedding point cloud's topology and Fourier share, against closed forms and a hand DFT."""

from __future__ import annotations

import numpy as np
import pytest

from topotrain.topology.embedding import embedding_topology, fourier_share, frequency_energy


def circle(p: int, freq: int = 1, radius: float = 1.0) -> np.ndarray:
    angle = 2 * np.pi * freq * np.arange(p) / p
    return radius * np.column_stack([np.cos(angle), np.sin(angle)])


@pytest.mark.parametrize("p", [7, 23, 24, 59])
def test_a_circle_of_residues_has_one_h1_bar_of_the_regular_polygon(p):
    """Regular p-gon: born at the side 2 sin(π/p), dies at the chord 2 sin(π⌈p/3⌉/p)."""
    birth, death = 2 * np.sin(np.pi / p), 2 * np.sin(np.pi * -(-p // 3) / p)
    got = embedding_topology(circle(p, radius=7.5))  # the scale is divided out
    assert got["h1_max"] == pytest.approx(death - birth, rel=1e-5)
    assert got["h1_total"] == pytest.approx(death - birth, rel=1e-5)  # the only H1 bar
    assert got["h0_total"] == pytest.approx((p - 1) * birth, rel=1e-9)  # MST: p − 1 sides
    assert got["row_norm"] == pytest.approx(7.5)


def hand_energy(E: np.ndarray) -> np.ndarray:
    """Σ_d |Σ_j E_jd e^(−2πi f j / p)|² for f = 1 … p − 1, folded onto f and p − f."""
    p = E.shape[0]
    j = np.arange(p)
    full = [
        sum(abs(np.exp(-2j * np.pi * f * j / p) @ E[:, d]) ** 2 for d in range(E.shape[1]))
        for f in range(1, p)
    ]
    return np.array(
        [full[f - 1] + (full[p - f - 1] if f != p - f else 0) for f in range(1, p // 2 + 1)]
    )


@pytest.mark.parametrize("p", [23, 24])
def test_frequency_energy_matches_a_hand_written_dft(p):
    rng = np.random.default_rng(p)
    E = rng.normal(size=(p, 5))
    np.testing.assert_allclose(frequency_energy(E), hand_energy(E), rtol=1e-10)


def test_fourier_share_of_one_and_two_frequencies():
    p = 59
    assert fourier_share(circle(p, freq=14), k=1) == pytest.approx(1.0)
    two = np.hstack([circle(p, 3), 0.5 * circle(p, 17)])  # energies in the ratio 1 : 0.25
    assert fourier_share(two, k=1) == pytest.approx(1 / 1.25)
    assert fourier_share(two, k=2) == pytest.approx(1.0)
    assert np.isnan(fourier_share(np.ones((p, 3))))  # constant over the residues
    with pytest.raises(ValueError, match="k must be >= 1"):
        fourier_share(two, k=0)
