"""FakeQuantize-1: element-wise linear quantization of floating-point data into ``levels`` values.

* Inputs: data, input_low, input_high, output_low, output_high, all of one floating-point type.
  ``auto_broadcast=numpy`` (default) broadcasts the four limits -- and the data -- to a common
  shape (OpenVINO merges all five shapes into the output's, so the output may be larger than the
  data); ``none`` needs five equal shapes.
* ``levels`` >= 2 (the spec's range; IRN023 otherwise).
* Per element, with ``lo = min(il, ih)`` and ``hi = max(il, ih)``: ``x <= lo`` gives ``ol``,
  ``x > hi`` gives ``oh``, otherwise
  ``round((x - il) / (ih - il) * (levels - 1)) / (levels - 1) * (oh - ol) + ol``, rounding half to
  even -- OpenVINO's reference (fake_quantize.hpp) in the data's type, f16/bf16 in float32 and
  rounded once.  So an inverted range (il > ih) quantizes the mirrored way the reference does, and
  il == ih splits at il (ol at or below, oh above).  OpenVINO's CPU plugin departs from the
  reference on il == ih: it returns NaN everywhere (docs/ir-format.md section 12); irnorm follows the
  spec.

The kernel (irnorm/kernels/quantize.py, Numba) walks the output once with each operand's
broadcast strides; the limits of a per-tensor or per-channel quantization are hoisted out of the
inner loop.
"""

from __future__ import annotations

from ..ir.attrs import Attr, AttrSchema, at_least, parse_int
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, cast, compute_dtype
from .base import (
    AUTO_BROADCAST,
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    broadcast_shape,
    fail,
    register,
    runtime_error,
)

NAMES = ("data", "input_low", "input_high", "output_low", "output_high")


def out_shape(shapes: list, mode: str) -> tuple[int, ...] | None:
    """The common shape of the five operands (numpy rule or all equal); IRN032 names the pair."""
    s = shapes[0]
    for k in range(1, 5):
        s = broadcast_shape(s, shapes[k], mode, (NAMES[0] if k == 1 else "the broadcast so far", NAMES[k]))
    return s


@register
class FakeQuantize(Op):
    type = "FakeQuantize"
    version = 1
    opsets = (1, None)
    inputs = (5, 5)
    schema = AttrSchema([Attr("levels", parse_int, check=at_least(2)), AUTO_BROADCAST])
    doc = ("quantize floats to `levels` values: clip to [input_low, input_high], round half to even, map to "
           "[output_low, output_high]; limits broadcast (numpy or none).")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype not in FLOAT_TYPES:
            raise fail("IRN033", f"data must be a floating-point tensor, got {x.dtype}")
        for k in range(1, 5):
            if ctx.inputs[k].dtype != x.dtype:
                raise fail("IRN033", f"{NAMES[k]} (input {k}) has element type {ctx.inputs[k].dtype}, expected "
                                     f"{x.dtype} (the data's)")
        shapes = [i.shape for i in ctx.inputs]
        return [TensorInfo(out_shape(shapes, ctx.attrs["auto_broadcast"]), x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import quantize as kernel

        levels, mode, layer = ctx.attrs["levels"], ctx.attrs["auto_broadcast"], ctx.layer
        dt = ELEMENT_TYPES[ctx.inputs[0].dtype]
        cdt = compute_dtype(dt)

        def run(ins):
            try:
                shape = out_shape([a.shape for a in ins], mode)
            except Exception as e:
                raise runtime_error(layer, str(getattr(e, "message", e))) from None
            y = kernel.fake_quantize(*ins, levels, shape, cdt)
            return [y if y.dtype == dt else cast(y, dt)]

        return run
