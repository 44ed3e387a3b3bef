"""ROIAlign kernel: for each region, the bilinear sample points of every bin are computed once and
reused for every channel (OpenVINO's reference order of operations); regions run in parallel."""

from __future__ import annotations

import math

import numpy as np

from .jit import njit, prange


@njit(nogil=True, parallel=True, cache=True, error_model="numpy")
def roi_align(x, rois, batch, out, ph, pw, sampling_ratio, scale, offset_src, offset_dst, aligned, is_max):
    """x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batch [R] (checked in range), out [R, C, ph, pw];
    all floats in one compute type."""
    n_roi, c_count, h, w = rois.shape[0], x.shape[1], x.shape[2], x.shape[3]
    zero = x.dtype.type(0)
    for r in prange(n_roi):
        x1 = (rois[r, 0] + offset_src) * scale + offset_dst
        y1 = (rois[r, 1] + offset_src) * scale + offset_dst
        x2 = (rois[r, 2] + offset_src) * scale + offset_dst
        y2 = (rois[r, 3] + offset_src) * scale + offset_dst
        rw = x2 - x1
        rh = y2 - y1
        if not aligned:
            rw = max(rw, 1.0)
            rh = max(rh, 1.0)
        bw = rw / pw
        bh = rh / ph
        sx = sampling_ratio if sampling_ratio > 0 else int(math.ceil(bw))
        sy = sampling_ratio if sampling_ratio > 0 else int(math.ceil(bh))
        ns = sx * sy
        pts = np.zeros((ph * pw * ns, 4, 2), np.int64)
        wts = np.zeros((ph * pw * ns, 4), x.dtype)
        k = 0
        for yb in range(ph):
            for xb in range(pw):
                for ys in range(sy):
                    py = y1 + yb * bh + bh / sy * (ys + 0.5)
                    for xs in range(sx):
                        px = x1 + xb * bw + bw / sx * (xs + 0.5)
                        if px < -1.0 or px > w or py < -1.0 or py > h:
                            k += 1  # outside: four taps at (0, 0) with weight 0
                            continue
                        px = max(px, 0.0)
                        py = max(py, 0.0)
                        yl = int(py)
                        xl = int(px)
                        if yl >= h - 1:
                            yl = yh = h - 1
                            py = float(yl)
                        else:
                            yh = yl + 1
                        if xl >= w - 1:
                            xl = xh = w - 1
                            px = float(xl)
                        else:
                            xh = xl + 1
                        ly = py - yl
                        lx = px - xl
                        hy = 1.0 - ly
                        hx = 1.0 - lx
                        pts[k, 0, 0], pts[k, 0, 1] = yl, xl
                        pts[k, 1, 0], pts[k, 1, 1] = yl, xh
                        pts[k, 2, 0], pts[k, 2, 1] = yh, xl
                        pts[k, 3, 0], pts[k, 3, 1] = yh, xh
                        wts[k, 0] = hy * hx
                        wts[k, 1] = hy * lx
                        wts[k, 2] = ly * hx
                        wts[k, 3] = ly * lx
                        k += 1
        b = batch[r]
        for c in range(c_count):
            plane = x[b, c]
            k = 0
            for yb in range(ph):
                for xb in range(pw):
                    acc = zero
                    for _ in range(ns):
                        v = (wts[k, 0] * plane[pts[k, 0, 0], pts[k, 0, 1]]
                             + wts[k, 1] * plane[pts[k, 1, 0], pts[k, 1, 1]]
                             + wts[k, 2] * plane[pts[k, 2, 0], pts[k, 2, 1]]
                             + wts[k, 3] * plane[pts[k, 3, 0], pts[k, 3, 1]])
                        if is_max:
                            acc = v if v > acc else acc  # starts at 0, as OpenVINO's reference does
                        else:
                            acc += v / ns
                        k += 1
                    out[r, c, yb, xb] = acc
