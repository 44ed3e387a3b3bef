"""NormalizeL2-1 (OpenVINO opset1+).

y = x / sqrt(eps_mode(sum over axes of x^2, eps)), eps_mode add: s + eps, max: max(s, eps).
Empty axes follow the spec at every rank: 0 where x == 0, 1 elsewhere (NaN stays NaN).
OpenVINO's CPU plugin (2026.4) applies that rule only at ranks 2-4: it returns
x/sqrt(x^2+eps) (about sign(x)) at ranks 1 and 5, and values matching neither at rank 6.
eps is kept as float32, as in OpenVINO (eps="1e39" acts as inf: all outputs 0).
Pinned in tests/test_conformance_normalize_l2.py, with the CPU's float32 sum of squares
overflowing at |x| ~ 1e20.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum, parse_float, positive
from .base import NodeContext, Op, TensorInfo, constant_axes, normalize_axes, register, require_float


@register
class NormalizeL2(Op):
    type = "NormalizeL2"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([
        Attr("eps", parse_float, check=positive, doc="float32 in OpenVINO"),
        Attr("eps_mode", enum("add", "max")),
    ])
    inputs = (2, 2)
    doc = ("data (any rank, float), axes (constant scalar or 1-D integer, unique, in [-r, r-1]). "
           "Sum of squares accumulated in float64. Empty axes: spec rule at every rank (see module notes).")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        t = require_float(ctx, 0, "data")
        if x.shape is not None:
            constant_axes(ctx, 1, len(x.shape))
        return [TensorInfo(x.shape, t)]

    def build(self, ctx: NodeContext):
        from ..kernels import moments  # lazy: validate and --help never import numba

        with np.errstate(over="ignore"):  # OpenVINO keeps eps as float32: 1e39 becomes inf (output 0), no warning
            eps = float(np.float32(ctx.attrs["eps"]))
        mode = moments.L2_ADD if ctx.attrs["eps_mode"] == "add" else moments.L2_MAX

        def run(ins):
            x = ins[0]
            axes = normalize_axes([int(a) for a in np.asarray(ins[1]).reshape(-1)], x.ndim)
            if not axes:
                return [empty_axes_rule(x)]
            return [moments.normalize(x, axes, mode, eps, center=False)]

        return run


def empty_axes_rule(x: np.ndarray) -> np.ndarray:
    """Each element divided by itself: 0 for zeros, 1 otherwise, NaN for NaN."""
    one = np.ones((), x.dtype)
    y = np.where(x == 0, np.zeros((), x.dtype), one).astype(x.dtype)
    return np.where(np.isnan(x.astype(np.float32)), x, y)
