"""The greedy suppression of DetectionOutput (SSD's Caffe-style NMS), as OpenVINO's CPU plugin runs it
(``ops/detection.py`` hands in the candidates already ordered: score above the threshold, highest first,
lower index first on ties, cut to ``top_k``).

A candidate is kept when its Jaccard overlap with every box kept so far is at most the threshold.  The
overlap is the plugin's float32 arithmetic: 0 when the boxes are apart or their intersection has no positive
width or height, else ``inter / (size_a + size_b - inter)`` with the sizes ``(xmax - xmin) * (ymax - ymin)``
computed once per decoded box.  Unlike NonMaxSuppression (kernels/nms.py), a pair that does not intersect
still compares 0 with the threshold, so a negative nms_threshold suppresses every later box.
"""

from __future__ import annotations

from .jit import njit


@njit(nogil=True, cache=True, error_model="numpy")
def jaccard(boxes, sizes, i, j):
    """The plugin's overlap of boxes i and j (rows xmin, ymin, xmax, ymax)."""
    zero = boxes.dtype.type(0)
    x0a, y0a, x1a, y1a = boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3]
    x0b, y0b, x1b, y1b = boxes[j, 0], boxes[j, 1], boxes[j, 2], boxes[j, 3]
    if x0b > x1a or x1b < x0a or y0b > y1a or y1b < y0a:
        return zero
    iw = min(x1a, x1b) - max(x0a, x0b)
    ih = min(y1a, y1b) - max(y0a, y0b)
    if iw <= zero or ih <= zero:
        return zero
    inter = iw * ih
    return inter / (sizes[i] + sizes[j] - inter)


@njit(nogil=True, cache=True, error_model="numpy")
def caffe_nms(boxes, sizes, order, thr, kept):
    """boxes [M, 4], sizes [M]; order: candidate rows in selection order.  Writes the kept rows into
    kept[:count] (in order) and returns count."""
    count = 0
    for t in range(order.shape[0]):
        k = order[t]
        keep = True
        for j in range(count):
            if jaccard(boxes, sizes, k, kept[j]) > thr:
                keep = False
                break
        if keep:
            kept[count] = k
            count += 1
    return count


@njit(nogil=True, cache=True, error_model="numpy")
def mxnet_nms(boxes, sizes, order, classes, priors_per_class, thr, kept, counts):
    """MXNet style (decrease_label_id): one candidate list for all classes, suppressed within its own class.
    order: candidate priors in selection order, classes: each one's class; boxes [C or 1, P, 4] rows of the
    class's (or the shared) decoded boxes flattened to [C*P or P, 4] with `priors_per_class` P (0 when shared).
    kept [C, P] receives each class's kept priors, counts [C] their number."""
    for t in range(order.shape[0]):
        p = order[t]
        c = classes[t]
        base = c * priors_per_class
        keep = True
        for j in range(counts[c]):
            if jaccard(boxes, sizes, base + p, base + kept[c, j]) > thr:
                keep = False
                break
        if keep:
            kept[c, counts[c]] = p
            counts[c] += 1
    return counts
