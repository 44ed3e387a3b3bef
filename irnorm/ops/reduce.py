"""ReduceMean-1, ReduceSum-1, ReduceMax-1 (opset1+) and ReduceL2-4 (opset4+).

Inputs: data, and a constant axes tensor (scalar or 1-D integer; negative axes count from the
back; repeated axes act as a set, as in OpenVINO).  ``keep_dims`` (default false) keeps each
reduced axis as a size-1 dim.  The output has the input's element type.

* Empty axes reduce over nothing: each output element is the reduction of one element, i.e. the
  input for Sum, Mean and Max and ``|x|`` for L2 (OpenVINO's reference and CPU plugin agree; the CPU
  plugin fails to compile an empty-axes reduction with keep_dims=false, and OpenVINO cannot read an
  IR holding the zero-byte axes Const at all).
* Floats accumulate in float64 and round once to the output type (the CPU plugin accumulates in
  float32, so results differ from it in the last bits).
* A reduction over zero elements gives 0 for Sum, Mean and L2 and the type's lowest finite value
  for Max, as OpenVINO does.
* Integers: Sum wraps; Mean and L2 truncate toward zero (C++ integer division / conversion).

Float reductions run in the Numba kernels of ``irnorm.kernels.reduce``; integers and constant
folding use numpy.
"""

from __future__ import annotations

from typing import ClassVar

import ml_dtypes
import numpy as np

from ..ir.attrs import AttrSchema, optional, parse_bool
from ..ir.dtypes import cast, compute_dtype, is_float_dtype
from ..kernels.opcodes import REDUCE_MAX, REDUCE_SUM, REDUCE_SUMSQ
from .base import Kernel, NodeContext, Op, TensorInfo, constant_axes, fail, normalize_axes, register


def axes_input(ctx: NodeContext, index: int, rank: int, what: str = "axes", allow_repeats: bool = True
               ) -> list[int]:
    """A constant axes input (scalar or 1-D integer tensor), normalized to sorted unique [0, rank)."""
    return sorted(set(constant_axes(ctx, index, rank, what, unique=not allow_repeats)))


def reduced_shape(shape: tuple[int, ...], axes: list[int], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


def lowest(dtype: np.dtype) -> np.generic:
    """The type's lowest finite value (std::numeric_limits<T>::lowest())."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return np.iinfo(dt).min
    return ml_dtypes.finfo(dt).min


def compute_reduce(kind: str, x: np.ndarray, axes: list[int], keep_dims: bool) -> np.ndarray:
    """The op's semantics in numpy: kind is 'sum', 'mean', 'max' or 'l2'; axes sorted, unique."""
    if not axes:
        return np.abs(x) if kind == "l2" else x.copy()
    out_shape = reduced_shape(x.shape, axes, keep_dims)
    ax = tuple(axes)
    n = 1
    for a in axes:
        n *= x.shape[a]
    dt = x.dtype
    if kind == "max":
        if n == 0:
            return np.full(out_shape, lowest(dt), dt)
        src = x.astype(compute_dtype(dt)) if is_float_dtype(dt) else x
        return cast(np.max(src, axis=ax, keepdims=keep_dims), dt)
    if is_float_dtype(dt):
        if kind == "l2":
            r = np.sqrt(np.sum(np.square(x.astype(np.float64)), axis=ax, keepdims=keep_dims))
        else:
            r = np.sum(x.astype(np.float64), axis=ax, keepdims=keep_dims)
            if kind == "mean":
                r = r / n if n else np.zeros_like(r)
        return cast(r, dt)
    with np.errstate(all="ignore"):
        if kind == "sum":
            return np.asarray(np.sum(x, axis=ax, keepdims=keep_dims, dtype=dt))
        if kind == "l2":
            r = np.trunc(np.sqrt(np.sum(np.square(x.astype(np.float64)), axis=ax, keepdims=keep_dims)))
            return cast(r, dt)
        s = np.asarray(np.sum(x, axis=ax, keepdims=keep_dims, dtype=np.int64))
        if n == 0:
            return np.zeros(out_shape, dt)
        q = np.abs(s) // n * np.sign(s)  # C++ integer division truncates toward zero
        return cast(q, dt)


class _Reduce(Op):
    version = 1
    opsets = (1, None)
    schema = AttrSchema([optional("keep_dims", parse_bool, False, doc="keep reduced axes as size-1 dims")])
    inputs = (2, 2)
    kind: ClassVar[str]

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype == "boolean":
            raise fail("IRN033", f"{self.type} does not take boolean data")
        keep = ctx.attrs["keep_dims"]
        if x.shape is None:
            ctx.const(1, "axes")
            return [TensorInfo(None, x.dtype)]
        axes = axes_input(ctx, 1, len(x.shape))
        out = TensorInfo(reduced_shape(x.shape, axes, keep), x.dtype)
        if x.value is not None:
            out.value = compute_reduce(self.kind, x.value, axes, keep)
        return [out]

    def build(self, ctx: NodeContext) -> Kernel:
        kind = self.kind
        keep = ctx.attrs["keep_dims"]

        def run(ins):
            x = ins[0]
            axes = sorted(set(normalize_axes([int(a) for a in np.asarray(ins[1]).reshape(-1)], x.ndim)))
            if not axes or not is_float_dtype(x.dtype) or x.size == 0:
                return [compute_reduce(kind, x, axes, keep)]
            from ..kernels import reduce as kern  # lazy: validate never imports numba

            code = REDUCE_SUMSQ if kind == "l2" else REDUCE_MAX if kind == "max" else REDUCE_SUM
            acc = kern.reduce(code, x, axes)  # float64, keep_dims=False layout
            if kind == "mean":
                acc = acc / int(np.prod([x.shape[a] for a in axes]))
            elif kind == "l2":
                acc = np.sqrt(acc)
            return [cast(acc.reshape(reduced_shape(x.shape, axes, keep)), x.dtype)]

        return run


@register
class ReduceMean(_Reduce):
    type = "ReduceMean"
    kind = "mean"
    doc = ("mean over constant axes; keep_dims; empty axes = identity; floats accumulate in float64; "
           "integers truncate toward zero.")


@register
class ReduceSum(_Reduce):
    type = "ReduceSum"
    kind = "sum"
    doc = "sum over constant axes; keep_dims; empty axes = identity; floats accumulate in float64."


@register
class ReduceMax(_Reduce):
    type = "ReduceMax"
    kind = "max"
    doc = ("maximum over constant axes (NaN propagates); keep_dims; empty axes = identity; zero elements give the "
           "type's lowest value.")


@register
class ReduceL2(_Reduce):
    type = "ReduceL2"
    version = 4
    opsets = (4, None)
    kind = "l2"
    doc = ("sqrt(sum of squares) over constant axes; keep_dims; empty axes give |x|; float64 accumulation; "
           "integers truncate.")
