"""Vietoris–Rips persistence (H0, H1) of a point cloud: the rows of a weight matrix."""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist

from topotrain.topology.neural_persistence import TINY


def check_cloud(X: np.ndarray) -> np.ndarray:
    """X as a finite (n, d) float64 cloud with n ≥ 1 (rows are points, never a distance matrix)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"need a point cloud of shape (n>=1, d), got {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"point cloud holds {int((~np.isfinite(X)).sum())} NaN/inf entries")
    return X


def subsample_rows(X: np.ndarray, max_points: int, rng: np.random.Generator) -> np.ndarray:
    """``max_points`` distinct rows of X drawn with ``rng`` (sorted indices); X itself if it has fewer.

    Seed ``rng`` from (seed, zlib.crc32(layer name)) so every checkpoint of a layer keeps the same rows.
    """
    if max_points < 1:
        raise ValueError(f"max_points must be >= 1, got {max_points}")
    if X.shape[0] <= max_points:
        return X
    return X[np.sort(rng.choice(X.shape[0], size=max_points, replace=False))]


def h0_deaths(X: np.ndarray) -> np.ndarray:
    """Finite H0 deaths of the Rips filtration of X: its Euclidean MST edge lengths, ascending.

    The graph is passed sparse: scipy drops stored zeros (and, for dense input, every |x| < 1e-8) as
    missing edges. Duplicate points get TINY (order kept) and lengths are read back by index.
    """
    n = X.shape[0]
    dist = pdist(X)  # condensed: pairs (i, j), i < j, in np.triu_indices order
    i, j = np.triu_indices(n, k=1)
    graph = csr_array((np.maximum(dist, TINY), (i, j)), shape=(n, n))
    tree = minimum_spanning_tree(graph).tocoo()
    u, v = np.minimum(tree.row, tree.col), np.maximum(tree.row, tree.col)
    return np.sort(dist[condensed_index(u, v, n)])


def condensed_index(i: np.ndarray, j: np.ndarray, n: int) -> np.ndarray:
    """Position of pair (i, j), i < j, in scipy's condensed distance vector of n points."""
    return n * i - i * (i + 1) // 2 + (j - i - 1)


def diagram(births: np.ndarray, deaths: np.ndarray) -> np.ndarray:
    """(n, 2) float64 birth/death array without zero-length bars (death > birth keeps inf bars)."""
    d = np.column_stack([births, deaths]).astype(np.float64)
    return d[d[:, 1] > d[:, 0]]


def rips_higher(X: np.ndarray, maxdim: int, n_threads: int) -> list[np.ndarray]:
    """giotto-ph Rips diagrams H1..H``maxdim`` of the rows of X (float32 inside)."""
    from gph import ripser_parallel  # imported here: gph pulls in scikit-learn (~2 s)

    return ripser_parallel(X, maxdim=maxdim, n_threads=n_threads)["dgms"][1:]


def vr_diagrams(X: np.ndarray, maxdim: int = 1, n_threads: int = 1) -> list[np.ndarray]:
    """Rips diagrams [H0, …, H``maxdim``] of the rows of X, Euclidean distance.

    H0 is exact in float64 from the MST, plus the one infinite bar [0, inf] added here (the only
    place infinite bars arise); H≥1 come from giotto-ph. Zero-length bars are dropped, so one point
    or identical points give H0 = [[0, inf]] and empty H≥1. 0 rows or NaN/inf → ValueError.
    """
    X = check_cloud(X)
    if maxdim < 0:
        raise ValueError(f"maxdim must be >= 0, got {maxdim}")
    deaths = np.append(h0_deaths(X), np.inf)
    higher = rips_higher(X, maxdim, n_threads) if maxdim > 0 else []
    return [diagram(np.zeros_like(deaths), deaths)] + [diagram(d[:, 0], d[:, 1]) for d in higher]
