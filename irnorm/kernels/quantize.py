"""FakeQuantize kernel: every element of the output meets its own (input_low, input_high,
output_low, output_high) quadruple, each of the five operands broadcast (numpy rule) to the output.

The caller collapses the broadcast to a few dims (``plan``): adjacent dims merge when every operand
is laid out contiguously across them (or broadcast across both), so a per-channel quantization of
``[N, C, H, W]`` becomes ``[N, C, H*W]`` with the limits' strides ``(0, 1, 0)``.  The innermost
dim is cut into chunks of at most ``_CHUNK`` elements; one (row, chunk) pair is one parallel task,
and a chunk whose four limits do not move (stride 0) runs a tight loop with the limits hoisted.

Arithmetic is OpenVINO's reference formula in the compute type (float32 for f32/f16/bf16, float64
for f64): ``x <= min(il, ih)`` gives ``ol``, ``x > max(il, ih)`` gives ``oh``, anything else
``rint((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol`` with ``rint``
rounding half to even (``std::nearbyint`` in the default rounding mode).  NaN data stays NaN.
"""

from __future__ import annotations

import numpy as np

from . import PARALLEL_MIN
from .jit import njit, prange

_CHUNK = 8192


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _q(x, il, ih, ol, oh, lm1):
    lo = il if il < ih else ih
    hi = ih if il < ih else il
    if x <= lo:
        return ol
    if x > hi:
        return oh
    return np.rint((x - il) / (ih - il) * lm1) / lm1 * (oh - ol) + ol


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _task(t, x, il, ih, ol, oh, out, dims, st, lm1, nchunk):
    r = dims.shape[0]
    inner = dims[r - 1]
    row = t // nchunk
    j0 = (t % nchunk) * _CHUNK
    j1 = min(j0 + _CHUNK, inner)
    o0 = 0
    o1 = 0
    o2 = 0
    o3 = 0
    o4 = 0
    rem = row
    for d in range(r - 2, -1, -1):
        i = rem % dims[d]
        rem //= dims[d]
        o0 += i * st[0, d]
        o1 += i * st[1, d]
        o2 += i * st[2, d]
        o3 += i * st[3, d]
        o4 += i * st[4, d]
    s0 = st[0, r - 1]
    s1 = st[1, r - 1]
    s2 = st[2, r - 1]
    s3 = st[3, r - 1]
    s4 = st[4, r - 1]
    base = row * inner
    if s1 == 0 and s2 == 0 and s3 == 0 and s4 == 0:
        a = il[o1]
        b = ih[o2]
        c = ol[o3]
        e = oh[o4]
        lo = a if a < b else b
        hi = b if a < b else a
        if s0 == 1:
            xs = x[o0 + j0:o0 + j1]
            ys = out[base + j0:base + j1]
            for j in range(j1 - j0):
                v = xs[j]
                if v <= lo:
                    ys[j] = c
                elif v > hi:
                    ys[j] = e
                else:
                    ys[j] = np.rint((v - a) / (b - a) * lm1) / lm1 * (e - c) + c
        else:
            for j in range(j0, j1):
                out[base + j] = _q(x[o0 + j * s0], a, b, c, e, lm1)
        return
    for j in range(j0, j1):
        out[base + j] = _q(x[o0 + j * s0], il[o1 + j * s1], ih[o2 + j * s2], ol[o3 + j * s3], oh[o4 + j * s4], lm1)


@njit(nogil=True, parallel=True, error_model="numpy", cache=True)
def _run_parallel(x, il, ih, ol, oh, out, dims, st, lm1, ntask, nchunk):
    for t in prange(ntask):
        _task(t, x, il, ih, ol, oh, out, dims, st, lm1, nchunk)


@njit(nogil=True, error_model="numpy", cache=True)
def _run_serial(x, il, ih, ol, oh, out, dims, st, lm1, ntask, nchunk):
    for t in range(ntask):
        _task(t, x, il, ih, ol, oh, out, dims, st, lm1, nchunk)


def plan(out_shape: tuple[int, ...], shapes: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """(dims, strides[5, len(dims)]) of the collapsed iteration: each operand's shape is numpy-broadcast
    to `out_shape` (stride 0 on the dims it lacks or has as 1)."""
    r = len(out_shape)
    cols = []
    for s in shapes:
        s = (1,) * (r - len(s)) + tuple(s)
        st, acc = [0] * r, 1
        for d in range(r - 1, -1, -1):
            st[d] = acc if s[d] != 1 else 0
            acc *= s[d]
        cols.append(st)
    keep = [d for d in range(r) if out_shape[d] != 1]
    dims = [out_shape[d] for d in keep]
    strides = [[c[d] for d in keep] for c in cols]
    # merge dim d into d+1 where every operand runs contiguously across the pair
    k = len(dims) - 2
    while k >= 0:
        if all(s[k] == s[k + 1] * dims[k + 1] for s in strides):
            dims[k + 1] *= dims[k]
            del dims[k]
            for s in strides:
                del s[k]
        k -= 1
    if not dims:
        dims, strides = [1], [[0] for _ in cols]
    return np.array(dims, np.int64), np.array(strides, np.int64).reshape(len(cols), len(dims))


def fake_quantize(x: np.ndarray, il: np.ndarray, ih: np.ndarray, ol: np.ndarray, oh: np.ndarray, levels: int,
                  out_shape: tuple[int, ...], cdt: np.dtype) -> np.ndarray:
    """The output (dtype `cdt`, shape `out_shape`) for operands already of dtype `cdt`."""
    ops = [np.ascontiguousarray(a, dtype=cdt) for a in (x, il, ih, ol, oh)]
    out = np.empty(out_shape, cdt)
    n = out.size
    if n == 0:
        return out
    dims, st = plan(tuple(out_shape), [a.shape for a in ops])
    inner = int(dims[-1])
    nchunk = (inner + _CHUNK - 1) // _CHUNK
    ntask = (n // inner) * nchunk
    flat = [a.reshape(-1) for a in ops]
    fn = _run_parallel if n >= PARALLEL_MIN and ntask > 1 else _run_serial
    fn(*flat, out.reshape(-1), dims, st, cdt.type(levels - 1), ntask, nchunk)
    return out
