"""Numba kernels for ReduceSum / ReduceMean / ReduceL2 / ReduceMax: one float64 accumulator per
output element (sum, sum of squares, or maximum).

The reduced axes are canonicalized with the moments engine's ``canonical_layout`` into an
``(outer, reduce, inner)`` view (a transpose copy only when the axes cannot be made contiguous).
Rows (inner == 1) accumulate in eight independent lanes so LLVM can vectorize; the strided case
accumulates a block of inner positions at once.  Each output element is computed by one thread
from start to end, so results do not depend on the thread count.  This is not a mean/variance
kernel: normalization ops use ``irnorm.kernels.moments``.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import compute_dtype
from . import PARALLEL_MIN
from .elementwise import f16_to_f32
from .jit import c_array, entry, njit, prange
from .moments import canonical_layout
from .opcodes import REDUCE_MAX, REDUCE_SUM, REDUCE_SUMSQ

_LANES = 8
_STRIDED_BLOCK = 512


@njit(nogil=True, cache=True, inline="always")
def _row(code, x, o):
    """Row o of x [rows, n] reduced into a float64 accumulator.  Inlined into the row loops and indexed as
    x[o, i], not through a view x[o]: a call and a view per row cost more than summing a squeeze-excite
    row of 4 ([288, 4] 7.5 -> 2.6 us, [1000, 49] 46 -> 25 us, AVX2 EPYC)."""
    n = x.shape[1]
    nb = n - n % _LANES
    if code == REDUCE_MAX:
        m = np.float64(x[o, 0])
        for i in range(n):
            v = np.float64(x[o, i])
            if v > m or v != v:
                m = v
                if v != v:
                    break
        return m
    # _LANES (8) float64 partial sums, lane j taking elements i + j; scalars rather than an array: an
    # np.zeros per row is a heap allocation, which cost more than summing a squeeze-excite row of 16
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    s = 0.0
    sq = code != REDUCE_SUM
    for i in range(0, nb, _LANES):
        v0, v1, v2, v3 = np.float64(x[o, i]), np.float64(x[o, i + 1]), np.float64(x[o, i + 2]), np.float64(x[o, i + 3])
        v4, v5, v6, v7 = (np.float64(x[o, i + 4]), np.float64(x[o, i + 5]), np.float64(x[o, i + 6]),
                          np.float64(x[o, i + 7]))
        if sq:
            v0, v1, v2, v3, v4, v5, v6, v7 = v0 * v0, v1 * v1, v2 * v2, v3 * v3, v4 * v4, v5 * v5, v6 * v6, v7 * v7
        a0 += v0
        a1 += v1
        a2 += v2
        a3 += v3
        a4 += v4
        a5 += v5
        a6 += v6
        a7 += v7
    for i in range(nb, n):
        v = np.float64(x[o, i])
        s += v * v if sq else v
    return s + a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7


@njit(nogil=True, cache=True)
def _strided_task(code, x, out, task, nblk, block):
    outer, red, inner = x.shape
    o = task // nblk
    b0 = (task % nblk) * block
    b1 = min(b0 + block, inner)
    w = b1 - b0
    acc = np.empty(w, np.float64)
    x0 = x[o, 0]
    for i in range(w):
        v = np.float64(x0[b0 + i])
        acc[i] = v * v if code == REDUCE_SUMSQ else v
    for r in range(1, red):
        xr = x[o, r]
        if code == REDUCE_SUM:
            for i in range(w):
                acc[i] += xr[b0 + i]
        elif code == REDUCE_SUMSQ:
            for i in range(w):
                v = np.float64(xr[b0 + i])
                acc[i] += v * v
        else:
            for i in range(w):
                v = np.float64(xr[b0 + i])
                a = acc[i]
                if v > a or (v != v and a == a):
                    acc[i] = v
    for i in range(w):
        out[o, b0 + i] = acc[i]


@njit(nogil=True, parallel=True, cache=True)
def reduce_rows(code, x, out):
    """x: (outer, reduce) C-contiguous, reduce >= 1; out: float64 (outer,)."""
    for o in prange(x.shape[0]):
        out[o] = _row(code, x, o)


@njit(nogil=True, cache=True)
def reduce_rows_serial(code, x, out):
    for o in range(x.shape[0]):
        out[o] = _row(code, x, o)


@njit(nogil=True, parallel=True, cache=True)
def reduce_strided(code, x, out, block):
    """x: (outer, reduce, inner) C-contiguous, reduce >= 1; out: float64 (outer, inner)."""
    nblk = (x.shape[2] + block - 1) // block
    for task in prange(x.shape[0] * nblk):
        _strided_task(code, x, out, task, nblk, block)


@njit(nogil=True, cache=True)
def reduce_strided_serial(code, x, out, block):
    nblk = (x.shape[2] + block - 1) // block
    for task in range(x.shape[0] * nblk):
        _strided_task(code, x, out, task, nblk, block)


@njit(nogil=True, cache=True, error_model="numpy")
def _rows_to(code, x, out, divisor, root):
    """out[o] = the row's float64 accumulator / divisor (then its square root when `root`), stored in
    out's type -- the same operations, in the same order, as reduce() followed by the op's division,
    square root and cast."""
    for o in range(x.shape[0]):
        acc = _row(code, x, o) / divisor
        out[o] = np.sqrt(acc) if root else acc


def small_rows(code: int, shape: tuple[int, ...], dtype: np.dtype, axes: tuple[int, ...], divisor: float,
               root: bool, out_shape: tuple[int, ...]):
    """For a small f32/f64 input reduced over its trailing axes (a global pool, a squeeze-excite
    block): one call from the C-contiguous input to the output in its own type, or None when the
    general path must run.  Decided once per (shape, dtype, axes); the op remembers the answer."""
    perm, outer, red, inner = canonical_layout(shape, list(axes))
    if (dtype not in (np.float32, np.float64) or perm is not None or inner != 1 or red < 1 or outer < 1
            or outer * red >= PARALLEL_MIN):
        return None
    rows_shape = (outer, red)
    rows_to = entry(_rows_to, code, c_array(2, dtype), c_array(1, dtype), divisor, root)

    def run(x: np.ndarray) -> np.ndarray | None:
        if not x.flags.c_contiguous:
            return None
        out = np.empty(out_shape, dtype)
        rows_to(code, x.reshape(rows_shape), out.reshape(outer), divisor, root)
        return out

    return run


def reduce(code: int, x: np.ndarray, axes: list[int]) -> np.ndarray:
    """Reduce float `x` over non-empty, sorted, unique `axes` (at least one element reduced);
    returns the float64 accumulators in the keep_dims=False shape."""
    out_shape = tuple(d for k, d in enumerate(x.shape) if k not in axes)
    perm, outer, red, inner = canonical_layout(x.shape, axes)
    cdt = compute_dtype(x.dtype)
    if x.dtype == np.float16 and x.size >= PARALLEL_MIN:
        x = f16_to_f32(x)  # several times faster than numpy's conversion
    xc = x.transpose(perm) if perm is not None else x
    xc = np.ascontiguousarray(xc, dtype=cdt)
    out = np.empty(outer * inner, np.float64)
    if out.size == 0:
        return out.reshape(out_shape)
    small = xc.size < PARALLEL_MIN or outer * inner == 1
    if inner == 1:
        (reduce_rows_serial if small else reduce_rows)(code, xc.reshape(outer, red), out)
    else:
        (reduce_strided_serial if small else reduce_strided)(code, xc.reshape(outer, red, inner),
                                                             out.reshape(outer, inner), _STRIDED_BLOCK)
    return out.reshape(out_shape)
