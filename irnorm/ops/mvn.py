"""MVN-1 (opset1..opset5) and MVN-6 (opset6+): mean-variance normalization.

Both compute d = x - mean(x, axes) and, with ``normalize_variance``, divide d by
sqrt(var + eps) (``inside_sqrt``) or sqrt(var) + eps (``outside_sqrt``, MVN-6 only),
var being the biased variance (the mean of d^2, as in OpenVINO's reference and CPU
plugin; the MVN-6 spec's formula writes a sum).  Statistics come from the shared
moments engine (float64 accumulation); f16/bf16 data is computed in float32 and
returned in its own type.

MVN-1 (``version`` opset2..opset5; ``opset1`` is mapped to it as OpenVINO does, although
opset1 has no MVN): attributes ``across_channels`` (default false), ``reduction_axes``
(optional), ``normalize_variance`` (default false, as OpenVINO's reader), ``eps`` (double,
required).  OpenVINO's serializer writes both ``across_channels`` and ``reduction_axes``;
a non-empty ``reduction_axes`` wins (OpenVINO recomputes across_channels from it), an
empty or absent one gives [1..r-1] when across_channels is true, else [2..r-1] (empty at
rank 2: all zeros).  reduction_axes is an unsigned AxisSet in OpenVINO, so its values
must lie in [0, r-1] and be unique.  **CPU deviation:** OpenVINO's CPU plugin ignores
reduction_axes except through the recomputed across_channels (axis 1 present or not):
``reduction_axes="3"`` on a 4-D input runs over [2, 3], ``"0"`` over [2, 3], ``"1"`` over
[1, 2, 3].  irnorm follows reduction_axes, as OpenVINO's reference implementation does.

MVN-6: inputs data and a constant 1-D integer ``axes`` (negative, unsorted; repeated
axes act as a set, as in OpenVINO, which however rejects more axes values than the data's
rank); attributes ``normalize_variance``, ``eps`` (float32)
and ``eps_mode`` (inside_sqrt | outside_sqrt, any letter case; the serializer writes upper
case), all required.  **Empty axes** follow OpenVINO's reference (constant folding):
mean == x, so the output is all zeros (NaN if eps == 0 and normalize_variance).
**CPU deviation:** OpenVINO's CPU plugin (2026.4) agrees at ranks 1 and 3-5 but returns
the input unchanged at rank 2 and wrong values at rank >= 6.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum, non_negative, optional, parse_bool, parse_float, parse_int_list
from .base import NodeContext, Op, TensorInfo, fail, normalize_axes, register, require_float
from .base import constant_axes as base_constant_axes


def constant_axes(ctx: NodeContext, index: int, rank: int | None, what: str = "axes", *,
                  unique: bool) -> list[int] | None:
    """A constant 1-D integer axes input normalized to [0, rank) (None when the rank is unknown)."""
    return base_constant_axes(ctx, index, rank, what, unique=unique, scalar_ok=False, where=f" (input {index})")


def _mode(normalize_variance: bool, eps_mode: str, moments) -> int:
    if not normalize_variance:
        return moments.CENTER_ONLY
    return moments.INSIDE_SQRT if eps_mode == "inside_sqrt" else moments.OUTSIDE_SQRT


@register
class MVN1(Op):
    type = "MVN"
    version = 1
    opsets = (1, 5)  # opset1 has no MVN; OpenVINO's reader maps it to opset2's MVN-1
    schema = AttrSchema([
        optional("across_channels", parse_bool, False, doc="used only when reduction_axes is empty or absent"),
        optional("reduction_axes", parse_int_list, (), doc="wins over across_channels when non-empty"),
        optional("normalize_variance", parse_bool, False),
        Attr("eps", parse_float, check=non_negative, doc="double; inside the sqrt"),
    ])
    doc = ("data (float, any rank); axes = reduction_axes (unique, in [0, r-1]) if non-empty, else [1..r-1] "
           "(across_channels) or [2..r-1]; (x - mean) / sqrt(var + eps), or x - mean. OpenVINO's CPU plugin "
           "looks only at whether reduction_axes holds axis 1 (then [1..r-1], else [2..r-1]).")

    @staticmethod
    def axes(attrs: dict, rank: int) -> list[int]:
        """The effective reduction axes at a given rank (checked)."""
        given = attrs["reduction_axes"]
        if given:
            bad = [a for a in given if not 0 <= a < rank]
            if bad:
                raise fail("IRN023", f"reduction_axes value {bad[0]} is out of range [0, {rank - 1}] for rank "
                                     f"{rank} (MVN-1 axes are unsigned)")
            if len(set(given)) != len(given):
                raise fail("IRN023", f"reduction_axes {given} has repeated axes")
            return sorted(given)
        return list(range(1 if attrs["across_channels"] else 2, rank))

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        t = require_float(ctx, 0, "data")
        if x.shape is not None:
            self.axes(ctx.attrs, len(x.shape))
        return [TensorInfo(x.shape, t)]

    def build(self, ctx: NodeContext):
        from ..kernels import moments  # lazy: validate never imports numba

        attrs = ctx.attrs
        mode = _mode(attrs["normalize_variance"], "inside_sqrt", moments)
        eps = float(attrs["eps"])

        def run(ins):
            x = ins[0]
            return [moments.normalize(x, self.axes(attrs, x.ndim), mode, eps, out_dtype=x.dtype)]

        return run


@register
class MVN6(Op):
    type = "MVN"
    version = 6
    opsets = (6, None)
    schema = AttrSchema([
        Attr("normalize_variance", parse_bool),
        Attr("eps", parse_float, check=non_negative, doc="float32 in OpenVINO"),
        Attr("eps_mode", enum("inside_sqrt", "outside_sqrt"), doc="any letter case"),
    ])
    inputs = (2, 2)
    doc = ("data (float, any rank), axes (constant 1-D integer, in [-r, r-1], any order, repeats act as a set); "
           "(x - mean) / sqrt(var + eps) or / (sqrt(var) + eps), or x - mean. Empty axes give zeros "
           "(OpenVINO's reference; its CPU plugin differs at rank 2 and >= 6).")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        t = require_float(ctx, 0, "data")
        axes = constant_axes(ctx, 1, None if x.shape is None else len(x.shape), unique=False)
        if axes is not None and len(axes) > len(x.shape):  # OpenVINO's rule, even when repeats collapse
            raise fail("IRN032", f"axes has {len(axes)} values but data has rank {len(x.shape)}")
        return [TensorInfo(x.shape, t)]

    def build(self, ctx: NodeContext):
        from ..kernels import moments  # lazy: validate never imports numba

        mode = _mode(ctx.attrs["normalize_variance"], ctx.attrs["eps_mode"], moments)
        eps = float(np.float32(ctx.attrs["eps"]))

        def run(ins):
            x = ins[0]
            axes = sorted(set(normalize_axes([int(a) for a in np.asarray(ins[1]).reshape(-1)], x.ndim)))
            return [moments.normalize(x, axes, mode, eps, out_dtype=x.dtype)]

        return run
