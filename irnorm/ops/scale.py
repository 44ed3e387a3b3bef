"""Scale (TensorRT IScaleLayer, ``addScale`` / ``addScaleNd``) as the irnorm extension layer
``type="Scale" version="irnorm1"``.

output = (data * scale + shift) ** power, element by element.

Ports (by position): inputs 0 ``data`` (T), 1 ``scale``, 2 ``shift``, 3 ``power`` (all four ports
are required; a coefficient input with zero elements, e.g. a Const of shape [0], means the
default: scale 1, shift 0, power 1); output 0 (T, data's shape).

Attributes (``<data>``): ``mode`` (required): ``uniform`` | ``channel`` | ``elementwise``, any
letter case; ``channel_axis``: int, default 1, in [-r, r) (negative counts from the back); used by
channel and elementwise mode only (uniform ignores it).

Coefficient counts (any coefficient shape; only the element count matters, taken in C order like
TensorRT's flat Weights): uniform 1; channel data.shape[channel_axis] (coefficient k applies to
index k along channel_axis); elementwise prod(data.shape[channel_axis:]) (one per channel and
spatial position, flattened in C order).  Any other count is an error (IRN032).

Types: T (data and output) in {f32, f16, bf16, i8}; each coefficient f32, f16 or bf16 (converted
to f32).  Arithmetic is float32, like TensorRT: f16/bf16 data is computed in f32 and rounded once;
i8 data is read as its integer value, computed in f32, then rounded half to even and saturated to
[-128, 127] (NaN, e.g. a negative base with a fractional power, becomes 0 since TensorRT leaves it
unspecified).  A negative base with a non-integer power gives NaN and 0 ** negative gives inf, as
C's pow.

Rank: TensorRT requires rank >= 4 (onnx-tensorrt pads lower ranks to 4-D before adding the layer,
which gives the same numbers once channel_axis is shifted).  irnorm does not enforce it: any rank
>= 0 works as long as channel_axis addresses an existing axis in channel/elementwise mode.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum, optional, parse_int
from .base import NodeContext, Op, TensorInfo, fail, fmt_shape, register

DATA_TYPES = ("f32", "f16", "bf16", "i8")
COEFF_TYPES = ("f32", "f16", "bf16")
COEFFS = (("scale", 1.0), ("shift", 0.0), ("power", 1.0))


def coeff_layout(shape: tuple[int, ...], mode: str, channel_axis: int) -> tuple[int, int]:
    """(K, inner) of the (outer, K, inner) view for a data shape (dims may be -1: then -1)."""
    r = len(shape)

    def prod(dims):
        out = 1
        for d in dims:
            if d == -1:
                return -1
            out *= d
        return out

    if mode == "uniform":
        return 1, prod(shape)
    ca = channel_axis % r
    if mode == "channel":
        return shape[ca], prod(shape[ca + 1:])
    return prod(shape[ca:]), 1


@register
class Scale(Op):
    type = "Scale"
    version = 1
    opsets = "irnorm1"
    schema = AttrSchema([
        Attr("mode", enum("uniform", "channel", "elementwise"), doc="any letter case"),
        optional("channel_axis", parse_int, 1, doc="axis the channel/elementwise coefficients address"),
    ])
    inputs = (4, 4)
    doc = ("TensorRT IScaleLayer: (data * scale + shift) ** power. Inputs data (T), scale, shift, power "
           "(f32/f16/bf16; zero elements = default 1/0/1); output T. Coefficient count: uniform 1, channel "
           "data.shape[channel_axis], elementwise prod(data.shape[channel_axis:]). T in f32, f16, bf16, i8; "
           "computed in float32; i8 output rounds half to even and saturates. Rank >= 4 is not enforced.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype not in DATA_TYPES:
            raise fail("IRN033", f"data must be f32, f16, bf16 or i8 (TensorRT's T), got {x.dtype}")
        for i, (name, _) in enumerate(COEFFS, start=1):
            if ctx.inputs[i].dtype not in COEFF_TYPES:
                raise fail("IRN033", f"{name} (input {i}) must be f32, f16 or bf16, got {ctx.inputs[i].dtype}")
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        mode = ctx.attrs["mode"]
        r = len(x.shape)
        ca = ctx.attrs["channel_axis"]
        if mode != "uniform" and not -r <= ca < r:
            rng = f"[{-r}, {r - 1}]" if r else "empty (data is a scalar)"
            raise fail("IRN023", f"channel_axis={ca} is out of range {rng} for data {fmt_shape(x.shape)} "
                                 f"(rank {r}) in {mode} mode")
        k_count, _ = coeff_layout(tuple(x.shape), mode, ca)
        for i, (name, default) in enumerate(COEFFS, start=1):
            shape = ctx.inputs[i].shape
            if shape is None or any(d == -1 for d in shape) or k_count == -1:
                continue
            count = int(np.prod(shape, dtype=np.int64))
            if count not in (0, k_count):
                what = {"uniform": "1 value",
                        "channel": f"{k_count} values (data dim {ca % r})",
                        "elementwise": f"{k_count} values (data dims {ca % r}..{r - 1} of {fmt_shape(x.shape)})"}
                raise fail("IRN032", f"{mode} mode needs {what[mode]} for {name}, or an empty tensor for the "
                                     f"default {default:g}; got {count} ({fmt_shape(shape)})")
        return [TensorInfo(tuple(x.shape), x.dtype)]

    def build(self, ctx: NodeContext):
        from ..ir.dtypes import ELEMENT_TYPES
        from ..kernels import scale as kernel

        mode = ctx.attrs["mode"]
        ca = ctx.attrs["channel_axis"]
        out_dtype = ELEMENT_TYPES[ctx.inputs[0].dtype]

        def coeffs(values, k_count):
            out = []
            for v, (_, default) in zip(values, COEFFS, strict=True):
                v = np.asarray(v).reshape(-1)
                if v.size == 0:
                    out.append(np.full(k_count, default, np.float32))
                else:
                    out.append(np.ascontiguousarray(v, dtype=np.float32))
            return out

        # static data shape and constant coefficients: the kernel's arguments are built once
        fixed_shape, fixed_args = None, ()
        x_info = ctx.inputs[0]
        if x_info.is_static and all(i.value is not None for i in ctx.inputs[1:]):
            fixed_shape = tuple(x_info.shape)
            k_count, inner = coeff_layout(fixed_shape, mode, ca)
            s, sh, p = coeffs([i.value for i in ctx.inputs[1:]], k_count)
            fixed_args = (s, sh, p, k_count, inner, out_dtype, kernel.power_mode(p))

        def run(ins):
            x = ins[0]
            if x.shape == fixed_shape:
                return [kernel.scale(x, *fixed_args)]
            k_count, inner = coeff_layout(x.shape, mode, ca)
            s, sh, p = coeffs(ins[1:], k_count)
            return [kernel.scale(x, s, sh, p, k_count, inner, out_dtype)]

        return run
