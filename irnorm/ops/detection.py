"""The SSD family: PriorBox-1/-8, PriorBoxClustered-1 and DetectionOutput-1/-8 (docs/ir-format.md,
section 11, "PriorBox, PriorBoxClustered, DetectionOutput").

PriorBox / PriorBoxClustered take the feature map's spatial size [H, W] and the image's [IH, IW] (1-D
integer inputs of two values, usually ShapeOf -> StridedSlice) and produce f32 [2, 4 * H * W * priors]:
row 0 the boxes (xmin, ymin, xmax, ymax, normalized by the image size) cell by cell, row 1 the variances.
With static sizes the inputs are constants and the output folds at load time, as OpenVINO folds it.
The arithmetic is OpenVINO's reference (``prior_box.hpp``, ``prior_box_clustered.hpp``) step by step in
float32; attribute sets for which that reference would write more or fewer boxes than its shape rule
sizes the output for (e.g. max_size with scale_all_sizes=false) are refused (IRN023).

DetectionOutput decodes the location predictions against the priors (code_type CORNER or CENTER_SIZE,
variances from the priors' second row or encoded in the target; ``normalized`` false: priors of 5 values
(image id first) in pixels, divided by input_width/height), runs Caffe-style NMS per class (or MXNet-style
with decrease_label_id), keeps the ``keep_top_k`` best per image, and writes [1, 1, N, 7] rows (image id,
label, confidence, xmin, ymin, xmax, ymax) image by image, class by class; the row after the last detection
has image id -1 and everything else is 0.  Everything as OpenVINO's CPU plugin computes it (float32; its
tie rules), which the kernel follows rather than the reference where they differ (section 11).
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrError, AttrSchema, at_least, optional, parse_bool, parse_float, parse_int
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, cast
from .base import (
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    fail,
    fmt_shape,
    merge_dim,
    partial_of,
    register,
    runtime_error,
    same_dim,
)

# A folded PriorBox bigger than this (elements) is refused rather than built at load time.
FOLD_LIMIT = 1 << 28

F32 = np.float32


def parse_float_list(text: str) -> list[float]:
    """A comma-separated list of finite numbers ('' is the empty list), as the serializer writes it."""
    t = text.strip()
    if t == "":
        return []
    return [parse_float(p) for p in t.split(",")]


def _all(check_one, what: str):
    def check(vals: list[float]) -> str | None:
        bad = [v for v in vals if not check_one(v)]
        return f"every value must be {what}, got {bad[0]}" if bad else None

    check.__name__ = f"each {what}"
    return check


_non_negative = _all(lambda v: v >= 0, ">= 0")
_positive = _all(lambda v: v > 0, "> 0")
_density = _all(lambda v: v >= 1, ">= 1")


def _variance(vals: list[float]) -> str | None:
    if len(vals) not in (0, 1, 4):
        return f"must hold 0, 1 or 4 values, got {len(vals)}"
    return _non_negative(vals)


def _two_values(ctx: NodeContext, i: int, what: str) -> list[int | None] | None:
    """Input i: a 1-D integer tensor of two values; its known values (None where unknown)."""
    info = ctx.inputs[i]
    if info.dtype not in INT_TYPES:
        raise fail("IRN033", f"{what} (input {i}) must be an integer tensor, got {info.dtype}")
    if info.shape is not None and (len(info.shape) != 1 or not same_dim(info.shape[0], 2)):
        raise fail("IRN032", f"{what} (input {i}) must be 1-D with 2 values [height, width], got "
                             f"{fmt_shape(info.shape)}")
    vals = partial_of(info)
    if vals is not None and len(vals) == 2:
        for v in vals:
            if v is not None and v < 0:
                raise fail("IRN032", f"{what} (input {i}) {vals} has a negative size")
        return vals
    return None


def _sizes(layer, ins, what: tuple[str, str]) -> tuple[int, int, int, int]:
    """The run-time [H, W] and [IH, IW]: two non-negative values each, the image's positive."""
    out = []
    for k, v in enumerate(ins[:2]):
        v = np.asarray(v).reshape(-1)
        if v.size != 2:
            raise runtime_error(layer, f"{what[k]} must hold 2 values [height, width], got {v.size}")
        vals = [int(x) for x in v]
        if min(vals) < (1 if k else 0):
            raise runtime_error(layer, f"{what[k]} {vals} must be {'positive' if k else 'non-negative'}")
        out.extend(vals)
    return out[0], out[1], out[2], out[3]


def _prior_output(ctx: NodeContext, per_cell: int) -> list[TensorInfo]:
    hw = _two_values(ctx, 0, "output_size")
    img = _two_values(ctx, 1, "image_size")
    if img is not None and any(v == 0 for v in img):
        raise fail("IRN032", f"image_size (input 1) {img} must be positive")
    if hw is None or hw[0] is None or hw[1] is None:
        return [TensorInfo((2, -1), "f32")]
    n = 4 * hw[0] * hw[1] * per_cell
    if all(i.value is not None for i in ctx.inputs) and 2 * n > FOLD_LIMIT:
        raise fail("IRN050", f"the priors of a {hw[0]}x{hw[1]} map, {per_cell} per cell, would fold to a constant of "
                             f"{2 * n} elements (irnorm's limit: {FOLD_LIMIT})")
    return [TensorInfo((2, n), "f32")]


# ---- PriorBox ------------------------------------------------------------------------------------


def _prior_box_attrs(v8: bool) -> list[Attr]:
    attrs = [
        optional("min_size", parse_float_list, [], check=_non_negative, doc="box sizes (pixels; image fractions "
                                                                            "with scale_all_sizes=false)"),
        optional("max_size", parse_float_list, [], check=_non_negative, doc="sqrt(min * max) boxes, one per min_size"),
        optional("aspect_ratio", parse_float_list, [], check=_positive, doc="width/height ratios besides 1"),
        optional("flip", parse_bool, False, doc="add 1/ratio for each aspect ratio"),
        optional("clip", parse_bool, False, doc="clip the boxes to [0, 1]"),
        optional("step", parse_float, 0.0, doc="cell size in pixels (0: image size / map size)"),
        Attr("offset", parse_float, doc="box centre within its cell, in cells"),
        optional("variance", parse_float_list, [], check=_variance, doc="0, 1 or 4 values (none: 0.1)"),
        optional("scale_all_sizes", parse_bool, True, doc="false: MXNet-style sizes relative to the image"),
        optional("fixed_size", parse_float_list, [], check=_non_negative, doc="fixed box sizes (with density)"),
        optional("fixed_ratio", parse_float_list, [], check=_positive, doc="ratios of the fixed-size boxes"),
        optional("density", parse_float_list, [], check=_density, doc="boxes per fixed size and axis (truncated)"),
    ]
    if v8:
        attrs.append(optional("min_max_aspect_ratios_order", parse_bool, True,
                              doc="max_size box before the aspect-ratio boxes (false: after)"))
    return attrs


def prior_box_ratios(aspect_ratio: list[float], flip: bool) -> list[float]:
    """The ratios OpenVINO's reference loops over: 1, then each new ratio (and 1/ratio with flip) in order."""
    out = [1.0]
    for r in aspect_ratio:
        r32 = float(F32(r))
        if any(abs(r32 - e) < 1e-6 for e in out):
            continue
        out.append(r32)
        if flip:
            out.append(float(F32(1) / F32(r32)))
    return out


def prior_box_count(a: dict) -> int:
    """Priors per cell as OpenVINO's shape rule counts them (``number_of_priors``)."""
    unique = {round(float(F32(r)) * 1e6) / 1e6 for r in a["aspect_ratio"]}
    if a["flip"]:
        unique |= {round(1 / float(F32(r)) * 1e6) / 1e6 for r in a["aspect_ratio"]}
    unique.add(1.0)
    n_ar = len(unique)
    if a["scale_all_sizes"]:
        n = n_ar * len(a["min_size"]) + len(a["max_size"])
    else:
        n = n_ar + len(a["min_size"]) - 1
    if a["fixed_size"]:
        n = n_ar * len(a["fixed_size"])
    for d in a["density"]:
        n += (len(a["fixed_ratio"]) if a["fixed_ratio"] else n_ar) * (int(d) * int(d) - 1)
    return n


def prior_box_template(a: dict, ih: float) -> list[tuple]:
    """One cell's priors in output order: (dx_sub, dx_add, col_shift, row_shift, half_w, half_h, partial_clip)
    float32 terms, the box centre being ((centre - dx_sub) + dx_add) + shift.  `ih` is the image height
    (scale_all_sizes=false multiplies min_size by it)."""
    ratios = prior_box_ratios(a["aspect_ratio"], a["flip"])
    out: list[tuple] = []
    zero = F32(0)
    density = a["density"]
    for s, fs in enumerate(a["fixed_size"]):
        fs32 = F32(fs)
        fs_int = int(fs)  # the reference's size_t copy
        if a["fixed_ratio"] or len(ratios) > 1 or density:
            d = int(density[s])
            shift = int(fs32 / F32(d))
            sub, add = F32(fs_int // 2), F32(shift) / F32(2)

            def grid(hw, hh, d=d, shift=shift, sub=sub, add=add):
                for r in range(d):
                    for c in range(d):
                        out.append((sub, add, F32(c * shift), F32(r * shift), hw, hh, True))

            if a["fixed_ratio"]:
                for ar in a["fixed_ratio"]:
                    sq = np.sqrt(F32(ar))
                    grid(fs32 * F32(0.5) * sq, fs32 * F32(0.5) / sq)
            else:
                if density:
                    half = F32(fs_int) * F32(0.5)
                    grid(half, half)
                for ar in ratios[1:]:
                    sq = np.sqrt(F32(ar))
                    grid(fs32 * F32(0.5) * sq, fs32 * F32(0.5) / sq)
    mins = [F32(m) * F32(ih) if not a["scale_all_sizes"] else F32(m) for m in a["min_size"]]
    maxs = [F32(m) for m in a["max_size"]]
    order_min_max = a.get("min_max_aspect_ratios_order", True)
    for k, m in enumerate(mins):
        half = m * F32(0.5)
        out.append((zero, zero, zero, zero, half, half, False))
        box_max = []
        if k < len(maxs):
            h = np.sqrt(m * maxs[k]) * F32(0.5)
            box_max.append((zero, zero, zero, zero, h, h, False))
        box_ar = []
        if a["scale_all_sizes"] or k == len(mins) - 1:
            base = m if a["scale_all_sizes"] else mins[0]
            for ar in ratios[1:]:
                sq = np.sqrt(F32(ar))
                box_ar.append((zero, zero, zero, zero, base * F32(0.5) * sq, base * F32(0.5) / sq, False))
        out.extend(box_max + box_ar if order_min_max else box_ar + box_max)
    return out


def _check_prior_box_attrs(a: dict) -> int:
    """The per-cell prior count; refuses attribute sets OpenVINO's reference cannot run as sized."""
    if a["fixed_size"] and len(a["density"]) < len(a["fixed_size"]) and (
            a["fixed_ratio"] or a["density"] or len(prior_box_ratios(a["aspect_ratio"], a["flip"])) > 1):
        raise fail("IRN023", f"density holds {len(a['density'])} values for {len(a['fixed_size'])} fixed_size values "
                             f"(OpenVINO's reference reads one per fixed size)")
    n = prior_box_count(a)
    made = len(prior_box_template(a, 1.0))
    if n != made:
        raise fail("IRN023", f"these attributes make {made} priors per cell but OpenVINO's shape rule sizes the output "
                             f"for {n} (e.g. max_size with scale_all_sizes=false, density without fixed_size, or "
                             f"fixed_ratio and aspect_ratio counts that differ)")
    return n


def prior_box_f32(a: dict, h: int, w: int, ih: int, iw: int) -> np.ndarray:
    """PriorBox's [2, 4 * h * w * priors] output, float32 in the reference's order of operations."""
    step = F32(a["step"])
    if not a["scale_all_sizes"]:
        step = F32(ih) / F32(h) if a["step"] == -1 else step * F32(ih)
    tpl = prior_box_template(a, ih)
    n_pr = len(tpl)
    out = np.zeros((2, h * w * n_pr * 4), F32)
    if h * w * n_pr == 0:
        return out
    ws, hs = np.arange(w, dtype=np.int64).astype(F32), np.arange(h, dtype=np.int64).astype(F32)
    if step == 0:
        cx = (ws + F32(0.5)) * (F32(iw) / F32(w))
        cy = (hs + F32(0.5)) * (F32(ih) / F32(h))
    else:
        cx = (F32(a["offset"]) + ws) * step
        cy = (F32(a["offset"]) + hs) * step
    cx = np.broadcast_to(cx[None, :, None], (h, w, 1))
    cy = np.broadcast_to(cy[:, None, None], (h, w, 1))
    t = np.array([[x[0], x[1], x[2], x[3], x[4], x[5]] for x in tpl], F32).T  # [6, n_pr]
    part = np.array([x[6] for x in tpl])
    ctx_ = ((cx - t[0]) + t[1]) + t[2]
    cty = ((cy - t[0]) + t[1]) + t[3]
    iwi, ihi = F32(1) / F32(iw), F32(1) / F32(ih)
    with np.errstate(invalid="ignore", over="ignore"):
        x0, y0 = (ctx_ - t[4]) * iwi, (cty - t[5]) * ihi
        x1, y1 = (ctx_ + t[4]) * iwi, (cty + t[5]) * ihi
    zero, one = F32(0), F32(1)
    x0 = np.where(part & ~(x0 > zero), zero, x0)
    y0 = np.where(part & ~(y0 > zero), zero, y0)
    x1 = np.where(part & ~(x1 < one), one, x1)
    y1 = np.where(part & ~(y1 < one), one, y1)
    boxes = np.stack([x0, y0, x1, y1], axis=-1).reshape(-1)
    if a["clip"]:
        boxes = np.minimum(np.maximum(boxes, zero), one)
    out[0] = boxes
    var = a["variance"] or [0.1]
    out[1] = np.tile(np.array(var, F32), h * w * n_pr * 4 // len(var))
    return out


class _PriorBox(Op):
    type = "PriorBox"
    inputs = (2, 2)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        return _prior_output(ctx, _check_prior_box_attrs(ctx.attrs))

    def build(self, ctx: NodeContext) -> Kernel:
        a, layer = dict(ctx.attrs), ctx.layer

        def run(ins):
            h, w, ih, iw = _sizes(layer, ins, ("output_size", "image_size"))
            return [prior_box_f32(a, h, w, ih, iw)]

        return run


@register
class PriorBox1(_PriorBox):
    version = 1
    opsets = (1, 7)
    schema = AttrSchema(_prior_box_attrs(False))
    doc = "SSD prior (anchor) boxes and variances of a feature map, f32 [2, 4*H*W*priors]; folds at load."


@register
class PriorBox8(_PriorBox):
    version = 8
    opsets = (8, None)
    schema = AttrSchema(_prior_box_attrs(True))
    doc = "PriorBox-1 with min_max_aspect_ratios_order (the max_size box before or after the ratio boxes)."


# ---- PriorBoxClustered ---------------------------------------------------------------------------


def prior_box_clustered_f32(a: dict, h: int, w: int, ih: int, iw: int) -> np.ndarray:
    """PriorBoxClustered's [2, 4 * h * w * priors] output, float32 in the reference's order of operations."""
    n_pr = len(a["width"])
    out = np.zeros((2, h * w * n_pr * 4), F32)
    if h * w * n_pr == 0:
        return out
    step_w = F32(a["step_w"]) if a["step_w"] != 0 else F32(a["step"])
    step_h = F32(a["step_h"]) if a["step_h"] != 0 else F32(a["step"])
    if step_w == 0 and step_h == 0:
        step_w, step_h = F32(iw) / F32(w), F32(ih) / F32(h)
    off = F32(a["offset"])
    cx = ((np.arange(w, dtype=np.int64).astype(F32) + off) * step_w)[None, :, None]
    cy = ((np.arange(h, dtype=np.int64).astype(F32) + off) * step_h)[:, None, None]
    bw = np.array(a["width"], F32) / F32(2)
    bh = np.array(a["height"], F32) / F32(2)
    with np.errstate(invalid="ignore", over="ignore"):
        x0 = np.broadcast_to((cx - bw) / F32(iw), (h, w, n_pr))
        y0 = np.broadcast_to((cy - bh) / F32(ih), (h, w, n_pr))
        x1 = np.broadcast_to((cx + bw) / F32(iw), (h, w, n_pr))
        y1 = np.broadcast_to((cy + bh) / F32(ih), (h, w, n_pr))
    boxes = np.stack([x0, y0, x1, y1], axis=-1).reshape(-1)
    if a["clip"]:
        boxes = np.minimum(np.maximum(boxes, F32(0)), F32(1))
    out[0] = boxes
    var = a["variance"] or [0.1]
    out[1] = np.tile(np.array(var, F32), h * w * n_pr * 4 // len(var))
    return out


@register
class PriorBoxClustered1(Op):
    type = "PriorBoxClustered"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    schema = AttrSchema([
        Attr("width", parse_float_list, check=_non_negative, doc="prior widths in pixels"),
        Attr("height", parse_float_list, check=_non_negative, doc="prior heights in pixels, one per width"),
        optional("clip", parse_bool, True, doc="clip the boxes to [0, 1]"),
        optional("step", parse_float, 0.0, doc="cell size for both axes when step_w / step_h are 0"),
        optional("step_w", parse_float, 0.0, doc="cell width in pixels"),
        optional("step_h", parse_float, 0.0, doc="cell height in pixels"),
        Attr("offset", parse_float, doc="box centre within its cell, in cells"),
        optional("variance", parse_float_list, [], check=_variance, doc="0, 1 or 4 values (none: 0.1)"),
    ])
    doc = "clustered SSD priors (one per width/height pair) of a feature map, f32 [2, 4*H*W*priors]; folds at load."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        a = ctx.attrs
        if len(a["width"]) != len(a["height"]):
            raise fail("IRN023", f"width holds {len(a['width'])} values and height {len(a['height'])}: one height "
                                 f"per width")
        return _prior_output(ctx, len(a["width"]))

    def build(self, ctx: NodeContext) -> Kernel:
        a, layer = dict(ctx.attrs), ctx.layer

        def run(ins):
            h, w, ih, iw = _sizes(layer, ins, ("output_size", "image_size"))
            return [prior_box_clustered_f32(a, h, w, ih, iw)]

        return run


# ---- DetectionOutput -----------------------------------------------------------------------------

_CODE_TYPES = {"caffe.priorboxparameter.corner": "caffe.PriorBoxParameter.CORNER",
               "caffe.priorboxparameter.center_size": "caffe.PriorBoxParameter.CENTER_SIZE"}


def _code_type(text: str) -> str:
    t = text.strip().lower()
    if t in _CODE_TYPES:
        return _CODE_TYPES[t]
    if t == "caffe.priorboxparameter.corner_size":
        raise AttrError("'caffe.PriorBoxParameter.CORNER_SIZE' is not implemented by OpenVINO's CPU plugin (nor "
                        "decoded by its reference)", code="IRN023")
    raise AttrError(f"'{text}' is not one of caffe.PriorBoxParameter.CORNER, caffe.PriorBoxParameter.CENTER_SIZE")


def _keep_top_k(text: str) -> list[int]:
    vals = [parse_int(p) for p in text.strip().split(",")] if text.strip() else []
    if not vals:
        raise AttrError("keep_top_k needs at least one value")
    return vals


def _detection_attrs(v1: bool) -> list[Attr]:
    attrs = [Attr("num_classes", parse_int, check=at_least(1), doc="classes, background included")] if v1 else []
    return attrs + [
        Attr("keep_top_k", _keep_top_k, doc="detections kept per image (first value; -1: all)"),
        Attr("nms_threshold", parse_float, doc="Jaccard overlap above which a box is suppressed"),
        optional("background_label_id", parse_int, 0, doc="class left out (-1: none)"),
        optional("top_k", parse_int, -1, check=at_least(-1), doc="candidates per class before NMS (-1: all)"),
        optional("variance_encoded_in_target", parse_bool, False, doc="the priors carry no variance row"),
        optional("code_type", _code_type, "caffe.PriorBoxParameter.CORNER", doc="CORNER or CENTER_SIZE offsets"),
        optional("share_location", parse_bool, True, doc="one box per prior for all classes"),
        optional("confidence_threshold", parse_float, 0.0, doc="candidates score above it"),
        optional("clip_after_nms", parse_bool, False, doc="clip the output boxes to [0, 1]"),
        optional("clip_before_nms", parse_bool, False, doc="clip the decoded boxes to [0, 1]"),
        optional("decrease_label_id", parse_bool, False, doc="MXNet-style NMS, labels minus 1"),
        optional("normalized", parse_bool, False, doc="priors in [0, 1] (false: 5 values, in pixels)"),
        optional("input_height", parse_int, 1, check=at_least(0), doc="image height (normalized=false)"),
        optional("input_width", parse_int, 1, check=at_least(0), doc="image width (normalized=false)"),
        optional("objectness_score", parse_float, 0.0, doc="ARM objectness below which a prior is background"),
    ]


class _DetectionOutput(Op):
    type = "DetectionOutput"
    inputs = (3, 5)
    foldable = False

    def _check_attrs(self, a: dict) -> None:
        if a["decrease_label_id"] and a["background_label_id"] != 0:
            raise fail("IRN023", f"decrease_label_id needs background_label_id 0, got {a['background_label_id']} "
                                 f"(OpenVINO's CPU plugin refuses the pair)")
        k = a["keep_top_k"][0]
        if a["top_k"] > 0 and k != -1 and k <= 0:
            raise fail("IRN023", f"keep_top_k {k} with top_k {a['top_k']}: OpenVINO sizes the output for every "
                                 f"prior and class but its CPU plugin then writes top_k rows per class (leaving the "
                                 f"rest unwritten) or refuses to run; use keep_top_k -1 or a positive value")
        if not a["normalized"] and (a["input_height"] < 1 or a["input_width"] < 1):
            raise fail("IRN023", "input_height and input_width must be positive when normalized is false")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        a = ctx.attrs
        self._check_attrs(a)
        if len(ctx.inputs) == 4:
            raise fail("IRN017", "DetectionOutput takes 3 inputs or 5 (with ARM confidence and location), got 4")
        names = ("box_logits", "class_preds", "proposals", "aux_class_preds", "aux_box_preds")
        ranks = (2, 2, 3, 2, 2)
        dt = ctx.inputs[0].dtype
        for i, info in enumerate(ctx.inputs):
            if info.dtype not in FLOAT_TYPES:
                raise fail("IRN033", f"{names[i]} (input {i}) must be a floating-point tensor, got {info.dtype}")
            if info.dtype != dt:
                raise fail("IRN033", f"{names[i]} (input {i}) has element type {info.dtype}, expected {dt} "
                                     f"(box_logits')")
            if info.shape is not None and len(info.shape) != ranks[i]:
                raise fail("IRN032", f"{names[i]} (input {i}) must have rank {ranks[i]}, got {fmt_shape(info.shape)}")
        shp = [info.shape for info in ctx.inputs]
        psize = 4 if a["normalized"] else 5
        n_img, n_pr = -1, -1
        for s in (shp[0], shp[1]) + ((shp[3], shp[4]) if len(shp) == 5 else ()):
            if s is not None:
                if not same_dim(n_img, s[0]):
                    raise fail("IRN032", f"the inputs disagree on the number of images: {[fmt_shape(x) for x in shp]}")
                n_img = merge_dim(n_img, s[0])
        if shp[2] is not None:
            rows_want = 1 if a["variance_encoded_in_target"] else 2
            if shp[2][1] != -1 and shp[2][1] != rows_want:
                raise fail("IRN032", f"proposals {fmt_shape(shp[2])} must have {rows_want} rows (dim 1) with "
                                     f"variance_encoded_in_target={str(rows_want == 1).lower()}")
            if shp[2][0] not in (-1, 1) and not same_dim(n_img, shp[2][0]):
                raise fail("IRN032", f"proposals {fmt_shape(shp[2])} must have 1 or {n_img} images (dim 0)")
            if shp[2][2] != -1:
                if shp[2][2] % psize or shp[2][2] == 0:
                    raise fail("IRN032", f"proposals {fmt_shape(shp[2])}: dim 2 must be a positive multiple of {psize} "
                                         f"(normalized={str(a['normalized']).lower()})")
                n_pr = shp[2][2] // psize
        if n_pr == -1 and len(shp) == 5 and shp[3] is not None and shp[3][1] != -1:
            if shp[3][1] % 2 or shp[3][1] == 0:
                raise fail("IRN032", f"aux_class_preds {fmt_shape(shp[3])}: dim 1 must be a positive multiple of 2")
            n_pr = shp[3][1] // 2
        n_cls = a["num_classes"] if "num_classes" in a else -1
        if n_cls == -1 and n_pr > 0 and shp[1] is not None and shp[1][1] != -1:
            if shp[1][1] % n_pr:
                raise fail("IRN032", f"class_preds {fmt_shape(shp[1])}: dim 1 must be a multiple of the {n_pr} priors")
            n_cls = shp[1][1] // n_pr
        if n_pr > 0 and n_cls > 0:
            loc_cls = 1 if a["share_location"] else n_cls
            checks = [(0, 4 * loc_cls * n_pr, "box_logits", "4 * priors * location classes"),
                      (1, n_cls * n_pr, "class_preds", "priors * classes")]
            if len(shp) == 5:
                checks += [(3, 2 * n_pr, "aux_class_preds", "2 * priors"),
                           (4, 4 * loc_cls * n_pr, "aux_box_preds", "4 * priors * location classes")]
            for i, want, what, how in checks:
                if shp[i] is not None and not same_dim(shp[i][1], want):
                    raise fail("IRN032", f"{what} {fmt_shape(shp[i])}: dim 1 must be {how} = {want} "
                                         f"({n_pr} priors, {n_cls} classes)")
        elif n_cls == -1 and shp[1] is not None and shp[1][1] == 0:
            raise fail("IRN032", f"class_preds {fmt_shape(shp[1])} holds no classes")
        k = a["keep_top_k"][0]
        if k > 0:
            rows = n_img * k if n_img != -1 else -1
        elif k == -1 and a["top_k"] > 0:
            rows = n_img * a["top_k"] * n_cls if n_img != -1 and n_cls != -1 else -1
        else:
            rows = n_img * n_pr * n_cls if -1 not in (n_img, n_pr, n_cls) else -1
        return [TensorInfo((1, 1, rows, 7), dt)]

    def build(self, ctx: NodeContext) -> Kernel:
        a, layer = dict(ctx.attrs), ctx.layer
        out_dtype = ELEMENT_TYPES[ctx.inputs[0].dtype]

        def run(ins):
            return [cast(detection_output_f32(layer, a, [np.asarray(x) for x in ins]), out_dtype)]

        return run


def _clip01(x: np.ndarray) -> np.ndarray:
    """std::max(0.f, std::min(1.f, x)), NaN included."""
    t = np.where(x < F32(1), x, F32(1))
    return np.where(F32(0) < t, t, F32(0))


def _decode(a: dict, pri: np.ndarray, loc: np.ndarray, var: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The plugin's decodeBBoxes: priors [P, 4], loc [P, 4], var [P, 4] (None: encoded in target) -> boxes
    [P, 4] and their sizes [P], float32."""
    px0, py0, px1, py1 = (pri[:, i] for i in range(4))
    if not a["normalized"]:
        iw, ih = F32(a["input_width"]), F32(a["input_height"])
        px0, py0, px1, py1 = px0 / iw, py0 / ih, px1 / iw, py1 / ih
    lx0, ly0, lx1, ly1 = (loc[:, i] for i in range(4))
    if var is not None:
        v = [var[:, i] for i in range(4)]
    if a["code_type"].endswith("CORNER"):
        if var is None:
            x0, y0, x1, y1 = px0 + lx0, py0 + ly0, px1 + lx1, py1 + ly1
        else:
            x0, y0, x1, y1 = px0 + v[0] * lx0, py0 + v[1] * ly0, px1 + v[2] * lx1, py1 + v[3] * ly1
    else:
        pw, ph = px1 - px0, py1 - py0
        pcx, pcy = (px0 + px1) / F32(2), (py0 + py1) / F32(2)
        if var is None:
            cx, cy = lx0 * pw + pcx, ly0 * ph + pcy
            bw, bh = np.exp(lx1) * pw, np.exp(ly1) * ph
        else:
            cx, cy = v[0] * lx0 * pw + pcx, v[1] * ly0 * ph + pcy
            bw, bh = np.exp(v[2] * lx1) * pw, np.exp(v[3] * ly1) * ph
        x0, y0, x1, y1 = cx - bw / F32(2), cy - bh / F32(2), cx + bw / F32(2), cy + bh / F32(2)
    boxes = np.stack([x0, y0, x1, y1], axis=1).astype(F32, copy=False)
    if a["clip_before_nms"]:
        boxes = _clip01(boxes)
    sizes = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    return np.ascontiguousarray(boxes), sizes


def _order(scores: np.ndarray, keys: np.ndarray, top_k: int) -> np.ndarray:
    """Positions of `scores` highest first, lower key first on ties, cut to top_k (-1: all)."""
    perm = np.lexsort((keys, -scores.astype(np.float64)))
    return perm if top_k == -1 else perm[:top_k]


def detection_output_f32(layer, a: dict, ins: list[np.ndarray]) -> np.ndarray:
    """DetectionOutput as OpenVINO's CPU plugin computes it (float32); [1, 1, rows, 7]."""
    from ..kernels import detection as kern  # lazy: validate never imports numba

    loc, conf, pri = (np.asarray(x, F32) for x in ins[:3])
    arm = len(ins) == 5
    psize, off = (4, 0) if a["normalized"] else (5, 1)
    enc = a["variance_encoded_in_target"]
    n_img = loc.shape[0]
    if pri.shape[2] % psize or pri.shape[2] == 0:
        raise runtime_error(layer, f"proposals {list(pri.shape)}: dim 2 must be a positive multiple of {psize}")
    n_pr = pri.shape[2] // psize
    if conf.shape[1] % n_pr or conf.shape[0] != n_img:
        raise runtime_error(layer, f"class_preds {list(conf.shape)} does not fit {n_img} images of {n_pr} priors")
    n_cls = conf.shape[1] // n_pr
    if "num_classes" in a and n_cls != a["num_classes"]:
        raise runtime_error(layer, f"class_preds {list(conf.shape)} holds {n_cls} classes per prior, num_classes is "
                                   f"{a['num_classes']}")
    loc_cls = 1 if a["share_location"] else n_cls
    if loc.shape[1] != 4 * loc_cls * n_pr:
        raise runtime_error(layer, f"box_logits {list(loc.shape)} must have {4 * loc_cls * n_pr} values per image "
                                   f"({n_pr} priors, {loc_cls} location classes)")
    if pri.shape[0] not in (1, n_img) or pri.shape[1] != (1 if enc else 2):
        raise runtime_error(layer, f"proposals {list(pri.shape)} must be [1 or {n_img}, {1 if enc else 2}, ...]")
    if arm:
        arm_conf, arm_loc = np.asarray(ins[3], F32), np.asarray(ins[4], F32)
        if arm_conf.shape != (n_img, 2 * n_pr) or arm_loc.shape != loc.shape:
            raise runtime_error(layer, f"aux_class_preds {list(arm_conf.shape)} / aux_box_preds {list(arm_loc.shape)} "
                                       f"must be [{n_img}, {2 * n_pr}] / {list(loc.shape)}")
    k_keep, top_k, bg = a["keep_top_k"][0], a["top_k"], a["background_label_id"]
    if k_keep > 0:
        rows = n_img * k_keep
    elif k_keep == -1 and top_k > 0:
        rows = n_img * top_k * n_cls
    else:
        rows = n_img * n_pr * n_cls
    out = np.zeros((rows, 7), F32)
    thr = F32(a["confidence_threshold"])
    nms_thr = F32(a["nms_threshold"])
    count = 0
    for n in range(n_img):
        pb = pri[n if pri.shape[0] > 1 else 0]
        boxes_p = pb[0].reshape(n_pr, psize)[:, off:off + 4]
        var = None if enc else pb[1, :4 * n_pr].reshape(n_pr, 4)
        actual = n_pr
        if not a["normalized"]:
            stop = np.flatnonzero(pb[0].reshape(n_pr, psize)[:, 0] == F32(-1))
            actual = int(stop[0]) if stop.size else n_pr
        scores = conf[n].reshape(n_pr, n_cls)
        if arm:
            bgrow = np.where(np.arange(n_cls) == bg, F32(1), F32(0))
            low = arm_conf[n].reshape(n_pr, 2)[:, 1] < F32(a["objectness_score"])
            scores = np.where(low[:, None], bgrow[None, :], scores)
        lpred = loc[n].reshape(n_pr, loc_cls, 4)
        decoded = np.zeros((loc_cls, n_pr, 4), F32)
        sizes = np.zeros((loc_cls, n_pr), F32)
        for c in range(loc_cls):
            if not a["share_location"] and c == bg:
                continue
            if arm:
                first, _ = _decode(a, boxes_p, arm_loc[n].reshape(n_pr, loc_cls, 4)[:, c], var)
                decoded[c], sizes[c] = _decode(a, first, lpred[:, c], var)
            else:
                decoded[c], sizes[c] = _decode(a, boxes_p, lpred[:, c], var)
        flat_boxes, flat_sizes = decoded.reshape(-1, 4), sizes.reshape(-1)
        kept: list[np.ndarray] = [np.zeros(0, np.int64)] * n_cls
        sc = scores[:actual]
        if not a["decrease_label_id"]:
            for c in range(n_cls):
                if c == bg:
                    continue
                s = sc[:, c]
                cand = np.flatnonzero(s > thr)
                order = cand[_order(s[cand], cand, top_k)]
                base = 0 if a["share_location"] else c * n_pr
                buf = np.empty(order.size, np.int64)
                m = kern.caffe_nms(flat_boxes, flat_sizes, (order + base).astype(np.int64), nms_thr, buf)
                kept[c] = buf[:m] - base
        else:
            best = np.full(actual, F32(-1))
            best_c = np.zeros(actual, np.int64)
            for c in range(1, n_cls):
                s = sc[:, c]
                better = (s >= thr) & (s > best)
                best = np.where(better, s, best)
                best_c = np.where(better, c, best_c)
            cand = np.flatnonzero(best_c > 0)
            order = _order(best[cand], best_c[cand] * n_pr + cand, top_k)
            kept_arr = np.zeros((n_cls, max(n_pr, 1)), np.int64)
            counts = np.zeros(n_cls, np.int64)
            kern.mxnet_nms(flat_boxes, flat_sizes, cand[order].astype(np.int64), best_c[cand][order].astype(np.int64),
                           0 if a["share_location"] else n_pr, nms_thr, kept_arr, counts)
            kept = [kept_arr[c, :counts[c]].copy() for c in range(n_cls)]
        total = sum(k.size for k in kept)
        if k_keep > -1 and total > k_keep:
            cls = np.concatenate([np.full(k.size, c, np.int64) for c, k in enumerate(kept)])
            pr = np.concatenate(kept)
            s = scores[pr, cls]
            pick = _order(s, pr, -1)[:k_keep]  # stable: equal (score, prior) keep the lower class first
            kept = [pr[pick][cls[pick] == c] for c in range(n_cls)]
        for c in range(n_cls):
            pr = kept[c]
            if not pr.size:
                continue
            bx = decoded[0 if a["share_location"] else c, pr]
            if a["clip_after_nms"]:
                bx = _clip01(bx)
            m = pr.size
            if count + m > rows:
                raise runtime_error(layer, f"{count + m} detections do not fit the {rows} output rows")
            out[count:count + m, 0] = n
            out[count:count + m, 1] = c - 1 if a["decrease_label_id"] else c
            out[count:count + m, 2] = scores[pr, c]
            out[count:count + m, 3:] = bx
            count += m
    if count < rows:
        out[count, 0] = -1
    return out.reshape(1, 1, rows, 7)


@register
class DetectionOutput1(_DetectionOutput):
    version = 1
    opsets = (1, 7)
    schema = AttrSchema(_detection_attrs(True))
    doc = ("SSD box decoding, per-class NMS and top-k into [1, 1, N, 7] detections (-1 after the last); "
           "as OpenVINO's CPU plugin, float32.")


@register
class DetectionOutput8(_DetectionOutput):
    version = 8
    opsets = (8, None)
    schema = AttrSchema(_detection_attrs(False))
    doc = "DetectionOutput-1 with the number of classes taken from the input shapes."


