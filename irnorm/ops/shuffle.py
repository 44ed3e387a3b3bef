"""Channel and batch shuffles, and GRN: ShuffleChannels-1, SpaceToBatch-2, BatchToSpace-2, GRN-1.

ShuffleChannels views the data as ``[outer, group, C / group, inner]`` around ``axis`` (negative
counts from the end) and swaps the two middle dims: output channel ``a * group + g`` is input
channel ``g * (C / group) + a``.  Any element type, rank >= 1; ``group`` must divide the axis dim.

SpaceToBatch zero-pads the spatial dims ``1..r-1`` by ``pads_begin`` / ``pads_end`` and moves each
``block_shape[i]`` block of them into the batch: output batch ``(linear block offset) * N + n``
(offsets of dim 1 slowest), output dim i ``(D_i + P_i) / B_i``.  BatchToSpace is its inverse,
then crops ``crops_begin`` / ``crops_end``.  Both take any element type; ``block_shape`` and the
pads / crops are 1-D integer tensors with one value per data dim, constants or run-time values
(TensorFlow and ONNX exports feed them from shape subgraphs).  Constants are checked at load time
(IRN032), run-time values before anything is computed (IRN064): every block >= 1,
``block_shape[0] == 1``, pads / crops >= 0 and 0 on the batch dim, every padded spatial dim a
multiple of its block (SpaceToBatch), the batch a multiple of the blocks' product and
``crops_begin + crops_end <= D_i * B_i`` (BatchToSpace).  OpenVINO 2026.4's CPU plugin accepts
several of these and returns undefined results, and refuses some valid files (docs/ir-format.md,
"ShuffleChannels-1, SpaceToBatch-2, BatchToSpace-2, GRN-1").  Each is a reshape, a transpose and
one contiguous copy (plus a zero-filled pad copy, or a crop copy, when there is one).

GRN: ``y = x / sqrt(sum over channels (axis 1) of x^2 + bias)`` for float data of rank 2-4.  As
OpenVINO's CPU plugin does, the sum of squares is accumulated in float64 from the float32 values,
``sqrt(sum + bias)`` (bias kept as float32) is rounded to float32 and x is divided by it in float32
(f16 / bf16 data is widened to float32 and the result rounded once); f64 data is computed in
float64 throughout.  A float32 accumulation would overflow at |x| ~ 1e19, where OpenVINO does not.  Any
finite ``bias`` is accepted, as OpenVINO accepts it (the spec asks for a positive one): 0 or a negative bias
gives NaN where the sum does not exceed -bias.  Integer data, which OpenVINO also runs (rounding the result
to -1, 0 or 1), is refused (IRN033): the spec types GRN's data as floating-point.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import Attr, AttrSchema, at_least, optional, parse_float, parse_int
from ..ir.dtypes import INT_TYPES
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
    require_float,
    runtime_error,
)

# Bytes irnorm refuses to allocate for an output whose size comes from run-time values (as the checker's limit).
ABSURD_BYTES = 1 << 46


def _message(e: Exception) -> str:
    return str(getattr(e, "message", e))


# ---- ShuffleChannels ---------------------------------------------------------------------------------------


def shuffle_channels(x: np.ndarray, axis: int, group: int) -> np.ndarray:
    """`axis` in [0, rank), `group` dividing x.shape[axis] (checked by the caller)."""
    c = x.shape[axis]
    v = x.reshape(prod(x.shape[:axis]), group, c // group, prod(x.shape[axis + 1:]))
    return np.ascontiguousarray(v.transpose(0, 2, 1, 3)).reshape(x.shape)


@register
class ShuffleChannels(Op):
    type = "ShuffleChannels"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([optional("axis", parse_int, 1, doc="the channel dim, in [-r, r-1]"),
                         optional("group", parse_int, 1, check=at_least(1), doc="must divide the axis dim")])
    doc = ("any type, rank >= 1: the axis dim viewed as [group, C/group] and transposed "
           "(output channel a*group+g = input channel g*(C/group)+a).")

    @staticmethod
    def _check(shape: tuple[int, ...], axis: int, group: int) -> int:
        if len(shape) < 1:
            raise fail("IRN032", "data must have rank >= 1, got a scalar")
        ax = normalize_axes([axis], len(shape), "axis")[0]
        c = shape[ax]
        if c != -1 and c % group:
            raise fail("IRN032", f"dim {ax} (axis) of data {fmt_shape(shape)} is {c}, not a multiple of "
                                 f"group {group}")
        return ax

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.shape is not None:
            self._check(tuple(x.shape), ctx.attrs["axis"], ctx.attrs["group"])
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        axis, group, layer = ctx.attrs["axis"], ctx.attrs["group"], ctx.layer

        def run(ins):
            x = ins[0]
            try:
                ax = self._check(x.shape, axis, group)
            except Exception as e:
                raise runtime_error(layer, _message(e)) from None
            return [shuffle_channels(x, ax, group)]

        return run


# ---- SpaceToBatch / BatchToSpace ---------------------------------------------------------------------------


def space_to_batch(x: np.ndarray, block: list[int], begin: list[int], end: list[int]) -> np.ndarray:
    """Values checked by the caller (`_BatchOp._shape`)."""
    if any(begin) or any(end):
        padded = np.zeros(tuple(d + b + e for d, b, e in zip(x.shape, begin, end, strict=True)), x.dtype)
        padded[tuple(slice(b, b + d) for d, b in zip(x.shape, begin, strict=True))] = x
        x = padded
    n, *dims = x.shape
    k, bs = len(dims), block[1:]
    v = x.reshape((n,) + tuple(a for d, b in zip(dims, bs, strict=True) for a in (d // b, b)))
    order = [2 + 2 * i for i in range(k)] + [0] + [1 + 2 * i for i in range(k)]
    out = (n * prod(bs),) + tuple(d // b for d, b in zip(dims, bs, strict=True))
    return np.ascontiguousarray(v.transpose(order)).reshape(out)


def batch_to_space(x: np.ndarray, block: list[int], begin: list[int], end: list[int]) -> np.ndarray:
    """Values checked by the caller (`_BatchOp._shape`)."""
    n, *dims = x.shape
    k, bs = len(dims), block[1:]
    v = x.reshape(tuple(bs) + (n // prod(bs),) + tuple(dims))
    order = [k] + [a for i in range(k) for a in (k + 1 + i, i)]
    y = np.ascontiguousarray(v.transpose(order)).reshape((n // prod(bs),) + tuple(d * b for d, b in
                                                                                  zip(dims, bs, strict=True)))
    if any(begin) or any(end):
        y = np.ascontiguousarray(y[tuple(slice(b, s - e) for s, b, e in zip(y.shape, begin, end, strict=True))])
    return y


class _BatchOp(Op):
    inputs = (4, 4)
    to_batch: bool = True
    names: tuple[str, str] = ("pads_begin", "pads_end")
    same_index_types: bool = False  # BatchToSpace: OpenVINO refuses index inputs of different element types

    def _shape(self, shape: tuple[int, ...], block: list[int | None], begin: list[int | None],
               end: list[int | None]) -> tuple[int, ...]:
        """The output shape (-1 where a dim or a value it needs is unknown); IRN032 for a bad value."""
        nb, ne = self.names
        r = len(shape)
        if r < 2:
            raise fail("IRN032", f"data must have rank >= 2 ([batch, D1, ...]), got {fmt_shape(shape)}")
        for what, vals in (("block_shape", block), (nb, begin), (ne, end)):
            if len(vals) != r:
                raise fail("IRN032", f"{what} has {len(vals)} values, data {fmt_shape(shape)} has rank {r}")
        for i, b in enumerate(block):
            if b is not None and b < 1:
                raise fail("IRN032", f"block_shape[{i}] is {b}; every value must be >= 1")
        if block[0] not in (1, None):
            raise fail("IRN032", f"block_shape[0] is {block[0]}; it must be 1 (the batch dim is not split)")
        for what, vals in ((nb, begin), (ne, end)):
            for i, v in enumerate(vals):
                if v is not None and v < 0:
                    raise fail("IRN032", f"{what}[{i}] is {v}; every value must be >= 0")
            if vals[0] not in (0, None):
                raise fail("IRN032", f"{what}[0] is {vals[0]}; it must be 0 (the batch dim is not "
                                     f"{'padded' if self.to_batch else 'cropped'})")
        blocks = None if any(b is None for b in block) else prod(block)
        n = shape[0]
        if n == -1 or blocks is None:
            out = [-1]
        elif self.to_batch:
            out = [n * blocks]
        else:
            if n % blocks:
                raise fail("IRN032", f"the batch ({n}) of data {fmt_shape(shape)} is not a multiple of the "
                                     f"product of block_shape ({blocks})")
            out = [n // blocks]
        for i in range(1, r):
            d, b, p, q = shape[i], block[i], begin[i], end[i]
            if d == -1 or b is None or p is None or q is None:
                out.append(-1)
            elif self.to_batch:
                if (d + p + q) % b:
                    raise fail("IRN032", f"dim {i} of data {fmt_shape(shape)} padded by {p} + {q} is {d + p + q}, "
                                         f"not a multiple of block_shape[{i}] = {b}")
                out.append((d + p + q) // b)
            else:
                if p + q > d * b:
                    raise fail("IRN032", f"dim {i}: {nb}[{i}] + {ne}[{i}] = {p + q} crops more than the "
                                         f"{d} * {b} = {d * b} elements there")
                out.append(d * b - p - q)
        return tuple(out)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        lengths = []
        for i, what in ((1, "block_shape"), (2, self.names[0]), (3, self.names[1])):
            info = ctx.inputs[i]
            if info.dtype not in INT_TYPES:
                raise fail("IRN033", f"{what} (input {i}) must be an integer tensor, got {info.dtype}")
            if info.shape is not None and len(info.shape) != 1:
                raise fail("IRN032", f"{what} (input {i}) must be 1-D, got {fmt_shape(info.shape)}")
            lengths.append(None if info.shape is None or info.shape[0] == -1 else info.shape[0])
        if self.same_index_types and len({ctx.inputs[i].dtype for i in (1, 2, 3)}) > 1:
            raise fail("IRN033", f"block_shape, {self.names[0]} and {self.names[1]} must have one element type, got "
                                 f"{', '.join(ctx.inputs[i].dtype for i in (1, 2, 3))}")
        known = [n for n in lengths if n is not None]
        if len(set(known)) > 1:
            raise fail("IRN032", f"block_shape, {self.names[0]} and {self.names[1]} must have the same length, got "
                                 f"{', '.join('?' if n is None else str(n) for n in lengths)}")
        if x.shape is None:  # the index inputs' length, when known, is the rank
            if known and known[0] < 2:
                raise fail("IRN032", f"block_shape has {known[0]} values: data must have rank >= 2")
            return [TensorInfo((-1,) * known[0] if known else None, x.dtype)]
        r = len(x.shape)
        if r < 2:
            raise fail("IRN032", f"data must have rank >= 2 ([batch, D1, ...]), got {fmt_shape(x.shape)}")
        if known and known[0] != r:
            raise fail("IRN032", f"block_shape, {self.names[0]} and {self.names[1]} have {known[0]} values each, "
                                 f"data {fmt_shape(x.shape)} has rank {r}")
        vals = []
        for i in (1, 2, 3):
            p = partial_of(ctx.inputs[i])
            vals.append(p if p is not None and len(p) == r else [None] * r)
        return [TensorInfo(self._shape(tuple(x.shape), *vals), x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer, apply = ctx.layer, space_to_batch if self.to_batch else batch_to_space

        def run(ins):
            x = ins[0]
            try:
                if any(np.asarray(v).ndim != 1 for v in ins[1:]):
                    raise ValueError(f"block_shape, {self.names[0]} and {self.names[1]} must be 1-D, got shapes "
                                     f"{', '.join(fmt_shape(np.shape(v)) for v in ins[1:])}")
                block, begin, end = ([int(a) for a in np.asarray(v)] for v in ins[1:])
                shape = self._shape(x.shape, block, begin, end)
                nbytes = prod(shape) * x.dtype.itemsize
                if nbytes > ABSURD_BYTES:
                    raise ValueError(f"the output {fmt_shape(shape)} needs {nbytes} bytes: absurd size")
                return [apply(x, block, begin, end)]
            except MemoryError:
                raise runtime_error(layer, "the output does not fit in memory") from None
            except Exception as e:
                raise runtime_error(layer, _message(e)) from None

        return run


@register
class SpaceToBatch(_BatchOp):
    type = "SpaceToBatch"
    version = 2
    opsets = (2, None)
    doc = ("data [N, D1..Dk] (any type), block_shape, pads_begin, pads_end (1-D integer, one value per dim, "
           "constant or run-time): zero-pad, then [N*prod(B), (D_i+P_i)/B_i]; block_shape[0] = 1, batch pads 0.")


@register
class BatchToSpace(_BatchOp):
    type = "BatchToSpace"
    version = 2
    opsets = (2, None)
    to_batch = False
    names = ("crops_begin", "crops_end")
    same_index_types = True
    doc = ("data [N, D1..Dk] (any type), block_shape, crops_begin, crops_end (1-D integer, one type, one value "
           "per dim, constant or run-time): [N/prod(B), D_i*B_i - crops]; block_shape[0] = 1, batch crops 0.")


# ---- GRN -----------------------------------------------------------------------------------------------------

_CHUNK = 1 << 20  # float64 elements squared per step (bounds the temporary)


def grn(x: np.ndarray, bias: float) -> np.ndarray:
    """GRN over axis 1 of `x` (rank 2-4, float), OpenVINO CPU arithmetic (module docstring)."""
    n, c = x.shape[:2]
    inner = prod(x.shape[2:])
    cdt = np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)
    v = np.ascontiguousarray(x, dtype=cdt).reshape(n, c, inner)
    s = np.zeros((n, 1, inner), np.float64)
    step = max(1, _CHUNK // max(n * inner, 1))
    for c0 in range(0, c, step):
        sq = v[:, c0:c0 + step].astype(np.float64)
        np.multiply(sq, sq, out=sq)
        s += sq.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        d = np.sqrt(s + float(np.float32(bias)), out=s).astype(cdt)
        y = v / d
    return y.reshape(x.shape).astype(x.dtype, copy=False)


@register
class GRN(Op):
    type = "GRN"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([Attr("bias", parse_float, doc="added to the sum of squares; kept as float32")])
    doc = ("float data of rank 2-4: y = x / sqrt(sum over axis 1 of x^2 + bias), sum accumulated in float64 and "
           "the root rounded to float32, as OpenVINO's CPU plugin does (f64 data: float64 throughout).")

    @staticmethod
    def _check(shape: tuple[int, ...]) -> None:
        if not 2 <= len(shape) <= 4:
            raise fail("IRN032", f"data must have rank 2, 3 or 4, got {fmt_shape(shape)}")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        t = require_float(ctx, 0, "data")
        if x.shape is not None:
            self._check(tuple(x.shape))
        return [TensorInfo(x.shape, t)]

    def build(self, ctx: NodeContext) -> Kernel:
        bias, layer = ctx.attrs["bias"], ctx.layer

        def run(ins):
            x = ins[0]
            try:
                self._check(x.shape)
            except Exception as e:
                raise runtime_error(layer, _message(e)) from None
            return [grn(x, bias)]

        return run
