"""The stationary bootstrap's random draws, arch's very numbers, made in bulk.

arch's ``StationaryBootstrap(…, seed=np.random.default_rng(seed))`` draws, per resample, n
uniform block starts (``Generator.integers(n, size=n)``) and then n uniforms
(``Generator.random(n)``). Called once per resample that is 2,000 NumPy calls for 1,000
resamples, about 7 ms per cell, for every (run, feature, target, view) cell of a study. Here the
generator's raw 64-bit outputs are taken at once (``bit_generator.random_raw``) and turned into
those numbers as NumPy does (PCG64 through ``Generator``, NumPy ≥ 2):

- ``integers(n)`` for n < 2³² takes 32-bit halves of the raw outputs, the low half first; an
  unused high half waits in the bit generator for the next 32-bit request (the next resample's
  starts: an odd n alternates 101 and 100 raw outputs at n = 201), and maps each half x to
  (x·n) >> 32 (Lemire), redrawing when the low 32 bits of x·n fall below (2³² − n) mod n (at most
  n/2³² of draws: then this path gives up and the caller draws one call at a time);
- ``random()`` maps a raw output r to (r >> 11) · 2⁻⁵³.

The first two resamples are checked against the generator's own calls on every use; any
difference (another NumPy, another bit generator) also falls back, so the draws are always the
generator's. ``tests/test_block_bootstrap.py`` holds them equal to arch's.
"""

from __future__ import annotations

import numpy as np
from numba import njit

CHECKED = 2  # resamples checked against the generator's own calls (both parities of the carry)


def looped(n: int, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(starts, uniforms), each (n_resamples, n): the generator called once per draw, as arch."""
    rng = np.random.default_rng(seed)
    starts, u = np.empty((n_resamples, n), np.int64), np.empty((n_resamples, n))
    for r in range(n_resamples):
        starts[r] = rng.integers(n, size=n, dtype=np.int64)
        u[r] = rng.random(n)
    return starts, u


def stationary_draws(n: int, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``looped``'s numbers, from the raw outputs in bulk where that reproduces them (checked),
    else from ``looped``."""
    bulk = _bulk(n, n_resamples, seed)
    if bulk is None:
        return looped(n, n_resamples, seed)
    head = looped(n, min(CHECKED, n_resamples), seed)
    same = all(np.array_equal(a[: len(h)], h) for a, h in zip(bulk, head, strict=True))
    return bulk if same else looped(n, n_resamples, seed)


def redraw_below(n: int) -> int:
    """Lemire's threshold for ``integers(n)``: a 32-bit draw x is redrawn when (x·n) mod 2³² is
    below it."""
    return (2**32 - n) % n


def _bulk(n: int, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The draws from raw outputs; None where a 32-bit draw would be redrawn or n is out of the
    32-bit path's range."""
    if n < 2 or n >= 2**32 or n_resamples < 1:
        return None
    rng = np.random.default_rng(seed)
    if type(rng.bit_generator).__name__ != "PCG64":
        return None
    halves_before = np.arange(n_resamples) * n  # 32-bit halves the starts used before each
    carried = halves_before % 2  # a high half waiting from the resample before
    wide = int(((n - carried + 1) // 2).sum())  # raw outputs all the starts take
    raw = rng.bit_generator.random_raw(wide + n_resamples * n)
    starts, u = np.empty((n_resamples, n), np.int64), np.empty((n_resamples, n))
    return (starts, u) if _unpack(raw, n, redraw_below(n), starts, u) else None


@njit(cache=True)
def _unpack(raw, n, below, starts, u) -> bool:
    """Fill starts and u from the raw outputs in the generator's order (per resample n 32-bit
    starts, the low half of a raw output first and its high half kept for the next, then n
    doubles); False at the first start that would be redrawn."""
    width = np.uint64(n)
    low, shift, drop = np.uint64(0xFFFFFFFF), np.uint64(32), np.uint64(11)
    threshold = np.uint64(below)
    scale = 1.0 / 9007199254740992.0
    pos, kept, half = 0, False, np.uint64(0)
    for r in range(starts.shape[0]):
        for j in range(n):
            if kept:
                x, kept = half, False
            else:
                word = raw[pos]
                pos += 1
                x, half, kept = word & low, word >> shift, True
            product = x * width
            if product & low < threshold:
                return False
            starts[r, j] = np.int64(product >> shift)
        for j in range(n):
            u[r, j] = np.float64(raw[pos] >> drop) * scale
            pos += 1
    return True
