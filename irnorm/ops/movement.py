"""Data movement: Transpose-1, Split-1, VariadicSplit-1, Slice-8, StridedSlice-1, Pad-1/12, Roll-7,
Tile-1, Reverse-1, CumSum-3, TopK-1/3/11, GatherElements-6, ScatterNDUpdate-3/15.

These only move or copy elements, so numpy's own routines (transpose + a contiguous copy, slicing,
np.pad, np.roll, take_along_axis, fancy-index assignment) are the kernels: they run at memory speed
in C.  Every index taken from data (GatherElements, ScatterNDUpdate) is checked against its axis
before use: an out-of-range one is a coded error naming the layer, never an out-of-bounds read.
Constant inputs fold at load time, and the shape values of dynamic exports (ShapeOf -> Slice ...)
stay partly known where OpenVINO keeps them (see ops/base.PartialInfo).
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum, optional, parse_bool, parse_int, parse_int_list
from ..ir.dtypes import INT_TYPES, cast, compute_dtype, is_float_dtype
from .base import (
    Kernel,
    NodeContext,
    Op,
    RuleError,
    TensorInfo,
    constant_axes,
    fail,
    fmt_shape,
    int_list_length,
    normalize_axes,
    partial_of,
    register,
    runtime_error,
    values_at,
    with_partial,
)


def _ints(v: np.ndarray) -> list[int]:
    return [int(a) for a in np.asarray(v).reshape(-1)]


def _int_input(ctx: NodeContext, i: int, what: str) -> None:
    if ctx.inputs[i].dtype not in INT_TYPES:
        raise fail("IRN033", f"{what} must be an integer tensor, got {ctx.inputs[i].dtype}")


# ---- Transpose --------------------------------------------------------------------------------------


@register
class Transpose(Op):
    type = "Transpose"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    doc = "permute dims by a constant or runtime order (a permutation of 0..r-1; empty = reverse)."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, order = ctx.inputs
        _int_input(ctx, 1, "order")
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        r = len(x.shape)
        if order.value is None:
            if order.shape is not None and len(order.shape) == 1 and order.shape[0] not in (-1, 0, r):
                raise fail("IRN032", f"order has {order.shape[0]} values, data has rank {r}")
            return [TensorInfo((-1,) * r, x.dtype)]
        perm = self._perm(_ints(order.value), r)
        out = TensorInfo(tuple(x.shape[p] for p in perm), x.dtype)
        if x.value is not None:
            out.value = np.ascontiguousarray(np.transpose(x.value, perm))
        return [out]

    @staticmethod
    def _perm(order: list[int], r: int) -> list[int]:
        if not order:
            return list(range(r))[::-1]
        perm = normalize_axes(order, r, "order")
        if sorted(perm) != list(range(r)):
            raise fail("IRN032", f"order {order} is not a permutation of 0..{r - 1}")
        return perm

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        perms: dict = {}  # (order bytes, dtype, rank), or the rank for a constant order -> permutation

        const_order = ctx.inputs[1].value is not None  # then the permutation depends on the rank only

        def run(ins):
            x, order = ins
            key = x.ndim if const_order else (order.tobytes(), order.dtype, x.ndim)
            perm = perms.get(key)
            if perm is None:
                try:
                    perm = tuple(self._perm(_ints(order), x.ndim))
                except Exception as e:
                    raise runtime_error(layer, str(e)) from None
                if len(perms) < 32:
                    perms[key] = perm
            # always a fresh copy: ascontiguousarray returned the input itself where the permuted view was
            # already C-contiguous (identity orders, moved size-1 dims), so an output could be the caller's input
            return [x.transpose(perm).copy()]

        rank = None if ctx.inputs[0].shape is None else len(ctx.inputs[0].shape)
        if const_order and rank is not None:  # the straight-line runner's form on a static model (runtime/plan.py)
            try:
                perm = tuple(int(p) for p in self._perm(_ints(ctx.inputs[1].value), rank))
                run.static_expr = f"{{x}}.transpose({perm!r}).copy()"
            except Exception:  # noqa: BLE001 - an order the rule refuses: the step runs (and reports) as usual
                pass
        return run


# ---- Split / VariadicSplit ---------------------------------------------------------------------------


def _axis(ctx: NodeContext, i: int, rank: int) -> int:
    axes = constant_axes(ctx, i, rank, "axis")
    if len(axes) != 1:
        raise fail("IRN032", f"axis must be a single value, got {len(axes)}")
    return axes[0]


@register
class Split(Op):
    type = "Split"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    outputs = (1, 1 << 16)
    schema = AttrSchema([Attr("num_splits", parse_int, check=lambda v: None if v >= 1 else "must be >= 1")])
    doc = "num_splits equal parts along a constant axis (the dim must divide)."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        n = ctx.attrs["num_splits"]
        if ctx.num_outputs != n:
            raise fail("IRN017", f"num_splits={n} but the layer declares {ctx.num_outputs} outputs")
        if x.shape is None:
            ctx.const(1, "axis")
            return [TensorInfo(None, x.dtype) for _ in range(n)]
        ax = _axis(ctx, 1, len(x.shape))
        d = x.shape[ax]
        if d != -1 and d % n:
            raise fail("IRN032", f"dim {ax} of data {fmt_shape(x.shape)} ({d}) does not divide into {n} parts")
        part = -1 if d == -1 else d // n
        shape = x.shape[:ax] + (part,) + x.shape[ax + 1:]
        outs = [TensorInfo(shape, x.dtype) for _ in range(n)]
        if x.value is not None:
            for o, v in zip(outs, np.split(x.value, n, axis=ax), strict=True):
                o.value = np.ascontiguousarray(v)
        return outs

    def build(self, ctx: NodeContext) -> Kernel:
        n, layer = ctx.attrs["num_splits"], ctx.layer
        memo: dict[tuple, list[tuple]] = {}  # (input shape, axis bytes) -> each part's index tuple

        def run(ins):
            x = ins[0]
            key = (x.shape, np.asarray(ins[1]).tobytes())
            parts = memo.get(key)
            if parts is None:
                ax = normalize_axes(_ints(ins[1]), x.ndim, "axis")[0]
                if x.shape[ax] % n:
                    raise runtime_error(layer, f"dim {ax} ({x.shape[ax]}) does not divide into {n} parts")
                step = x.shape[ax] // n
                parts = [(slice(None),) * ax + (slice(k * step, (k + 1) * step),) for k in range(n)]
                if len(memo) < 64:
                    memo[key] = parts
            return [np.ascontiguousarray(x[p]) for p in parts]

        x_shape = ctx.inputs[0].shape
        if ctx.inputs[1].value is not None and _static(x_shape):
            ax = _axis(ctx, 1, len(x_shape))
            if x_shape[ax] % n == 0:
                step = x_shape[ax] // n
                _parts_expr(run, ax, [step] * n)
        return run


def _static(shape: tuple[int, ...] | None) -> bool:
    return shape is not None and all(d >= 0 for d in shape)


def _parts_expr(run: Kernel, axis: int, sizes: list[int]) -> None:
    """A split's straight-line form on a static model (runtime/plan.py): its parts along `axis` as one
    tuple of C-contiguous slices, what run() returns (a view where a part is one C block)."""
    ends = [int(v) for v in np.cumsum(sizes)]
    lead = ":, " * axis
    parts = [f"np.ascontiguousarray({{x}}[{lead}{e - k}:{e}])" for k, e in zip(sizes, ends, strict=True)]
    if len(parts) == 1:  # one part: the array itself, as a one-output step's expression is
        run.static_expr = parts[0]
        return
    run.static_expr = "(" + ", ".join(parts) + ")"
    run.static_outputs = len(parts)


@register
class VariadicSplit(Op):
    type = "VariadicSplit"
    version = 1
    opsets = (1, None)
    inputs = (3, 3)
    outputs = (1, 1 << 16)
    doc = "parts of the given lengths (constant or run-time) along an axis (one length may be -1: the rest)."

    @staticmethod
    def _lengths(lengths: list[int], d: int) -> list[int]:
        if sum(1 for v in lengths if v == -1) > 1 or any(v < -1 for v in lengths):
            raise fail("IRN032", f"split_lengths {lengths}: at most one -1 and no other negative value")
        known = sum(v for v in lengths if v != -1)
        if d != -1:
            if -1 in lengths:
                if known > d:
                    raise fail("IRN032", f"split_lengths {lengths} exceed the dim ({d})")
                return [d - known if v == -1 else v for v in lengths]
            if known != d:
                raise fail("IRN032", f"split_lengths {lengths} sum to {known}, the dim is {d}")
        return lengths

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        _int_input(ctx, 2, "split_lengths")
        if ctx.inputs[2].value is None or ctx.inputs[1].value is None:  # known at run time only
            count = int_list_length(ctx, 2, "split_lengths", scalar_ok=False)
            if count is not None and count != ctx.num_outputs:
                raise fail("IRN017", f"split_lengths has {count} values but the layer declares "
                                     f"{ctx.num_outputs} outputs")
            shape = None
            if x.shape is not None:
                if ctx.inputs[1].value is None:
                    int_list_length(ctx, 1, "axis")
                    shape = (-1,) * len(x.shape)
                else:
                    ax = _axis(ctx, 1, len(x.shape))
                    shape = x.shape[:ax] + (-1,) + x.shape[ax + 1:]
            return [TensorInfo(shape, x.dtype) for _ in range(ctx.num_outputs)]
        lengths = _ints(ctx.const(2, "split_lengths"))
        if len(lengths) != ctx.num_outputs:
            raise fail("IRN017", f"split_lengths has {len(lengths)} values but the layer declares "
                                 f"{ctx.num_outputs} outputs")
        if x.shape is None:
            ctx.const(1, "axis")
            return [TensorInfo(None, x.dtype) for _ in lengths]
        ax = _axis(ctx, 1, len(x.shape))
        sizes = self._lengths(lengths, x.shape[ax])
        outs = [TensorInfo(x.shape[:ax] + (s,) + x.shape[ax + 1:], x.dtype) for s in sizes]
        if x.value is not None:
            for o, v in zip(outs, np.split(x.value, np.cumsum(sizes)[:-1], axis=ax), strict=True):
                o.value = np.ascontiguousarray(v)
        return outs

    def build(self, ctx: NodeContext) -> Kernel:
        layer, n_out = ctx.layer, ctx.num_outputs

        plans: dict[tuple, list[tuple]] = {}  # (shape, axis, lengths) -> each part's index tuple (as Split)

        def run(ins):
            x = ins[0]
            key = (x.shape, ins[1].tobytes(), ins[2].tobytes(), ins[2].dtype)
            plan = plans.get(key)
            if plan is None:
                ax = normalize_axes(_ints(ins[1]), x.ndim, "axis")[0]
                lengths = _ints(ins[2])
                if len(lengths) != n_out:
                    raise runtime_error(layer, f"split_lengths has {len(lengths)} values, the layer has {n_out} "
                                               f"outputs")
                try:
                    sizes = self._lengths(lengths, x.shape[ax])
                except RuleError as e:
                    raise runtime_error(layer, e.message) from None
                ends = [int(v) for v in np.cumsum(sizes)]
                plan = [(slice(None),) * ax + (slice(e - k, e),) for k, e in zip(sizes, ends, strict=True)]
                if len(plans) < 32:
                    plans[key] = plan
            return [np.ascontiguousarray(x[p]) for p in plan]  # np.split's bookkeeping: 4 -> 2 us (3 parts)

        x_shape = ctx.inputs[0].shape
        if ctx.inputs[1].value is not None and ctx.inputs[2].value is not None and _static(x_shape):
            ax = _axis(ctx, 1, len(x_shape))
            lengths = _ints(ctx.inputs[2].value)
            if len(lengths) == n_out:
                try:
                    _parts_expr(run, ax, self._lengths(lengths, x_shape[ax]))
                except RuleError:  # lengths the rule refuses: the step runs (and reports) as usual
                    pass
        return run


# ---- Slice-8 ------------------------------------------------------------------------------------


def _slices(shape: tuple[int, ...], start: list[int], stop: list[int], step: list[int], axes: list[int] | None
            ) -> tuple[slice, ...]:
    r = len(shape)
    if axes is None:
        axes = list(range(len(start)))
    if not (len(start) == len(stop) == len(step) == len(axes)):
        raise fail("IRN032", f"start, stop, step and axes have {len(start)}, {len(stop)}, {len(step)} and "
                             f"{len(axes)} values; they must match")
    axes = normalize_axes(axes, r, "axes")
    if len(set(axes)) != len(axes):
        raise fail("IRN032", f"axes {axes} repeat an axis")
    idx = [slice(None)] * r
    for a, b, e, s in zip(axes, start, stop, step, strict=True):
        if s == 0:
            raise fail("IRN032", "step must not be 0")
        idx[a] = _clamped(b, e, s, shape[a])
    return tuple(idx)


def _clamped(b: int, e: int, s: int, n: int) -> slice:
    """OpenVINO's (and ONNX's) bounds: negative values count from the end, then start and stop clamp
    to [0, n] for a positive step and to [0, n-1] / [-1, n-1] for a negative one (-1: before the
    first element).  This differs from Python's slicing for a start before -n with a negative step."""
    if n <= 0:
        return slice(0, 0, s)
    b = b + n if b < 0 else b
    e = e + n if e < 0 else e
    if s > 0:
        return slice(min(max(b, 0), n), min(max(e, 0), n), s)
    b, e = min(max(b, 0), n - 1), min(max(e, -1), n - 1)
    return slice(b, None if e == -1 else e, s)


def _sliced_len(n: int, sl: slice) -> int:
    return len(range(*sl.indices(n)))


@register
class Slice(Op):
    type = "Slice"
    version = 8
    opsets = (8, None)
    inputs = (4, 5)
    doc = "numpy-style slicing: start, stop, step (negative steps, clamped bounds) on optional axes."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        for i, what in ((1, "start"), (2, "stop"), (3, "step"), (4, "axes")):
            if i < len(ctx.inputs):
                _int_input(ctx, i, what)
        vals = [i.value for i in ctx.inputs[1:]]
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        r = len(x.shape)
        if any(v is None for v in vals):  # a runtime bound: the sliced axes are unknown
            axes = None
            if len(ctx.inputs) > 4 and ctx.inputs[4].value is not None:
                axes = normalize_axes(_ints(ctx.inputs[4].value), r, "axes")
            elif len(ctx.inputs) == 4 and ctx.inputs[1].shape is not None and ctx.inputs[1].shape[0] != -1:
                axes = list(range(ctx.inputs[1].shape[0]))
            shape = tuple(-1 if axes is None or k in axes else d for k, d in enumerate(x.shape))
            return [TensorInfo(shape, x.dtype)]
        start, stop, step = (_ints(v) for v in vals[:3])
        axes = _ints(vals[3]) if len(vals) > 3 else None
        idx = _slices(x.shape, start, stop, step, axes)
        shape = tuple(d if d == -1 or s == slice(None) else _sliced_len(d, s) for d, s in zip(x.shape, idx,
                                                                                              strict=True))
        if x.value is not None:
            return [TensorInfo(shape, x.dtype, np.ascontiguousarray(x.value[idx]))]
        part = partial_of(x)
        if part is not None and r == 1 and shape[0] != -1:
            return [with_partial(shape, x.dtype, part[idx[0]])]
        return [TensorInfo(shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        memo: dict[tuple, tuple[slice, ...]] = {}  # (input shape, bounds' bytes) -> checked slices
        # constant start/stop/step/axes (as exports write them): the slices depend on the input shape only
        const_bounds = all(i.value is not None for i in ctx.inputs[1:])

        def run(ins):
            x = ins[0]
            key = x.shape if const_bounds else (x.shape, *(np.asarray(v).tobytes() for v in ins[1:]))
            idx = memo.get(key)
            if idx is None:
                try:
                    idx = _slices(x.shape, *(_ints(v) for v in ins[1:4]), _ints(ins[4]) if len(ins) > 4 else None)
                except Exception as e:
                    raise runtime_error(layer, str(e)) from None
                if len(memo) < 64:
                    memo[key] = idx
            return [np.ascontiguousarray(x[idx])]

        # constant bounds on a static input shape: the planner's straight-line runner writes this step as the
        # slicing itself on a static model (runtime/plan.py), without the call (Swin's window crops,
        # LLaMA's rotary halves)
        x_shape = ctx.inputs[0].shape
        if const_bounds and x_shape is not None and all(d >= 0 for d in x_shape):
            vals = [_ints(i.value) for i in ctx.inputs[1:]]
            try:
                idx = _slices(tuple(x_shape), *vals[:3], vals[3] if len(vals) > 3 else None)
            except Exception:  # noqa: BLE001 - bounds the rule refuses: the step runs (and reports) as usual
                idx = None
            if idx is not None:
                run.static_expr = "np.ascontiguousarray({x}[" + ", ".join(map(_slice_text, idx)) + "])"
        return run


def _slice_text(sl: slice) -> str:
    """`sl` as Python writes it in a subscript (``1:7:2``, ``:``)."""
    parts = (sl.start, sl.stop) if sl.step in (None, 1) else (sl.start, sl.stop, sl.step)
    return ":".join("" if v is None else str(int(v)) for v in parts)


# ---- Pad ----------------------------------------------------------------------------------------


PAD_MODE = enum("constant", "edge", "reflect", "symmetric")


def pad(x: np.ndarray, begin: list[int], end: list[int], mode: str, value) -> np.ndarray:
    """Negative pads crop first (Pad-12); then numpy's pad in the mode."""
    r = x.ndim
    crop = tuple(slice(max(-b, 0), x.shape[k] - max(-e, 0)) for k, (b, e) in enumerate(zip(begin, end, strict=True)))
    x = x[crop]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end, strict=True)]
    if not any(w != (0, 0) for w in widths):
        return np.ascontiguousarray(x)
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    if x.size == 0 or (mode == "reflect" and any(x.shape[k] < 2 and widths[k] != (0, 0) for k in range(r))):
        raise ValueError(f"{mode} padding needs data along every padded axis")
    return np.pad(x, widths, mode=mode)


class _Pad(Op):
    type = "Pad"
    inputs = (3, 4)
    schema = AttrSchema([Attr("pad_mode", PAD_MODE)])
    negative: bool = False

    def _pads(self, x_shape, begin, end, mode) -> tuple[int, ...]:
        r = len(x_shape)
        if len(begin) != r or len(end) != r:
            raise fail("IRN032", f"pads_begin and pads_end need {r} values each (data rank), got {len(begin)} and "
                                 f"{len(end)}")
        if not self.negative and any(v < 0 for v in begin + end):
            raise fail("IRN032", "Pad-1 takes no negative pads (Pad-12 does)")
        out = []
        for k, d in enumerate(x_shape):
            if d == -1:
                out.append(-1)
                continue
            n = d + begin[k] + end[k]
            if n < 0:
                raise fail("IRN032", f"dim {k}: pads {begin[k]}, {end[k]} crop more than its {d} elements")
            if mode in ("reflect", "symmetric"):
                limit = d - 1 if mode == "reflect" else d
                if max(begin[k], end[k], 0) > limit:
                    raise fail("IRN032", f"dim {k}: {mode} padding of {max(begin[k], end[k])} needs more than its "
                                         f"{d} elements")
            out.append(n)
        return tuple(out)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        _int_input(ctx, 1, "pads_begin")
        _int_input(ctx, 2, "pads_end")
        if len(ctx.inputs) > 3 and ctx.inputs[3].dtype != x.dtype:
            raise fail("IRN033", f"pad_value has element type {ctx.inputs[3].dtype}, expected {x.dtype}")
        b, e = ctx.inputs[1].value, ctx.inputs[2].value
        if x.shape is None or b is None or e is None:
            rank = None if x.shape is None else len(x.shape)
            return [TensorInfo(None if rank is None else (-1,) * rank, x.dtype)]
        shape = self._pads(x.shape, _ints(b), _ints(e), ctx.attrs["pad_mode"])
        return [TensorInfo(shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels.planes import fill_padded  # lazy: validate and --help never import numba
        from ..kernels.pool import OUTPUTS

        mode, layer = ctx.attrs["pad_mode"], ctx.layer
        # (input shape, begins, ends) -> (output shape, crop, where the data goes, anything to pad), worked out
        # and checked once: Swin pads [1, 16, 16, 32] by nothing, which cost 8 us of arithmetic a call
        plans: dict[tuple, tuple] = {}

        def run(ins):
            x = ins[0]
            begin, end = _ints(ins[1]), _ints(ins[2])
            key = (x.shape, tuple(begin), tuple(end))
            plan = plans.get(key)
            try:
                if plan is None:
                    plan = _pad_plan(self._pads(x.shape, begin, end, mode), x.shape, begin, end)
                    if len(plans) < 32:
                        plans[key] = plan
                out_shape, crop, inner, padded, planes = plan
                if not padded:
                    return [np.ascontiguousarray(x[crop])]
                if mode != "constant":
                    value = 0
                elif len(ins) > 3 and np.asarray(ins[3]).size:
                    value = np.asarray(ins[3]).reshape(-1)[0]
                else:
                    value = 0
                if mode == "constant" and planes is not None and x.dtype in _PLANE_DTYPES:
                    # only the last two dims padded: one kernel pass into a pooled buffer
                    count, h, w, hp, wp, y0, x0 = planes
                    out = OUTPUTS.empty(out_shape, x.dtype)
                    fill_padded(np.ascontiguousarray(x).reshape(-1), count, h, w, out.reshape(-1), hp, wp, 0, h, 0, w,
                                y0, x0, x.dtype.type(value))
                    return [out]
                if mode == "constant":  # np.pad's constant mode, without its per-call bookkeeping
                    out = np.full(out_shape, value, x.dtype)
                    out[inner] = x[crop]
                    return [out]
                return [pad(x, begin, end, mode, value)]
            except Exception as err:
                raise runtime_error(layer, str(getattr(err, "message", err))) from None

        return run


# element types the planes kernel copies (numpy's own for the rest: f16, bf16, bool, strings)
_PLANE_DTYPES = {np.dtype(t) for t in (np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8,
                                       np.uint16, np.uint32, np.uint64)}


def _pad_plan(out_shape: tuple[int, ...], shape: tuple[int, ...], begin: list[int], end: list[int]) -> tuple:
    """(out_shape, the crop of the input (negative pads), where it lands in the output, whether anything is
    padded, the planes geometry) for checked pads.  The geometry (planes, h, w, padded h, padded w, first
    row, first column) is there when only the last two dims are padded, none cropped: an NCHW spatial pad."""
    crop = tuple(slice(max(-b, 0), d - max(-e, 0)) for d, b, e in zip(shape, begin, end, strict=True))
    inner = tuple(slice(max(b, 0), n - max(e, 0)) for n, b, e in zip(out_shape, begin, end, strict=True))
    planes = None
    if shape and min(begin + end) >= 0 and not any(begin[:-2]) and not any(end[:-2]) and math.prod(out_shape):
        h, w = (shape[-2] if len(shape) > 1 else 1), shape[-1]
        hp, wp = (out_shape[-2] if len(shape) > 1 else 1), out_shape[-1]
        planes = (math.prod(shape[:-2]), h, w, hp, wp, begin[-2] if len(shape) > 1 else 0, begin[-1])
    return out_shape, crop, inner, any(b > 0 or e > 0 for b, e in zip(begin, end, strict=True)), planes


@register
class Pad1(_Pad):
    version = 1
    opsets = (1, 11)
    doc = "pads_begin / pads_end (non-negative) in constant (pad_value, default 0), edge, reflect or symmetric mode."


@register
class Pad12(_Pad):
    version = 12
    opsets = (12, None)
    negative = True
    doc = "Pad-1 with negative pads (crop first)."


# ---- Roll, GatherElements, ScatterNDUpdate ------------------------------------------------------


@register
class Roll(Op):
    type = "Roll"
    version = 7
    opsets = (7, None)
    inputs = (3, 3)
    doc = "cyclic shift of data by shift[i] along axes[i] (shift may be one value for every axis)."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        _int_input(ctx, 1, "shift")
        _int_input(ctx, 2, "axes")
        x = ctx.inputs[0]
        if x.shape is not None and ctx.inputs[2].value is not None:
            normalize_axes(_ints(ctx.inputs[2].value), len(x.shape), "axes")
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        plans: dict[tuple, list] = {}  # (shape, shift, axes) -> the block copies (np.roll: 12 us on Swin's)

        def run(ins):
            x, shift, axes = ins[0], _ints(ins[1]), _ints(ins[2])
            key = (x.shape, tuple(shift), tuple(axes))
            copies = plans.get(key)
            if copies is None:
                try:
                    axes = normalize_axes(axes, x.ndim, "axes")
                    if len(shift) == 1:
                        shift = shift * len(axes)
                    if len(shift) != len(axes):
                        raise ValueError(f"shift has {len(shift)} values, axes {len(axes)}")
                except Exception as e:
                    raise runtime_error(layer, str(getattr(e, "message", e))) from None
                copies = _roll_copies(x.shape, shift, axes)
                if len(plans) < 32:
                    plans[key] = copies
            out = np.empty(x.shape, x.dtype)
            for dst, src in copies:
                out[dst] = x[src]
            return [out]

        return run


def _roll_copies(shape: tuple[int, ...], shift: list[int], axes: list[int]) -> list[tuple[tuple, tuple]]:
    """A roll as (destination, source) block copies: an axis shifted by k (mod its length, shifts along a
    repeated axis adding up) sends its last k entries to the front, so axes shifted make 2**axes blocks."""
    total: dict[int, int] = {}
    for s, a in zip(shift, axes, strict=True):
        total[a] = total.get(a, 0) + s
    copies: list[tuple[tuple, tuple]] = [((), ())]
    for a, d in enumerate(shape):
        k = total.get(a, 0) % d if d else 0
        parts = [(slice(None), slice(None))] if k == 0 else \
            [(slice(k, None), slice(None, d - k)), (slice(None, k), slice(d - k, None))]
        copies = [(dst + (pd,), src + (ps,)) for dst, src in copies for pd, ps in parts]
    return copies


@register
class GatherElements(Op):
    type = "GatherElements"
    version = 6
    opsets = (6, None)
    inputs = (2, 2)
    schema = AttrSchema([optional("axis", parse_int, 0)])
    doc = "out[i][j] = data[i][indices[i][j]] along axis (negative indices count from the end; checked)."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, idx = ctx.inputs
        _int_input(ctx, 1, "indices")
        if x.shape is not None and idx.shape is not None:
            if len(x.shape) != len(idx.shape):
                raise fail("IRN032", f"indices {fmt_shape(idx.shape)} must have data's rank {len(x.shape)}")
            normalize_axes([ctx.attrs["axis"]], len(x.shape), "axis")
        return [TensorInfo(idx.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        axis, layer = ctx.attrs["axis"], ctx.layer

        def run(ins):
            x, idx = ins
            ax = axis % x.ndim
            n = x.shape[ax]
            i = idx.astype(np.int64)
            if i.size and (i.min() < -n or i.max() >= n):
                raise runtime_error(layer, f"an index is out of range [{-n}, {n - 1}] along axis {ax}")
            for k in range(x.ndim):
                if k != ax and idx.shape[k] > x.shape[k]:
                    raise runtime_error(layer, f"indices {list(idx.shape)} exceed data {list(x.shape)} in dim {k}")
            i = np.where(i < 0, i + n, i)
            src = x[tuple(slice(0, idx.shape[k]) if k != ax else slice(None) for k in range(x.ndim))]
            return [np.ascontiguousarray(np.take_along_axis(src, i, axis=ax))]

        return run


class _ScatterND(Op):
    type = "ScatterNDUpdate"
    inputs = (3, 3)
    doc = "a copy of data with the slices at indices (the last dim indexes data's leading dims) replaced by updates."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, idx, upd = ctx.inputs
        _int_input(ctx, 1, "indices")
        if upd.dtype != x.dtype:
            raise fail("IRN033", f"updates have element type {upd.dtype}, expected {x.dtype}")
        if x.shape is not None and idx.shape is not None and idx.shape and idx.shape[-1] != -1:
            k = idx.shape[-1]
            if k > len(x.shape):
                raise fail("IRN032", f"indices' last dim ({k}) exceeds data's rank {len(x.shape)}")
            if upd.shape is not None and len(upd.shape) != len(idx.shape) - 1 + len(x.shape) - k:
                raise fail("IRN032", f"updates {fmt_shape(upd.shape)} do not fit indices {fmt_shape(idx.shape)} and "
                                     f"data {fmt_shape(x.shape)}")
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer

        def run(ins):
            x, idx, upd = ins
            k = idx.shape[-1] if idx.ndim else 0
            y = x.copy()
            if idx.size == 0 or k == 0:
                return [y]
            flat = idx.reshape(-1, k).astype(np.int64)
            dims = np.array(x.shape[:k], np.int64)
            if np.any(flat < -dims) or np.any(flat >= dims):
                raise runtime_error(layer, f"an index is out of range for data {list(x.shape)}")
            flat = np.where(flat < 0, flat + dims, flat)
            want = idx.shape[:-1] + x.shape[k:]
            if tuple(upd.shape) != tuple(want):
                raise runtime_error(layer, f"updates {list(upd.shape)} must be {list(want)}")
            u = upd.reshape((-1,) + x.shape[k:])
            combine = _REDUCE.get(ctx.attrs.get("reduction", "none"))
            for row, val in zip(flat, u, strict=True):  # in order: a repeated index takes the last update
                y[tuple(row)] = val if combine is None else combine(y[tuple(row)], val)
            return [y]

        return run


@register
class ScatterNDUpdate3(_ScatterND):
    version = 3
    opsets = (3, 14)


_REDUCE = {"sum": np.add, "sub": np.subtract, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


@register
class ScatterNDUpdate15(_ScatterND):
    version = 15
    opsets = (15, None)
    schema = AttrSchema([optional("reduction", enum("none", "sum", "sub", "prod", "min", "max"), "none")])
    doc = "ScatterNDUpdate-3, or with reduction the updates combined into the data (sum, sub, prod, min, max)."



# ---- Tile, Reverse, CumSum, TopK, StridedSlice ----------------------------------------------------------


@register
class Tile(Op):
    type = "Tile"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    doc = "data repeated `repeats` times per dim (a shorter repeats pads with 1s, a longer one adds dims)."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, reps = ctx.inputs
        _int_input(ctx, 1, "repeats")
        if reps.value is None or x.shape is None:
            n = None if reps.shape is None or reps.shape[0] == -1 or x.shape is None else max(reps.shape[0],
                                                                                                len(x.shape))
            return [TensorInfo(None if n is None else (-1,) * n, x.dtype)]
        r = _ints(reps.value)
        if any(v < 0 for v in r):
            raise fail("IRN032", f"repeats {r} must be non-negative")
        n = max(len(r), len(x.shape))
        r = [1] * (n - len(r)) + r
        dims = [1] * (n - len(x.shape)) + list(x.shape)
        out = TensorInfo(tuple(-1 if d == -1 else d * k for d, k in zip(dims, r, strict=True)), x.dtype)
        if x.value is not None:
            out.value = np.tile(x.value, r)
        return [out]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer

        def run(ins):
            r = _ints(ins[1])
            if any(v < 0 for v in r):
                raise runtime_error(layer, f"repeats {r} must be non-negative")
            return [np.ascontiguousarray(np.tile(ins[0], r))]

        return run


@register
class Reverse(Op):
    type = "Reverse"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    schema = AttrSchema([Attr("mode", enum("index", "mask"))])
    doc = "data reversed along axes given as indices (mode index) or as a boolean mask (mode mask)."

    @staticmethod
    def _axes(v: np.ndarray, mode: str, rank: int) -> list[int]:
        if mode == "mask":
            m = np.asarray(v).reshape(-1).astype(bool)
            if m.size != rank:
                raise fail("IRN032", f"the axes mask has {m.size} values, data has rank {rank}")
            return [int(a) for a in np.flatnonzero(m)]
        return normalize_axes(_ints(v), rank, "axes")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, axes = ctx.inputs
        if ctx.attrs["mode"] == "index":
            _int_input(ctx, 1, "axes")
        elif axes.dtype != "boolean":
            raise fail("IRN033", f"mode=mask needs boolean axes, got {axes.dtype}")
        if x.shape is not None and axes.value is not None:
            self._axes(axes.value, ctx.attrs["mode"], len(x.shape))
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        mode, layer = ctx.attrs["mode"], ctx.layer

        def run(ins):
            try:
                ax = self._axes(ins[1], mode, ins[0].ndim)
            except Exception as e:
                raise runtime_error(layer, str(getattr(e, "message", e))) from None
            return [np.ascontiguousarray(np.flip(ins[0], ax)) if ax else ins[0].copy()]

        return run


@register
class CumSum(Op):
    type = "CumSum"
    version = 3
    opsets = (3, None)
    inputs = (1, 2)
    schema = AttrSchema([optional("exclusive", parse_bool, False), optional("reverse", parse_bool, False)])
    doc = "cumulative sum along a scalar axis (default 0); exclusive leaves each element out; reverse from the end."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype == "boolean":
            raise fail("IRN033", "CumSum takes numeric data, got boolean")
        if len(ctx.inputs) > 1:
            _int_input(ctx, 1, "axis")
            if x.shape is not None and ctx.inputs[1].value is not None:
                normalize_axes(_ints(ctx.inputs[1].value), len(x.shape), "axis")
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        exclusive, reverse, layer = ctx.attrs["exclusive"], ctx.attrs["reverse"], ctx.layer

        def run(ins):
            x = ins[0]
            try:
                ax = normalize_axes(_ints(ins[1]) if len(ins) > 1 else [0], max(x.ndim, 1), "axis")[0]
            except Exception as e:
                raise runtime_error(layer, str(getattr(e, "message", e))) from None
            if x.ndim == 0:
                return [np.zeros_like(x) if exclusive else x.copy()]
            cdt = compute_dtype(x.dtype) if is_float_dtype(x.dtype) else x.dtype
            v = np.flip(x, ax) if reverse else x
            c = np.cumsum(v, axis=ax, dtype=cdt)
            if exclusive:
                c = np.concatenate([np.zeros_like(np.take(c, [0], axis=ax)), np.take(c, range(c.shape[ax] - 1),
                                                                                     axis=ax)], axis=ax)
            c = np.flip(c, ax) if reverse else c
            return [np.ascontiguousarray(cast(c, x.dtype))]

        return run


class _TopK(Op):
    type = "TopK"
    inputs = (2, 2)
    outputs = (2, 2)
    stable_attr: bool = False

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, k = ctx.inputs
        _int_input(ctx, 1, "k")
        if k.shape is not None and any(d not in (1, -1) for d in k.shape):
            raise fail("IRN032", f"k must be a single value, got {fmt_shape(k.shape)}")
        it = ctx.attrs.get("index_element_type", "i32")
        if x.shape is None:
            return [TensorInfo(None, x.dtype), TensorInfo(None, it)]
        ax = normalize_axes([ctx.attrs["axis"]], len(x.shape), "axis")[0]
        kv = None if k.value is None else int(np.asarray(k.value).reshape(-1)[0])
        if kv is not None and kv < 0:
            raise fail("IRN032", f"k={kv} must be non-negative")
        d = x.shape[ax]
        out_k = -1 if kv is None or d == -1 else min(kv, d)
        shape = x.shape[:ax] + (out_k,) + x.shape[ax + 1:]
        return [TensorInfo(shape, x.dtype), TensorInfo(shape, it)]

    def build(self, ctx: NodeContext) -> Kernel:
        a, layer = ctx.attrs, ctx.layer
        it = ELEMENT_TYPES_INDEX[a.get("index_element_type", "i32")]

        def run(ins):
            x = ins[0]
            k = int(np.asarray(ins[1]).reshape(-1)[0])
            if k < 0:
                raise runtime_error(layer, f"k={k} must be non-negative")
            ax = a["axis"] % x.ndim
            k = min(k, x.shape[ax])
            key = x.astype(np.float64) if x.dtype.kind in "fuV" else x.astype(np.int64)
            # a stable sort: among equal values the lower index comes first, for max and min alike
            order = np.argsort(-key if a["mode"] == "max" else key, axis=ax, kind="stable")
            idx = np.take(order, range(k), axis=ax)
            if a["sort"] == "index":
                idx = np.sort(idx, axis=ax)
            vals = np.take_along_axis(x, idx, axis=ax)
            return [np.ascontiguousarray(vals), np.ascontiguousarray(idx.astype(it))]

        return run

    def pointed_values(self, attrs, data, port, index):
        if port != 1 or data.ndim == 0:
            return None
        moved = np.moveaxis(data, attrs["axis"] % data.ndim, -1)  # rows along the axis
        picked = np.moveaxis(index, attrs["axis"] % data.ndim, -1)
        rows = moved.reshape(-1, moved.shape[-1])
        row_of = np.arange(rows.shape[0]).reshape(moved.shape[:-1] + (1,))
        got = values_at(rows, np.broadcast_to(row_of, picked.shape), picked)
        return np.moveaxis(got, -1, attrs["axis"] % data.ndim)


ELEMENT_TYPES_INDEX = {"i32": np.dtype(np.int32), "i64": np.dtype(np.int64)}
_TOPK_BASE = [Attr("axis", parse_int), Attr("mode", enum("max", "min")), Attr("sort", enum("value", "index", "none"))]


@register
class TopK1(_TopK):
    version = 1
    opsets = (1, 2)
    schema = AttrSchema(_TOPK_BASE + [optional("index_element_type", enum("i32", "i64"), "i32")])
    doc = "the k largest (mode max) or smallest values along axis and their indices; sort by value or index."


@register
class TopK3(_TopK):
    version = 3
    opsets = (3, 10)
    schema = AttrSchema(_TOPK_BASE + [optional("index_element_type", enum("i32", "i64"), "i32")])
    doc = "TopK-1 with index_element_type."


@register
class TopK11(_TopK):
    version = 11
    opsets = (11, None)
    schema = AttrSchema(_TOPK_BASE + [optional("index_element_type", enum("i32", "i64"), "i32"),
                                      optional("stable", parse_bool, False)])
    doc = "TopK-3 with `stable` (irnorm is always stable: ties keep the lower index first)."


def _mask(v: list[int], n: int) -> list[int]:
    return list(v) + [0] * max(n - len(v), 0)


def strided_index(rank: int, begin: list[int], end: list[int], strides: list[int], a: dict) -> tuple:
    """The numpy index of a StridedSlice: per begin entry, an ellipsis, a new axis, a shrunk axis (an
    integer) or a slice with the masked bounds left open."""
    n = len(begin)
    bm, em = _mask(a["begin_mask"], n), _mask(a["end_mask"], n)
    nm, sm, el = _mask(a["new_axis_mask"], n), _mask(a["shrink_axis_mask"], n), _mask(a["ellipsis_mask"], n)
    if sum(1 for v in el[:n] if v) > 1:
        raise fail("IRN032", "at most one ellipsis")
    idx: list = []
    for i in range(n):
        s = strides[i] if i < len(strides) else 1
        if s == 0:
            raise fail("IRN032", "strides must not be 0")
        if el[i]:
            idx.append(Ellipsis)
        elif nm[i]:
            idx.append(None)
        elif sm[i]:
            # OpenVINO's CPU plugin takes index 0 when a shrunk axis also has its begin masked (docs/ir-format.md §12)
            idx.append(0 if bm[i] else int(begin[i]))
        else:
            idx.append(slice(None if bm[i] else begin[i], None if em[i] else end[i], s))
    return tuple(idx)


def strided_shape(shape: tuple[int, ...], idx: tuple) -> tuple[int, ...]:
    """The output shape of data of `shape` (dims may be -1) indexed by `idx`, without touching data."""
    consumed = sum(1 for t in idx if t is not None and t is not Ellipsis)
    if consumed > len(shape):
        raise fail("IRN032", f"the slice addresses {consumed} dims, data has {len(shape)}")
    out: list[int] = []
    d = 0
    for t in idx:
        if t is Ellipsis:
            n = len(shape) - consumed
            out.extend(shape[d:d + n])
            d += n
        elif t is None:
            out.append(1)
        elif isinstance(t, int):
            if shape[d] != -1 and not -shape[d] <= t < shape[d]:
                raise fail("IRN032", f"shrunk index {t} is out of range for dim {d} of size {shape[d]}")
            d += 1
        else:
            out.append(-1 if shape[d] == -1 else len(range(*t.indices(shape[d]))))
            d += 1
    out.extend(shape[d:])
    return tuple(out)


@register
class StridedSlice(Op):
    type = "StridedSlice"
    version = 1
    opsets = (1, None)
    inputs = (3, 4)
    schema = AttrSchema([Attr(m, parse_int_list) for m in ("begin_mask", "end_mask")] +
                        [optional(m, parse_int_list, []) for m in ("new_axis_mask", "shrink_axis_mask",
                                                                  "ellipsis_mask")])
    doc = "numpy-style strided slicing with begin/end/new-axis/shrink-axis/ellipsis masks."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        for i, what in ((1, "begin"), (2, "end"), (3, "strides")):
            if i < len(ctx.inputs):
                _int_input(ctx, i, what)
        vals = [i.value for i in ctx.inputs[1:]]
        if x.shape is None or any(v is None for v in vals):
            return [TensorInfo(None, x.dtype)] if x.shape is None or ctx.inputs[1].shape is None else \
                [TensorInfo(None, x.dtype)]
        begin, end = _ints(vals[0]), _ints(vals[1])
        strides = _ints(vals[2]) if len(vals) > 2 else [1] * len(begin)
        idx = strided_index(len(x.shape), begin, end, strides, ctx.attrs)
        shape = strided_shape(tuple(x.shape), idx)
        if x.value is not None:
            return [TensorInfo(shape, x.dtype, np.ascontiguousarray(np.asarray(x.value)[idx]))]
        part = partial_of(x)
        if part is not None and len(x.shape) == 1 and len(shape) == 1 and shape[0] != -1:
            return [with_partial(shape, x.dtype, list(np.array(part, dtype=object)[idx]))]
        return [TensorInfo(shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        a, layer = ctx.attrs, ctx.layer

        def run(ins):
            x = ins[0]
            begin, end = _ints(ins[1]), _ints(ins[2])
            strides = _ints(ins[3]) if len(ins) > 3 else [1] * len(begin)
            try:
                idx = strided_index(x.ndim, begin, end, strides, a)
                strided_shape(x.shape, idx)
                return [np.array(x[idx], copy=True, order="C")]
            except Exception as e:
                raise runtime_error(layer, str(getattr(e, "message", e))) from None

        return run
