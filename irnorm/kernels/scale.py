"""TensorRT IScaleLayer kernel: ``y = (x * scale[k] + shift[k]) ** power[k]``.

``x`` is viewed flat as ``(outer, K, inner)`` and coefficient ``k`` addresses the middle dim:
uniform is K=1 (inner = everything), channel is K = x.shape[channel_axis], elementwise is
K = prod(x.shape[channel_axis:]) with inner=1.  With inner > 1 the flat array is cut into
fixed-size chunks (one parallel task each) and each chunk into runs of one coefficient; with
inner == 1 each row of K elements meets the coefficient vectors directly.  Every element is
computed the same way whatever the thread count.

Arithmetic is float32, like TensorRT (x is read as float32, coefficients are float32 arrays); a
mode flag gives fast paths for power == 1 (no pow) and power == 2 (a square).  With ``sat`` the
result is rounded half to even and saturated to [-128, 127] (int8 output; NaN becomes 0).
"""

from __future__ import annotations

import numpy as np

from . import pool
from .elementwise import power
from .jit import njit, prange

POW_ONE = 0  # every power is 1: no pow at all
POW_TWO = 1  # every power is 2: v * v
POW_ANY = 2  # per-coefficient power, still skipping pow for 1 and 2

_CHUNK = 16384


_power = power  # the one constant-exponent power (kernels/elementwise.py): 2, 0.5, -0.5, small integers, ...


@njit(nogil=True, cache=True, inline="always")
def _round_sat(v):
    if v != v:
        return 0.0
    r = np.rint(np.float64(v))
    if r > 127.0:
        return 127.0
    if r < -128.0:
        return -128.0
    return r


@njit(nogil=True, cache=True, inline="always")
def _span(x, out, i0, i1, a, b, p, pmode, sat):
    """out[i] = (x[i] * a + b) ** p for i in [i0, i1), one coefficient triple.  The span is sliced
    first and indexed from 0, so Numba can drop wraparound checks and vectorize; branches are
    hoisted out of the loops."""
    xs = x[i0:i1]
    ys = out[i0:i1]
    n = i1 - i0
    if sat:
        for j in range(n):
            v = np.float32(xs[j]) * a + b
            if pmode != POW_ONE:
                v = _power(v, p)
            ys[j] = _round_sat(v)
    elif pmode == POW_ONE or p == 1.0:
        for j in range(n):
            ys[j] = np.float32(xs[j]) * a + b
    elif p == 2.0:
        for j in range(n):
            v = np.float32(xs[j]) * a + b
            ys[j] = v * v
    elif a == 1.0 and b == 0.0:  # a lone Power: x * 1 + 0 would turn -0 into +0
        for j in range(n):
            ys[j] = _power(np.float32(xs[j]), p)
    else:
        for j in range(n):
            ys[j] = _power(np.float32(xs[j]) * a + b, p)


@njit(nogil=True, parallel=True, cache=True)
def scale_segments(x, out, scale, shift, power, k_count, inner, pmode, sat):
    """inner > 1: x, out 1-D (outer * k_count * inner); coefficient k is constant over runs of
    `inner` elements.  Fixed chunks of the flat array are the parallel tasks."""
    n = x.shape[0]
    nchunk = (n + _CHUNK - 1) // _CHUNK
    for c in prange(nchunk):
        i = c * _CHUNK
        i1 = min(i + _CHUNK, n)
        while i < i1:
            row = i // inner
            k = row % k_count
            end = min((row + 1) * inner, i1)
            _span(x, out, i, end, scale[k], shift[k], power[k], pmode, sat)
            i = end


@njit(nogil=True, parallel=True, cache=True)
def scale_rows(x, out, scale, shift, power, pmode, sat):
    """inner == 1: x, out (outer, K); coefficient k is the column."""
    outer, k_count = x.shape
    for o in prange(outer):
        xr = x[o]
        yr = out[o]
        if sat:
            for k in range(k_count):
                v = np.float32(xr[k]) * scale[k] + shift[k]
                if pmode != POW_ONE:
                    v = _power(v, power[k])
                yr[k] = _round_sat(v)
        elif pmode == POW_ONE:
            for k in range(k_count):
                yr[k] = np.float32(xr[k]) * scale[k] + shift[k]
        elif pmode == POW_TWO:
            for k in range(k_count):
                v = np.float32(xr[k]) * scale[k] + shift[k]
                yr[k] = v * v
        else:
            for k in range(k_count):
                v = np.float32(xr[k])
                if scale[k] != 1.0 or shift[k] != 0.0:  # x * 1 + 0 would turn -0 into +0
                    v = v * scale[k] + shift[k]
                yr[k] = _power(v, power[k])


def power_mode(power: np.ndarray) -> int:
    if power.size == 0 or np.all(power == 1):
        return POW_ONE
    if np.all(power == 2):
        return POW_TWO
    return POW_ANY


def scale(x: np.ndarray, scale_c: np.ndarray, shift_c: np.ndarray, power_c: np.ndarray, k_count: int, inner: int,
          out_dtype: np.dtype, pmode: int | None = None) -> np.ndarray:
    """Apply the layer to `x` with coefficient arrays of length k_count (float32).  int8 output
    rounds half to even and saturates; f16/bf16 output is computed in float32 and rounded once.
    `pmode` is power_mode(power_c), when the caller has it already."""
    out_dtype = np.dtype(out_dtype)
    xs = x if x.dtype in (np.float32, np.int8) else x.astype(np.float32)
    xs = np.ascontiguousarray(xs).reshape(-1)
    sat = out_dtype == np.int8
    # large outputs come from the recycling pool (no page faults on reuse; never a held array)
    out = pool.OUTPUTS.empty(xs.shape, np.int8 if sat else np.float32)
    if xs.size:
        if pmode is None:
            pmode = power_mode(power_c)
        if pmode == POW_ONE and not sat and not np.any(scale_c != 1) and not np.any(shift_c != 0):
            out[:] = xs  # the identity (a Power by 1): x * 1 + 0 would turn -0 into +0
        elif inner == 1 and k_count > 1:
            scale_rows(xs.reshape(-1, k_count), out.reshape(-1, k_count), scale_c, shift_c, power_c, pmode, sat)
        else:
            scale_segments(xs, out, scale_c, shift_c, power_c, max(k_count, 1), max(inner, 1), pmode, sat)
    out = out.reshape(x.shape)
    return out if out.dtype == out_dtype else out.astype(out_dtype)
