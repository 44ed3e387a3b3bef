"""DeformableConvolution-1 (opset1..7) and DeformableConvolution-8 (opset8+): a 2-D convolution whose taps
are sampled at learned offsets (bilinear interpolation), DeformableConvolution-8 optionally scaling each
sample by a mask (modulated deformable convolution, DCNv2; torchvision.ops.deform_conv2d exports to it).

* Inputs: data ``[N, C_in, H, W]``, offsets ``[N, 2*DG*kh*kw, Ho, Wo]``, filters ``[C_out, C_in/G, kh, kw]``
  and (-8 only) mask ``[N, DG*kh*kw, Ho, Wo]``.  Data, offsets and filters share one floating-point type;
  the mask may be of any floating-point or integer type.  The output is ``[N, C_out, Ho, Wo]`` with Ho, Wo
  as a Convolution's (strides, pads_begin/pads_end, dilations, auto_pad; forward_geometry in
  convolution.py) and must equal the offsets' and the mask's spatial dims.
* ``group`` G splits C_in and C_out; ``deformable_group`` DG splits C_in into DG runs of channels that
  share one set of offsets (and mask): for channel c and tap k = i*kw + j the offsets are channels
  ``2*(dg*K + k)`` (the y, row offset) and ``2*(dg*K + k) + 1`` (x), dg = c // (C_in/DG), K = kh*kw.
* ``bilinear_interpolation_pad`` (-8, default false; -1 behaves as false): what a sample near the border
  reads -- see irnorm/kernels/deformable.py and docs/ir-format.md ("DeformableConvolution").

C_in must be divisible by DG: OpenVINO's shape inference does not ask it, but its CPU plugin then reads
outside its sampling tables (docs/ir-format.md).  Floating-point data only (irnorm refuses integer data,
which OpenVINO computes in float32).  f16/bf16 compute in float32 and round once; f64 in float64.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import AttrSchema, optional, parse_bool, parse_int
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, cast, compute_dtype
from .base import (
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    fail,
    fmt_shape,
    merge_dim,
    register,
    require_same_type,
    same_dim,
)
from .convolution import _common_attrs, _runtime, _spatial_attrs, forward_geometry

_NAMES = ("data (input 0)", "offsets (input 1)", "filters (input 2)", "mask (input 3)")
GROUP_MAX = 2**31 - 1


def _group_check(name: str):
    def check(v: int) -> str | None:
        return None if 1 <= v <= GROUP_MAX else f"{name} must be in [1, {GROUP_MAX}], got {v}"

    check.__name__ = ">= 1"
    return check


def _schema(with_pad: bool) -> AttrSchema:
    attrs = _common_attrs() + [
        optional("group", parse_int, 1, check=_group_check("group"), doc="groups of C_in and C_out (>= 1)"),
        optional("deformable_group", parse_int, 1, check=_group_check("deformable_group"),
                 doc="groups of C_in sharing one set of offsets (>= 1)"),
    ]
    if with_pad:
        attrs.append(optional("bilinear_interpolation_pad", parse_bool, False,
                              doc="true: samples within one pixel outside the data blend with zeros"))
    return AttrSchema(attrs)



def _geometry(attrs: dict, x, off, w, mask, g: int, dg: int) -> tuple[tuple[int, ...], list[int]]:
    """Check the four shapes (-1 = unknown) against one another and the attributes; return the output shape
    and the pads at the beginning (-1 where unknown).  Raises IRN032."""
    if x[1] != -1:
        if x[1] % g:
            raise fail("IRN032", f"data has C_in={x[1]} channels, not divisible by group={g}")
        if x[1] % dg:
            raise fail("IRN032", f"data has C_in={x[1]} channels, not divisible by deformable_group={dg}")
    if w[0] != -1 and w[0] % g:
        raise fail("IRN032", f"filters {fmt_shape(w)} have C_out={w[0]} channels, not divisible by group={g}")
    if x[1] != -1 and w[1] != -1 and x[1] != w[1] * g:
        raise fail("IRN032", f"data has C_in={x[1]} channels but the filters {fmt_shape(w)} with group={g} expect "
                             f"{w[1]}*{g} = {w[1] * g}")
    k = -1 if w[2] == -1 or w[3] == -1 else w[2] * w[3]
    if k != -1 and off[1] != -1 and off[1] != 2 * dg * k:
        raise fail("IRN032", f"offsets {fmt_shape(off)} have {off[1]} channels, expected 2*deformable_group*kh*kw = "
                             f"2*{dg}*{w[2]}*{w[3]} = {2 * dg * k}")
    if mask is not None and k != -1 and mask[1] != -1 and mask[1] != dg * k:
        raise fail("IRN032", f"mask {fmt_shape(mask)} has {mask[1]} channels, expected deformable_group*kh*kw = "
                             f"{dg}*{w[2]}*{w[3]} = {dg * k}")
    n = x[0]
    for name, s in (("offsets", off), ("mask", mask)):
        if s is not None:
            if not same_dim(n, s[0]):
                raise fail("IRN032", f"{name} {fmt_shape(s)} and data {fmt_shape(x)} disagree on the batch (dim 0)")
            n = merge_dim(n, s[0])
    a = _spatial_attrs(attrs, 2, ("strides", "dilations", "pads_begin", "pads_end"))
    out, begin = forward_geometry(x[2:], w[2:], a, attrs["auto_pad"])
    for name, s in (("offsets", off), ("mask", mask)):
        if s is None:
            continue
        for i in range(2):
            if not same_dim(out[i], s[2 + i]):
                raise fail("IRN032", f"{name} {fmt_shape(s)} has spatial dims {list(s[2:])} but the output's are "
                                     f"{out} (data {fmt_shape(x)}, filters {fmt_shape(w)})")
            out[i] = merge_dim(out[i], s[2 + i])
    return (n, w[0]) + tuple(out), begin


class _DeformableBase(Op):
    type = "DeformableConvolution"
    uses_blas = True
    with_mask = False

    def _checked(self, ctx: NodeContext) -> tuple[str, list]:
        t = ctx.inputs[0].dtype
        if t not in FLOAT_TYPES:
            raise fail("IRN033", f"data must be a floating-point tensor, got {t} (irnorm has no integer "
                                 f"DeformableConvolution)")
        require_same_type(ctx, 0, 1, _NAMES[1])
        require_same_type(ctx, 0, 2, _NAMES[2])
        if len(ctx.inputs) > 3:
            mt = ctx.inputs[3].dtype
            if mt not in FLOAT_TYPES + INT_TYPES:
                raise fail("IRN033", f"{_NAMES[3]} must be a numeric tensor, got {mt}")
        shapes = []
        for i, info in enumerate(ctx.inputs):
            if info.shape is not None and len(info.shape) != 4:
                raise fail("IRN032", f"{_NAMES[i]} must be 4-D, got {fmt_shape(info.shape)}")
            shapes.append(info.shape if info.shape is not None else (-1,) * 4)
        return t, shapes

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        t, s = self._checked(ctx)
        a = ctx.attrs
        out, _ = _geometry(a, s[0], s[1], s[2], s[3] if len(s) > 3 else None, a["group"], a["deformable_group"])
        return [TensorInfo(out, t)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import deformable  # lazy: validate never imports numba

        a = ctx.attrs
        dtype = ELEMENT_TYPES[ctx.inputs[0].dtype]
        work = compute_dtype(dtype)
        g, dg = a["group"], a["deformable_group"]
        pad = bool(a.get("bilinear_interpolation_pad", False))
        # The CPU plugin's JIT path (one group, the filters' channel dims known when it compiles) reads a
        # corner whose weight is -0.0; its reference path (groups) does not (docs/ir-format.md).
        wshape = ctx.inputs[2].shape
        neg_zero_reads = g == 1 and wshape is not None and wshape[0] != -1 and wshape[1] != -1
        wconst = ctx.inputs[2].value
        w_ready = np.ascontiguousarray(np.asarray(wconst).astype(work)) if wconst is not None else None

        @_runtime(ctx)
        def run(ins):
            x, off, w = ins[0], ins[1], ins[2]
            mask = ins[3] if len(ins) > 3 else None
            for i, arr in enumerate(ins):
                if arr.ndim != 4:
                    raise fail("IRN032", f"{_NAMES[i]} must be 4-D, got {fmt_shape(arr.shape)}")
            out_shape, begin = _geometry(a, x.shape, off.shape, w.shape, None if mask is None else mask.shape, g, dg)
            size = int(np.prod(out_shape, dtype=object)) * work.itemsize
            if size >= 2**62:
                raise fail("IRN032", f"the output {fmt_shape(out_shape)} needs {size} bytes: cannot allocate")
            ac = _spatial_attrs(a, 2, ("strides", "dilations", "pads_begin", "pads_end"))
            try:
                y = deformable.deformable_conv2d(
                    x.astype(work, copy=False), off.astype(work, copy=False),
                    w_ready if w_ready is not None else w.astype(work, copy=False),
                    None if mask is None else cast(mask, work), g, dg, ac["strides"], ac["dilations"], begin,
                    out_shape[2:], pad, neg_zero_reads)
            except MemoryError:
                raise fail("IRN032", f"the output {fmt_shape(out_shape)} (or its column matrix) cannot be "
                                     f"allocated") from None
            return [y if y.dtype == dtype else cast(y, dtype)]

        return run


@register
class DeformableConvolution1(_DeformableBase):
    version = 1
    opsets = (1, 7)
    schema = _schema(False)
    inputs = (3, 3)
    doc = ("2-D deformable convolution: data [N, C_in, H, W], offsets [N, 2*DG*kh*kw, Ho, Wo], filters "
           "[C_out, C_in/G, kh, kw]; strides, pads, dilations, auto_pad, group, deformable_group; a Numba "
           "bilinear sampling pass builds the column matrix, BLAS GEMM per group.")


@register
class DeformableConvolution8(_DeformableBase):
    version = 8
    opsets = (8, None)
    schema = _schema(True)
    inputs = (3, 4)
    doc = ("DeformableConvolution-1 plus an optional mask [N, DG*kh*kw, Ho, Wo] scaling each sample (DCNv2) and "
           "bilinear_interpolation_pad (samples up to one pixel outside the data blend with zeros); "
           "Numba sampling (threads over taps x pixel chunks) + BLAS GEMM per group.")
