"""Planes laid out with padding around them: the zero-padded input of a direct convolution, the
output of a constant Pad of the last two dims."""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit(nogil=True, cache=True, inline="always")
def _run(buf, start, count, fill):  # pragma: no cover - compiled
    """buf[start:start + count] = fill, a run of up to four values as single stores: a loop storing a
    constant zero becomes a call of memset, which for a row's one or two padding values cost more than the
    values themselves ([64, 16, 16] padded by one: 7.1 -> 3.9 us, the padding runs merged below)."""
    if count <= 4:
        if count > 0:
            buf[np.uintp(start)] = fill
        if count > 1:
            buf[np.uintp(start + 1)] = fill
        if count > 2:
            buf[np.uintp(start + 2)] = fill
        if count > 3:
            buf[np.uintp(start + 3)] = fill
    else:
        for j in range(count):
            buf[np.uintp(start + j)] = fill


@njit(nogil=True, cache=True, error_model="numpy")
def fill_padded(x, planes, h, w, buf, hp, wp, ys, ye, xs, xe, y0, x0, value):
    """buf = the planes of x (flat [planes, h, w]) laid out as P planes of hp x wp: input rows ys..ye-1 and
    columns xs..xe-1 placed from row y0 and column x0, `value` everywhere else (and after the last plane).
    One pass of flat unsigned indexing: numpy's slice assignments cost 6-14 us on a small input, np.full
    plus one assignment 23 us on ResNetV2-BiT's [1, 64, 32, 32] -> [1, 64, 34, 34].  Between two copied
    rows the padding is one run (the first row's right side, the next one's left side)."""
    rows, cols = ye - ys, xe - xs
    fill = buf.dtype.type(value)
    if rows <= 0 or cols <= 0:
        for i in range(buf.shape[0]):
            buf[i] = fill
        return
    gap = wp - cols
    for p in range(planes):
        base = p * hp * wp
        _run(buf, base, y0 * wp + x0, fill)  # the rows above, the first copied row's left side
        for r in range(rows):
            row = base + (y0 + r) * wp + x0
            src = (p * h + ys + r) * w + xs
            for j in range(cols):
                buf[np.uintp(row + j)] = x[np.uintp(src + j)]
            if r + 1 < rows:
                _run(buf, row + cols, gap, fill)
        last = base + (y0 + rows - 1) * wp + x0 + cols
        _run(buf, last, base + hp * wp - last, fill)  # the last copied row's right side, the rows below
    for i in range(planes * hp * wp, buf.shape[0]):
        buf[i] = fill


@njit(nogil=True, cache=True, error_model="numpy")
def fill_phases(x, planes, h, w, buf, sh, sw, hq, wq, ph, pw):  # pragma: no cover - compiled
    """buf = the planes of x (flat [planes, h, w]), zero-padded by ph rows / pw columns before, split into
    their sh x sw phases: plane p's phase (ry, rx) is buf's plane (p * sh + ry) * sw + rx of hq x wq values,
    element (i, j) the padded input's (i * sh + ry, j * sw + rx), zero outside the input (and after the
    last plane).  A convolution of stride (sh, sw) is then one of stride 1 over these phase planes (its tap
    (ky, kx) reads phase (ky % sh, kx % sw) from (ky // sh, kx // sw) on)."""
    zero = buf.dtype.type(0)
    for p in range(planes):
        for ry in range(sh):
            for rx in range(sw):
                base = ((p * sh + ry) * sw + rx) * hq * wq
                # columns j whose input column j * sw + rx - pw lies in 0..w-1
                j0 = min(wq, max(0, (pw - rx + sw - 1) // sw))
                j1 = max(j0, min(wq, (w - 1 + pw - rx) // sw + 1))
                for i in range(hq):
                    row = base + i * wq
                    y = i * sh + ry - ph
                    if 0 <= y < h:
                        src = (p * h + y) * w + rx - pw
                        for j in range(j0):
                            buf[np.uintp(row + j)] = zero
                        for j in range(j0, j1):
                            buf[np.uintp(row + j)] = x[np.uintp(src + j * sw)]
                        for j in range(j1, wq):
                            buf[np.uintp(row + j)] = zero
                    else:
                        for j in range(wq):
                            buf[np.uintp(row + j)] = zero
    for i in range(planes * sh * sw * hq * wq, buf.shape[0]):
        buf[i] = zero
