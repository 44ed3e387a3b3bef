"""LRN kernel: a box sum of squares over any set of axes, then the LRN formula.

OpenVINO's reference window along each axis is [i - (size-1)//2, i + (size-1)//2],
clipped to the tensor (even sizes cover size-1 elements).  A box is a product of
1-D windows, so the sum is separable: square once, then apply a 1-D window sum
along each axis in turn.  Each window is summed directly (no running sum), in
float64, so an inf or NaN stays local to the windows that contain it.

Then y = x / (bias + alpha / size**len(axes) * S) ** beta, in float64, returned in
the requested dtype.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import njit, prange
from .pool import OUTPUTS

_BLOCK = 256  # inner elements per task: a fixed split, so results do not depend on the thread count


@njit(nogil=True, parallel=True, cache=True)
def square(x, out):
    """out = float64(x)**2, both 1-D of the same length."""
    for i in prange(x.shape[0]):
        v = np.float64(x[i])
        out[i] = v * v


@njit(nogil=True, parallel=True, cache=True)
def window_sum_axis(src, dst, half):
    """dst[o, i, j] = sum of src[o, k, j] for k in [i-half, i+half] clipped to [0, n-1].
    src, dst: (outer, n, inner) float64, C-contiguous."""
    outer, n, inner = src.shape
    nblk = (inner + _BLOCK - 1) // _BLOCK
    for task in prange(outer * nblk):
        o = task // nblk
        j0 = (task % nblk) * _BLOCK
        j1 = min(j0 + _BLOCK, inner)
        for i in range(n):
            lo = max(0, i - half)
            hi = min(n - 1, i + half)
            d = dst[o, i, j0:j1]
            for j in range(j1 - j0):
                d[j] = 0.0
            for k in range(lo, hi + 1):
                s = src[o, k, j0:j1]
                for j in range(j1 - j0):
                    d[j] += s[j]


@njit(nogil=True, parallel=True, cache=True, error_model="numpy")
def lrn_finalize(x, s, out, bias, scale, beta):
    """out = x / (bias + scale * s) ** beta; x, out 1-D in their dtypes, s float64.
    beta 0.75 (the usual value), 0.5 and 1 take sqrt-based loops that vectorize; pow otherwise.
    A zero denominator gives inf/NaN, as in numpy."""
    n = x.shape[0]
    nblk = (n + 4095) // 4096
    for b in prange(nblk):
        lo = b * 4096
        hi = min(lo + 4096, n)
        if beta == 0.75:
            for i in range(lo, hi):
                r = math.sqrt(bias + scale * s[i])
                out[i] = np.float64(x[i]) / (r * math.sqrt(r))
        elif beta == 0.5:
            for i in range(lo, hi):
                out[i] = np.float64(x[i]) / math.sqrt(bias + scale * s[i])
        elif beta == 1.0:
            for i in range(lo, hi):
                out[i] = np.float64(x[i]) / (bias + scale * s[i])
        else:
            for i in range(lo, hi):
                out[i] = np.float64(x[i]) / (bias + scale * s[i]) ** beta


def lrn(x: np.ndarray, axes: list[int], alpha: float, beta: float, bias: float, size: int,
        out_dtype: np.dtype | None = None) -> np.ndarray:
    """LRN over non-negative, unique ``axes`` (empty: each element's own square).
    Returns a fresh array of ``out_dtype`` (default x's dtype)."""
    out_dtype = np.dtype(out_dtype or x.dtype)
    if x.size == 0:
        return np.empty(x.shape, out_dtype)
    kdt = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float32)  # numba has no f16/bf16
    xf = np.ascontiguousarray(x, dtype=kdt).reshape(-1)
    s = np.empty(x.size, np.float64)
    square(xf, s)
    half = (size - 1) // 2
    if half > 0:
        tmp = np.empty_like(s)
        for ax in sorted(axes):
            n = x.shape[ax]
            if n == 1:
                continue
            outer = int(np.prod(x.shape[:ax], dtype=np.int64))
            inner = int(np.prod(x.shape[ax + 1:], dtype=np.int64))
            window_sum_axis(s.reshape(outer, n, inner), tmp.reshape(outer, n, inner), half)
            s, tmp = tmp, s
    y = OUTPUTS.empty((x.size,), kdt)
    lrn_finalize(xf, s, y, float(bias), float(alpha) / float(size) ** len(axes), float(beta))
    return y.reshape(x.shape).astype(out_dtype, copy=False)
