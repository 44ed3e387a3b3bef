"""Pillow-style separable resampling (Interpolate-11's bilinear_pillow and bicubic_pillow): one pass per
resized axis, each a weighted sum of a contiguous run of input rows with weights tabulated per output
index (irnorm/ops/interpolate.py builds the tables: ``first[j]``, ``count[j]`` and ``weights[j, :count[j]]``).

The data is viewed as ``[outer, n, inner]`` around the resized axis; a pass writes ``[outer, m, inner]``.
Arithmetic is float64 (data, weights and sums); ``integral`` rounds each sum half away from zero and clamps
it to ``[low, high]`` (the integer type's range), as OpenVINO's reference does after every pass.  The
tables are checked by the caller (``0 <= first[j]``, ``first[j] + count[j] <= n``, ``count[j] <=
weights.shape[1]``), so every read is inside the data.  The parallel tasks are output rows ``(o, j)``.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import njit, prange


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _row(t, x, out, first, count, weights, integral, low, high):
    m = out.shape[1]
    inner = out.shape[2]
    o = t // m
    j = t - o * m
    s = first[j]
    dst = out[o, j]
    if inner == 1:  # the last axis: one dot product per output element
        acc = 0.0
        for k in range(count[j]):
            acc += weights[j, k] * x[o, s + k, 0]
        dst[0] = acc
    else:
        dst[:] = 0.0
        for k in range(count[j]):
            w = weights[j, k]
            src = x[o, s + k]
            for i in range(inner):
                dst[i] += w * src[i]
    if integral:
        for i in range(inner):
            v = dst[i]
            v = math.trunc(v + 0.5) if v >= 0.0 else math.trunc(v - 0.5)
            dst[i] = min(max(v, low), high)


@njit(nogil=True, parallel=True, error_model="numpy", cache=True)
def _pass_parallel(x, out, first, count, weights, integral, low, high):
    for t in prange(out.shape[0] * out.shape[1]):
        _row(t, x, out, first, count, weights, integral, low, high)


@njit(nogil=True, error_model="numpy", cache=True)
def _pass_serial(x, out, first, count, weights, integral, low, high):
    for t in range(out.shape[0] * out.shape[1]):
        _row(t, x, out, first, count, weights, integral, low, high)


def resample_axis(x: np.ndarray, first: np.ndarray, count: np.ndarray, weights: np.ndarray,
                  integral: bool, low: float, high: float) -> np.ndarray:
    """One pass: x [outer, n, inner] float64 (C-contiguous) -> [outer, m, inner] float64, m = len(first)."""
    from . import PARALLEL_MIN

    outer, _, inner = x.shape
    m = first.shape[0]
    out = np.empty((outer, m, inner), np.float64)
    if out.size == 0:
        return out
    work = out.size * max(int(weights.shape[1]), 1)
    fn = _pass_parallel if work >= PARALLEL_MIN and outer * m > 1 else _pass_serial
    fn(x, out, first, count, weights, bool(integral), float(low), float(high))
    return out
