"""Binary search in sorted boundaries: Bucketize-3 and SearchSorted-15.

Both give, for each value ``v``, how many boundaries lie before it -- ``count(b < v)`` (C++'s
``lower_bound``) or ``count(b <= v)`` (``upper_bound``) -- as ``output_type`` (i64 default, or
i32).  The kernel is ``numpy.searchsorted``, whose ``side="left"`` is exactly ``count(b < v)`` and
``side="right"`` exactly ``count(b <= v)`` on sorted boundaries (ties included; -0.0 equals 0.0).

* Bucketize-3 (data ``[...]`` of any numeric type T, buckets 1-D of any numeric type): the output
  has data's shape.  ``with_right_bound`` (default true) makes bucket i the interval
  ``(b[i-1], b[i]]``, i.e. ``count(b < v)`` (side left); false makes it ``[b[i-1], b[i])``, i.e.
  ``count(b <= v)`` (side right).  Empty buckets give 0 everywhere, as the spec says.
* SearchSorted-15 (sorted_sequence ``[..., M]`` and values ``[..., K]`` of one numeric type): the
  output has the values' shape.  A 1-D sequence serves every value (values of any rank, a scalar
  included); otherwise both have one rank and equal leading dims, and each row of values is
  searched in its own row of the sequence.  ``right_mode`` false (default) is ``count(s < v)``
  (side left), true ``count(s <= v)`` (side right).  An empty sequence gives 0 (the spec's
  reference; OpenVINO's CPU plugin returns uninitialised memory, docs/ir-format.md section 12).

What OpenVINO's CPU plugin does and irnorm follows (docs/ir-format.md, "Bucketize-3, SearchSorted-15
and Inverse-14"):

* NaN values: the CPU plugin's binary searches compare with ``<`` (or ``<=``), which is false for
  NaN, so a NaN lands at 0 -- except in Bucketize with ``with_right_bound=false``, whose
  ``upper_bound`` puts it after every bucket (``len(buckets)``).  numpy sorts NaN last; irnorm
  gives the plugin's positions.
* Element types: the comparison is exact (the mathematical order of the two values) whatever the
  two types -- integers against integers exactly, any float involved in float64 (exact for every
  float type and for integers up to 2**53).  The CPU plugin compares in float32 when either side is
  a float or f64 (so i64 16777217 equals f32 16777216 there) and mishandles u64 values past 2**63;
  such cases are irnorm's exact results, documented.

Departure, by design: the boundaries must be sorted (the spec says so; Bucketize's spec also says
unique, but ties are well defined and accepted).  OpenVINO does not check and returns whatever its
binary search stumbles on for an unsorted sequence or one holding NaN; irnorm refuses those --
IRN032 for a constant, IRN064 at run time -- instead of returning positions that mean nothing.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.attrs import AttrSchema, enum, optional, parse_bool
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, is_float_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, fail, fmt_shape, merge_dim, register, runtime_error, same_dim

NUMERIC_TYPES = FLOAT_TYPES + INT_TYPES


def _numeric(ctx: NodeContext, i: int, what: str) -> str:
    t = ctx.inputs[i].dtype
    if t not in NUMERIC_TYPES:
        raise fail("IRN033", f"{what} must be a numeric (floating-point or integer) tensor, got {t}")
    return t


def unsorted_message(seq: np.ndarray, what: str) -> str | None:
    """Why `seq` is not sorted in ascending order along its last axis (a NaN counts as unsorted),
    or None when it is."""
    a = np.asarray(seq)
    if a.size == 0:
        return None
    if is_float_dtype(a.dtype):
        a = a.astype(np.float64) if a.dtype.itemsize < 4 or a.dtype.kind != "f" else a
        nan = np.isnan(a)
        if nan.any():
            pos = [int(i) for i in np.unravel_index(int(np.argmax(nan)), a.shape)]
            return f"{what} must be sorted in ascending order, but element {pos} is NaN"
    down = a[..., 1:] < a[..., :-1]
    if down.any():
        pos = tuple(int(i) for i in np.unravel_index(int(np.argmax(down)), down.shape))
        nxt = pos[:-1] + (pos[-1] + 1,)
        return (f"{what} must be sorted in ascending order along its last axis, but element {list(pos)} "
                f"({a[pos].item()}) is greater than element {list(nxt)} ({a[nxt].item()})")
    return None


def _i64(found) -> np.ndarray:
    """searchsorted's result as an int64 array (a 0-d one for a scalar value, which it returns as a scalar)."""
    return np.asarray(found, dtype=np.int64)


def search_1d(seq: np.ndarray, vals: np.ndarray, side: str) -> np.ndarray:
    """int64 positions of `vals` (any shape) in the sorted 1-D `seq` -- ``count(s < v)`` for side left,
    ``count(s <= v)`` for right -- comparing the two types' values exactly (floats against integers in
    float64).  NaN values land at ``len(seq)``; callers place them."""
    vals = np.asarray(vals)
    if seq.size == 0:
        return np.zeros(vals.shape, np.int64)
    fs, fv = is_float_dtype(seq.dtype), is_float_dtype(vals.dtype)
    if fs or fv:
        narrow = fs and fv and seq.dtype != np.float64 and vals.dtype != np.float64
        ct = np.float32 if narrow else np.float64  # f16, bf16 and f32 are exact in float32
        return _i64(np.searchsorted(seq.astype(ct, copy=False), vals.astype(ct, copy=False), side))
    u64 = np.dtype(np.uint64)
    if (seq.dtype == u64) != (vals.dtype == u64) and (seq.dtype.kind == "i" or vals.dtype.kind == "i"):
        # u64 against a signed type: numpy would compare in float64 (inexact past 2**53)
        if seq.dtype == u64:  # every boundary is >= 0: a negative value precedes them all
            neg = vals < 0
            out = _i64(np.searchsorted(seq, np.where(neg, 0, vals).astype(u64), side))
            out[neg] = 0
            return out
        k = int(np.searchsorted(seq, 0, "left"))  # the negative boundaries precede every u64 value
        return _i64(k + np.searchsorted(seq[k:].astype(u64), vals, side))
    ct = np.result_type(seq.dtype, vals.dtype)  # exact for every other pair of integer types
    return _i64(np.searchsorted(seq.astype(ct, copy=False), vals.astype(ct, copy=False), side))


def search_rows(seq: np.ndarray, vals: np.ndarray, side: str) -> np.ndarray:
    """int64 positions of each row of `vals` ([R, K]) in the same row of the sorted `seq` ([R, M]) of
    one dtype: numpy.searchsorted row by row.  (Measured against a vectorized bisection over all rows
    and against one search over rank-offset keys: neither beats the plain loop, from 2 rows of 64 to
    358400 rows of 200.)"""
    r, m = seq.shape
    out = np.zeros(vals.shape, np.int64)
    if m == 0 or vals.size == 0:
        return out
    if not (seq.dtype.kind in "iuf" and seq.dtype.itemsize >= 4):  # f16, bf16, 8/16-bit ints: exact in float32
        seq, vals = seq.astype(np.float32), vals.astype(np.float32)
    for i in range(r):
        out[i] = np.searchsorted(seq[i], vals[i], side)
    return out


def _nan_mask(v: np.ndarray) -> np.ndarray | None:
    if not is_float_dtype(v.dtype):
        return None
    nan = np.isnan(v.astype(np.float32, copy=False) if v.dtype.kind != "f" else v)
    return nan if nan.any() else None


def _checked_sequence(ctx: NodeContext, index: int, what: str):
    """A function giving the unsorted-error message for this run's sequence (computed once for a constant)."""
    const = ctx.inputs[index].value
    if const is not None:
        msg = unsorted_message(const, what)
        return lambda _seq: msg
    return lambda seq: unsorted_message(seq, what)


# ---- Bucketize-3 ------------------------------------------------------------------------------------


@register
class Bucketize(Op):
    type = "Bucketize"
    version = 3
    opsets = (3, None)
    inputs = (2, 2)
    schema = AttrSchema([
        optional("output_type", enum("i64", "i32"), "i64"),
        optional("with_right_bound", parse_bool, True),
    ])
    doc = ("bucket index of each element among sorted 1-D boundaries (any numeric types): count(b < x), "
           "or count(b <= x) with with_right_bound=false; NaN -> 0 (or len(buckets)); empty buckets -> 0.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, b = ctx.inputs
        _numeric(ctx, 0, "data")
        _numeric(ctx, 1, "buckets")
        if b.shape is not None and len(b.shape) != 1:
            raise fail("IRN032", f"buckets must be a 1-D tensor, got {fmt_shape(b.shape)}")
        if b.value is not None:
            msg = unsorted_message(b.value, "buckets")
            if msg:
                raise fail("IRN032", msg)
        return [TensorInfo(x.shape, ctx.attrs["output_type"])]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        right = ctx.attrs["with_right_bound"]
        side = "left" if right else "right"
        out_dt = ELEMENT_TYPES[ctx.attrs["output_type"]]
        unsorted = _checked_sequence(ctx, 1, "buckets")

        def run(ins):
            x, b = ins
            if b.ndim != 1:
                raise runtime_error(layer, f"buckets must be a 1-D tensor, got {fmt_shape(b.shape)}")
            msg = unsorted(b)
            if msg:
                raise runtime_error(layer, msg)
            pos = search_1d(b, x, side)
            nan = _nan_mask(x)
            if nan is not None:
                pos[nan] = 0 if right else b.shape[0]
            return [pos.astype(out_dt, copy=False)]

        return run


# ---- SearchSorted-15 --------------------------------------------------------------------------------


@register
class SearchSorted(Op):
    type = "SearchSorted"
    version = 15
    opsets = (15, None)
    inputs = (2, 2)
    schema = AttrSchema([
        optional("right_mode", parse_bool, False),
        optional("output_type", enum("i64", "i32"), "i64"),
    ])
    doc = ("positions of values [..., K] in the rows of sorted_sequence [..., M] (or in one 1-D sequence): "
           "count(s < v), or count(s <= v) with right_mode; NaN -> 0; an empty sequence -> 0.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        s, v = ctx.inputs
        _numeric(ctx, 0, "sorted_sequence")
        _numeric(ctx, 1, "values")
        if s.dtype != v.dtype:
            raise fail("IRN033", f"values have element type {v.dtype}, expected {s.dtype} (sorted_sequence's)")
        out_t = ctx.attrs["output_type"]
        if s.shape is not None and len(s.shape) == 0:
            raise fail("IRN032", "sorted_sequence must have rank >= 1, got a scalar")
        if s.value is not None:
            msg = unsorted_message(s.value, "sorted_sequence")
            if msg:
                raise fail("IRN032", msg)
        if v.shape is None:
            # OpenVINO's rule: a sequence of rank >= 2 fixes the values' rank and leading dims
            if s.shape is not None and len(s.shape) >= 2:
                return [TensorInfo(tuple(s.shape[:-1]) + (-1,), out_t)]
            return [TensorInfo(None, out_t)]
        if s.shape is None or len(s.shape) == 1:
            return [TensorInfo(v.shape, out_t)]
        if len(v.shape) != len(s.shape):
            raise fail("IRN032", f"sorted_sequence {fmt_shape(s.shape)} is not 1-D, so values must have its rank "
                                 f"{len(s.shape)}, got {fmt_shape(v.shape)}")
        lead = []
        for k, (a, b) in enumerate(zip(s.shape[:-1], v.shape[:-1], strict=True)):
            if not same_dim(a, b):
                raise fail("IRN032", f"sorted_sequence {fmt_shape(s.shape)} and values {fmt_shape(v.shape)} must "
                                     f"agree on every dim but the last: dim {k} differs")
            lead.append(merge_dim(a, b))
        return [TensorInfo(tuple(lead) + (v.shape[-1],), out_t)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        side = "right" if ctx.attrs["right_mode"] else "left"
        out_dt = ELEMENT_TYPES[ctx.attrs["output_type"]]
        unsorted = _checked_sequence(ctx, 0, "sorted_sequence")

        def run(ins):
            s, v = ins
            if s.ndim == 0 or (s.ndim > 1 and (v.ndim != s.ndim or v.shape[:-1] != s.shape[:-1])):
                raise runtime_error(layer, f"sorted_sequence {fmt_shape(s.shape)} and values {fmt_shape(v.shape)} "
                                           f"do not fit (a 1-D sequence, or one rank and equal leading dims)")
            msg = unsorted(s)
            if msg:
                raise runtime_error(layer, msg)
            if s.ndim == 1:
                pos = search_1d(s, v, side)
            else:
                m, k = s.shape[-1], v.shape[-1]
                rows = math.prod(s.shape[:-1])
                pos = search_rows(s.reshape(rows, m), v.reshape(rows, k), side).reshape(v.shape)
            nan = _nan_mask(v)
            if nan is not None:
                pos[nan] = 0  # lower_bound with < or <= stops at the first element for NaN
            return [pos.astype(out_dt, copy=False)]

        return run
