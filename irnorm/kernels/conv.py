"""Convolution kernels: im2col + BLAS GEMM, GEMM + col2im (transposed convolution), and a direct
depthwise kernel.

Every spatial layout is handled as 3-D (a 1-D convolution is [1, 1, W], a 2-D one [1, H, W]), so one
Numba kernel serves the three ranks.  Arithmetic runs in float32 (float64 for f64); f16/bf16 data is
converted by the caller.

* ``conv_forward``: dense and grouped convolution.  The input is copied once into a zero-padded
  buffer (``pad_input``) so that no window reaches outside it, then unfolded by ``im2col`` (plain
  index arithmetic per (n, c, tap) row, no bounds checks; on one thread below UNFOLD_PARALLEL_MIN
  elements, where waking the pool costs more than the copy) into ``col [N, G, C/G*K, P]`` and multiplied by the weights
  ``[G, Cout/G, C/G*K]`` with one batched ``np.matmul`` (BLAS sgemm/dgemm per (n, g)); the product is
  already NCHW.  A 1x1 convolution with unit strides and no padding skips the unfold.  The unfold is
  done per block of images, or per block of output rows of one large image, so it stays within
  COL_BUDGET elements (a 224x224 VGG layer would otherwise unfold to hundreds of MB).
* Larger dense 2-D convolutions (``banded_conv``): band by band of output rows, each band unfolded from
  the zero-padded planes into a buffer that stays in L2 and multiplied by its own single-threaded
  cblas_?gemm call (a function pointer to numpy's OpenBLAS, kernels/blas.py) writing straight into the
  output, the bands shared out over Numba's threads; unfolding the whole input first (above) went through
  memory at kh*kw times the input's size.  Used where numpy's BLAS is an OpenBLAS irnorm drives.
* ``depthwise``: groups == C with one input channel per group: a direct parallel loop per (n, out
  channel) — a GEMM with K = k*k per channel is all overhead (benchmarks/conv_matmul.py).
* ``conv_backprop``: ``col = W^T @ x`` (BLAS) then ``col2im`` scatter-adds each column into the
  output plane of its (n, out channel); planes are disjoint, so the parallel loop has no races.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from math import prod
from typing import Any, NamedTuple

import numpy as np

from . import PARALLEL_MIN, blas, microgemm, rowvec
from .activation import (
    _K32,
    _K64,
    SHORT_ROW_MAX,
    Epilogue,
    _bias_act_rows,
    _bias_act_short_rows,
    bias_activation_plan,
    bias_residual_plan,
    epilogue_buffer,
    epilogue_span,
    residual_rows,
)
from .blas_blocks import gemm_nn
from .halfprec import cast_like
from .jit import c_array, entry, njit, prange
from .linear import _narrow_dots, dot_lanes
from .opcodes import REDUCE_SUM
from .planes import fill_padded, fill_phases
from .pool import OUTPUTS, SCRATCH
from .reduce import _rows_to

# Unfolded-buffer budget (elements) per block of images or, for a large image, of output rows.
COL_BUDGET = 1 << 22
# Unfolded sizes (elements) up to which a convolution unfolds in one serial call from the unpadded input:
# below it the padded paths' several steps (padding copy, parallel unfold, trimming copy) cost more
# than they save.
SMALL_COL = 1 << 16


@njit(nogil=True, cache=True, inline="always")
def _x_range(off_x, sw, w_in, ow):
    """The output x range [lo, hi) whose tap at offset off_x lands inside the input: 0 <= ox*sw + off_x < w_in."""
    lo = 0
    if off_x < 0:
        lo = (-off_x + sw - 1) // sw
    hi = 0
    if w_in - off_x > 0:
        hi = (w_in - off_x + sw - 1) // sw
    if hi > ow:
        hi = ow
    if lo > hi:
        lo = hi
    return lo, hi


@njit(nogil=True, cache=True, inline="always")
def _bounded_row(xf, cf, n, c, kz, ky, kx, dims, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw, oh, ow, r0, r1,
                 lo, hi, oz, oy):
    """Unfolded row (n, c, tap (kz, ky, kx)) of im2col on the unpadded input, every tap bounds-checked
    (zeros where the window is in the padding).  xf, cf: the flat input [N, C, D, H, W] and unfolded
    buffer [N, C*taps, length]; dims = (C, D, H, W, length); [lo, hi): the output x range whose tap kx
    lands inside the input (_x_range); (oz, oy): output row r0 as (z, y).  Flat unsigned indexing, no
    division per output row: on small convolutions a view per row (with its reference counting) and the
    index divisions cost more than the copy -- the callers work lo/hi and (oz, oy) out once, not per row."""
    c_count, d_in, h_in, w_in, length = dims
    taps = kd * kh * kw
    r = c * taps + (kz * kh + ky) * kw + kx
    d0 = (n * c_count * taps + r) * length
    plane = (n * c_count + c) * d_in
    off_x = kx * dw - pw  # valid output x range for this tap: 0 <= ox*sw + off_x < w_in
    p = d0
    for _ in range(r0, r1):
        iz = oz * sd - pd + kz * dd
        iy = oy * sh - ph + ky * dh
        oy += 1
        if oy == oh:
            oy = 0
            oz += 1
        if iz < 0 or iz >= d_in or iy < 0 or iy >= h_in:
            for ox in range(ow):
                cf[np.uintp(p + ox)] = 0
        else:
            s0 = ((plane + iz) * h_in + iy) * w_in + off_x
            for ox in range(lo):
                cf[np.uintp(p + ox)] = 0
            _copy(cf, p + lo, xf, s0 + lo * sw, sw, hi - lo)
            for ox in range(hi, ow):
                cf[np.uintp(p + ox)] = 0
        p += ow


@njit(nogil=True, parallel=True, cache=True)
def im2col_bounded(x, col, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw, oh, ow, r0, r1):
    """im2col on the unpadded input, every tap bounds-checked: for geometries whose padded copy would
    be much larger than the input (huge pads with huge strides).  One task per unfolded row."""
    xf, cf = x.reshape(-1), col.reshape(-1)
    dims = (x.shape[1], x.shape[2], x.shape[3], x.shape[4], col.shape[2])
    taps = kd * kh * kw
    for task in prange(x.shape[0] * x.shape[1] * taps):
        t = task % taps
        lo, hi = _x_range((t % kw) * dw - pw, sw, x.shape[4], ow)
        _bounded_row(xf, cf, task // (x.shape[1] * taps), (task // taps) % x.shape[1], t // (kh * kw), (t // kw) % kh,
                     t % kw, dims, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw, oh, ow, r0, r1, lo, hi,
                     r0 // oh, r0 % oh)


@njit(nogil=True, cache=True)
def im2col_bounded_serial(x, col, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw, oh, ow, r0, r1):
    """im2col_bounded on the calling thread: for small convolutions, where one call that needs no
    padded copy beats the padded paths' several steps (and a parallel launch costs more than the copy)."""
    xf, cf = x.reshape(-1), col.reshape(-1)
    dims = (x.shape[1], x.shape[2], x.shape[3], x.shape[4], col.shape[2])
    ranges = np.empty((kw, 2), np.int64)  # per tap column: its [lo, hi), the same for every row
    for kx in range(kw):
        ranges[kx, 0], ranges[kx, 1] = _x_range(kx * dw - pw, sw, x.shape[4], ow)
    oz, oy = r0 // oh, r0 % oh
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for kz in range(kd):
                for ky in range(kh):
                    for kx in range(kw):
                        _bounded_row(xf, cf, n, c, kz, ky, kx, dims, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw,
                                     oh, ow, r0, r1, ranges[kx, 0], ranges[kx, 1], oz, oy)


# Output rows up to this wide unfold by an index table (gather_unfold) on the small path: the bounded
# unfold's per-row set-up costs more than its copy there ([1, 32, 4, 4] 3x3: 7.6 -> 3.3 us).
GATHER_MAX_WIDTH = 8


def unfold_index(x5_shape: tuple[int, ...], kk, s, d, pb, o3) -> np.ndarray:
    """im2col as a gather: for each element of the unfolded [N, C * taps, P] buffer (rows in im2col's
    order), the flat index into the [N, C, D, H, W] input it copies, or the input's size (one past its last
    element: the zero _gather_padded appends) where the tap falls in the padding.  Unsigned (uint32, uint64 for
    inputs of 2**32 elements or more): the gather's loads then take no negative-index check and vectorize."""
    n, c, depth, height, width = x5_shape
    kz, ky, kx = (a.reshape(-1, 1) for a in np.meshgrid(*(np.arange(k) for k in kk), indexing="ij"))
    oz, oy, ox = (a.reshape(1, -1) for a in np.meshgrid(*(np.arange(o) for o in o3), indexing="ij"))
    iz, iy, ix = oz * s[0] - pb[0] + kz * d[0], oy * s[1] - pb[1] + ky * d[1], ox * s[2] - pb[2] + kx * d[2]
    inside = (iz >= 0) & (iz < depth) & (iy >= 0) & (iy < height) & (ix >= 0) & (ix < width)
    spot = np.where(inside, (iz * height + iy) * width + ix, -1)  # [taps, P]
    total = n * c * depth * height * width
    planes = (np.arange(n * c, dtype=np.int64) * (depth * height * width)).reshape(n, c, 1, 1)
    idx = np.where(spot >= 0, planes + spot, total).reshape(-1)
    return idx.astype(np.uint32 if total < 2**32 - 1 else np.uint64)


NO_INDEX = np.zeros(0, np.uint32)  # gemm_epilogue's index where it does not gather


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _gather_padded(xf, idx, col, zero):  # pragma: no cover - compiled
    """col[i] = xf[idx[i]], zero where idx[i] == len(xf) (a tap in the padding).  Every index is at most len(xf).
    Where the input is not larger than the unfolded buffer, xf is copied first into a buffer one longer whose
    last element is zero, so that the gather has no select ([1, 32, 4, 4] 3x3's 4608 taps: 2.0 us with a signed
    index and a select, 1.7 unsigned with the select, 0.8 from the copy)."""
    total = xf.shape[0]
    if total > idx.shape[0]:  # (a strided layer reading few of its inputs): no copy of the whole input
        for i in range(idx.shape[0]):
            j = idx[i]
            v = xf[j if j < total else 0]
            col[i] = v if j < total else zero
        return
    ext = np.empty(total + 1, col.dtype)
    ext[:total] = xf
    ext[total] = zero
    for i in range(idx.shape[0]):
        col[i] = ext[idx[i]]


@njit(nogil=True, cache=True, error_model="numpy")
def gather_unfold(xf, idx, col):  # pragma: no cover - compiled
    """col[i] = xf[idx[i]], 0 where idx[i] == len(xf) (unfold_index's padding)."""
    _gather_padded(xf, idx, col, cast_like(0.0, col))


@njit(nogil=True, cache=True, inline="always")
def _copy(dst, d0, src, s0, step, count):
    """dst[d0 + i] = src[s0 + i*step] for i < count.  The indices are cast to unsigned: with signed
    ones Numba adds a negative-index wraparound check per element, which stops LLVM from
    vectorizing the loop (measured 5x slower on contiguous rows)."""
    if step == 1:
        for i in range(count):
            dst[np.uintp(d0 + i)] = src[np.uintp(s0 + i)]
    else:
        for i in range(count):
            dst[np.uintp(d0 + i)] = src[np.uintp(s0 + i * step)]


@njit(nogil=True, cache=True)
def _unfold(xf, cf, t0, t1, c_taps, chw, hw, wp, kd, kh, kw, sd, sh, sw, dd, dh, dw, oh, ow, r0, r1, phase_len):
    """Rows t0..t1-1 of the unfolded buffer (row t = (n, c, tap)), from the padded input flattened.
    No bounds checks: the padding is already in the input.  phase_len > 0: the input's rows are stored
    as sw phases of phase_len columns each (column w at w % sw * phase_len + w // sw: see im2col), so
    every copy is contiguous instead of strided."""
    length = (r1 - r0) * ow
    taps = kd * kh * kw
    step = sw if phase_len == 0 else 1
    for task in range(t0, t1):
        n = task // c_taps
        r = task - n * c_taps
        c = r // taps
        t = r - c * taps
        kz = t // (kh * kw)
        ky = (t // kw) % kh
        kx = t % kw
        x_off = kx * dw if phase_len == 0 else (kx * dw) % sw * phase_len + (kx * dw) // sw
        base = (n * (c_taps // taps) + c) * chw + kz * dd * hw + ky * dh * wp + x_off
        p = task * length
        oz, oy = r0 // oh, r0 % oh  # output row rr = oz * oh + oy, stepped without a division per row
        for _ in range(r0, r1):
            _copy(cf, p, xf, base + oz * sd * hw + oy * sh * wp, step, ow)
            p += ow
            oy += 1
            if oy == oh:
                oy = 0
                oz += 1


@njit(nogil=True, parallel=True, cache=True)
def _unfold_parallel(xf, cf, rows, c_taps, chw, hw, wp, kd, kh, kw, sd, sh, sw, dd, dh, dw, oh, ow, r0, r1,
                     phase_len):
    chunks = min(rows, 64)
    for i in prange(chunks):
        _unfold(xf, cf, i * rows // chunks, (i + 1) * rows // chunks, c_taps, chw, hw, wp, kd, kh, kw,
                sd, sh, sw, dd, dh, dw, oh, ow, r0, r1, phase_len)


@njit(nogil=True, cache=True)
def _unfold_wide(xf, cf, t0, t1, taps, plane, wp, kw, dh, dw, length):
    """Rows t0..t1-1 of a stride-1 2-D unfold in the padded input's row width: row (n, c, tap) is the
    `length` elements of plane (n, c) from the tap's offset on -- one contiguous copy."""
    for task in range(t0, t1):
        nc = task // taps
        t = task - nc * taps
        ky = t // kw
        _copy(cf, task * length, xf, nc * plane + ky * dh * wp + (t - ky * kw) * dw, 1, length)


@njit(nogil=True, parallel=True, cache=True)
def _unfold_wide_parallel(xf, cf, rows, taps, plane, wp, kw, dh, dw, length):
    chunks = min(rows, 64)
    for i in prange(chunks):
        _unfold_wide(xf, cf, i * rows // chunks, (i + 1) * rows // chunks, taps, plane, wp, kw, dh, dw, length)


# Below this many multiply-adds one thread does a depthwise convolution: waking the pool costs more.
DEPTHWISE_PARALLEL_MIN = 1 << 18

# Below this many unfolded elements one thread does the unfold: waking the pool costs more.
UNFOLD_PARALLEL_MIN = 1 << 18


@njit(nogil=True, cache=True)
def _split_phases(rows, out, sw):
    """out[r, ph * L + q] = rows[r, q * sw + ph] (0 past the row's end), L = out.shape[1] // sw: each
    row's columns grouped by their phase modulo sw (numpy's transposing copy with an inner axis of 2
    cost as much as it saved)."""
    width = rows.shape[1]
    length = out.shape[1] // sw
    for r in range(rows.shape[0]):
        for ph in range(sw):
            for q in range(length):
                w = q * sw + ph
                out[r, ph * length + q] = rows[r, w] if w < width else 0


def im2col(xp, col, kd, kh, kw, sd, sh, sw, dd, dh, dw, oh, ow, r0, r1):
    """xp [N, C, Dp, Hp, Wp] (padded: every window inside) -> col [N, C*kd*kh*kw, (r1-r0)*ow]: output
    rows r0..r1-1 of the flattened (oz, oy) rows (row r is oz = r // oh, oy = r % oh)."""
    n, c, dp, hp, wp = xp.shape
    taps = kd * kh * kw
    rows = n * c * taps
    phase_len = 0
    if sw > 1 and kw > 1:
        # A strided row copy does not vectorize (ResNet's 7x7/2 stem: 80 of its 250 us): split each input
        # row into its sw column phases once, [..., W] -> [..., sw, ceil(W / sw)], then every copy is
        # contiguous.  Costs one pass over the padded input, which is far smaller than the unfolded one.
        phase_len = -(-wp // sw)
        phased = np.empty((n * c * dp * hp, sw * phase_len), xp.dtype)
        _split_phases(np.ascontiguousarray(xp).reshape(-1, wp), phased, sw)
        xp = phased
        wp = phase_len * sw
    xf = xp.reshape(-1)
    cf = col.reshape(-1)
    args = (c * taps, dp * hp * wp, hp * wp, wp, kd, kh, kw, sd, sh, sw, dd, dh, dw, oh, ow, r0, r1, phase_len)
    if col.size >= UNFOLD_PARALLEL_MIN and rows > 1:
        _unfold_parallel(xf, cf, rows, *args)
    else:
        _unfold(xf, cf, 0, rows, *args)


_FITS, _TOO_LARGE = "fits", "too large"


def pad_geometry(x5_shape: tuple[int, ...], k3, s3, d3, pb3, o3) -> Any:
    """What pad_input does for inputs of this shape: _FITS (every window already inside), _TOO_LARGE
    (the padded copy would be over twice the input plus the unfolded size: huge pads and strides), or
    (padded shape, destination index, source index, whether anything is copied).  Worked out once per
    shape by forward_plan: the list arithmetic cost more than padding a small input."""
    lo = [-p for p in pb3]
    hi = [(o - 1) * s + (k - 1) * d - p + 1 for k, s, d, p, o in zip(k3, s3, d3, pb3, o3, strict=True)]
    spatial = x5_shape[2:]
    if all(a == 0 for a in lo) and all(b == e for b, e in zip(hi, spatial, strict=True)):
        return _FITS
    padded = x5_shape[0] * x5_shape[1] * prod(b - a for a, b in zip(lo, hi, strict=True))
    if padded > 2 * prod(x5_shape) + x5_shape[0] * x5_shape[1] * prod(k3) * prod(o3):
        return _TOO_LARGE
    src = tuple(slice(max(a, 0), min(b, e)) for a, b, e in zip(lo, hi, spatial, strict=True))
    dst = tuple(slice(max(a, 0) - a, min(b, e) - a) for a, b, e in zip(lo, hi, spatial, strict=True))
    return (tuple(x5_shape[:2]) + tuple(b - a for a, b in zip(lo, hi, strict=True)),
            (slice(None), slice(None)) + dst, (slice(None), slice(None)) + src, all(d.stop > d.start for d in dst))


def pad_input(x5: np.ndarray, k3, s3, d3, pb3, o3, geometry: Any = None) -> np.ndarray | None:
    """x5 [N, C, D, H, W] with zeros around it (or cropped: negative pads) so that every window of the
    output o3 lies inside: padded index i is input index i - pads_begin.  x5 itself when it fits; None
    when the padded copy would be too large (see pad_geometry; `geometry`: its result, if known)."""
    geom = pad_geometry(x5.shape, k3, s3, d3, pb3, o3) if geometry is None else geometry
    if geom is _FITS:
        return x5
    if geom is _TOO_LARGE:
        return None
    shape, dst, src, copy = geom
    xp = np.zeros(shape, x5.dtype)
    if copy:
        xp[dst] = x5[src]
    return xp


@njit(nogil=True, parallel=True, cache=True)
def col2im(col, out, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw, ih, iw, r0, r1):
    """Transposed unfold: out [N, Co, D, H, W] += col [N, Co*taps, (r1-r0)*iw], the columns of input
    rows r0..r1-1 of the flattened (iz, iy) rows, added at out[z = iz*sd - pd + kz*dd, ...]."""
    n_count, co_count, d_out, h_out, w_out = out.shape
    taps = kd * kh * kw
    for task in prange(n_count * co_count):
        n = task // co_count
        co = task % co_count
        plane = out[n, co]
        for t in range(taps):
            kz = t // (kh * kw)
            ky = (t // kw) % kh
            kx = t % kw
            src = col[n, co * taps + t]
            off_x = kx * dw - pw
            p = 0
            for rr in range(r0, r1):
                z = (rr // ih) * sd - pd + kz * dd
                y = (rr % ih) * sh - ph + ky * dh
                if z >= 0 and z < d_out and y >= 0 and y < h_out:
                    row = plane[z, y]
                    for ix in range(iw):
                        xx = ix * sw + off_x
                        if xx >= 0 and xx < w_out:
                            row[xx] += src[p + ix]
                p += iw


@njit(nogil=True, parallel=True, cache=True)
def depthwise(x, w, out, mult, sd, sh, sw, dd, dh, dw, pd, ph, pw, tasks):
    """x [N, G, D, H, W], w [G*mult, kd, kh, kw], out [N, G*mult, od, oh, ow]: out channel o reads
    input channel o // mult.  `tasks` blocks of (n, out channel) planes (1: the calling thread only)."""
    planes = out.shape[0] * out.shape[1]
    if tasks == 1:
        _depthwise_planes(x, w, out, mult, sd, sh, sw, dd, dh, dw, pd, ph, pw, 0, planes)
        return
    for t in prange(tasks):
        _depthwise_planes(x, w, out, mult, sd, sh, sw, dd, dh, dw, pd, ph, pw, t * planes // tasks,
                          (t + 1) * planes // tasks)


@njit(nogil=True, parallel=True, cache=True)
def depthwise_wide(xf, w, out, mult, hp, wp, dh, dw, tasks):
    """Stride-1 2-D depthwise convolution from the zero-padded planes xf ([N*G planes of hp x wp] flat,
    with spare elements at the end): per out plane, every tap is one multiply-add over the plane in the
    padded row width (a long loop that vectorizes), then the ow columns of each row are kept.  Taps are
    summed in the same order as the direct kernel."""
    planes = out.shape[0] * out.shape[1]
    if tasks == 1:
        _depthwise_wide_planes(xf, w, out, mult, hp, wp, dh, dw, 0, planes)
        return
    for t in prange(tasks):
        _depthwise_wide_planes(xf, w, out, mult, hp, wp, dh, dw, t * planes // tasks, (t + 1) * planes // tasks)


@njit(nogil=True, cache=True)
def _depthwise_wide_planes(xf, w, out, mult, hp, wp, dh, dw, t0, t1):
    co_count, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    kh, kw = w.shape[1], w.shape[2]
    g_count = co_count // mult
    length = oh * wp
    acc = np.empty(length, out.dtype)
    for task in range(t0, t1):
        n = task // co_count
        o = task - n * co_count
        base = (n * g_count + o // mult) * hp * wp
        for q in range(length):
            acc[q] = 0
        for ky in range(kh):
            for kx in range(kw):
                wv = w[o, ky, kx]
                src = base + ky * dh * wp + kx * dw
                for q in range(length):
                    acc[q] += wv * xf[np.uintp(src + q)]
        for oy in range(oh):
            for ox in range(ow):
                out[n, o, oy, ox] = acc[oy * wp + ox]


@njit(nogil=True, cache=True)
def _depthwise_planes(x, w, out, mult, sd, sh, sw, dd, dh, dw, pd, ph, pw, t0, t1):
    n_count, co_count, od, oh, ow = out.shape
    d_in, h_in, w_in = x.shape[2], x.shape[3], x.shape[4]
    kd, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    for task in range(t0, t1):
        n = task // co_count
        o = task % co_count
        g = o // mult
        for oz in range(od):
            for oy in range(oh):
                dst = out[n, o, oz, oy]
                for ox in range(ow):
                    dst[ox] = 0
                for kz in range(kd):
                    iz = oz * sd - pd + kz * dd
                    if iz < 0 or iz >= d_in:
                        continue
                    for ky in range(kh):
                        iy = oy * sh - ph + ky * dh
                        if iy < 0 or iy >= h_in:
                            continue
                        src = x[n, g, iz, iy]
                        for kx in range(kw):
                            wv = w[o, kz, ky, kx]
                            off_x = kx * dw - pw
                            lo, hi = _x_range(off_x, sw, w_in, ow)
                            # unsigned indices (all >= 0 here): Numba's negative-index check on signed
                            # ones kept these loops from vectorizing
                            if sw == 1:  # contiguous: vectorizes
                                for ox in range(lo, hi):
                                    dst[np.uintp(ox)] += wv * src[np.uintp(ox + off_x)]
                            else:
                                for ox in range(lo, hi):
                                    dst[np.uintp(ox)] += wv * src[np.uintp(ox * sw + off_x)]


def _as3d(shape, fill=1):
    """Spatial dims (or per-dim parameters) padded at the front to three."""
    return (fill,) * (3 - len(shape)) + tuple(shape)


def _geom(k_spatial, strides, dilations, pads_begin, spatial):
    """Kernel, strides, dilations, pads and output dims padded to three spatial dims (lists of ints;
    remembered for tuples: a model calls with the same ones every time)."""
    args = (k_spatial, strides, dilations, pads_begin, spatial)
    if all(type(a) is tuple for a in args):
        return _geom_cached(*args)
    return _geom_lists(*args)


def _geom_lists(k_spatial, strides, dilations, pads_begin, spatial):
    return ([int(v) for v in _as3d(k_spatial)], [int(v) for v in _as3d(strides)],
            [int(v) for v in _as3d(dilations)], [int(v) for v in _as3d(pads_begin, 0)],
            [int(v) for v in _as3d(spatial)])


_geom_cached = functools.lru_cache(maxsize=512)(_geom_lists)  # its lists are never modified


def _tiles(n: int, rows: int, per_row: int):
    """(n0, n1, r0, r1) blocks of images x flattened output rows whose unfolded size (per_row elements
    per image row) stays within COL_BUDGET: whole images when one fits, else row tiles of one image."""
    per_image = rows * per_row
    if per_image <= COL_BUDGET:
        chunk = max(1, COL_BUDGET // max(1, per_image))
        for n0 in range(0, n, chunk):
            yield n0, min(n, n0 + chunk), 0, rows
        return
    step = max(1, COL_BUDGET // max(1, per_row))
    for n0 in range(n):
        for r0 in range(0, rows, step):
            yield n0, n0 + 1, r0, min(rows, r0 + step)


def conv_forward(x: np.ndarray, w: np.ndarray, k_spatial, strides, dilations, pads_begin, out_spatial
                 ) -> np.ndarray:
    """x [N, C, *S] (compute dtype) and prepared weights w [G, Cout/G, C/G * K] -> [N, Cout, *out]."""
    return forward_plan(x.shape, w, k_spatial, strides, dilations, pads_begin, out_spatial)(x)


def forward_plan(x_shape: tuple[int, ...], w: np.ndarray, k_spatial, strides, dilations, pads_begin, out_spatial,
                 epilogue: Epilogue | None = None) -> Callable[..., np.ndarray]:
    """conv_forward for inputs of shape `x_shape` (and w's dtype) with every choice made once: which
    path, the reshapes, the unfold's arguments, whether the product may get more BLAS threads.  A
    caller with constant weights keeps the plan per input shape; a run then costs the allocation, the
    unfold and the product.  With an `epilogue` the plan is ``plan(x, residual)`` (residual None unless
    epilogue.residual) and returns the product with the epilogue applied."""
    if w.ndim != 3 or len(x_shape) != 2 + len(k_spatial) or w.shape[2] * w.shape[0] != x_shape[1] * prod(k_spatial):
        # the kernels index by these shapes unchecked: a wrong layout must not reach them (ops/convolution.py
        # prepares w; this guards other callers)
        raise ValueError(f"forward_plan: weights {w.shape} do not fit input {x_shape} and filter {tuple(k_spatial)}")
    plan = _forward_plan(x_shape, w, k_spatial, strides, dilations, pads_begin, out_spatial, epilogue)
    if epilogue is None or getattr(plan, "fused", False):
        return plan
    return with_epilogue(plan, epilogue)


def with_epilogue(plan: Callable[[np.ndarray], np.ndarray], epilogue: Epilogue) -> Callable[..., np.ndarray]:
    """`plan` (whose output is a fresh array of its own) followed by `epilogue` in place on its output, as
    a pass of its own planned once per output shape.  A residual of another shape or type at run time (a
    dynamic model whose branches broadcast) takes the layers' own way: numpy's broadcasting Add."""
    bias, code, p0, p1, residual = epilogue
    plans: dict[tuple, Callable[..., np.ndarray]] = {}
    # a product computed on several threads leaves its output in their caches: a memory-bound epilogue
    # then pays on several threads too (SSD-VGG's banded convolutions' bias + Relu: 2% of the network)
    after_parallel = getattr(plan, "parallel", False)

    def run(x: np.ndarray, res: np.ndarray | None = None) -> np.ndarray:
        out = plan(x)
        if residual and (res.shape != out.shape or res.dtype != out.dtype):
            out = bias_activation_plan(out.shape, out.dtype, bias, -1)(out) + res
            return bias_activation_plan(out.shape, out.dtype, None, code, p0, p1)(out)
        key = (out.shape, out.dtype)
        after = plans.get(key)
        if after is None:
            after = (bias_residual_plan(out.shape, out.dtype, bias, code, p0, p1, after_parallel) if residual
                     else bias_activation_plan(out.shape, out.dtype, bias, code, p0, p1, after_parallel))
            if len(plans) < 64:
                plans[key] = after
        return after(out, res) if residual else after(out)
    return run


def _fused_plan(name: str, call: Callable[[np.ndarray, np.ndarray, np.ndarray], None],
                unfused: Callable[[], Callable[..., np.ndarray]], epilogue: Epilogue | None,
                out_shape: tuple[int, ...], dtype: np.dtype, no_res: np.ndarray, parallel: bool
                ) -> Callable[..., np.ndarray]:
    """``plan(x, residual)`` for a kernel that applies its step's epilogue in its own call: `call(x, out,
    residual rows)` fills a fresh output (the residual as [N * C, spatial] rows, `no_res` when there is none);
    a residual that broadcasts at run time takes `unfused()`'s plan and the layers' own epilogue."""
    rows_shape = (out_shape[0] * out_shape[1], prod(out_shape[2:]))

    def fused(x: np.ndarray, res: np.ndarray | None = None) -> np.ndarray:
        # (the plain form below when there is no residual: here _broadcasts and _residual_rows written out)
        if res.shape != out_shape or res.dtype != dtype:
            return with_epilogue(unfused(), epilogue)(x, res)
        out = OUTPUTS.empty(out_shape, dtype)
        call(x, out, (res if res.flags.c_contiguous else np.ascontiguousarray(res)).reshape(rows_shape))
        return out

    if epilogue is None or not epilogue.residual:
        def plain(x: np.ndarray, res: np.ndarray | None = None) -> np.ndarray:
            out = OUTPUTS.empty(out_shape, dtype)  # no residual operand to check or reshape
            call(x, out, no_res)
            return out
        fused = plain
    fused.__name__ = fused.__qualname__ = name
    fused.fused = True  # type: ignore[attr-defined]
    fused.parallel = parallel  # type: ignore[attr-defined]
    return fused


def _forward_plan(x_shape: tuple[int, ...], w: np.ndarray, k_spatial, strides, dilations, pads_begin, out_spatial,
                  epilogue: Epilogue | None) -> Callable[..., np.ndarray]:
    n, c = x_shape[:2]
    g, cpg = w.shape[0], w.shape[1]
    out_shape = (n, g * cpg) + tuple(out_spatial)
    kk, s, d, pb, o3 = _geom(k_spatial, strides, dilations, pads_begin, out_spatial)
    p_out = o3[0] * o3[1] * o3[2]
    x5_shape = (n, c) + _as3d(x_shape[2:])
    res_shape = (n, g, cpg, p_out)
    ck = c * kk[0] * kk[1] * kk[2]
    product = _product if blas.may_widen(cpg, p_out, ck // max(g, 1), n * g) else _product_narrow

    def empty(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = OUTPUTS.empty(out_shape, x.dtype)
        return out, out.reshape(res_shape)

    if prod(out_shape) == 0 or w.shape[2] == 0:
        def degenerate(x: np.ndarray) -> np.ndarray:
            out = OUTPUTS.empty(out_shape, x.dtype)
            out[...] = 0  # no input channels: sums over nothing
            return out
        return degenerate
    one_call = (g == 1 and product is _product_narrow and prod(out_shape) < ONE_CALL_MAX and w.flags.c_contiguous
                and w.dtype.kind == "f")
    one_gemm = blas.gemm_pointer(w.dtype) if one_call else None
    if (_pixel_rows_fits(x5_shape, g, cpg, w.dtype, kk, s, pb, o3, ck)
            and not (one_call and _dense_fits(x5_shape, g * cpg, kk, s, d, pb, o3))):  # (the dense map: below)
        return _pixel_rows_plan(x5_shape, w, out_shape, kk, s, d, pb, o3, epilogue)
    if kk == [1, 1, 1] and s == [1, 1, 1] and pb == [0, 0, 0] and tuple(o3) == x5_shape[2:]:
        if (microgemm.ENABLED and g == 1 and w.dtype == np.float32 and prod(out_shape) >= POINTWISE_MIN_OUTPUTS
                and cpg > microgemm.MR):
            return _pointwise_plan(x5_shape, w, out_shape, epilogue)
        if one_gemm is not None:
            return _gemm_epilogue_plan(one_gemm, x5_shape, w, out_shape, 0, None, (0,) * 16, epilogue)
        cols_shape = (n, g, ck // g, p_out)

        def pointwise(x: np.ndarray) -> np.ndarray:  # 1x1: no unfold
            out, res = empty(x)
            product(w, np.ascontiguousarray(x).reshape(cols_shape), res)
            return out
        pointwise.parallel = product is _product  # type: ignore[attr-defined]
        return pointwise
    if (microgemm.ENABLED and c // g >= 2 and w.dtype == np.float32 and kk[0] == 1 and o3[0] == 1
            and s == [1, 1, 1] and ck // g >= (IMPLICIT_MIN_TAPS if g == 1 else DIRECT_MIN_TAPS)
            and o3[2] >= IMPLICIT_MIN_WIDTH
            and (cpg <= IMPLICIT_MAX_COUT or o3[1] * o3[2] >= IMPLICIT_MIN_PIXELS
                 or n * ck * p_out <= IMPLICIT_SMALL_COL
                 or cpg <= IMPLICIT_MID_COUT and o3[2] >= IMPLICIT_MID_SHARE * (o3[2] + (kk[2] - 1) * d[2]))):
        return _implicit_plan(x5_shape, w, out_shape, c, o3[1] + (kk[1] - 1) * d[1], o3[2] + (kk[2] - 1) * d[2],
                              kk[1], kk[2], d[1], d[2], pb, epilogue)
    if (microgemm.ENABLED and w.dtype == np.float32 and kk[0] == 1 and o3[0] == 1 and s[0] == 1
            and s[1] * s[2] > 1 and kk[1] * kk[2] > 1 and o3[2] >= IMPLICIT_MIN_WIDTH
            and (g > 1 and cpg <= STRIDED_MAX_COUT or cpg <= IMPLICIT_MAX_COUT and o3[2] >= 2 * IMPLICIT_MIN_WIDTH
                 or g == 1 and o3[1] >= _threads()
                 and (n >= _threads() and n * ck * p_out > SMALL_COL
                      or _by_rows(o3[2], o3[2] + (kk[2] - 1) * d[2] // s[2], ck)))):
        return _implicit_plan(x5_shape, w, out_shape, c, o3[1] + (kk[1] - 1) * d[1] // s[1],
                              o3[2] + (kk[2] - 1) * d[2] // s[2], kk[1], kk[2], d[1], d[2], pb, epilogue, s[1], s[2])
    if (kk[0] == 1 and o3[0] == 1 and s == [1, 1, 1] and w.dtype.kind == "f"
            and _direct_fits(cpg, ck // g, g, kk[2], p_out)):
        hp, wp = o3[1] + (kk[1] - 1) * d[1], o3[2] + (kk[2] - 1) * d[2]
        band = max(1, min(o3[1], DIRECT_BAND_ELEMS // (cpg * wp)))
        parallel = n * cpg * ck * p_out >= DEPTHWISE_PARALLEL_MIN * 8
        if parallel and n * g < DIRECT_MIN_JOBS and o3[1] > band:  # equal bands, enough to share out evenly
            per_image = max(-(-o3[1] // band), -(-DIRECT_MIN_JOBS // (n * g)))
            band = max(min(band, DIRECT_MIN_BAND), -(-o3[1] // per_image))
        bands = n * g * -(-o3[1] // band)
        tasks = min(bands, 64) if parallel else 1
        kh, kw, dh, dw = kk[1], kk[2], d[1], d[2]
        padded = padded_planes_plan(x5_shape, hp, wp, pb, (kk[2] - 1) * d[2])

        if tasks == 1 and prod(out_shape) < ONE_CALL_MAX:
            return _direct_serial_plan(x5_shape, w, out_shape, c, hp, wp, kh, kw, dh, dw, band, pb, epilogue)
        run_direct = entry(direct_conv, c_array(1, w.dtype), w, c_array(4, w.dtype), c, hp, wp, kh, kw, dh, dw,
                           band, tasks)

        def direct(x: np.ndarray) -> np.ndarray:
            out, _ = empty(x)
            xp = padded(x)  # x's elements in order: the flat view is all the fill reads
            run_direct(xp, w, out.reshape(n, g * cpg, o3[1], o3[2]), c, hp, wp, kh, kw, dh, dw, band, tasks)
            return out
        direct.parallel = tasks > 1  # type: ignore[attr-defined]
        return direct
    gemm = blas.gemm_pointer(w.dtype) if g == 1 and w.dtype.kind == "f" else None
    if (gemm is not None and kk[0] == 1 and o3[0] == 1 and s[0] == 1 and n * ck * p_out > SMALL_COL
            and ck * o3[2] <= BAND_ELEMS and n * o3[1] > 1 and w.flags.c_contiguous):  # bands of rows that fit
        return _banded_plan(gemm, x5_shape, w, out_shape, kk, s, d, pb, o3, epilogue)
    if one_call and w.dtype in (np.float32, np.float64) and _dense_fits(x5_shape, g * cpg, kk, s, d, pb, o3):
        return _dense_plan(x5_shape, w, out_shape, kk, s, d, pb, o3, epilogue)
    if n * ck * p_out <= SMALL_COL:  # small: one serial unfold straight from the input, one product
        unfold_args = (kk[0], kk[1], kk[2], s[0], s[1], s[2], d[0], d[1], d[2], pb[0], pb[1], pb[2], o3[1], o3[2], 0,
                       o3[0] * o3[1])
        col_shape, cols_shape = (n, ck, p_out), (n, g, ck // g, p_out)
        if one_gemm is not None and w.dtype == np.float32 and _pixel_rows_serial_fits(n, cpg, ck, kk, o3):
            return _pixel_rows_plan(x5_shape, w, out_shape, kk, s, d, pb, o3, epilogue, serial=True)
        if one_gemm is not None:
            gathered = o3[2] <= GATHER_MAX_WIDTH
            index = unfold_index(x5_shape, kk, s, d, pb, o3) if gathered else None
            return _gemm_epilogue_plan(one_gemm, x5_shape, w, out_shape, 1 if gathered else 2, index, unfold_args,
                                       epilogue)
        if o3[2] <= GATHER_MAX_WIDTH:
            index = unfold_index(x5_shape, kk, s, d, pb, o3)  # kept with the plan: one per input shape
            gather = entry(gather_unfold, c_array(1, w.dtype), index, c_array(1, w.dtype))

            def small_gathered(x: np.ndarray) -> np.ndarray:
                out, res = empty(x)
                col = SCRATCH.get(1, col_shape, x.dtype)
                gather(np.ascontiguousarray(x).reshape(-1), index, col.reshape(-1))
                product(w, col.reshape(cols_shape), res)
                return out
            small_gathered.parallel = product is _product  # type: ignore[attr-defined]
            return small_gathered

        unfold = entry(im2col_bounded_serial, c_array(5, w.dtype), c_array(3, w.dtype), *unfold_args)

        def small(x: np.ndarray) -> np.ndarray:
            out, res = empty(x)
            col = SCRATCH.get(1, col_shape, x.dtype)
            unfold(np.ascontiguousarray(x).reshape(x5_shape), col, *unfold_args)
            product(w, col.reshape(cols_shape), res)
            return out
        small.parallel = product is _product  # type: ignore[attr-defined]
        return small

    padding = pad_geometry(x5_shape, kk, s, d, pb, o3)

    def unfolded(x: np.ndarray) -> np.ndarray:
        out, res = empty(x)
        x5 = np.ascontiguousarray(x).reshape(x5_shape)
        if s != [1, 1, 1] or not _wide_products(x5, w, res, kk, d, pb, o3, ck, g):
            _unfolded_products(x5, w, res, kk, s, d, pb, o3, ck, g, padding)
        return out
    unfolded.parallel = True  # type: ignore[attr-defined]  # parallel unfolds and a widened BLAS, mostly
    return unfolded


# ---- small maps: the product with output pixels as rows ------------------------------------------------------
# A late stage's dense convolution (ResNet-50's [1, 512, 7, 7] 3x3 -> 512, its 1x1s at 7x7 and 14x14) has
# few output pixels and many channels: as out [Cout, P] = W [Cout, C*K] @ col [C*K, P] its product is 49-196
# columns wide, which irnorm's 32-column GEMM panels cover with masked or half panels, and the threads
# split the columns into two or three blocks.  Transposed -- out^T [P, Cout] = col^T [P, K*C] @ W^T -- the
# panels are the output channels (full, split evenly over the threads) and the pixels the kernel's rows.
# pixel_rows_conv copies the input once channels-last and zero-padded, unfolds each output pixel's taps as
# contiguous runs of C values (no unfold for a 1x1 with unit strides), multiplies on the threads, and writes
# out = (out^T)^T with the step's epilogue.  The weights are laid out once in panels of NR output channels, each
# panel's K x NR values contiguous: at batch 1 such a layer is bound by reading its weights from memory (9 MB
# for ResNet-50's 3x3 -> 512), and one contiguous stream a panel prefetches where rows 2 KB apart did not
# (in ResNet-50: 1.0 -> 0.70 ms a layer-4 3x3, OpenVINO's 0.66).  Measured on the AVX-512 EPYC, 2 threads,
# standalone (the path before in brackets): [1, 512, 7, 7] 3x3 -> 512 1.11 -> 0.55 ms [banded], [1, 256, 14, 14]
# 3x3 -> 256 0.84 -> 0.58 [banded], 3x3 / 2 [1, 512, 14, 14] -> 512 1.34 -> 0.58 and [1, 256, 28, 28] -> 256
# 1.05 -> 0.63 [banded], 1x1 / 2 [1, 1024, 14, 14] -> 2048 0.95 -> 0.69 [small_gathered], 1x1 [1, 2048, 7, 7]
# -> 512 0.49 -> 0.33 and [1, 512, 7, 7] -> 2048 0.35 -> 0.31 [pointwise]; a 1x1 with unit strides at 14x14
# (196 pixels) stays pointwise_rows (0.25 against 0.30).  ResNet-50 at 224x224: 28.4 -> 24.5 ms a call
# (OpenVINO 19.2).  Where irnorm's GEMM kernels run, float32, one group, a 2-D convolution of at most
# PIXEL_ROWS_MAX output pixels an image (PIXEL_ROWS_DIRECT_MAX for a 1x1 with unit strides and no padding),
# at least PIXEL_ROWS_MIN_COUT output channels, PIXEL_ROWS_MIN_DEPTH taps x channels and PIXEL_ROWS_MIN_MACS
# multiply-adds, unless the dense map below takes it.
PIXEL_ROWS_MAX = 256
PIXEL_ROWS_DIRECT_MAX = 100  # a 1x1 with unit strides (no unfold either way): pointwise_rows was ahead from 196
PIXEL_ROWS_MIN_COUT = 192  # [1, 96, 7, 7] 3x3 -> 192 69 against 108 us; -> 128 on 8x8 and 14x14 maps was slower
PIXEL_ROWS_MIN_DEPTH = 64
PIXEL_ROWS_MIN_MACS = 1 << 22  # below, four parallel passes cost more than they save (the one-call paths win)


def _pixel_rows_fits(x5_shape: tuple[int, ...], g: int, cpg: int, dtype: np.dtype, kk, s, pb, o3, ck: int) -> bool:
    if not (microgemm.ENABLED and g == 1 and dtype == np.float32 and kk[0] == 1 and o3[0] == 1 and x5_shape[2] == 1
            and cpg >= PIXEL_ROWS_MIN_COUT and ck >= PIXEL_ROWS_MIN_DEPTH):
        return False
    pixels = o3[1] * o3[2]
    direct = kk[1] == kk[2] == 1 and s[1] == s[2] == 1 and pb[1] == pb[2] == 0
    return (0 < pixels <= (PIXEL_ROWS_DIRECT_MAX if direct else PIXEL_ROWS_MAX)
            and x5_shape[0] * cpg * ck * pixels >= PIXEL_ROWS_MIN_MACS)


# The one-call path's small products (gemm_epilogue: out [Cout, P] = W @ col per image) take the pixel rows on the
# calling thread instead (pixel_rows_serial: every image's pixels the rows of one product, the weights read once a
# call) where that needs at most PIXEL_ROWS_SERIAL_SHARE of the GEMM tiles -- ceil(rows / MR) x the panels of the
# columns (_row_cost) -- for filters of more than one tap and at least PIXEL_ROWS_SERIAL_MIN_DEPTH taps x channels
# (below, the channels-last unfold costs what the tiles save).  A late stage's 3x3 at batch 2, [2, 64, 3, 3] -> 64:
# W [64, 576] @ col [576, 9] twice fills 9 of each 32-column panel (6 x 0.5 panels an image); as [18, 576] @
# [576, 64], 2 x 2.  Measured (Xeon with AVX-512, 2 threads, bias + Relu, interleaved medians): [2, 64, 3, 3]
# -> 64 30.8 -> 19.7 us, [1, 64, 3, 3] -> 64 16.7 -> 11.5, [2, 32, 5, 5] -> 32 20.5 -> 18.3, 3x3 / 2 [2, 32, 5,
# 5] -> 64 17.1 -> 13.2; where the rule declines, [1, 32, 5, 5] -> 32 11.7 / 10.6, [4, 64, 4, 4] -> 64 63 / 60,
# [1, 64, 4, 4] -> 64 17.9 / 18.6, [1, 128, 4, 4] -> 128 54.6 / 53.0, [2, 16, 10, 10] 3x3 / 2 -> 32 (144 taps x
# channels) 12.9 / 13.9, and a 1x1 [1, 256, 7, 7] -> 64 (no unfold before) 21.7 / 27.4.
PIXEL_ROWS_SERIAL_SHARE = 0.85
PIXEL_ROWS_SERIAL_MIN_DEPTH = 256


def _pixel_rows_serial_fits(n: int, cout: int, ck: int, kk, o3) -> bool:
    """Whether a float32 2-D convolution of one group that the one-call path would take (`n` images, `cout`
    output channels, `ck` taps x channels, filter kk, output o3) takes pixel_rows_serial (above)."""
    if not (microgemm.ENABLED and kk[0] == 1 and o3[0] == 1 and kk[1] * kk[2] > 1
            and ck >= PIXEL_ROWS_SERIAL_MIN_DEPTH):
        return False
    pixels = o3[1] * o3[2]
    if pixels <= DOT_MAX_COLS:  # (the one-call path's dot products)
        return False
    by_channels = n * -(-cout // microgemm.MR) * _row_cost(pixels)
    by_pixels = -(-n * pixels // microgemm.MR) * _row_cost(cout)
    return by_pixels <= PIXEL_ROWS_SERIAL_SHARE * by_channels


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _channels_last(x, img, xh, y0, y1, ph, pw, wp):  # pragma: no cover - compiled
    """Rows y0..y1-1 of image `img` of x [N, C, H, W], zero-padded by ph, pw and channels-last:
    xh[(yy * wp + xx) * C + ch]."""
    c, h, w = x.shape[1], x.shape[2], x.shape[3]
    for yy in range(y0, y1):
        iy = yy - ph
        for xx in range(wp):
            ix = xx - pw
            base = (yy * wp + xx) * c
            if 0 <= iy < h and 0 <= ix < w:
                for ch in range(c):
                    xh[base + ch] = x[img, ch, iy, ix]
            else:
                for ch in range(c):
                    xh[base + ch] = 0.0


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _pixel_taps(xh, col, q0, q1, row0, c, ow, wp, kh, kw, sh, sw, dh, dw):  # pragma: no cover - compiled
    """Output pixels q0..q1-1's taps (ky, kx, c) from the channels-last xh as runs of c values: col's rows
    row0 + q."""
    for q in range(q0, q1):
        oy, ox = q // ow, q % ow
        for ky in range(kh):
            for kx in range(kw):
                src = ((oy * sh + ky * dh) * wp + ox * sw + kx * dw) * c
                dst = (ky * kw + kx) * c
                for ch in range(c):
                    col[row0 + q, dst + ch] = xh[src + ch]


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def pixel_rows_conv(x, wt, out, xh, col, outt, kh, kw, sh, sw, dh, dw, ph, pw, direct, tasks, res, bias, code, p0,
                    p1, k):  # pragma: no cover - compiled
    """A float32 2-D convolution by pixel rows (see above): x [N, C, H, W], wt [panels, KH * KW * C, NR] (W^T
    with the taps (ky, kx, c) in that order, cut into panels of NR output channels, the last one zero-filled),
    out [N, Cout, OH, OW]; scratch xh [HP * WP * C] (the zero-padded channels-last input), col [OH * OW,
    KH * KW * C] (unused when `direct`: a 1x1 with unit strides and no padding reads xh as its col), outt
    [OH * OW, panels * NR].  Each image's panels are cut into `tasks` ranges; its rows finished with the
    epilogue (epilogue_range)."""
    n_count, c, h, w = x.shape
    cout, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    hp, wp = h + 2 * ph, w + 2 * pw
    hp = max(hp, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(wp, (ow - 1) * sw + (kw - 1) * dw + 1)
    p = oh * ow
    panels, depth, nr = wt.shape
    wide = panels * nr
    rows = out.reshape((n_count * cout, p))
    ot = outt.reshape((p, wide))
    a = xh.ctypes.data if direct else col.ctypes.data
    for img in range(n_count):
        # the input channels-last, zero-padded: xh[(yy * wp + xx) * c + ch]
        for t in prange(tasks):
            _channels_last(x, img, xh, t * hp // tasks, (t + 1) * hp // tasks, ph, pw, wp)
        if not direct:  # each pixel's taps as runs of c values
            for t in prange(tasks):
                _pixel_taps(xh, col, t * p // tasks, (t + 1) * p // tasks, 0, c, ow, wp, kh, kw, sh, sw, dh, dw)
        for t in prange(tasks):
            for j in range(t * panels // tasks, (t + 1) * panels // tasks):
                # a panel's weights are one contiguous stream (read once a call: at batch 1 a late stage's
                # convolution is bound by reading its weights from memory)
                microgemm.gemm(np.int64(p), np.int64(nr), np.int64(depth), np.int64(a), np.int64(depth),
                               np.int64(wt.ctypes.data + 4 * j * depth * nr), np.int64(nr),
                               np.int64(outt.ctypes.data + 4 * j * nr), np.int64(wide), np.int64(0), np.int64(nr))
        for t in prange(tasks):
            r0, r1 = t * cout // tasks, (t + 1) * cout // tasks
            for c0 in range(r0, r1, 16):
                c1 = min(r1, c0 + 16)
                for q in range(p):
                    for co in range(c0, c1):
                        rows[img * cout + co, q] = ot[q, co]
            epilogue_range(rows, res, bias, cout, code, p0, p1, k, img * cout + r0, img * cout + r1)


@njit(nogil=True, cache=True, error_model="numpy")
def pixel_rows_serial(x, wt, out, kh, kw, sh, sw, dh, dw, ph, pw, res, bias, code, p0, p1,
                      k):  # pragma: no cover - compiled
    """pixel_rows_conv on the calling thread with every image's pixels as the rows of one product: wt [KH * KW
    * C, Cout] (W^T, taps (ky, kx, c), not in panels: a narrow layer's last panel would be mostly zeros), the
    columns [N * OH * OW, KH * KW * C] so that the weights are read once a call, not once an image; then out =
    (out^T)^T with the step's epilogue.  Its buffers are its own (Numba's allocator: less than a third of what
    three numpy arrays cost a call from Python)."""
    n_count, c, h, w = x.shape
    cout, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    hp = max(h + 2 * ph, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(w + 2 * pw, (ow - 1) * sw + (kw - 1) * dw + 1)
    p = oh * ow
    depth = wt.shape[0]
    xh = np.empty(hp * wp * c, out.dtype)
    col = np.empty((n_count * p, depth), out.dtype)
    outt = np.empty((n_count * p, cout), out.dtype)
    for img in range(n_count):
        _channels_last(x, img, xh, 0, hp, ph, pw, wp)
        _pixel_taps(xh, col, 0, p, img * p, c, ow, wp, kh, kw, sh, sw, dh, dw)
    microgemm.gemm(np.int64(n_count * p), np.int64(cout), np.int64(depth), np.int64(col.ctypes.data),
                   np.int64(depth), np.int64(wt.ctypes.data), np.int64(cout), np.int64(outt.ctypes.data),
                   np.int64(cout), np.int64(0), np.int64(cout))
    rows = out.reshape((n_count * cout, p))
    for img in range(n_count):
        for c0 in range(0, cout, 16):
            for q in range(p):
                for co in range(c0, min(cout, c0 + 16)):
                    rows[img * cout + co, q] = outt[img * p + q, co]
    epilogue_rows(rows, res, bias, cout, code, p0, p1, k)


def _pixel_rows_plan(x5_shape: tuple[int, ...], w: np.ndarray, out_shape: tuple[int, ...], kk, s, d, pb, o3,
                     epilogue: Epilogue | None, serial: bool = False) -> Callable[..., np.ndarray]:
    """forward_plan's pixel-rows path (pixel_rows_conv, or with `serial` pixel_rows_serial) for float32 inputs
    [N, C, 1, H, W] and weights w [1, Cout, C * KH * KW], with a fused step's epilogue in the same call."""
    import numba

    n, c, _, h, wd = x5_shape
    cout = w.shape[1]
    kh, kw = kk[1], kk[2]
    oh, ow = o3[1], o3[2]
    depth = kh * kw * c
    # W^T with the taps (ky, kx, c) in the order the kernels unfold them: [KH * KW * C, Cout]
    w_rows = w[0].reshape(cout, c, kh, kw).transpose(2, 3, 1, 0).reshape(depth, cout)
    x4_shape, out4 = (n, c, h, wd), (n, cout, oh, ow)
    e = _epilogue_args(epilogue, w.dtype)
    if serial:
        wt_rows = np.ascontiguousarray(w_rows)
        geometry = (kh, kw, s[1], s[2], d[1], d[2], pb[1], pb[2])
        run_serial = entry(pixel_rows_serial, c_array(4, w.dtype), wt_rows, c_array(4, w.dtype), *geometry,
                           c_array(2, w.dtype), e.bias, e.code, e.p0, e.p1, e.k)

        def call_serial(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
            run_serial((x if x.flags.c_contiguous else np.ascontiguousarray(x)).reshape(x4_shape), wt_rows,
                       out.reshape(out4), *geometry, res_rows, e.bias, e.code, e.p0, e.p1, e.k)
        return _fused_plan("pixel_rows_serial", call_serial,
                           lambda: _pixel_rows_plan(x5_shape, w, out_shape, kk, s, d, pb, o3, None, True), epilogue,
                           out_shape, w.dtype, e.no_res, False)
    # in panels of NR output channels (zero-filled past Cout): [panels, KH * KW * C, NR]
    nr = microgemm.NR
    panels = -(-cout // nr)
    wt_full = np.zeros((depth, panels * nr), w.dtype)
    wt_full[:, :cout] = w_rows
    wt = np.ascontiguousarray(wt_full.reshape(depth, panels, nr).transpose(1, 0, 2))
    del wt_full
    direct = kh == 1 and kw == 1 and s[1] == 1 and s[2] == 1 and pb[1] == 0 and pb[2] == 0
    hp = max(h + 2 * pb[1], (oh - 1) * s[1] + (kh - 1) * d[1] + 1)
    wp = max(wd + 2 * pb[2], (ow - 1) * s[2] + (kw - 1) * d[2] + 1)
    p = oh * ow
    threads = numba.config.NUMBA_NUM_THREADS
    tasks = max(1, min(threads, panels))
    geometry = (kh, kw, s[1], s[2], d[1], d[2], pb[1], pb[2], direct, tasks)
    run = entry(pixel_rows_conv, c_array(4, w.dtype), c_array(3, w.dtype), c_array(4, w.dtype), c_array(1, w.dtype),
                c_array(2, w.dtype), c_array(2, w.dtype), *geometry, c_array(2, w.dtype), e.bias, e.code, e.p0, e.p1,
                e.k)
    xh_size, col_shape = hp * wp * c, (0, 1) if direct else (p, kh * kw * c)

    def call(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
        xh = SCRATCH.get(0, (xh_size,), w.dtype)
        col = SCRATCH.get(1, col_shape, w.dtype)
        outt = SCRATCH.get(2, (p, panels * nr), w.dtype)
        run(np.ascontiguousarray(x).reshape(x4_shape), wt, out.reshape(out4), xh, col, outt, *geometry, res_rows,
            e.bias, e.code, e.p0, e.p1, e.k)
    return _fused_plan("pixel_rows", call, lambda: _pixel_rows_plan(x5_shape, w, out_shape, kk, s, d, pb, o3, None),
                       epilogue, out_shape, w.dtype, e.no_res, tasks > 1)


def _banded_plan(gemm: Any, x5_shape: tuple[int, ...], w: np.ndarray, out_shape: tuple[int, ...], kk, s, d, pb, o3,
                 epilogue: Epilogue | None) -> Callable[..., np.ndarray]:
    """forward_plan's banded path (banded_conv) for inputs of shape x5_shape [N, C, 1, H, W], with a fused
    step's epilogue in the same call (a pass of its own and a second parallel launch before: ResNet's 7x7 / 2
    stem [1, 3, 64, 64] -> 64 with bias + Relu, medians 94-102 -> 91-97 us, Xeon with AVX-512, 2 threads)."""
    import numba

    n, c = x5_shape[:2]
    ck, oh, ow = w.shape[2], o3[1], o3[2]
    kh, kw, sh, sw, dh, dw = kk[1], kk[2], s[1], s[2], d[1], d[2]
    hp, wp = (oh - 1) * sh + (kh - 1) * dh + 1, (ow - 1) * sw + (kw - 1) * dw + 1
    per_image = max(-(-oh // max(1, BAND_ELEMS // (ck * ow))), min(oh, -(-BAND_MIN_JOBS // n)))
    band = -(-oh // per_image)  # equal bands
    jobs = n * -(-oh // band)
    w2 = w[0]
    padded = padded_planes_plan(x5_shape, hp, wp, pb, 0)
    one, zero = w.dtype.type(1), w.dtype.type(0)
    out4 = (n, out_shape[1], oh, ow)
    gemm_at, blas_int = blas.gemm_address(w.dtype)

    e = _epilogue_args(epilogue, w.dtype)

    def call(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
        xp = padded(x)
        tasks = max(1, min(jobs, numba.get_num_threads()))  # groups of bands: the bits do not depend on it
        banded_conv(gemm_at, blas_int, xp, w2, out.reshape(out4), c, hp, wp, kh, kw, sh, sw, dh, dw, band, tasks, one,
                    zero, res_rows, e.bias, e.code, e.p0, e.p1, e.k)
    return _fused_plan("banded", call, lambda: _banded_plan(gemm, x5_shape, w, out_shape, kk, s, d, pb, o3, None),
                       epilogue, out_shape, w.dtype, e.no_res, True)


# A dense convolution whose product is one single-threaded GEMM and whose output is below PARALLEL_MIN (a
# 1x1 convolution, or the small path's unfold) runs as one Numba call: the unfold (an index-table gather on
# narrow rows, else the bounded unfold), one cblas_?gemm per image writing the output, and the fused step's
# epilogue (bias, residual, activation) on the product while it is in cache.  As separate calls -- the
# output's and the buffer's allocation, the unfold, np.matmul, the epilogue -- each cost 1-3 us of Python
# around 5-10 us of arithmetic (a ResNet-18's [1, 64, 2, 2] 3x3 convolution with its residual: ~40 us).
ONE_CALL_MAX = PARALLEL_MIN  # output elements (above it the epilogue is a parallel pass of its own)

# A one-call product with at most this many columns (output pixels per image: a late stage's 2x2 or 1x1
# maps) is computed as dot products (_dot_columns) rather than by cblas_?gemm, which packs both operands
# for a product this narrow: [64, 576] x [576, 4] 12.2 -> 5.4 us, [320, 1152] x [1152, 4] 117 -> 78 us
# (AVX2 EPYC, one thread).
DOT_MAX_COLS = 4


@njit(nogil=True, cache=True, fastmath={"reassoc"}, error_model="numpy")
def _dot_four(w, t, out, zero):  # pragma: no cover
    """_dot_columns' products for four columns (t [4, CK]: the columns laid out as rows): four sums per
    pass over a row of w."""
    t0, t1, t2, t3 = t[0], t[1], t[2], t[3]
    for co in range(w.shape[0]):
        wr = w[co]
        a0 = a1 = a2 = a3 = zero
        for k in range(w.shape[1]):
            v = wr[k]
            a0 += v * t0[k]
            a1 += v * t1[k]
            a2 += v * t2[k]
            a3 += v * t3[k]
        out[co, 0] = a0
        out[co, 1] = a1
        out[co, 2] = a2
        out[co, 3] = a3


@njit(nogil=True, cache=True, fastmath={"reassoc"}, error_model="numpy")
def _dot_columns(w, col, out):  # pragma: no cover
    """out [Cout, P] = w [Cout, CK] @ col [CK, P] for a narrow product (P <= DOT_MAX_COLS; all
    C-contiguous): col's columns laid out as rows once, then each output a dot product of two contiguous
    rows, the sum reassociated so that it runs in vector lanes (as BLAS reassociates its sums; the lanes'
    order follows the CPU's vector width, as OpenBLAS's kernels do)."""
    cout, ck = w.shape
    p = col.shape[1]
    t = np.empty((p, ck), w.dtype)
    for k in range(ck):
        for j in range(p):
            t[j, k] = col[k, j]
    zero = cast_like(0.0, w)
    if p == 4:
        _dot_four(w, t, out, zero)
        return
    for co in range(cout):
        wr = w[co]
        for j in range(p):
            out[co, j] = dot_lanes(wr, t[j], zero)


@njit(nogil=True, cache=True, error_model="numpy")
def gemm_epilogue(gemm_at, blas_int, x, mode, index, unfold_args, w, out, res, bias, code, p0, p1, k, one,
                  zero, dots):  # pragma: no cover
    """out [N, Cout, P] = w [Cout, CK] @ the columns of each image of x [N, C, D, H, W], then in place
    + bias[channel] (when bias is not empty), + res [N * Cout, P] (when res has rows), then activation
    `code` (none when negative) -- the operations of the Add / Add / activation layers, in their order.
    mode 0: x is its own columns (a 1x1 convolution); 1: gathered by `index` (unfold_index); 2: the
    bounded unfold with `unfold_args` (im2col_bounded_serial's).  With `dots` the products are
    _dot_columns' instead of cblas_?gemm calls."""
    n_count, cout, p = out.shape
    ck = w.shape[1]
    item = out.itemsize
    if mode == 0:
        src = x.reshape(-1)
    else:
        src = np.empty(n_count * ck * p, out.dtype)
        if mode == 1:
            _gather_padded(x.reshape(-1), index, src, zero)
        else:
            a = unfold_args
            im2col_bounded_serial(x, src.reshape((n_count, ck, p)), a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
                                  a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15])
    for b in range(n_count):
        if dots:  # a narrow product (the plan's choice: DOT_MAX_COLS)
            _dot_columns(w, src[b * ck * p:(b + 1) * ck * p].reshape((ck, p)), out[b])
        else:
            gemm_nn(gemm_at, blas_int, cout, p, ck, one, w.ctypes.data, ck, src.ctypes.data + b * ck * p * item, p,
                    zero, out.ctypes.data + b * cout * p * item, p)
    epilogue_rows(out.reshape((n_count * cout, p)), res, bias, cout, code, p0, p1, k)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def epilogue_rows(rows, res, bias, c_count, code, p0, p1, k):  # pragma: no cover
    """A fused step's epilogue in place on its output as rows [N * C, P], on the calling thread: + bias[row %
    c_count] (when bias is not empty), + res [N * C, P] (when res has rows), then activation `code` (none when
    negative) -- the element operations of the Add / Add / activation layers (kernels/activation.py's)."""
    epilogue_range(rows, res, bias, c_count, code, p0, p1, k, 0, rows.shape[0])


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def epilogue_range(rows, res, bias, c_count, code, p0, p1, k, r0, r1):  # pragma: no cover
    """epilogue_rows on rows r0..r1-1 only (a thread's share)."""
    if res.shape[0] > 0:
        residual_rows(code, rows, res, bias, c_count, r0, r1, p0, p1, k)
    elif bias.shape[0] > 0 or code >= 0:
        if rows.shape[1] <= SHORT_ROW_MAX:
            _bias_act_short_rows(code, rows, bias, c_count, False, r0, r1, p0, p1, k)
        else:
            _bias_act_rows(code, rows, bias, c_count, r0, r1, p0, p1, k)


class _EpilogueArgs(NamedTuple):
    """An Epilogue as epilogue_rows' arguments in the data's dtype (no residual: an empty [0, 1] array)."""
    no_res: np.ndarray
    bias: np.ndarray
    code: int
    p0: Any
    p1: Any
    k: np.ndarray


def _epilogue_args(epilogue: Epilogue | None, dtype: np.dtype) -> _EpilogueArgs:
    bias, code, p0, p1, _ = epilogue if epilogue is not None else (None, -1, 0.0, 0.0, False)
    ftype = np.dtype(dtype).type
    b = np.zeros(0, dtype) if bias is None else np.ascontiguousarray(bias, dtype).reshape(-1)
    return _EpilogueArgs(np.zeros((0, 1), dtype), b, code, ftype(p0), ftype(p1),
                         _K64 if dtype == np.float64 else _K32)


def _residual_rows(epilogue: Epilogue | None, res: np.ndarray | None, rows_shape: tuple[int, int],
                   none: np.ndarray) -> np.ndarray:
    if epilogue is None or not epilogue.residual:
        return none
    return (res if res.flags.c_contiguous else np.ascontiguousarray(res)).reshape(rows_shape)


def _broadcasts(epilogue: Epilogue | None, res: np.ndarray | None, out_shape: tuple[int, ...],
                dtype: np.dtype) -> bool:
    """A fused residual that is not of the output's shape and type at run time (it broadcasts): the
    layers' own way then (with_epilogue)."""
    return epilogue is not None and epilogue.residual and (res.shape != out_shape or res.dtype != dtype)


def _gemm_epilogue_plan(gemm: Any, x5_shape: tuple[int, ...], w: np.ndarray, out_shape: tuple[int, ...], mode: int,
                        index: np.ndarray | None, unfold_args: tuple[int, ...], epilogue: Epilogue | None
                        ) -> Callable[..., np.ndarray]:
    """forward_plan's one-call path (gemm_epilogue) for inputs of shape x5_shape [N, C, D, H, W]."""
    dtype = w.dtype
    n, cout = out_shape[0], out_shape[1]
    p = prod(out_shape[2:])
    w2 = w[0]
    idx = index if index is not None else NO_INDEX
    ua = tuple(int(a) for a in unfold_args)
    e = _epilogue_args(epilogue, dtype)
    one, zero = dtype.type(1), dtype.type(0)
    rows_shape = (n * cout, p)
    gemm_at, blas_int = blas.gemm_address(dtype)
    dots = p <= DOT_MAX_COLS
    run = entry(gemm_epilogue, gemm_at, blas_int, c_array(5, dtype), mode, idx, ua, w2, c_array(3, dtype),
                c_array(2, dtype), e.bias, e.code, e.p0, e.p1, e.k, one, zero, dots)
    out3 = (n, cout, p)
    if epilogue is None or not epilogue.residual:
        no_res, bias, code, p0, p1, k = e

        def plain(x: np.ndarray, res: np.ndarray | None = None) -> np.ndarray:
            # no residual operand: nothing to check or reshape for it (~0.4 us of a small layer's call)
            out = OUTPUTS.empty(out_shape, dtype)
            run(gemm_at, blas_int, (x if x.flags.c_contiguous else np.ascontiguousarray(x)).reshape(x5_shape), mode,
                idx, ua, w2, out.reshape(out3), no_res, bias, code, p0, p1, k, one, zero, dots)
            return out
        plain.fused = True  # type: ignore[attr-defined]
        return plain

    _, bias, code, p0, p1, k = e

    def fused(x: np.ndarray, res: np.ndarray | None = None) -> np.ndarray:
        x = x if x.flags.c_contiguous else np.ascontiguousarray(x)
        if res.shape != out_shape or res.dtype != dtype:  # (_broadcasts, the residual being there)
            return with_epilogue(_gemm_epilogue_plan(gemm, x5_shape, w, out_shape, mode, index, unfold_args, None),
                                 epilogue)(x, res)
        r = (res if res.flags.c_contiguous else np.ascontiguousarray(res)).reshape(rows_shape)
        out = OUTPUTS.empty(out_shape, dtype)
        run(gemm_at, blas_int, x.reshape(x5_shape), mode, idx, ua, w2, out.reshape(out3), r, bias, code, p0, p1, k,
            one, zero, dots)
        return out
    fused.fused = True  # type: ignore[attr-defined]
    return fused


# A convolution every one of whose windows covers the whole input plane (a late stage's 2x2 maps under 3x3
# filters with padding) is a dense linear map of the whole input: out[n] = D [Cout * P, C * H * W] @ x[n] with D
# the taps that land inside the input placed at their input pixels, planned once -- no unfold, no padded taps,
# and the product as dot products of contiguous rows (linear.py's narrow products).  Only where every window
# covers every pixel: D then has no entry that is not a tap, so an inf or NaN input reaches exactly the outputs
# it reaches in the layer.  ResNet-18's [1, 64, 2, 2] 3x3 + bias + residual + Relu step: 7.8 -> 4.4 us.  For at
# most DENSE_MAX_IMAGES images and DENSE_MAX_WEIGHTS values of D.
DENSE_MAX_WEIGHTS = 1 << 18
DENSE_MAX_IMAGES = 4


@njit(nogil=True, cache=True, error_model="numpy")
def dense_conv(x, dense, out, res, bias, code, p0, p1, k):  # pragma: no cover
    """out [N, Cout, P] = dense [Cout * P, C * H * W] @ each image of x [N, C * H * W], then in place + bias[channel]
    (when bias is not empty), + res [N * Cout, P] (when res has rows), then activation `code` (none when negative):
    gemm_epilogue's epilogue."""
    n_count, cout, p = out.shape
    _narrow_dots(x, dense, out.reshape((n_count, cout * p)), 0, dense.shape[0], k[0])
    epilogue_rows(out.reshape((n_count * cout, p)), res, bias, cout, code, p0, p1, k)


def _dense_fits(x5_shape: tuple[int, ...], cout: int, kk, s, d, pb, o3) -> bool:
    """_dense_plan applies: few images, D small enough, and every window covering every input pixel."""
    n, c = x5_shape[:2]
    dims = x5_shape[2:]
    q, p_out = prod(dims), prod(o3)
    if n > DENSE_MAX_IMAGES or not 1 < q <= prod(kk) or cout * p_out * c * q > DENSE_MAX_WEIGHTS:
        return False
    # along each axis, every output's taps reach every input position
    for size, k, st, dl, pad, out in zip(dims, kk, s, d, pb, o3, strict=True):
        for o in range(out):
            if {o * st - pad + t * dl for t in range(k)} & set(range(size)) != set(range(size)):
                return False
    return True


def _dense_plan(x5_shape: tuple[int, ...], w: np.ndarray, out_shape: tuple[int, ...], kk, s, d, pb, o3,
                epilogue: Epilogue | None) -> Callable[..., np.ndarray]:
    """forward_plan's dense-map path (dense_conv) for inputs of shape x5_shape [N, C, D, H, W], w [1, Cout, CK]."""
    n, c = x5_shape[:2]
    dims = x5_shape[2:]
    cout = w.shape[1]
    taps = w[0].reshape(cout, c, kk[0], kk[1], kk[2])
    dense = np.zeros((cout, prod(o3), c, prod(dims)), w.dtype)
    for pi, (oz, oy, ox) in enumerate(np.ndindex(*o3)):
        for kz, ky, kx in np.ndindex(*kk):
            iz, iy, ix = (oz * s[0] - pb[0] + kz * d[0], oy * s[1] - pb[1] + ky * d[1], ox * s[2] - pb[2] + kx * d[2])
            if 0 <= iz < dims[0] and 0 <= iy < dims[1] and 0 <= ix < dims[2]:
                dense[:, pi, :, (iz * dims[1] + iy) * dims[2] + ix] = taps[:, :, kz, ky, kx]
    dense = dense.reshape(cout * prod(o3), c * prod(dims))
    e = _epilogue_args(epilogue, w.dtype)
    x2, out3 = (n, c * prod(dims)), (n, cout, prod(o3))
    run = entry(dense_conv, c_array(2, w.dtype), dense, c_array(3, w.dtype), c_array(2, w.dtype), e.bias, e.code,
                e.p0, e.p1, e.k)

    def call(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
        run(np.ascontiguousarray(x).reshape(x2), dense, out.reshape(out3), res_rows, e.bias, e.code, e.p0, e.p1, e.k)
    return _fused_plan("dense", call, lambda: _dense_plan(x5_shape, w, out_shape, kk, s, d, pb, o3, None), epilogue,
                       out_shape, w.dtype, e.no_res, False)


# A squeeze-and-excitation block on a tensor below ONE_CALL_MAX elements (every one in EfficientNet-B0,
# MobileNetV3 and RegNetY at their export sizes) runs as one Numba call: the ReduceMean's row sums, the two
# 1x1 products as gemm_epilogue makes them with their epilogues, and the channel-scale Multiply.  As four
# calls (the ReduceMean kernel, two convolution plans, numpy's broadcasting Multiply) the block cost ~21 us
# on [1, 288, 2, 2], nearly all of it the calls around ~1 us of arithmetic.
@njit(nogil=True, cache=True, error_model="numpy")
def squeeze_excite(x, out, divisor, w1, b1, code1, q0, q1, w2, b2, code2, r0, r1, k):  # pragma: no cover
    """out [N, C, S] = x [N, C, S] * gate[n, c], gate = act2(w2 @ act1(w1 @ mean_S(x) + b1) + b2): the
    operations of ReduceMean (kernels/reduce.py's rows), the two 1x1 convolutions' one-call path (one
    column per image: _dot_columns, then the bias / activation epilogue) and Multiply, in their order."""
    n, c, s = x.shape
    mid = w1.shape[0]
    means = np.empty(n * c, x.dtype)
    _rows_to(REDUCE_SUM, x.reshape((n * c, s)), means, divisor, False)
    h = np.empty((n * mid, 1), x.dtype)
    gate = np.empty((n * c, 1), x.dtype)
    for b in range(n):  # one column per image: the dot products of gemm_epilogue's narrow products
        _dot_columns(w1, means[b * c:(b + 1) * c].reshape((c, 1)), h[b * mid:(b + 1) * mid])
    if b1.shape[0] > 0 or code1 >= 0:
        _bias_act_short_rows(code1, h, b1, mid, False, 0, n * mid, q0, q1, k)
    for b in range(n):
        _dot_columns(w2, h[b * mid:(b + 1) * mid], gate[b * c:(b + 1) * c])
    if b2.shape[0] > 0 or code2 >= 0:
        _bias_act_short_rows(code2, gate, b2, c, False, 0, n * c, r0, r1, k)
    xr = x.reshape((n * c, s))
    outr = out.reshape((n * c, s))
    for r in range(n * c):
        gv = gate[r, 0]
        for i in range(s):
            outr[r, i] = xr[r, i] * gv


def squeeze_excite_plan(shape: tuple[int, ...], dtype: np.dtype, w1: np.ndarray, first: Epilogue, w2: np.ndarray,
                        second: Epilogue) -> Callable[[np.ndarray], np.ndarray] | None:
    """squeeze_excite for inputs of this shape [N, C, *spatial] and f32/f64 dtype, the 1x1 convolutions'
    prepared weights w1 [1, mid, C] and w2 [1, C, mid] (x's dtype) with their epilogues (no residual); None
    where the block's layers would not take the one-call paths (no driven BLAS, too large)."""
    dtype = np.dtype(dtype)
    n, c, mid = shape[0], shape[1], w1.shape[1]
    size = prod(shape)
    address = blas.gemm_address(dtype) if dtype in (np.float32, np.float64) else None
    if (address is None or size == 0 or size >= ONE_CALL_MAX or n * max(c, mid) >= ONE_CALL_MAX
            or w1.dtype != dtype or w2.dtype != dtype or w1.shape != (1, mid, c) or w2.shape != (1, c, mid)):
        return None
    x3 = (n, c, size // (n * c))
    divisor = float(x3[2])
    ftype, k = dtype.type, (_K64 if dtype == np.float64 else _K32)
    a1, a2 = np.ascontiguousarray(w1[0]), np.ascontiguousarray(w2[0])
    b1 = np.zeros(0, dtype) if first.bias is None else np.ascontiguousarray(first.bias, dtype).reshape(-1)
    b2 = np.zeros(0, dtype) if second.bias is None else np.ascontiguousarray(second.bias, dtype).reshape(-1)
    args = (divisor, a1, b1, first.code, ftype(first.p0), ftype(first.p1), a2, b2, second.code, ftype(second.p0),
            ftype(second.p1), k)
    run = entry(squeeze_excite, c_array(3, dtype), c_array(3, dtype), *args)

    def block(x: np.ndarray) -> np.ndarray:
        x = x if x.flags.c_contiguous else np.ascontiguousarray(x)
        out = OUTPUTS.empty(shape, dtype)
        run(x.reshape(x3), out.reshape(x3), *args)
        return out
    return block


def _product_narrow(w: np.ndarray, col: np.ndarray, out: np.ndarray) -> None:
    """out = w @ col on the calling thread, for a product too small ever to get more threads (float32 by
    irnorm's kernels, blas.product)."""
    blas.product(w, col, out, None)


def _product(w: np.ndarray, col: np.ndarray, out: np.ndarray) -> None:
    """out = w @ col (BLAS), a large product cut into column blocks on several threads (kernels/blas.py)."""
    blocks = blas.column_blocks(w.shape[-2], col.shape[-1], col.shape[-2],
                                col.size // max(1, col.shape[-1] * col.shape[-2]))
    blas.product(w, col, out, blocks)


def _padded_planes(x5: np.ndarray, hp: int, wp: int, pb, spare: int) -> np.ndarray:
    """The [N, C, 1, H, W] input's planes as [N, C, hp, wp] with pb[1] / pb[2] zero rows / columns before
    (and zeros after), flattened, plus `spare` zeros at the end for reads that run past the last plane."""
    return padded_planes_plan(x5.shape, hp, wp, pb, spare)(x5)


def _fill_geometry(x5_shape: tuple[int, ...], hp: int, wp: int, pb) -> tuple[int, ...]:
    """fill_padded's (planes, h, w, ys, ye, xs, xe, y0, x0) for [N, C, 1, H, W] inputs padded to hp x wp
    planes with pb[1] / pb[2] zero rows / columns before."""
    n, c, _, h, w = x5_shape
    lo = (-pb[1], -pb[2])
    ys, ye = max(lo[0], 0), min(lo[0] + hp, h)
    xs, xe = max(lo[1], 0), min(lo[1] + wp, w)
    if ye <= ys or xe <= xs:
        ys = ye = xs = xe = 0  # nothing of the input inside: all zeros
    return n * c, h, w, ys, ye, xs, xe, ys - lo[0], xs - lo[1]


def padded_planes_plan(x5_shape: tuple[int, ...], hp: int, wp: int, pb, spare: int
                       ) -> Callable[[np.ndarray], np.ndarray]:
    """_padded_planes for inputs of this shape, its geometry worked out once (a direct convolution keeps
    it per input shape: on [1, 16, 8, 8] the arithmetic cost as much as the copy)."""
    n, c, _, h, w = x5_shape
    size = n * c * hp * wp
    planes, _, _, ys, ye, xs, xe, y0, x0 = _fill_geometry(x5_shape, hp, wp, pb)

    fills: dict = {}  # dtype -> fill_padded's entry point (jit.entry)

    def fill(x5: np.ndarray) -> np.ndarray:
        buf = SCRATCH.get(0, (size + spare,), x5.dtype)  # a reused buffer: every element is written below
        run_fill = fills.get(x5.dtype)
        if run_fill is None:
            run_fill = fills[x5.dtype] = entry(fill_padded, buf, planes, h, w, buf, hp, wp, ys, ye, xs, xe, y0, x0, 0)
        run_fill(np.ascontiguousarray(x5).reshape(-1), planes, h, w, buf, hp, wp, ys, ye, xs, xe, y0, x0, 0)
        return buf
    return fill


@njit(nogil=True, cache=True, error_model="numpy")
def _direct_band(xp, w, out, n, c_in, plane0, co0, hp, wp, kh, kw, dh, dw, oy0, oy1, acc_buf):
    """Output rows oy0..oy1-1 of image n, channels co0.. co0 + w.shape[0] - 1, of a stride-1 2-D
    convolution over the c_in input planes from plane0 on (one group's), straight from the zero-padded
    planes xp (flat [N*C planes of hp x wp], spare zeros after; _padded_planes): for every filter tap
    and output channel one multiply-add loop over the band's rows in the padded row width (columns
    past ow read on into the next row or plane and are dropped), accumulating in acc [Cout * band].
    Flat unsigned indices: no views made in the loops, no wraparound checks, the loops vectorize."""
    cout = w.shape[0]
    ow = out.shape[3]
    length = (oy1 - oy0) * wp
    acc = acc_buf[:cout * length].reshape(cout, length)
    acc[:] = 0
    for ci in range(c_in):
        base = (plane0 + ci) * hp * wp + oy0 * wp
        for ky in range(kh):
            if kw == 3:  # the three taps of a filter row in one pass: a third of the accumulator traffic
                src = base + ky * dh * wp
                t = (ci * kh + ky) * 3
                co = 0
                while co + 4 <= cout:
                    a = acc[co:co + 4]
                    w00, w01, w02 = w[co, t], w[co, t + 1], w[co, t + 2]
                    w10, w11, w12 = w[co + 1, t], w[co + 1, t + 1], w[co + 1, t + 2]
                    w20, w21, w22 = w[co + 2, t], w[co + 2, t + 1], w[co + 2, t + 2]
                    w30, w31, w32 = w[co + 3, t], w[co + 3, t + 1], w[co + 3, t + 2]
                    for q in range(length):
                        v0 = xp[np.uintp(src + q)]
                        v1 = xp[np.uintp(src + q + dw)]
                        v2 = xp[np.uintp(src + q + 2 * dw)]
                        a[0, np.uintp(q)] += w00 * v0 + w01 * v1 + w02 * v2
                        a[1, np.uintp(q)] += w10 * v0 + w11 * v1 + w12 * v2
                        a[2, np.uintp(q)] += w20 * v0 + w21 * v1 + w22 * v2
                        a[3, np.uintp(q)] += w30 * v0 + w31 * v1 + w32 * v2
                    co += 4
                for c2 in range(co, cout):
                    w0, w1, w2 = w[c2, t], w[c2, t + 1], w[c2, t + 2]
                    a1 = acc[c2]
                    for q in range(length):
                        a1[np.uintp(q)] += (w0 * xp[np.uintp(src + q)] + w1 * xp[np.uintp(src + q + dw)]
                                            + w2 * xp[np.uintp(src + q + 2 * dw)])
                continue
            for kx in range(kw):
                src = base + ky * dh * wp + kx * dw
                t = (ci * kh + ky) * kw + kx
                co = 0
                while co + 4 <= cout:  # four output channels per pass over the input row: one load, four FMAs
                    w0, w1, w2, w3 = w[co, t], w[co + 1, t], w[co + 2, t], w[co + 3, t]
                    a = acc[co:co + 4]
                    for q in range(length):
                        v = xp[np.uintp(src + q)]
                        a[0, np.uintp(q)] += w0 * v
                        a[1, np.uintp(q)] += w1 * v
                        a[2, np.uintp(q)] += w2 * v
                        a[3, np.uintp(q)] += w3 * v
                    co += 4
                for c2 in range(co, cout):
                    wv = w[c2, t]
                    a1 = acc[c2]
                    for q in range(length):
                        a1[np.uintp(q)] += wv * xp[np.uintp(src + q)]
    for co in range(cout):
        for oy in range(oy0, oy1):
            r = (oy - oy0) * wp
            for ox in range(ow):
                out[n, co0 + co, oy, ox] = acc[co, np.uintp(r + ox)]


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def direct_conv(xp, w, out, c_in, hp, wp, kh, kw, dh, dw, band, tasks):
    """A stride-1 2-D convolution with few output channels per group (w: [G, Cout/G, C/G * kh * kw]; C =
    c_in), band by band of output rows (`band` rows each), `tasks` (n, group, band) jobs split over the
    threads (1: the calling thread only)."""
    n_count, oh = out.shape[0], out.shape[2]
    groups, cpg = w.shape[0], w.shape[1]
    cin_g = c_in // groups
    bands = (oh + band - 1) // band
    jobs = n_count * groups * bands
    if tasks == 1:
        acc = np.empty(cpg * band * wp, out.dtype)
        for j in range(jobs):
            _direct_job(xp, w, out, j, groups, bands, band, oh, c_in, cin_g, cpg, hp, wp, kh, kw, dh, dw, acc)
        return
    for t in prange(tasks):
        acc = np.empty(cpg * band * wp, out.dtype)
        for j in range(t * jobs // tasks, (t + 1) * jobs // tasks):
            _direct_job(xp, w, out, j, groups, bands, band, oh, c_in, cin_g, cpg, hp, wp, kh, kw, dh, dw, acc)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _direct_job(xp, w, out, j, groups, bands, band, oh, c_in, cin_g, cpg, hp, wp, kh, kw, dh, dw, acc):
    """Job j of direct_conv: (image, group, band of output rows)."""
    n, rest = j // (groups * bands), j % (groups * bands)
    g, b = rest // bands, rest % bands
    _direct_band(xp, w[g], out, n, cin_g, n * c_in + g * cin_g, g * cpg, hp, wp, kh, kw, dh, dw, b * band,
                 min(oh, (b + 1) * band), acc)


# Output channels up to this many (one group), over at least DIRECT_MIN_TAPS input values per output,
# take the direct kernel for a stride-1 2-D convolution: a GEMM with a handful of rows runs OpenBLAS
# far below its speed, after an unfold that writes kh*kw times the input.  Measured with filter rows of
# three taps taken in one pass (AVX-512 EPYC, the planned call, BLAS on one thread), direct against
# unfold + GEMM, 3x3: [1, 64, 16, 16] -> 8 channels 43 against 82 us, -> 16: 73 / 106, [1, 16, 75, 75]
# -> 16: 265 / 450, [1, 8, 150, 150] -> 16: 384 / 937, [1, 16, 8, 8] -> 16: 11.2 / 11.7; with 32 output
# channels the GEMM won on small planes ([1, 32, 4, 4]: 24 / 9 us).  SSD-VGG 21-25 -> 14 ms.  Grouped
# convolutions take it group by group when their filter rows have three taps (RegNetY's [1, 32, 8, 8] in
# groups of 8 channels: 20 -> 15 us); wav2vec2's 1-D grouped positional convolution (long filters, two
# channels a group) ran 15% slower that way, so other grouped filters keep the unfold + GEMM.
# Bands of output rows keep the accumulators within DIRECT_BAND_ELEMS floats.
DIRECT_MAX_COUT = 16
DIRECT_MIN_TAPS = 32
# Dense filters with few taps (an RGB image's first layer: 3 x 3x3 = 27 values an output) left OpenBLAS
# a GEMM with K of a few dozen, far below its speed, after an unfold that writes 9 times the input.
# There the direct kernel wins from 1 tap a filter row of three (AVX2 EPYC, 2 threads, direct against
# unfold + GEMM: [1, 3, 300, 300] -> 8 channels 817 / 3081 us, [1, 3, 224, 224] -> 16: 906 / 2602,
# [1, 1, 28, 28] -> 8: 16.7 / 23.3, 1-D [1, 1, 16000] -> 4 with 3 taps: 37.5 / 53.3) and from
# DIRECT_MIN_TAPS_DENSE taps with other rows ([1, 1, 28, 28] 5x5 -> 8: 28.1 / 47.6; 12 taps of 2x2
# lost, 24.8 / 15.6); with up to 2 * DIRECT_MAX_COUT output channels on planes of at least
# DIRECT_FEW_TAPS_PIXELS ([1, 3, 224, 224] -> 32: 1978 / 3109 us, [1, 3, 75, 75] -> 32: 257 / 380; at
# 38x38 a tie, and with 64 channels the GEMM won on small planes).
DIRECT_MIN_TAPS_DENSE = 16
DIRECT_FEW_TAPS_PIXELS = 4096
# Since products run on irnorm's own float32 kernels (kernels/microgemm.py, about twice OpenBLAS's Haswell
# kernels on these shapes) the unfold + GEMM wins on larger planes (AVX-512 EPYC, 2 threads, direct against
# unfold + GEMM, 3x3: [1, 16, 75, 75] -> 16 259 / 173 us, [1, 8, 150, 150] -> 16 496 / 330, [1, 32, 32, 32]
# -> 16 76 / 67, [1, 3, 224, 224] -> 16 421 / 275, [1, 3, 64, 64] -> 32 85 / 45, [1, 3, 300, 300] -> 8
# 376 / 316), the direct kernel on small ones and with few output channels ([1, 64, 16, 16] -> 8 24 / 35,
# [1, 64, 24, 24] -> 8 49 / 76, [1, 8, 32, 32] -> 8 10 / 16, [1, 16, 20, 20] -> 16 18 / 27, [1, 16, 8, 8]
# -> 16 a tie; but [1, 64, 16, 16] -> 16 49 / 28, a deep filter): with more than DIRECT_MAX_COUT // 2 output
# channels a filter of DIRECT_MIN_TAPS to DIRECT_MAX_TAPS taps takes it only below DIRECT_MAX_PIXELS output
# pixels.  Filters of fewer taps (an image's first layer)
# keep the rule above: there the GEMM also won here ([1, 3, 224, 224] -> 16 421 / 275 us, [1, 3, 64, 64] ->
# 32 85 / 45), but the rule was set on an AVX2 machine where the unfold + GEMM lost by 3-4x, not re-measured.
DIRECT_MAX_PIXELS = 1024
DIRECT_MAX_TAPS = 512


# A dense stride-1 2-D convolution too large for the one-call small path and not taken by the direct kernel
# runs band by band of output rows: each band unfolded (from the zero-padded planes) into a buffer of at most
# BAND_ELEMS elements, which stays in the core's L2 cache, and multiplied by its own single-threaded BLAS
# call (cblas_?gemm through a function pointer, writing straight into the output's rows), the bands shared
# out over Numba's threads.  Unfolding the whole input first wrote kh*kw times the input to memory and read
# it back (SSD-VGG's [1, 32, 75, 75] -> 32, 3x3: 6.6 MB), which cost more than the product.  The bands
# depend on the sizes alone, so the bits do not depend on the thread count.
# An image gets at least BAND_MIN_JOBS / N bands (where it has the rows), so two threads get equal shares.
BAND_ELEMS = 1 << 17
BAND_MIN_JOBS = 4


@njit(nogil=True, parallel=True, cache=True, error_model="numpy")
def banded_conv(gemm_at, blas_int, xp, w, out, c_in, hp, wp, kh, kw, sh, sw, dh, dw, band, tasks, one,
                zero, res, bias, code, p0, p1, k):  # pragma: no cover
    """out [N, Cout, oh, ow] (C-contiguous) = w [Cout, C_in * kh * kw] (C-contiguous) @ unfold(xp), xp
    the zero-padded input planes (flat [N * C_in planes of hp x wp]); output rows in bands of `band`,
    `tasks` groups of bands over the threads, each with its own unfold buffer, each band finished with the
    step's epilogue (epilogue_span: bias, residual rows `res`, activation `code`) by its thread while in its
    cache.  With a column stride
    the planes are first split into column phases (xs below), so that every unfold row is a contiguous
    copy that vectorizes instead of a strided gather (ResNet's 7x7/2 stem: 52-67 -> 25 us of unfolding)."""
    n_count, cout, oh, ow = out.shape
    rows = out.reshape((n_count * cout, oh * ow))
    ck = w.shape[1]
    per_image = (oh + band - 1) // band
    jobs = n_count * per_image
    item = out.itemsize
    plane = oh * ow
    wq = (wp + sw - 1) // sw  # columns per phase
    xs = np.empty(n_count * c_in * hp * sw * wq if sw > 1 else 0, xp.dtype)
    if sw > 1:  # row y of plane i, phase q: xs[((i * hp + y) * sw + q) * wq + m] = xp[(i * hp + y) * wp + m * sw + q]
        for r in range(n_count * c_in * hp):
            for q in range(sw):
                d = (r * sw + q) * wq
                for m in range((wp - q + sw - 1) // sw):
                    xs[np.uintp(d + m)] = xp[np.uintp(r * wp + m * sw + q)]
    for t in prange(tasks):
        col = np.empty(ck * band * ow, out.dtype)
        buf = epilogue_buffer(rows)
        for j in range(t * jobs // tasks, (t + 1) * jobs // tasks):
            n = j // per_image
            oy0 = (j - n * per_image) * band
            oy1 = min(oh, oy0 + band)
            cols = (oy1 - oy0) * ow
            for ci in range(c_in):
                base = (n * c_in + ci) * hp * wp
                for ky in range(kh):
                    for kx in range(kw):
                        d0 = ((ci * kh + ky) * kw + kx) * cols
                        for oy in range(oy0, oy1):
                            if sw == 1:  # contiguous: the copy vectorizes
                                src = base + (oy * sh + ky * dh) * wp + kx * dw
                                for ox in range(ow):
                                    col[np.uintp(d0 + ox)] = xp[np.uintp(src + ox)]
                            else:  # column ox * sw + kx * dw is phase (kx * dw) % sw, index ox + (kx * dw) // sw
                                row = (n * c_in + ci) * hp + oy * sh + ky * dh
                                src = (row * sw + (kx * dw) % sw) * wq + (kx * dw) // sw
                                for ox in range(ow):
                                    col[np.uintp(d0 + ox)] = xs[np.uintp(src + ox)]
                            d0 += ow
            gemm_nn(gemm_at, blas_int, cout, cols, ck, one, w.ctypes.data, ck, col.ctypes.data, cols, zero,
                    out.ctypes.data + (n * cout * plane + oy0 * ow) * item, plane)
            for r in range(n * cout, (n + 1) * cout):
                epilogue_span(code, rows, res, bias, cout, r, oy0 * ow, oy1 * ow, buf, p0, p1, k)


@njit(nogil=True, cache=True, error_model="numpy")
def direct_serial(x, fill, w, out, c_in, hp, wp, kh, kw, dh, dw, band, spare, res, bias, code, p0, p1,
                  k):  # pragma: no cover
    """direct_conv on the calling thread as one call: x (flat, unpadded) zero-padded into a buffer of its
    own (fill_padded with `fill`, _fill_geometry's tuple; `spare` zeros after the last plane), the bands,
    then a fused step's epilogue (epilogue_rows) on the output while it is in cache."""
    planes, h, w_in, ys, ye, xs, xe, y0, x0 = fill
    xp = np.empty(planes * hp * wp + spare, out.dtype)
    fill_padded(x, planes, h, w_in, xp, hp, wp, ys, ye, xs, xe, y0, x0, 0)
    n_count, c_out, oh = out.shape[0], out.shape[1], out.shape[2]
    groups, cpg = w.shape[0], w.shape[1]
    cin_g = c_in // groups
    bands = (oh + band - 1) // band
    acc = np.empty(cpg * band * wp, out.dtype)
    for j in range(n_count * groups * bands):
        _direct_job(xp, w, out, j, groups, bands, band, oh, c_in, cin_g, cpg, hp, wp, kh, kw, dh, dw, acc)
    epilogue_rows(out.reshape((n_count * c_out, oh * out.shape[3])), res, bias, c_out, code, p0, p1, k)


def _direct_serial_plan(x5_shape: tuple[int, ...], w: np.ndarray, out_shape: tuple[int, ...], c: int, hp: int,
                        wp: int, kh: int, kw: int, dh: int, dw: int, band: int, pb, epilogue: Epilogue | None
                        ) -> Callable[..., np.ndarray]:
    """forward_plan's direct path on one thread (direct_serial) for inputs of shape x5_shape, with a fused
    step's epilogue in the same call."""
    dtype = w.dtype
    fill = tuple(int(v) for v in _fill_geometry(x5_shape, hp, wp, pb))
    spare = (kw - 1) * dw
    out4 = (out_shape[0], out_shape[1], out_shape[-2] if len(out_shape) > 3 else 1, out_shape[-1])
    e = _epilogue_args(epilogue, dtype)
    run = entry(direct_serial, c_array(1, dtype), fill, w, c_array(4, dtype), c, hp, wp, kh, kw, dh, dw, band, spare,
                c_array(2, dtype), e.bias, e.code, e.p0, e.p1, e.k)

    def call(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
        run(np.ascontiguousarray(x).reshape(-1), fill, w, out.reshape(out4), c, hp, wp, kh, kw, dh, dw, band, spare,
            res_rows, e.bias, e.code, e.p0, e.p1, e.k)
    return _fused_plan("direct", call, lambda: _direct_serial_plan(x5_shape, w, out_shape, c, hp, wp, kh, kw, dh, dw,
                                                                   band, pb, None),
                       epilogue, out_shape, dtype, e.no_res, False)


# A stride-1 2-D / 1-D float32 convolution (dense, or grouped with at least two input channels a group) as an
# implicit GEMM (irnorm's GEMM kernels enabled: AVX-512): the input zero-padded once (fill_padded), then per
# image and group wide [Cout/G, oh * wp] = w [Cout/G, CK/G] @ B, where B's row
# for tap (channel, ky, kx) is the padded plane read from ky * dh * wp + kx * dw on -- microgemm's
# gemm_rows_at takes the rows by offset, so nothing is unfolded; the product runs in the padded row width
# (columns past ow read into the next row and are dropped when the valid ones are copied out), then the
# fused step's epilogue.  Column ranges (whole panels) go to the threads.  Or (_by_rows: where rows of ow
# columns fill the GEMM's panels about as well as the padded width does, counting the copy) one product per
# output row straight into the output, its C rows oh * ow apart (_implicit_rows): no extra columns, no copy.
# Against the wide form (Xeon with AVX-512, 2 threads, bias + Relu): ResNet's 7x7 / 2 stem [1, 3, 64, 64] ->
# 64 (which took the banded path) 123 -> 105 us, [1, 3, 300, 300] -> 8 448 -> 333, [1, 8, 150, 150] -> 16
# 352 -> 313, [1, 3, 224, 224] 3x3 / 2 -> 32 314 -> 234; rows of 38 ([1, 64, 38, 38] -> 64: a panel and a
# masked 6 columns) 479 against 583 stay wide.
@njit(nogil=True, cache=True, error_model="numpy")
def _implicit_part(xp, w, offs, wide, n, j0, j1, c_in, hp, wp):  # pragma: no cover
    """Columns j0..j1-1 of image n's product, group by group, into wide [N, Cout, oh * wp]; w [G, Cout/G,
    CK/G], offs the taps of one group's channels."""
    groups, cpg, ck = w.shape
    c_out = groups * cpg
    cin_g = c_in // groups
    length = wide.shape[2]
    for g in range(groups):
        src = xp.ctypes.data + (n * c_in + g * cin_g) * hp * wp * 4
        dst = wide.ctypes.data + (n * c_out + g * cpg) * length * 4
        microgemm.gemm_rows_at(np.int64(cpg), np.int64(length), np.int64(ck), np.int64(w[g].ctypes.data),
                               np.int64(ck), np.int64(src), np.int64(offs.ctypes.data), np.int64(dst),
                               np.int64(length), np.int64(j0), np.int64(j1))


@njit(nogil=True, cache=True, error_model="numpy")
def _implicit_rows(xp, w, offs, out, n, y0, y1, c_in, hp, wp):  # pragma: no cover
    """Output rows y0..y1-1 of image n straight into out [N, Cout, oh, ow]: per row and group one product whose
    columns are the row's ow pixels and whose C rows (the output channels) lie oh * ow apart -- no padded-width
    columns computed, nothing copied out.  The same chains of multiply-adds as _implicit_part's."""
    groups, cpg, ck = w.shape
    c_out, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    cin_g = c_in // groups
    for g in range(groups):
        src = xp.ctypes.data + (n * c_in + g * cin_g) * hp * wp * 4
        dst = out.ctypes.data + (n * c_out + g * cpg) * oh * ow * 4
        for y in range(y0, y1):
            microgemm.gemm_rows_at(np.int64(cpg), np.int64(ow), np.int64(ck), np.int64(w[g].ctypes.data),
                                   np.int64(ck), np.int64(src + 4 * y * wp), np.int64(offs.ctypes.data),
                                   np.int64(dst + 4 * y * ow), np.int64(oh * ow), np.int64(0), np.int64(ow))


@njit(nogil=True, cache=True, error_model="numpy")
def _implicit_channels(xp, w, offs, out, n, c0, c1, c_in, hp, wp):  # pragma: no cover
    """_implicit_rows for output channels c0..c1-1 of image n over all its rows, one group (w [1, Cout, CK]):
    the same chains of multiply-adds, C's rows a part of the channels'."""
    ck = w.shape[2]
    c_out, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    src = xp.ctypes.data + n * c_in * hp * wp * 4
    dst = out.ctypes.data + (n * c_out + c0) * oh * ow * 4
    for y in range(oh):
        microgemm.gemm_rows_at(np.int64(c1 - c0), np.int64(ow), np.int64(ck), np.int64(w[0].ctypes.data + 4 * c0 * ck),
                               np.int64(ck), np.int64(src + 4 * y * wp), np.int64(offs.ctypes.data),
                               np.int64(dst + 4 * y * ow), np.int64(oh * ow), np.int64(0), np.int64(ow))


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def implicit_conv(x, fill, phases, w, offs, out, xp, wide, c_in, hp, wp, parts, tasks, by_rows, res, bias, code,
                  p0, p1, k):  # pragma: no cover
    """The implicit-GEMM convolution (above) of x (flat, unpadded) into out [N, Cout, oh, ow]: each image's
    columns in `parts` ranges -- bands of whole output rows where the image has at least `parts` rows, each
    band copied out and finished (epilogue_span) by the thread that computed it (with `by_rows` 2 ranges of
    output channels instead, every row: _implicit_channels, each thread on its own copy of the padded planes),
    else ranges of whole panels
    -- the (image, range) jobs in `tasks` groups over the threads (1: the calling thread); then the valid
    columns copied out and the epilogue (epilogue_rows).  The bits do not depend on the cut.  `phases`
    (sh, sw, ph, pw): strides above one split each padded input plane into its sh x sw phases (fill_phases;
    hp = sh * sw * the phase planes' height, wp their width), else the plain padding of `fill`.  xp [planes *
    hp * wp + spare] (`tasks` times that with `by_rows` 2) and wide [N, Cout, oh * wp]: the caller's work buffers
    (reused: fresh ones of a large map cost a page fault per 4 KiB)."""
    planes = fill[0]
    n_count, c_out, oh, ow = out.shape
    length = oh * wp
    panels = (length + microgemm.NR - 1) // microgemm.NR
    jobs = n_count * parts
    rows = out.reshape((n_count * c_out, oh * ow))
    if tasks > 1 and parts <= oh and by_rows == 2:
        # Each job a range of whole output planes (output channels), every row, and each thread fills its own copy
        # of the padded (or phase) planes (xp holds `tasks` of them): the planes filled once and shared were half
        # written on the other core, and reading those across cores cost more than filling them twice (ResNet-18's
        # 7x7 / 2 stem, [1, 3, 64, 64] -> 64, one launch instead of two)
        size = xp.shape[0] // tasks
        for t in prange(tasks):
            mine = xp[t * size:(t + 1) * size]
            _fill_planes(x, fill, phases, mine, hp, wp, 0, planes)
            for i in range(planes * hp * wp, size):
                mine[i] = 0.0
            buf = epilogue_buffer(rows)
            for j in range(t * jobs // tasks, (t + 1) * jobs // tasks):
                n, part = j // parts, j % parts
                c0, c1 = part * c_out // parts, (part + 1) * c_out // parts
                _implicit_channels(mine, w, offs, out, n, c0, c1, c_in, hp, wp)
                for r in range(n * c_out + c0, n * c_out + c1):
                    epilogue_span(code, rows, res, bias, c_out, r, 0, oh * ow, buf, p0, p1, k)
        return
    if tasks > 1 and parts <= oh:
        # Each job a band of whole output rows (its columns of the product), finished -- copied out and the
        # epilogue applied -- by the thread that computed it, while in that core's cache; the padding split
        # over the threads by planes first.  (Panel-aligned jobs, below, left each thread's copy reading
        # planes half computed on the other core; [1, 16, 150, 150] 3x3 -> 16 473 -> 403 us, [1, 32, 75, 75]
        # -> 32 440 -> 320, [1, 64, 38, 38] -> 64 353 -> 331: Xeon with AVX-512, 2 threads.)
        if xp.shape[0] >= FILL_PARALLEL_MIN:
            for t in prange(tasks):
                _fill_planes(x, fill, phases, xp, hp, wp, t * planes // tasks, (t + 1) * planes // tasks)
        else:  # a small input: its own parallel launch cost more than the fill
            _fill_planes(x, fill, phases, xp, hp, wp, 0, planes)
        for i in range(planes * hp * wp, xp.shape[0]):
            xp[i] = 0.0
        for t in prange(tasks):
            buf = epilogue_buffer(rows)
            for j in range(t * jobs // tasks, (t + 1) * jobs // tasks):
                n, part = j // parts, j % parts
                y0, y1 = part * oh // parts, (part + 1) * oh // parts
                if by_rows:
                    _implicit_rows(xp, w, offs, out, n, y0, y1, c_in, hp, wp)
                else:
                    _implicit_part(xp, w, offs, wide, n, y0 * wp, y1 * wp, c_in, hp, wp)
                    _implicit_copy_rows(wide, out, wp, n, y0, y1)
                for r in range(n * c_out, (n + 1) * c_out):
                    epilogue_span(code, rows, res, bias, c_out, r, y0 * ow, y1 * ow, buf, p0, p1, k)
        return
    _fill_planes(x, fill, phases, xp, hp, wp, 0, planes)
    for i in range(planes * hp * wp, xp.shape[0]):
        xp[i] = 0.0
    if tasks == 1 and by_rows:
        for n in range(n_count):
            _implicit_rows(xp, w, offs, out, n, 0, oh, c_in, hp, wp)
        epilogue_rows(rows, res, bias, c_out, code, p0, p1, k)
        return
    if tasks == 1:
        for n in range(n_count):
            _implicit_part(xp, w, offs, wide, n, 0, length, c_in, hp, wp)
    else:
        for t in prange(tasks):
            for j in range(t * jobs // tasks, (t + 1) * jobs // tasks):
                n, part = j // parts, j % parts
                _implicit_part(xp, w, offs, wide, n, min(length, part * panels // parts * microgemm.NR),
                               min(length, (part + 1) * panels // parts * microgemm.NR), c_in, hp, wp)
    if tasks == 1:
        _implicit_copy(wide, out, wp, 0, n_count * c_out)
        epilogue_rows(rows, res, bias, c_out, code, p0, p1, k)
    else:  # each thread's planes copied out and finished while in its cache
        for t in prange(tasks):
            r0, r1 = t * n_count * c_out // tasks, (t + 1) * n_count * c_out // tasks
            _implicit_copy(wide, out, wp, r0, r1)
            epilogue_range(rows, res, bias, c_out, code, p0, p1, k, r0, r1)


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def pointwise_rows(x, w, out, parts, tasks, res, bias, code, p0, p1, k):  # pragma: no cover
    """A float32 1x1 convolution out [N, Cout, P] = w [Cout, C] @ x [N, C, P] by irnorm's GEMM kernels, each
    image's output channels cut into `parts` ranges of whole row blocks, the (image, range) jobs in `tasks`
    groups over the threads, each job's rows finished with the epilogue (epilogue_range) while in its cache."""
    n_count, cout, p = out.shape
    ck = w.shape[1]
    rows = out.reshape((n_count * cout, p))
    jobs = n_count * parts
    blocks = -(-cout // microgemm.MR)
    for t in prange(tasks):
        for j in range(t * jobs // tasks, (t + 1) * jobs // tasks):
            img, part = j // parts, j % parts
            r0 = min(cout, part * blocks // parts * microgemm.MR)
            r1 = min(cout, (part + 1) * blocks // parts * microgemm.MR)
            if r1 > r0:
                microgemm.gemm(np.int64(r1 - r0), np.int64(p), np.int64(ck), np.int64(w.ctypes.data + 4 * r0 * ck),
                               np.int64(ck), np.int64(x.ctypes.data + 4 * img * ck * p), np.int64(p),
                               np.int64(out.ctypes.data + 4 * (img * cout + r0) * p), np.int64(p), np.int64(0),
                               np.int64(p))
                epilogue_range(rows, res, bias, cout, code, p0, p1, k, img * cout + r0, img * cout + r1)


# float32 1x1 convolutions of at least this many outputs take pointwise_rows where irnorm's GEMM kernels run
# (AVX-512), their output channels over the threads when they make two row blocks or more.  Against the paths
# before (the one-call GEMM below ONE_CALL_MAX outputs, else the product and a parallel epilogue pass; AVX-512
# EPYC, 2 threads, with EfficientNet's bias + Swish): [1, 8, 32, 32] -> 48 22.6 -> 15.7 us, [1, 8, 16, 16] -> 48
# 9.7 -> 6.9, [1, 16, 32, 32] -> 16 10.9 -> 9.1, [1, 16, 56, 56] -> 96 104 -> 76; [1, 48, 16, 16] -> 8 (one row
# block) stays 4.0 on the one-call path.
POINTWISE_MIN_OUTPUTS = 1 << 15


def _pointwise_plan(x5_shape: tuple[int, ...], w: np.ndarray, out_shape: tuple[int, ...],
                    epilogue: Epilogue | None) -> Callable[..., np.ndarray]:
    """forward_plan's 1x1 path on irnorm's GEMM kernels (pointwise_rows) for float32 inputs [N, C, 1, H, W]
    and weights w [1, Cout, C], with a fused step's epilogue in the same call."""
    import numba

    n, c = x5_shape[:2]
    w2 = np.ascontiguousarray(w[0])
    cout = w2.shape[0]
    p = prod(out_shape[2:])
    blocks = -(-cout // microgemm.MR)
    threads = numba.config.NUMBA_NUM_THREADS
    parts = max(1, min(blocks, -(-threads // n)))
    tasks = min(n * parts, threads)
    e = _epilogue_args(epilogue, w2.dtype)
    run = entry(pointwise_rows, c_array(3, w2.dtype), w2, c_array(3, w2.dtype), parts, tasks, c_array(2, w2.dtype),
                e.bias, e.code, e.p0, e.p1, e.k)

    def call(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
        run(np.ascontiguousarray(x).reshape(n, c, p), w2, out.reshape(n, cout, p), parts, tasks, res_rows, e.bias,
            e.code, e.p0, e.p1, e.k)
    return _fused_plan("pointwise", call, lambda: _pointwise_plan(x5_shape, w, out_shape, None), epilogue, out_shape,
                       w2.dtype, e.no_res, tasks > 1)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _fill_planes(x, fill, phases, xp, hp, wp, p0, p1):  # pragma: no cover
    """implicit_conv's padded (or phase-split) planes p0..p1-1 of x into xp (fill_padded / fill_phases on
    those planes alone; nothing after them)."""
    planes, h, w_in, ys, ye, xs, xe, y0, x0 = fill
    sh, sw, ph, pw = phases
    src = x[p0 * h * w_in:p1 * h * w_in]
    dst = xp[p0 * hp * wp:p1 * hp * wp]
    if sh * sw > 1:
        fill_phases(src, p1 - p0, h, w_in, dst, sh, sw, hp // (sh * sw), wp, ph, pw)
    else:
        fill_padded(src, p1 - p0, h, w_in, dst, hp, wp, ys, ye, xs, xe, y0, x0, 0)


@njit(nogil=True, cache=True, error_model="numpy")
def _implicit_copy_rows(wide, out, wp, n, y0, y1):  # pragma: no cover
    """Output rows y0..y1-1 of every channel of image n from wide into out (_implicit_copy's indexing)."""
    c_out, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    length = wide.shape[2]
    src = wide.reshape(-1)
    dst = out.reshape(-1)
    for r in range(n * c_out, (n + 1) * c_out):
        for y in range(y0, y1):
            s0, d0 = r * length + y * wp, (r * oh + y) * ow
            for t in range(ow):
                dst[np.uintp(d0 + t)] = src[np.uintp(s0 + t)]


@njit(nogil=True, cache=True, error_model="numpy")
def _implicit_copy(wide, out, wp, r0, r1):  # pragma: no cover
    """The valid columns of output planes r0..r1-1 (image * Cout + channel) from wide into out.  Flat
    unsigned indices: through the planes' 2-D views the row loop did not vectorize (65K values 22 -> 3 us)."""
    oh, ow = out.shape[2], out.shape[3]
    length = wide.shape[2]
    src = wide.reshape(-1)
    dst = out.reshape(-1)
    for r in range(r0, r1):
        for y in range(oh):
            s0, d0 = r * length + y * wp, (r * oh + y) * ow
            for t in range(ow):
                dst[np.uintp(d0 + t)] = src[np.uintp(s0 + t)]


# Padded (or phase) planes of at least this many values are filled on the threads (implicit_conv's bands).
FILL_PARALLEL_MIN = 1 << 14
# Multiply-adds from which an implicit-GEMM convolution shares its columns out over the threads.  A parallel region
# costs 5-14 us on the Sapphire Rapids VM (Numba's TBB layer), as much as a convolution of a few million
# multiply-adds gains from the second thread: [1, 32, 16, 16] -> 32 3x3 (2.4 M) took 42 us on two threads and 43
# on one.  From 1 << 21 to 1 << 22 (alternating processes, eight each): UNet 1145 -> 1105 and 1085 -> 1044 us
# (its five 2.4 M convolutions), RegNetY 201 -> 190, ConvNeXt 393 -> 374; ResNet-18, ResNetV2, SSD-VGG, AlexNet,
# MobileViTv2 level.  Without AVX-512 (8-lane FMAs, microgemm's 6 x 16 tiles) the same multiply-adds take about
# twice as long, and the second thread pays from 1 << 19: both contenders held to AVX2 on the Xeon (Numba compiling
# for Haswell), alternating processes, 1 << 22 -> 1 << 19: AlexNet 313 -> 300 us (its 3x3 layers on 9 x 9 maps,
# 0.7-1.1 M each, 27.6 / 34.2 / 24.3 -> 24.5 / 29.2 / 22.6), UNet 831 -> 774; ResNet-18, RegNetY, SSD-VGG,
# EfficientNet-B0, MobileViTv2 level.
IMPLICIT_PARALLEL_MIN = 1 << 22 if microgemm.AVX512 else 1 << 19
# With at least as many images as threads each thread takes whole images (nothing shared, no band edges), and
# the second thread pays from IMPLICIT_PARALLEL_MIN_IMAGES.  Xeon with AVX-512, 2 threads, bias + Relu,
# interleaved medians, parallel against serial: [2, 64, 20, 20] -> 8 (4.1 M, a dynamic ResNet-18's first 3x3 at
# batch 2) 77 -> 48 us, [2, 32, 16, 16] -> 16 (2.7 M) 51 -> 35; below, [2, 32, 8, 8] -> 32 (1.5 M) 28 -> 26,
# [2, 16, 16, 16] -> 16 (1.3 M) 29 -> 26, [4, 8, 20, 20] -> 8 (1.0 M) 26 -> 31, [2, 8, 20, 20] -> 8 15 -> 18.
IMPLICIT_PARALLEL_MIN_IMAGES = 1 << 21
# Which convolutions take it: at most IMPLICIT_MAX_COUT output channels, output rows at least
# IMPLICIT_MIN_WIDTH wide (the padded row width's extra columns are computed and dropped).  Measured on the
# AVX-512 EPYC, 2 threads, against the path taken before (3x3): [1, 64, 16, 16] -> 8 23 -> 18 us (direct),
# [1, 16, 8, 8] -> 16 7.1 -> 4.6, [1, 64, 24, 24] -> 8 49 -> 30, [1, 16, 20, 20] -> 16 17 -> 15,
# [1, 16, 75, 75] -> 16 114 -> 92 (banded), [1, 64, 16, 16] -> 16 28 -> 27, [1, 8, 150, 150] -> 16 183 -> 194;
# with more channels the GEMM on an unfolded panel won ([1, 64, 16, 16] -> 64 56 / 65, [2, 16, 32, 32] -> 32
# 59 / 66, [1, 128, 8, 8] -> 128 64 / 76: each block of rows re-reads B's scattered rows from L2), and on
# 4x4 and 2x2 maps the one-call GEMM (5.1 / 7.4 us, 6.5 / 12.2).  Grouped: wav2vec2's positional 1-D
# convolution ([1, 32, 19] in 2 groups, 16 taps) 42 -> 9.5 us, RegNetY's [1, 32, 8, 8] in groups of 8 7.3 ->
# 5.6, [1, 64, 16, 16] in groups of 8 26 -> 24 (the direct kernel before).
# More output channels take it on maps of at least IMPLICIT_MIN_PIXELS outputs (SSD-VGG's layers, in isolation:
# [1, 32, 75, 75] -> 32 339 -> 266 us, [1, 64, 38, 38] -> 64 311 -> 262, [1, 16, 150, 150] -> 16 360 -> 295,
# [1, 8, 300, 300] -> 8 506 -> 381).  Dense filters of IMPLICIT_MIN_TAPS taps or more take it (an RGB image's first
# 3x3 layer: 27): since each thread finishes its own band of rows (implicit_conv) it beat the direct kernel
# (Xeon with AVX-512, 2 threads, direct against implicit: [1, 3, 300, 300] -> 8 495 / 320 us, [1, 3, 224, 224]
# -> 32 1063 / 662, [1, 3, 150, 150] -> 16 240 / 148, [1, 3, 32, 32] -> 16 21.7 / 13.9, [1, 2, 64, 64] -> 16
# 65 / 38, [2, 3, 64, 64] -> 8 84 / 48; compiling for Haswell -- AVX2, 6 x 16 tiles -- on the same machine:
# [1, 3, 300, 300] -> 8 563 / 444, [1, 3, 224, 224] -> 32 1080 / 855, [1, 3, 150, 150] -> 16 239 / 185, [1, 3,
# 32, 32] -> 16 24.0 / 16.8; before that change the direct kernel had won [1, 3, 300, 300] -> 8 on the AVX-512
# EPYC, 202 / 222); grouped ones keep DIRECT_MIN_TAPS.  And any number on maps whose unfolded columns fit
# SMALL_COL, where the one-call path would gather them element by element (with the masked last columns of
# kernels/microgemm.py; AlexNet's [1, 48, 9, 9] -> 32 29 -> 18 us, [1, 32, 8, 8] -> 32 15 -> 10, [1, 64, 8, 8]
# -> 64 37 -> 27).
IMPLICIT_MAX_COUT = 16
IMPLICIT_MIN_TAPS = 16
IMPLICIT_SMALL_COL = SMALL_COL
# Strided 2-D convolutions (not 1x1) take it over their inputs' phase planes (fill_phases): grouped ones with at
# most STRIDED_MAX_COUT output channels a group and output rows IMPLICIT_MIN_WIDTH wide, dense ones with at
# most IMPLICIT_MAX_COUT output channels and rows twice that wide.  Measured (AVX-512 EPYC, 2 threads) against
# the paths before: AlexNet's 11x11 / 4 [1, 3, 160, 160] -> 8 73 -> 55 us (banded), RegNetY's grouped 3x3 / 2
# [1, 16, 32, 32] in 2 groups 27 -> 12 and [1, 32, 16, 16] in 4 groups 26 -> 16, 3x3 / 2 stems [1, 3, 64, 64]
# -> 8 12 -> 8 and -> 16 15 -> 11, [1, 16, 32, 32] -> 16 19 -> 14; ResNet's 7x7 / 2 stem [1, 3, 64, 64] -> 64
# was slower in the network over the padded width (55 -> 63 us; the phase planes' extra columns and fill), as
# were 128 outputs ([1, 64, 32, 32]: 120 -> 128); rows of 8 were level or slower ([1, 16, 16, 16] -> 16).  Dense
# ones with more output channels take it where _by_rows picks the row form, rows of whole panels (Xeon with
# AVX-512, 2 threads, medians against the banded path): that stem 140 -> 125 us, [1, 32, 64, 64] 3x3 / 2 -> 64
# 354 -> 283, [1, 3, 224, 224] 7x7 / 2 -> 64 1350 -> 1187; [1, 64, 32, 32] -> 128 level.  With at least as
# many images as threads (each thread its own images) and more columns than the one-call path takes (SMALL_COL)
# they take it in either form (_by_rows chooses): the same machine, interleaved medians against the banded path,
# [2, 3, 80, 80] 7x7 / 2 -> 64 (a dynamic ResNet-18's stem at batch 2) 315-335 -> 290-310 us, 3x3 / 2 [2, 64,
# 40, 40] -> 128 742 -> 608, [2, 16, 48, 48] -> 32 134 -> 95, [2, 16, 40, 40] -> 32 104 -> 78, [2, 24, 40, 40]
# -> 48 172 -> 128; compiled for Haswell (AVX2 tiles) 0.78-0.91.  The one-call path's smaller ones were mixed
# (ViT's 8x8 / 8 patches [2, 3, 64, 64] -> 64 47 -> 62, ConvNeXt's 2x2 / 2 [2, 16, 20, 20] -> 32 22 -> 26, [2,
# 16, 20, 20] 3x3 / 2 -> 16 35 -> 29) and keep it.
STRIDED_MAX_COUT = 64
IMPLICIT_MIN_WIDTH = 8
IMPLICIT_MIN_PIXELS = 1200
# And on smaller maps up to IMPLICIT_MID_COUT output channels where the padded rows add at most 1 /
# IMPLICIT_MID_SHARE - 1 columns to the product (3x3 filters on rows of 16+, not dilated ones).  Measured
# against the banded path (Xeon with AVX-512, 2 threads, bias + Relu): [1, 64, 19, 19] -> 64 209 -> 180 us,
# [1, 64, 16, 16] -> 64 140 -> 124, [1, 32, 32, 32] -> 32 114 -> 94 (row by row), [2, 16, 32, 32] -> 32 127 ->
# 94, [1, 64, 24, 24] -> 64 244 -> 237; [1, 128, 8, 8] -> 128 and rows of 8 level; SSD's dilated [1, 64, 19,
# 19] -> 128 (6, 6) slower (357 against 436: 12 of every 31 columns wasted).
IMPLICIT_MID_COUT = 64
IMPLICIT_MID_SHARE = 0.85


# IMPLICIT_BY_ROWS: None chooses (_by_rows), True / False forces a mode (measurements, tests).
IMPLICIT_BY_ROWS: bool | None = None
IMPLICIT_COPY_TAPS = 10


def _row_cost(width: int) -> float:
    """GEMM panels (in NR-column units) one product over `width` columns takes: full panels, then a half
    panel (NH columns, or fewer masked) for a rest of at most NH, a half and a masked half above that."""
    full, rest = divmod(width, microgemm.NR)
    return full + (0.0 if rest == 0 else 0.5 if rest <= microgemm.NH else 1.0)


def _threads() -> int:
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


def _by_rows(ow: int, wp: int, taps: int) -> bool:
    """Whether implicit_conv computes row by row into the output (_implicit_rows) rather than over the padded
    width and copies out.  Per output value the wide form computes taps * wp / ow multiply-adds and copies
    one value, the row form taps / (its panels' share of useful columns): rows where that is no more than
    the wide form's plus IMPLICIT_COPY_TAPS (what a copied value cost, in multiply-adds)."""
    if IMPLICIT_BY_ROWS is not None:
        return bool(IMPLICIT_BY_ROWS)
    row_share = ow / (microgemm.NR * _row_cost(ow))
    return taps / row_share <= taps * wp / ow + IMPLICIT_COPY_TAPS


# The row form's threads take ranges of whole output planes (every row) rather than bands of rows where each
# gets at least CHANNELS_SPLIT_MIN output channels and the padded (or phase) planes they all read are at most
# CHANNELS_SPLIT_MAX_BYTES: each thread then holds half the filters beside the whole input in its caches.
# ResNet-18's 7x7 / 2 stem [1, 3, 64, 64] -> 64 inside the network (Xeon with AVX-512, 2 threads, six
# processes alternating, the median of their per-layer minima): 124 -> 112 us.  SSD-VGG's larger inputs
# ([1, 64, 150, 150] on) were slower so (6.1 -> 6.5 ms), a thread's band of rows reading half the input.
CHANNELS_SPLIT_MIN = 32
CHANNELS_SPLIT_MAX_BYTES = 128 << 10
# IMPLICIT_BY_CHANNELS: None chooses (_by_channels), True / False forces it where the row form runs on
# several threads over one group (tests).
IMPLICIT_BY_CHANNELS: bool | None = None


def _by_channels(per_part: int, input_bytes: int) -> bool:
    """Whether the row form's threads take ranges of `per_part` output channels rather than bands of rows,
    reading padded planes of `input_bytes`."""
    if IMPLICIT_BY_CHANNELS is not None:
        return bool(IMPLICIT_BY_CHANNELS)
    return per_part >= CHANNELS_SPLIT_MIN and input_bytes <= CHANNELS_SPLIT_MAX_BYTES


def _implicit_plan(x5_shape: tuple[int, ...], w: np.ndarray, out_shape: tuple[int, ...], c: int, hp: int, wp: int,
                   kh: int, kw: int, dh: int, dw: int, pb, epilogue: Epilogue | None, sh: int = 1, sw: int = 1
                   ) -> Callable[..., np.ndarray]:
    """forward_plan's implicit-GEMM path (implicit_conv) for float32 inputs of shape x5_shape [N, C, 1, H, W]
    and weights w [G, Cout/G, CK/G], with a fused step's epilogue in the same call.  hp x wp: the padded
    planes (stride 1), or with strides sh, sw above one each phase plane (fill_phases: oh + (kh - 1) // sh
    rows of ow + (kw - 1) // sw)."""
    import numba

    n = x5_shape[0]
    fill = tuple(int(v) for v in _fill_geometry(x5_shape, hp, wp, pb))
    phases = (sh, sw, int(pb[1]), int(pb[2]))
    spare = (kw - 1) * dw // sw
    out4 = (out_shape[0], out_shape[1], out_shape[-2] if len(out_shape) > 3 else 1, out_shape[-1])
    oh = out4[2]
    w2 = np.ascontiguousarray(w)  # [G, Cout/G, CK/G]
    ck = w2.shape[2]
    # tap (channel, ky, kx): its row of the padded plane (stride 1) or of its phase plane, from (ky // sh, kx // sw)
    offs = np.array([((ci * sh + ky * dh % sh) * sw + kx * dw % sw) * hp * wp + ky * dh // sh * wp + kx * dw // sw
                     for ci in range(c // w2.shape[0]) for ky in range(kh) for kx in range(kw)], np.int64)
    hp *= sh * sw  # one input channel's values: all its phase planes
    e = _epilogue_args(epilogue, w2.dtype)
    threads = numba.config.NUMBA_NUM_THREADS
    parallel = w2.shape[0] * w2.shape[1] * ck * oh * wp * n >= (
        IMPLICIT_PARALLEL_MIN if n < threads else min(IMPLICIT_PARALLEL_MIN, IMPLICIT_PARALLEL_MIN_IMAGES))
    threads = threads if parallel else 1
    # ranges of whole panels, about one per thread over the images (the bits do not depend on the cut)
    panels = -(-oh * wp // microgemm.NR)
    parts = max(1, min(panels, -(-threads // n))) if parallel else 1
    # (the row form shares whole rows out: an image of fewer rows than parts -- 1-D data -- keeps the wide form's
    # ranges of panels, and its threads)
    by_rows = _by_rows(out4[3], wp, ck) and parts <= oh
    tasks = min(n * parts, threads) if parallel else 1
    xp_shape, wide_shape = (fill[0] * hp * wp + spare,), (out4[0], out4[1], 0 if by_rows else oh * wp)
    # 0: the wide form, 1: the row form, 2: the row form with the threads on ranges of output channels
    mode = int(by_rows)
    if by_rows and tasks > 1 and w2.shape[0] == 1 and _by_channels(w2.shape[1] // parts, 4 * xp_shape[0]):
        mode = 2
        xp_shape = (tasks * xp_shape[0],)  # a copy of the padded planes per thread
    run = entry(implicit_conv, c_array(1, w2.dtype), fill, phases, w2, offs, c_array(4, w2.dtype),
                c_array(1, w2.dtype), c_array(3, w2.dtype), c, hp, wp, parts, tasks, mode, c_array(2, w2.dtype),
                e.bias, e.code, e.p0, e.p1, e.k)

    _, bias, code, p0, p1, k = e
    padded, wide = SCRATCH.getter(0, xp_shape, w2.dtype), SCRATCH.getter(1, wide_shape, w2.dtype)

    def call(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
        # (np.ascontiguousarray first: reshape(-1) of a strided 1-D-like view stays a strided view)
        run(np.ascontiguousarray(x).reshape(-1), fill, phases, w2, offs, out.reshape(out4), padded(), wide(), c, hp,
            wp, parts, tasks, mode, res_rows, bias, code, p0, p1, k)
    return _fused_plan("implicit", call, lambda: _implicit_plan(x5_shape, w, out_shape, c, hp // (sh * sw), wp, kh,
                                                                kw, dh, dw, pb, None, sh, sw),
                       epilogue, out_shape, w2.dtype, e.no_res, tasks > 1)


def _direct_fits(cpg: int, taps: int, g: int, kw: int, p_out: int) -> bool:
    """Whether a stride-1 2-D (or 1-D) convolution with `cpg` output channels per group, `taps` input
    values per output, `g` groups, filter rows of `kw` taps and `p_out` output pixels takes the direct
    kernel rather than unfold + GEMM (the measurements above)."""
    if taps >= DIRECT_MIN_TAPS:
        if g != 1 or not microgemm.ENABLED:  # OpenBLAS's products: the measurements above
            return cpg <= DIRECT_MAX_COUT and (g == 1 or kw == 3)
        return cpg <= DIRECT_MAX_COUT // 2 or (cpg <= DIRECT_MAX_COUT and p_out < DIRECT_MAX_PIXELS
                                                and taps < DIRECT_MAX_TAPS)
    if g != 1 or (kw != 3 and taps < DIRECT_MIN_TAPS_DENSE):
        return False
    return cpg <= DIRECT_MAX_COUT or (cpg <= 2 * DIRECT_MAX_COUT and p_out >= DIRECT_FEW_TAPS_PIXELS)
DIRECT_BAND_ELEMS = 1 << 14
# A parallel direct convolution whose image needs several bands is cut into at least this many (image,
# group, band) jobs of equal height: one image of 32 rows in bands of at most DIRECT_BAND_ELEMS floats was
# 30 rows + 2 rows, one thread doing nearly all ([1, 32, 32, 32] -> 16: 177 -> 104 us, UNet's layers).
# Bands stay at least DIRECT_MIN_BAND rows: shorter ones repeat every tap's loop over too few elements.
DIRECT_MIN_JOBS = 4
DIRECT_MIN_BAND = 8


def _wide_products(x5, w, res, kk, d, pb, o3, ck, g) -> bool:
    """res = w @ unfold(x5) for a stride-1 convolution of 1-D/2-D data, unfolded in the padded input's
    row width wp instead of the output's ow: each unfolded row is then one contiguous copy (no per-row
    work), the product has (wp - ow) extra columns per output row, dropped when copying into res.
    Columns of an output row past ow read the next row (or plane): they are discarded, and the buffer
    has (kw-1)*dw spare elements so the last plane's never leave it.  False when this does not apply."""
    n, c = x5.shape[:2]
    oh, ow = o3[1], o3[2]
    hp, wp = oh + (kk[1] - 1) * d[1], ow + (kk[2] - 1) * d[2]
    length = oh * wp
    if o3[0] != 1 or kk[0] != 1 or n * ck * length > COL_BUDGET or 2 * ow < wp:
        return False
    plane = hp * wp
    buf = _padded_planes(x5, hp, wp, pb, (kk[2] - 1) * d[2])
    col = SCRATCH.get(1, (n, ck, length), x5.dtype)
    rows = n * ck
    args = (ck // c, plane, wp, kk[2], d[1], d[2], length)
    if col.size >= UNFOLD_PARALLEL_MIN and rows > 1:
        _unfold_wide_parallel(buf, col.reshape(-1), rows, *args)
    else:
        _unfold_wide(buf, col.reshape(-1), 0, rows, *args)
    col = col.reshape(n, g, ck // g, length)
    if wp == ow:
        _product(w, col, res)
    else:
        wide = SCRATCH.get(2, res.shape[:3] + (length,), res.dtype)
        _product(w, col, wide)
        res.reshape(res.shape[:3] + (oh, ow))[...] = wide.reshape(res.shape[:3] + (oh, wp))[..., :ow]
    return True


def _unfolded_products(x5, w, res, kk, s, d, pb, o3, ck, g, padding: Any = None) -> None:
    """res = w @ im2col(x5), a block of images (or of output rows) at a time (`padding`: pad_geometry's
    result for x5's shape, when the caller keeps it)."""
    n = x5.shape[0]
    xp = pad_input(x5, kk, s, d, pb, o3, padding)
    for n0, n1, r0, r1 in _tiles(n, o3[0] * o3[1], ck * o3[2]):
        col = SCRATCH.get(1, (n1 - n0, ck, (r1 - r0) * o3[2]), x5.dtype)
        if xp is None:
            im2col_bounded(x5[n0:n1], col, kk[0], kk[1], kk[2], s[0], s[1], s[2], d[0], d[1], d[2], pb[0], pb[1],
                           pb[2], o3[1], o3[2], r0, r1)
        else:
            im2col(xp[n0:n1], col, kk[0], kk[1], kk[2], s[0], s[1], s[2], d[0], d[1], d[2], o3[1], o3[2], r0, r1)
        col = col.reshape(n1 - n0, g, ck // g, col.shape[-1])
        if r0 == 0 and r1 == o3[0] * o3[1]:
            _product(w, col, res[n0:n1])
        else:
            part = np.empty(res[n0:n1, :, :, r0 * o3[2]:r1 * o3[2]].shape, res.dtype)
            _product(w, col, part)
            res[n0:n1, :, :, r0 * o3[2]:r1 * o3[2]] = part


_TRANSPOSE_TILE = 64  # pixels per tile of depthwise_channels_inner's transpose of a large plane


@njit(nogil=True, cache=True)
def depthwise_channels_inner(x, w_t, out, sh, sw, dh, dw, ph, pw):
    """2-D depthwise convolution, one input channel per output channel: x [N, C, H, W], w_t [kh, kw, C]
    (the filter with channels innermost), out [N, C, OH, OW].  Per image the input is transposed to
    [H, W, C] and every output pixel sums its taps inside the input (in (ky, kx) order, as the other
    kernels: the same sums) with the channels as the vector loop -- for small planes, where a loop
    along a row is a few elements long and most of a window's taps fall in the padding."""
    n_count, c_count, h_in, w_in = x.shape
    oh, ow = out.shape[2], out.shape[3]
    kh, kw = w_t.shape[0], w_t.shape[1]
    xt = np.empty((h_in, w_in, c_count), x.dtype)
    acc = np.empty((oh, ow, c_count), out.dtype)
    plane = h_in * w_in
    xt_flat = xt.reshape(-1)
    for n in range(n_count):
        if plane <= 4 * _TRANSPOSE_TILE:
            for c in range(c_count):
                for y in range(h_in):
                    for t in range(w_in):
                        xt[y, t, c] = x[n, c, y, t]
        else:  # a large plane: a tile of pixels at a time, so the strided writes stay in L1 (32 -> 19 us)
            x_flat = x[n].reshape(-1)
            for p0 in range(0, plane, _TRANSPOSE_TILE):
                p1 = min(p0 + _TRANSPOSE_TILE, plane)
                for c in range(c_count):
                    for q in range(p0, p1):
                        xt_flat[np.uintp(q * c_count + c)] = x_flat[np.uintp(c * plane + q)]
        for oy in range(oh):
            for ox in range(ow):
                a = acc[oy, ox]
                for c in range(c_count):
                    a[c] = 0
                for ky in range(kh):
                    iy = oy * sh - ph + ky * dh
                    if iy < 0 or iy >= h_in:
                        continue
                    for kx in range(kw):
                        ix = ox * sw - pw + kx * dw
                        if ix < 0 or ix >= w_in:
                            continue
                        xr = xt[iy, ix]
                        wr = w_t[ky, kx]
                        for c in range(c_count):
                            a[c] += wr[c] * xr[c]
        for c in range(c_count):
            for oy in range(oh):
                for ox in range(ow):
                    out[n, c, oy, ox] = acc[oy, ox, c]


@njit(nogil=True, cache=True, error_model="numpy")
def depthwise_inner_epilogue(x, w_t, out, sh, sw, dh, dw, ph, pw, res, bias, code, p0, p1, k):  # pragma: no cover
    """depthwise_channels_inner, then a fused step's epilogue (epilogue_rows) on its output, as one call."""
    depthwise_channels_inner(x, w_t, out, sh, sw, dh, dw, ph, pw)
    n_count, c_count = out.shape[0], out.shape[1]
    epilogue_rows(out.reshape((n_count * c_count, out.shape[2] * out.shape[3])), res, bias, c_count, code, p0, p1,
                  k)


def _depthwise_inner_plan(x_planes: tuple[int, ...], wt: np.ndarray, out_shape: tuple[int, ...],
                          out_planes: tuple[int, ...], s, d, pb, epilogue: Epilogue | None
                          ) -> Callable[..., np.ndarray]:
    """depthwise_plan's channels-inner path with the epilogue in the same call (depthwise_inner_epilogue)."""
    dtype = wt.dtype
    e = _epilogue_args(epilogue, dtype)
    rows_shape = (out_planes[0] * out_planes[1], out_planes[2] * out_planes[3])
    geometry = (s[1], s[2], d[1], d[2], pb[1], pb[2])
    run = entry(depthwise_inner_epilogue, c_array(4, dtype), wt, c_array(4, dtype), *geometry, c_array(2, dtype),
                e.bias, e.code, e.p0, e.p1, e.k)

    def channels_inner(x: np.ndarray, res: np.ndarray | None = None) -> np.ndarray:
        if _broadcasts(epilogue, res, out_shape, dtype):
            return with_epilogue(_depthwise_inner_plan(x_planes, wt, out_shape, out_planes, s, d, pb, None),
                                 epilogue)(x, res)
        out = OUTPUTS.empty(out_shape, dtype)
        run(np.ascontiguousarray(x).reshape(x_planes), wt, out.reshape(out_planes), *geometry,
            _residual_rows(epilogue, res, rows_shape, e.no_res), e.bias, e.code, e.p0, e.p1, e.k)
        return out
    channels_inner.fused = True  # type: ignore[attr-defined]
    return channels_inner


# The channels-inner kernel from this many channels, for a serial (small) convolution with a stride or
# an output plane of at most this many pixels.  Measured (AVX-512 EPYC): a [1, 288, 2, 2] 5x5 48 -> 4 us,
# [1, 48, 32, 32] 3x3/s2 97 -> 50 us, [1, 32, 16, 16] 3x3 23 -> 16 us; slower for 8 channels (20 -> 40 us)
# and for stride 1 on 32x32 planes (43 -> 76 us), where the padded-row kernel's long loops vectorize.
CHANNELS_INNER_MIN = 16
CHANNELS_INNER_PLANE = 256


def channels_inner_filter(w: np.ndarray) -> np.ndarray:
    """A depthwise filter [C, kh, kw] (or [C, kw]) as depthwise_channels_inner's [kh, kw, C]."""
    w3 = w.reshape((w.shape[0],) + (1,) * (3 - w.ndim) + w.shape[1:])
    return np.ascontiguousarray(np.moveaxis(w3, 0, -1))


def conv_depthwise(x: np.ndarray, w: np.ndarray, strides, dilations, pads_begin, out_spatial,
                   w_inner: np.ndarray | None = None) -> np.ndarray:
    """x [N, G, *S], w [G*mult, *k] (compute dtype) -> [N, G*mult, *out] by the direct kernels;
    `w_inner`: channels_inner_filter(w) when the caller keeps it (constant weights)."""
    return depthwise_plan(x.shape, w, strides, dilations, pads_begin, out_spatial, w_inner)(x)


def depthwise_plan(x_shape: tuple[int, ...], w: np.ndarray, strides, dilations, pads_begin, out_spatial,
                   w_inner: np.ndarray | None = None, epilogue: Epilogue | None = None) -> Callable[..., np.ndarray]:
    """conv_depthwise for inputs of shape `x_shape` with its kernel and geometry chosen once (a layer with
    constant weights keeps one per input shape: EfficientNet's [1, 288, 2, 2] spent 5 of its 14 us here).
    With an `epilogue`, ``plan(x, residual)`` as forward_plan's."""
    plan = _depthwise_plan(x_shape, w, strides, dilations, pads_begin, out_spatial, w_inner, epilogue)
    if epilogue is None or getattr(plan, "fused", False):
        return plan
    return with_epilogue(plan, epilogue)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _three_taps(s, xf, i, a, b, c):  # pragma: no cover
    """s + a * xf[i] + b * xf[i + 1] + c * xf[i + 2], added in that order."""
    s += a * xf[np.uintp(i)]
    s += b * xf[np.uintp(i + 1)]
    s += c * xf[np.uintp(i + 2)]
    return s


@njit(nogil=True, cache=True, error_model="numpy")
def _depthwise3_planes(xf, w, out, hp, wp, sh, sw, t0, t1):  # pragma: no cover
    """Output planes t0..t1-1 of a 3x3 depthwise convolution (dilation 1, strides sh, sw) from the
    zero-padded planes xf ([N*C planes of hp x wp] flat, hp = (OH - 1) * sh + 3, wp = (OW - 1) * sw + 3):
    each output element sums its nine taps in registers, in (ky, kx) order from zero (the padded-row
    kernel's sums), with the row of outputs as the vector loop.  The padded-row kernel adds every tap into
    a row in memory instead: a load and a store per tap and element ([1, 64, 16, 16]: 37 -> 11 us)."""
    c_count, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    zero = cast_like(0.0, xf)
    for task in range(t0, t1):
        n = task // c_count
        o = task - n * c_count
        base = task * hp * wp
        f = w[o]
        a0, a1, a2, b0, b1, b2 = f[0, 0], f[0, 1], f[0, 2], f[1, 0], f[1, 1], f[1, 2]
        c0, c1, c2 = f[2, 0], f[2, 1], f[2, 2]
        for oy in range(oh):
            r0 = base + oy * sh * wp
            dst = out[n, o, oy]
            for ox in range(ow):
                i = r0 + ox * sw
                s = _three_taps(zero, xf, i, a0, a1, a2)
                s = _three_taps(s, xf, i + wp, b0, b1, b2)
                s = _three_taps(s, xf, i + 2 * wp, c0, c1, c2)
                dst[np.uintp(ox)] = s


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def depthwise3(x, fill, buf, w, out, sh, sw, tasks, res, bias, code, p0, p1, k):  # pragma: no cover
    """A 3x3 depthwise convolution (one input channel per output channel, dilation 1) of x (flat [N*C
    planes]) in one call: the zero-padded planes into buf (fill: fill_padded's geometry), the planes
    (_depthwise3_planes; `tasks` groups over the threads, 1: the calling thread), each group's epilogue
    (epilogue_range) on out [N, C, OH, OW]."""
    planes, h, w_in, hp, wp, ys, ye, xs, xe, y0, x0 = fill
    fill_padded(x, planes, h, w_in, buf, hp, wp, ys, ye, xs, xe, y0, x0, 0)
    rows = out.reshape((planes, out.shape[2] * out.shape[3]))
    c_count = out.shape[1]
    if tasks == 1:
        _depthwise3_planes(buf, w, out, hp, wp, sh, sw, 0, planes)
        epilogue_rows(rows, res, bias, c_count, code, p0, p1, k)
    else:  # each group's epilogue on its own planes, on its thread, while in its cache (as depthwise_rows)
        for t in prange(tasks):
            t0, t1 = t * planes // tasks, (t + 1) * planes // tasks
            _depthwise3_planes(buf, w, out, hp, wp, sh, sw, t0, t1)
            epilogue_range(rows, res, bias, c_count, code, p0, p1, k, t0, t1)


# 3x3 depthwise convolutions (dilation 1) with output rows at least this wide take depthwise3 -- at stride
# 1, and at stride 2 below CHANNELS_INNER_MIN channels (AVX2 EPYC, one thread, padding included: [1, 64, 16,
# 16] 55 -> 28 us, [1, 16, 32, 32] 36 -> 18, [1, 8, 32, 32] /2 29 -> 13; the channels-inner kernel stays
# ahead on narrower rows and for many channels at stride 2).
DEPTHWISE3_MIN_WIDTH = 16


def _depthwise3_plan(x5_shape: tuple[int, ...], w3: np.ndarray, out_shape: tuple[int, ...], s, pb,
                     tasks: int, epilogue: Epilogue | None) -> Callable[..., np.ndarray]:
    """_depthwise_plan's 3x3 path (depthwise3) for inputs of shape x5_shape [N, C, 1, H, W]."""
    dtype = w3.dtype
    oh, ow = out_shape[-2:]  # 2-D data, or 3-D data of depth 1: its plane
    hp, wp = (oh - 1) * s[1] + 3, (ow - 1) * s[2] + 3
    planes, h, w_in, ys, ye, xs, xe, y0, x0 = _fill_geometry(x5_shape, hp, wp, pb)
    fill = (planes, h, w_in, hp, wp, ys, ye, xs, xe, y0, x0)
    e = _epilogue_args(epilogue, dtype)
    run = entry(depthwise3, c_array(1, dtype), fill, c_array(1, dtype), w3, c_array(4, dtype), s[1], s[2], tasks,
                c_array(2, dtype), e.bias, e.code, e.p0, e.p1, e.k)

    padded, out4 = SCRATCH.getter(0, (planes * hp * wp,), dtype), (out_shape[0], out_shape[1], oh, ow)

    def call(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
        run(np.ascontiguousarray(x).reshape(-1), fill, padded(), w3, out.reshape(out4), s[1], s[2], tasks, res_rows,
            e.bias, e.code, e.p0, e.p1, e.k)
    return _fused_plan("rows3", call, lambda: _depthwise3_plan(x5_shape, w3, out_shape, s, pb, tasks, None),
                       epilogue, out_shape, dtype, e.no_res, tasks > 1)


@njit(nogil=True, cache=True, error_model="numpy")
def _rowvec_planes(buf, w, offs, out, hp, wp, sh, sw, t0, t1):  # pragma: no cover
    """Output planes t0..t1-1 (image * C + channel) of a depthwise convolution with column stride sw (1 or 2;
    dilation 1) from the zero-padded planes buf [planes, hp, wp]: rowvec.taps_rows over rows of 16 outputs,
    four output rows a call; taps (offsets `offs` into a plane, w [C, taps]) summed from zero in (ky, kx) order,
    each a multiply then an add (the other depthwise kernels' bits)."""
    c_count, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    taps = offs.shape[0]
    vw, four = rowvec.VW, rowvec.TAP_ROWS
    for task in range(t0, t1):
        base = buf.ctypes.data + 4 * task * hp * wp
        wt = w.ctypes.data + 4 * (task % c_count) * taps
        oy = 0
        while oy < oh:
            dst = out.ctypes.data + 4 * (task * oh + oy) * ow
            src = base + 4 * oy * sh * wp
            block = oh - oy >= four
            eight = oh - oy >= 8
            for j0 in range(0, ow, vw):
                cols = min(vw, ow - j0)
                at = src + 4 * sw * j0
                if eight and sw == 1:
                    rowvec.taps_rows_1x8(at, sh * wp, offs.ctypes.data, wt, taps, dst + 4 * j0, ow, cols)
                elif eight:
                    rowvec.taps_rows_2x8(at, sh * wp, offs.ctypes.data, wt, taps, dst + 4 * j0, ow, cols)
                elif sw == 1 and block:
                    rowvec.taps_rows_1x4(at, sh * wp, offs.ctypes.data, wt, taps, dst + 4 * j0, ow, cols)
                elif sw == 1:
                    rowvec.taps_rows_1x1(at, sh * wp, offs.ctypes.data, wt, taps, dst + 4 * j0, ow, cols)
                elif block:
                    rowvec.taps_rows_2x4(at, sh * wp, offs.ctypes.data, wt, taps, dst + 4 * j0, ow, cols)
                else:
                    rowvec.taps_rows_2x1(at, sh * wp, offs.ctypes.data, wt, taps, dst + 4 * j0, ow, cols)
            oy += 8 if eight else (four if block else 1)


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def depthwise_rows(x, fill, buf, w, offs, out, hp, wp, sh, sw, tasks, res, bias, code, p0, p1, k):  # pragma: no cover
    """A float32 depthwise convolution of column stride sw (1 or 2) of x (flat [N*C planes]) in one call: the
    zero-padded planes into buf (fill: fill_padded's geometry), the planes (_rowvec_planes; `tasks` groups
    over the threads, 1: the calling thread), each group's epilogue (epilogue_range) on out [N, C, OH, OW]."""
    planes, h, w_in, ys, ye, xs, xe, y0, x0 = fill
    fill_padded(x, planes, h, w_in, buf, hp, wp, ys, ye, xs, xe, y0, x0, 0)
    rows = out.reshape((planes, out.shape[2] * out.shape[3]))
    c_count = out.shape[1]
    if tasks == 1:
        _rowvec_planes(buf, w, offs, out, hp, wp, sh, sw, 0, planes)
        epilogue_rows(rows, res, bias, c_count, code, p0, p1, k)
    else:
        for t in prange(tasks):
            t0, t1 = t * planes // tasks, (t + 1) * planes // tasks
            _rowvec_planes(buf, w, offs, out, hp, wp, sh, sw, t0, t1)
            epilogue_range(rows, res, bias, c_count, code, p0, p1, k, t0, t1)


# float32 2-D depthwise convolutions (dilation 1) with column stride 2 and output rows at least this wide take
# depthwise_rows where irnorm's vector kernels are measured (AVX-512).  Against the kernels before (AVX-512
# EPYC, one thread, padding included): EfficientNet's [1, 48, 32, 32] 3x3 / 2 30 -> 12 us, [1, 48, 16, 16] 5x5
# / 2 14 -> 11, MobileNetV3's [1, 40, 16, 16] 3x3 / 2 8.1 -> 4.8, [1, 8, 32, 32] 5.9 -> 2.7, [1, 16, 64, 64] 54
# -> 12; level for rows of 4 ([1, 96, 8, 8]: 5.6), slower for rows of 2 (where the channels-inner kernel stays).
STRIDE2_MIN_WIDTH = 8
# ... and with column stride 1, output rows at least this wide
STRIDE1_MIN_WIDTH = 8


def _rowvec_plan(x5_shape: tuple[int, ...], w4: np.ndarray, out_shape: tuple[int, ...], s, pb, tasks: int,
                 epilogue: Epilogue | None) -> Callable[..., np.ndarray]:
    """_depthwise_plan's vector-row path (depthwise_rows, column stride s[2] of 1 or 2) for inputs of shape
    x5_shape [N, C, 1, H, W] and filters w4 [C, 1, kh, kw]."""
    dtype = w4.dtype
    kh, kw = w4.shape[2], w4.shape[3]
    oh, ow = ((1,) + tuple(out_shape[2:]))[-2:]  # 1-D data: one row; 3-D data of depth 1: its plane
    hp, wp = (oh - 1) * s[1] + kh, (ow - 1) * s[2] + kw
    fill = tuple(int(v) for v in _fill_geometry(x5_shape, hp, wp, pb))
    planes = fill[0]
    w2 = np.ascontiguousarray(w4.reshape(w4.shape[0], kh * kw))
    offs = np.array([ky * wp + kx for ky in range(kh) for kx in range(kw)], np.int64)
    e = _epilogue_args(epilogue, dtype)
    run = entry(depthwise_rows, c_array(1, dtype), fill, c_array(1, dtype), w2, offs, c_array(4, dtype), hp, wp,
                s[1], s[2], tasks, c_array(2, dtype), e.bias, e.code, e.p0, e.p1, e.k)

    padded, out4 = SCRATCH.getter(0, (planes * hp * wp,), dtype), (out_shape[0], out_shape[1], oh, ow)

    def call(x: np.ndarray, out: np.ndarray, res_rows: np.ndarray) -> None:
        run(np.ascontiguousarray(x).reshape(-1), fill, padded(), w2, offs, out.reshape(out4), hp, wp, s[1], s[2],
            tasks, res_rows, e.bias, e.code, e.p0, e.p1, e.k)
    return _fused_plan("rowvec", call, lambda: _rowvec_plan(x5_shape, w4, out_shape, s, pb, tasks, None),
                       epilogue, out_shape, dtype, e.no_res, tasks > 1)


def _depthwise_plan(x_shape: tuple[int, ...], w: np.ndarray, strides, dilations, pads_begin, out_spatial,
                    w_inner: np.ndarray | None, epilogue: Epilogue | None) -> Callable[..., np.ndarray]:
    n, g = x_shape[:2]
    co = w.shape[0]
    out_shape = (n, co) + tuple(out_spatial)
    if prod(out_shape) == 0:
        return lambda x: OUTPUTS.empty(out_shape, x.dtype)
    kk, s, d, pb, o3 = _geom(w.shape[1:], strides, dilations, pads_begin, out_spatial)
    x5_shape = (n, g) + _as3d(x_shape[2:])
    w4 = np.ascontiguousarray(w).reshape((co,) + tuple(kk))
    work = prod(out_shape) * w4[0].size
    tasks = 1 if work < DEPTHWISE_PARALLEL_MIN else min(n * co, 64)
    out_planes = (n, co) + tuple(o3[1:])
    if (microgemm.ENABLED and co == g and kk[0] == 1 and o3[0] == 1 and d == [1, 1, 1] and s[0] == 1 and s[2] == 2
            and o3[2] >= STRIDE2_MIN_WIDTH and w.dtype == np.float32):
        return _rowvec_plan(x5_shape, w4, out_shape, s, pb, tasks, epilogue)
    if (co == g and kk == [1, 3, 3] and d == [1, 1, 1] and o3[0] == 1 and o3[2] >= DEPTHWISE3_MIN_WIDTH
            and s[0] == 1 and s[1] in (1, 2) and (s[2] == 1 or s[2] == 2 and g < CHANNELS_INNER_MIN)
            and w.dtype.kind == "f"):
        return _depthwise3_plan(x5_shape, w4.reshape(co, 3, 3), out_shape, s, pb, tasks, epilogue)
    if (microgemm.ENABLED and co == g and kk[0] == 1 and o3[0] == 1 and d == [1, 1, 1] and s == [1, 1, 1]
            and o3[2] >= STRIDE1_MIN_WIDTH and w.dtype == np.float32):
        return _rowvec_plan(x5_shape, w4, out_shape, s, pb, tasks, epilogue)
    if (tasks == 1 and co == g and g >= CHANNELS_INNER_MIN and o3[0] == 1 and kk[0] == 1 and s[0] == 1
            and (s != [1, 1, 1] or o3[1] * o3[2] <= CHANNELS_INNER_PLANE)):
        wt = (w_inner if w_inner is not None else channels_inner_filter(w)).reshape(kk[1], kk[2], co)
        x_planes = (n, g) + x5_shape[3:]
        if prod(out_shape) < ONE_CALL_MAX:  # with the epilogue in the same call
            return _depthwise_inner_plan(x_planes, wt, out_shape, out_planes, s, d, pb, epilogue)
        run_inner = entry(depthwise_channels_inner, c_array(4, w.dtype), wt, c_array(4, w.dtype), s[1], s[2], d[1],
                          d[2], pb[1], pb[2])

        def channels_inner(x: np.ndarray) -> np.ndarray:
            out = OUTPUTS.empty(out_shape, x.dtype)
            run_inner(np.ascontiguousarray(x).reshape(x_planes), wt, out.reshape(out_planes), s[1], s[2], d[1], d[2],
                      pb[1], pb[2])
            return out
        return channels_inner
    if o3[0] == 1 and kk[0] == 1 and s == [1, 1, 1]:  # 1-D/2-D, stride 1: the padded row width
        hp, wp = o3[1] + (kk[1] - 1) * d[1], o3[2] + (kk[2] - 1) * d[2]
        w_rows = w4[:, 0]
        padded = padded_planes_plan(x5_shape, hp, wp, pb, (kk[2] - 1) * d[2])
        run_wide = entry(depthwise_wide, c_array(1, w.dtype), w_rows, c_array(4, w.dtype), co // g, hp, wp, d[1],
                         d[2], tasks)

        def wide(x: np.ndarray) -> np.ndarray:
            out = OUTPUTS.empty(out_shape, x.dtype)
            buf = padded(x)
            run_wide(buf, w_rows, out.reshape(out_planes), co // g, hp, wp, d[1], d[2], tasks)
            return out
        wide.parallel = tasks > 1  # type: ignore[attr-defined]
        return wide

    run_general = entry(depthwise, c_array(5, w.dtype), w4, c_array(5, w.dtype), co // g, s[0], s[1], s[2], d[0],
                        d[1], d[2], pb[0], pb[1], pb[2], tasks)

    def general(x: np.ndarray) -> np.ndarray:
        out = OUTPUTS.empty(out_shape, x.dtype)
        run_general(np.ascontiguousarray(x).reshape(x5_shape), w4, out.reshape((n, co) + tuple(o3)), co // g, s[0],
                    s[1], s[2], d[0], d[1], d[2], pb[0], pb[1], pb[2], tasks)
        return out
    general.parallel = tasks > 1  # type: ignore[attr-defined]
    return general


def conv_backprop(x: np.ndarray, wt: np.ndarray, k_spatial, strides, dilations, pads_begin, out_spatial
                  ) -> np.ndarray:
    """Transposed convolution: x [N, Cin, *S] and prepared weights wt [Cout*K, Cin] (the filter
    [Cin, Cout, *k] transposed) -> [N, Cout, *out]."""
    n, cin = x.shape[:2]
    kk, s, d, pb, o3 = _geom(k_spatial, strides, dilations, pads_begin, out_spatial)
    taps = kk[0] * kk[1] * kk[2]
    cout = wt.shape[0] // taps if taps else 0
    out = np.zeros((n, cout) + tuple(out_spatial), x.dtype)
    if out.size == 0 or cin == 0 or x.size == 0:
        return out
    i3 = [int(v) for v in _as3d(x.shape[2:])]
    xm = np.ascontiguousarray(x).reshape(n, cin, i3[0] * i3[1] * i3[2])
    out5 = out.reshape((n, cout) + tuple(o3))
    for n0, n1, r0, r1 in _tiles(n, i3[0] * i3[1], wt.shape[0] * i3[2]):
        col = np.matmul(wt, xm[n0:n1, :, r0 * i3[2]:r1 * i3[2]])  # [n, Cout*taps, rows*iw]
        col2im(col, out5[n0:n1], kk[0], kk[1], kk[2], s[0], s[1], s[2], d[0], d[1], d[2], pb[0], pb[1], pb[2],
               i3[1], i3[2], r0, r1)
    return out
