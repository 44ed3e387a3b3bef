"""Softmax and log-softmax along the last axis of a 2-D row view, numerically stable (the row's
maximum subtracted first), in float32 (float64 for f64 data); one parallel task per block of rows
when the data is large enough."""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from . import PARALLEL_MIN


@njit(nogil=True, cache=True, inline="always", fastmath={"reassoc", "contract"}, error_model="numpy")
def _row(x, out, r, log):
    n = x.shape[1]
    m = -np.inf
    for j in range(n):
        if x[r, j] > m:
            m = x[r, j]
    if m == -np.inf or m != m:  # all -inf (a fully masked row) or NaN: let NaN arise as in the formula
        m = 0.0 if m == -np.inf else m
    s = 0.0
    for j in range(n):
        e = math.exp(x[r, j] - m)
        out[r, j] = e
        s += e
    if log:
        ls = math.log(s) + m
        for j in range(n):
            out[r, j] = x[r, j] - ls
    else:
        inv = 1.0 / s
        for j in range(n):
            out[r, j] *= inv


@njit(nogil=True, cache=True, error_model="numpy")
def _rows_serial(x, out, log):
    for r in range(x.shape[0]):
        _row(x, out, r, log)


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def _rows_parallel(x, out, log):
    for r in prange(x.shape[0]):
        _row(x, out, r, log)


def softmax_rows(x: np.ndarray, log: bool = False) -> np.ndarray:
    """Softmax (or log-softmax) of each row of a C-contiguous 2-D float32/float64 array (a new array)."""
    out = np.empty_like(x)
    if x.size:
        (_rows_parallel if x.size >= PARALLEL_MIN and x.shape[0] > 1 else _rows_serial)(x, out, log)
    return out


def softmax(x: np.ndarray, axis: int, cdt: np.dtype, log: bool = False) -> np.ndarray:
    """Softmax along `axis` of any-rank data, computed in `cdt` (returns cdt)."""
    xc = np.asarray(x, dtype=cdt)
    last = axis == xc.ndim - 1
    moved = xc if last else np.moveaxis(xc, axis, -1)
    rows = np.ascontiguousarray(moved).reshape(-1, moved.shape[-1]) if moved.ndim else moved.reshape(1, 1)
    y = softmax_rows(rows, log).reshape(moved.shape)
    return y if last else np.moveaxis(y, -1, axis)
