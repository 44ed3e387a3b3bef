"""Range-1 and Range-4: start, start + step, ... below stop (above, for a negative step).

Range-1 takes the inputs' common element type; Range-4 writes ``output_type``.  A step of 0 is an
error; the element count is checked before anything is allocated.  Constant inputs fold at load
time (the usual case: positions in a static export); otherwise the length is dynamic.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES
from .base import Kernel, NodeContext, Op, TensorInfo, fail, fmt_shape, register, runtime_error

MAX_ELEMENTS = 1 << 40


def _scalar(v: np.ndarray) -> float:
    return np.asarray(v).reshape(-1)[0].item()


def count(start: float, stop: float, step: float) -> int:
    if step == 0:
        raise ValueError("step must not be 0")
    if any(isinstance(v, float) and not math.isfinite(v) for v in (start, stop, step)):
        raise ValueError("start, stop and step must be finite")
    n = max(math.ceil((stop - start) / step), 0)
    if n > MAX_ELEMENTS:
        raise ValueError(f"the range has {n} elements: absurd size")
    return n


def make_range(start, stop, step, dtype: np.dtype) -> np.ndarray:
    n = count(start, stop, step)
    if dtype.kind in "iu":
        start, step = int(start), int(step)
    return (start + step * np.arange(n, dtype=np.float64 if dtype.kind == "f" else np.int64)).astype(dtype)


class _Range(Op):
    type = "Range"
    inputs = (3, 3)

    def _out_type(self, ctx: NodeContext) -> str:
        raise NotImplementedError

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        for i, what in enumerate(("start", "stop", "step")):
            info = ctx.inputs[i]
            if info.shape is not None and any(d not in (1, -1) for d in info.shape):
                raise fail("IRN032", f"{what} must hold one value, got {fmt_shape(info.shape)}")
            if info.dtype not in FLOAT_TYPES + INT_TYPES:
                raise fail("IRN033", f"{what} must be numeric, got {info.dtype}")
        t = self._out_type(ctx)
        if all(i.value is not None for i in ctx.inputs):
            try:
                v = make_range(*(_scalar(i.value) for i in ctx.inputs), ELEMENT_TYPES[t])
            except ValueError as e:
                raise fail("IRN032", str(e)) from None
            return [TensorInfo((len(v),), t, v)]
        return [TensorInfo((-1,), t)]

    def build(self, ctx: NodeContext) -> Kernel:
        dt, layer = ELEMENT_TYPES[self._out_type(ctx)], ctx.layer

        def run(ins):
            try:
                return [make_range(*(_scalar(v) for v in ins), dt)]
            except ValueError as e:
                raise runtime_error(layer, str(e)) from None

        return run


@register
class Range1(_Range):
    version = 1
    opsets = (1, 3)
    doc = "start, stop, step of one numeric type; the output has that type."

    def _out_type(self, ctx: NodeContext) -> str:
        t = {i.dtype for i in ctx.inputs}
        if len(t) != 1:
            raise fail("IRN033", f"start, stop and step must share one element type, got {sorted(t)}")
        return t.pop()


@register
class Range4(_Range):
    version = 4
    opsets = (4, None)
    schema = AttrSchema([Attr("output_type", enum(*(FLOAT_TYPES + INT_TYPES)))])
    doc = "start, stop, step of any numeric types; output_type decides the output's."

    def _out_type(self, ctx: NodeContext) -> str:
        return ctx.attrs["output_type"]
