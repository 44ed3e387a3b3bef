"""Shape plumbing: ShapeOf-1/-3, Gather-1/-7/-8, Concat-1, Reshape-1, Squeeze-1/-15, Unsqueeze-1,
Broadcast-1/-3.

These ops move data without arithmetic.  When their inputs are constant (or, for ShapeOf, when the
input shape is fully static) ``infer`` computes the value with numpy, so shape subgraphs fold at
load time; in a dynamic-shape model they are re-inferred with the concrete shapes before each run,
so values keep flowing down ShapeOf -> Gather -> Concat -> Reshape chains, and their kernels compute
from the concrete arrays.  Kernels return fresh arrays (never views of their inputs).

Semantics follow OpenVINO 2026.4's reference implementation and shape inference:

* Gather: indices in [-n, n-1] select (negative ones count from the end, in every version, as the
  reference does; the CPU plugin returns 0 for negative indices in Gather-1/-7); indices outside
  that range give zeros.  ``batch_dims`` may be negative (``+ rank(indices)``) and must not exceed
  the axis.
* Reshape: ``special_zero`` copies the input dim at the same index; one -1 is inferred.  For
  zero-element tensors a -1 whose co-factor is 0 becomes 1 (as OpenVINO does).
* Squeeze-1 (2024.3+ semantics, also Squeeze-15): an axis whose dim is not 1 is skipped; an axis on
  a dynamic dim is removed and must be 1 at run time.  Without axes (or with empty axes) every
  size-1 dim is removed, and a dynamic dim makes the output rank dynamic.  Squeeze-15 with
  ``allow_axis_skip=true`` makes the rank dynamic when an axis points to a dynamic dim.
* Unsqueeze: repeated axes count once; empty axes are an error (as in OpenVINO).
* Broadcast: numpy (target rank >= data rank; data dims 1 or equal), bidirectional (numpy rule both
  ways), explicit (``axes_mapping``: one increasing output axis per data dim).  Broadcast-1 spells
  explicit ``none``; OpenVINO writes a scalar u8 ``axes_mapping`` in numpy mode, which is ignored.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir.attrs import Attr, AttrError, AttrSchema, enum, optional, parse_bool, parse_int
from ..ir.dtypes import ELEMENT_TYPES, INT_TYPES
from .base import (
    Kernel,
    NodeContext,
    Op,
    RuleError,
    TensorInfo,
    broadcast_shape,
    fail,
    fmt_shape,
    int_list_length,
    normalize_axes,
    partial_of,
    prod,
    register,
    runtime_error,
    same_dim,
    with_partial,
)


def _int_tensor(ctx: NodeContext, i: int, what: str, ranks: tuple[int, ...] = (0, 1)) -> TensorInfo:
    info = ctx.inputs[i]
    if info.dtype not in INT_TYPES:
        raise fail("IRN033", f"{what} must be an integer tensor, got {info.dtype}")
    if info.shape is not None and len(info.shape) not in ranks:
        want = " or ".join({0: "a scalar", 1: "1-D", 2: "2-D"}.get(r, f"rank {r}") for r in ranks)
        raise fail("IRN032", f"{what} must be {want}, got {fmt_shape(info.shape)}")
    return info


def _fmt_pattern(p: list[int | None]) -> str:
    return "[" + ", ".join("?" if v is None else str(v) for v in p) + "]"


def _values(info: TensorInfo) -> list[int] | None:
    return None if info.value is None else [int(v) for v in np.asarray(info.value).reshape(-1)]


def _reshaped(ctx: NodeContext, out_shape: Callable[[np.ndarray, np.ndarray | None], tuple[int, ...]]) -> Kernel:
    """The kernel of a layer whose output is its data under another shape (Reshape, Squeeze, Unsqueeze):
    ``out_shape(x, second input or None)`` checks and returns that shape.  With no second input or a
    constant one, the shape depends on x's shape only and is worked out once per input shape (the checks
    cost more than the reshape); a run-time second input is keyed by its bytes too.

    The output is a view of the data when it is C-contiguous (numpy's reshape), as a Split's pieces are:
    no kernel writes into its operands (an epilogue works in place only on a product its own step
    allocated), and the run hands out no view of the caller's inputs or of another output
    (runtime/execute.py copies those).  Data that is a load-time constant is copied instead, so that no
    output can be a writable view into the model's weights.  A copy per step cost 1.5-6% of BERT-, GPT-2-
    and LLaMA-like exports (11-29 such steps each)."""
    const_second = len(ctx.inputs) < 2 or ctx.inputs[1].value is not None
    from_constant = ctx.inputs[0].value is not None
    memo: dict[tuple, tuple[int, ...]] = {}

    def run(ins):
        x = ins[0]
        if const_second:
            key = x.shape
        else:
            key = (x.shape, ins[1].dtype.str, ins[1].tobytes())
        shape = memo.get(key)
        if shape is None:
            shape = out_shape(x, ins[1] if len(ins) > 1 else None)
            if len(memo) < 64:
                memo[key] = shape
        return [x.copy().reshape(shape) if from_constant else x.reshape(shape)]

    # A static input shape with a constant (or no) second input: the output shape is known now, and the
    # planner's straight-line runner writes this step as the reshape itself on a static model
    # (runtime/plan.py), without the call (~1.5 us a step; BERT-like exports have 10-20 of them).
    x_shape = ctx.inputs[0].shape
    if const_second and not from_constant and x_shape is not None and all(d >= 0 for d in x_shape):
        second = ctx.inputs[1].value if len(ctx.inputs) > 1 else None
        try:
            shape = tuple(out_shape(_ShapeOnly(tuple(x_shape)), second))
            run.static_expr = f"{{x}}.reshape({shape!r})"  # what run() returns, for this shape
        except Exception:  # noqa: BLE001 - a shape the rule refuses: the step runs (and reports) as usual
            pass
    return run


class _ShapeOnly:
    """What an out_shape rule reads of its input: the shape and rank (no data allocated)."""

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape
        self.ndim = len(shape)


def _carry(src: TensorInfo, out: TensorInfo) -> TensorInfo:
    """Squeeze/Unsqueeze/Reshape keep element order: a partly known scalar/1-D input stays partly known."""
    if out.value is None and out.shape is not None and len(out.shape) <= 1 and -1 not in out.shape:
        elems = partial_of(src)
        if elems is not None:
            return with_partial(out.shape, out.dtype, elems)
    return out


def _checked(layer, fn, *args):
    """Run a shape rule at run time; a violation becomes an IRN064 InputError at the layer."""
    try:
        return fn(*args)
    except RuleError as e:
        raise runtime_error(layer, e.message) from None


# ---- ShapeOf -------------------------------------------------------------------------------


class _ShapeOfBase(Op):
    inputs = (1, 1)

    def _out_type(self, ctx: NodeContext) -> str:
        return "i64"

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        t = self._out_type(ctx)
        if x.shape is None:
            return [TensorInfo((-1,), t)]
        return [with_partial((len(x.shape),), t, [None if d == -1 else d for d in x.shape])]

    def build(self, ctx: NodeContext) -> Kernel:
        dt = ELEMENT_TYPES[self._out_type(ctx)]

        def run(ins):
            return [np.array(ins[0].shape, dt).reshape(ins[0].ndim)]

        return run


@register
class ShapeOf1(_ShapeOfBase):
    type = "ShapeOf"
    version = 1
    opsets = (1, 2)
    doc = "the input's shape as a 1-D i64 tensor; folded to a constant when the input shape is static."


@register
class ShapeOf3(_ShapeOfBase):
    type = "ShapeOf"
    version = 3
    opsets = (3, None)
    schema = AttrSchema([optional("output_type", enum("i64", "i32", case_insensitive=False), "i64",
                                  doc="i64 (default) or i32")])
    doc = "the input's shape as a 1-D tensor of `output_type` (i64 default, or i32); folded when static."

    def _out_type(self, ctx: NodeContext) -> str:
        return ctx.attrs["output_type"]


# ---- Gather --------------------------------------------------------------------------------


def gather_shape(data: tuple[int, ...], idx: tuple[int, ...], axis: int, batch_dims: int) -> tuple[int, ...]:
    return tuple(data[:axis]) + tuple(idx[batch_dims:]) + tuple(data[axis + 1:])


def gather(data: np.ndarray, idx: np.ndarray, axis: int, batch_dims: int) -> np.ndarray:
    """Gather with batch dims; negative indices count from the end, out-of-range ones give 0."""
    b = batch_dims
    n = data.shape[axis]
    if b == 0 and n and (idx.dtype.kind == "i" or idx.dtype.itemsize < 8):  # (u64 may not fit intp)
        try:  # the common case (embeddings, shape plumbing): one fresh take, which range-checks for us
            return data.take(idx, axis=axis)  # (negative indices in [-n, 0) count from the end, as here)
        except IndexError:
            pass  # some index out of range: those give 0, below
    out_shape = gather_shape(data.shape, idx.shape, axis, b)
    ix = np.asarray(idx).astype(np.int64, copy=False)
    ix = np.where(ix < 0, ix + n, ix)
    valid = (ix >= 0) & (ix < n)
    if n == 0 or not valid.any():
        return np.zeros(out_shape, data.dtype)
    safe = np.where(valid, ix, 0)
    nb, pre, post = prod(data.shape[:b]), prod(data.shape[b:axis]), prod(data.shape[axis + 1:])
    k = prod(idx.shape[b:])
    d4 = data.reshape(nb, pre, n, post)
    i2 = safe.reshape(nb, k)
    out = d4[np.arange(nb)[:, None, None], np.arange(pre)[None, :, None], i2[:, None, :]]
    if not valid.all():
        out = np.where(valid.reshape(nb, 1, k, 1), out, np.zeros((), data.dtype))
    return np.ascontiguousarray(out).reshape(out_shape)


class _GatherBase(Op):
    inputs = (3, 3)

    def _batch_dims(self, ctx: NodeContext) -> int:
        return 0

    def _params(self, ctx: NodeContext, data: tuple[int, ...], idx: tuple[int, ...], axis_raw: int
                ) -> tuple[int, int]:
        r, q = len(data), len(idx)
        (axis,) = normalize_axes([axis_raw], r, "axis") if r else (None,)
        if axis is None:
            raise fail("IRN032", "data must have rank >= 1 to gather from")
        b = self._batch_dims(ctx)
        b_raw = b
        if b < 0:
            b += q
        if not 0 <= b <= min(r, q):
            raise fail("IRN032", f"batch_dims={b_raw} is out of range for data rank {r} and indices rank {q} "
                                 f"(allowed [{-min(r, q)}, {min(r, q)}])")
        if b > axis:
            raise fail("IRN032", f"batch_dims={b_raw} must not exceed the axis ({axis})")
        for i in range(b):
            if not same_dim(data[i], idx[i]):
                raise fail("IRN032", f"batch dim {i} differs: data {fmt_shape(data)} has {data[i]}, indices "
                                     f"{fmt_shape(idx)} have {idx[i]}")
        return axis, b

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        data, idx = ctx.inputs[0], _int_tensor(ctx, 1, "indices", ranks=tuple(range(64)))
        axis_info = _int_tensor(ctx, 2, "axis")
        if axis_info.shape is not None and prod(axis_info.shape) != 1:
            raise fail("IRN032", f"axis must hold one value, got shape {fmt_shape(axis_info.shape)}")
        axis_raw = int(ctx.const(2, "axis").reshape(-1)[0])
        if data.shape is None or idx.shape is None:
            return [TensorInfo(None, data.dtype)]
        axis, b = self._params(ctx, data.shape, idx.shape, axis_raw)
        out = TensorInfo(gather_shape(data.shape, idx.shape, axis, b), data.dtype)
        if data.value is not None and idx.value is not None:
            out.value = gather(data.value, idx.value, axis, b)
        elif idx.value is not None and len(data.shape) == 1 and len(out.shape) <= 1:
            elems = partial_of(data)
            if elems is not None:
                n = len(elems)
                picked = [elems[i + n if i < 0 else i] if -n <= i < n else 0 for i in _values(idx)]
                return [with_partial(out.shape, data.dtype, picked)]
        return [out]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        memo: dict[tuple, tuple[int, int]] = {}  # (data shape, indices shape, axis bytes) -> checked (axis, b)

        def run(ins):
            data, idx, ax = ins
            key = (data.shape, idx.shape, np.asarray(ax).tobytes())
            params = memo.get(key)
            if params is None:
                params = _checked(layer, self._params, ctx, data.shape, idx.shape, int(np.asarray(ax).reshape(-1)[0]))
                if len(memo) < 64:
                    memo[key] = params
            return [gather(data, idx, *params)]

        # A static data shape and one constant in-range index on a constant axis (a `select`: Swin's and
        # ViT's q / k / v of a fused projection, a class token): the planner's straight-line runner writes
        # this step as the indexing itself on a static model (runtime/plan.py), without the call: a view of
        # the data where it is one C block (as a Reshape's output is), else a C-contiguous copy.
        expr = _select_expr(ctx, self._batch_dims(ctx))
        if expr is not None:
            run.static_expr = expr
        return run


def _select_expr(ctx: NodeContext, batch_dims: int) -> str | None:
    """The static_expr of a Gather that picks one slice by a constant index:
    ``np.ascontiguousarray({x}[:, i, ...])`` (a rank-0 result copied); a [1]-shaped index keeps the axis
    (``i:i+1``).  None when anything is not known now or the index is out of range (the kernel's zeros)."""
    data, idx, axis_v = ctx.inputs[0].shape, ctx.inputs[1].value, ctx.inputs[2].value
    if data is None or any(d < 0 for d in data) or idx is None or axis_v is None or batch_dims != 0:
        return None
    idx = np.asarray(idx)
    if idx.dtype.kind not in "iu" or idx.shape not in ((), (1,)) or np.asarray(axis_v).size != 1:
        return None
    axis = int(np.asarray(axis_v).reshape(-1)[0])
    if not -len(data) <= axis < len(data):
        return None
    axis %= len(data)
    n, i = data[axis], int(idx.reshape(-1)[0])
    if not -n <= i < n:
        return None
    i %= n
    pick = str(i) if idx.shape == () else f"{i}:{i + 1}"
    view = "{x}[" + ", ".join([":"] * axis + [pick, "..."]) + "]"  # the Ellipsis: an array even at rank 0
    if len(data) == 1 and idx.shape == ():
        return view + ".copy()"  # rank 0: ascontiguousarray would make it [1]
    return f"np.ascontiguousarray({view})"  # a copy only of what is not one C block


_GATHER_DOC = ("data, indices (integer), axis (constant scalar or [1]); output data.shape[:axis] + "
               "indices.shape[batch_dims:] + data.shape[axis+1:]; negative indices count from the end; "
               "out-of-range indices give 0.")


@register
class Gather1(_GatherBase):
    type = "Gather"
    version = 1
    opsets = (1, 6)
    doc = _GATHER_DOC + " (The CPU plugin returns 0 for negative indices; irnorm follows the reference.)"


@register
class Gather7(_GatherBase):
    type = "Gather"
    version = 7
    opsets = (7, 7)
    schema = AttrSchema([optional("batch_dims", parse_int, 0, doc="leading dims shared by data and indices")])
    doc = _GATHER_DOC + " batch_dims (default 0, negative counts from the indices rank)."

    def _batch_dims(self, ctx: NodeContext) -> int:
        return ctx.attrs["batch_dims"]


@register
class Gather8(Gather7):
    type = "Gather"
    version = 8
    opsets = (8, None)


# ---- Concat --------------------------------------------------------------------------------


def concat_shape(shapes: list[tuple[int, ...]], axis_raw: int) -> tuple[tuple[int, ...], int]:
    r = len(shapes[0])
    if r == 0:
        raise fail("IRN032", "Concat inputs must have rank >= 1, got scalars")
    for k, s in enumerate(shapes):
        if len(s) != r:
            raise fail("IRN032", f"input {k} has rank {len(s)} {fmt_shape(s)}, input 0 has rank {r} "
                                 f"{fmt_shape(shapes[0])}")
    (axis,) = normalize_axes([axis_raw], r, "axis")
    out = list(shapes[0])
    for k, s in enumerate(shapes[1:], start=1):
        for d in range(r):
            if d == axis:
                continue
            if not same_dim(out[d], s[d]):
                raise fail("IRN032", f"input {k} {fmt_shape(s)} differs from input 0 {fmt_shape(shapes[0])} in "
                                     f"dim {d} ({s[d]} vs {out[d]}); only the concat axis {axis} may differ")
            out[d] = out[d] if out[d] != -1 else s[d]
    dims = [s[axis] for s in shapes]
    out[axis] = -1 if any(d == -1 for d in dims) else sum(dims)
    return tuple(out), axis


@register
class Concat(Op):
    type = "Concat"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([Attr("axis", parse_int, doc="negative counts from the back")])
    inputs = (1, 1 << 16)
    doc = "joins its inputs (same element type and rank; other dims equal) along `axis`."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        t = ctx.inputs[0].dtype
        for k, info in enumerate(ctx.inputs[1:], start=1):
            if info.dtype != t:
                raise fail("IRN033", f"input {k} has element type {info.dtype}, input 0 has {t}")
        if any(i.shape is None for i in ctx.inputs):
            return [TensorInfo(None, t)]
        shape, axis = concat_shape([i.shape for i in ctx.inputs], ctx.attrs["axis"])
        out = TensorInfo(shape, t)
        if all(i.value is not None for i in ctx.inputs):
            out.value = np.concatenate([i.value for i in ctx.inputs], axis=axis)
        elif len(shape) == 1 and shape[0] != -1 and t in INT_TYPES:
            elems: list[int | None] = []
            for info in ctx.inputs:
                p = partial_of(info)
                elems += p if p is not None else [None] * info.shape[0]
            return [with_partial(shape, t, elems)]
        return [out]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        axis_raw = ctx.attrs["axis"]

        axes: dict[tuple, int] = {}  # the inputs' shapes -> the checked axis (the check costs more than a small join)

        def run(ins):
            key = tuple([a.shape for a in ins])
            axis = axes.get(key)
            if axis is None:
                _, axis = _checked(layer, concat_shape, list(key), axis_raw)
                if len(axes) < 64:
                    axes[key] = axis
            return [np.concatenate(ins, axis=axis)]

        return run


# ---- Reshape -------------------------------------------------------------------------------


def reshape_shape(in_shape: tuple[int, ...] | None, pattern: list[int | None], special_zero: bool
                  ) -> tuple[int, ...]:
    """OpenVINO's Reshape-1 rule; -1 in `in_shape` marks dynamic dims and None in `pattern` unknown
    elements (then the result may keep -1 dims, checked again with concrete shapes at run time)."""
    def shown() -> str:  # only formatted for a message: this rule runs on every dynamic Reshape call
        return _fmt_pattern(pattern)

    out: list[int] = []
    minus = None
    copied: set[int] = set()
    for i, v in enumerate(pattern):
        if v is None:  # not known at load time
            out.append(-1)
        elif v == -1:
            if minus is not None:
                raise fail("IRN032", f"target shape {shown()} has more than one -1")
            minus = i
            out.append(-1)
        elif v < -1:
            raise fail("IRN032", f"target shape {shown()}: value {v} at index {i} is invalid (must be >= -1)")
        elif v == 0 and special_zero:
            if in_shape is not None and i >= len(in_shape):
                raise fail("IRN032", f"target shape {shown()}: 0 at index {i} copies input dim {i} (special_zero), "
                                     f"but the input {fmt_shape(in_shape)} has rank {len(in_shape)}")
            out.append(in_shape[i] if in_shape is not None else -1)
            copied.add(i)
        else:
            out.append(v)
    if in_shape is None:
        return tuple(out)
    in_rest = [d for k, d in enumerate(in_shape) if k not in copied]
    out_rest = [d for k, d in enumerate(out) if k not in copied and k != minus]
    if any(d == -1 for d in in_rest) or any(d == -1 for d in out_rest):
        return tuple(out)  # dynamic: checked again with the concrete shape at run time
    ni, no = prod(in_rest), prod(out_rest)
    if minus is not None:
        if no == 0:
            if ni != 0:
                raise fail("IRN032", f"cannot reshape {fmt_shape(in_shape)} ({prod(in_shape)} elements) to "
                                     f"{shown()}: the dims other than -1 multiply to 0")
            out[minus] = 1
        elif ni % no:
            raise fail("IRN032", f"cannot reshape {fmt_shape(in_shape)} ({prod(in_shape)} elements) to {shown()}: "
                                 f"{ni} is not divisible by {no}, so the -1 at index {minus} has no integer size")
        else:
            out[minus] = ni // no
    elif ni != no:
        raise fail("IRN032", f"cannot reshape {fmt_shape(in_shape)} ({prod(in_shape)} elements) to "
                             f"{fmt_shape(out)} ({prod(out)} elements)")
    return tuple(out)


@register
class Reshape(Op):
    type = "Reshape"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([Attr("special_zero", parse_bool, doc="0 in the target copies the input dim")])
    inputs = (2, 2)
    doc = ("data, target shape (1-D integer; one -1 is inferred; with special_zero a 0 copies the input dim); "
           "element counts must match.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        target = _int_tensor(ctx, 1, "target shape", ranks=(1,))
        pattern = partial_of(target)
        sz = ctx.attrs["special_zero"]
        if pattern is None:
            if target.shape is None or target.shape[0] == -1:
                return [TensorInfo(None, x.dtype)]
            pattern = [None] * target.shape[0]
        out = TensorInfo(reshape_shape(x.shape, pattern, sz), x.dtype)
        if x.value is not None and -1 not in out.shape:
            out.value = x.value.reshape(out.shape)
        return [_carry(x, out)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        sz = ctx.attrs["special_zero"]

        def out_shape(x: np.ndarray, target: np.ndarray | None) -> tuple[int, ...]:
            return _checked(layer, reshape_shape, x.shape, [int(v) for v in target.reshape(-1)], sz)

        return _reshaped(ctx, out_shape)


# ---- Squeeze / Unsqueeze -------------------------------------------------------------------


def squeeze_shape(shape: tuple[int, ...], axes: list[int] | None, skip_dynamic: bool) -> tuple[int, ...] | None:
    """Output shape (None = dynamic rank).  axes None or empty: remove every 1."""
    if not axes:
        if any(d == -1 for d in shape):
            return None
        return tuple(d for d in shape if d != 1)
    if skip_dynamic and any(shape[a] == -1 for a in axes):
        return None
    return tuple(d for k, d in enumerate(shape) if not (k in axes and d in (1, -1)))


class _SqueezeBase(Op):
    inputs = (1, 2)

    def _skip(self, ctx: NodeContext) -> bool:
        return False

    def _axes(self, ctx: NodeContext, rank: int) -> list[int] | None:
        if len(ctx.inputs) < 2:
            return None
        _int_tensor(ctx, 1, "axes")
        raw = [int(a) for a in ctx.const(1, "axes").reshape(-1)]
        return sorted(set(normalize_axes(raw, rank, "axes")))

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if len(ctx.inputs) > 1 and ctx.inputs[1].value is None:  # axes known at run time: so is the rank
            _int_tensor(ctx, 1, "axes")
            return [TensorInfo(None, x.dtype)]
        if x.shape is None:
            if len(ctx.inputs) > 1:
                ctx.const(1, "axes")
            return [TensorInfo(None, x.dtype)]
        axes = self._axes(ctx, len(x.shape))
        out = TensorInfo(squeeze_shape(x.shape, axes, self._skip(ctx)), x.dtype)
        if x.value is not None and out.shape is not None:
            out.value = x.value.reshape(out.shape)
        return [_carry(x, out)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        load_shape = ctx.inputs[0].shape
        skip = self._skip(ctx)
        axes_known = len(ctx.inputs) > 1

        def out_shape(x: np.ndarray, axes_in: np.ndarray | None) -> tuple[int, ...]:
            axes = None
            if axes_known:
                axes = sorted(set(_checked(layer, normalize_axes, [int(a) for a in axes_in.reshape(-1)], x.ndim,
                                           "axes")))
                if not skip and load_shape is not None:
                    for a in axes:
                        if load_shape[a] == -1 and x.shape[a] != 1:
                            raise runtime_error(layer, f"axis {a} (dynamic when loaded, so squeezed) has size "
                                                       f"{x.shape[a]}, not 1, in the input {list(x.shape)}")
            return squeeze_shape(x.shape, axes, False)

        return _reshaped(ctx, out_shape)


_SQUEEZE_DOC = ("data, optional axes (scalar or 1-D integer, constant or given at run time): removes the size-1 "
                "dims named by axes (dims that are not 1 are skipped; a dynamic dim is removed and must be 1 at "
                "run time), or every size-1 dim without axes (a dynamic dim then makes the rank dynamic).")


@register
class Squeeze1(_SqueezeBase):
    type = "Squeeze"
    version = 1
    opsets = (1, 14)
    doc = _SQUEEZE_DOC


@register
class Squeeze15(_SqueezeBase):
    type = "Squeeze"
    version = 15
    opsets = (15, None)
    schema = AttrSchema([optional("allow_axis_skip", parse_bool, False,
                                  doc="true: an axis on a dynamic dim makes the output rank dynamic")])
    doc = _SQUEEZE_DOC + " allow_axis_skip=true: an axis on a dynamic dim makes the rank dynamic."

    def _skip(self, ctx: NodeContext) -> bool:
        return bool(ctx.attrs["allow_axis_skip"])


def unsqueeze_shape(shape: tuple[int, ...], raw: list[int]) -> tuple[int, ...]:
    if not raw:
        raise fail("IRN032", "axes is empty; Unsqueeze needs at least one axis")
    out_rank = len(shape) + len(set(raw))
    axes = sorted(set(normalize_axes(raw, out_rank, "axes")))
    out_rank = len(shape) + len(axes)
    if axes[-1] >= out_rank:
        raise fail("IRN032", f"axes {raw} point past the output rank {out_rank}")
    it = iter(shape)
    return tuple(1 if k in axes else next(it) for k in range(out_rank))


@register
class Unsqueeze(Op):
    type = "Unsqueeze"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    doc = ("data, axes (scalar or 1-D integer, constant or run-time, non-empty, in [-r', r'-1] for the output "
           "rank r'): inserts size-1 dims; repeated axes count once.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        _int_tensor(ctx, 1, "axes")
        if ctx.inputs[1].value is None:  # axes known at run time: where the new dims go is not
            count = int_list_length(ctx, 1, "axes")
            known = x.shape is not None and count is not None
            return [TensorInfo((-1,) * (len(x.shape) + count) if known else None, x.dtype)]
        raw = [int(a) for a in ctx.const(1, "axes").reshape(-1)]
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        out = TensorInfo(unsqueeze_shape(x.shape, raw), x.dtype)
        if x.value is not None:
            out.value = x.value.reshape(out.shape)
        return [_carry(x, out)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        x_info, axes_info = ctx.inputs
        # Axes given at run time: the output rank promised at load time must hold (repeated axes would break it).
        out_rank = None
        if axes_info.value is None and x_info.shape is not None and axes_info.shape is not None:
            count = 1 if not axes_info.shape else axes_info.shape[0]
            out_rank = None if count == -1 else len(x_info.shape) + count

        def out_shape(x: np.ndarray, axes: np.ndarray | None) -> tuple[int, ...]:
            shape = _checked(layer, unsqueeze_shape, x.shape, [int(a) for a in axes.reshape(-1)])
            if out_rank is not None and len(shape) != out_rank:
                raise runtime_error(layer, f"axes {axes.reshape(-1).tolist()} name an axis twice: the output would "
                                           f"have rank {len(shape)}, not the {out_rank} known when loading")
            return shape

        return _reshaped(ctx, out_shape)


# ---- Broadcast -----------------------------------------------------------------------------


def _mode1(text: str) -> str:
    t = text.strip().lower()
    if t == "numpy":
        return "numpy"
    if t in ("none", "explicit"):
        return "explicit"
    if t == "pdpd":
        raise AttrError("'pdpd' broadcasting is not supported by irnorm", code="IRN023")
    raise AttrError(f"'{text}' is not one of numpy, none (explicit)")


def _mode3(text: str) -> str:
    t = text.strip().lower()
    if t in ("numpy", "explicit", "bidirectional"):
        return t
    if t == "pdpd":
        raise AttrError("'pdpd' broadcasting is not supported by irnorm", code="IRN023")
    raise AttrError(f"'{text}' is not one of numpy, explicit, bidirectional")


def broadcast_target_shape(data: tuple[int, ...], target: list[int | None], mode: str, mapping: list[int] | None
                           ) -> tuple[int, ...]:
    """Output shape of Broadcast; data dims may be -1 and target elements None (not known at load)."""
    shown = _fmt_pattern(target)
    for k, t in enumerate(target):
        if t is not None and t < 0:
            raise fail("IRN032", f"target_shape {shown} has a negative value at index {k}")
    tdims = tuple(-1 if t is None else t for t in target)
    r, n = len(data), len(target)
    if mode == "bidirectional":
        return broadcast_shape(tuple(data), tdims, "numpy", ("data", "target_shape"))
    if mode == "numpy":
        if n < r:
            raise fail("IRN032", f"target_shape {shown} has rank {n}, smaller than the data rank {r} "
                                 f"{fmt_shape(data)} (numpy mode)")
        for i, d in enumerate(data):
            t = tdims[n - r + i]
            if t != -1 and d not in (1, -1, t):
                raise fail("IRN032", f"data dim {i} (size {d}) of {fmt_shape(data)} cannot be broadcast to "
                                     f"target dim {n - r + i} (size {t}) of {shown} (numpy mode: it must be 1 or {t})")
        return tdims
    assert mapping is not None
    if len(mapping) != r:
        raise fail("IRN032", f"axes_mapping {mapping} has {len(mapping)} values, the data {fmt_shape(data)} has "
                             f"rank {r}")
    for k, a in enumerate(mapping):
        if not 0 <= a < n:
            raise fail("IRN032", f"axes_mapping value {a} is out of range [0, {n - 1}] for target_shape {shown}")
        if k and a <= mapping[k - 1]:
            raise fail("IRN032", f"axes_mapping {mapping} must be strictly increasing (Broadcast does not transpose)")
    for k, a in enumerate(mapping):
        if tdims[a] != -1 and data[k] not in (1, -1, tdims[a]):
            raise fail("IRN032", f"data dim {k} (size {data[k]}) does not match target dim {a} (size {tdims[a]}) "
                                 f"named by axes_mapping (explicit mode: it must be 1 or {tdims[a]})")
    return tdims


def broadcast(data: np.ndarray, shape: tuple[int, ...], mode: str, mapping: list[int] | None) -> np.ndarray:
    if mode == "explicit":
        view = [1] * len(shape)
        for k, a in enumerate(mapping or []):
            view[a] = data.shape[k]
        data = data.reshape(view)
    out = np.empty(shape, data.dtype)
    np.copyto(out, data)  # broadcasts as np.broadcast_to would, without building the view (a few us)
    return out


class _BroadcastBase(Op):
    inputs = (2, 3)

    def _mapping(self, ctx: NodeContext, mode: str) -> list[int] | None:
        if mode != "explicit":
            return None
        if len(ctx.inputs) < 3:
            raise fail("IRN017", "explicit mode needs the axes_mapping input (input 2)")
        _int_tensor(ctx, 2, "axes_mapping")
        return [int(a) for a in ctx.const(2, "axes_mapping").reshape(-1)]

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        data = ctx.inputs[0]
        target = _int_tensor(ctx, 1, "target_shape", ranks=(1,))
        mode = ctx.attrs["mode"]
        mapping = self._mapping(ctx, mode)
        tv = partial_of(target)
        if tv is None:
            if target.shape is None or target.shape[0] == -1:
                return [TensorInfo(None, data.dtype)]
            tv = [None] * target.shape[0]
        if data.shape is None:
            return [TensorInfo(None if mode == "bidirectional" else tuple(-1 if v is None else v for v in tv),
                               data.dtype)]
        out = TensorInfo(broadcast_target_shape(data.shape, tv, mode, mapping), data.dtype)
        if data.value is not None and None not in tv:
            out.value = broadcast(data.value, out.shape, mode, mapping)
        return [out]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        mode = ctx.attrs["mode"]
        explicit = mode == "explicit"
        memo: dict[tuple, tuple] = {}  # (data shape, target bytes, mapping bytes) -> (checked shape, mapping)

        def run(ins):
            data = ins[0]
            key = (data.shape, ins[1].tobytes(), ins[2].tobytes() if explicit else b"")
            hit = memo.get(key)
            if hit is None:
                target = [int(v) for v in ins[1].reshape(-1)]
                mapping = [int(a) for a in ins[2].reshape(-1)] if explicit else None
                hit = (_checked(layer, broadcast_target_shape, data.shape, target, mode, mapping), mapping)
                if len(memo) < 64:
                    memo[key] = hit
            return [broadcast(data, hit[0], mode, hit[1])]

        return run


@register
class Broadcast1(_BroadcastBase):
    type = "Broadcast"
    version = 1
    opsets = (1, 2)
    schema = AttrSchema([optional("mode", _mode1, "numpy", doc="numpy (default) or none (= explicit)")])
    doc = ("data, target_shape (1-D integer), axes_mapping (explicit mode; ignored in numpy mode): numpy "
           "(unidirectional) or explicit broadcasting to target_shape.")


@register
class Broadcast3(_BroadcastBase):
    type = "Broadcast"
    version = 3
    opsets = (3, None)
    schema = AttrSchema([optional("mode", _mode3, "numpy", doc="numpy (default), explicit or bidirectional")])
    doc = ("data, target_shape (1-D integer), axes_mapping (explicit mode): numpy (unidirectional), "
           "bidirectional (output = numpy broadcast of both) or explicit broadcasting.")
