"""Hard non-maximum suppression for one (batch, class): the greedy loop of OpenVINO's reference in
compiled code.  The op (``ops/selection.py``) hands in the candidates already ordered (score above the
threshold, highest first, lower box index first on ties) and keeps soft NMS (sigma > 0, whose scores
change and go back into a heap) in Python.

With hard NMS a candidate's score never changes: it is kept when its IoU with every box kept so far is
at most the threshold, so the reference's heap reduces to that ordered scan.  IoU is float32 arithmetic
in the reference's order (areas, clipped intersection, ``inter / (area_a + area_b - inter)``; a box of
zero or negative area overlaps nothing), no fastmath: the same bits as the Python version.
"""

from __future__ import annotations

import numpy as np

from .jit import njit


@njit(nogil=True, cache=True, error_model="numpy")
def hard_nms(boxes, order, max_keep, iou_thr, kept):
    """boxes [N, 4] float32 corners (y1, x1, y2, x2, ordered); order: the candidates' box indices in
    selection order; writes the kept ones into kept[:count] and returns count (at most max_keep)."""
    zero = np.float32(0)
    count = 0
    for t in range(order.shape[0]):
        if count >= max_keep:
            break
        k = order[t]
        a0, a1, a2, a3 = boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3]
        area_a = (a2 - a0) * (a3 - a1)
        keep = True
        for j in range(count - 1, -1, -1):  # the reference's order: the latest kept box first
            s = kept[j]
            b0, b1, b2, b3 = boxes[s, 0], boxes[s, 1], boxes[s, 2], boxes[s, 3]
            area_b = (b2 - b0) * (b3 - b1)
            if area_a <= zero or area_b <= zero:
                continue  # IoU 0
            ih = max(min(a2, b2) - max(a0, b0), zero)
            iw = max(min(a3, b3) - max(a1, b1), zero)
            inter = ih * iw
            iou = inter / (area_a + area_b - inter)
            if iou > iou_thr:
                keep = False
                break
        if keep:
            kept[count] = k
            count += 1
    return count


@njit(nogil=True, cache=True, error_model="numpy")
def _ordered_min(a, b):
    """np.minimum on two float32 scalars: NaN when either is."""
    if a != a or b != b:
        return np.float32(np.nan)
    return a if a <= b else b


@njit(nogil=True, cache=True, error_model="numpy")
def _fill_corners(boxes, center, corners):
    """corners[k] = box k as (y1, x1, y2, x2), y1 <= y2 and x1 <= x2; center boxes are (x_c, y_c, w, h)."""
    two = np.float32(2)
    for k in range(boxes.shape[0]):
        if center:
            half_w, half_h = boxes[k, 2] / two, boxes[k, 3] / two
            corners[k, 0] = boxes[k, 1] - half_h
            corners[k, 1] = boxes[k, 0] - half_w
            corners[k, 2] = boxes[k, 1] + half_h
            corners[k, 3] = boxes[k, 0] + half_w
        else:
            y1, x1, y2, x2 = boxes[k, 0], boxes[k, 1], boxes[k, 2], boxes[k, 3]
            corners[k, 0] = _ordered_min(y1, y2)
            corners[k, 1] = _ordered_min(x1, x2)
            corners[k, 2] = -_ordered_min(-y1, -y2)
            corners[k, 3] = -_ordered_min(-x1, -x2)


@njit(nogil=True, cache=True, error_model="numpy")
def hard_nms_all(boxes, center, scores, max_per_class, iou_thr, score_thr, sort_desc):
    """The whole hard NMS: boxes [B, N, 4] and scores [B, C, N] float32; returns the selected
    (batch, class, box) rows [M, 3] int64 and (batch, class, score) rows [M, 3] float32, batch by batch,
    class by class in selection order, or -- sort_desc -- all by score, highest first, stable."""
    n_batch, n_class, n_box = scores.shape
    cap = max(min(n_box, max_per_class), 0)
    idx = np.empty((n_batch * n_class * cap, 3), np.int64)
    val = np.empty((n_batch * n_class * cap, 3), np.float32)
    corners = np.empty((n_box, 4), np.float32)
    kept = np.empty(cap, np.int64)
    cand = np.empty(n_box, np.int64)
    neg = np.empty(n_box, np.float32)
    m = 0
    for bi in range(n_batch if cap > 0 else 0):
        _fill_corners(boxes[bi], center, corners)
        for ci in range(n_class):
            s = scores[bi, ci]
            n_cand = 0
            for k in range(n_box):
                if s[k] > score_thr:
                    cand[n_cand] = k
                    neg[n_cand] = -s[k]
                    n_cand += 1
            # highest score first, lower box index first on ties (a stable sort of ascending indices)
            order = cand[:n_cand][np.argsort(neg[:n_cand], kind="mergesort")]
            count = hard_nms(corners, order, max_per_class, iou_thr, kept)
            for t in range(count):
                k = kept[t]
                idx[m, 0], idx[m, 1], idx[m, 2] = bi, ci, k
                val[m, 0], val[m, 1], val[m, 2] = bi, ci, s[k]
                m += 1
    idx, val = idx[:m], val[:m]
    if sort_desc and m > 1:
        perm = np.argsort(-val[:, 2], kind="mergesort")
        return idx[perm], val[perm]
    return idx, val
