"""The numba kernels of ``attention.TinyHeadAttention`` (imported only when that backend runs).

The (batch, head) tiles run in a ``prange`` on a one-thread pool (``attention.numba_error``):
numba's parallel lowering gives these loops code about 1.5× faster than its serial one.

Each kernel is compiled for one head dim, a compile-time constant (``numba.literally``): the loops
over a head's D dimensions unroll, and the loops over keys vectorise. A tile's query rows go two
at a time, so each key and value loaded serves both rows. ``KERNELS`` holds the (forward,
backward) pair of each head dim in ``HEAD_DIMS``; a 3-line wrapper per head dim fixes the constant
(a wrapper keeps numba's on-disk cache; a closure over D would compile anew in every process).

Compiled on first use and cached on disk (numba's cache: beside this file, or NUMBA_CACHE_DIR).
"""

from __future__ import annotations

import math

import numpy as np
from numba import literally, njit, prange

# exp(x) for x ≤ 0 as Cephes' expf computes it: x = n·ln2 + r, |r| ≤ ln2/2, e^r by a degree-5
# polynomial, 2^n by writing n + 127 into a float's exponent bits. Relative error < 3e-7 (float32
# rounding), and unlike libm's expf the loop vectorises: the forward's exponentials cost a fifth.
LOG2E = np.float32(1.4426950408889634)
LN2_HI, LN2_LO = np.float32(0.693359375), np.float32(-2.12194440e-4)
EXP_C = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)
C0, C1, C2, C3, C4, C5 = (np.float32(c) for c in EXP_C)
EXP_MIN = np.float32(-87.0)  # e^−87 ≈ 1.6e-38, the smallest normal float32's neighbourhood


@njit(fastmath=True, cache=True, inline="always")
def exp_nonpositive(s, n, bits):
    """s[:n] ← exp(s[:n]) for s ≤ 0; ``bits`` is int32 scratch of at least n entries."""
    for j in range(n):
        x = max(s[j], EXP_MIN)
        fx = np.floor(x * LOG2E + np.float32(0.5))
        x = x - fx * LN2_HI - fx * LN2_LO
        y = ((((C0 * x + C1) * x + C2) * x + C3) * x + C4) * x + C5
        s[j] = y * (x * x) + x + np.float32(1.0)
        bits[j] = (np.int32(fx) + np.int32(127)) << np.int32(23)
    scale = bits.view(np.float32)
    for j in range(n):
        s[j] *= scale[j]


@njit(fastmath=True, cache=True, inline="always")
def softmax_numerators(s, n, bits):
    """s[:n] ← exp(s[:n] − max s[:n]); returns their sum."""
    m = s[0]
    for j in range(1, n):
        m = max(m, s[j])
    for j in range(n):
        s[j] -= m
    exp_nonpositive(s, n, bits)
    total = np.float32(0.0)
    for j in range(n):
        total += s[j]
    return total


@njit(fastmath=True, cache=True, inline="always")
def keys_values(qkv, b, k0, v0, D):
    """One head's keys and values of batch row b, transposed to (D, T): key index contiguous."""
    T = qkv.shape[1]
    kT = np.empty((D, T), np.float32)
    vT = np.empty((D, T), np.float32)
    for t in range(T):
        for d in range(D):
            kT[d, t] = qkv[b, t, k0 + d]
            vT[d, t] = qkv[b, t, v0 + d]
    return kT, vT


@njit(fastmath=True, cache=True, inline="always")
def head_of(qkv, bh, n_head, D):
    """Flat (batch row, head) index bh → (b, h, the head's first q, k and v columns, its keys and
    values transposed to (D, T): ``keys_values``) in fused (B, T, 3C) q/k/v."""
    b, h = bh // n_head, bh % n_head
    C = qkv.shape[2] // 3
    q0, k0, v0 = h * D, C + h * D, 2 * C + h * D
    kT, vT = keys_values(qkv, b, k0, v0, D)
    return b, h, q0, k0, v0, kT, vT


@njit(fastmath=True, cache=True, inline="always")
def row_pair(qkv, b, i, c0, D, scale, a, z):
    """a, z ← columns c0 … c0+D of rows i and i+1 of batch row b, times ``scale``; z is zero when
    row i is the last (odd T). Returns (i + 1 < T, the pair's key count)."""
    two = i + 1 < qkv.shape[1]
    for d in range(D):
        a[d] = qkv[b, i, c0 + d] * scale
        z[d] = qkv[b, i + 1, c0 + d] * scale if two else np.float32(0.0)
    return two, i + 2 if two else i + 1


@njit(fastmath=True, cache=True, inline="always")
def dot_pair(a, z, xT, n, D, out_a, out_z):
    """out_a[j], out_z[j] ← a·xT[:, j], z·xT[:, j] for j < n (D a constant: the d loop unrolls)."""
    for j in range(n):
        acc_a = np.float32(0.0)
        acc_z = np.float32(0.0)
        for d in range(D):
            acc_a += a[d] * xT[d, j]
            acc_z += z[d] * xT[d, j]
        out_a[j] = acc_a
        out_z[j] = acc_z


@njit(parallel=True, fastmath=True, cache=True)
def forward(qkv, n_head, D, y, probs, save):
    """y ← causal softmax(q·kᵀ/√D)·v per (batch, head), for fused (B, T, 3C) q/k/v with heads of
    D dims; probs[b, h, i, :i+1] ← row i's probabilities when ``save``."""
    literally(D)
    B, T = qkv.shape[0], qkv.shape[1]
    scale = np.float32(1.0 / math.sqrt(D))
    for bh in prange(B * n_head):
        b, h, q0, _, _, kT, vT = head_of(qkv, bh, n_head, D)
        qa = np.empty(D, np.float32)
        qz = np.empty(D, np.float32)
        sa = np.empty(T, np.float32)
        sz = np.empty(T, np.float32)
        bits = np.empty(T, np.int32)
        for i in range(0, T, 2):  # rows i and i+1: i+1 and n keys
            two, n = row_pair(qkv, b, i, q0, D, scale, qa, qz)
            dot_pair(qa, qz, kT, n, D, sa, sz)
            inv_a = np.float32(1.0) / softmax_numerators(sa, i + 1, bits)
            inv_z = np.float32(1.0) / softmax_numerators(sz, n, bits)
            if two:
                sa[i + 1] = 0.0
            for j in range(n):
                sa[j] *= inv_a
                sz[j] *= inv_z
            if save:
                for j in range(i + 1):
                    probs[b, h, i, j] = sa[j]
                if two:
                    for j in range(n):
                        probs[b, h, i + 1, j] = sz[j]
            for d in range(D):
                acc_a = np.float32(0.0)
                acc_z = np.float32(0.0)
                for j in range(n):
                    acc_a += sa[j] * vT[d, j]
                    acc_z += sz[j] * vT[d, j]
                y[b, i, q0 + d] = acc_a
                if two:
                    y[b, i + 1, q0 + d] = acc_z


@njit(parallel=True, fastmath=True, cache=True)
def backward(qkv, probs, dy, n_head, D, dqkv):
    """dqkv ← the gradient of ``forward``'s y with respect to qkv, given dy and the saved probs."""
    literally(D)
    B, T = qkv.shape[0], qkv.shape[1]
    scale = np.float32(1.0 / math.sqrt(D))
    for bh in prange(B * n_head):
        b, h, q0, k0, v0, kT, vT = head_of(qkv, bh, n_head, D)
        dkT = np.zeros((D, T), np.float32)
        dvT = np.zeros((D, T), np.float32)
        pa = np.empty(T, np.float32)
        pz = np.empty(T, np.float32)
        dpa = np.empty(T, np.float32)
        dpz = np.empty(T, np.float32)
        ga = np.empty(D, np.float32)
        gz = np.empty(D, np.float32)
        qa = np.empty(D, np.float32)
        qz = np.empty(D, np.float32)
        for i in range(0, T, 2):  # rows i and i+1 (a zero row after an odd T's last)
            two, n = row_pair(dy, b, i, q0, D, np.float32(1.0), ga, gz)
            row_pair(qkv, b, i, q0, D, scale, qa, qz)
            for j in range(i + 1):
                pa[j] = probs[b, h, i, j]
                pz[j] = probs[b, h, i + 1, j] if two else np.float32(0.0)
            if two:
                pa[i + 1] = 0.0
                pz[i + 1] = probs[b, h, i + 1, i + 1]
            dot_pair(ga, gz, vT, n, D, dpa, dpz)
            delta_a = np.float32(0.0)
            delta_z = np.float32(0.0)
            for j in range(n):
                delta_a += pa[j] * dpa[j]
                delta_z += pz[j] * dpz[j]
            for j in range(n):
                dpa[j] = pa[j] * (dpa[j] - delta_a)
                dpz[j] = pz[j] * (dpz[j] - delta_z)
            for d in range(D):
                g_a, g_z, q_a, q_z = ga[d], gz[d], qa[d], qz[d]
                acc_a = np.float32(0.0)
                acc_z = np.float32(0.0)
                for j in range(n):
                    dvT[d, j] += pa[j] * g_a + pz[j] * g_z
                    dkT[d, j] += dpa[j] * q_a + dpz[j] * q_z
                    acc_a += dpa[j] * kT[d, j]
                    acc_z += dpz[j] * kT[d, j]
                dqkv[b, i, q0 + d] = acc_a * scale
                if two:
                    dqkv[b, i + 1, q0 + d] = acc_z * scale
        for t in range(T):
            for d in range(D):
                dqkv[b, t, k0 + d] = dkT[d, t]
                dqkv[b, t, v0 + d] = dvT[d, t]


def specialised(D: int):
    """``forward`` and ``backward`` for heads of ``D`` dims, with D as a literal: numba compiles a
    kernel specialised to it and caches it on disk (one cache entry per D, keyed by the closure's
    D). Head dims outside HEAD_DIMS use SDPA (attention.py)."""

    @njit(cache=True)
    def forward_d(qkv, n_head, y, probs, save):
        forward(qkv, n_head, D, y, probs, save)

    @njit(cache=True)
    def backward_d(qkv, probs, dy, n_head, dqkv):
        backward(qkv, probs, dy, n_head, D, dqkv)

    return forward_d, backward_d


KERNELS = {D: specialised(D) for D in (8, 12, 16)}
HEAD_DIMS = tuple(KERNELS)
