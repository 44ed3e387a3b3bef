"""SoftMax-1 (axis >= 0), SoftMax-8 (axis in [-rank, rank-1]) and LogSoftmax-5: exp(x - max) / sum
along one axis (log-softmax: x - max - log(sum)), on float data; f16/bf16 compute in float32 and
round once.  A row of -inf gives NaN (0/0), as the formula does.  float32 softmax has no subnormal
results (OpenVINO's CPU plugin flushes them too; a subnormal costs every later product a microcode
assist per use): kernels/softmax.py FLUSH_BELOW.  Kernel: irnorm.kernels.softmax."""

from __future__ import annotations

from typing import ClassVar

from ..ir.attrs import AttrSchema, optional, parse_int
from ..ir.dtypes import cast, compute_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, fail, register, require_float


class _Softmax(Op):
    log: ClassVar[bool] = False
    negative_axis: ClassVar[bool] = True

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        t = require_float(ctx, 0, "data")
        x = ctx.inputs[0]
        if x.shape is not None:
            self._axis(ctx.attrs["axis"], len(x.shape))
        return [TensorInfo(x.shape, t)]

    def _axis(self, axis: int, rank: int) -> int:
        lo = -rank if self.negative_axis else 0
        if not lo <= axis < max(rank, 1):
            raise fail("IRN023", f"axis={axis} is out of range [{lo}, {max(rank, 1) - 1}] for rank {rank}")
        return axis % max(rank, 1)

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels.softmax import softmax  # lazy: validate never imports numba

        axis, log = ctx.attrs["axis"], self.log

        def run(ins):
            x = ins[0]
            if x.ndim == 0:
                y = softmax(x.reshape(1), 0, compute_dtype(x.dtype), log).reshape(())
            else:
                y = softmax(x, self._axis(axis, x.ndim), compute_dtype(x.dtype), log)
            return [y if y.dtype == x.dtype and y.flags.c_contiguous else cast(y, x.dtype)]  # y is fresh

        return run


@register
class SoftMax1(_Softmax):
    type = "SoftMax"
    version = 1
    opsets = (1, 7)
    negative_axis = False
    schema = AttrSchema([optional("axis", parse_int, 1)])
    doc = ("exp(x - max) / sum along axis (0 <= axis < rank, default 1); float data; float32 results below the "
           "smallest normal are 0, as in OpenVINO's CPU plugin.")


@register
class SoftMax8(_Softmax):
    type = "SoftMax"
    version = 8
    opsets = (8, None)
    schema = AttrSchema([optional("axis", parse_int, 1)])
    doc = "SoftMax-1 with negative axes (counted from the back)."


@register
class LogSoftmax(_Softmax):
    type = "LogSoftmax"
    version = 5
    opsets = (5, None)
    log = True
    schema = AttrSchema([optional("axis", parse_int, 1)])
    doc = "x - max - log(sum(exp(x - max))) along axis (negative counts from the back, default 1); float data."
