"""Parameter, Const, Convert, Result: the plumbing every IR has."""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrError, AttrSchema, parse_int, parse_shape
from ..ir.dtypes import ELEMENT_TYPES, KNOWN_UNSUPPORTED, STORAGE_TYPES
from .base import NodeContext, Op, TensorInfo, fail, register


def _element_type(text: str) -> str:
    t = text.strip()
    if t in ELEMENT_TYPES:
        return t
    if t.lower() in KNOWN_UNSUPPORTED:
        raise AttrError(f"element type '{t}' is not supported by irnorm", code="IRN043")
    raise AttrError(f"'{t}' is not an element type (f32, f16, bf16, f64, i64, i32, i8, u8, boolean, ...)")


def _const_element_type(text: str) -> str:
    """A Const's element type: the computing types, and the storage types of compressed weights (u4, i4, nf4,
    f8e4m3, ...: ir/dtypes.py's STORAGE_TYPES), which only a Convert may read."""
    t = text.strip()
    return t if t in STORAGE_TYPES else _element_type(t)


def _nonneg_int(text: str) -> int:
    v = parse_int(text)
    if v < 0:
        raise AttrError(f"must be non-negative, got {v}", code="IRN023")
    return v


@register
class Parameter(Op):
    type = "Parameter"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([Attr("shape", parse_shape), Attr("element_type", _element_type)])
    inputs = (0, 0)
    foldable = False
    doc = "A model input. `shape` may hold dynamic dims (`?`, `-1`, `a..b`)."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        shape = ctx.attrs["shape"]
        if shape is None:
            raise fail("IRN032", "dynamic-rank inputs ('...') are not supported")
        return [TensorInfo(tuple(shape), ctx.attrs["element_type"])]

    def build(self, ctx: NodeContext):  # never executed: the runtime feeds inputs
        raise AssertionError("Parameter has no kernel")


@register
class Const(Op):
    type = "Const"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([
        Attr("element_type", _const_element_type), Attr("shape", parse_shape),
        Attr("offset", _nonneg_int), Attr("size", _nonneg_int),
    ])
    inputs = (0, 0)
    doc = ("Weights read from the .bin by offset/size (bounds- and size-checked, copied to an aligned array). "
           "Compressed weights (u1, u2, u3, u4, u6, i4, nf4, f4e2m1, f8e4m3, f8e5m2, f8e8m0) are unpacked as "
           "OpenVINO packs them, for the Convert that decompresses them at load.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        shape = ctx.attrs["shape"]
        if shape is None or any(d < 0 for d in shape):
            raise fail("IRN043", f"Const shape must be static, got '{ctx.layer.data.get('shape')}'")
        value = None
        if ctx.weights is not None:
            value = ctx.weights.read(ctx.attrs["element_type"], tuple(shape), ctx.attrs["offset"], ctx.attrs["size"])
        return [TensorInfo(tuple(shape), ctx.attrs["element_type"], value)]

    def build(self, ctx: NodeContext):
        raise AssertionError("Const is folded at load time")


@register
class Convert(Op):
    type = "Convert"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([Attr("destination_type", _element_type)])
    doc = ("Element type conversion. Float to integer truncates toward zero (numpy `astype`); "
           "to boolean is `x != 0`. Const->Convert(decompression) pairs are folded once at load time.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        out = TensorInfo(x.shape, ctx.attrs["destination_type"])
        if x.dtype in STORAGE_TYPES and x.value is None:  # (check/types.py refuses other readers of these)
            raise fail("IRN043", f"a {x.dtype} tensor is supported only as constant weights (a Const, or folded "
                                 f"from Consts) that this Convert decompresses")
        if x.value is not None:
            out.value = convert(x.value, ELEMENT_TYPES[out.dtype])
        return [out]

    def build(self, ctx: NodeContext):
        dst = ELEMENT_TYPES[ctx.attrs["destination_type"]]

        def run(ins):
            return [converted(ins[0], dst)]

        return run


@register
class ConvertLike(Op):
    type = "ConvertLike"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    doc = "Convert input 0 to the element type of input 1 (whose values are not used); same rules as Convert."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, like = ctx.inputs
        out = TensorInfo(x.shape, like.dtype)
        if x.value is not None:
            out.value = convert(x.value, ELEMENT_TYPES[like.dtype])
        return [out]

    def build(self, ctx: NodeContext):
        dst = ELEMENT_TYPES[ctx.inputs[1].dtype]
        return lambda ins: [converted(ins[0], dst)]


def convert(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """Convert's semantics (also for folding at load time, outside a run: NaN/overflow stay silent)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return converted(x, dst)


def converted(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    """convert() for kernels: execute() already runs every kernel under np.errstate (entering one per
    call costs about a microsecond, more than converting a small tensor)."""
    if dst == np.bool_:
        return np.asarray(x != 0)
    if x.dtype == dst:
        return x.copy()
    return x.astype(dst)


@register
class Result(Op):
    type = "Result"
    version = 1
    opsets = (1, None)
    outputs = (0, 0)
    foldable = False
    doc = "A model output. Its name is the first tensor name of the tensor it consumes, else the layer name."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        return []

    def build(self, ctx: NodeContext):
        raise AssertionError("Result has no kernel")
