"""GroupNormalization-12 (OpenVINO opset12+).

y = (x - mean) / sqrt(var + epsilon) * scale[c] + bias[c], with mean and (biased)
variance over each (n, group) block of C/G channels x all spatial positions.

Where OpenVINO's CPU plugin (2026.4, f32 inference) differs, irnorm follows the formula
(pinned in tests/test_conformance_group_norm.py): the CPU's float32 mean is off by about an
ulp of the mean, so a constant group does not give exactly the bias (irnorm does) and mean 1e4
with std 1e-2 is off by > 5e-3 std (irnorm: < 1e-3); a bf16 GroupNormalization does not compile
on CPU (irnorm runs it in float32 and rounds once).
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, at_least, parse_float, parse_int, positive
from .base import NodeContext, Op, TensorInfo, fail, fmt_shape, register, require_float, require_same_type


@register
class GroupNormalization(Op):
    type = "GroupNormalization"
    version = 12
    opsets = (12, None)
    schema = AttrSchema([
        Attr("num_groups", parse_int, check=at_least(1), doc="G, in 1..C, divides C"),
        Attr("epsilon", parse_float, check=positive, doc="added to the variance"),
    ])
    inputs = (3, 3)
    doc = ("data [N,C,...] (rank >= 2), scale [C], bias [C]; statistics per (n, group) over C/G channels and "
           "all spatial positions, accumulated in float64, applied in float32 (float64 for f64); f16/bf16 "
           "data is converted on the way in and out.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, scale, bias = ctx.inputs
        t = require_float(ctx, 0, "data")
        require_same_type(ctx, 0, 1, "scale")
        require_same_type(ctx, 0, 2, "bias")
        if x.shape is None:
            return [TensorInfo(None, t)]
        if len(x.shape) < 2:
            raise fail("IRN032", f"data must be at least 2-D [N, C, ...], got {fmt_shape(x.shape)}")
        c = x.shape[1]
        g = ctx.attrs["num_groups"]
        for what, info in (("scale", scale), ("bias", bias)):
            if info.shape is not None:
                if len(info.shape) != 1:
                    raise fail("IRN032", f"{what} must be 1-D [C], got {fmt_shape(info.shape)}")
                if c != -1 and info.shape[0] != -1 and info.shape[0] != c:
                    raise fail("IRN032", f"{what} has {info.shape[0]} values but data has C={c} channels")
        if c != -1:
            if g > c:
                raise fail("IRN023", f"num_groups={g} exceeds the channel count C={c}")
            if c % g:
                raise fail("IRN023", f"C={c} channels are not divisible by num_groups={g}")
        return [TensorInfo(x.shape, t)]

    def build(self, ctx: NodeContext, activation: tuple[int, float, float] | None = None):
        """The kernel on [data, scale, bias].  With an `activation` (code, p0, p1: kernels.activation's codes;
        a planner fusion, float32/float64 data), the output is that activation of the normalized values,
        applied by the moments engine as each chunk is written."""
        from ..kernels import moments  # lazy: validate and --help never import numba

        g = ctx.attrs["num_groups"]
        eps = float(ctx.attrs["epsilon"])
        if activation is not None:
            from ..kernels.activation import bias_activation

        def rows(x: np.ndarray) -> tuple[tuple[int, int], int | None]:
            """(N*G, C/G * spatial) rows, and the per-channel affine's run length (`spatial` elements)."""
            n, c = x.shape[0], x.shape[1]
            spatial = x.size // (n * c) if n * c else 0
            return (n * g, (c // g) * spatial), (max(spatial, 1) if spatial else None)

        def general(ins):
            x, scale, bias = ins
            shape, seg_len = rows(x)
            y = moments.normalize(x.reshape(shape), [1], moments.INSIDE_SQRT, eps, scale=scale, bias=bias, o_mod=g,
                                  seg_len=seg_len, out_dtype=x.dtype)
            if activation is not None and y.size:  # scale or bias computed: the activation in place, a pass of its own
                y = bias_activation(y.reshape(x.shape), None, *activation)
            return [y.reshape(x.shape)]

        if ctx.inputs[1].value is None or ctx.inputs[2].value is None:
            return general
        # Constant scale and bias (as exports write them): the kernel call is bound once per input shape
        # (moments.normalizer, which normalize() itself builds on every call): a small layer's decisions
        # cost more than its normalization (MobileViTv2's [1, 48, 4, 4]: 5.8 -> 2.4 us).
        bound: dict[tuple, object] = {}

        def run(ins):
            x = ins[0]
            key = (x.shape, x.dtype)
            norm = bound.get(key)
            if norm is None:
                if x.size == 0:
                    return general(ins)
                shape, seg_len = rows(x)
                # the data and result in their own shape: a small call reshapes neither (two numpy reshapes
                # were ~0.6 us of MobileViTv2's 2.3 us [1, 48, 4, 4] step)
                norm = moments.normalizer(shape, x.dtype, [1], moments.INSIDE_SQRT, eps, scale=ins[1],
                                          bias=ins[2], o_mod=g, seg_len=seg_len, out_dtype=x.dtype,
                                          activation=activation, data_shape=x.shape)
                if len(bound) < 16:
                    bound[key] = norm
            return [norm(x)]

        def static_call(x: np.ndarray) -> np.ndarray:
            # the straight-line runner's form on a static model (runtime/plan.py): the data alone, the result
            # as it is (MobileViTv2 has 21 GroupNorm steps)
            norm = bound.get((x.shape, x.dtype))
            return norm(x) if norm is not None else run([x, ctx.inputs[1].value, ctx.inputs[2].value])[0]
        run.static_call = static_call  # type: ignore[attr-defined]
        return run
