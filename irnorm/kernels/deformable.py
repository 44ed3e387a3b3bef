"""DeformableConvolution kernel: a Numba sampling pass builds the deformed column matrix of an image
(``col[c*K + k, p]``: channel c sampled at tap k of output pixel p, K = kh*kw, bilinearly interpolated at
its offset position and scaled by the mask), then BLAS multiplies it by the filters, one GEMM per group
(``[C_out/G, C_in/G*K] x [C_in/G*K, P]``), as the regular convolution's im2col + GEMM does.

Sampling follows OpenVINO's CPU plugin (docs/ir-format.md, "DeformableConvolution"): the position of tap
(i, j) of output pixel (y, x) is ``(y*sh - ph + i*dh + dy, x*sw - pw + j*dw + dx)`` in the compute type
(float32 for f32/f16/bf16, float64 for f64), dy/dx the offsets' channels ``2*(dg*K + k)`` and ``+1``.

* ``pad=False`` (bilinear_interpolation_pad false, and opset1): a tap is sampled when ``0 <= y < H`` and
  ``0 <= x < W``; the corners are ``floor`` and ``min(ceil, size-1)``, so the last row/column is held
  between ``size-1`` and ``size``.
* ``pad=True``: sampled when ``-1 < y < H`` and ``-1 < x < W``; corners ``floor`` and ``floor+1``, a corner
  outside the data reading 0.

A tap that is not sampled contributes 0 (its mask is not read).  Each corner's weight is
``(1-ly or ly) * (1-lx or lx) * mask``; a corner whose weight is zero is not read (NaN or inf data
there does not propagate), a -0.0 weight being read when ``neg_zero_reads`` (the plugin's JIT path,
groups == 1, tests the weight's bits).  With ``pad=False`` a NaN coordinate (the other one inside)
makes the sample NaN, as the plugin computes it; with ``pad=True`` such a tap is skipped.

Every data read is at an index inside the image's plane: the corner indices are clamped and checked.
"""

from __future__ import annotations

import math

import numpy as np

from . import PARALLEL_MIN, blas
from .jit import njit, prange

# Output pixels per sampling task: the taps' corners and weights for this many pixels are computed once
# and applied to every channel of the deformable group (contiguous writes of a column row).
CHUNK = 128
# Elements of the column matrix (and its per-tap tables) sampled at once: a tile of one image's pixels.
COL_BUDGET = 1 << 22


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _corners(py, px, h, w, pad, neg_zero_reads, m, one, zero, idx, wt, q):
    """Fill idx[q, 0:4] (flat plane indices, -1 = not read) and wt[q, 0:4] for one sample; returns the
    value the sum starts from (0, or NaN for a NaN position that the rule samples)."""
    for c in range(4):
        idx[q, c] = -1
        wt[q, c] = zero
    if pad:
        if not (py > -one and py < h and px > -one and px < w):  # NaN: not sampled
            return zero
    else:
        if py < zero or py >= h or px < zero or px >= w:  # NaN compares false: sampled (below)
            return zero
        if py != py or px != px:
            return (py - py) + (px - px)  # NaN, in the compute type
    fy = np.floor(py)
    fx = np.floor(px)
    y0 = int(fy)
    x0 = int(fx)
    if pad:
        y1 = y0 + 1
        x1 = x0 + 1
    else:
        y1 = min(int(np.ceil(py)), h - 1)
        x1 = min(int(np.ceil(px)), w - 1)
    ly = py - fy
    lx = px - fx
    hy = one - ly
    hx = one - lx
    if y0 < 0:
        hy = zero
    if x0 < 0:
        hx = zero
    if y1 >= h:
        ly = zero
    if x1 >= w:
        lx = zero
    cy0 = min(max(y0, 0), h - 1)
    cy1 = min(max(y1, 0), h - 1)
    cx0 = min(max(x0, 0), w - 1)
    cx1 = min(max(x1, 0), w - 1)
    # the plugin's summation order: (y0, x0), (y1, x0), (y0, x1), (y1, x1)
    wt[q, 0] = hy * hx * m
    wt[q, 1] = ly * hx * m
    wt[q, 2] = hy * lx * m
    wt[q, 3] = ly * lx * m
    idx[q, 0] = cy0 * w + cx0
    idx[q, 1] = cy1 * w + cx0
    idx[q, 2] = cy0 * w + cx1
    idx[q, 3] = cy1 * w + cx1
    for c in range(4):
        v = wt[q, c]
        if v == zero and not (neg_zero_reads and math.copysign(1.0, v) < 0.0):
            idx[q, c] = -1
    return zero


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _task(t, x, off, mask, rowbase, colbase, col, n, p0, p1, kw, dg_count, pad, neg_zero_reads, one, zero):
    k_taps = rowbase.shape[1] * kw
    chunks = (p1 - p0 + CHUNK - 1) // CHUNK
    chunk = t % chunks
    k = (t // chunks) % k_taps
    dg = t // (chunks * k_taps)
    i = k // kw
    j = k % kw
    c_in, h, w = x.shape[1], x.shape[2], x.shape[3]
    wo = off.shape[3]
    per_group = c_in // dg_count
    a = p0 + chunk * CHUNK
    b = min(p1, a + CHUNK)
    idx = np.empty((CHUNK, 4), np.int64)
    wt = np.empty((CHUNK, 4), col.dtype)
    start = np.empty(CHUNK, col.dtype)
    cy = 2 * (dg * k_taps + k)
    for p in range(a, b):
        oy = p // wo
        ox = p % wo
        py = rowbase[oy, i] + off[n, cy, oy, ox]
        px = colbase[ox, j] + off[n, cy + 1, oy, ox]
        m = one if mask.shape[1] == 0 else mask[n, dg * k_taps + k, oy, ox]
        start[p - a] = _corners(py, px, h, w, pad, neg_zero_reads, m, one, zero, idx, wt, p - a)
    plane = h * w
    for c in range(dg * per_group, (dg + 1) * per_group):
        xp = x[n, c].reshape(plane)
        row = c * k_taps + k
        for p in range(a, b):
            q = p - a
            acc = start[q]
            for e in range(4):
                r = idx[q, e]
                if r >= 0 and r < plane:
                    acc += wt[q, e] * xp[r]
            col[row, p - p0] = acc


@njit(nogil=True, error_model="numpy", parallel=True, cache=True)
def sample_parallel(x, off, mask, rowbase, colbase, col, n, p0, p1, kw, dg_count, pad, neg_zero_reads, one, zero):
    """col[c*K + k, p - p0] for output pixels [p0, p1) of image n, over Numba's threads."""
    k_taps = rowbase.shape[1] * kw
    tasks = dg_count * k_taps * ((p1 - p0 + CHUNK - 1) // CHUNK)
    for t in prange(tasks):
        _task(t, x, off, mask, rowbase, colbase, col, n, p0, p1, kw, dg_count, pad, neg_zero_reads, one, zero)


@njit(nogil=True, error_model="numpy", cache=True)
def sample_serial(x, off, mask, rowbase, colbase, col, n, p0, p1, kw, dg_count, pad, neg_zero_reads, one, zero):
    """sample_parallel on the calling thread."""
    k_taps = rowbase.shape[1] * kw
    tasks = dg_count * k_taps * ((p1 - p0 + CHUNK - 1) // CHUNK)
    for t in range(tasks):
        _task(t, x, off, mask, rowbase, colbase, col, n, p0, p1, kw, dg_count, pad, neg_zero_reads, one, zero)


def deformable_conv2d(x: np.ndarray, off: np.ndarray, w: np.ndarray, mask: np.ndarray | None, groups: int,
                      deformable_groups: int, strides, dilations, pads_begin, out_hw, pad: bool,
                      neg_zero_reads: bool) -> np.ndarray:
    """[N, C_out, Ho, Wo] in x's dtype (float32 or float64; every array already of it) for data x
    [N, C, H, W], offsets [N, 2*DG*K, Ho, Wo], filters w [C_out, C/G, kh, kw] and mask [N, DG*K, Ho, Wo]
    or None.  The caller has checked every shape against the others."""
    dt = x.dtype
    n_img, c_in, h, wd = x.shape
    c_out, cg, kh, kw = w.shape
    ho, wo = out_hw
    k_taps = kh * kw
    p_all = ho * wo
    out = np.zeros((n_img, c_out, p_all), dt)
    if out.size == 0 or cg * k_taps == 0:
        return out.reshape(n_img, c_out, ho, wo)
    x = np.ascontiguousarray(x)
    off = np.ascontiguousarray(off)
    m = np.ascontiguousarray(mask) if mask is not None else np.zeros((n_img, 0, 1, 1), dt)
    wg = np.ascontiguousarray(w.reshape(groups, c_out // groups, cg * k_taps))
    rowbase = (np.arange(ho)[:, None] * strides[0] - pads_begin[0] + np.arange(kh)[None, :] * dilations[0]).astype(dt)
    colbase = (np.arange(wo)[:, None] * strides[1] - pads_begin[1] + np.arange(kw)[None, :] * dilations[1]).astype(dt)
    one, zero = dt.type(1), dt.type(0)
    rows = c_in * k_taps
    # a tile of pixels: its columns and the per-tap tables stay within the budget
    tile = max(CHUNK, (COL_BUDGET // max(1, rows)) // CHUNK * CHUNK)
    col_buf = np.empty((rows, min(tile, p_all)), dt)
    for n in range(n_img):
        for p0 in range(0, p_all, tile):
            p1 = min(p_all, p0 + tile)
            col = col_buf[:, :p1 - p0] if p1 - p0 == col_buf.shape[1] else np.empty((rows, p1 - p0), dt)
            if h * wd == 0:
                col[...] = 0  # no data: every tap lies outside
            else:
                fn = sample_parallel if rows * (p1 - p0) * 4 >= PARALLEL_MIN else sample_serial
                fn(x, off, m, rowbase, colbase, col, n, p0, p1, kw, deformable_groups, pad, neg_zero_reads, one,
                   zero)
            cols = col.reshape(groups, cg * k_taps, p1 - p0)
            res = np.empty((groups, c_out // groups, p1 - p0), dt)
            blocks = blas.column_blocks(c_out // groups, p1 - p0, cg * k_taps, groups)
            blas.product(wg, cols, res, blocks)
            out[n, :, p0:p1] = res.reshape(c_out, p1 - p0)
    return out.reshape(n_img, c_out, ho, wo)
