"""Convolution kernels: im2col + BLAS GEMM, GEMM + col2im (transposed convolution), and a direct
depthwise kernel.

Every spatial layout is handled as 3-D (a 1-D convolution is [1, 1, W], a 2-D one [1, H, W]), so one
Numba kernel serves the three ranks.  Arithmetic runs in float32 (float64 for f64); f16/bf16 data is
converted by the caller.

* ``conv_forward``: dense and grouped convolution.  The input is unfolded by ``im2col`` (a Numba
  parallel kernel over (n, c, tap) rows) into ``col [N, G, C/G*K, P]`` and multiplied by the weights
  ``[G, Cout/G, C/G*K]`` with one batched ``np.matmul`` (BLAS sgemm/dgemm per (n, g)); the product is
  already NCHW.  A 1x1 convolution with unit strides and no padding skips the unfold.  The unfold is
  done per block of images, or per block of output rows of one large image, so it stays within
  COL_BUDGET elements (a 224x224 VGG layer would otherwise unfold to hundreds of MB).
* ``depthwise``: groups == C with one input channel per group: a direct parallel loop per (n, out
  channel) — a GEMM with K = k*k per channel is all overhead (benchmarks/conv_matmul.py).
* ``conv_backprop``: ``col = W^T @ x`` (BLAS) then ``col2im`` scatter-adds each column into the
  output plane of its (n, out channel); planes are disjoint, so the parallel loop has no races.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import blas

# Unfolded-buffer budget (elements) per block of images or, for a large image, of output rows.
COL_BUDGET = 1 << 22


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


@njit(nogil=True, parallel=True, cache=True)
def im2col(x, col, kd, kh, kw, sd, sh, sw, dd, dh, dw, pd, ph, pw, oh, ow, r0, r1):
    """x [N, C, D, H, W] -> col [N, C*kd*kh*kw, (r1-r0)*ow]: output rows r0..r1-1 of the flattened
    (oz, oy) rows (row r is oz = r // oh, oy = r % oh); zeros where the window is in the padding."""
    n_count, c_count, d_in, h_in, w_in = x.shape
    taps = kd * kh * kw
    rows = n_count * c_count * taps
    for task in prange(rows):
        n = task // (c_count * taps)
        r = task % (c_count * taps)
        c = r // taps
        t = r % taps
        kz = t // (kh * kw)
        ky = (t // kw) % kh
        kx = t % kw
        dst = col[n, r]
        off_x = kx * dw - pw  # valid output x range for this tap: 0 <= ox*sw + off_x < w_in
        lo, hi = _x_range(off_x, sw, w_in, ow)
        p = 0
        for rr in range(r0, r1):
            iz = (rr // oh) * sd - pd + kz * dd
            iy = (rr % oh) * sh - ph + ky * dh
            if iz < 0 or iz >= d_in or iy < 0 or iy >= h_in:
                for ox in range(ow):
                    dst[p + ox] = 0
            else:
                src = x[n, c, iz, iy]
                for ox in range(lo):
                    dst[p + ox] = 0
                if sw == 1:
                    for ox in range(lo, hi):
                        dst[p + ox] = src[ox + off_x]
                else:
                    for ox in range(lo, hi):
                        dst[p + ox] = src[ox * sw + off_x]
                for ox in range(hi, ow):
                    dst[p + ox] = 0
            p += ow


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
def depthwise(x, w, out, mult, sd, sh, sw, dd, dh, dw, pd, ph, pw):
    """x [N, G, D, H, W], w [G*mult, kd, kh, kw], out [N, G*mult, od, oh, ow]: out channel o reads
    input channel o // mult."""
    n_count, co_count, od, oh, ow = out.shape
    d_in, h_in, w_in = x.shape[2], x.shape[3], x.shape[4]
    kd, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    for task in prange(n_count * co_count):
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
                            if sw == 1:  # contiguous: vectorizes
                                for ox in range(lo, hi):
                                    dst[ox] += wv * src[ox + off_x]
                            else:
                                for ox in range(lo, hi):
                                    dst[ox] += wv * src[ox * sw + off_x]


def _as3d(shape, fill=1):
    """Spatial dims (or per-dim parameters) padded at the front to three."""
    return (fill,) * (3 - len(shape)) + tuple(shape)


def _geom(k_spatial, strides, dilations, pads_begin, spatial):
    return ([int(v) for v in _as3d(k_spatial)], [int(v) for v in _as3d(strides)],
            [int(v) for v in _as3d(dilations)], [int(v) for v in _as3d(pads_begin, 0)],
            [int(v) for v in _as3d(spatial)])


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
    n, c = x.shape[:2]
    g, cpg = w.shape[0], w.shape[1]
    cout = g * cpg
    out = np.empty((n, cout) + tuple(out_spatial), x.dtype)
    if out.size == 0:
        return out
    if w.shape[2] == 0:  # no input channels: sums over nothing
        out[...] = 0
        return out
    kk, s, d, pb, o3 = _geom(k_spatial, strides, dilations, pads_begin, out_spatial)
    p_out = o3[0] * o3[1] * o3[2]
    x5 = np.ascontiguousarray(x).reshape((n, c) + _as3d(x.shape[2:]))
    res = out.reshape(n, g, cpg, p_out)
    ck = c * kk[0] * kk[1] * kk[2]
    if kk == [1, 1, 1] and s == [1, 1, 1] and pb == [0, 0, 0] and tuple(o3) == x5.shape[2:]:
        _product(w, x5.reshape(n, g, ck // g, p_out), res)  # 1x1: no unfold
    else:
        _unfolded_products(x5, w, res, kk, s, d, pb, o3, ck, g)
    return out


def _product(w: np.ndarray, col: np.ndarray, out: np.ndarray) -> None:
    """out = w @ col (BLAS), a large product on more BLAS threads (kernels/blas.py)."""
    wide = blas.widen(w.shape[-2], col.shape[-1], col.shape[-2], col.size // max(1, col.shape[-1] * col.shape[-2]))
    try:
        np.matmul(w, col, out=out)
    finally:
        if wide:
            blas.narrow()


def _unfolded_products(x5, w, res, kk, s, d, pb, o3, ck, g) -> None:
    """res = w @ im2col(x5), a block of images (or of output rows) at a time."""
    n = x5.shape[0]
    for n0, n1, r0, r1 in _tiles(n, o3[0] * o3[1], ck * o3[2]):
        col = np.empty((n1 - n0, ck, (r1 - r0) * o3[2]), x5.dtype)
        im2col(x5[n0:n1], col, kk[0], kk[1], kk[2], s[0], s[1], s[2], d[0], d[1], d[2], pb[0], pb[1], pb[2],
               o3[1], o3[2], r0, r1)
        col = col.reshape(n1 - n0, g, ck // g, col.shape[-1])
        if r0 == 0 and r1 == o3[0] * o3[1]:
            _product(w, col, res[n0:n1])
        else:
            part = np.empty(res[n0:n1, :, :, r0 * o3[2]:r1 * o3[2]].shape, res.dtype)
            _product(w, col, part)
            res[n0:n1, :, :, r0 * o3[2]:r1 * o3[2]] = part


def conv_depthwise(x: np.ndarray, w: np.ndarray, strides, dilations, pads_begin, out_spatial) -> np.ndarray:
    """x [N, G, *S], w [G*mult, *k] (compute dtype) -> [N, G*mult, *out] by the direct kernel."""
    n, g = x.shape[:2]
    co = w.shape[0]
    out = np.empty((n, co) + tuple(out_spatial), x.dtype)
    if out.size == 0:
        return out
    kk, s, d, pb, o3 = _geom(w.shape[1:], strides, dilations, pads_begin, out_spatial)
    x5 = np.ascontiguousarray(x).reshape((n, g) + _as3d(x.shape[2:]))
    w4 = np.ascontiguousarray(w).reshape((co,) + tuple(kk))
    depthwise(x5, w4, out.reshape((n, co) + tuple(o3)), co // g, s[0], s[1], s[2], d[0], d[1], d[2],
              pb[0], pb[1], pb[2])
    return out


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
