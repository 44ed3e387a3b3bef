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
