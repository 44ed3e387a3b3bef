"""Ops whose output size depends on the input values: NonMaxSuppression-9 (opset9+) and
Unique-10 (opset10+).  Their outputs have dynamic dims; the kernels size them at run time.

NonMaxSuppression-9 (OpenVINO's reference, followed step by step):

* boxes [B, N, 4] (``box_encoding`` corner: y1, x1, y2, x2 in any corner order; center: x_c, y_c, w,
  h), scores [B, C, N]; optional scalar inputs max_output_boxes_per_class (default 0: nothing is
  selected), iou_threshold, score_threshold, soft_nms_sigma (each default 0).
* Per batch and class: boxes scoring above score_threshold, highest score first (ties: lower box
  index first); a candidate is dropped when its IoU with an already selected box exceeds
  iou_threshold (hard NMS), or -- soft NMS, sigma > 0 -- has its score scaled by
  exp(-0.5 IoU^2 / sigma) and is put back while it stays above score_threshold.  A box with zero
  area has IoU 0 with everything.  IoU and scores are computed in float32, as OpenVINO does.
* Outputs: selected_indices [M, 3] (batch, class, box) of ``output_type``, selected_scores [M, 3]
  (batch, class, score) as f32 whatever the inputs' type (as OpenVINO's shape rule gives it), valid_outputs
  [1] = M.  The rows come batch by batch,
  class by class, in selection order; ``sort_result_descending`` (default true) sorts them all by
  score, highest first (ties: lower batch, class, box index first).

Unique-10: the unique elements of the flattened data, or the unique slices along ``axis`` (an optional
constant scalar input); ``sorted`` (default true) orders them ascending, else in order of first
appearance.  Outputs: the unique values, the index of each one's first occurrence, for every input
element (or slice) the index of its unique value, and each one's count -- the last three as
``index_element_type`` / ``count_element_type`` (i32 or i64).
"""

from __future__ import annotations

import heapq

import numpy as np

from ..ir.attrs import AttrSchema, enum, optional, parse_bool
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES
from .base import (
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    fail,
    fmt_shape,
    int_list_length,
    merge_dim,
    normalize_axes,
    register,
    runtime_error,
    same_dim,
)

# ---- NonMaxSuppression ------------------------------------------------------------------------


def _corners(boxes: np.ndarray, center: bool) -> np.ndarray:
    """[..., 4] boxes as float32 (y1, x1, y2, x2) with y1 <= y2 and x1 <= x2."""
    b = boxes.astype(np.float32)
    if center:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        half_w, half_h = w / np.float32(2), h / np.float32(2)
        return np.stack([yc - half_h, xc - half_w, yc + half_h, xc + half_w], axis=-1)
    y1, x1, y2, x2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], axis=-1)


def _iou(a: np.ndarray, b: np.ndarray) -> np.float32:
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    if area_a <= 0 or area_b <= 0:
        return np.float32(0)
    ih = max(min(a[2], b[2]) - max(a[0], b[0]), np.float32(0))
    iw = max(min(a[3], b[3]) - max(a[1], b[1]), np.float32(0))
    inter = ih * iw
    return np.float32(inter / (area_a + area_b - inter))


def nms_select(boxes: np.ndarray, scores: np.ndarray, max_per_class: int, iou_thr: float, score_thr: float,
               sigma: float) -> list[tuple[int, int, int, np.float32]]:
    """(batch, class, box, score) of every selected box, batch by batch, class by class, in selection
    order.  boxes: float32 corners [B, N, 4]; scores [B, C, N]."""
    iou_thr, score_thr, sigma = np.float32(iou_thr), np.float32(score_thr), np.float32(sigma)
    soft = sigma > 0
    scale = np.float32(-0.5) / sigma if soft else np.float32(0)
    out: list[tuple[int, int, int, np.float32]] = []
    n_batch, n_class, _ = scores.shape
    for bi in range(n_batch):
        for ci in range(n_class):
            s = scores[bi, ci].astype(np.float32)
            # a max-heap on (score, then lower index first): entries (-score, index, suppress_begin)
            heap = [(-s[k], int(k), 0) for k in np.flatnonzero(s > score_thr)]
            heapq.heapify(heap)
            selected: list[tuple[int, np.float32]] = []
            while heap and len(selected) < max_per_class:
                neg, k, begin = heapq.heappop(heap)
                score = original = np.float32(-neg)
                hard = False
                for j in range(len(selected) - 1, begin - 1, -1):
                    iou = _iou(boxes[bi, k], boxes[bi, selected[j][0]])
                    weight = np.float32(np.exp(scale * iou * iou))
                    score = np.float32(score * (weight if (soft or iou <= iou_thr) else np.float32(0)))
                    if iou > iou_thr and not soft:
                        hard = True
                        break
                    if score <= score_thr:
                        break
                if hard:
                    continue
                if score == original:
                    selected.append((k, score))
                elif score > score_thr:
                    heapq.heappush(heap, (-score, k, len(selected)))
            out.extend((bi, ci, k, sc) for k, sc in selected)
    return out


def nms_hard(boxes: np.ndarray, scores: np.ndarray, center: bool, max_per_class: int, iou_thr: float,
             score_thr: float, sort_desc: bool) -> tuple[np.ndarray, np.ndarray]:
    """nms_select for sigma = 0 (hard NMS) as one Numba kernel (kernels/nms.py: corners, candidate order,
    the greedy scan, the final sort): the same selections in the same order, as (batch, class, box) rows
    [M, 3] int64 and (batch, class, score) rows [M, 3] float32.  A Python IoU per pair cost SSDLite's
    3K-box NMS half a second; Python around the scan cost the 64-box NMS head 25 of its 29 us."""
    from ..kernels.nms import hard_nms_all  # lazy: validate never imports numba

    return hard_nms_all(np.ascontiguousarray(boxes, np.float32), center, np.ascontiguousarray(scores, np.float32),
                        max(int(max_per_class), 0), np.float32(iou_thr), np.float32(score_thr), sort_desc)


def _scalar_input(ctx: NodeContext, i: int, what: str, kinds: tuple[str, ...]) -> None:
    if i >= len(ctx.inputs):
        return
    info = ctx.inputs[i]
    if info.dtype not in kinds:
        kind = "an integer" if kinds is INT_TYPES else "a floating-point"
        raise fail("IRN033", f"{what} (input {i}) must be {kind} tensor, got {info.dtype}")
    if info.shape is not None and (len(info.shape) > 1 or (len(info.shape) == 1 and info.shape[0] not in (1, -1))):
        raise fail("IRN032", f"{what} (input {i}) must be a scalar or hold one value, got {fmt_shape(info.shape)}")


@register
class NonMaxSuppression(Op):
    type = "NonMaxSuppression"
    version = 9
    opsets = (9, None)
    inputs = (2, 6)
    outputs = (1, 3)
    schema = AttrSchema([
        optional("box_encoding", enum("corner", "center"), "corner", doc="corner (y1, x1, y2, x2) or center"),
        optional("sort_result_descending", parse_bool, True, doc="sort all selected boxes by score"),
        optional("output_type", enum("i64", "i32"), "i64", doc="element type of the indices and the count"),
    ])
    foldable = False
    doc = ("greedy (or soft, sigma > 0) non-maximum suppression per batch and class; outputs sized at run time; "
           "float32 IoU as OpenVINO.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        boxes, scores = ctx.inputs[0], ctx.inputs[1]
        for info, what in ((boxes, "boxes"), (scores, "scores")):
            if info.dtype not in FLOAT_TYPES:
                raise fail("IRN033", f"{what} must be a floating-point tensor, got {info.dtype}")
            if info.shape is not None and len(info.shape) != 3:
                raise fail("IRN032", f"{what} must have rank 3, got {fmt_shape(info.shape)}")
        if boxes.shape is not None:
            if not same_dim(boxes.shape[2], 4):
                raise fail("IRN032", f"boxes {fmt_shape(boxes.shape)} must have 4 values per box (dim 2)")
            if scores.shape is not None and not (same_dim(boxes.shape[0], scores.shape[0])
                                                 and same_dim(boxes.shape[1], scores.shape[2])):
                raise fail("IRN032", f"boxes {fmt_shape(boxes.shape)} and scores {fmt_shape(scores.shape)} disagree: "
                                     f"need boxes [B, N, 4] and scores [B, C, N]")
        _scalar_input(ctx, 2, "max_output_boxes_per_class", INT_TYPES)
        for i, what in ((3, "iou_threshold"), (4, "score_threshold"), (5, "soft_nms_sigma")):
            _scalar_input(ctx, i, what, FLOAT_TYPES)
        it = ctx.attrs["output_type"]
        return [TensorInfo((-1, 3), it), TensorInfo((-1, 3), "f32"), TensorInfo((1,), it)][: ctx.num_outputs]

    def build(self, ctx: NodeContext) -> Kernel:
        center = ctx.attrs["box_encoding"] == "center"
        sort_desc = ctx.attrs["sort_result_descending"]
        it = ELEMENT_TYPES[ctx.attrs["output_type"]]
        layer, n_out = ctx.layer, ctx.num_outputs

        def scalar(ins, i, default):
            if i >= len(ins):
                return default
            v = np.asarray(ins[i]).reshape(-1)
            if v.size != 1:
                raise runtime_error(layer, f"input {i} must hold one value, got {v.size}")
            return v[0]

        def run(ins):
            boxes, scores = ins[0], ins[1]
            if boxes.shape[0] != scores.shape[0] or boxes.shape[1] != scores.shape[2] or boxes.shape[2] != 4:
                raise runtime_error(layer, f"boxes {list(boxes.shape)} and scores {list(scores.shape)} disagree: "
                                           f"need boxes [B, N, 4] and scores [B, C, N]")
            max_per_class = max(int(scalar(ins, 2, 0)), 0)
            iou_thr, score_thr, sigma = (float(scalar(ins, i, 0.0)) for i in (3, 4, 5))
            if np.float32(sigma) <= 0:
                idx, sel = nms_hard(boxes, scores, center, max_per_class, iou_thr, score_thr, sort_desc)
                return [idx.astype(it, copy=False), sel, np.array([idx.shape[0]], it)][:n_out]
            # soft NMS: scores change and go back into a heap
            picked = nms_select(_corners(boxes, center), scores, max_per_class, iou_thr, score_thr, sigma)
            if sort_desc:  # stable: equal scores keep batch, class, box order
                picked.sort(key=lambda p: -p[3])
            idx = np.array([p[:3] for p in picked], it).reshape(-1, 3)
            sel = np.array([(p[0], p[1], p[3]) for p in picked], np.float32).reshape(-1, 3)
            return [idx, sel, np.array([len(picked)], it)][:n_out]

        return run


# ---- Unique -------------------------------------------------------------------------------------


def unique(x: np.ndarray, axis: int | None, sort: bool) -> tuple[np.ndarray, ...]:
    """(values, first-occurrence indices, inverse indices, counts) as Unique-10 defines them."""
    data = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    if data.shape[ax] == 0:
        empty = np.zeros(0, np.int64)
        return data, empty, empty, empty
    values, first, inverse, counts = np.unique(data, return_index=True, return_inverse=True, return_counts=True,
                                               axis=ax, equal_nan=False)
    inverse = inverse.reshape(-1)
    if not sort:  # order of first appearance
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        values, first, counts, inverse = np.take(values, order, axis=ax), first[order], counts[order], rank[inverse]
    return values, first, inverse, counts


@register
class Unique(Op):
    type = "Unique"
    version = 10
    opsets = (10, None)
    inputs = (1, 2)
    outputs = (1, 4)
    schema = AttrSchema([
        optional("sorted", parse_bool, True, doc="ascending order (else order of first appearance)"),
        optional("index_element_type", enum("i64", "i32"), "i64", doc="type of the two index outputs"),
        optional("count_element_type", enum("i64", "i32"), "i64", doc="type of the counts"),
    ])
    foldable = False
    doc = "unique elements (or slices along a constant axis), first indices, inverse indices, counts."

    def _axis(self, ctx: NodeContext, rank: int | None) -> int | None:
        if len(ctx.inputs) < 2:
            return None
        if int_list_length(ctx, 1, "axis") not in (1, None):
            raise fail("IRN032", f"axis must hold one value, got {fmt_shape(ctx.inputs[1].shape)}")
        raw = int(ctx.const(1, "axis").reshape(-1)[0])
        return None if rank is None else normalize_axes([raw], rank, "axis")[0]

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype == "boolean" or x.dtype not in ELEMENT_TYPES:
            raise fail("IRN033", f"Unique takes numeric data, got {x.dtype}")
        rank = None if x.shape is None else len(x.shape)
        if rank == 0 and len(ctx.inputs) > 1:
            raise fail("IRN032", "axis is given but the data is a scalar")
        axis = self._axis(ctx, rank)
        it, ct = ctx.attrs["index_element_type"], ctx.attrs["count_element_type"]
        if axis is None:
            values = (-1,)
            n_in = -1
            if x.shape is not None and -1 not in x.shape:
                n_in = int(np.prod(x.shape))
        else:
            values = tuple(-1 if k == axis else d for k, d in enumerate(x.shape)) if x.shape is not None else None
            n_in = x.shape[axis] if x.shape is not None else -1
        outs = [TensorInfo(values, x.dtype), TensorInfo((-1,), it), TensorInfo((merge_dim(-1, n_in),), it),
                TensorInfo((-1,), ct)]
        return outs[: ctx.num_outputs]

    def build(self, ctx: NodeContext) -> Kernel:
        sort, n_out = ctx.attrs["sorted"], ctx.num_outputs
        it, ct = ELEMENT_TYPES[ctx.attrs["index_element_type"]], ELEMENT_TYPES[ctx.attrs["count_element_type"]]
        has_axis = len(ctx.inputs) > 1

        def run(ins):
            x = ins[0]
            axis = normalize_axes([int(np.asarray(ins[1]).reshape(-1)[0])], x.ndim, "axis")[0] if has_axis else None
            values, first, inverse, counts = unique(x, axis, sort)
            return [np.ascontiguousarray(values), first.astype(it), inverse.astype(it), counts.astype(ct)][:n_out]

        return run
