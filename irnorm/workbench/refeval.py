"""Float64 evaluation of a whole graph: each layer through its namesake in irnorm/reference.py,
numpy for the plumbing ops, one table from (op type, op version) to the reference call.

Floating-point tensors are carried in float64 from layer to layer (a Convert to f16 does not
round), but within their declared type's range: an f16/bf16 (or f32) output whose exact value
lies beyond that type's largest finite value becomes +-inf, as correct rounding to the type makes
it, so a correct overflow is not reported as a divergence; integer and boolean tensors keep their
exact dtype.  Folded constants enter as irnorm
folded them (Const->Convert decompression is exact).  A layer with no table entry, or whose
reference raises, is reported (``no reference for X``) and irnorm's own output is used downstream,
so every later layer is still checked.

Adding an op: one function here and one line in REFERENCES; tests/test_workbench_refeval.py
fails for any registered op without an entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import reference as R
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES

FLOAT_NAMES = ("float64", "float32", "float16", "bfloat16")


@dataclass
class RefCall:
    """What a reference function sees: its inputs (float64 or exact ints), the parsed attributes,
    the element types of its outputs (from irnorm's shape rule) and the raw layer record."""

    ins: list[np.ndarray]
    attrs: dict[str, Any]
    out_types: list[str]
    layer: Any  # LayerRecord

    def a(self, name: str) -> Any:
        """An attribute's value as irnorm parsed it: the op's schema supplies the default."""
        return self.attrs[name]


RefFn = Callable[[RefCall], list[np.ndarray]]


def as_ref_value(arr: np.ndarray) -> np.ndarray:
    """Floats (f16/bf16/f32/f64) become float64; integers and booleans stay exact."""
    arr = np.asarray(arr)
    if arr.dtype.name in FLOAT_NAMES:
        return arr.astype(np.float64)
    return arr


def _cast_out(v: np.ndarray, elem: str) -> np.ndarray:
    v = np.asarray(v)
    if elem in FLOAT_TYPES or elem not in ELEMENT_TYPES:
        v = v.astype(np.float64)
        if elem in ELEMENT_TYPES and ELEMENT_TYPES[elem].itemsize < 8 and v.size:
            v = _saturate(v, ELEMENT_TYPES[elem])
        return v
    dt = ELEMENT_TYPES[elem]
    if dt == np.bool_:
        return v != 0
    with np.errstate(invalid="ignore", over="ignore"):
        return v.astype(dt)


def _saturate(v: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Exact values that round to +-inf in `dt` (round to nearest even: past max + half an ulp)
    become +-inf; everything else keeps its float64 value."""
    with np.errstate(over="ignore", invalid="ignore"):
        over = np.isinf(v.astype(dt)) & np.isfinite(v)
    if not over.any():
        return v
    return np.where(over, np.copysign(np.inf, v), v)


def _ints(a: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


def _axes(a: np.ndarray, rank: int) -> list[int]:
    return sorted({v % rank if rank else v for v in _ints(a)})


def _s(v: Any) -> str:
    return str(v).lower()


# ---- normalization family: irnorm/reference.py ---------------------------------------


def _normalize_l2(c: RefCall) -> list[np.ndarray]:
    return [R.normalize_l2(c.ins[0], _ints(c.ins[1]), float(c.a("eps")), _s(c.a("eps_mode")))]


def _group_norm(c: RefCall) -> list[np.ndarray]:
    x, s, b = c.ins
    return [R.group_normalization(x, s, b, int(c.a("num_groups")), float(c.a("epsilon")))]


def _mvn1(c: RefCall) -> list[np.ndarray]:
    axes = c.attrs.get("reduction_axes") if "reduction_axes" in c.layer.data else None
    return [R.mvn1(c.ins[0], bool(c.a("across_channels")), None if axes is None else list(axes),
                   bool(c.a("normalize_variance")), float(c.a("eps")))]


def _mvn6(c: RefCall) -> list[np.ndarray]:
    return [R.mvn6(c.ins[0], _ints(c.ins[1]), bool(c.a("normalize_variance")), float(c.a("eps")),
                   _s(c.a("eps_mode")))]


def _bn1(c: RefCall) -> list[np.ndarray]:
    gamma, beta, x, mean, var = c.ins  # BN-1's IR port order puts gamma and beta first
    return [R.batch_norm_inference(x, gamma, beta, mean, var, float(c.a("epsilon")))]


def _bn5(c: RefCall) -> list[np.ndarray]:
    x, gamma, beta, mean, var = c.ins
    return [R.batch_norm_inference(x, gamma, beta, mean, var, float(c.a("epsilon")))]


def _lrn(c: RefCall) -> list[np.ndarray]:
    return [R.lrn(c.ins[0], _ints(c.ins[1]), float(c.a("alpha")), float(c.a("beta")), float(c.a("bias")),
                  int(c.a("size")))]


def _layer_norm(c: RefCall) -> list[np.ndarray]:
    bias = c.ins[2] if len(c.ins) > 2 else None
    y, mean, inv = R.layer_normalization(c.ins[0], c.ins[1], bias, int(c.a("axis")), float(c.a("epsilon")))
    return [y, mean, inv][: max(len(c.out_types), 1)]


def _trt_norm(c: RefCall) -> list[np.ndarray]:
    x, s, b = c.ins
    return [R.trt_normalization(x, s, b, int(c.a("axes")), int(c.a("num_groups")), float(c.a("epsilon")))]


def _scale(c: RefCall) -> list[np.ndarray]:
    x, s, sh, p = (list(c.ins) + [np.zeros(0)] * 4)[:4]
    y = R.scale(x, _s(c.a("mode")), s, sh, p, int(c.a("channel_axis")))
    if c.out_types and c.out_types[0] == "i8":
        return [R.scale_int8_output(y)]
    return [y]


# ---- plumbing: numpy -------------------------------------------------------------------


def _convert(c: RefCall, dst: str | None = None) -> list[np.ndarray]:
    dst = dst or c.a("destination_type")
    if dst in FLOAT_TYPES:
        return [as_ref_value(c.ins[0])]  # float64 stays float64: no rounding to f16/bf16
    x = c.ins[0]
    if ELEMENT_TYPES[dst] == np.bool_:
        return [x != 0]
    return [R.convert(np.trunc(x) if x.dtype.kind == "f" else x, ELEMENT_TYPES[dst])]


def _convert_like(c: RefCall) -> list[np.ndarray]:
    return _convert(c, c.out_types[0])


def _clamp(c: RefCall) -> list[np.ndarray]:
    x, lo, hi = c.ins[0], float(c.a("min")), float(c.a("max"))
    if x.dtype.kind != "f":
        lo, hi = float(np.ceil(lo)), float(np.floor(hi))
    return [np.clip(x, lo, hi).astype(x.dtype)]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> RefFn:
    def run(c: RefCall) -> list[np.ndarray]:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return [fn(c.ins[0], c.ins[1])]

    return run


def _divide(c: RefCall) -> list[np.ndarray]:
    a, b = c.ins
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            if c.a("m_pythondiv"):
                return [np.floor_divide(a, b)]
            return [np.trunc(a / b).astype(np.result_type(a, b))]
        return [np.asarray(a, np.float64) / np.asarray(b, np.float64)]


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> RefFn:
    def run(c: RefCall) -> list[np.ndarray]:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return [fn(c.ins[0])]

    return run


_erf_vec = np.vectorize(math.erf, otypes=[np.float64])


def _erf(x: np.ndarray) -> np.ndarray:
    return _erf_vec(x) if x.size else np.asarray(x, np.float64)


def _if(c: RefCall) -> list[np.ndarray]:
    """If-8: the chosen body evaluated in float64, layer by layer (evaluate_graph)."""
    from ..ops.control import port_map

    tag = "then_body" if bool(np.asarray(c.ins[0]).reshape(-1)[0]) else "else_body"
    body, feeds, picks = port_map(c.layer, c.attrs, tag)
    outs = evaluate_graph(body, [c.ins[i] for i in feeds])
    return [outs[k] for k in picks]


def _iterating(loop: bool) -> RefFn:
    """TensorIterator-1 / Loop-5: the same iterations as the kernel (ops.loops.iterate), the body evaluated in
    float64, layer by layer (evaluate_graph)."""

    def run(c: RefCall) -> list[np.ndarray]:
        from ..ops.loops import iterate, spec_of

        spec = spec_of(c.layer, c.attrs, loop)
        return iterate(spec, c.ins, lambda arrays: evaluate_graph(spec.body, arrays), c.layer, loop)

    return run


def _pool_attrs(c: RefCall) -> tuple[dict, list[int], list[int], list[int], list[int]]:
    from ..ops.pooling import pool_geometry

    a = dict(c.attrs)
    n = len(a["kernel"])
    a["auto_pad"] = "explicit" if a["auto_pad"] == "notset" else a["auto_pad"]
    for what in ("pads_begin", "pads_end"):
        a[what] = a[what] or [0] * n
    dil = list(a.get("dilations") or [1] * n)
    out, pb, pe = pool_geometry(c.ins[0].shape[2:], a, dil)
    return a, dil, out, pb, pe


def _max_pool(c: RefCall) -> list[np.ndarray]:
    a, dil, out, pb, _ = _pool_attrs(c)
    y, idx = R.max_pool(c.ins[0], a["kernel"], a["strides"], dil, pb, out)
    if len(c.out_types) < 2:
        return [y]
    x = c.ins[0]
    axis = int(a["axis"]) % x.ndim
    plane = int(np.prod(x.shape[2:], dtype=np.int64))
    if axis < 2:
        base = np.arange(x.shape[0] * x.shape[1]).reshape(x.shape[:2]) if axis == 0 else \
            np.broadcast_to(np.arange(x.shape[1]), x.shape[:2])
        idx = idx + (base * plane).reshape(x.shape[:2] + (1,) * (x.ndim - 2))
    return [y, idx]


def _avg_pool(c: RefCall) -> list[np.ndarray]:
    a, dil, out, pb, pe = _pool_attrs(c)
    return [R.avg_pool(c.ins[0], a["kernel"], a["strides"], pb, pe, bool(a["exclude-pad"]), out, dil)]


def _interpolate(c: RefCall) -> list[np.ndarray]:
    from ..ops.base import lookup

    a = dict(c.attrs)
    op = lookup(c.layer.type, c.layer.version)()
    x = np.asarray(c.ins[0])
    r = x.ndim
    pb, pe = a["pads_begin"] or [0] * r, a["pads_end"] or [0] * r
    xp = np.pad(x, list(zip(pb, pe, strict=True)))
    axes, sizes, scales = op._plan(x.shape, a, [None, *c.ins[1:]])
    if a["mode"] in ("bilinear_pillow", "bicubic_pillow"):
        return [R.interpolate_pillow(xp, axes, sizes, a["mode"], a["cube_coeff"],
                                     x.dtype if x.dtype.kind in "iu" else None)]
    return [R.interpolate(xp, axes, sizes, scales, a["mode"], a["coordinate_transformation_mode"],
                          a["nearest_mode"], a["cube_coeff"])]


def _apply1(fn: Callable[[np.ndarray], np.ndarray]) -> RefFn:
    return lambda c: [fn(c.ins[0])]


def _apply2(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> RefFn:
    return lambda c: [fn(c.ins[0], c.ins[1])]


def _math(name: str) -> RefFn:
    return lambda c: [R.math_unary(name, c.ins[0])]


def _conv_attrs(c: RefCall) -> tuple:
    return c.a("strides"), c.a("pads_begin"), c.a("pads_end"), c.a("dilations"), c.a("auto_pad")


def _reduce_ref(kind: str) -> RefFn:
    """A reduction through irnorm/reference.py's reduce (integers: in their type; Mean truncates)."""
    def run(c: RefCall) -> list[np.ndarray]:
        x = c.ins[0]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = R.reduce(kind, x, _ints(c.ins[1]), bool(c.a("keep_dims")))
        if x.dtype.kind in "iu":
            y = np.trunc(y).astype(x.dtype) if kind == "mean" else y.astype(x.dtype)
        return [y]

    return run


def _reshape(c: RefCall) -> list[np.ndarray]:
    x, shape = c.ins[0], _ints(c.ins[1])
    if c.a("special_zero"):
        shape = [x.shape[i] if d == 0 and i < x.ndim else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


def _squeeze(c: RefCall) -> list[np.ndarray]:
    x = c.ins[0]
    if len(c.ins) < 2:
        return [x.reshape([d for d in x.shape if d != 1])]
    axes = _axes(c.ins[1], x.ndim)
    return [x.reshape([d for i, d in enumerate(x.shape) if not (i in axes and d == 1)])]


def _unsqueeze(c: RefCall) -> list[np.ndarray]:
    x = c.ins[0]
    out_rank = x.ndim + len(set(_ints(c.ins[1])))
    axes = _axes(c.ins[1], out_rank)
    shape, it = [], iter(x.shape)
    for i in range(out_rank):
        shape.append(1 if i in axes else next(it))
    return [x.reshape(shape)]


def _shape_of(c: RefCall) -> list[np.ndarray]:
    dt = ELEMENT_TYPES.get(c.out_types[0] if c.out_types else "i64", np.dtype(np.int64))
    return [np.array(c.ins[0].shape, dtype=dt)]


def _gather(c: RefCall) -> list[np.ndarray]:
    data, idx = c.ins[0], np.asarray(c.ins[1])
    axis = int(np.asarray(c.ins[2]).reshape(-1)[0]) % max(data.ndim, 1)
    bd = int(c.attrs.get("batch_dims", 0))  # Gather-1 has no batch dims (the attribute came in Gather-7)
    if bd < 0:
        bd += idx.ndim
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    if bd == 0:
        return [np.take(data, idx, axis=axis)]
    batch = data.shape[:bd]
    out = [np.take(data[b], idx[b], axis=axis - bd) for b in np.ndindex(*batch)]
    stacked = np.stack(out) if out else np.zeros((0,), data.dtype)
    return [stacked.reshape(tuple(batch) + stacked.shape[1:])]


def _broadcast(c: RefCall) -> list[np.ndarray]:
    x, target = c.ins[0], _ints(c.ins[1])
    mode = _s(c.a("mode"))
    if mode == "none":  # Broadcast-1's spelling of explicit
        mode = "explicit"
    if mode == "bidirectional":
        return [np.broadcast_to(x, np.broadcast_shapes(x.shape, tuple(target))).copy()]
    if mode == "explicit":
        mapping = _ints(c.ins[2])
        shape = [1] * len(target)
        for d, ax in zip(x.shape, mapping, strict=True):
            shape[ax] = d
        return [np.broadcast_to(x.reshape(shape), target).copy()]
    return [np.broadcast_to(x, target).copy()]


def _concat(c: RefCall) -> list[np.ndarray]:
    return [np.concatenate(c.ins, axis=int(c.a("axis")))]


def _transpose(c: RefCall) -> list[np.ndarray]:
    perm = _ints(c.ins[1])
    return [np.transpose(c.ins[0], perm or None)]


def _reverse(c: RefCall) -> list[np.ndarray]:
    x = c.ins[0]
    if _s(c.a("mode")) == "mask":
        axes = [int(a) for a in np.flatnonzero(np.asarray(c.ins[1]).reshape(-1))]
    else:
        axes = [a % x.ndim for a in _ints(c.ins[1])]
    return [np.flip(x, axes).copy()]


def _cumsum(c: RefCall) -> list[np.ndarray]:
    x = c.ins[0]
    ax = int(_ints(c.ins[1])[0]) % max(x.ndim, 1) if len(c.ins) > 1 else 0
    if x.ndim == 0:
        return [np.zeros_like(x) if c.a("exclusive") else x.copy()]
    v = np.flip(x, ax) if c.a("reverse") else x
    s = np.cumsum(v, axis=ax, dtype=v.dtype)
    if c.a("exclusive"):
        s = s - v
    return [np.flip(s, ax).copy() if c.a("reverse") else s]


def _topk(c: RefCall) -> list[np.ndarray]:
    x, k = c.ins[0], int(_ints(c.ins[1])[0])
    ax = int(c.a("axis")) % x.ndim
    key = x.astype(np.float64)
    order = np.argsort(-key if _s(c.a("mode")) == "max" else key, axis=ax, kind="stable")
    idx = np.take(order, range(min(k, x.shape[ax])), axis=ax)
    if _s(c.a("sort")) == "index":
        idx = np.sort(idx, axis=ax)
    it = ELEMENT_TYPES.get(c.out_types[1] if len(c.out_types) > 1 else "i32", np.dtype(np.int32))
    return [np.take_along_axis(x, idx, axis=ax), idx.astype(it)]


def _sequence(kind: str) -> RefFn:
    def ref(c: RefCall) -> list[np.ndarray]:
        o = 1 if kind == "lstm" else 0
        x, h0, lens, w, r, b = c.ins[0], c.ins[1], c.ins[2 + o], c.ins[3 + o], c.ins[4 + o], c.ins[5 + o]
        return R.recurrent_sequence(kind, x, h0, c.ins[2] if o else None, lens, w, r, b, c.a("direction"),
                                    c.a("activations"), c.a("clip"), bool(c.attrs.get("linear_before_reset")))

    return ref


def _cell(kind: str) -> RefFn:
    def ref(c: RefCall) -> list[np.ndarray]:
        o = 1 if kind == "lstm" else 0
        x, h0 = c.ins[0], c.ins[1]
        w, r, b = (v[None] for v in c.ins[2 + o:5 + o])
        outs = R.recurrent_sequence(kind, x[:, None], h0[:, None], c.ins[2][:, None] if o else None,
                                    np.ones(x.shape[0], np.int64), w, r, b, "forward", c.a("activations"),
                                    c.a("clip"), bool(c.attrs.get("linear_before_reset")))
        return [v[:, 0] for v in outs[1:]]

    return ref


def _nms(c: RefCall) -> list[np.ndarray]:
    def scalar(i: int, default: float) -> float:
        return float(np.asarray(c.ins[i]).reshape(-1)[0]) if i < len(c.ins) else default

    idx, sel = R.non_max_suppression(c.ins[0], c.ins[1], int(scalar(2, 0)), scalar(3, 0.0), scalar(4, 0.0),
                                     scalar(5, 0.0), _s(c.a("box_encoding")) == "center", c.a("sort_result_descending"))
    return [idx, sel, np.array([len(idx)])]


def _prior_box(c: RefCall) -> list[np.ndarray]:
    return [R.prior_box(_ints(c.ins[0]), _ints(c.ins[1]), c.a("min_size"), c.a("max_size"), c.a("aspect_ratio"),
                        c.a("flip"), c.a("clip"), c.a("step"), c.a("offset"), c.a("variance"), c.a("scale_all_sizes"),
                        c.a("fixed_size"), c.a("fixed_ratio"), c.a("density"),
                        c.attrs.get("min_max_aspect_ratios_order", True))]


def _prior_box_clustered(c: RefCall) -> list[np.ndarray]:
    return [R.prior_box_clustered(_ints(c.ins[0]), _ints(c.ins[1]), c.a("width"), c.a("height"), c.a("clip"),
                                  c.a("step"), c.a("step_w"), c.a("step_h"), c.a("offset"), c.a("variance"))]


def _detection_output(c: RefCall) -> list[np.ndarray]:
    names = ("top_k", "background_label_id", "code_type", "share_location", "variance_encoded_in_target",
             "confidence_threshold", "clip_before_nms", "clip_after_nms", "decrease_label_id", "normalized",
             "input_height", "input_width", "objectness_score")
    arm = len(c.ins) == 5
    return [R.detection_output(c.ins[0], c.ins[1], c.ins[2], c.ins[3] if arm else None, c.ins[4] if arm else None,
                               c.a("keep_top_k")[0], c.a("nms_threshold"), **{k: c.a(k) for k in names})]


def _unique(c: RefCall) -> list[np.ndarray]:
    x = c.ins[0]
    axis = int(_ints(c.ins[1])[0]) % x.ndim if len(c.ins) > 1 else None
    return R.unique(x, axis, c.a("sorted"))


def _strided_slice(c: RefCall) -> list[np.ndarray]:
    begin, end = _ints(c.ins[1]), _ints(c.ins[2])
    strides = _ints(c.ins[3]) if len(c.ins) > 3 else [1] * len(begin)

    def mask(name: str) -> list[int]:
        v = list(c.a(name) or [])
        return v + [0] * (len(begin) - len(v))

    bm, em, nm, sm, el = (mask(m) for m in ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask",
                                              "ellipsis_mask"))
    idx: list = []
    for i in range(len(begin)):
        if el[i]:
            idx.append(Ellipsis)
        elif nm[i]:
            idx.append(None)
        elif sm[i]:
            idx.append(0 if bm[i] else begin[i])  # OpenVINO: a masked begin on a shrunk axis is index 0
        else:
            idx.append(slice(None if bm[i] else begin[i], None if em[i] else end[i], strides[i]))
    return [np.array(c.ins[0][tuple(idx)], copy=True)]


def _structural(c: RefCall) -> list[np.ndarray]:  # Parameter / Const / Result never reach here
    raise AssertionError("structural op")


# op type -> reference function, or {op version: function} where versions differ in meaning.
def _optional_ints(ins: list[np.ndarray], port: int) -> list[int | None]:
    """[the scalar at `port`] when the layer has that input, else [None] (an absent default_index)."""
    return [int(np.asarray(ins[port]).reshape(-1)[0]) if len(ins) > port else None]


REFERENCES: dict[str, RefFn | dict[int, RefFn]] = {
    "Parameter": _structural,
    "Const": _structural,
    "Result": _structural,
    "Convert": _convert,
    "ConvertLike": _convert_like,
    "Clamp": _clamp,
    "NormalizeL2": _normalize_l2,
    "GroupNormalization": _group_norm,
    "MVN": {1: _mvn1, 6: _mvn6},
    "BatchNormInference": {1: _bn1, 5: _bn5},
    "LRN": _lrn,
    "LayerNormalization": _layer_norm,
    "Normalization": _trt_norm,
    "Scale": _scale,
    "Add": _binary(np.add),
    "Subtract": _binary(np.subtract),
    "Multiply": _binary(np.multiply),
    "Divide": _divide,
    "Maximum": _binary(np.maximum),
    "Minimum": _binary(np.minimum),
    "Power": _binary(lambda a, b: np.power(a, b) if a.dtype.kind == "f" or b.dtype.kind == "f"
                     else np.power(a, b.astype(a.dtype))),
    "SquaredDifference": _binary(lambda a, b: (a - b) * (a - b)),
    "Sqrt": _unary(np.sqrt),
    "Abs": _unary(np.abs),
    "Negative": _unary(np.negative),
    "Exp": _unary(np.exp),
    "Log": _unary(np.log),
    "Erf": _unary(lambda x: _erf(x)),
    "Sigmoid": _unary(lambda x: 1.0 / (1.0 + np.exp(-x))),
    "Tanh": _unary(np.tanh),
    "MatMul": lambda c: [R.matmul(c.ins[0], c.ins[1], bool(c.a("transpose_a")), bool(c.a("transpose_b")))],
    "Convolution": lambda c: [R.convolution(c.ins[0], c.ins[1], *_conv_attrs(c))],
    "GroupConvolution": lambda c: [R.group_convolution(c.ins[0], c.ins[1], *_conv_attrs(c))],
    "ConvolutionBackpropData": lambda c: [R.convolution_backprop_data(
        c.ins[0], c.ins[1], *_conv_attrs(c), c.a("output_padding"), _ints(c.ins[2]) if len(c.ins) > 2 else None)],
    "GroupConvolutionBackpropData": lambda c: [R.group_convolution_backprop_data(
        c.ins[0], c.ins[1], *_conv_attrs(c), c.a("output_padding"), _ints(c.ins[2]) if len(c.ins) > 2 else None)],
    **{t: _apply1(fn) for t, fn in (
        ("Relu", R.relu), ("HSwish", R.hswish), ("HSigmoid", R.hsigmoid), ("Mish", R.mish), ("SoftPlus", R.softplus),
        ("SoftSign", R.softsign), ("Floor", R.floor), ("Ceiling", R.ceiling), ("Sign", R.sign))},
    **{t: _math(name) for t, name in (
        ("Sin", "sin"), ("Cos", "cos"), ("Tan", "tan"), ("Asin", "arcsin"), ("Acos", "arccos"), ("Atan", "arctan"),
        ("Sinh", "sinh"), ("Cosh", "cosh"), ("Asinh", "arcsinh"), ("Acosh", "arccosh"), ("Atanh", "arctanh"))},
    "Gelu": {2: lambda c: [R.gelu(c.ins[0], "erf")],
             7: lambda c: [R.gelu(c.ins[0], _s(c.a("approximation_mode")))]},
    "Swish": lambda c: [R.swish(c.ins[0], float(np.asarray(c.ins[1]).reshape(-1)[0]) if len(c.ins) > 1 else 1.0)],
    "Elu": lambda c: [R.elu(c.ins[0], float(c.a("alpha")))],
    "Selu": lambda c: [R.selu(c.ins[0], float(np.asarray(c.ins[1]).reshape(-1)[0]),
                              float(np.asarray(c.ins[2]).reshape(-1)[0]))],
    "HardSigmoid": lambda c: [R.hard_sigmoid(c.ins[0], float(np.asarray(c.ins[1]).reshape(-1)[0]),
                                             float(np.asarray(c.ins[2]).reshape(-1)[0]))],
    "PRelu": lambda c: [R.prelu(c.ins[0], c.ins[1])],
    "Round": lambda c: [R.round_(c.ins[0], _s(c.a("mode")))],
    **{t: _apply2(fn) for t, fn in (
        ("Equal", np.equal), ("NotEqual", np.not_equal), ("Less", np.less), ("LessEqual", np.less_equal),
        ("Greater", np.greater), ("GreaterEqual", np.greater_equal), ("LogicalAnd", np.logical_and),
        ("LogicalOr", np.logical_or), ("LogicalXor", np.logical_xor), ("BitwiseAnd", np.bitwise_and),
        ("BitwiseOr", np.bitwise_or), ("BitwiseXor", np.bitwise_xor), ("Mod", R.mod), ("FloorMod", R.floor_mod),
        ("BitwiseLeftShift", R.bitwise_left_shift), ("BitwiseRightShift", R.bitwise_right_shift))},
    "LogicalNot": lambda c: [np.logical_not(c.ins[0])],
    "BitwiseNot": lambda c: [np.invert(c.ins[0])],
    "IsNaN": lambda c: [np.isnan(c.ins[0])],
    "IsFinite": lambda c: [np.isfinite(c.ins[0])],
    "IsInf": lambda c: [R.is_inf(c.ins[0], bool(c.a("detect_negative")), bool(c.a("detect_positive")))],
    "Select": lambda c: [R.select(c.ins[0], c.ins[1], c.ins[2])],
    "SoftMax": lambda c: [R.softmax(c.ins[0], int(c.a("axis")))],
    "LogSoftmax": lambda c: [R.softmax(c.ins[0], int(c.a("axis")), log=True)],
    "ScaledDotProductAttention": lambda c: [R.scaled_dot_product_attention(
        c.ins[0], c.ins[1], c.ins[2], c.ins[3] if len(c.ins) > 3 else None,
        float(np.asarray(c.ins[4]).reshape(-1)[0]) if len(c.ins) > 4 else None, bool(c.a("causal")))],
    "MaxPool": _max_pool,
    "AvgPool": _avg_pool,
    "If": _if,
    "TensorIterator": _iterating(False),
    "Loop": _iterating(True),
    "AdaptiveAvgPool": lambda c: [R.adaptive_avg_pool(c.ins[0], _ints(c.ins[1]))],
    "AdaptiveMaxPool": lambda c: list(R.adaptive_max_pool(c.ins[0], _ints(c.ins[1])))[: len(c.out_types)],
    "Split": lambda c: R.split(c.ins[0], int(_ints(c.ins[1])[0]),
                               [c.ins[0].shape[int(_ints(c.ins[1])[0])] // c.a("num_splits")] * c.a("num_splits")),
    "VariadicSplit": lambda c: R.split(c.ins[0], int(_ints(c.ins[1])[0]), _ints(c.ins[2])),
    "Slice": lambda c: [R.slice_(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]), _ints(c.ins[3]),
                                 _ints(c.ins[4]) if len(c.ins) > 4 else None)],
    "Pad": lambda c: [R.pad(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]), c.a("pad_mode"),
                            np.asarray(c.ins[3]).reshape(-1)[0] if len(c.ins) > 3 else 0)],
    "Roll": lambda c: [np.roll(c.ins[0], _ints(c.ins[1]) * (len(_ints(c.ins[2])) if len(_ints(c.ins[1])) == 1 else 1),
                               axis=_ints(c.ins[2]))],
    "GatherElements": lambda c: [R.gather_elements(c.ins[0], c.ins[1], int(c.a("axis")))],
    "ScatterNDUpdate": {3: lambda c: [R.scatter_nd_update(*c.ins)],
                        15: lambda c: [R.scatter_nd_update(*c.ins, c.a("reduction"))]},
    "Interpolate": _interpolate,
    "Range": lambda c: [R.range_(*(float(np.asarray(v).reshape(-1)[0]) for v in c.ins))],
    "Einsum": lambda c: [R.einsum(c.a("equation"), *c.ins)],
    "FakeQuantize": lambda c: [R.fake_quantize(*c.ins, c.a("levels"))],
    "DeformableConvolution": lambda c: [R.deformable_convolution(
        c.ins[0], c.ins[1], c.ins[2], c.ins[3] if len(c.ins) > 3 else None, *_conv_attrs(c), c.a("group"),
        c.a("deformable_group"), bool(c.attrs.get("bilinear_interpolation_pad", False)), c.a("group") == 1)],
    "GridSample": lambda c: [R.grid_sample(c.ins[0], c.ins[1], c.a("mode"), c.a("padding_mode"),
                                           c.a("align_corners"))],
    "ReduceMean": _reduce_ref("mean"),
    "ReduceSum": _reduce_ref("sum"),
    "ReduceMax": _reduce_ref("max"),
    "ReduceMin": _reduce_ref("min"),
    "ReduceProd": _reduce_ref("prod"),
    "ReduceL1": _reduce_ref("l1"),
    "ReduceL2": _reduce_ref("l2"),
    "ReduceLogicalAnd": _reduce_ref("and"),
    "ReduceLogicalOr": _reduce_ref("or"),
    "Reshape": _reshape,
    "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze,
    "ShapeOf": _shape_of,
    "Gather": _gather,
    "Broadcast": _broadcast,
    "Concat": _concat,
    "Transpose": _transpose,
    "Tile": lambda c: [np.tile(c.ins[0], _ints(c.ins[1]))],
    "Reverse": _reverse,
    "CumSum": _cumsum,
    "TopK": _topk,
    "LSTMSequence": _sequence("lstm"),
    "GRUSequence": _sequence("gru"),
    "RNNSequence": _sequence("rnn"),
    "LSTMCell": _cell("lstm"),
    "GRUCell": _cell("gru"),
    "RNNCell": _cell("rnn"),
    "NonMaxSuppression": _nms,
    "ROIAlign": lambda c: [R.roi_align(c.ins[0], c.ins[1], c.ins[2], c.a("pooled_h"), c.a("pooled_w"),
                                       c.a("sampling_ratio"), c.a("spatial_scale"), c.a("mode"),
                                       c.attrs.get("aligned_mode", "asymmetric"))],
    "Unique": _unique,
    "PriorBox": _prior_box,
    "PriorBoxClustered": _prior_box_clustered,
    "DetectionOutput": _detection_output,
    "StridedSlice": _strided_slice,
    "SpaceToDepth": lambda c: [R.space_to_depth(c.ins[0], int(c.a("block_size")), c.a("mode"))],
    "DepthToSpace": lambda c: [R.depth_to_space(c.ins[0], int(c.a("block_size")), c.a("mode"))],
    "ShuffleChannels": lambda c: [R.shuffle_channels(c.ins[0], int(c.a("axis")), int(c.a("group")))],
    "SpaceToBatch": lambda c: [R.space_to_batch(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]), _ints(c.ins[3]))],
    "BatchToSpace": lambda c: [R.batch_to_space(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]), _ints(c.ins[3]))],
    "GRN": lambda c: [R.grn(c.ins[0], float(c.a("bias")))],
    "ReverseSequence": lambda c: [R.reverse_sequence(c.ins[0], c.ins[1], int(c.a("batch_axis")),
                                                     int(c.a("seq_axis")))],
    "Eye": lambda c: [R.eye(*(int(np.asarray(v).reshape(-1)[0]) for v in c.ins[:3]),
                            _ints(c.ins[3]) if len(c.ins) > 3 else ())],
    "Identity": lambda c: [np.array(c.ins[0], copy=True)],
    # a stateful model's variables at their initial values (compare resets the model's state first)
    "ReadValue": lambda c: [np.array(c.ins[0], copy=True) if c.ins else
                            np.zeros([max(d, 0) for d in c.a("variable_shape")], np.float64)],
    "Assign": lambda c: [np.array(c.ins[0], copy=True)],
    "NonZero": lambda c: [R.non_zero(c.ins[0])],
    "ScatterUpdate": lambda c: [R.scatter_update(c.ins[0], c.ins[1], c.ins[2], _ints(c.ins[3])[0])],
    "ScatterElementsUpdate": {
        3: lambda c: [R.scatter_elements_update(c.ins[0], c.ins[1], c.ins[2], _ints(c.ins[3])[0])],
        12: lambda c: [R.scatter_elements_update(c.ins[0], c.ins[1], c.ins[2], _ints(c.ins[3])[0], c.a("reduction"),
                                                 c.a("use_init_val"))]},
    "GatherND": {5: lambda c: [R.gather_nd(c.ins[0], c.ins[1], c.a("batch_dims"), fold_batch=True)],
                 8: lambda c: [R.gather_nd(c.ins[0], c.ins[1], c.a("batch_dims"))]},
    "OneHot": {1: lambda c: [R.one_hot(c.ins[0], _ints(c.ins[1])[0], c.ins[2], c.ins[3], c.a("axis"))],
               16: lambda c: [R.one_hot(c.ins[0], _ints(c.ins[1])[0], c.ins[2], c.ins[3], c.a("axis"),
                                        c.a("negative_indices_mode") == "normalize")]},
    # embedding bags and Col2Im (irnorm/ops/embedding.py, irnorm/ops/col2im.py)
    "EmbeddingBagOffsets": lambda c: [R.embedding_bag_offsets(*c.ins[:3], *_optional_ints(c.ins, 3),
                                                              c.ins[4] if len(c.ins) > 4 else None,
                                                              c.attrs.get("reduction", "sum"))],
    "EmbeddingBagOffsetsSum": lambda c: [R.embedding_bag_offsets(*c.ins[:3], *_optional_ints(c.ins, 3),
                                                                 c.ins[4] if len(c.ins) > 4 else None)],
    "EmbeddingBagPacked": lambda c: [R.embedding_bag_packed(c.ins[0], c.ins[1], c.ins[2] if len(c.ins) > 2 else None,
                                                            c.attrs.get("reduction", "sum"))],
    "EmbeddingSegmentsSum": lambda c: [R.embedding_segments_sum(c.ins[0], c.ins[1], c.ins[2], _ints(c.ins[3])[0],
                                                                *_optional_ints(c.ins, 4),
                                                                c.ins[5] if len(c.ins) > 5 else None)],
    "Col2Im": lambda c: [R.col2im(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]), c.a("strides"), c.a("dilations"),
                                  c.a("pads_begin"), c.a("pads_end"))],
    "Bucketize": lambda c: [R.bucketize(c.ins[0], c.ins[1], c.a("with_right_bound"))],
    "SearchSorted": lambda c: [R.search_sorted(c.ins[0], c.ins[1], c.a("right_mode"))],
    "Inverse": lambda c: [R.inverse(c.ins[0], c.a("adjoint"))],
    "DFT": lambda c: [R.dft(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]) if len(c.ins) > 2 else None)],
    "IDFT": lambda c: [R.dft(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]) if len(c.ins) > 2 else None, True)],
    "RDFT": lambda c: [R.rdft(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]) if len(c.ins) > 2 else None)],
    "IRDFT": lambda c: [R.irdft(c.ins[0], _ints(c.ins[1]), _ints(c.ins[2]) if len(c.ins) > 2 else None)],
    "STFT": lambda c: [R.stft(c.ins[0], c.ins[1], _ints(c.ins[2])[0], _ints(c.ins[3])[0], c.a("transpose_frames"))],
}
REFERENCES["EmbeddingBagPackedSum"] = REFERENCES["EmbeddingBagPacked"]
_BY_LOWER = {k.lower(): v for k, v in REFERENCES.items()}


def reference_for(op_type: str, version: int) -> RefFn | None:
    """The reference function of (type, op version); the type is matched case-insensitively."""
    fn = _BY_LOWER.get(op_type.lower())
    if isinstance(fn, dict):
        return fn.get(version)
    return fn


class ReferenceRunner:
    """Evaluates a model's graph in float64 alongside irnorm, one layer at a time (driven by the
    Model.run on_layer hook), dropping each reference value after its last consumer."""

    def __init__(self, graph: Any):
        self.graph = graph
        self.values: dict[tuple[int, int], np.ndarray] = {}
        self.pending: dict[tuple[int, int], int] = {}
        for n in graph.nodes:
            for s in n.sources:
                if s is not None:
                    self.pending[s] = self.pending.get(s, 0) + 1

    def _input(self, src: tuple[int, int]) -> np.ndarray:
        v = self.values.get(src)
        if v is None:
            info = self.graph.nodes[src[0]].outputs[src[1]]
            if info is None or info.value is None:
                raise KeyError(src)
            v = as_ref_value(info.value)  # a folded constant
            self.values[src] = v
        return v

    def _release(self, node: Any) -> None:
        for s in node.sources:
            if s is None:
                continue
            self.pending[s] -= 1
            if self.pending[s] <= 0:
                self.values.pop(s, None)

    def step(self, node: Any, irnorm_outs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], str]:
        """Reference outputs of `node` and a note ("" when the reference ran).  Falls back to
        irnorm's outputs (noted) when there is no reference or it fails."""
        if node.op is not None and node.op.type == "Parameter":
            out = [as_ref_value(irnorm_outs[0])]
            self.values[(node.index, 0)] = out[0]
            return out, ""
        note = ""
        fn = reference_for(node.op.type, node.op.version) if node.op is not None else None
        outs: list[np.ndarray] | None = None
        if fn is None:
            note = f"no reference for {node.layer.type}-{node.op.version if node.op else '?'}"
        else:
            try:
                ins = [self._input(s) for s in node.sources]
                call = RefCall(ins, node.attrs, [o.dtype if o is not None else "f64" for o in node.outputs], node.layer)
                outs = [_cast_out(v, t) for v, t in zip(fn(call), call.out_types, strict=False)]
            except Exception as e:  # a reference that cannot handle this case: say so, keep going
                note = f"reference failed: {type(e).__name__}: {e}"
                outs = None
        if outs is None or len(outs) < len(irnorm_outs):
            outs = [as_ref_value(o) for o in irnorm_outs]
            note = note + " (irnorm's output used downstream)" if note else note
        for k, v in enumerate(outs):
            self.values[(node.index, k)] = v
        self._release(node)
        return outs, note


def evaluate_graph(graph: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """A whole graph (an If's, a TensorIterator's or a Loop's body) in float64: its Parameters take `inputs` in order,
    every layer runs its reference function, folded constants are read as they are; returns the Results' values in
    order. Raises when a layer has no reference."""
    runner = ReferenceRunner(graph)
    for pi, v in zip(graph.parameters, inputs, strict=True):
        runner.values[(pi, 0)] = as_ref_value(v)
    for node in graph.nodes:
        if node.op_type in ("Parameter", "Result") or (node.outputs and all(
                o is not None and o.value is not None for o in node.outputs)):
            continue
        fn = reference_for(node.op.type, node.op.version)
        if fn is None:
            raise KeyError(f"no reference for {node.label}")
        call = RefCall([runner._input(s) for s in node.sources], node.attrs,
                       [o.dtype if o is not None else "f64" for o in node.outputs], node.layer)
        for k, (v, t) in enumerate(zip(fn(call), call.out_types, strict=False)):
            runner.values[(node.index, k)] = _cast_out(v, t)
    return [runner._input(graph.nodes[r].sources[0]) for r in graph.results]
