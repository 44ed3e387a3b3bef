"""TensorRT IScaleLayer kernel: ``y = (x * scale[k] + shift[k]) ** power[k]``.

``x`` is viewed flat as ``(outer, K, inner)`` and coefficient ``k`` addresses the middle dim:
uniform is K=1 (inner = everything), channel is K = x.shape[channel_axis], elementwise is
K = prod(x.shape[channel_axis:]) with inner=1.  The flat array is cut into fixed-size chunks (one
task each, so results do not depend on the thread count); inside a chunk ``k`` advances with
counters instead of a division per element.

Arithmetic is float32, like TensorRT (x is read as float32, coefficients are float32 arrays); a
mode flag gives fast paths for power == 1 (no pow) and power == 2 (a square).  With ``sat`` the
result is rounded half to even and saturated to [-128, 127] (int8 output; NaN becomes 0).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

POW_ONE = 0  # every power is 1: no pow at all
POW_TWO = 1  # every power is 2: v * v
POW_ANY = 2  # per-coefficient power, still skipping pow for 1 and 2

_CHUNK = 16384


@njit(cache=True, inline="always")
def _power(v, p):
    if p == 1.0:
        return v
    if p == 2.0:
        return v * v
    return v ** p


@njit(cache=True, inline="always")
def _round_sat(v):
    if v != v:
        return 0.0
    r = np.rint(np.float64(v))
    if r > 127.0:
        return 127.0
    if r < -128.0:
        return -128.0
    return r


@njit(parallel=True, cache=True)
def scale_flat(x, out, scale, shift, power, k_count, inner, pmode, sat):
    """x, out: 1-D C-contiguous of the same length; scale/shift/power: float32 (k_count,)."""
    n = x.shape[0]
    nchunk = (n + _CHUNK - 1) // _CHUNK
    for c in prange(nchunk):
        i0 = c * _CHUNK
        i1 = min(i0 + _CHUNK, n)
        row = i0 // inner
        k = row % k_count
        j = i0 - row * inner
        for i in range(i0, i1):
            v = np.float32(x[i]) * scale[k] + shift[k]
            if pmode == POW_TWO:
                v = v * v
            elif pmode == POW_ANY:
                v = _power(v, power[k])
            if sat:
                out[i] = _round_sat(v)
            else:
                out[i] = v
            j += 1
            if j == inner:
                j = 0
                k += 1
                if k == k_count:
                    k = 0


def power_mode(power: np.ndarray) -> int:
    if power.size == 0 or np.all(power == 1):
        return POW_ONE
    if np.all(power == 2):
        return POW_TWO
    return POW_ANY


def scale(x: np.ndarray, scale_c: np.ndarray, shift_c: np.ndarray, power_c: np.ndarray, k_count: int, inner: int,
          out_dtype: np.dtype) -> np.ndarray:
    """Apply the layer to `x` with coefficient arrays of length k_count (float32).  int8 output
    rounds half to even and saturates; f16/bf16 output is computed in float32 and rounded once."""
    out_dtype = np.dtype(out_dtype)
    xs = x if x.dtype in (np.float32, np.int8) else x.astype(np.float32)
    xs = np.ascontiguousarray(xs).reshape(-1)
    sat = out_dtype == np.int8
    out = np.empty(xs.shape, np.int8 if sat else np.float32)
    if xs.size:
        scale_flat(xs, out, scale_c, shift_c, power_c, max(k_count, 1), max(inner, 1), power_mode(power_c), sat)
    out = out.reshape(x.shape)
    return out if out.dtype == out_dtype else out.astype(out_dtype)
