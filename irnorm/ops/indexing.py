"""Indexing by data: ScatterUpdate-3, ScatterElementsUpdate-3/12, GatherND-5/8, OneHot-1/16.

The kernels are numpy fancy indexing (flat offsets, ``ufunc.at`` for the reductions), which runs in C
at memory speed.  Every index taken from data is checked before use: an out-of-range one is a coded
run-time error (IRN064) naming the layer, never an out-of-bounds read or write (OpenVINO's CPU
plugin reads past the data for an out-of-range GatherND index; its spec calls the result undefined).

Semantics, from OpenVINO's specs and reference implementations:

* ScatterUpdate-3: ``data[..., indices[m..p], ...] = updates[..., m..p, ...]`` along ``axis``
  (updates' shape is ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``).  Indices must lie
  in ``[0, d - 1]``: the spec raises for a negative one, as does the CPU plugin.  A repeated index
  takes the last update.
* ScatterElementsUpdate-3/12: ``out[i][indices[i][j][k]][k] = updates[i][j][k]`` (axis 1), indices
  and updates of one shape and data's rank, no larger than data off the axis; negative indices count
  from the end.  -12 adds ``reduction`` (sum, prod, min, max, mean: every update at a position is
  combined into it) and ``use_init_val`` (false: data's value at a scattered position is left out, a
  neutral start value stands in).  mean of integers rounds down (floor), as OpenVINO's spec and
  reference do (its CPU plugin truncates: docs/ir-format.md §12 item 20); sum/prod of booleans are
  or/and, mean of booleans is refused.  f16/bf16 reductions accumulate in float32, rounded once.
* GatherND-5/8: the slices of data addressed by the last dim of indices, after ``batch_dims``
  leading dims shared by data and indices; negative indices count from the end.  The versions differ
  only in the output shape: -8 keeps the batch dims, -5 folds them into one (their product).
* OneHot-1/16: a new axis of length ``depth`` holding on_value at the index, off_value elsewhere;
  an index outside ``[0, depth - 1]`` gives an all-off row.  -16's ``negative_indices_mode=normalize``
  first maps an index in ``[-depth, -1]`` to ``index + depth`` (``ignore_negative``, the default,
  is -1's behaviour).  A depth known only at run time makes the new axis -1.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum, optional, parse_bool, parse_int
from ..ir.dtypes import INT_TYPES, cast, compute_dtype, is_float_dtype
from .base import (
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    fail,
    fmt_shape,
    merge_dim,
    normalize_axes,
    partial_of,
    prod,
    register,
    runtime_error,
    same_dim,
)

# The largest OneHot output irnorm allocates (elements): a depth from data must not ask for terabytes.
MAX_ONE_HOT_ELEMENTS = 1 << 32


def _ints(v: np.ndarray) -> list[int]:
    return [int(a) for a in np.asarray(v).reshape(-1)]


def _int_input(ctx: NodeContext, i: int, what: str) -> None:
    if ctx.inputs[i].dtype not in INT_TYPES:
        raise fail("IRN033", f"{what} must be an integer tensor, got {ctx.inputs[i].dtype}")


def _single(ctx: NodeContext, i: int, what: str) -> None:
    """An input that must hold one value: a scalar or a 1-element tensor."""
    shape = ctx.inputs[i].shape
    if shape is not None and (len(shape) > 1 or any(d not in (1, -1) for d in shape)):
        raise fail("IRN032", f"{what} must be a scalar or hold a single value, got {fmt_shape(shape)}")


def _axis_value(ctx: NodeContext, i: int, rank: int | None) -> int | None:
    """A constant axis input normalized to [0, rank); None when unknown (runtime value or rank)."""
    _int_input(ctx, i, "axis")
    _single(ctx, i, "axis")
    v = ctx.inputs[i].value
    if v is None or rank is None:
        return None
    return normalize_axes(_ints(v)[:1], rank, "axis")[0]


def _run_axis(layer, v: np.ndarray, rank: int) -> int:
    vals = _ints(v)
    if len(vals) != 1:
        raise runtime_error(layer, f"axis must hold a single value, got {len(vals)}")
    if not -rank <= vals[0] < rank:
        raise runtime_error(layer, f"axis {vals[0]} is out of range [{-rank}, {rank - 1}] for rank {rank}")
    return vals[0] % rank


def _as_int64(i: np.ndarray) -> np.ndarray:
    """Indices as int64; a u64 value past int64's range saturates (it stays out of range instead of
    wrapping to a valid negative index)."""
    i = np.asarray(i)
    if i.dtype == np.uint64:
        i = np.minimum(i, np.uint64(np.iinfo(np.int64).max))
    return i.astype(np.int64)


def _check_range(layer, i: np.ndarray, n: int, what: str, allow_negative: bool = True) -> np.ndarray:
    """`i` as int64 with negative values counted from the end; any value outside [-n, n-1] (or
    [0, n-1] when negatives are refused) is a run-time error."""
    i = _as_int64(i)
    lo = -n if allow_negative else 0
    if i.size and (int(i.min()) < lo or int(i.max()) >= n):
        bad = int(i[(i < lo) | (i >= n)].reshape(-1)[0])
        raise runtime_error(layer, f"{what} value {bad} is out of range [{lo}, {n - 1}]")
    return np.where(i < 0, i + n, i) if allow_negative else i


def _last_wins(flat: np.ndarray) -> np.ndarray:
    """Positions (into `flat`) of the last occurrence of each distinct value: assigning only those
    makes a repeated index take the last update, whatever order numpy assigns in."""
    rev = flat[::-1]
    _, first = np.unique(rev, return_index=True)
    return len(flat) - 1 - first


# ---- ScatterUpdate-3 ------------------------------------------------------------------------------


@register
class ScatterUpdate(Op):
    type = "ScatterUpdate"
    version = 3
    opsets = (3, None)
    inputs = (4, 4)
    doc = "a copy of data with the slices at indices (along axis, in [0, d-1]) replaced by updates."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, idx, upd, _ = ctx.inputs
        _int_input(ctx, 1, "indices")
        if upd.dtype != x.dtype:
            raise fail("IRN033", f"updates have element type {upd.dtype}, expected {x.dtype}")
        rank = None if x.shape is None else len(x.shape)
        ax = _axis_value(ctx, 3, rank)
        if ax is not None and idx.shape is not None and upd.shape is not None:
            want = x.shape[:ax] + tuple(idx.shape) + x.shape[ax + 1:]
            if len(upd.shape) != len(want) or not all(same_dim(a, b) for a, b in zip(upd.shape, want, strict=True)):
                raise fail("IRN032", f"updates {fmt_shape(upd.shape)} must be {fmt_shape(want)} (data's dims before "
                                     f"axis {ax}, indices' shape, data's dims after it)")
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer

        def run(ins):
            x, idx, upd, axv = ins
            if x.ndim == 0:
                raise runtime_error(layer, "data must have rank >= 1")
            ax = _run_axis(layer, axv, x.ndim)
            want = x.shape[:ax] + idx.shape + x.shape[ax + 1:]
            if tuple(upd.shape) != tuple(want):
                raise runtime_error(layer, f"updates {list(upd.shape)} must be {list(want)}")
            i = _check_range(layer, idx, x.shape[ax], "an index", allow_negative=False).reshape(-1)
            y = x.copy()
            if i.size == 0:
                return [y]
            keep = _last_wins(i)
            u = upd.reshape(x.shape[:ax] + (i.size,) + x.shape[ax + 1:])
            lead = (slice(None),) * ax
            y[lead + (i[keep],)] = u[lead + (keep,)]
            return [y]

        return run


# ---- ScatterElementsUpdate-3/12 --------------------------------------------------------------------


def _flat_offsets(i: np.ndarray, ax: int, data_shape: tuple[int, ...]) -> np.ndarray:
    """Flat offsets into data of every indices element: its own coordinates, `i` on the axis."""
    strides = [prod(data_shape[k + 1:]) for k in range(len(data_shape))]
    off = i * strides[ax]
    for k, n in enumerate(i.shape):
        if k != ax:
            shape = [1] * i.ndim
            shape[k] = n
            off = off + np.arange(n, dtype=np.int64).reshape(shape) * strides[k]
    return np.broadcast_to(off, i.shape).reshape(-1)


_UFUNC = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum, "mean": np.add}
_BOOL_UFUNC = {"sum": np.logical_or, "prod": np.logical_and, "min": np.logical_and, "max": np.logical_or}


def _neutral(reduction: str, dt: np.dtype):
    if dt == np.bool_:
        return reduction in ("prod", "min")
    if reduction in ("sum", "mean"):
        return 0
    if reduction == "prod":
        return 1
    info = np.finfo(dt) if dt.kind == "f" else np.iinfo(dt)
    return info.min if reduction == "max" else info.max


def scatter_elements(x: np.ndarray, flat: np.ndarray, vals: np.ndarray, reduction: str, use_init_val: bool
                     ) -> np.ndarray:
    """Data with the values combined into the flat offsets by a reduction (indices already checked;
    reduction none runs in kernels/scatter.py)."""
    work_dt = compute_dtype(x.dtype) if is_float_dtype(x.dtype) else x.dtype
    y = x.astype(work_dt, copy=True).reshape(-1)
    v = vals.astype(work_dt)
    if not use_init_val:
        y[flat] = _neutral(reduction, np.dtype(work_dt))
    ufunc = _BOOL_UFUNC[reduction] if y.dtype == np.bool_ else _UFUNC[reduction]
    if reduction == "mean" and y.dtype.kind in "iu":
        acc = y.astype(np.int64) if y.dtype.kind == "i" else y.astype(np.uint64)
        ufunc.at(acc, flat, v.astype(acc.dtype))
    else:
        acc = y
        ufunc.at(acc, flat, v)
    if reduction == "mean":
        count = np.bincount(flat, minlength=y.size)
        hit = np.flatnonzero(count)
        n = count[hit] + int(use_init_val)
        if y.dtype.kind in "iu":  # OpenVINO rounds an integer mean down
            y[hit] = np.floor(acc[hit].astype(np.float64) / n).astype(y.dtype)
        else:
            y[hit] = acc[hit] / n
    return cast(y, x.dtype).reshape(x.shape) if y.dtype != x.dtype else y.reshape(x.shape)


class _ScatterElements(Op):
    type = "ScatterElementsUpdate"
    inputs = (4, 4)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, idx, upd, _ = ctx.inputs
        _int_input(ctx, 1, "indices")
        if upd.dtype != x.dtype:
            raise fail("IRN033", f"updates have element type {upd.dtype}, expected {x.dtype}")
        red = ctx.attrs.get("reduction", "none")
        if red == "mean" and x.dtype == "boolean":
            raise fail("IRN033", "reduction=mean takes numeric data, got boolean")
        rank = None if x.shape is None else len(x.shape)
        ax = _axis_value(ctx, 3, rank)
        if idx.shape is not None and upd.shape is not None:
            if len(idx.shape) != len(upd.shape) or not all(same_dim(a, b) for a, b in zip(idx.shape, upd.shape,
                                                                                           strict=True)):
                raise fail("IRN032", f"indices {fmt_shape(idx.shape)} and updates {fmt_shape(upd.shape)} must have "
                                     "one shape")
        for other, what in ((idx, "indices"), (upd, "updates")):
            if x.shape is not None and other.shape is not None:
                if len(other.shape) != len(x.shape):
                    raise fail("IRN032", f"{what} {fmt_shape(other.shape)} must have data's rank {len(x.shape)}")
                for k, (a, b) in enumerate(zip(other.shape, x.shape, strict=True)):
                    if k != ax and a != -1 and b != -1 and a > b:
                        raise fail("IRN032", f"{what} {fmt_shape(other.shape)} exceed data {fmt_shape(x.shape)} in "
                                             f"dim {k}")
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        red = ctx.attrs.get("reduction", "none")
        use_init = ctx.attrs.get("use_init_val", True)

        def run(ins):
            x, idx, upd, axv = ins
            if x.ndim == 0:
                raise runtime_error(layer, "data must have rank >= 1")
            ax = _run_axis(layer, axv, x.ndim)
            if idx.shape != upd.shape or idx.ndim != x.ndim:
                raise runtime_error(layer, f"indices {list(idx.shape)} and updates {list(upd.shape)} must have one "
                                           f"shape, of data's rank {x.ndim}")
            for k in range(x.ndim):
                if k != ax and idx.shape[k] > x.shape[k]:
                    raise runtime_error(layer, f"indices {list(idx.shape)} exceed data {list(x.shape)} in dim {k}")
            if red == "none":  # in order, checking each index as it goes (kernels/scatter.py)
                from ..kernels.scatter import scatter_along_axis  # lazy: validate never imports numba

                i = _as_int64(idx) if idx.dtype == np.uint64 else idx
                y, bad = scatter_along_axis(x, i, upd, ax)
                if bad >= 0:
                    n = x.shape[ax]
                    raise runtime_error(layer, f"an index along axis {ax} value {int(i.reshape(-1)[bad])} is out of "
                                               f"range [{-n}, {n - 1}]")
                return [y]
            i = _check_range(layer, idx, x.shape[ax], f"an index along axis {ax}")
            if i.size == 0:
                return [x.copy()]
            return [scatter_elements(x, _flat_offsets(i, ax, x.shape), upd.reshape(-1), red, use_init)]

        return run


@register
class ScatterElementsUpdate3(_ScatterElements):
    version = 3
    opsets = (3, 11)
    doc = "out[..i.., indices[..], ..k..] = updates[..] along axis (negative indices count from the end)."


@register
class ScatterElementsUpdate12(_ScatterElements):
    version = 12
    opsets = (12, None)
    schema = AttrSchema([optional("reduction", enum("none", "sum", "prod", "min", "max", "mean"), "none"),
                         optional("use_init_val", parse_bool, True)])
    doc = "ScatterElementsUpdate-3 with reduction (sum, prod, min, max, mean) and use_init_val."


# ---- GatherND-5/8 --------------------------------------------------------------------------------


def _nonneg(v: int) -> str | None:
    return None if v >= 0 else "must be >= 0"


class _GatherND(Op):
    type = "GatherND"
    inputs = (2, 2)
    schema = AttrSchema([optional("batch_dims", parse_int, 0, check=_nonneg)])
    fold_batch: bool = False  # GatherND-5 folds the batch dims into one

    def _out_shape(self, x: tuple[int, ...], idx: tuple[int, ...], b: int) -> tuple[int, ...]:
        k = idx[-1]
        rest = idx[b:-1] + (x[b + k:] if k != -1 else ())
        if not self.fold_batch or b == 0:
            return idx[:b] + rest
        return (-1 if -1 in idx[:b] else prod(idx[:b]),) + rest

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, idx = ctx.inputs
        _int_input(ctx, 1, "indices")
        b = ctx.attrs["batch_dims"]
        if x.shape is None or idx.shape is None:
            return [TensorInfo(None, x.dtype)]
        if not x.shape or not idx.shape:
            raise fail("IRN032", f"data {fmt_shape(x.shape)} and indices {fmt_shape(idx.shape)} must have rank >= 1")
        if b >= min(len(x.shape), len(idx.shape)):
            raise fail("IRN032", f"batch_dims={b} must be less than the ranks of data ({len(x.shape)}) and indices "
                                 f"({len(idx.shape)})")
        for k in range(b):
            if not same_dim(x.shape[k], idx.shape[k]):
                raise fail("IRN032", f"batch dim {k} is {x.shape[k]} in data {fmt_shape(x.shape)} and {idx.shape[k]} "
                                     f"in indices {fmt_shape(idx.shape)}")
        k = idx.shape[-1]
        if k != -1 and b + k > len(x.shape):
            raise fail("IRN032", f"indices' last dim ({k}) exceeds data's rank {len(x.shape)} less batch_dims={b}")
        if k == -1:
            return [TensorInfo(None, x.dtype)]
        bshape = tuple(merge_dim(a, c) for a, c in zip(idx.shape[:b], x.shape[:b], strict=True))
        return [TensorInfo(self._out_shape(x.shape, bshape + idx.shape[b:], b), x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer, b = ctx.layer, ctx.attrs["batch_dims"]

        def run(ins):
            x, idx = ins
            if x.ndim == 0 or idx.ndim == 0 or b >= min(x.ndim, idx.ndim):
                raise runtime_error(layer, f"data {list(x.shape)} and indices {list(idx.shape)} do not fit "
                                           f"batch_dims={b}")
            if x.shape[:b] != idx.shape[:b]:
                raise runtime_error(layer, f"the batch dims of data {list(x.shape)} and indices {list(idx.shape)} "
                                           "differ")
            k = idx.shape[-1]
            if b + k > x.ndim:
                raise runtime_error(layer, f"indices' last dim ({k}) exceeds data's rank {x.ndim} less batch_dims={b}")
            nb = prod(x.shape[:b])
            rest = x.shape[b + k:]
            xb = x.reshape((nb,) + x.shape[b:])
            m = prod(idx.shape[b:-1])
            i = idx.reshape(nb, m, k)
            cols = tuple(_check_range(layer, i[..., j], x.shape[b + j], f"an index into dim {b + j}")
                         for j in range(k))
            batch = np.broadcast_to(np.arange(nb, dtype=np.int64)[:, None], (nb, m))
            g = xb[(batch,) + cols] if k else np.broadcast_to(xb[:, None], (nb, m) + rest)
            out = self._out_shape(x.shape, idx.shape, b)
            return [np.ascontiguousarray(g).reshape(out)]

        return run


@register
class GatherND5(_GatherND):
    version = 5
    opsets = (5, 7)
    fold_batch = True
    doc = "the slices of data at indices (after batch_dims shared leading dims, folded into one in the output)."


@register
class GatherND8(_GatherND):
    version = 8
    opsets = (8, None)
    doc = "GatherND-5 keeping the batch dims in the output shape."


# ---- OneHot-1/16 ----------------------------------------------------------------------------------


class _OneHot(Op):
    type = "OneHot"
    inputs = (4, 4)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        idx, depth, on, off = ctx.inputs
        _int_input(ctx, 0, "indices")
        _int_input(ctx, 1, "depth")
        _single(ctx, 1, "depth")
        _single(ctx, 2, "on_value")
        _single(ctx, 3, "off_value")
        if on.dtype != off.dtype:
            raise fail("IRN033", f"off_value has element type {off.dtype}, on_value {on.dtype}: they must match")
        d = -1
        known = partial_of(depth)
        if known and known[0] is not None:
            d = known[0]
            if d < 0:
                raise fail("IRN032", f"depth {d} must be non-negative")
        if idx.shape is None:
            return [TensorInfo(None, on.dtype)]
        r = len(idx.shape) + 1
        ax = normalize_axes([ctx.attrs["axis"]], r, "axis")[0]
        return [TensorInfo(idx.shape[:ax] + (d,) + idx.shape[ax:], on.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer, axis = ctx.layer, ctx.attrs["axis"]
        normalize = ctx.attrs.get("negative_indices_mode", "ignore_negative") == "normalize"

        def run(ins):
            idx, depth, on, off = ins
            d = _ints(depth)
            if len(d) != 1 or d[0] < 0:
                raise runtime_error(layer, f"depth must be one non-negative value, got {d}")
            d = d[0]
            if idx.size * d > MAX_ONE_HOT_ELEMENTS:
                raise runtime_error(layer, f"depth {d} for {idx.size} indices asks for an absurd output size")
            ax = axis % (idx.ndim + 1)
            i = _as_int64(idx)
            if normalize:
                i = np.where((i < 0) & (i >= -d), i + d, i)
            hot = i[..., None] == np.arange(d, dtype=np.int64)  # an index outside [0, d-1] matches nothing
            on_v, off_v = np.asarray(on).reshape(-1)[:1], np.asarray(off).reshape(-1)[:1]
            if on_v.size != 1 or off_v.size != 1:
                raise runtime_error(layer, "on_value and off_value must hold one value each")
            y = np.where(hot, on_v, off_v)
            return [np.ascontiguousarray(np.moveaxis(y, -1, ax))]

        return run


@register
class OneHot1(_OneHot):
    version = 1
    opsets = (1, 15)
    schema = AttrSchema([Attr("axis", parse_int)])
    doc = "a new axis of length depth: on_value at each index, off_value elsewhere (indices outside [0, depth) off)."


@register
class OneHot16(_OneHot):
    version = 16
    opsets = (16, None)
    schema = AttrSchema([Attr("axis", parse_int),
                         optional("negative_indices_mode", enum("ignore_negative", "normalize"), "ignore_negative")])
    doc = "OneHot-1 with negative_indices_mode: normalize maps an index in [-depth, -1] to index + depth."
