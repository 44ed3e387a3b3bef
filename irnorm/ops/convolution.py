"""Convolution-1, GroupConvolution-1, ConvolutionBackpropData-1 and GroupConvolutionBackpropData-1
(opset1+), 1-D to 3-D.

Output size per spatial dim (forward): ``floor((in + pb + pe - (d*(k-1) + 1)) / s) + 1``, with

* ``auto_pad = explicit`` (or ``notset``): the ``pads_begin`` / ``pads_end`` attributes;
* ``valid``: no padding;
* ``same_upper`` / ``same_lower``: output ``ceil(in / s)``, total padding
  ``max(0, (out-1)*s + d*(k-1) + 1 - in)`` split with the odd element at the end (upper) or the
  beginning (lower).  The ``pads_*`` attributes exports write next to ``same_*`` are ignored, as
  OpenVINO ignores them; with dynamic spatial dims the padding is computed when running.

ConvolutionBackpropData (transposed convolution, filter [C_in, C_out, k...]): output
``s*(in-1) + d*(k-1) + 1 - pb - pe + output_padding``; with ``same_*`` or ``valid`` and no
``output_shape`` input the padding is zero.  With an ``output_shape`` input O the output spatial dims
are O and the padding at the beginning is ``pads_begin`` (explicit), 0 (valid), or the split of
``max(0, full - O)`` (``full`` = the unpadded size) with the odd element at the beginning for
``same_upper`` and at the end for ``same_lower``.  That is OpenVINO's core shape inference
(convolution_backprop_shape_inference_util.hpp, apply_padding) and its CPU plugin; the spec's text
(ConvolutionBackpropData_1.md) instead splits the total as ``total // 2`` at the beginning for explicit
and valid too.

Kernels (irnorm/kernels/conv.py): im2col + one batched BLAS GEMM for dense and grouped convolution
(weights laid out once at load time when constant), a direct parallel kernel for depthwise
convolution (one input channel per group), BLAS GEMM + col2im for the transposed convolution.
f16 / bf16 compute in float32 and round once; f64 in float64.  Integer data (the spec allows any numeric
type) is computed in float64 — exact while the sums stay below 2**53 — and wrapped to the element type,
as the reference's integer arithmetic does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum, optional, parse_int_list
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, cast, compute_dtype
from .base import (
    NodeContext,
    Op,
    RuleError,
    TensorInfo,
    fail,
    fmt_shape,
    prod,
    register,
    require_same_type,
    runtime_error,
)

AUTO_PAD = enum("explicit", "same_upper", "same_lower", "valid", "notset")


# Attribute values are kept in int32 range so the kernels' int64 index arithmetic cannot overflow.
ATTR_MAX = 2**31 - 1


def _list_check(minimum: int, what: str):
    def check(v: list[int]) -> str | None:
        bad = [x for x in v if not minimum <= x <= ATTR_MAX]
        return f"{what} must all be in [{minimum}, {ATTR_MAX}], got {v}" if bad else None

    check.__name__ = f"each in [{minimum}, 2**31-1]"
    return check


def _check_kernel(kernel) -> None:
    if any(k == 0 for k in kernel):
        raise fail("IRN032", f"the filter's spatial dims {list(kernel)} include 0: an empty kernel")


def _common_attrs() -> list[Attr]:
    return [
        Attr("strides", parse_int_list, check=_list_check(1, "strides"), doc="one per spatial dim, >= 1"),
        optional("pads_begin", parse_int_list, [], check=_list_check(0, "pads_begin"),
                 doc="one per spatial dim, >= 0 (used with auto_pad explicit)"),
        optional("pads_end", parse_int_list, [], check=_list_check(0, "pads_end"),
                 doc="one per spatial dim, >= 0 (used with auto_pad explicit)"),
        Attr("dilations", parse_int_list, check=_list_check(1, "dilations"), doc="one per spatial dim, >= 1"),
        optional("auto_pad", AUTO_PAD, "explicit",
                 doc="explicit | valid | same_upper | same_lower (notset = explicit)"),
    ]


def _spatial_attrs(attrs: dict, rank: int, names: tuple[str, ...]) -> dict[str, list[int]]:
    """The per-spatial-dim attributes checked against the spatial rank (empty pads mean zeros)."""
    out = {}
    for name in names:
        v = list(attrs[name])
        if name in ("pads_begin", "pads_end", "output_padding") and not v:
            v = [0] * rank
        if len(v) != rank:
            if name in ("pads_begin", "pads_end") and attrs["auto_pad"] not in ("explicit", "notset"):
                v = [0] * rank  # ignored with auto_pad same_* / valid
            else:
                raise fail("IRN032", f"{name} has {len(v)} values but the data has {rank} spatial dims")
        out[name] = v
    return out


def forward_geometry(spatial, kernel, a: dict[str, list[int]], auto_pad: str
                     ) -> tuple[list[int], list[int]]:
    """(output spatial dims, pads at the beginning) of a forward convolution; -1 where unknown."""
    _check_kernel(kernel)
    out, begin = [], []
    for i, (n, k) in enumerate(zip(spatial, kernel, strict=True)):
        s, d = a["strides"][i], a["dilations"][i]
        if auto_pad in ("same_upper", "same_lower"):
            if n == -1 or k == -1:
                out.append(-1)
                begin.append(-1)
                continue
            o = -(-n // s)
            total = max(0, (o - 1) * s + d * (k - 1) + 1 - n)
            out.append(o)
            begin.append(total // 2 if auto_pad == "same_upper" else total - total // 2)
            continue
        pb, pe = (0, 0) if auto_pad == "valid" else (a["pads_begin"][i], a["pads_end"][i])
        begin.append(pb)
        if n == -1 or k == -1:
            out.append(-1)
            continue
        eff = d * (k - 1) + 1
        if n + pb + pe < eff:
            raise fail("IRN032", f"spatial dim {i}: the dilated kernel ({eff} = {d}*({k}-1)+1) is larger than the "
                                 f"padded input ({n} + {pb} + {pe} = {n + pb + pe})")
        out.append((n + pb + pe - eff) // s + 1)
    return out, begin


def _check_data(ctx: NodeContext, what_filter: str, filter_rank_extra: int) -> tuple[str, tuple | None, tuple | None]:
    t = ctx.inputs[0].dtype
    if t not in FLOAT_TYPES + INT_TYPES:
        raise fail("IRN033", f"data must be a numeric tensor, got {t}")
    require_same_type(ctx, 0, 1, what_filter)
    x, w = ctx.inputs[0].shape, ctx.inputs[1].shape
    if x is not None and not 3 <= len(x) <= 5:
        raise fail("IRN032", f"data must be [N, C, spatial...] with 1 to 3 spatial dims, got {fmt_shape(x)}")
    if w is not None and not 3 + filter_rank_extra <= len(w) <= 5 + filter_rank_extra:
        raise fail("IRN032", f"{what_filter} has rank {len(w)}, expected {len(x) + filter_rank_extra if x else '3..5'}"
                             f" ({fmt_shape(w)})")
    if x is not None and w is not None and len(w) != len(x) + filter_rank_extra:
        raise fail("IRN032", f"{what_filter} {fmt_shape(w)} has rank {len(w)} but data {fmt_shape(x)} needs rank "
                             f"{len(x) + filter_rank_extra}")
    return t, x, w


def _runtime(ctx: NodeContext):
    """Wrap a rule failure found while running as IRN064."""
    def wrap(fn):
        def run(ins):
            try:
                return fn(ins)
            except RuleError as e:
                raise runtime_error(ctx.layer, e.message) from None
        return run
    return wrap


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """float32 for f32/f16/bf16, float64 for f64 and for integers (sums exact below 2**53)."""
    return np.dtype(np.float64) if dtype.kind in "iu" else compute_dtype(dtype)


def _to_output(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if y.dtype == dtype:
        return y
    if dtype.kind in "iu":  # exact integer sums, wrapped to the element type as C++ integer arithmetic does
        return np.rint(y).astype(np.int64).astype(dtype)
    return cast(y, dtype)


def check_groups(x, w, g: int, cin_g: int) -> None:
    """The data's C_in against a grouped filter's G groups of C_in/G channels (-1 = unknown): the
    rule GroupConvolution and GroupConvolutionBackpropData share."""
    c = x[1]
    if c != -1 and g != -1:
        if g == 0 or c % g:
            raise fail("IRN032", f"data has C_in={c} channels, not divisible by the filter's G={g} groups")
        if cin_g != -1 and c != g * cin_g:
            raise fail("IRN032", f"data has C_in={c} channels but the filter {fmt_shape(w)} expects "
                                 f"G*C_in/G = {g}*{cin_g} = {g * cin_g}")


class _ForwardBase(Op):
    uses_blas = True
    schema = AttrSchema(_common_attrs())
    inputs = (2, 2)
    grouped = False

    def _channels(self, x, w) -> tuple[int, int, int]:
        """(groups, C_out, C_in per group) from the filter shape, checking C_in; -1 where unknown."""
        raise NotImplementedError

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        t, x, w = _check_data(ctx, "filter (input 1)", 1 if self.grouped else 0)
        if x is None:
            return [TensorInfo(None, t)]
        rank = len(x) - 2
        a = _spatial_attrs(ctx.attrs, rank, ("strides", "dilations", "pads_begin", "pads_end"))
        if w is None:
            return [TensorInfo((x[0], -1) + (-1,) * rank, t)]
        _, cout, _ = self._channels(x, w)
        out, _ = forward_geometry(x[2:], w[-rank:], a, ctx.attrs["auto_pad"])
        return [TensorInfo((x[0], cout) + tuple(out), t)]

    def build(self, ctx: NodeContext, epilogue: Any = None):
        """The kernel on [data, filter].  With an `epilogue` (kernels.conv.Epilogue; constant filters, f32/f64
        data), the kernel of a fused step on [data, filter] (+ [residual]) that applies it to the product
        (the runtime's conv_bias_activation rule): in the same call as the product where the path allows."""
        from ..kernels import conv  # lazy: validate never imports numba

        dtype = ELEMENT_TYPES[ctx.inputs[0].dtype]
        work = _work_dtype(dtype)
        auto_pad = ctx.attrs["auto_pad"]
        grouped = self.grouped

        def prepare(w: np.ndarray):
            """-> (kind, prepared weights, kernel spatial shape)."""
            wc = w.astype(work, copy=False)
            if grouped:
                g, cpg, cin_g = wc.shape[:3]
                k = wc.shape[3:]
                if cin_g == 1 and g > 1:
                    return "depthwise", np.ascontiguousarray(wc.reshape((g * cpg,) + k)), k
                return "gemm", np.ascontiguousarray(wc.reshape(g, cpg, int(np.prod(wc.shape[2:])))), k
            cout = wc.shape[0]  # (explicit sizes: -1 cannot be inferred when there are no output channels)
            return "gemm", np.ascontiguousarray(wc.reshape(1, cout, int(np.prod(wc.shape[1:])))), wc.shape[2:]

        wconst = ctx.inputs[1].value
        ready = prepare(np.asarray(wconst)) if wconst is not None else None
        # constant depthwise 1-D/2-D filters also kept with channels innermost (kernels/conv.py)
        w_inner = (conv.channels_inner_filter(ready[1]) if ready is not None and ready[0] == "depthwise"
                   and ready[1].ndim <= 3 else None)

        # (data shape, filter shape) -> the checked geometry as tuples, and for constant weights
        # conv.forward_plan's (or depthwise_plan's) plan for that input shape
        memo: dict[tuple, tuple] = {}

        @_runtime(ctx)
        def run(ins):
            x, w = ins[0], ins[1]
            key = (x.shape, w.shape)
            geom = memo.get(key)
            if geom is None:
                self._channels(x.shape, w.shape)
                k = ready[2] if ready is not None else w.shape[3 if grouped else 2:]
                a = _spatial_attrs(ctx.attrs, x.ndim - 2, ("strides", "dilations", "pads_begin", "pads_end"))
                out_sp, begin = forward_geometry(x.shape[2:], k, a, auto_pad)
                geom = (tuple(a["strides"]), tuple(a["dilations"]), tuple(begin), tuple(out_sp))
                if ready is None:
                    plan = None
                elif ready[0] == "gemm":
                    plan = conv.forward_plan(x.shape, ready[1], tuple(ready[2]), *geom, epilogue)
                else:
                    plan = conv.depthwise_plan(x.shape, ready[1], *geom, w_inner, epilogue)
                geom += (plan,)
                if len(memo) < 64:
                    memo[key] = geom
            strides, dilations, begin, out_sp, plan = geom
            xc = x.astype(work, copy=False)
            if epilogue is not None:  # constant filters, work dtype == dtype (the rule's conditions)
                return [plan(xc, ins[2] if epilogue.residual else None)]
            if plan is not None:
                return [_to_output(plan(xc), dtype)]
            kind, wp, k = ready if ready is not None else prepare(w)
            if kind == "depthwise":
                y = conv.conv_depthwise(xc, wp, strides, dilations, begin, out_sp, w_inner if ready else None)
            else:
                y = conv.conv_forward(xc, wp, tuple(k), strides, dilations, begin, out_sp)
            return [_to_output(y, dtype)]

        x_shape = ctx.inputs[0].shape
        if ready is not None and x_shape is not None and all(d >= 0 for d in x_shape):
            # Constant filters on a static model: the plan's straight-line runner calls this with the step's
            # runtime operands (the data, and a fused residual) -- the bound plan without the operand list,
            # the key and the geometry's unpacking (runtime/plan.py)
            w_key = np.shape(wconst)

            def static_call(x: np.ndarray, res: np.ndarray | None = None) -> np.ndarray:
                geom = memo.get((x.shape, w_key))
                if geom is None or geom[4] is None or x.dtype != work:  # not planned yet: as run() does
                    return run([x, wconst] if res is None else [x, wconst, res])[0]
                if epilogue is not None:
                    return geom[4](x, res)
                return _to_output(geom[4](x), dtype)
            run.static_call = static_call
        return run


@register
class Convolution(_ForwardBase):
    type = "Convolution"
    version = 1
    opsets = (1, None)
    doc = ("data [N, C_in, spatial...] (1-D to 3-D), filter [C_out, C_in, k...]; strides, dilations, explicit "
           "pads or auto_pad valid/same_upper/same_lower; im2col (Numba, parallel) + one batched GEMM (float32 "
           "by irnorm's register-blocked kernels with AVX2 + FMA, else BLAS); "
           "larger 2-D ones band by band of output rows (an L2-sized unfold and one GEMM per band, bands "
           "over the threads), few output channels by a direct kernel; small ones (one single-threaded GEMM -- "
           "dot products in Numba for at most 4 output pixels -- or a serial direct kernel) and a fused step's "
           "bias / residual / activation in one Numba call.")

    def _channels(self, x, w):
        if x[1] != -1 and w[1] != -1 and x[1] != w[1]:
            raise fail("IRN032", f"data has C_in={x[1]} channels but the filter {fmt_shape(w)} expects {w[1]}")
        return 1, w[0], w[1]


@register
class GroupConvolution(_ForwardBase):
    type = "GroupConvolution"
    version = 1
    opsets = (1, None)
    grouped = True
    doc = ("data [N, C_in, spatial...], filter [G, C_out/G, C_in/G, k...]; attributes as Convolution; grouped "
           "im2col + batched GEMM, depthwise (C_in/G = 1) by a direct parallel kernel (small ones with channels "
           "innermost, 3x3 ones with rows of 16+ outputs summing their taps in registers, a fused step's epilogue in "
           "the same call).")

    def _channels(self, x, w):
        g, cpg, cin_g = w[0], w[1], w[2]
        check_groups(x, w, g, cin_g)
        cout = -1 if g == -1 or cpg == -1 else g * cpg
        return g, cout, cin_g


@register
class ConvolutionBackpropData(Op):
    uses_blas = True
    type = "ConvolutionBackpropData"
    version = 1
    opsets = (1, None)
    schema = AttrSchema(_common_attrs() + [
        optional("output_padding", parse_int_list, [], check=_list_check(0, "output_padding"),
                 doc="added at the end of each spatial dim (>= 0)"),
    ])
    inputs = (2, 3)
    doc = ("transposed convolution: data [N, C_in, spatial...], filter [C_in, C_out, k...], optional output_shape "
           "(spatial dims); strides, dilations, pads, output_padding, auto_pad; BLAS GEMM + col2im (Numba).")

    @staticmethod
    def _geometry(spatial, kernel, a, auto_pad, oshape):
        """(output spatial dims, pads at the beginning); -1 where unknown."""
        _check_kernel(kernel)
        out, begin = [], []
        for i, (n, k) in enumerate(zip(spatial, kernel, strict=True)):
            s, d, op = a["strides"][i], a["dilations"][i], a["output_padding"][i]
            full = -1 if n == -1 or k == -1 else s * (n - 1) + d * (k - 1) + 1 + op
            explicit = auto_pad in ("explicit", "notset")
            if oshape is None:
                pb, pe = (a["pads_begin"][i], a["pads_end"][i]) if explicit else (0, 0)
                begin.append(pb)
                if full == -1:
                    out.append(-1)
                    continue
                o = full - pb - pe
                if o < 0:
                    raise fail("IRN032", f"spatial dim {i}: output size {s}*({n}-1)+{d}*({k}-1)+1-{pb}-{pe}+{op} = "
                                         f"{o} is negative")
                out.append(o)
                continue
            o = oshape[i]
            out.append(o)
            if explicit:
                begin.append(a["pads_begin"][i])
            elif auto_pad == "valid":
                begin.append(0)
            elif full == -1 or o == -1:
                begin.append(-1)
            else:
                total = max(0, full - o)
                begin.append(total - total // 2 if auto_pad == "same_upper" else total // 2)
        return out, begin

    def _output_shape(self, ctx: NodeContext, rank: int | None):
        if len(ctx.inputs) < 3:
            return None
        info = ctx.inputs[2]
        if info.dtype not in INT_TYPES:
            raise fail("IRN033", f"output_shape (input 2) must be an integer tensor, got {info.dtype}")
        if info.shape is not None and len(info.shape) != 1:
            raise fail("IRN032", f"output_shape (input 2) must be 1-D, got {fmt_shape(info.shape)}")
        if info.shape is not None and rank is not None and info.shape[0] not in (-1, rank):
            raise fail("IRN032", f"output_shape (input 2) has {info.shape[0]} values for {rank} spatial dims")
        if info.value is None:
            return [-1] * rank if rank is not None else None
        v = [int(e) for e in np.asarray(info.value).reshape(-1)]
        if any(e < 0 for e in v):
            raise fail("IRN032", f"output_shape (input 2) {v} has a negative dim")
        return v

    grouped = False  # GroupConvolutionBackpropData: filter [G, C_in/G, C_out/G, k...]

    def _channels(self, x, w) -> int:
        """C_out from the filter, checking the data's C_in against it; -1 where unknown."""
        if x[1] != -1 and w[0] != -1 and x[1] != w[0]:
            raise fail("IRN032", f"data has C_in={x[1]} channels but the filter {fmt_shape(w)} expects {w[0]}")
        return w[1]

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        extra = 1 if self.grouped else 0
        t, x, w = _check_data(ctx, "filter (input 1)", extra)
        rank = len(x) - 2 if x is not None else (len(w) - 2 - extra if w is not None else None)
        oshape = self._output_shape(ctx, rank)
        if x is None:
            return [TensorInfo(None, t)]
        a = _spatial_attrs(ctx.attrs, rank, ("strides", "dilations", "pads_begin", "pads_end", "output_padding"))
        if w is None:
            return [TensorInfo((x[0], -1) + (tuple(oshape) if oshape else (-1,) * rank), t)]
        cout = self._channels(x, w)
        out, _ = self._geometry(x[2:], w[2 + extra:], a, ctx.attrs["auto_pad"], oshape)
        return [TensorInfo((x[0], cout) + tuple(out), t)]

    def build(self, ctx: NodeContext):
        from ..kernels import conv

        dtype = ELEMENT_TYPES[ctx.inputs[0].dtype]
        work = _work_dtype(dtype)
        auto_pad = ctx.attrs["auto_pad"]
        grouped = self.grouped

        def prepare(w: np.ndarray):
            """-> (one [C_out*K, C_in] matrix per group: col = W^T @ x, kernel spatial shape)."""
            wc = w.astype(work, copy=False)
            groups = wc if grouped else wc[None]
            return [np.ascontiguousarray(g.reshape(g.shape[0], -1).T) for g in groups], groups.shape[3:]

        wconst = ctx.inputs[1].value
        ready = prepare(np.asarray(wconst)) if wconst is not None else None

        @_runtime(ctx)
        def run(ins):
            x, w = ins[0], ins[1]
            self._channels(x.shape, w.shape)
            wts, k = ready if ready is not None else prepare(w)
            wt = wts[0]
            rank = x.ndim - 2
            a = _spatial_attrs(ctx.attrs, rank, ("strides", "dilations", "pads_begin", "pads_end", "output_padding"))
            oshape = None
            if len(ins) > 2:
                oshape = [int(e) for e in np.asarray(ins[2]).reshape(-1)]
                if len(oshape) != rank or any(not 0 <= e <= ATTR_MAX for e in oshape):
                    raise fail("IRN032", f"output_shape {oshape} does not fit {rank} spatial dims in [0, {ATTR_MAX}]")
            out_sp, begin = self._geometry(x.shape[2:], k, a, auto_pad, oshape)
            size = x.shape[0] * len(wts) * (wt.shape[0] // max(1, prod(k))) * prod(out_sp) * work.itemsize
            too_big = fail("IRN032", f"the output [{x.shape[0]}, ?, {', '.join(map(str, out_sp))}] needs {size} bytes: "
                                     f"cannot allocate")
            if size >= 2**62:
                raise too_big
            xw = x.astype(work, copy=False)
            cin_g = xw.shape[1] // len(wts)
            try:  # one GEMM + col2im per group
                parts = [conv.conv_backprop(xw[:, gi * cin_g:(gi + 1) * cin_g], wg, k, a["strides"], a["dilations"],
                                            begin, out_sp) for gi, wg in enumerate(wts)]
                y = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
            except MemoryError:
                raise too_big from None
            return [_to_output(y, dtype)]

        return run


@register
class GroupConvolutionBackpropData(ConvolutionBackpropData):
    type = "GroupConvolutionBackpropData"
    version = 1
    opsets = (1, None)
    grouped = True
    doc = ("grouped transposed convolution: data [N, G*C_in/G, spatial...], filter [G, C_in/G, C_out/G, k...]; "
           "attributes and output_shape as ConvolutionBackpropData; one BLAS GEMM + col2im per group.")

    def _channels(self, x, w) -> int:
        g, cin_g, cout_g = w[0], w[1], w[2]
        check_groups(x, w, g, cin_g)
        return -1 if g == -1 or cout_g == -1 else g * cout_g
