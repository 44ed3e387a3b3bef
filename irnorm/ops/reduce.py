"""ReduceMean-1, ReduceSum-1, ReduceMax-1, ReduceMin-1, ReduceProd-1, ReduceLogicalAnd-1,
ReduceLogicalOr-1 (opset1+) and ReduceL1-4, ReduceL2-4 (opset4+).

Inputs: data, and an axes tensor (scalar or 1-D integer; negative axes count from the back;
repeated axes act as a set, as in OpenVINO).  Axes may arrive at run time (ONNX opset-18 exports):
the output dims are then dynamic and, without keep_dims, the rank is the data's minus the number of
axes (docs/ir-format.md §12 item 13); a repeated axis that would break that rank is IRN064.
``keep_dims`` (default false) keeps each reduced axis as a size-1 dim.  The output has the input's element type.

* Empty axes reduce over nothing: each output element is the reduction of one element, i.e. the
  input for Sum, Mean and Max and ``|x|`` for L2 (OpenVINO's reference and CPU plugin agree; the CPU
  plugin fails to compile an empty-axes reduction with keep_dims=false, and OpenVINO cannot read an
  IR holding the zero-byte axes Const at all).
* Floats accumulate in float64 and round once to the output type (the CPU plugin accumulates in
  float32, so results differ from it in the last bits).
* A reduction over zero elements gives 0 for Sum, Mean and L2 and the type's lowest finite value
  for Max, as OpenVINO does.
* Integers: Sum wraps; Mean and L2 truncate toward zero (C++ integer division / conversion).

* A reduction over zero elements gives 1 for Prod, the type's highest value for Min, true for
  LogicalAnd and false for LogicalOr.

Sum, Mean, Max and L2 over floats run in the Numba kernels of ``irnorm.kernels.reduce``; the others,
integers and constant folding use numpy's reductions (vectorised C; in real exports ReduceProd and
the logical reductions appear on small shape and mask tensors).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ..ir.attrs import AttrSchema, optional, parse_bool
from ..ir.dtypes import cast, compute_dtype, is_float_dtype
from ..kernels.opcodes import REDUCE_MAX, REDUCE_SUM, REDUCE_SUMSQ
from .base import (
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    constant_axes,
    fail,
    int_list_length,
    normalize_axes,
    register,
    runtime_error,
)


def axes_input(ctx: NodeContext, index: int, rank: int, what: str = "axes", allow_repeats: bool = True
               ) -> list[int]:
    """A constant axes input (scalar or 1-D integer tensor), normalized to sorted unique [0, rank)."""
    return sorted(set(constant_axes(ctx, index, rank, what, unique=not allow_repeats)))


def runtime_axes_shape(ctx: NodeContext, shape: tuple[int, ...] | None, keep_dims: bool) -> tuple[int, ...] | None:
    """The output shape of a reduction whose axes arrive at run time: which dims go is unknown, so
    every dim is dynamic (a size-1 dim stays 1 with keep_dims); without keep_dims the rank drops by
    the number of axes, when that number is known (None otherwise)."""
    count = int_list_length(ctx, 1, "axes")
    if shape is None:
        return None
    if keep_dims:
        return tuple(1 if d == 1 else -1 for d in shape)
    if count is None:
        return None
    if count > len(shape):
        raise fail("IRN032", f"axes holds {count} values, more than the data's rank {len(shape)}")
    return (-1,) * (len(shape) - count)


def reduced_shape(shape: tuple[int, ...], axes: list[int], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


def lowest(dtype: np.dtype) -> np.generic:
    """The type's lowest finite value (std::numeric_limits<T>::lowest())."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return np.iinfo(dt).min
    return _finfo(dt).min


def highest(dtype: np.dtype) -> np.generic:
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        return np.iinfo(dt).max
    return _finfo(dt).max


def _finfo(dt: np.dtype) -> np.finfo:
    """numpy's finfo for its own float types; ml_dtypes' for bfloat16 (imported only then: see ir/dtypes.py)."""
    if dt.kind == "f":
        return np.finfo(dt)
    import ml_dtypes

    return ml_dtypes.finfo(dt)


def compute_reduce(kind: str, x: np.ndarray, axes: list[int], keep_dims: bool) -> np.ndarray:
    """The op's semantics in numpy: kind is 'sum', 'mean', 'max', 'min', 'prod', 'l1', 'l2', 'and' or
    'or'; axes sorted, unique."""
    if not axes:
        return np.abs(x) if kind in ("l1", "l2") else x.copy()
    if kind in ("and", "or", "min", "prod", "l1"):
        return _compute_other(kind, x, axes, keep_dims)
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


def _compute_other(kind: str, x: np.ndarray, axes: list[int], keep_dims: bool) -> np.ndarray:
    ax = tuple(axes)
    dt = x.dtype
    if kind in ("and", "or"):
        return np.asarray((np.all if kind == "and" else np.any)(x, axis=ax, keepdims=keep_dims))
    if kind == "min":
        if any(x.shape[a] == 0 for a in axes):
            return np.full(reduced_shape(x.shape, axes, keep_dims), highest(dt), dt)
        src = x.astype(compute_dtype(dt)) if is_float_dtype(dt) else x
        return cast(np.min(src, axis=ax, keepdims=keep_dims), dt)
    with np.errstate(all="ignore"):
        if is_float_dtype(dt):
            x64 = x.astype(np.float64)
            r = np.prod(x64, axis=ax, keepdims=keep_dims) if kind == "prod" else \
                np.sum(np.abs(x64), axis=ax, keepdims=keep_dims)
            return cast(r, dt)
        if kind == "prod":
            return np.asarray(np.prod(x, axis=ax, keepdims=keep_dims, dtype=dt))
        return np.asarray(np.sum(np.abs(x), axis=ax, keepdims=keep_dims, dtype=dt))


class _Reduce(Op):
    version = 1
    opsets = (1, None)
    schema = AttrSchema([optional("keep_dims", parse_bool, False, doc="keep reduced axes as size-1 dims")])
    inputs = (2, 2)
    kind: ClassVar[str]

    logical: ClassVar[bool] = False  # boolean data only (LogicalAnd/Or); the others refuse it

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if (x.dtype == "boolean") != self.logical:
            need = "boolean" if self.logical else "numeric (not boolean)"
            raise fail("IRN033", f"{self.type} takes {need} data, got {x.dtype}")
        keep = ctx.attrs["keep_dims"]
        if ctx.inputs[1].value is None:  # axes known only at run time
            return [TensorInfo(runtime_axes_shape(ctx, x.shape, keep), x.dtype)]
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
        layer = ctx.layer
        # Axes given at run time: the output rank promised at load time must hold (repeated axes would break it).
        out_rank = None
        if ctx.inputs[1].value is None and ctx.inputs[0].shape is not None:
            shape = runtime_axes_shape(ctx, ctx.inputs[0].shape, keep)
            out_rank = None if shape is None else len(shape)

        # (data shape, dtype, axes) -> small_rows' one-call kernel or None; the same few every run
        small: dict[tuple, object] = {}

        def run(ins):
            x = ins[0]
            axes_in = ins[1]
            key = (x.shape, x.dtype, axes_in.dtype.str + axes_in.tobytes().hex() if isinstance(axes_in, np.ndarray)
                   else None)
            fast = small.get(key)
            if fast is not None:
                y = fast(x)
                if y is not None:
                    return [y]
            raw = [int(a) for a in np.asarray(axes_in).reshape(-1)]
            axes = sorted(set(normalize_axes(raw, x.ndim)))
            if out_rank is not None and x.ndim - len(axes) != out_rank and not keep:
                raise runtime_error(layer, f"axes {raw} name an axis twice: the output would have rank "
                                           f"{x.ndim - len(axes)}, not the {out_rank} known when loading")
            if not axes or not is_float_dtype(x.dtype) or x.size == 0 or kind not in ("sum", "mean", "max", "l2"):
                return [compute_reduce(kind, x, axes, keep)]
            from ..kernels import reduce as kern  # lazy: validate never imports numba

            code = REDUCE_SUMSQ if kind == "l2" else REDUCE_MAX if kind == "max" else REDUCE_SUM
            if key not in small and key[2] is not None and len(small) < 64:
                n = int(np.prod([x.shape[a] for a in axes])) if kind == "mean" else 1
                small[key] = fast = kern.small_rows(code, x.shape, x.dtype, tuple(axes), float(n), kind == "l2",
                                                    reduced_shape(x.shape, axes, keep))
                if fast is not None:
                    y = fast(x)
                    if y is not None:
                        return [y]
            acc = kern.reduce(code, x, axes)  # float64, keep_dims=False layout
            if kind == "mean":
                acc = acc / int(np.prod([x.shape[a] for a in axes]))
            elif kind == "l2":
                acc = np.sqrt(acc)
            return [cast(acc.reshape(reduced_shape(x.shape, axes, keep)), x.dtype)]

        axes_const = ctx.inputs[1].value
        if axes_const is not None:
            tail = (axes_const.dtype.str + axes_const.tobytes().hex() if isinstance(axes_const, np.ndarray)
                    else None)

            def static_call(x: np.ndarray) -> np.ndarray:
                # the straight-line runner's form on a static model (runtime/plan.py): the data alone, the
                # one-call kernel found without keying the axes again (a squeeze-excite block's pool)
                fast = small.get((x.shape, x.dtype, tail))
                if fast is not None:
                    y = fast(x)
                    if y is not None:
                        return y
                return run([x, axes_const])[0]
            run.static_call = static_call  # type: ignore[attr-defined]
        return run


@register
class ReduceMean(_Reduce):
    type = "ReduceMean"
    kind = "mean"
    doc = ("mean over the axes; keep_dims; empty axes = identity; floats accumulate in float64; "
           "integers truncate toward zero.")


@register
class ReduceSum(_Reduce):
    type = "ReduceSum"
    kind = "sum"
    doc = "sum over the axes; keep_dims; empty axes = identity; floats accumulate in float64."


@register
class ReduceMax(_Reduce):
    type = "ReduceMax"
    kind = "max"
    doc = ("maximum over the axes (NaN propagates); keep_dims; empty axes = identity; zero elements give the "
           "type's lowest value.")


@register
class ReduceL2(_Reduce):
    type = "ReduceL2"
    version = 4
    opsets = (4, None)
    kind = "l2"
    doc = ("sqrt(sum of squares) over the axes; keep_dims; empty axes give |x|; float64 accumulation; "
           "integers truncate.")


@register
class ReduceMin(_Reduce):
    type = "ReduceMin"
    kind = "min"
    doc = ("minimum over the axes (NaN propagates); keep_dims; empty axes = identity; zero elements give the "
           "type's highest value.")


@register
class ReduceProd(_Reduce):
    type = "ReduceProd"
    kind = "prod"
    doc = "product over the axes; keep_dims; empty axes = identity; floats in float64; integers wrap."


@register
class ReduceL1(_Reduce):
    type = "ReduceL1"
    version = 4
    opsets = (4, None)
    kind = "l1"
    doc = "sum of |x| over the axes; keep_dims; empty axes give |x|; float64 accumulation."


@register
class ReduceLogicalAnd(_Reduce):
    type = "ReduceLogicalAnd"
    kind = "and"
    logical = True
    doc = "logical AND over the axes of boolean data; keep_dims; zero elements give true."


@register
class ReduceLogicalOr(_Reduce):
    type = "ReduceLogicalOr"
    kind = "or"
    logical = True
    doc = "logical OR over the axes of boolean data; keep_dims; zero elements give false."
