"""The embedding-bag family: EmbeddingBagOffsets-15, EmbeddingBagPacked-15 (``reduction`` sum or mean),
EmbeddingBagOffsetsSum-3, EmbeddingBagPackedSum-3 and EmbeddingSegmentsSum-3.

Each bag reduces rows of ``emb_table [num_emb, d1, d2, ...]`` (any numeric type, any rank >= 1) picked
by ``indices`` (i32/i64); the output is ``[bags, d1, d2, ...]`` of the table's type.

* Offsets: ``indices [n]``, ``offsets [B]``: bag b is ``indices[offsets[b]:offsets[b+1]]`` (the last one
  runs to n); indices before ``offsets[0]`` belong to no bag.  Offsets must ascend and lie in [0, n];
  an offset equal to n (and any repeated offset) is an empty bag, as the spec's numpy snippet says.
* Packed: ``indices [B, K]``, every bag holds K indices; K = 0 gives empty bags.
* Segments: ``indices [n]``, ``segment_ids [n]`` sorted (the spec's rule: unsorted ids are a run-time
  error, IRN064, because OpenVINO's CPU plugin then sums runs of consecutive indices while its reference
  sums by id), ``num_segments`` (a scalar, constant or not: the output's first dim is -1 when not).
  Index p goes to segment ``segment_ids[p]``; an id outside [0, num_segments) is dropped (the CPU
  plugin does so; the reference refuses it).
* ``default_index`` (a scalar of the indices' type): the row an empty bag takes; absent or -1 gives
  zeros (for EmbeddingSegmentsSum -1 is no row either: the CPU plugin fails on it, the reference refuses
  it; irnorm refuses it when an empty segment would read it).  It is checked only when some bag is empty.
* ``per_sample_weights`` (the table's type, shaped like indices) multiply the rows: sum only; with
  ``reduction=mean`` the layer is refused (IRN017), as OpenVINO's validation does.
* mean divides by the bag's size; an empty bag stays zero (or the default row).  Integer tables sum in
  the table's type with wraparound and divide truncating towards zero (the CPU plugin's arithmetic);
  f16/bf16 tables sum in float32 and round once.

Every index irnorm reads is checked first: an index outside [0, num_emb), an offset outside [0, n] or
below its predecessor, a default_index used by an empty bag outside [0, num_emb) are run-time errors
(IRN064).  OpenVINO's CPU plugin reads out of bounds or returns an unwritten or empty tensor for all of
them, and for an offset equal to n and for empty packed bags too (docs/ir-format.md, section 11, "Embedding bags").
The kernel is Numba (irnorm/kernels/embedding.py), one parallel task per bag.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import AttrSchema, enum, optional
from ..ir.dtypes import FLOAT_TYPES, INT_TYPES, cast, compute_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, fail, fmt_shape, register, runtime_error, same_dim

INDEX_TYPES = ("i32", "i64")
TABLE_TYPES = FLOAT_TYPES + INT_TYPES
# Bytes irnorm refuses to allocate for an output sized by a run-time value (num_segments).
ABSURD_BYTES = 1 << 46

REDUCTION = optional("reduction", enum("sum", "mean"), "sum", doc="sum (default) or mean of each bag")


def _check_types(ctx: NodeContext, index_ports: dict[int, str], weights: int | None) -> None:
    table = ctx.inputs[0]
    if table.dtype not in TABLE_TYPES:
        raise fail("IRN033", f"emb_table must be a numeric tensor, got {table.dtype}")
    idx_t = ctx.inputs[1].dtype
    if idx_t not in INDEX_TYPES:
        raise fail("IRN033", f"indices must be i32 or i64, got {idx_t}")
    for port, what in index_ports.items():
        if port < len(ctx.inputs) and ctx.inputs[port].dtype != idx_t:
            raise fail("IRN033", f"{what} (input {port}) has element type {ctx.inputs[port].dtype}, expected "
                                 f"{idx_t} (the indices')")
    if weights is not None and weights < len(ctx.inputs) and ctx.inputs[weights].dtype != table.dtype:
        raise fail("IRN033", f"per_sample_weights (input {weights}) has element type {ctx.inputs[weights].dtype}, "
                             f"expected {table.dtype} (the table's)")


def _rank(ctx: NodeContext, port: int, rank: int, what: str) -> tuple[int, ...] | None:
    shape = ctx.inputs[port].shape
    if shape is not None and len(shape) != rank:
        kind = {0: "a scalar", 1: "1-D", 2: "2-D"}[rank]
        raise fail("IRN032", f"{what} (input {port}) must be {kind}, got {fmt_shape(shape)}")
    return shape


def _weights_shape(ctx: NodeContext, port: int, idx_shape: tuple[int, ...] | None) -> None:
    if port >= len(ctx.inputs):
        return
    if ctx.attrs.get("reduction", "sum") != "sum":
        raise fail("IRN017", f"per_sample_weights (input {port}) are only allowed with reduction=sum, got "
                             f"reduction={ctx.attrs['reduction']}")
    w = ctx.inputs[port].shape
    if w is not None and idx_shape is not None and (
            len(w) != len(idx_shape) or not all(same_dim(a, b) for a, b in zip(w, idx_shape, strict=True))):
        raise fail("IRN032", f"per_sample_weights {fmt_shape(w)} must have the indices' shape {fmt_shape(idx_shape)}")


def _output(ctx: NodeContext, bags: int) -> list[TensorInfo]:
    table = ctx.inputs[0]
    if table.shape is None:
        return [TensorInfo(None, table.dtype)]
    if len(table.shape) < 1:
        raise fail("IRN032", f"emb_table must have rank >= 1 [num_emb, ...], got {fmt_shape(table.shape)}")
    return [TensorInfo((bags,) + tuple(table.shape[1:]), table.dtype)]


# ---- run time -------------------------------------------------------------------------------------------


def _scalar(layer, v: np.ndarray, what: str) -> int:
    if v.ndim != 0:
        raise runtime_error(layer, f"{what} must be a scalar, got shape {list(v.shape)}")
    return int(v)


def _check_indices(layer, idx: np.ndarray, num: int, what: str = "index") -> None:
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= num):
        bad = idx[(idx < 0) | (idx >= num)]
        raise runtime_error(layer, f"{what} {int(bad[0])} is out of range [0, {num - 1}] (emb_table has {num} rows)")


def _default(layer, ins: list[np.ndarray], port: int | None, num: int, needed: bool, minus_one_ok: bool) -> int:
    """The default row (-1: zeros), checked only when an empty bag reads it."""
    if port is None or port >= len(ins):
        return -1
    d = _scalar(layer, ins[port], "default_index")
    if not needed or (d == -1 and minus_one_ok):
        return -1
    if not 0 <= d < num:
        allowed = "-1 or " if minus_one_ok else ""
        raise runtime_error(layer, f"default_index {d} must be {allowed}in [0, {num - 1}] (an empty bag reads it)")
    return d


def _reduce(layer, table: np.ndarray, idx: np.ndarray, starts: np.ndarray, ends: np.ndarray,
            weights: np.ndarray | None, default: int, mean: bool) -> np.ndarray:
    """The bags as [B, *table.shape[1:]] of the table's type (indices already checked)."""
    from ..kernels import embedding as kern  # lazy: validate never imports numba

    dt = table.dtype
    num = table.shape[0]
    rows = table.reshape(num, int(np.prod(table.shape[1:], dtype=np.int64)))
    if dt.kind in "iu":
        src = rows.view(np.int64) if dt == np.uint64 else rows.astype(np.int64)  # u64: two's complement wraps alike
        w = None if weights is None else (weights.view(np.int64) if dt == np.uint64 else weights.astype(np.int64))
        out = kern.bags(np.ascontiguousarray(src), idx, starts, ends, w, default, False)
        out = out.view(np.uint64) if dt == np.uint64 else out.astype(dt)  # wraps to the table's type
        if mean:  # the wrapped sum divided, truncating towards zero
            n = np.maximum(ends - starts, 1)[:, None]
            if dt == np.uint64:
                q = out // n.astype(np.uint64)
            else:
                o = out.astype(np.int64)
                q = o // n + ((o % n != 0) & (o < 0))
            out = np.where(ends[:, None] > starts[:, None], q, out).astype(dt)
    else:
        cdt = compute_dtype(dt)
        if dt == cdt:
            src = rows
        else:  # f16 / bf16: only the rows read, in float32
            used = np.concatenate([idx, [default]]) if default >= 0 else idx
            uniq, inv = np.unique(used, return_inverse=True)
            src = rows[uniq].astype(cdt)
            if default >= 0:
                default = int(inv[-1])
                inv = inv[:-1]
            idx = inv.astype(np.int64)
        w = None if weights is None else weights.astype(cdt)
        out = kern.bags(np.ascontiguousarray(src, cdt), idx, starts, ends, w, default, mean)
        out = out if out.dtype == dt else cast(out, dt)
    return out.reshape((starts.shape[0],) + table.shape[1:])


def _table(layer, t: np.ndarray) -> np.ndarray:
    if t.ndim < 1:
        raise runtime_error(layer, f"emb_table must have rank >= 1, got shape {list(t.shape)}")
    return t


def _vector(layer, v: np.ndarray, what: str) -> np.ndarray:
    if v.ndim != 1:
        raise runtime_error(layer, f"{what} must be 1-D, got shape {list(v.shape)}")
    return v.astype(np.int64)


# ---- EmbeddingBagOffsets-15 / EmbeddingBagOffsetsSum-3 ------------------------------------------------------


class _Offsets(Op):
    inputs = (3, 5)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        _check_types(ctx, {2: "offsets", 3: "default_index"}, 4)
        idx = _rank(ctx, 1, 1, "indices")
        off = _rank(ctx, 2, 1, "offsets")
        if len(ctx.inputs) > 3:
            _rank(ctx, 3, 0, "default_index")
        _weights_shape(ctx, 4, idx)
        return _output(ctx, off[0] if off is not None else -1)

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        mean = ctx.attrs.get("reduction", "sum") == "mean"

        def run(ins):
            table = _table(layer, ins[0])
            idx = _vector(layer, ins[1], "indices")
            off = _vector(layer, ins[2], "offsets")
            weights = ins[4] if len(ins) > 4 else None
            n, num = idx.shape[0], table.shape[0]
            if weights is not None and weights.shape != ins[1].shape:
                raise runtime_error(layer, f"per_sample_weights {list(weights.shape)} must have the indices' shape "
                                           f"{list(ins[1].shape)}")
            if off.size:
                if int(off.min()) < 0 or int(off.max()) > n:
                    bad = off[(off < 0) | (off > n)]
                    raise runtime_error(layer, f"offset {int(bad[0])} is out of range [0, {n}] ({n} indices)")
                down = np.flatnonzero(off[1:] < off[:-1])
                if down.size:
                    k = int(down[0])
                    raise runtime_error(layer, f"offsets must not decrease: offsets[{k + 1}] = {int(off[k + 1])} < "
                                               f"offsets[{k}] = {int(off[k])}")
                _check_indices(layer, idx[int(off[0]):], num)
            ends = np.append(off[1:], n) if off.size else off
            default = _default(layer, ins, 3, num, bool(np.any(ends == off)), True)
            return [_reduce(layer, table, idx, off, ends, weights, default, mean)]

        return run


@register
class EmbeddingBagOffsets(_Offsets):
    type = "EmbeddingBagOffsets"
    version = 15
    opsets = (15, None)
    schema = AttrSchema([REDUCTION])
    doc = ("sum or mean of bags of emb_table rows; bags are slices of 1-D indices starting at offsets; "
           "default_index for empty bags, per_sample_weights (sum only).")


@register
class EmbeddingBagOffsetsSum(_Offsets):
    type = "EmbeddingBagOffsetsSum"
    version = 3
    opsets = (3, None)
    doc = "EmbeddingBagOffsets-15 with reduction=sum (no attributes)."


# ---- EmbeddingBagPacked-15 / EmbeddingBagPackedSum-3 ----------------------------------------------------------


class _Packed(Op):
    inputs = (2, 3)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        _check_types(ctx, {}, 2)
        idx = _rank(ctx, 1, 2, "indices")
        _weights_shape(ctx, 2, idx)
        return _output(ctx, idx[0] if idx is not None else -1)

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        mean = ctx.attrs.get("reduction", "sum") == "mean"

        def run(ins):
            table = _table(layer, ins[0])
            if ins[1].ndim != 2:
                raise runtime_error(layer, f"indices must be 2-D [bags, per_bag], got shape {list(ins[1].shape)}")
            weights = ins[2] if len(ins) > 2 else None
            if weights is not None and weights.shape != ins[1].shape:
                raise runtime_error(layer, f"per_sample_weights {list(weights.shape)} must have the indices' shape "
                                           f"{list(ins[1].shape)}")
            b, k = ins[1].shape
            idx = ins[1].astype(np.int64).reshape(-1)
            _check_indices(layer, idx, table.shape[0])
            starts = np.arange(b, dtype=np.int64) * k
            w = None if weights is None else weights.reshape(-1)
            return [_reduce(layer, table, idx, starts, starts + k, w, -1, mean)]

        return run


@register
class EmbeddingBagPacked(_Packed):
    type = "EmbeddingBagPacked"
    version = 15
    opsets = (15, None)
    schema = AttrSchema([REDUCTION])
    doc = ("sum or mean of bags of emb_table rows; bag b holds the row indices[b, :] of 2-D indices; "
           "per_sample_weights (sum only).")


@register
class EmbeddingBagPackedSum(_Packed):
    type = "EmbeddingBagPackedSum"
    version = 3
    opsets = (3, None)
    doc = "EmbeddingBagPacked-15 with reduction=sum (no attributes)."


# ---- EmbeddingSegmentsSum-3 -----------------------------------------------------------------------------------


@register
class EmbeddingSegmentsSum(Op):
    type = "EmbeddingSegmentsSum"
    version = 3
    opsets = (3, None)
    inputs = (4, 6)
    doc = ("sums of emb_table rows per segment: index p goes to segment segment_ids[p] (sorted; ids outside "
           "[0, num_segments) are dropped); default_index for empty segments, per_sample_weights.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        _check_types(ctx, {2: "segment_ids", 3: "num_segments", 4: "default_index"}, 5)
        idx = _rank(ctx, 1, 1, "indices")
        seg = _rank(ctx, 2, 1, "segment_ids")
        if idx is not None and seg is not None and not same_dim(idx[0], seg[0]):
            raise fail("IRN032", f"segment_ids {fmt_shape(seg)} and indices {fmt_shape(idx)} must have one length")
        _rank(ctx, 3, 0, "num_segments")
        if len(ctx.inputs) > 4:
            _rank(ctx, 4, 0, "default_index")
        _weights_shape(ctx, 5, idx if idx is not None else seg)
        num = -1
        v = ctx.inputs[3].value
        if v is not None:
            num = int(np.asarray(v).reshape(-1)[0])
            if num < 0:
                raise fail("IRN032", f"num_segments must be non-negative, got {num}")
        return _output(ctx, num)

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer

        def run(ins):
            table = _table(layer, ins[0])
            idx = _vector(layer, ins[1], "indices")
            seg = _vector(layer, ins[2], "segment_ids")
            if seg.shape != idx.shape:
                raise runtime_error(layer, f"segment_ids {list(seg.shape)} and indices {list(idx.shape)} must have "
                                           "one length")
            weights = ins[5] if len(ins) > 5 else None
            if weights is not None and weights.shape != ins[1].shape:
                raise runtime_error(layer, f"per_sample_weights {list(weights.shape)} must have the indices' shape "
                                           f"{list(ins[1].shape)}")
            num = _scalar(layer, ins[3], "num_segments")
            if num < 0:
                raise runtime_error(layer, f"num_segments must be non-negative, got {num}")
            nbytes = num * max(int(np.prod(table.shape[1:])), 1) * table.dtype.itemsize
            if nbytes > ABSURD_BYTES:
                raise runtime_error(layer, f"num_segments {num} asks for an absurd output size ({nbytes} bytes)")
            down = np.flatnonzero(seg[1:] < seg[:-1])
            if down.size:
                k = int(down[0])
                raise runtime_error(layer, f"segment_ids must be sorted: segment_ids[{k + 1}] = {int(seg[k + 1])} < "
                                           f"segment_ids[{k}] = {int(seg[k])}")
            order = np.flatnonzero((seg >= 0) & (seg < num))  # ids outside are dropped (the CPU plugin's rule)
            _check_indices(layer, idx[order], table.shape[0])
            counts = np.bincount(seg[order], minlength=num).astype(np.int64) if num else np.zeros(0, np.int64)
            ends = np.cumsum(counts)
            starts = ends - counts
            default = _default(layer, ins, 4, table.shape[0], bool(np.any(counts == 0)), False)
            w = None if weights is None else weights[order]
            return [_reduce(layer, table, idx[order], starts, ends, w, default, False)]

        return run
