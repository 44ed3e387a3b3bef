"""MaxPool-1/8/14, AvgPool-1/14/16 and AdaptiveAvgPool-8 / AdaptiveMaxPool-8 over 1 to 3 spatial dims
([N, C, spatial...]).

Output size per spatial dim, with the effective kernel ``e = dilation * (kernel - 1) + 1``:

* ``explicit`` (alias ``notset``): ``(in + pads_begin + pads_end - e) / stride + 1`` rounded by
  ``rounding_type``: ``floor``, ``ceil``, or ``ceil_torch`` (-14 only: ceil, minus one when the last
  window would start past ``in + pads_begin``, as PyTorch does);
* ``valid``: no padding, same rounding;
* ``same_upper`` / ``same_lower``: the padding that makes the floor size ``ceil(in / stride)``, split
  with the odd one at the end (upper) or the beginning (lower); the written pads are ignored, and the
  size then follows the rounding rule as for explicit pads (OpenVINO's shape inference: with ``ceil``
  it can be one more).

MaxPool skips taps outside the input (a window with none gives the type's lowest value, index 0,
as OpenVINO's reference and CPU plugin do for f32); its -8/-14 second output holds the flat index of each maximum
(the first one on ties), counted over the dims from ``axis`` on (``axis=0``: over the whole tensor),
in ``index_element_type`` (i32 or i64).  AvgPool divides by the taps inside the input when
``exclude-pad`` is true, else by the taps inside the padded extent.  f16/bf16 compute in float32 and
round once; f64 in float64.  Kernels: irnorm.kernels.pooling (Numba, parallel over planes and rows).

The adaptive ops take the output's spatial sizes as a second input (1-D i32/i64, one value per spatial
dim; torchvision's AlexNet and VGG export ``AdaptiveAvgPool2d((6, 6))`` / ``((7, 7))`` this way).  Window
``i`` of ``out`` along an axis of ``in`` elements is ``[floor(i * in / out), ceil((i + 1) * in / out))``:
windows may overlap, and ``out > in`` repeats elements.  AdaptiveMaxPool's second output is the flat index
of each maximum within its plane (``(d * H + h) * W + w``, the first maximum on ties, a NaN only when it is
the window's first tap), in ``index_element_type``.  Data must be floating-point (the spec's T); a spatial
dim of 0 pooled to a size above 0 is refused (IRN032: every window would be empty -- OpenVINO's reference
refuses it, its CPU plugin returns uninitialized memory).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum, optional, parse_bool, parse_int, parse_int_list
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, cast, compute_dtype
from .base import (
    Kernel,
    NodeContext,
    Op,
    RuleError,
    TensorInfo,
    fail,
    fmt_shape,
    int_list_length,
    partial_of,
    register,
    runtime_error,
    values_at,
)
from .reduce import lowest

AUTO_PAD = enum("explicit", "same_upper", "same_lower", "valid", "notset")


def _positive_list(what: str):
    def check(v: list[int]) -> str | None:
        bad = [x for x in v if not 1 <= x <= (1 << 31) - 1]
        return f"every {what} value must be in 1..2^31-1, got {bad[0]}" if bad else None

    return check


def _pad_list(v: list[int]) -> str | None:
    bad = [x for x in v if not 0 <= x <= (1 << 31) - 1]
    return f"pads must be in 0..2^31-1, got {bad[0]}" if bad else None


def _common(rounding: tuple[str, ...]) -> list[Attr]:
    return [
        Attr("strides", parse_int_list, check=_positive_list("stride")),
        optional("pads_begin", parse_int_list, [], check=_pad_list),
        optional("pads_end", parse_int_list, [], check=_pad_list),
        Attr("kernel", parse_int_list, check=_positive_list("kernel")),
        optional("rounding_type", enum(*rounding), "floor"),
        optional("auto_pad", AUTO_PAD, "explicit"),
    ]


def pool_geometry(spatial: tuple[int, ...], a: dict, dilations: list[int]) -> tuple[list[int], list[int], list[int]]:
    """(output spatial dims, pads at the beginning, pads at the end); -1 where unknown.  Raises IRN032
    when a window cannot fit."""
    n = len(spatial)
    out, begin, end = [], [], []
    for i in range(n):
        x, k, s, d = spatial[i], a["kernel"][i], a["strides"][i], dilations[i]
        eff = d * (k - 1) + 1
        mode = a["auto_pad"]
        if mode in ("same_upper", "same_lower"):
            if x == -1:
                out.append(-1)
                begin.append(-1)
                end.append(-1)
                continue
            o = -(-x // s)
            total = max(0, (o - 1) * s + eff - x)
            pb = total // 2 if mode == "same_upper" else total - total // 2
            pe = total - pb  # the size then follows the rounding rule below, as OpenVINO does
        else:
            pb, pe = (0, 0) if mode == "valid" else (a["pads_begin"][i], a["pads_end"][i])
        begin.append(pb)
        end.append(pe)
        if x == -1:
            out.append(-1)
            continue
        span = x + pb + pe - eff
        if span < 0:
            raise fail("IRN032", f"spatial dim {i}: the window ({eff} = {d}*({k}-1)+1) is larger than the padded "
                                 f"input ({x} + {pb} + {pe} = {x + pb + pe})")
        rounding = a["rounding_type"]
        o = (-(-span // s) if rounding in ("ceil", "ceil_torch") else span // s) + 1
        if rounding == "ceil_torch" and (o - 1) * s >= x + pb:
            o -= 1
        out.append(o)
    return out, begin, end


class _Pool(Op):
    opsets: ClassVar[tuple[int, int | None]]
    dilated: ClassVar[bool] = False

    def _check(self, ctx: NodeContext) -> tuple[str, tuple[int, ...] | None, list[int]]:
        x = ctx.inputs[0]
        t = x.dtype
        if t not in FLOAT_TYPES + INT_TYPES:
            raise fail("IRN033", f"data must be a numeric tensor, got {t}")
        a = ctx.attrs
        n = len(a["kernel"])
        if x.shape is not None and len(x.shape) != n + 2:
            raise fail("IRN032", f"data {fmt_shape(x.shape)} needs rank {n + 2} for a {n}-D kernel")
        if not 1 <= n <= 3:
            raise fail("IRN032", f"kernel has {n} values; 1 to 3 spatial dims are supported")
        dil = a.get("dilations") or [1] * n
        for what, v in (("strides", a["strides"]), ("dilations", dil), ("pads_begin", a["pads_begin"]),
                        ("pads_end", a["pads_end"])):
            if v and len(v) != n:  # absent pads are zeros
                raise fail("IRN032", f"{what} has {len(v)} values but the kernel has {n}")
        return t, None if x.shape is None else tuple(x.shape), dil

    def _attrs(self, ctx: NodeContext) -> dict:
        a = dict(ctx.attrs)
        if a["auto_pad"] == "notset":
            a["auto_pad"] = "explicit"
        n = len(a["kernel"])
        for what in ("pads_begin", "pads_end"):
            if not a[what]:
                a[what] = [0] * n
        return a


class _MaxPool(_Pool):
    type = "MaxPool"
    indices: ClassVar[bool] = True

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        t, shape, dil = self._check(ctx)
        a = self._attrs(ctx)
        if self.indices and ctx.num_outputs > 1:
            axis = a["axis"]
            if shape is not None and not -len(shape) <= axis < len(shape):
                raise fail("IRN023", f"axis={axis} is out of range for rank {len(shape)}")
        if shape is None:
            outs = [TensorInfo(None, t)]
        else:
            sp, _, _ = pool_geometry(shape[2:], a, dil)
            outs = [TensorInfo(shape[:2] + tuple(sp), t)]
        if self.indices:
            outs.append(TensorInfo(outs[0].shape, a["index_element_type"]))
        return outs[: max(ctx.num_outputs, 1)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import pooling as kern  # lazy: validate never imports numba

        a = self._attrs(ctx)
        dil = a.get("dilations") or [1] * len(a["kernel"])
        want_idx = self.indices and ctx.num_outputs > 1 and (ctx.outputs_read is None or ctx.outputs_read > 1)
        layer = ctx.layer
        plans: dict[tuple, tuple] = {}  # (shape, dtype) -> (compute dtype, the bound kernel call)

        def run(ins):
            x = ins[0]
            key = (x.shape, x.dtype)
            plan = plans.get(key)
            if plan is None:
                try:
                    sp, pb, _ = pool_geometry(x.shape[2:], a, dil)
                except Exception as e:  # a window that cannot fit these concrete dims
                    raise runtime_error(layer, str(e)) from None
                cdt = compute_dtype(x.dtype) if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else \
                    np.dtype(np.float64)
                plan = cdt, kern.max_pool_plan(x.shape, sp, a["kernel"], a["strides"], dil, pb, cdt,
                                               float(lowest(x.dtype)), want_idx)
                if len(plans) < 16:
                    plans[key] = plan
            cdt, pool = plan
            vals, idx = pool(x)
            y = cast(vals, x.dtype) if x.dtype != cdt else vals
            if not want_idx:
                return [y]
            axis = a["axis"] % x.ndim
            if axis < 2:  # the index counts over the dims from `axis`: add each plane's offset
                plane = int(np.prod(x.shape[2:], dtype=np.int64))
                first = axis == 0
                base = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[0], x.shape[1])
                if not first:
                    base = np.broadcast_to(np.arange(x.shape[1], dtype=np.int64), base.shape)
                idx = idx + (base * plane).reshape(base.shape + (1,) * (x.ndim - 2))
            return [y, idx.astype(ELEMENT_TYPES[a["index_element_type"]])]

        return run

    def pointed_values(self, attrs, data, port, index):
        return _pooled_values(attrs, data, index) if self.indices and port == 1 else None


def _pooled_values(attrs: dict, data: np.ndarray, index: np.ndarray) -> np.ndarray:
    """MaxPool's pointed_values: index counts over the dims from `axis` (0: the whole tensor, 1: each
    image, 2 or more: each channel plane), so each output position's row is its position over the dims
    before that (at most N and C, which the pool keeps)."""
    lead = min(attrs["axis"] % data.ndim, 2)
    rows = data.reshape(int(np.prod(data.shape[:lead], dtype=np.int64)), -1)
    row_of = np.arange(rows.shape[0]).reshape(data.shape[:lead] + (1,) * (index.ndim - lead))
    return values_at(rows, np.broadcast_to(row_of, index.shape), index)


def _index_type(text: str) -> str:
    t = text.strip().lower()
    if t not in ("i32", "i64"):
        from ..ir.attrs import AttrError

        raise AttrError(f"'{text}' is not i32 or i64")
    return t


@register
class MaxPool1(_MaxPool):
    version = 1
    opsets = (1, 7)
    indices = False
    schema = AttrSchema(_common(("floor", "ceil")))
    doc = "max over windows (no indices); rounding floor/ceil; auto_pad explicit/valid/same_upper/same_lower."


@register
class MaxPool8(_MaxPool):
    version = 8
    opsets = (8, 13)
    outputs = (1, 2)
    schema = AttrSchema(_common(("floor", "ceil")) + [
        Attr("dilations", parse_int_list, check=_positive_list("dilation")),
        optional("index_element_type", _index_type, "i64"), optional("axis", parse_int, 0)])
    doc = "MaxPool-1 plus dilations and a second output: each maximum's flat index over the dims from `axis`."


@register
class MaxPool14(MaxPool8):
    version = 14
    opsets = (14, None)
    schema = AttrSchema(_common(("floor", "ceil", "ceil_torch")) + [
        Attr("dilations", parse_int_list, check=_positive_list("dilation")),
        optional("index_element_type", _index_type, "i64"), optional("axis", parse_int, 0)])
    doc = "MaxPool-8 plus rounding_type ceil_torch (PyTorch's ceil_mode)."


class _AvgPool(_Pool):
    type = "AvgPool"

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        t, shape, dil = self._check(ctx)
        if shape is None:
            return [TensorInfo(None, t)]
        sp, _, _ = pool_geometry(shape[2:], self._attrs(ctx), dil)
        return [TensorInfo(shape[:2] + tuple(sp), t)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import pooling as kern  # lazy: validate never imports numba

        a = self._attrs(ctx)
        n = len(a["kernel"])
        dil = a.get("dilations") or [1] * n
        layer = ctx.layer

        def run(ins):
            x = ins[0]
            try:
                sp, pb, pe = pool_geometry(x.shape[2:], a, dil)
            except Exception as e:
                raise runtime_error(layer, str(e)) from None
            cdt = compute_dtype(x.dtype) if x.dtype.kind == "f" or x.dtype.name == "bfloat16" else np.dtype(np.float64)
            y = kern.avg_pool(x, sp, a["kernel"], a["strides"], pb, pe, a["exclude-pad"], cdt, dil)
            if x.dtype.kind in "iu":
                y = np.trunc(y)
            return [cast(y, x.dtype) if x.dtype != cdt else y]

        return run


@register
class AvgPool1(_AvgPool):
    version = 1
    opsets = (1, 13)
    schema = AttrSchema(_common(("floor", "ceil")) + [Attr("exclude-pad", parse_bool)])
    doc = "mean over windows; exclude-pad divides by the taps inside the input; rounding floor/ceil."


@register
class AvgPool14(_AvgPool):
    version = 14
    opsets = (14, 15)
    schema = AttrSchema(_common(("floor", "ceil", "ceil_torch")) + [Attr("exclude-pad", parse_bool)])
    doc = "AvgPool-1 plus rounding_type ceil_torch."


@register
class AvgPool16(_AvgPool):
    version = 16
    opsets = (16, None)
    schema = AttrSchema(_common(("floor", "ceil", "ceil_torch")) + [
        Attr("exclude-pad", parse_bool), optional("dilations", parse_int_list, [], check=_positive_list("dilation"))])
    doc = "AvgPool-14 plus dilations."


# ---- AdaptiveAvgPool-8 / AdaptiveMaxPool-8 --------------------------------------------------------------


def adaptive_output(data: tuple[int, ...] | None, sizes: list[int | None] | None, n_sizes: int | None
                    ) -> tuple[int, ...] | None:
    """The output shape ([N, C] + sizes, -1 where unknown) after checking ranks and sizes; None when the
    rank is unknown.  Raises IRN032."""
    if data is not None and not 3 <= len(data) <= 5:
        raise fail("IRN032", f"data {fmt_shape(data)} must have rank 3, 4 or 5 ([N, C] and 1 to 3 spatial dims)")
    if n_sizes is None and sizes is not None:
        n_sizes = len(sizes)
    if data is not None and n_sizes is not None and n_sizes != len(data) - 2:
        raise fail("IRN032", f"output_shape has {n_sizes} values, data {fmt_shape(data)} has {len(data) - 2} "
                             f"spatial dims")
    if data is None and n_sizes is None:
        return None
    if sizes is None:
        sizes = [None] * (len(data) - 2 if data is not None else n_sizes)
    for k, v in enumerate(sizes):
        if v is None:
            continue
        if v < 0:
            raise fail("IRN032", f"output_shape value {k} is {v}; sizes must be >= 0")
        if v > 0 and data is not None and data[2 + k] == 0:
            raise fail("IRN032", f"spatial dim {k} of data {fmt_shape(data)} is 0 and cannot be pooled to size {v} "
                                 f"(every window would be empty)")
    head = data[:2] if data is not None else (-1, -1)
    return tuple(head) + tuple(-1 if v is None else int(v) for v in sizes)


class _AdaptivePool(Op):
    type: ClassVar[str]
    version = 8
    opsets = (8, None)
    inputs = (2, 2)
    average: ClassVar[bool]

    def _infer(self, ctx: NodeContext) -> TensorInfo:
        x = ctx.inputs[0]
        if x.dtype not in FLOAT_TYPES:
            raise fail("IRN033", f"data must be a floating-point tensor, got {x.dtype}")
        n = int_list_length(ctx, 1, "output_shape", scalar_ok=False, where=" (input 1)")
        return TensorInfo(adaptive_output(x.shape, partial_of(ctx.inputs[1]), n), x.dtype)

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import pooling as kern  # lazy: validate never imports numba

        layer = ctx.layer
        average = self.average
        want_idx = not average and ctx.num_outputs > 1 and (ctx.outputs_read is None or ctx.outputs_read > 1)
        index_type = None if average else ELEMENT_TYPES[ctx.attrs["index_element_type"]]
        plans: dict[tuple, tuple] = {}  # (shape, dtype, output_shape bytes) -> (compute dtype, bound kernel)

        def run(ins):
            x, sizes = ins[0], ins[1]
            key = (x.shape, x.dtype, sizes.tobytes())
            plan = plans.get(key)
            if plan is None:
                values = [int(v) for v in sizes.reshape(-1)]
                try:
                    out = adaptive_output(x.shape, values, None)
                except RuleError as e:
                    raise runtime_error(layer, e.message) from None
                cdt = compute_dtype(x.dtype)
                plan = cdt, kern.adaptive_pool_plan(x.shape, list(out[2:]), cdt, average)
                if len(plans) < 16:
                    plans[key] = plan
            cdt, pool = plan
            vals, idx = pool(x)
            y = cast(vals, x.dtype) if x.dtype != cdt else vals
            return [y, idx.astype(index_type, copy=False)] if want_idx else [y]

        return run


@register
class AdaptiveAvgPool8(_AdaptivePool):
    type = "AdaptiveAvgPool"
    average = True
    doc = ("data [N, C, 1-3 spatial dims], output_shape (1-D i32/i64, one size per spatial dim): the mean over "
           "window i = [floor(i in / out), ceil((i + 1) in / out)) of each spatial axis.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        return [self._infer(ctx)]


@register
class AdaptiveMaxPool8(_AdaptivePool):
    type = "AdaptiveMaxPool"
    average = False
    outputs = (1, 2)
    schema = AttrSchema([optional("index_element_type", _index_type, "i64")])
    doc = ("AdaptiveAvgPool-8's windows, the maximum of each, and a second output: the flat index of that "
           "maximum within its plane (first on ties) in index_element_type (i32 or i64, default i64).")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        y = self._infer(ctx)
        return [y, TensorInfo(y.shape, ctx.attrs["index_element_type"])][: max(ctx.num_outputs, 1)]
