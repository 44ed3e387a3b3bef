"""Embedding-bag and Col2Im kernels.

``bags``: every bag ``b`` of an embedding-bag op reduces the table rows ``idx[starts[b]:ends[b]]``
(optionally times ``weights[p]``) in index order, the first row stored, the others added (the CPU
plugin's order, so float32 results agree bit for bit up to the compiler); an empty bag takes row
``default`` (>= 0) or stays zero.  ``mean`` divides a float bag by its size; integer means are taken
by the caller after the sum is wrapped to the table's type (OpenVINO divides the wrapped sum).  The
caller has checked every index it passes against the table (no bounds checks here) and passes the
table as ``[num_emb, depth]`` in the compute type (float32 for f16/bf16, int64 for integers).

``col2im``: Col2Im-15's scatter-add of the columns ``[N, C*kh*kw, L]`` into ``[N, C, H, W]``.  Each
(n, c) plane is one task; inside it the kernel offsets (i, j) run in row-major order and, for each,
the blocks in row-major order, so every output pixel sums its contributions in the column order of
OpenVINO's reference (``col = (c*kh + i)*kw + j``), which its CPU plugin runs.  Positions outside the
image (padding) are skipped; every read and write is inside the arrays.
"""

from __future__ import annotations

import numpy as np

from .jit import njit, prange


@njit(nogil=True, cache=True, inline="always")
def _bag(b, table, idx, starts, ends, weights, use_w, default, mean, out):
    s = starts[b]
    e = ends[b]
    depth = out.shape[1]
    if s >= e:
        if default >= 0:
            for k in range(depth):
                out[b, k] = table[default, k]
        return
    r = idx[s]
    if use_w:
        w = weights[s]
        for k in range(depth):
            out[b, k] = table[r, k] * w
    else:
        for k in range(depth):
            out[b, k] = table[r, k]
    for p in range(s + 1, e):
        r = idx[p]
        if use_w:
            w = weights[p]
            for k in range(depth):
                out[b, k] += table[r, k] * w
        else:
            for k in range(depth):
                out[b, k] += table[r, k]
    if mean:
        n = e - s
        for k in range(depth):
            out[b, k] /= n


@njit(nogil=True, cache=True)
def _bags_serial(table, idx, starts, ends, weights, use_w, default, mean, out):
    for b in range(out.shape[0]):
        _bag(b, table, idx, starts, ends, weights, use_w, default, mean, out)


@njit(nogil=True, parallel=True, cache=True)
def _bags_parallel(table, idx, starts, ends, weights, use_w, default, mean, out):
    for b in prange(out.shape[0]):
        _bag(b, table, idx, starts, ends, weights, use_w, default, mean, out)


def bags(table: np.ndarray, idx: np.ndarray, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray | None,
         default: int, mean: bool) -> np.ndarray:
    """[B, depth] in table's dtype (a compute type: float32, float64 or int64).  table [num, depth] and
    idx / starts / ends (int64) as the module docstring says; mean only for float tables."""
    from . import PARALLEL_MIN

    out = np.zeros((starts.shape[0], table.shape[1]), table.dtype)
    if out.size == 0:
        return out
    use_w = weights is not None
    w = np.ascontiguousarray(weights, table.dtype) if use_w else np.zeros(1, table.dtype)
    work = max(idx.shape[0], starts.shape[0]) * table.shape[1]
    fn = _bags_parallel if work >= PARALLEL_MIN and starts.shape[0] > 1 else _bags_serial
    fn(np.ascontiguousarray(table), np.ascontiguousarray(idx, np.int64), np.ascontiguousarray(starts, np.int64),
       np.ascontiguousarray(ends, np.int64), w, use_w, np.int64(default), bool(mean), out)
    return out


@njit(nogil=True, cache=True, inline="always")
def _plane(t, data, out, kh, kw, sh, sw, dh, dw, ph, pw, bh, bw):
    c_out = out.shape[1]
    h = out.shape[2]
    w = out.shape[3]
    n = t // c_out
    c = t % c_out
    for i in range(kh):
        for j in range(kw):
            col = (c * kh + i) * kw + j
            for by in range(bh):
                y = by * sh - ph + i * dh
                if y < 0 or y >= h:
                    continue
                for bx in range(bw):
                    x = bx * sw - pw + j * dw
                    if x >= 0 and x < w:
                        out[n, c, y, x] += data[n, col, by * bw + bx]


@njit(nogil=True, cache=True)
def _col2im_serial(data, out, kh, kw, sh, sw, dh, dw, ph, pw, bh, bw):
    for t in range(out.shape[0] * out.shape[1]):
        _plane(t, data, out, kh, kw, sh, sw, dh, dw, ph, pw, bh, bw)


@njit(nogil=True, parallel=True, cache=True)
def _col2im_parallel(data, out, kh, kw, sh, sw, dh, dw, ph, pw, bh, bw):
    for t in prange(out.shape[0] * out.shape[1]):
        _plane(t, data, out, kh, kw, sh, sw, dh, dw, ph, pw, bh, bw)


def col2im(data: np.ndarray, channels: int, out_hw: tuple[int, int], kernel: tuple[int, int],
           strides: tuple[int, int], dilations: tuple[int, int], pads_begin: tuple[int, int],
           blocks: tuple[int, int]) -> np.ndarray:
    """[N, channels, H, W] in data's dtype (a compute type) for data [N, channels*kh*kw, bh*bw] (checked by
    the caller)."""
    from . import PARALLEL_MIN

    n = data.shape[0]
    out = np.zeros((n, channels) + tuple(out_hw), data.dtype)
    if out.size == 0 or data.size == 0:
        return out
    fn = _col2im_parallel if data.size >= PARALLEL_MIN and n * channels > 1 else _col2im_serial
    fn(np.ascontiguousarray(data), out, np.int64(kernel[0]), np.int64(kernel[1]), np.int64(strides[0]),
       np.int64(strides[1]), np.int64(dilations[0]), np.int64(dilations[1]), np.int64(pads_begin[0]),
       np.int64(pads_begin[1]), np.int64(blocks[0]), np.int64(blocks[1]))
    return out
