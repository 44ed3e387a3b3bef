"""Max and average pooling over 1 to 3 spatial dims.

Data is viewed as ``[P, D, H, W]`` (P = N*C planes; missing spatial dims are 1) in float32 (float64
for f64 data); one parallel task per (plane, output depth row) when the output is large enough to
pay for the pool.  Windows start at ``o * stride - pad_begin`` and take ``kernel`` taps spaced by
``dilation``; taps outside the input are skipped (max) or, for an average that includes padding,
counted in the divisor only where they fall inside the padded extent.  Max pooling also returns,
per output, the flat index of the first maximum within its plane (``d * H * W + h * W + w``).
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

import numpy as np

from . import PARALLEL_MIN, microgemm, rowvec
from .jit import entry, get_num_threads, njit, prange
from .pool import OUTPUTS


@njit(nogil=True, cache=True, inline="always")
def _max_window(x, p, od, oh, ow, k, s, d, pb, dims):
    best = -np.inf
    arg = -1
    D, H, W = dims
    for a in range(k[0]):
        z = od * s[0] - pb[0] + a * d[0]
        if z < 0 or z >= D:
            continue
        for b in range(k[1]):
            y = oh * s[1] - pb[1] + b * d[1]
            if y < 0 or y >= H:
                continue
            for c in range(k[2]):
                t = ow * s[2] - pb[2] + c * d[2]
                if t < 0 or t >= W:
                    continue
                v = x[p, z, y, t]
                if arg < 0 or v > best:  # the first maximum wins ties
                    best = v
                    arg = (z * H + y) * W + t
    return best, arg


@njit(nogil=True, cache=True, error_model="numpy")
def _max_rows(x, out, idx, k, s, d, pb, low, lo, hi, border_only):
    D, H, W = x.shape[1], x.shape[2], x.shape[3]
    dims = (D, H, W)
    OD, OH, OW = out.shape[1], out.shape[2], out.shape[3]
    k0, k1, k2 = k[0], k[1], k[2]
    for r in range(lo, hi):
        p, od = r // OD, r % OD
        z0 = od * s[0] - pb[0]
        z_in = z0 >= 0 and z0 + (k0 - 1) * d[0] < D
        for oh in range(OH):
            y0 = oh * s[1] - pb[1]
            zy_in = z_in and y0 >= 0 and y0 + (k1 - 1) * d[1] < H
            for ow in range(OW):
                t0 = ow * s[2] - pb[2]
                if zy_in and t0 >= 0 and t0 + (k2 - 1) * d[2] < W:
                    if border_only:  # a window-specialized kernel did these (_max_inside_*)
                        continue
                    # the window lies inside the input: no bounds checks (most outputs; ~2x faster)
                    best = x[p, z0, y0, t0]
                    arg = (z0 * H + y0) * W + t0
                    for a in range(k0):
                        z = z0 + a * d[0]
                        for b in range(k1):
                            y = y0 + b * d[1]
                            for c in range(k2):
                                t = t0 + c * d[2]
                                v = x[p, z, y, t]
                                if v > best:  # the first maximum wins ties, as below
                                    best = v
                                    arg = (z * H + y) * W + t
                    out[p, od, oh, ow] = best
                    idx[p, od, oh, ow] = arg
                    continue
                v, a = _max_window(x, p, od, oh, ow, k, s, d, pb, dims)
                if a < 0:  # a window entirely in the padding: the type's lowest value, index 0
                    v, a = low, 0
                out[p, od, oh, ow] = v
                idx[p, od, oh, ow] = a


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def _max_parallel(x, out, idx, k, s, d, pb, low, tasks, border_only):
    n = out.shape[0] * out.shape[1]
    if tasks == 1:  # (see _max_inside_parallel)
        _max_rows(x, out, idx, k, s, d, pb, low, 0, n, border_only)
        return
    for t in prange(tasks):
        _max_rows(x, out, idx, k, s, d, pb, low, t * n // tasks, (t + 1) * n // tasks, border_only)


# Windows wholly inside a 2-D input, for the window shapes CNNs use, with the window size and
# strides known to the compiler: LLVM unrolls the taps (1.6-1.9x faster than _max_rows alone for ResNet's
# 3x3 / stride 2 MaxPool); the same task then does its planes' border windows with _max_rows.  Same
# rule: the first maximum wins ties, NaN only as the first tap.
@njit(nogil=True, cache=True, inline="always")
def _max_inside(x, out, idx, ph, pw, y_lo, y_hi, x_lo, x_hi, p_lo, p_hi, kh, kw, sh, sw, with_idx):
    # Indices are cast to unsigned (all are >= 0 here): with signed ones Numba checks each for a
    # negative wraparound, which kept LLVM from optimizing the taps (6x slower measured).  `with_idx`
    # is a literal at every call (inlined): without the running argmax, whose writes kept LLVM from
    # turning the taps into vector max operations, the loop is about 5x faster; `best = v if v > best
    # else best` is then x86's max instruction exactly, so ties and NaN come out the same either way.
    W = x.shape[3]
    for p in range(p_lo, p_hi):
        up = np.uintp(p)
        for oh in range(y_lo, y_hi):
            y0 = oh * sh - ph
            for ow in range(x_lo, x_hi):
                t0 = ow * sw - pw
                best = x[up, 0, np.uintp(y0), np.uintp(t0)]
                arg = y0 * W + t0
                for b in range(kh):
                    for c in range(kw):
                        v = x[up, 0, np.uintp(y0 + b), np.uintp(t0 + c)]
                        if with_idx:
                            if v > best:
                                best = v
                                arg = (y0 + b) * W + t0 + c
                        else:
                            best = v if v > best else best
                out[up, 0, np.uintp(oh), np.uintp(ow)] = best
                if with_idx:
                    idx[up, 0, np.uintp(oh), np.uintp(ow)] = arg


@njit(nogil=True, cache=True, error_model="numpy")
def _max_inside_rows(x, out, ph, pw, y_lo, y_hi, x_lo, x_hi, p_lo, p_hi, kh, kw, sh):  # pragma: no cover
    """_max_inside's values for float32 windows of column stride 2 by rowvec's vector rows (3x3 / 2 windows:
    max3x3s2_rows4, 16 outputs of four rows a call from each input row read once; else max_rows, each tap one
    masked load of the input row with its even lanes picked): the same rule, so the same values and NaN.
    Also the output rows above y_lo and from y_hi on (windows cut by the top or bottom padding) in the inside
    columns x_lo..x_hi-1: their taps are the rows inside the input, in the same order (the first tap inside
    first), so again _max_values_clipped's values.  And the columns before x_lo and from x_hi on (windows cut by
    the side padding), one lane a call with the window's columns inside the input as its taps, again in that
    order.  _max_values_border then does only the windows wholly in the padding (all_but_padding)."""
    h, w = x.shape[2], x.shape[3]
    oh_count, ow_count = out.shape[2], out.shape[3]
    offs = np.empty(kh * kw, np.int64)
    for b in range(kh):
        for c in range(kw):
            offs[b * kw + c] = b * w + c  # (the first r * kw of them: a window's first r rows)
    side = np.empty(kh * kw, np.int64)  # a side column's taps: its window's columns inside the input
    vw, four = rowvec.VW, rowvec.TAP_ROWS
    for p in range(p_lo, p_hi):
        plane = x.ctypes.data + 4 * p * h * w
        dst_plane = out.ctypes.data + 4 * p * oh_count * ow_count
        for oh in range(oh_count):
            if y_lo <= oh < y_hi:
                continue
            y0 = oh * sh - ph
            ya = y0 if y0 > 0 else 0
            yb = y0 + kh if y0 + kh < h else h
            if yb <= ya:
                continue
            src = plane + 4 * (ya * w - pw)
            dst = dst_plane + 4 * oh * ow_count
            for j0 in range(x_lo, x_hi, vw):
                rowvec.max_rows_2x1(src + 8 * j0, w, offs.ctypes.data, 0, (yb - ya) * kw, dst + 4 * j0, ow_count,
                                    min(vw, x_hi - j0))
        # ResNet's pool (padding 1): the first column's windows start in the left padding; its inside rows are
        # folded into the first vector block (rowvec.max3x3s2_rows4_left), which then holds VW columns, not VW - 1
        left = pw == 1 and x_lo == 1 and w >= 2 and x_hi > x_lo
        oh = y_lo
        while oh < y_hi:
            block = y_hi - oh >= four
            if not block and y_hi - y_lo >= four:  # the last rows as a block that overlaps the one before: the
                oh = y_hi - four                     # same values written twice, cheaper than rows one by one
                block = True
            src = plane + 4 * ((oh * sh - ph) * w - pw)
            dst = dst_plane + 4 * oh * ow_count
            first = x_lo
            if block and left:
                cols = min(vw, x_hi)
                if cols == vw:  # a constant count: the loads' masks fold away
                    rowvec.max3x3s2_rows4_left(src, w, dst, ow_count, rowvec.VW)
                else:
                    rowvec.max3x3s2_rows4_left(src, w, dst, ow_count, cols)
                first = cols
            for j0 in range(first, x_hi, vw):
                cols = min(vw, x_hi - j0)
                if block and cols == vw:
                    rowvec.max3x3s2_rows4(src + 8 * j0, w, dst + 4 * j0, ow_count, rowvec.VW)
                elif block:
                    rowvec.max3x3s2_rows4(src + 8 * j0, w, dst + 4 * j0, ow_count, cols)
                else:
                    rowvec.max_rows_2x1(src + 8 * j0, sh * w, offs.ctypes.data, 0, kh * kw, dst + 4 * j0, ow_count,
                                        cols)
            oh += four if block else 1
        for ow in range(ow_count):  # the side columns
            if x_lo <= ow < x_hi:
                continue
            t0 = ow * 2 - pw
            ta = t0 if t0 > 0 else 0
            tb = t0 + kw if t0 + kw < w else w
            if tb <= ta:
                continue
            cc = tb - ta
            for b in range(kh):
                for c in range(cc):
                    side[b * cc + c] = b * w + c
            oh = 0
            while oh < oh_count:
                y0 = oh * sh - ph
                if ow == 0 and left and y_lo <= oh < y_hi and y_hi - y_lo >= four:  # done in the first block
                    oh += 1
                    continue
                if y_lo <= oh and oh + four <= y_hi:  # four whole windows' rows
                    rowvec.max_rows_2x4(plane + 4 * (y0 * w + ta), sh * w, side.ctypes.data, 0, kh * cc,
                                        dst_plane + 4 * (oh * ow_count + ow), ow_count, 1)
                    oh += four
                    continue
                ya = y0 if y0 > 0 else 0
                yb = y0 + kh if y0 + kh < h else h
                if yb > ya:
                    rowvec.max_rows_2x1(plane + 4 * (ya * w + ta), w, side.ctypes.data, 0, (yb - ya) * cc,
                                        dst_plane + 4 * (oh * ow_count + ow), ow_count, 1)
                oh += 1


@njit(nogil=True, cache=True, inline="always")
def _inside_windows(x, out, idx, pb, y_lo, y_hi, x_lo, x_hi, p0, p1, window, with_idx):
    """The inside windows of planes p0..p1-1 for window shape number `window` in _MAX_INSIDE: each
    branch inlines _max_inside with its constants, so each is compiled for its shape (values only of
    float32 data in 3x3 / 2 windows: window number _VECTOR_3X3, _max_inside_rows)."""
    if window == _VECTOR_3X3:  # (the plan's choice: values only, float32, VECTOR_ROWS)
        _max_inside_rows(x, out, pb[1], pb[2], y_lo, y_hi, x_lo, x_hi, p0, p1, 3, 3, 2)
    elif window == 0:
        _max_inside(x, out, idx, pb[1], pb[2], y_lo, y_hi, x_lo, x_hi, p0, p1, 3, 3, 2, 2, with_idx)
    elif window == 1:
        _max_inside(x, out, idx, pb[1], pb[2], y_lo, y_hi, x_lo, x_hi, p0, p1, 3, 3, 1, 1, with_idx)
    else:
        _max_inside(x, out, idx, pb[1], pb[2], y_lo, y_hi, x_lo, x_hi, p0, p1, 2, 2, 2, 2, with_idx)


@njit(nogil=True, cache=True, inline="always")
def _inside_task(x, out, idx, k, s, d, pb, low, y_lo, y_hi, x_lo, x_hi, p0, p1, window, with_idx):
    """Planes p0..p1-1: the inside windows (_inside_windows), then the border ones -- with the indices into
    idx, or (with_idx False, idx unused) values only.  Each branch passes a literal, so the inlined kernels
    are compiled with and without the argmax."""
    if with_idx:
        _inside_windows(x, out, idx, pb, y_lo, y_hi, x_lo, x_hi, p0, p1, window, True)
        _max_border(x, out, idx, k, s, d, pb, low, p0, p1, y_lo, y_hi, x_lo, x_hi)
    else:
        _inside_windows(x, out, idx, pb, y_lo, y_hi, x_lo, x_hi, p0, p1, window, False)
        if window == _VECTOR_3X3:  # (all but the windows wholly in the padding done: _max_inside_rows)
            _max_values_border(x, out, k, s, pb, low, p0, p1, y_lo, y_hi, x_lo, x_hi, True)
        else:
            _max_values_border(x, out, k, s, pb, low, p0, p1, y_lo, y_hi, x_lo, x_hi, False)


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def _max_inside_parallel(x, out, idx, k, s, d, pb, low, y_lo, y_hi, x_lo, x_hi, tasks, window, with_idx):
    """_inside_task per block of planes, `tasks` blocks over the threads.  One task runs on the calling thread
    without entering the parallel loop: a parallel launch of one task cost ~3-5 us more than the whole pool of
    AlexNet's small maps ([1, 32, 9, 9] 3x3 / 2: medians 8.3 -> 2.8 us; [1, 8, 39, 39] 10.5 -> 4.9; Xeon)."""
    n = x.shape[0]
    if tasks == 1:
        _inside_task(x, out, idx, k, s, d, pb, low, y_lo, y_hi, x_lo, x_hi, 0, n, window, with_idx)
        return
    for t in prange(tasks):
        _inside_task(x, out, idx, k, s, d, pb, low, y_lo, y_hi, x_lo, x_hi, t * n // tasks, (t + 1) * n // tasks,
                     window, with_idx)


@njit(nogil=True, cache=True, inline="always")
def _max_one(x, out, idx, p, oh, ow, k, s, d, pb, low, dims):
    v, a = _max_window(x, p, 0, oh, ow, k, s, d, pb, dims)
    if a < 0:  # a window entirely in the padding: the type's lowest value, index 0
        v, a = low, 0
    out[p, 0, oh, ow] = v
    idx[p, 0, oh, ow] = a


@njit(nogil=True, cache=True, error_model="numpy")
def _max_border(x, out, idx, k, s, d, pb, low, p0, p1, y_lo, y_hi, x_lo, x_hi):
    """Planes p0..p1-1 of a 2-D max pool: the outputs outside [y_lo, y_hi) x [x_lo, x_hi) (windows that
    reach into the padding), bounds-checked; only those are visited."""
    dims = (x.shape[1], x.shape[2], x.shape[3])
    OH, OW = out.shape[2], out.shape[3]
    for p in range(p0, p1):
        for oh in range(OH):
            if y_lo <= oh < y_hi:
                for ow in range(min(x_lo, OW)):
                    _max_one(x, out, idx, p, oh, ow, k, s, d, pb, low, dims)
                for ow in range(x_hi, OW):
                    _max_one(x, out, idx, p, oh, ow, k, s, d, pb, low, dims)
            else:
                for ow in range(OW):
                    _max_one(x, out, idx, p, oh, ow, k, s, d, pb, low, dims)


@njit(nogil=True, cache=True, inline="always")
def _max_values_clipped(x, out, up, oh, ow, ya, yb, kw, sw, pw, low):
    """One window, its taps clipped to the input, visited in _max_window's order (the first tap inside
    starts).  Indices as unsigned (every one is inside here): Numba then adds no negative-index check to
    each load (the border of ResNet's [1, 64, 32, 32] 3x3 / 2 pool: 13.1 -> 10.0 us)."""
    t0 = ow * sw - pw
    ta = t0 if t0 > 0 else 0
    tb = t0 + kw
    tb = tb if tb < x.shape[3] else x.shape[3]
    if ya >= yb or ta >= tb:  # a window entirely in the padding
        out[up, 0, np.uintp(oh), np.uintp(ow)] = low
        return
    best = x[up, 0, np.uintp(ya), np.uintp(ta)]
    for y in range(ya, yb):
        uy = np.uintp(y)
        for t in range(ta, tb):
            v = x[up, 0, uy, np.uintp(t)]
            best = v if v > best else best
    out[up, 0, np.uintp(oh), np.uintp(ow)] = best


@njit(nogil=True, cache=True, error_model="numpy")
def _max_values_border(x, out, k, s, pb, low, p0, p1, y_lo, y_hi, x_lo, x_hi, all_but_padding):
    """Planes p0..p1-1 of a 2-D pool without dilation: the windows that reach into the padding (with
    `all_but_padding`, only those wholly in it: _max_inside_rows wrote the others)."""
    H, W = x.shape[2], x.shape[3]
    OH, OW = out.shape[2], out.shape[3]
    kh, kw, sh, sw, ph, pw = k[1], k[2], s[1], s[2], pb[1], pb[2]
    left = min(x_lo, OW)
    if all_but_padding:
        # the columns whose windows lie wholly in the left / right padding: ow < pad_left, ow >= pad_right
        pad_left = 0
        while pad_left < OW and pad_left * sw - pw + kw <= 0:
            pad_left += 1
        pad_right = OW
        while pad_right > pad_left and (pad_right - 1) * sw - pw >= W:
            pad_right -= 1
        padded_rows = 0
        for oh in range(OH):
            y0 = oh * sh - ph
            padded_rows += 1 if y0 + kh <= 0 or y0 >= H else 0
        if pad_left == 0 and pad_right == OW and padded_rows == 0:  # no window wholly in the padding (ResNet's)
            return
        for p in range(p0, p1):
            up = np.uintp(p)
            for oh in range(OH):
                y0 = oh * sh - ph
                if y0 + kh <= 0 or y0 >= H:  # the whole row of windows
                    for ow in range(OW):
                        out[up, 0, np.uintp(oh), np.uintp(ow)] = low
                    continue
                for ow in range(pad_left):
                    out[up, 0, np.uintp(oh), np.uintp(ow)] = low
                for ow in range(pad_right, OW):
                    out[up, 0, np.uintp(oh), np.uintp(ow)] = low
        return
    for p in range(p0, p1):
        up = np.uintp(p)
        for oh in range(OH):
            y0 = oh * sh - ph
            ya = y0 if y0 > 0 else 0
            yb = y0 + kh
            yb = yb if yb < H else H
            if y_lo <= oh < y_hi:
                for ow in range(left):
                    _max_values_clipped(x, out, up, oh, ow, ya, yb, kw, sw, pw, low)
                for ow in range(x_hi, OW):
                    _max_values_clipped(x, out, up, oh, ow, ya, yb, kw, sw, pw, low)
            else:
                for ow in range(OW):
                    _max_values_clipped(x, out, up, oh, ow, ya, yb, kw, sw, pw, low)


# window shapes (kh, kw, sh, sw) with a kernel of their own, the ones CNNs use, in the order of the
# branches of _inside_windows
_MAX_INSIDE = {(3, 3, 2, 2): 0, (3, 3, 1, 1): 1, (2, 2, 2, 2): 2}
# Values-only float32 3x3 / 2 windows (ResNet's stem pool) take the vector-row kernel where irnorm's vector
# kernels run (AVX2 + FMA, as kernels/microgemm.py's): window number _VECTOR_3X3.  [1, 64, 32, 32] 22.5 -> 16.2
# us with AVX-512 (ResNet-18's whole pool step 38 -> 29 us compiling for Haswell); 2x2 / 2 windows measured
# slower that way ([1, 8, 300, 300] 26 -> 39) and keep the loop.  With max3x3s2_rows4 (each input row read
# once, its row maximum shared), the padded first column folded into the first block and no pass over the
# planes for windows wholly in the padding when there are none: [1, 64, 32, 32] on one thread 17.5 -> 10.6 us,
# [1, 64, 64, 64] 58 -> 29 (Sapphire Rapids).
VECTOR_ROWS = microgemm.ENABLED
_VECTOR_3X3 = len(_MAX_INSIDE)


def _inside_range(o: int, k: int, s: int, pad: int, n: int) -> tuple[int, int]:
    """Outputs [lo, hi) along one axis whose window (no dilation) lies wholly inside [0, n)."""
    lo = -(-pad // s)
    hi = max(lo, min(o, (n - k + pad) // s + 1))
    return lo, hi


@njit(nogil=True, cache=True, error_model="numpy")
def _avg_rows(x, out, k, s, d, pb, pad_end_limit, exclude_pad, lo, hi):
    D, H, W = x.shape[1], x.shape[2], x.shape[3]
    OD, OH, OW = out.shape[1], out.shape[2], out.shape[3]
    for r in range(lo, hi):
        p, od = r // OD, r % OD
        z0 = od * s[0] - pb[0]
        for oh in range(OH):
            y0 = oh * s[1] - pb[1]
            for ow in range(OW):
                t0 = ow * s[2] - pb[2]
                acc = 0.0
                cnt = 0
                padded = 0  # taps inside the padded extent [-pad_begin, in + pad_end)
                for a in range(k[0]):
                    z = z0 + a * d[0]
                    if z >= pad_end_limit[0]:
                        break
                    for b in range(k[1]):
                        y = y0 + b * d[1]
                        if y >= pad_end_limit[1]:
                            break
                        for c in range(k[2]):
                            t = t0 + c * d[2]
                            if t >= pad_end_limit[2]:
                                break
                            padded += 1
                            if 0 <= z < D and 0 <= y < H and 0 <= t < W:
                                acc += x[p, z, y, t]
                                cnt += 1
                n = cnt if exclude_pad else padded
                out[p, od, oh, ow] = acc / n if n > 0 else 0.0


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def _avg_parallel(x, out, k, s, d, pb, pad_end_limit, exclude_pad, tasks):
    n = out.shape[0] * out.shape[1]
    if tasks == 1:  # (see _max_inside_parallel)
        _avg_rows(x, out, k, s, d, pb, pad_end_limit, exclude_pad, 0, n)
        return
    for t in prange(tasks):
        _avg_rows(x, out, k, s, d, pb, pad_end_limit, exclude_pad, t * n // tasks, (t + 1) * n // tasks)


def _as_planes(x: np.ndarray, cdt: np.dtype) -> np.ndarray:
    """[N, C, *spatial] -> a contiguous [N*C, D, H, W] view in the compute type."""
    sp = x.shape[2:]
    full = (1,) * (3 - len(sp)) + tuple(sp)
    return np.ascontiguousarray(x, dtype=cdt).reshape((x.shape[0] * x.shape[1],) + full)


def _pad3(v: list[int], fill: int) -> np.ndarray:
    return np.array([fill] * (3 - len(v)) + list(v), np.int64)


def _tasks(rows: int, work: int) -> int:
    """Blocks of rows (planes) for the parallel loops: four a thread, as kernels.activation cuts its rows.  Each
    task sets itself up (its offsets, its border windows): up to 64 of them on two threads took 11.2 us where
    eight took 9.3 for ResNet-18's [1, 64, 32, 32] 3 x 3 / 2 pool, 23.2 -> 21.4 at [2, 64, 40, 40] (Xeon, 2 threads)."""
    return 1 if work < PARALLEL_MIN else max(1, min(rows, 64, 4 * get_num_threads()))


def max_pool(x: np.ndarray, out_spatial: list[int], kernel: list[int], strides: list[int], dilations: list[int],
             pads_begin: list[int], cdt: np.dtype, low: float, indices: bool = True
             ) -> tuple[np.ndarray, np.ndarray | None]:
    """(values in cdt, flat int64 indices within each plane), both [N, C, *out_spatial]; `low` for a
    window with no tap inside the input.  With indices=False the second is None and, for the
    windows CNNs use, a faster values-only kernel runs."""
    return max_pool_plan(x.shape, out_spatial, kernel, strides, dilations, pads_begin, cdt, low, indices)(x)


def max_pool_plan(shape: tuple[int, ...], out_spatial: list[int], kernel: list[int], strides: list[int],
                  dilations: list[int], pads_begin: list[int], cdt: np.dtype, low: float, indices: bool = True
                  ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray | None]]:
    """max_pool for inputs of this shape, everything but the kernel call worked out now (a layer keeps
    one per input shape: for ResNet-18's [1, 64, 32, 32] the arithmetic cost a third of the call)."""
    n, c = shape[:2]
    sp = shape[2:]
    planes_shape = (n * c,) + (1,) * (3 - len(sp)) + tuple(sp)
    oshape = (n * c,) + tuple(int(v) for v in _pad3(out_spatial, 1))
    final = (n, c) + tuple(out_spatial)
    k3, s3, d3, p3 = _pad3(kernel, 1), _pad3(strides, 1), _pad3(dilations, 1), _pad3(pads_begin, 0)
    window = (int(k3[1]), int(k3[2]), int(s3[1]), int(s3[2]))
    planar = (planes_shape[1] == 1 and k3[0] == 1 and s3[0] == 1 and p3[0] == 0 and (d3 == 1).all()
              and window in _MAX_INSIDE)
    with_idx = indices or not planar
    size = prod(oshape)
    tasks = _tasks(oshape[0] * oshape[1], size * prod(kernel))
    lowest = cdt.type(low)
    if planar:
        y_lo, y_hi = _inside_range(oshape[2], window[0], window[2], int(p3[1]), planes_shape[2])
        x_lo, x_hi = _inside_range(oshape[3], window[1], window[3], int(p3[2]), planes_shape[3])
        tasks = max(1, min(tasks, planes_shape[0]))
        code = _MAX_INSIDE[window]
        if VECTOR_ROWS and not with_idx and cdt == np.float32 and window == (3, 3, 2, 2):
            code = _VECTOR_3X3

    # the kernel's entry point (jit.entry), bound on the first call: its arguments' types never change here (C-
    # contiguous arrays this function makes, the plan's constants), and Numba's dispatcher typed all 15 of them
    # on every call (~3 us of AlexNet's 7 us [1, 8, 39, 39] pool step)
    bound: list = []

    def run(x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        xs = np.ascontiguousarray(x, dtype=cdt).reshape(planes_shape)
        out = OUTPUTS.empty(oshape, cdt)  # recycled: a fresh large output faults on every page
        idx = np.empty(oshape, np.int64) if with_idx else None
        if size:
            if planar:
                args = (xs, out, out if idx is None else idx, k3, s3, d3, p3, lowest, y_lo, y_hi, x_lo, x_hi, tasks,
                        code, idx is not None)
                if not bound:
                    bound.append(entry(_max_inside_parallel, *args))
            else:
                args = (xs, out, idx, k3, s3, d3, p3, lowest, tasks, False)
                if not bound:
                    bound.append(entry(_max_parallel, *args))
            bound[0](*args)
        return out.reshape(final), (idx.reshape(final) if indices else None)

    return run


def avg_pool(x: np.ndarray, out_spatial: list[int], kernel: list[int], strides: list[int], pads_begin: list[int],
             pads_end: list[int], exclude_pad: bool, cdt: np.dtype, dilations: list[int] | None = None) -> np.ndarray:
    n, c = x.shape[:2]
    xs = _as_planes(x, cdt)
    oshape = (n * c,) + tuple(int(v) for v in _pad3(out_spatial, 1))
    out = np.empty(oshape, cdt)
    if out.size:
        limit = _pad3([d + e for d, e in zip(x.shape[2:], pads_end, strict=True)], 1)
        rows = oshape[0] * oshape[1]
        _avg_parallel(xs, out, _pad3(kernel, 1), _pad3(strides, 1), _pad3(dilations or [1] * len(kernel), 1),
                      _pad3(pads_begin, 0), limit, exclude_pad, _tasks(rows, out.size * int(np.prod(kernel))))
    return out.reshape((n, c) + tuple(out_spatial))


# ---- adaptive pooling: window i of n_out over n_in is [floor(i n_in / n_out), ceil((i + 1) n_in / n_out)) ----


def adaptive_bins(n_in: int, n_out: int) -> np.ndarray:
    """[n_out, 2] int64 (start, end) of each adaptive window along one axis (exact integer arithmetic)."""
    i = np.arange(n_out, dtype=np.int64)
    return np.stack([i * n_in // n_out, -(-(i + 1) * n_in // n_out)], axis=1) if n_out else np.zeros((0, 2), np.int64)


@njit(nogil=True, cache=True, error_model="numpy")
def _adaptive_rows(x, out, idx, bd, bh, bw, average, lo, hi):
    H, W = x.shape[2], x.shape[3]
    OD, OH, OW = out.shape[1], out.shape[2], out.shape[3]
    for r in range(lo, hi):
        p, od = r // OD, r % OD
        z0, z1 = bd[od, 0], bd[od, 1]
        for oh in range(OH):
            y0, y1 = bh[oh, 0], bh[oh, 1]
            for ow in range(OW):
                t0, t1 = bw[ow, 0], bw[ow, 1]
                if average:
                    acc = 0.0
                    for z in range(z0, z1):
                        for y in range(y0, y1):
                            for t in range(t0, t1):
                                acc += x[p, z, y, t]
                    out[p, od, oh, ow] = acc / ((z1 - z0) * (y1 - y0) * (t1 - t0))
                else:
                    # the first tap starts the window, a later one replaces it only when strictly greater:
                    # the first maximum wins ties, a NaN counts only as the first tap (OpenVINO's CPU plugin)
                    best = x[p, z0, y0, t0]
                    arg = (z0 * H + y0) * W + t0
                    for z in range(z0, z1):
                        for y in range(y0, y1):
                            for t in range(t0, t1):
                                v = x[p, z, y, t]
                                if v > best:
                                    best = v
                                    arg = (z * H + y) * W + t
                    out[p, od, oh, ow] = best
                    idx[p, od, oh, ow] = arg


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def _adaptive_parallel(x, out, idx, bd, bh, bw, average, tasks):
    n = out.shape[0] * out.shape[1]
    if tasks == 1:  # (see _max_inside_parallel)
        _adaptive_rows(x, out, idx, bd, bh, bw, average, 0, n)
        return
    for t in prange(tasks):
        _adaptive_rows(x, out, idx, bd, bh, bw, average, t * n // tasks, (t + 1) * n // tasks)


def adaptive_pool_plan(shape: tuple[int, ...], out_spatial: list[int], cdt: np.dtype, average: bool
                       ) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray | None]]:
    """AdaptiveAvgPool / AdaptiveMaxPool for inputs of this shape: (values in cdt, and for max the flat
    int64 index of each maximum within its plane, ``d * H * W + h * W + w``), both [N, C, *out_spatial].
    Every window holds at least one tap: the caller refuses a spatial dim of 0 pooled to a size above 0."""
    n, c = shape[:2]
    sp = tuple(shape[2:])
    planes_shape = (n * c,) + (1,) * (3 - len(sp)) + sp
    out3 = (1,) * (3 - len(out_spatial)) + tuple(int(v) for v in out_spatial)
    oshape = (n * c,) + out3
    final = (n, c) + tuple(out_spatial)
    bins = [adaptive_bins(i, o) for i, o in zip(planes_shape[1:], out3, strict=True)]
    size = prod(oshape)
    # the average window holds about in / out taps per axis: the work is about the input's size
    tasks = _tasks(oshape[0] * oshape[1], max(size, prod(planes_shape)))

    bound: list = []  # the kernel's entry point, bound on the first call (as max_pool_plan's)

    def run(x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        xs = np.ascontiguousarray(x, dtype=cdt).reshape(planes_shape)
        out = np.empty(oshape, cdt)
        idx = np.empty(oshape if not average else (0, 0, 0, 0), np.int64)
        if size:
            args = (xs, out, idx, bins[0], bins[1], bins[2], average, tasks)
            if not bound:
                bound.append(entry(_adaptive_parallel, *args))
            bound[0](*args)
        return out.reshape(final), (None if average else idx.reshape(final))

    return run
