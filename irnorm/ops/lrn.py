"""LRN-1 (opset1+): local response normalization.

y = x / (bias + alpha / size^len(axes) * S)^beta, where S sums x^2 over a box: along each
axis in ``axes`` the window is [i - (size-1)//2, i + (size-1)//2] clipped to the tensor.
That is the rule OpenVINO's **reference** implementation uses: an even size covers size-1
elements (size=2 covers only the element itself) yet still divides alpha by size^len(axes).
The spec's prose omits the square, and its window example (b - size/2 : b + size/2 + 1) is
wider; ONNX LRN's window is asymmetric, so OpenVINO and ONNX differ for even sizes.

Inputs: data (float, any rank) and a constant 1-D integer ``axes`` (in [-r, r-1], unique:
the spec's alpha / size^len(axes) would be ambiguous with repeats; empty axes make S = x^2).
Attributes: ``alpha`` and ``bias`` (any float), ``beta`` (positive, per the spec), ``size``
(positive int).  Sums and the formula run in float64.

**CPU deviations** (OpenVINO 2026.4 CPU plugin, pinned by tests): it truncates ``bias``
to an integer (1.5 acts as 1); with any axes set other than [1] or exactly the spatial axes
[2..r-1] but containing all spatial axes (e.g. [1, 2, 3], [0, 2, 3]) it sums over the
spatial axes only; other sets (e.g. [2] on 4-D data, negative axes) fail to compile, and
empty axes crash the process.  irnorm follows the reference in all these cases.
"""

from __future__ import annotations

from ..ir.attrs import Attr, AttrSchema, at_least, parse_float, parse_int, positive
from .base import NodeContext, Op, TensorInfo, normalize_axes, register, require_float
from .mvn import constant_axes


@register
class LRN(Op):
    type = "LRN"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([
        Attr("alpha", parse_float, doc="scale of the window sum (divided by size^len(axes))"),
        Attr("beta", parse_float, check=positive, doc="exponent"),
        Attr("bias", parse_float, doc="offset; the CPU plugin truncates it to an integer"),
        Attr("size", parse_int, check=at_least(1), doc="window side; covers 2*((size-1)//2)+1 elements"),
    ])
    inputs = (2, 2)
    doc = ("data (float, any rank), axes (constant 1-D integer, unique, in [-r, r-1]; empty: S = x^2); "
           "y = x / (bias + alpha / size^len(axes) * S)^beta with S the sum of x^2 over OpenVINO's reference "
           "window [i-(size-1)//2, i+(size-1)//2] per axis (even sizes cover size-1 elements), in float64. "
           "OpenVINO's CPU plugin truncates bias to an integer and sums over the spatial axes only for axes "
           "sets other than [1] and [2..r-1].")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        t = require_float(ctx, 0, "data")
        constant_axes(ctx, 1, None if x.shape is None else len(x.shape), unique=True)
        return [TensorInfo(x.shape, t)]

    def build(self, ctx: NodeContext):
        from ..kernels.lrn import lrn  # lazy: validate never imports numba

        a = ctx.attrs

        def run(ins):
            x = ins[0]
            axes = normalize_axes([int(v) for v in ins[1].reshape(-1)], x.ndim)
            return [lrn(x, axes, a["alpha"], a["beta"], a["bias"], a["size"])]

        return run
