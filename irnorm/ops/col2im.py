"""Col2Im-15 (torch ``F.fold``): sum sliding blocks back into an image.

Inputs: data ``[N, C*kh*kw, L]`` (or unbatched ``[C*kh*kw, L]``), ``output_size`` [H, W] and
``kernel_size`` [kh, kw] (1-D i32/i64 of 2 elements, constant or not: OpenVINO's shape inference takes
either, and dims it cannot know are -1).  Attributes ``strides`` (default 1, 1), ``dilations`` (1, 1),
``pads_begin`` and ``pads_end`` (0, 0), two values each.  Output ``[N, C, H, W]`` (``[C, H, W]``) of the
data's type: column ``(c*kh + i)*kw + j`` of block ``(by, bx)`` is added at pixel
``(by*sh - ph + i*dh, bx*sw - pw + j*dw)`` when that lies inside the image.

L must equal the number of blocks ``bh*bw`` with ``b = (size + pad_begin + pad_end - (d*(k-1)+1)) // s + 1``
per axis, or 0 when the dilated kernel is larger than the padded image (IRN032 at load, IRN064 at run
time); ``C*kh*kw`` must be divisible by ``kh*kw``; kernel sizes must be positive and output sizes
non-negative.  OpenVINO computes that block count in unsigned arithmetic: a kernel larger than the
padded image wraps around (with stride 1 and an overhang of one it gives 0, otherwise huge or negative
counts, or a product of two negatives that lets L = 1 through); and a file without the attributes
crashes its reader, which irnorm reads as the spec's defaults (docs/ir-format.md, section 11,
"Col2Im-15").
Dilation 0 is accepted as OpenVINO does (every kernel offset lands on one pixel); stride 0 is refused.

The kernel is Numba (irnorm/kernels/embedding.py): one task per (n, c) plane, every pixel summing its
contributions in OpenVINO's order; f16/bf16 sum in float32 and round once, integers wrap.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import AttrSchema, optional, parse_int_list
from ..ir.dtypes import FLOAT_TYPES, INT_TYPES, cast, compute_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, fail, fmt_shape, register, runtime_error

# Attribute values stay in int32 range so the kernel's int64 index arithmetic cannot overflow.
ATTR_MAX = 2**31 - 1
# Bytes irnorm refuses to allocate for an output sized by a run-time value.
ABSURD_BYTES = 1 << 46


def _pair(minimum: int, what: str):
    def check(v: list[int]) -> str | None:
        if len(v) != 2:
            return f"{what} must hold 2 values (height, width), got {v}"
        if not all(minimum <= x <= ATTR_MAX for x in v):
            return f"{what} must all be in [{minimum}, {ATTR_MAX}], got {v}"
        return None

    check.__name__ = f"2 values in [{minimum}, 2**31-1]"
    return check


def blocks(size: int, k: int, s: int, d: int, pb: int, pe: int) -> int:
    """Sliding blocks along one axis (0 when the dilated kernel does not fit the padded size)."""
    span = size + pb + pe - (d * (k - 1) + 1)
    return span // s + 1 if span >= 0 else 0


def _geometry(sizes: list[int], kernel: list[int], a: dict, c_cols: int, length: int
              ) -> tuple[int, tuple[int, int]] | str:
    """(C, (bh, bw)) or why the inputs do not fit."""
    if any(k <= 0 for k in kernel):
        return f"kernel_size {kernel} must be positive"
    if any(v < 0 for v in sizes):
        return f"output_size {sizes} must be non-negative"
    kk = kernel[0] * kernel[1]
    if c_cols % kk:
        return f"data's dim of {c_cols} columns is not divisible by kh*kw = {kk} (kernel_size {kernel})"
    bh, bw = (blocks(sizes[d], kernel[d], a["strides"][d], a["dilations"][d], a["pads_begin"][d], a["pads_end"][d])
              for d in range(2))
    if length != -1 and length != bh * bw:
        return (f"data holds {length} blocks, but output_size {sizes}, kernel_size {kernel}, strides "
                f"{a['strides']}, dilations {a['dilations']} and pads {a['pads_begin']}/{a['pads_end']} make "
                f"{bh} x {bw} = {bh * bw}")
    return c_cols // kk, (bh, bw)


def _pair_input(ctx: NodeContext, port: int, what: str) -> list[int] | None:
    info = ctx.inputs[port]
    if info.dtype not in ("i32", "i64"):
        raise fail("IRN033", f"{what} (input {port}) must be i32 or i64, got {info.dtype}")
    if info.shape is not None and (len(info.shape) != 1 or info.shape[0] not in (2, -1)):
        raise fail("IRN032", f"{what} (input {port}) must be 1-D with 2 elements, got {fmt_shape(info.shape)}")
    if info.value is None:
        return None
    return [int(v) for v in np.asarray(info.value).reshape(-1)]


@register
class Col2Im(Op):
    type = "Col2Im"
    version = 15
    opsets = (15, None)
    inputs = (3, 3)
    schema = AttrSchema([
        optional("strides", parse_int_list, [1, 1], check=_pair(1, "strides"), doc="2 values >= 1"),
        optional("dilations", parse_int_list, [1, 1], check=_pair(0, "dilations"), doc="2 values >= 0"),
        optional("pads_begin", parse_int_list, [0, 0], check=_pair(0, "pads_begin"), doc="2 values >= 0"),
        optional("pads_end", parse_int_list, [0, 0], check=_pair(0, "pads_end"), doc="2 values >= 0"),
    ])
    doc = ("sums sliding blocks [N, C*kh*kw, L] into an image [N, C, H, W] (torch fold); output_size, "
           "kernel_size inputs; strides, dilations, pads.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype not in FLOAT_TYPES + INT_TYPES:
            raise fail("IRN033", f"data must be a numeric tensor, got {x.dtype}")
        sizes = _pair_input(ctx, 1, "output_size")
        kernel = _pair_input(ctx, 2, "kernel_size")
        if (sizes is not None and len(sizes) != 2) or (kernel is not None and len(kernel) != 2):
            raise fail("IRN032", "output_size and kernel_size must hold 2 values each")
        if x.shape is not None and len(x.shape) not in (2, 3):
            raise fail("IRN032", f"data must be [N, C*kh*kw, L] or [C*kh*kw, L], got {fmt_shape(x.shape)}")
        if kernel is not None and any(k <= 0 for k in kernel):
            raise fail("IRN032", f"kernel_size {kernel} must be positive")
        if sizes is not None and any(v < 0 for v in sizes):
            raise fail("IRN032", f"output_size {sizes} must be non-negative")
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        batched = len(x.shape) == 3
        c_cols, length = x.shape[-2], x.shape[-1]
        c = -1
        if kernel is not None and c_cols != -1:
            kk = kernel[0] * kernel[1]
            if c_cols % kk:
                raise fail("IRN032", f"data {fmt_shape(x.shape)}: {c_cols} columns are not divisible by kh*kw = {kk} "
                                     f"(kernel_size {kernel})")
            c = c_cols // kk
        if kernel is not None and sizes is not None and length != -1:
            got = _geometry(sizes, kernel, ctx.attrs, c_cols if c_cols != -1 else 0, length)
            if isinstance(got, str):
                raise fail("IRN032", got)
        hw = tuple(sizes) if sizes is not None else (-1, -1)
        return [TensorInfo(((x.shape[0],) if batched else ()) + (c,) + hw, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import embedding as kern  # lazy: validate never imports numba

        a, layer = ctx.attrs, ctx.layer

        def run(ins):
            x, os_, ks = ins
            if x.ndim not in (2, 3):
                raise runtime_error(layer, f"data must be [N, C*kh*kw, L] or [C*kh*kw, L], got {list(x.shape)}")
            if os_.shape != (2,) or ks.shape != (2,):
                raise runtime_error(layer, f"output_size {list(os_.shape)} and kernel_size {list(ks.shape)} must "
                                           "hold 2 values each")
            sizes, kernel = [int(v) for v in os_], [int(v) for v in ks]
            got = _geometry(sizes, kernel, a, x.shape[-2], x.shape[-1])
            if isinstance(got, str):
                raise runtime_error(layer, got)
            c, bhw = got
            x3 = x if x.ndim == 3 else x[None]
            nbytes = x3.shape[0] * c * sizes[0] * sizes[1] * x.dtype.itemsize
            if nbytes > ABSURD_BYTES:
                raise runtime_error(layer, f"output_size {sizes} asks for an absurd output size ({nbytes} bytes)")
            cdt = np.dtype(np.int64) if x.dtype.kind in "iu" else compute_dtype(x.dtype)
            if x.dtype == np.uint64:
                src = x3.view(np.int64)  # two's complement sums wrap alike
            else:
                src = x3.astype(cdt, copy=False)
            y = kern.col2im(src, c, (sizes[0], sizes[1]), (kernel[0], kernel[1]), tuple(a["strides"]),
                            tuple(a["dilations"]), tuple(a["pads_begin"]), bhw)
            if x.dtype == np.uint64:
                y = y.view(np.uint64)
            elif y.dtype != x.dtype:
                y = y.astype(x.dtype) if x.dtype.kind in "iu" else cast(y, x.dtype)
            return [y if x.ndim == 3 else y[0]]

        return run
