"""Rearranging and generating ops: SpaceToDepth-1, DepthToSpace-1, ReverseSequence-1, Eye-9,
Identity-16, NonZero-3.

SpaceToDepth / DepthToSpace move blocks of ``block_size`` along every spatial dim (data is
``[N, C, D1, ..., DK]``, K >= 1) into the channels and back; ``blocks_first`` puts the block
offset before the channel in the channel index, ``depth_first`` after it (ONNX's DCR and CRD
modes).  Each is one reshape, one transpose and one contiguous copy in numpy.

ReverseSequence reverses, for each index b along ``batch_axis``, the first ``seq_lengths[b]``
elements along ``seq_axis`` (negative axes count from the end).  As OpenVINO's reference and CPU
plugin do, a length of 0 leaves the slice as it is and a length below 0 or above the dim is an
error (IRN064 at run time, IRN032 for a constant), never an out-of-bounds read; floating-point
lengths are truncated toward zero, as the CPU plugin reads them.  Departure: irnorm refuses
``batch_axis == seq_axis`` (IRN032), which OpenVINO accepts but for which the result is not
defined (two elements land on one place).

Eye writes ones on diagonal ``diagonal_index`` of a ``[*batch_shape, num_rows, num_columns]``
tensor of ``output_type`` (a diagonal entirely outside the matrix gives zeros).  Sizes may be
runtime values: the dims are then -1, and negative values or an absurd size are IRN064 before
anything is allocated.  An empty ``batch_shape`` means no batch dims, as the spec says (OpenVINO's
CPU plugin leaves that output unwritten: docs/ir-format.md §12).

Identity copies its input.  NonZero gives the indices of the non-zero elements (NaN counts as
non-zero, -0.0 as zero) as a ``[rank, count]`` tensor in row-major order; a scalar is treated as a
one-element 1-D tensor (as OpenVINO does, giving ``[1, count]``).  Its count is data-dependent: -1
at load time unless the input is a constant, which folds.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, enum, optional, parse_int
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES
from .base import (
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    fail,
    fmt_shape,
    normalize_axes,
    partial_of,
    prod,
    register,
    runtime_error,
    with_partial,
)

# Bytes irnorm refuses to allocate for a generated tensor (as the checker's absurd-size limit).
ABSURD_BYTES = 1 << 46


def _ints(v: np.ndarray) -> list[int]:
    return [int(a) for a in np.asarray(v).reshape(-1)]


def _message(e: Exception) -> str:
    return str(getattr(e, "message", e))


# ---- SpaceToDepth / DepthToSpace -------------------------------------------------------------------


MODE = enum("blocks_first", "depth_first")


def _block_schema() -> AttrSchema:
    return AttrSchema([Attr("mode", MODE),
                       optional("block_size", parse_int, 1, check=lambda v: None if v >= 1 else "must be >= 1")])


def depth_to_space(x: np.ndarray, bs: int, mode: str) -> np.ndarray:
    n, c, *dims = x.shape
    k = len(dims)
    cf = c // bs ** k
    if mode == "blocks_first":  # channel index = block offset * cf + c'
        v = x.reshape((n,) + (bs,) * k + (cf,) + tuple(dims))
        order = [0, k + 1] + [a for i in range(k) for a in (k + 2 + i, 1 + i)]
    else:  # channel index = c' * bs^k + block offset
        v = x.reshape((n, cf) + (bs,) * k + tuple(dims))
        order = [0, 1] + [a for i in range(k) for a in (k + 2 + i, 2 + i)]
    return np.ascontiguousarray(v.transpose(order)).reshape((n, cf) + tuple(d * bs for d in dims))


def space_to_depth(x: np.ndarray, bs: int, mode: str) -> np.ndarray:
    n, c, *dims = x.shape
    k = len(dims)
    v = x.reshape((n, c) + tuple(a for d in dims for a in (d // bs, bs)))
    blocks = [3 + 2 * i for i in range(k)]
    outer = [2 + 2 * i for i in range(k)]
    order = [0] + ([1] + blocks if mode == "depth_first" else blocks + [1]) + outer
    return np.ascontiguousarray(v.transpose(order)).reshape((n, c * bs ** k) + tuple(d // bs for d in dims))


class _Blocks(Op):
    inputs = (1, 1)
    schema = _block_schema()
    to_depth: bool = False

    def _shape(self, shape: tuple[int, ...], bs: int) -> tuple[int, ...]:
        """The output shape; -1 dims stay -1.  Raises IRN032 for a dim that does not divide."""
        if len(shape) < 3:
            raise fail("IRN032", f"data must have rank >= 3 ([N, C, D1, ...]), got {fmt_shape(shape)}")
        n, c, *dims = shape
        k = len(dims)
        if self.to_depth:
            for i, d in enumerate(dims):
                if d != -1 and d % bs:
                    raise fail("IRN032", f"spatial dim {i + 2} ({d}) of data {fmt_shape(shape)} is not a multiple "
                                         f"of block_size {bs}")
            return (n, -1 if c == -1 else c * bs ** k) + tuple(-1 if d == -1 else d // bs for d in dims)
        if c != -1 and c % bs ** k:
            raise fail("IRN032", f"channels ({c}) of data {fmt_shape(shape)} are not a multiple of "
                                 f"block_size^{k} = {bs ** k}")
        return (n, -1 if c == -1 else c // bs ** k) + tuple(-1 if d == -1 else d * bs for d in dims)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        out = TensorInfo(self._shape(tuple(x.shape), ctx.attrs["block_size"]), x.dtype)
        if x.value is not None:
            out.value = self._apply(np.asarray(x.value), ctx.attrs["block_size"], ctx.attrs["mode"])
        return [out]

    def _apply(self, x: np.ndarray, bs: int, mode: str) -> np.ndarray:
        return space_to_depth(x, bs, mode) if self.to_depth else depth_to_space(x, bs, mode)

    def build(self, ctx: NodeContext) -> Kernel:
        bs, mode, layer = ctx.attrs["block_size"], ctx.attrs["mode"], ctx.layer

        def run(ins):
            x = ins[0]
            try:
                self._shape(x.shape, bs)
            except Exception as e:
                raise runtime_error(layer, _message(e)) from None
            return [self._apply(x, bs, mode)]

        return run


@register
class SpaceToDepth(_Blocks):
    type = "SpaceToDepth"
    version = 1
    opsets = (1, None)
    to_depth = True
    doc = "[N, C, D1..DK] -> [N, C*bs^K, D1/bs..DK/bs]: spatial blocks into channels (blocks_first / depth_first)."


@register
class DepthToSpace(_Blocks):
    type = "DepthToSpace"
    version = 1
    opsets = (1, None)
    doc = "[N, C, D1..DK] -> [N, C/bs^K, D1*bs..DK*bs]: channels into spatial blocks (blocks_first / depth_first)."


# ---- ReverseSequence -------------------------------------------------------------------------------------


def reverse_sequence(x: np.ndarray, lengths: np.ndarray, batch_axis: int, seq_axis: int) -> np.ndarray:
    """`lengths` already checked to be integers in [0, dim of seq_axis]."""
    t = x.shape[seq_axis]
    s = np.maximum(lengths.astype(np.int64), 1)[:, None]
    pos = np.arange(t, dtype=np.int64)[None, :]
    src = np.where(pos < s, s - 1 - pos, pos)  # [batch, seq]: an involution, so gather == scatter
    v = np.moveaxis(x, (batch_axis, seq_axis), (0, 1))
    out = v[np.arange(x.shape[batch_axis])[:, None], src]
    return np.ascontiguousarray(np.moveaxis(out, (0, 1), (batch_axis, seq_axis)))


@register
class ReverseSequence(Op):
    type = "ReverseSequence"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    schema = AttrSchema([optional("batch_axis", parse_int, 0), optional("seq_axis", parse_int, 1)])
    doc = "per batch index b, the first seq_lengths[b] elements along seq_axis reversed (0 <= length <= dim)."

    @staticmethod
    def _axes(attrs: dict, rank: int) -> tuple[int, int]:
        b = normalize_axes([attrs["batch_axis"]], rank, "batch_axis")[0]
        s = normalize_axes([attrs["seq_axis"]], rank, "seq_axis")[0]
        if b == s:
            raise fail("IRN032", f"batch_axis ({attrs['batch_axis']}) and seq_axis ({attrs['seq_axis']}) are the "
                                 f"same axis {b}")
        return b, s

    @staticmethod
    def _lengths(v: np.ndarray, n_batch: int, n_seq: int) -> np.ndarray:
        v = np.asarray(v).reshape(-1)
        if v.size != n_batch:
            raise fail("IRN032", f"seq_lengths has {v.size} values, the batch axis has {n_batch}")
        if v.dtype.kind == "f" or v.dtype.name == "bfloat16":
            v = v.astype(np.float64)
            if not np.all(np.isfinite(v)):
                raise fail("IRN032", "seq_lengths must be finite")
            v = np.trunc(v)
        bad = (v > n_seq) if v.dtype.kind == "u" else (v < 0) | (v > n_seq)
        if bad.any():
            raise fail("IRN032", f"seq_lengths value {v[bad][0]:g} is out of range [0, {n_seq}] (the seq_axis dim)")
        return v.astype(np.int64)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, lens = ctx.inputs
        if lens.dtype not in INT_TYPES + FLOAT_TYPES:
            raise fail("IRN033", f"seq_lengths must be numeric, got {lens.dtype}")
        if lens.shape is not None and len(lens.shape) != 1:
            raise fail("IRN032", f"seq_lengths must be 1-D, got {fmt_shape(lens.shape)}")
        if x.shape is not None:
            b, s = self._axes(ctx.attrs, len(x.shape))
            nb = x.shape[b]
            if lens.shape is not None and -1 not in (nb, lens.shape[0]) and nb != lens.shape[0]:
                raise fail("IRN032", f"seq_lengths has {lens.shape[0]} values, dim {b} (batch_axis) of data "
                                     f"{fmt_shape(x.shape)} is {nb}")
            if lens.value is not None and -1 not in (nb, x.shape[s]):
                self._lengths(lens.value, nb, x.shape[s])
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        attrs, layer = ctx.attrs, ctx.layer

        def run(ins):
            x = ins[0]
            try:
                b, s = self._axes(attrs, x.ndim)
                lens = self._lengths(ins[1], x.shape[b], x.shape[s])
            except Exception as e:
                raise runtime_error(layer, _message(e)) from None
            return [reverse_sequence(x, lens, b, s)]

        return run


# ---- Eye -------------------------------------------------------------------------------------------------


def _one_value(ctx: NodeContext, i: int, what: str) -> int | None:
    """A scalar / one-element integer input's value when known at load time (None otherwise)."""
    info = ctx.inputs[i]
    if info.dtype not in INT_TYPES:
        raise fail("IRN033", f"{what} must be an integer tensor, got {info.dtype}")
    if info.shape is not None and (len(info.shape) > 1 or any(d not in (1, -1) for d in info.shape)):
        raise fail("IRN032", f"{what} must be a scalar or hold one value, got {fmt_shape(info.shape)}")
    p = partial_of(info)
    return None if not p or p[0] is None else int(p[0])


@register
class Eye(Op):
    type = "Eye"
    version = 9
    opsets = (9, None)
    inputs = (3, 4)
    schema = AttrSchema([Attr("output_type", enum(*(FLOAT_TYPES + INT_TYPES + ("boolean",))))])
    doc = "ones on diagonal diagonal_index of [*batch_shape, num_rows, num_columns] (runtime sizes: -1 dims)."

    @staticmethod
    def _sizes(rows: int, cols: int, batch: list[int], dtype: np.dtype) -> None:
        for what, v in (("num_rows", rows), ("num_columns", cols)):
            if v < 0:
                raise fail("IRN032", f"{what} ({v}) must be non-negative")
        if any(v < 0 for v in batch):
            raise fail("IRN032", f"batch_shape {batch} must be non-negative")
        nbytes = prod(batch) * rows * cols * dtype.itemsize
        if nbytes > ABSURD_BYTES:
            raise fail("IRN050", f"the output {batch + [rows, cols]} needs {nbytes} bytes: absurd size")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        t = ctx.attrs["output_type"]
        rows = _one_value(ctx, 0, "num_rows")
        cols = _one_value(ctx, 1, "num_columns")
        _one_value(ctx, 2, "diagonal_index")
        for what, v in (("num_rows", rows), ("num_columns", cols)):
            if v is not None and v < 0:
                raise fail("IRN032", f"{what} ({v}) must be non-negative")
        batch: tuple[int, ...] | None = ()
        if len(ctx.inputs) > 3:
            info = ctx.inputs[3]
            if info.dtype not in INT_TYPES:
                raise fail("IRN033", f"batch_shape must be an integer tensor, got {info.dtype}")
            if info.shape is not None and len(info.shape) != 1:
                raise fail("IRN032", f"batch_shape must be 1-D, got {fmt_shape(info.shape)}")
            p = partial_of(info)
            if p is not None:
                if any(v is not None and v < 0 for v in p):
                    raise fail("IRN032", f"batch_shape {p} must be non-negative")
                batch = tuple(-1 if v is None else v for v in p)
            elif info.shape is None or info.shape[0] == -1:
                batch = None
            else:
                batch = (-1,) * info.shape[0]
        if batch is None:
            return [TensorInfo(None, t)]
        if rows is not None and cols is not None and -1 not in batch:  # refused before a fold allocates it
            self._sizes(rows, cols, list(batch), ELEMENT_TYPES[t])
        return [TensorInfo(batch + (-1 if rows is None else rows, -1 if cols is None else cols), t)]

    def build(self, ctx: NodeContext) -> Kernel:
        dt, layer = ELEMENT_TYPES[ctx.attrs["output_type"]], ctx.layer

        def run(ins):
            try:
                if any(np.asarray(v).size != 1 for v in ins[:3]):
                    raise ValueError("num_rows, num_columns and diagonal_index must hold one value each")
                rows, cols, diag = (int(np.asarray(v).reshape(-1)[0]) for v in ins[:3])
                batch = _ints(ins[3]) if len(ins) > 3 else []
                self._sizes(rows, cols, batch, dt)
            except Exception as e:
                raise runtime_error(layer, _message(e)) from None
            m = np.zeros((rows, cols), dt)
            if -rows < diag < cols:  # otherwise the diagonal lies outside the matrix: all zeros
                i = np.arange(max(-diag, 0), min(rows, cols - diag))
                m[i, i + diag] = 1
            return [np.ascontiguousarray(np.broadcast_to(m, tuple(batch) + (rows, cols)))]

        return run


# ---- Identity, NonZero ------------------------------------------------------------------------------------


@register
class Identity(Op):
    type = "Identity"
    version = 16
    opsets = (16, None)
    doc = "a copy of the input."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        out = TensorInfo(x.shape, x.dtype, None if x.value is None else np.array(x.value, copy=True))
        part = partial_of(x) if x.value is None and x.shape is not None else None
        return [with_partial(x.shape, x.dtype, part)] if part is not None else [out]

    def build(self, ctx: NodeContext) -> Kernel:
        return lambda ins: [np.array(ins[0], copy=True)]


def non_zero(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim == 0:
        x = x.reshape(1)
    mask = x.astype(np.float32) != 0 if x.dtype.name == "bfloat16" else x != 0
    idx = np.nonzero(mask)
    return np.ascontiguousarray(np.stack(idx).astype(dtype).reshape(x.ndim, -1))


@register
class NonZero(Op):
    type = "NonZero"
    version = 3
    opsets = (3, None)
    schema = AttrSchema([optional("output_type", enum("i64", "i32", case_insensitive=False), "i64")])
    doc = "the indices of the non-zero elements as [rank, count] (count data-dependent), i64 or i32."

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x, t = ctx.inputs[0], ctx.attrs["output_type"]
        if x.value is not None:
            v = non_zero(np.asarray(x.value), ELEMENT_TYPES[t])
            return [TensorInfo(v.shape, t, v)]
        if x.shape is None:
            return [TensorInfo((-1, -1), t)]
        empty = any(d == 0 for d in x.shape)
        return [TensorInfo((max(len(x.shape), 1), 0 if empty else -1), t)]

    def build(self, ctx: NodeContext) -> Kernel:
        dt = ELEMENT_TYPES[ctx.attrs["output_type"]]
        return lambda ins: [non_zero(ins[0], dt)]
