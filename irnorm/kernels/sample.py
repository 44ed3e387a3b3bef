"""GridSample kernel: every output pixel ``(n, y, x)`` reads the grid's ``(gx, gy)`` once, turns it
into data coordinates and taps (1, 4 or 16 of them) with their weights, and then blends those taps
for every channel.  The parallel tasks are output rows ``(n, y)``; the arithmetic is the compute
type of the data (float32 for f32/f16/bf16, float64 for f64).

Coordinates (the PyTorch / ONNX rule): ``align_corners`` maps -1 and 1 to the centres of the corner
pixels, ``(g + 1) / 2 * (L - 1)``; otherwise to their outer edges, ``((g + 1) * L - 1) / 2``.
Padding: ``zeros`` reads 0 outside the data; ``border`` clamps the coordinate to ``[0, L - 1]``;
``reflection`` mirrors it at the corner centres (align_corners) or at the outer edges (otherwise,
then clamps).  nearest rounds half to even; bilinear blends the 2x2 neighbours; bicubic the 4x4
ones with the cubic convolution coefficients (A = -0.75), each tap index padded on its own.
Every data read is at an index inside the data: out-of-range taps read 0 or a clamped index.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import njit, prange

NEAREST, BILINEAR, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
MODES = {"nearest": NEAREST, "bilinear": BILINEAR, "bicubic": BICUBIC}
PADDINGS = {"zeros": ZEROS, "border": BORDER, "reflection": REFLECTION}


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _reflect(v, twice_low, twice_high):
    if twice_low == twice_high:
        return 0.0
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    v = abs(v - lo)
    flips = math.floor(v / span)
    extra = v - flips * span
    if flips % 2 == 0:
        return extra + lo
    return span - extra + lo


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _pad_coord(v, size, padding, align):
    """The coordinate after border/reflection padding (zeros: unchanged)."""
    if padding == BORDER:
        return min(max(v, 0.0), size - 1.0)
    if padding == REFLECTION:
        if align:
            v = _reflect(v, 0.0, 2.0 * (size - 1))
        else:
            v = _reflect(v, -1.0, 2.0 * size - 1)
        return min(max(v, 0.0), size - 1.0)
    return v


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _cubic(t, k):
    a = -0.75
    if k == 0:
        s = t + 1.0
        return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a
    if k == 1:
        return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    if k == 2:
        s = 1.0 - t
        return ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0
    s = 2.0 - t
    return ((a * s - 5.0 * a) * s + 8.0 * a) * s - 4.0 * a


@njit(nogil=True, error_model="numpy", cache=True)
def _taps(c, size, mode, padding, align, idx, w):
    """Fill idx/w (length 4) with the taps along one axis; returns how many there are.  A tap
    outside the data gets index -1 (it reads 0)."""
    if mode == NEAREST or mode == BILINEAR:
        c = _pad_coord(c, size, padding, align)
    if c != c or abs(c) > 1e18:  # NaN or absurd grid values: no finite tap
        idx[0] = -1
        w[0] = 0.0
        return 1
    if mode == NEAREST:
        i = int(np.rint(c))
        idx[0] = i if 0 <= i < size else -1
        w[0] = 1.0
        return 1
    f = math.floor(c)
    t = c - f
    base = int(f)
    if mode == BILINEAR:
        for k in range(2):
            i = base + k
            idx[k] = i if 0 <= i < size else -1
        w[0] = 1.0 - t
        w[1] = t
        return 2
    for k in range(4):
        i = base - 1 + k
        if padding != ZEROS:
            i = int(_pad_coord(float(i), size, padding, align))
        idx[k] = i if 0 <= i < size else -1
        w[k] = _cubic(t, k)
    return 4


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _unnormalize(g, size, align):
    if align:
        return (g + 1.0) / 2.0 * (size - 1)
    return ((g + 1.0) * size - 1.0) / 2.0


@njit(nogil=True, error_model="numpy", cache=True, inline="always")
def _row(t, data, grid, out, mode, padding, align):
    n_c = data.shape[1]
    h_in = data.shape[2]
    w_in = data.shape[3]
    h_out = grid.shape[1]
    w_out = grid.shape[2]
    n = t // h_out
    y = t % h_out
    iy = np.empty(4, np.int64)
    ix = np.empty(4, np.int64)
    wy = np.empty(4, np.float64)
    wx = np.empty(4, np.float64)
    for x in range(w_out):
        cx = _unnormalize(np.float64(grid[n, y, x, 0]), w_in, align)
        cy = _unnormalize(np.float64(grid[n, y, x, 1]), h_in, align)
        kx = _taps(cx, w_in, mode, padding, align, ix, wx)
        ky = _taps(cy, h_in, mode, padding, align, iy, wy)
        for c in range(n_c):
            acc = 0.0
            for a in range(ky):
                if iy[a] < 0:
                    continue
                racc = 0.0
                for b in range(kx):
                    if ix[b] >= 0:
                        racc += wx[b] * data[n, c, iy[a], ix[b]]
                acc += wy[a] * racc
            out[n, c, y, x] = acc


@njit(nogil=True, parallel=True, error_model="numpy", cache=True)
def _run_parallel(data, grid, out, mode, padding, align):
    for t in prange(grid.shape[0] * grid.shape[1]):
        _row(t, data, grid, out, mode, padding, align)


@njit(nogil=True, error_model="numpy", cache=True)
def _run_serial(data, grid, out, mode, padding, align):
    for t in range(grid.shape[0] * grid.shape[1]):
        _row(t, data, grid, out, mode, padding, align)


def grid_sample(data: np.ndarray, grid: np.ndarray, mode: str, padding: str, align: bool, cdt: np.dtype
                ) -> np.ndarray:
    """[N, C, Hout, Wout] of dtype `cdt` for data [N, C, H, W] and grid [N, Hout, Wout, 2]."""
    from . import PARALLEL_MIN

    d = np.ascontiguousarray(data, dtype=cdt)
    g = np.ascontiguousarray(grid, dtype=cdt)
    n, c = d.shape[:2]
    out = np.zeros((n, c, g.shape[1], g.shape[2]), cdt)
    if out.size == 0 or d.shape[2] == 0 or d.shape[3] == 0:
        return out
    work = out.size * (1, 4, 16)[MODES[mode]]
    fn = _run_parallel if work >= PARALLEL_MIN and n * g.shape[1] > 1 else _run_serial
    fn(d, g, out, MODES[mode], PADDINGS[padding], bool(align))
    return out


@njit(nogil=True, cache=True, error_model="numpy")
def repeat_planes(x, out, kh, kw):
    """out[p, y * kh + i, x * kw + j] = x[p, y, x] for i < kh, j < kw: nearest-neighbour upsampling by
    integer factors of the last two axes (x [P, H, W], out [P, H*kh, W*kw], both C-contiguous).  Each
    input row is widened once into the first of its kh output rows, then copied to the others; flat
    unsigned indices (signed ones add wraparound checks that keep the copies scalar)."""
    planes, h, w = x.shape
    ow = w * kw
    xf, of = x.reshape(-1), out.reshape(-1)
    for r in range(planes * h):
        src = np.uintp(r * w)
        first = np.uintp(r * kh * ow)
        if kw == 2:  # the common 2x: two stores an element, no inner loop of two
            for c in range(w):
                v = xf[src + np.uintp(c)]
                d = first + np.uintp(2 * c)
                of[d] = v
                of[d + np.uintp(1)] = v
        else:
            for c in range(w):
                v = xf[src + np.uintp(c)]
                d = first + np.uintp(c * kw)
                for j in range(kw):
                    of[d + np.uintp(j)] = v
        for i in range(1, kh):
            row = first + np.uintp(i * ow)
            for c in range(ow):
                of[row + np.uintp(c)] = of[first + np.uintp(c)]
