"""The numba kernels of ``attention.TinyHeadAttention`` (imported only when that backend runs).

The (batch, head) tiles run in a ``prange`` on a one-thread pool (``attention.numba_error``):
numba's parallel lowering gives these loops code about 1.5× faster than its serial one.

Compiled on first use and cached on disk (numba's cache: beside this file, or NUMBA_CACHE_DIR).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

# exp(x) for x ≤ 0 as Cephes' expf computes it: x = n·ln2 + r, |r| ≤ ln2/2, e^r by a degree-5
# polynomial, 2^n by writing n + 127 into a float's exponent bits. Relative error < 3e-7 (float32
# rounding), and unlike libm's expf the loop vectorises: the forward's exponentials cost a fifth.
LOG2E = np.float32(1.4426950408889634)
LN2_HI, LN2_LO = np.float32(0.693359375), np.float32(-2.12194440e-4)
EXP_C = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
         5.0000001201e-1)  # fmt: skip
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
def dims(qkv, n_head):
    """(B, T, C, head dim D, 1/√D) of a fused (B, T, 3C) q/k/v tensor with ``n_head`` heads."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    D = C // n_head
    return B, T, C, D, np.float32(1.0 / math.sqrt(D))


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


@njit(parallel=True, fastmath=True, cache=True)
def forward(qkv, n_head, y, probs, save):
    """y ← causal softmax(q·kᵀ/√D)·v per (batch, head); probs[b, h, i, :i+1] ← row i's
    probabilities when ``save``."""
    B, T, C, D, scale = dims(qkv, n_head)
    for bh in prange(B * n_head):
        b, h = bh // n_head, bh % n_head
        q0, k0, v0 = h * D, C + h * D, 2 * C + h * D
        kT, vT = keys_values(qkv, b, k0, v0, D)
        s = np.empty(T, np.float32)
        bits = np.empty(T, np.int32)
        for i in range(T):
            n = i + 1
            for j in range(n):
                s[j] = 0.0
            for d in range(D):
                qd = qkv[b, i, q0 + d] * scale
                for j in range(n):
                    s[j] += qd * kT[d, j]
            m = s[0]
            for j in range(1, n):
                m = max(m, s[j])
            for j in range(n):
                s[j] -= m
            exp_nonpositive(s, n, bits)
            total = np.float32(0.0)
            for j in range(n):
                total += s[j]
            inv = np.float32(1.0) / total
            for j in range(n):
                s[j] *= inv
            if save:
                for j in range(n):
                    probs[b, h, i, j] = s[j]
            for d in range(D):
                acc = np.float32(0.0)
                for j in range(n):
                    acc += s[j] * vT[d, j]
                y[b, i, q0 + d] = acc


@njit(parallel=True, fastmath=True, cache=True)
def backward(qkv, probs, dy, n_head, dqkv):
    """dqkv ← the gradient of ``forward``'s y with respect to qkv, given dy and the saved probs."""
    B, T, C, D, scale = dims(qkv, n_head)
    for bh in prange(B * n_head):
        b, h = bh // n_head, bh % n_head
        q0, k0, v0 = h * D, C + h * D, 2 * C + h * D
        kT, vT = keys_values(qkv, b, k0, v0, D)
        dkT = np.zeros((D, T), np.float32)
        dvT = np.zeros((D, T), np.float32)
        dp = np.empty(T, np.float32)
        for i in range(T):
            n = i + 1
            for j in range(n):
                dp[j] = 0.0
            for d in range(D):
                g = dy[b, i, q0 + d]
                for j in range(n):
                    dvT[d, j] += probs[b, h, i, j] * g
                    dp[j] += g * vT[d, j]
            delta = np.float32(0.0)
            for j in range(n):
                delta += probs[b, h, i, j] * dp[j]
            for j in range(n):
                dp[j] = probs[b, h, i, j] * (dp[j] - delta)
            for d in range(D):
                acc = np.float32(0.0)
                for j in range(n):
                    acc += dp[j] * kT[d, j]
                dqkv[b, i, q0 + d] = acc * scale
                g = qkv[b, i, q0 + d] * scale
                for j in range(n):
                    dkT[d, j] += dp[j] * g
        for t in range(T):
            for d in range(D):
                dqkv[b, t, k0 + d] = dkT[d, t]
                dqkv[b, t, v0 + d] = dvT[d, t]
