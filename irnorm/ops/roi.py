"""ROIAlign-3 (opset3+) and ROIAlign-9 (opset9+): bilinear-sampled pooling of regions of a feature map.

Inputs: data [N, C, H, W], rois [R, 4] (x1, y1, x2, y2 in the input's coordinates, multiplied by
``spatial_scale``), batch_indices [R] (integers in [0, N): out of range is a run-time error, IRN064).
Output [R, C, pooled_h, pooled_w].  Each bin takes ``sampling_ratio`` x ``sampling_ratio`` samples
(0: ceil(bin size) per axis); a sample more than one pixel outside the map contributes 0, others are
clamped to the map and interpolated bilinearly.  ``mode`` avg averages the samples; max takes their
maximum starting from 0 (OpenVINO's reference: an all-negative bin gives 0).  ROIAlign-9's
``aligned_mode``: asymmetric (ROIAlign-3's behaviour: regions at least 1x1), half_pixel_for_nn (shift
by -0.5 after scaling) or half_pixel (+0.5 before, -0.5 after).  f16/bf16 compute in float32.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, at_least, enum, optional, parse_float, parse_int, positive
from ..ir.dtypes import FLOAT_TYPES, INT_TYPES, cast, compute_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, fail, fmt_shape, merge_dim, register, runtime_error, same_dim


def _attrs(v9: bool) -> list[Attr]:
    attrs = [
        Attr("pooled_h", parse_int, check=at_least(1), doc="output bins per column"),
        Attr("pooled_w", parse_int, check=at_least(1), doc="output bins per row"),
        Attr("sampling_ratio", parse_int, check=at_least(0), doc="samples per bin and axis; 0 = adaptive"),
        Attr("spatial_scale", parse_float, check=positive, doc="multiplies the region coordinates"),
        Attr("mode", enum("avg", "max"), doc="average or maximum of the samples"),
    ]
    if v9:
        attrs.append(optional("aligned_mode", enum("asymmetric", "half_pixel_for_nn", "half_pixel"), "asymmetric",
                              doc="pixel-offset convention of the region coordinates"))
    return attrs


class _ROIAlign(Op):
    inputs = (3, 3)
    foldable = False

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, rois, idx = ctx.inputs
        if x.dtype not in FLOAT_TYPES:
            raise fail("IRN033", f"data must be a floating-point tensor, got {x.dtype}")
        if rois.dtype != x.dtype:
            raise fail("IRN033", f"rois has element type {rois.dtype}, expected {x.dtype} (the data's)")
        if idx.dtype not in INT_TYPES:
            raise fail("IRN033", f"batch_indices must be an integer tensor, got {idx.dtype}")
        for info, what, rank in ((x, "data", 4), (rois, "rois", 2), (idx, "batch_indices", 1)):
            if info.shape is not None and len(info.shape) != rank:
                raise fail("IRN032", f"{what} must have rank {rank}, got {fmt_shape(info.shape)}")
        n_roi = -1
        if rois.shape is not None:
            if not same_dim(rois.shape[1], 4):
                raise fail("IRN032", f"rois {fmt_shape(rois.shape)} must hold 4 coordinates per region (dim 1)")
            n_roi = rois.shape[0]
        if idx.shape is not None:
            if not same_dim(n_roi, idx.shape[0]):
                raise fail("IRN032", f"batch_indices {fmt_shape(idx.shape)} and rois {fmt_shape(rois.shape)} "
                                     f"disagree on the number of regions")
            n_roi = merge_dim(n_roi, idx.shape[0])
        c = x.shape[1] if x.shape is not None else -1
        return [TensorInfo((n_roi, c, ctx.attrs["pooled_h"], ctx.attrs["pooled_w"]), x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import roi as kern  # lazy: validate never imports numba

        a, layer = ctx.attrs, ctx.layer
        mode = a.get("aligned_mode", "asymmetric")
        off_src = 0.5 if mode == "half_pixel" else 0.0
        off_dst = -0.5 if mode != "asymmetric" else 0.0

        def run(ins):
            x, rois, idx = ins
            if rois.shape[0] != idx.shape[0] or rois.shape[1] != 4:
                raise runtime_error(layer, f"rois {list(rois.shape)} and batch_indices {list(idx.shape)} disagree")
            b = idx.astype(np.int64).reshape(-1)
            if b.size and (b.min() < 0 or b.max() >= x.shape[0]):
                raise runtime_error(layer, f"batch_indices {b.tolist()[:8]} must lie in [0, {x.shape[0]})")
            cdt = compute_dtype(x.dtype)
            out = np.zeros((rois.shape[0], x.shape[1], a["pooled_h"], a["pooled_w"]), cdt)
            if out.size and x.shape[2] and x.shape[3]:
                kern.roi_align(np.ascontiguousarray(x, cdt), np.ascontiguousarray(rois, cdt), b, out, a["pooled_h"],
                               a["pooled_w"], a["sampling_ratio"], cdt.type(a["spatial_scale"]), cdt.type(off_src),
                               cdt.type(off_dst), mode != "asymmetric", a["mode"] == "max")
            return [cast(out, x.dtype)]

        return run


@register
class ROIAlign3(_ROIAlign):
    type = "ROIAlign"
    version = 3
    opsets = (3, 8)
    schema = AttrSchema(_attrs(False))
    doc = "bilinear-sampled avg/max pooling of regions [R, 4] into [R, C, pooled_h, pooled_w] (Numba, parallel)."


@register
class ROIAlign9(_ROIAlign):
    type = "ROIAlign"
    version = 9
    opsets = (9, None)
    schema = AttrSchema(_attrs(True))
    doc = "ROIAlign-3 with aligned_mode: asymmetric, half_pixel_for_nn or half_pixel."
