"""Vietoris–Rips persistence (H0, H1) of a point cloud: the rows of a weight matrix.

H0 is exact (float64 MST); H≥1 come from an engine: ripser.py (MIT, the core install) or giotto-ph
(AGPL-3.0, the opt-in `fast` extra, about twice as fast). Both compute on float32 distances and give
the same bars (tested); ``resolve_engine`` says which one `auto` means here.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
import threading
from pathlib import Path

import numpy as np

from topotrain.config import ENGINE
from topotrain.topology.spanning import condensed, mst_weights, pairwise_distances


def check_cloud(X: np.ndarray) -> np.ndarray:
    """X as a finite (n, d) float64 cloud with n ≥ 1 (rows are points, never a distance matrix)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"need a point cloud of shape (n>=1, d), got {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"point cloud holds {int((~np.isfinite(X)).sum())} NaN/inf entries")
    return X


def subsample_rows(X: np.ndarray, max_points: int, rng: np.random.Generator) -> np.ndarray:
    """``max_points`` distinct rows of X drawn with ``rng`` (sorted indices);
    X itself if it has fewer.

    Seed ``rng`` from (seed, zlib.crc32(layer name)) so every checkpoint of a layer keeps the same
    rows.
    """
    if max_points < 1:
        raise ValueError(f"max_points must be >= 1, got {max_points}")
    if X.shape[0] <= max_points:
        return X
    return X[np.sort(rng.choice(X.shape[0], size=max_points, replace=False))]


def h0_deaths(square: np.ndarray) -> np.ndarray:
    """Finite H0 deaths of the Rips filtration of n points: their MST edge lengths, ascending, from
    the square (n, n) distance matrix."""
    return mst_weights(square)


def diagram(births: np.ndarray, deaths: np.ndarray) -> np.ndarray:
    """(n, 2) float64 birth/death array without zero-length bars (death > birth keeps inf bars)."""
    d = np.column_stack([births, deaths]).astype(np.float64)
    return d[d[:, 1] > d[:, 0]]


ENGINES = ("ripser", "giotto-ph")  # the Vietoris–Rips engines (H≥1); "auto" picks one
FAST = "giotto-ph"  # the opt-in `fast` extra (AGPL-3.0): ~2× ripser.py (docs/benchmarks.md)
UNNAMED = "giotto-ph"  # what computed a record that names no engine (topotrain before engines)
FAST_HINT = "pip install 'topotrain[fast]' (giotto-ph, AGPL-3.0), or use the engine ripser"


def fast_installed() -> bool:
    """Whether giotto-ph can be imported here (found, not imported: its wrapper is slow to load)."""
    try:
        return importlib.util.find_spec("gph") is not None
    except (ImportError, ValueError):
        return False


def resolve_engine(engine: str = ENGINE, fast: bool | None = None) -> str:
    """The engine that computes H≥1: ``auto`` → giotto-ph when ``fast`` (default: when giotto-ph
    is installed here), else ripser.py; ``ripser`` or ``giotto-ph`` as given."""
    if engine == "auto":
        return FAST if (fast_installed() if fast is None else fast) else "ripser"
    if engine not in ENGINES:
        raise ValueError(f"unknown Vietoris–Rips engine {engine!r}; choose auto, ripser, giotto-ph")
    return engine


def engine_note(engine: str) -> str:
    """The line a run prints before its first job: which engine computes H≥1 and its licence."""
    if engine == FAST:
        return (
            "Vietoris–Rips engine: giotto-ph (AGPL-3.0, the fast or test extra; "
            "topology.engine: ripser keeps to the permissive core)"
        )
    return "Vietoris–Rips engine: ripser.py (MIT, the core install)"


@functools.cache
def _gph_kernel():
    """giotto-ph's compiled Rips module, loaded without running ``gph/__init__`` (whose Python
    wrapper imports scikit-learn, ~2 s per job); None if its layout is not the one known here.

    It is registered under its own name, so a later ``import gph`` reuses it (loading a pybind11
    module twice aborts the process).
    """
    name = "gph.modules.gph_ripser"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec("gph")  # locates the package without importing it
    found = sorted(Path(spec.submodule_search_locations[0], "modules").glob("gph_ripser.*"))
    if not found:
        return None
    module_spec = importlib.util.spec_from_file_location(name, found[0])
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    if not hasattr(module, "rips_dm"):
        return None
    warm = module.rips_dm(np.zeros(1, np.float32), np.zeros(2, np.float32), 2, 1, 1.0, 1, False)
    warm.births_and_deaths_by_dim()  # its first call imports NumPy's C API: see gph_kernel
    return module


_LOADING = threading.Lock()


def gph_kernel():
    """``_gph_kernel``, loaded and first called by one thread at a time (layers spread over
    threads call it at once): two threads loading the module would load it twice, and two first
    calls of a result's ``births_and_deaths_by_dim`` deadlock on the static state it initialises
    (pybind11's handle on NumPy's C API, which it imports), each holding what the other waits for
    (the GIL, that state's guard). ``_gph_kernel`` makes that first call itself."""
    with _LOADING:
        return _gph_kernel()


def rips_gph(square: np.ndarray, maxdim: int, n_threads: int, thresh: float) -> list[np.ndarray]:
    """giotto-ph Rips diagrams H1..H``maxdim`` (Z/2) of n points from their (n, n) distances.

    As ``gph.ripser_parallel(X)`` does for a point cloud: float32 distances, dense kernel. Falls
    back to the public ``ripser_parallel`` on a precomputed matrix if the kernel cannot be loaded.
    """
    if not fast_installed():
        raise ImportError(f"the Vietoris–Rips engine giotto-ph is not installed: {FAST_HINT}")
    kernel = gph_kernel()
    if kernel is None:  # another giotto-ph layout: the public wrapper (slower import)
        from gph import ripser_parallel

        return ripser_parallel(square, maxdim=maxdim, metric="precomputed", n_threads=n_threads)[
            "dgms"
        ][1:]
    n = square.shape[0]
    dists = condensed(square).astype(np.float32)
    res = kernel.rips_dm(dists, np.zeros(n, np.float32), 2, maxdim, thresh, n_threads, False)
    return [np.reshape(np.array(d), (-1, 2)) for d in res.births_and_deaths_by_dim()[1:]]


def rips_ripser(square: np.ndarray, maxdim: int, thresh: float) -> list[np.ndarray]:
    """ripser.py's Rips diagrams H1..H``maxdim`` (Z/2, one thread) from the (n, n) distances, as
    ``ripser.ripser`` computes them (float32 distances), through its compiled module ``pyRipser``
    (the package's own ``__init__`` imports scikit-learn, ~2 s per job); else the public one."""
    try:
        from pyRipser import doRipsFiltrationDM
    except ImportError:  # another ripser.py layout
        from ripser import ripser

        return ripser(square, maxdim=maxdim, thresh=thresh, distance_matrix=True)["dgms"][1:]
    res = doRipsFiltrationDM(condensed(square).astype(np.float32), maxdim, thresh, 2, False)
    return [np.reshape(np.array(d), (-1, 2)) for d in res["births_and_deaths_by_dim"][1:]]


def rips_higher(
    square: np.ndarray, maxdim: int, n_threads: int, engine: str = ENGINE
) -> list[np.ndarray]:
    """Rips diagrams H1..H``maxdim`` from the (n, n) distances by ``engine`` (resolve_engine),
    thresholded at the enclosing radius min_i max_j d(i, j): beyond it the complex is a cone, so
    every class has died and both engines return the unthresholded diagrams, faster."""
    thresh = float(square.max(axis=1).min())
    if resolve_engine(engine) == "ripser":
        return rips_ripser(square, maxdim, thresh)
    return rips_gph(square, maxdim, n_threads, thresh)


def vr_diagrams(
    X: np.ndarray, maxdim: int = 1, n_threads: int = 1, engine: str = ENGINE
) -> list[np.ndarray]:
    """Rips diagrams [H0, …, H``maxdim``] of the rows of X, Euclidean distance.

    H0 is exact in float64 from the MST, plus the one infinite bar [0, inf] added here (the only
    place infinite bars arise); H≥1 come from ``engine`` (ripser.py, or giotto-ph on ``n_threads``
    threads; ``auto``: resolve_engine). Zero-length bars are dropped, so one point or identical
    points give H0 = [[0, inf]] and empty H≥1. 0 rows or NaN/inf → ValueError.
    """
    X = check_cloud(X)
    if maxdim < 0:
        raise ValueError(f"maxdim must be >= 0, got {maxdim}")
    square = pairwise_distances(X)  # float64
    deaths = np.append(h0_deaths(square), np.inf)
    higher = rips_higher(square, maxdim, n_threads, engine) if maxdim > 0 else []
    return [diagram(np.zeros_like(deaths), deaths)] + [diagram(d[:, 0], d[:, 1]) for d in higher]
