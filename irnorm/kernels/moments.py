"""The one moments engine behind every mean/variance and L2 op.

Any reduction over a set of axes is first canonicalized to a contiguous
``(outer, reduce, inner)`` view (a transpose copy only when the axes cannot be
made contiguous).  For each (outer, inner) slice the kernel computes stable
moments with two passes accumulated in float64 (mean, then the sum of squared
deviations; no E[x^2]-E[x]^2 cancellation), turns them into ``shift`` and
``mult`` by the op's finalize rule, and applies

    y = (x - shift) * mult * scale[k] + bias[k]

in the compute dtype (float32, or float64 for f64 data).  The affine index is
``k = (o % o_mod) * nseg + r // seg_len``: one value per run of ``seg_len``
reduced elements, which covers per-channel group norm, per-group and
per-instance scale, and elementwise (seg_len=1) layer-norm scale.

Each slice is handled by one thread from start to end, so results do not depend
on the thread count.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

# finalize rules: how (var or sum of squares, eps) becomes the multiplier
INSIDE_SQRT = 0  # 1 / sqrt(var + eps)           (MVN inside_sqrt, GroupNorm, LayerNorm, BatchNorm-like)
OUTSIDE_SQRT = 1  # 1 / (sqrt(var) + eps)        (MVN-6 outside_sqrt)
CENTER_ONLY = 2  # 1                              (MVN normalize_variance=false)
L2_ADD = 3  # 1 / sqrt(sum x^2 + eps)   (NormalizeL2 add, no centering)
L2_MAX = 4  # 1 / sqrt(max(sum x^2, eps))  (NormalizeL2 max, no centering)

_LANES = 8  # independent partial sums: lets LLVM vectorize without reassociating


@njit(cache=True, inline="always")
def _finalize(m2: float, n: int, mode: int, eps: float) -> float:
    if mode == INSIDE_SQRT:
        return 1.0 / math.sqrt(m2 / n + eps)
    if mode == OUTSIDE_SQRT:
        return 1.0 / (math.sqrt(m2 / n) + eps)
    if mode == CENTER_ONLY:
        return 1.0
    if mode == L2_ADD:
        return 1.0 / math.sqrt(m2 + eps)
    return 1.0 / math.sqrt(max(m2, eps))


@njit(cache=True)
def _row_sum(row):
    n = row.shape[0]
    acc = np.zeros(_LANES, np.float64)
    nb = n - n % _LANES
    for i in range(0, nb, _LANES):
        for j in range(_LANES):
            acc[j] += row[i + j]
    s = 0.0
    for j in range(_LANES):
        s += acc[j]
    for i in range(nb, n):
        s += row[i]
    return s


@njit(cache=True)
def _row_sqdev(row, mean):
    n = row.shape[0]
    acc = np.zeros(_LANES, np.float64)
    nb = n - n % _LANES
    for i in range(0, nb, _LANES):
        for j in range(_LANES):
            d = row[i + j] - mean
            acc[j] += d * d
    s = 0.0
    for j in range(_LANES):
        s += acc[j]
    for i in range(nb, n):
        d = row[i] - mean
        s += d * d
    return s


@njit(cache=True)
def _apply_row(row, out, shift, mult, scale, bias, base, nseg, seg_len):
    t = row.dtype.type
    sh = t(shift)
    mu = t(mult)
    if seg_len == 1:
        sc = scale[base: base + nseg]
        bi = bias[base: base + nseg]
        for r in range(row.shape[0]):
            out[r] = (row[r] - sh) * mu * sc[r] + bi[r]
    else:
        for k in range(nseg):
            m = mu * scale[base + k]
            b = bias[base + k]
            xs = row[k * seg_len: (k + 1) * seg_len]
            ys = out[k * seg_len: (k + 1) * seg_len]
            for r in range(seg_len):
                ys[r] = (xs[r] - sh) * m + b


@njit(parallel=True, cache=True)
def normalize_rows(x, out, center, mode, eps, scale, bias, o_mod, nseg, seg_len, shift_out, mult_out):
    """inner == 1: x and out are (outer, reduce) C-contiguous."""
    outer, red = x.shape
    for o in prange(outer):
        row = x[o]
        shift = 0.0
        if center:
            shift = _row_sum(row) / red
        m2 = _row_sqdev(row, shift)
        mult = _finalize(m2, red, mode, eps)
        shift_out[o] = shift
        mult_out[o] = mult
        _apply_row(row, out[o], shift, mult, scale, bias, (o % o_mod) * nseg, nseg, seg_len)


@njit(parallel=True, cache=True)
def normalize_strided(x, out, center, mode, eps, scale, bias, o_mod, nseg, seg_len, block, shift_out,
                      mult_out):
    """inner > 1: x and out are (outer, reduce, inner) C-contiguous; statistics per (outer, inner).

    Work is split into (outer, inner-block) tasks of a fixed block size, so the
    arithmetic for any element is the same whatever the thread count."""
    outer, red, inner = x.shape
    nblk = (inner + block - 1) // block
    for task in prange(outer * nblk):
        o = task // nblk
        b0 = (task % nblk) * block
        b1 = min(b0 + block, inner)
        w = b1 - b0
        xs = x[o, :, b0:b1]
        ys = out[o, :, b0:b1]
        mean = np.zeros(w, np.float64)
        if center:
            for r in range(red):
                xr = xs[r]
                for i in range(w):
                    mean[i] += xr[i]
            for i in range(w):
                mean[i] /= red
        m2 = np.zeros(w, np.float64)
        for r in range(red):
            xr = xs[r]
            for i in range(w):
                d = xr[i] - mean[i]
                m2[i] += d * d
        t = x.dtype.type
        sh = np.empty(w, x.dtype)
        mu = np.empty(w, x.dtype)
        for i in range(w):
            mlt = _finalize(m2[i], red, mode, eps)
            shift_out[o, b0 + i] = mean[i]
            mult_out[o, b0 + i] = mlt
            sh[i] = t(mean[i])
            mu[i] = t(mlt)
        base = (o % o_mod) * nseg
        for r in range(red):
            k = base + r // seg_len
            s = scale[k]
            bb = bias[k]
            xr = xs[r]
            yr = ys[r]
            for i in range(w):
                yr[i] = (xr[i] - sh[i]) * mu[i] * s + bb


# ---- Python side: canonicalization and dispatch -----------------------------------

COMPUTE_DTYPES = {np.dtype(np.float32), np.dtype(np.float64)}
_STRIDED_BLOCK = 512


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """float64 stays float64; every other float (f32, f16, bf16) computes in float32."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


def canonical_layout(shape: tuple[int, ...], axes: list[int]) -> tuple[list[int] | None, int, int, int]:
    """Return (perm, outer, reduce, inner).  perm is None when the reduced axes are
    contiguous once size-1 dims are ignored; otherwise the transpose that moves the
    reduced axes last (then inner == 1)."""
    rank = len(shape)
    ax = sorted(set(axes))
    red = 1
    for a in ax:
        red *= shape[a]
    total = 1
    for d in shape:
        total *= d
    if not ax:
        return None, total, 1, 1
    lo, hi = ax[0], ax[-1]
    gaps = [a for a in range(lo, hi + 1) if a not in ax and shape[a] != 1]
    if not gaps:
        outer = 1
        for d in shape[:lo]:
            outer *= d
        inner = 1
        for d in shape[hi + 1:]:
            inner *= d
        return None, outer, red, inner
    keep = [a for a in range(rank) if a not in ax]
    return keep + ax, total // red if red else 0, red, 1


def normalize(
    x: np.ndarray,
    axes: list[int],
    mode: int,
    eps: float,
    *,
    center: bool = True,
    scale: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    o_mod: int = 1,
    seg_len: int | None = None,
    out_dtype: np.dtype | None = None,
    want_stats: bool = False,
):
    """Normalize `x` over `axes` (already non-negative).  `scale`/`bias` are 1-D in
    the affine layout described in the module docstring (``seg_len`` defaults to the
    whole reduced extent: one value per (o % o_mod)).

    Returns y (and, with want_stats, the (outer, inner) float64 shift and mult arrays).
    """
    out_dtype = np.dtype(out_dtype or x.dtype)
    cdt = compute_dtype(x.dtype)
    perm, outer, red, inner = canonical_layout(x.shape, axes)
    if seg_len is None:
        seg_len = red
    nseg = red // seg_len if seg_len else 1
    if scale is None:
        scale = np.ones(max(o_mod * nseg, 1), cdt)
    if bias is None:
        bias = np.zeros(max(o_mod * nseg, 1), cdt)
    scale = np.ascontiguousarray(scale, dtype=cdt).reshape(-1)
    bias = np.ascontiguousarray(bias, dtype=cdt).reshape(-1)
    shift_out = np.zeros((outer, inner), np.float64)
    mult_out = np.zeros((outer, inner), np.float64)
    if x.size == 0:
        y = np.empty(x.shape, out_dtype)
        return (y, shift_out, mult_out) if want_stats else y
    xc = x.transpose(perm) if perm is not None else x
    xc = np.ascontiguousarray(xc, dtype=cdt)
    y = np.empty(xc.shape, cdt)
    if inner == 1:
        normalize_rows(xc.reshape(outer, red), y.reshape(outer, red), center, mode, eps, scale, bias,
                       o_mod, nseg, seg_len, shift_out.reshape(outer), mult_out.reshape(outer))
    else:
        normalize_strided(xc.reshape(outer, red, inner), y.reshape(outer, red, inner), center, mode, eps, scale,
                          bias, o_mod, nseg, seg_len, _STRIDED_BLOCK, shift_out, mult_out)
    if perm is not None:
        y = y.transpose(np.argsort(perm))
    if y.dtype != out_dtype or not y.flags.c_contiguous:
        y = np.ascontiguousarray(y).astype(out_dtype, copy=False)
    return (y, shift_out, mult_out) if want_stats else y
