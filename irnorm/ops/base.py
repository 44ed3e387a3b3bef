"""The op registry: one class per (type, operation version) declares its attribute
schema, arity, shape/type rule and kernel in one place.

An op module defines a subclass of :class:`Op` and decorates it with
:func:`register`.  The graph builder looks ops up by the layer's `type`
(case-insensitive, as OpenVINO does) and `version` (an opset name such as
``opset12``, or irnorm's extension opset ``irnorm1``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import Diagnostic, InputError, RuleError, fail
from ..ir.attrs import AttrError, AttrSchema, optional
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES
from ..ir.tensor import TensorInfo, fmt_shape

__all__ = [
    "AUTO_BROADCAST",
    "EXTENSION_OPSET", "LATEST_OPSET", "Kernel", "NodeContext", "Op", "PartialInfo", "RuleError", "TensorInfo",
    "all_ops", "broadcast_shape", "constant_axes", "fail", "fmt_shape", "int_list_length", "known_versions", "lookup",
    "merge_dim", "normalize_axes", "partial_of", "prod", "register", "require_float", "require_same_type",
    "runtime_error", "same_dim", "with_partial",
]

def _auto_broadcast(text: str) -> str:
    t = text.strip().lower()
    if t == "numpy":
        return "numpy"
    if t in ("none", "explicit"):
        return "none"
    if t == "pdpd":
        raise AttrError("'pdpd' broadcasting is not supported by irnorm (only numpy and none)", code="IRN023")
    raise AttrError(f"'{text}' is not one of numpy, none, explicit")


# The `auto_broadcast` attribute of the binary elementwise, comparison and logic ops.
AUTO_BROADCAST = optional("auto_broadcast", _auto_broadcast, "numpy", doc="numpy (default) or none (alias explicit)")

# The newest opset OpenVINO 2026.4 defines; a layer naming a later one is refused (IRN012), as
# OpenVINO refuses it.  An op whose `opsets` end in None is current up to this opset.
LATEST_OPSET = 17
EXTENSION_OPSET = "irnorm1"


@dataclass
class NodeContext:
    """Everything an op's rule and kernel builder may look at."""

    layer: Any  # LayerRecord
    attrs: dict[str, Any]
    inputs: list[TensorInfo]
    num_outputs: int  # output ports the layer declares
    weights: Any = None  # the model's Weights (the .bin), for Const; None when unavailable
    # build() only: how many leading outputs anything reads (None: all).  A kernel may skip computing
    # the unread ones (e.g. MaxPool's indices) and return a shorter list.
    outputs_read: int | None = None
    # build() only, for ops with sub-graphs (If): loads a checked body Graph into a callable that takes the
    # body's inputs in Parameter order and returns its outputs in Result order (the runtime supplies it)
    subgraph: Callable[[Any], Callable[[list[np.ndarray]], list[np.ndarray]]] | None = None
    # build() only, for ReadValue / Assign: the model's variables (runtime/state.py's VariableStore)
    variables: Any = None

    def const(self, i: int, what: str) -> np.ndarray:
        v = self.inputs[i].value
        if v is None:
            raise fail("IRN034", f"input {i} ({what}) must be a constant (a Const or a folded subgraph)")
        return v

    def keep_constant_as(self, i: int, view: np.ndarray) -> None:
        """build() only: the kernel holds constant input i in a layout of its own (a MatMul's weight copied
        into [K, N]); `view` is an array of the constant's shape, type and values in that copy's memory.  The
        checked graph's value becomes it (the runtime's plan reads the graph's values after building), so
        the original is freed unless something else holds it: one copy of a weight instead of two, and never
        two of every weight at once while a model loads."""
        info = self.inputs[i]
        old = info.value
        if old is None or old.shape != view.shape or old.dtype != view.dtype:
            raise ValueError("keep_constant_as: not the constant's shape and type")
        info.value = view


Kernel = Callable[[Sequence[np.ndarray]], list[np.ndarray]]


class Op:
    """Base class for one operation version."""

    type: ClassVar[str]
    version: ClassVar[int]  # operation version, e.g. 12 for GroupNormalization-12
    opsets: ClassVar[tuple[int, int | None] | str]  # (first, last or None) opset numbers, or an extension name
    schema: ClassVar[AttrSchema] = AttrSchema()
    inputs: ClassVar[tuple[int, int]] = (1, 1)  # min, max number of input ports
    outputs: ClassVar[tuple[int, int]] = (1, 1)
    # Constant-fold at load time when every input is constant.
    foldable: ClassVar[bool] = True
    # Its kernel calls numpy's BLAS: runs of a plan with such a layer set BLAS's threads (kernels/blas.py).
    uses_blas: ClassVar[bool] = False
    doc: ClassVar[str] = ""

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        """Check the shape/type rule and return the output infos (dims may be -1)."""
        raise NotImplementedError

    def build(self, ctx: NodeContext) -> Kernel:
        """Return the kernel for this node.  `ctx.inputs` holds load-time infos; the kernel
        must accept any concrete shapes consistent with them (dynamic dims)."""
        raise NotImplementedError

    def pointed_values(self, attrs: dict[str, Any], data: np.ndarray, port: int, index: np.ndarray
                       ) -> np.ndarray | None:
        """For an output that indexes the data input (MaxPool's and TopK's indices): the data values that
        `index` (an array shaped like that output) points at, as float64, NaN where an index is outside the
        data -- so that the workbench can tell index outputs that differ only between equal values (ties)
        from real divergences.  None for every other output (the default)."""
        return None

    @classmethod
    def label(cls) -> str:
        return f"{cls.type}-{cls.version}"


_REGISTRY: dict[str, list[type[Op]]] = {}


def register(cls: type[Op]) -> type[Op]:
    _REGISTRY.setdefault(cls.type.lower(), []).append(cls)
    return cls


_OPSET_RE = re.compile(r"^opset(\d+)$")


def lookup(type_: str, version: str) -> type[Op] | None:
    _ensure_loaded_for(type_)
    cands = _REGISTRY.get(type_.lower(), [])
    m = _OPSET_RE.match(version)
    for cls in cands:
        if isinstance(cls.opsets, str):
            if version == cls.opsets:
                return cls
        elif m:
            lo, hi = cls.opsets
            n = int(m.group(1))
            if lo <= n <= (hi or LATEST_OPSET):
                return cls
    return None


def known_versions(type_: str) -> list[str]:
    _ensure_loaded()
    out = []
    for cls in _REGISTRY.get(type_.lower(), []):
        if isinstance(cls.opsets, str):
            out.append(cls.opsets)
        else:
            lo, hi = cls.opsets
            out.append(f"opset{lo}..opset{hi}" if hi else f"opset{lo}+")
    return out


def all_ops() -> list[type[Op]]:
    _ensure_loaded()
    return [c for cs in _REGISTRY.values() for c in cs]


_loaded = False


def _ensure_loaded() -> None:
    global _loaded
    if not _loaded:
        _loaded = True
        from . import load_all

        load_all()


def _ensure_loaded_for(type_: str) -> None:
    """Import the op modules that register `type_` (ops/index.py), or every one for a type the index does
    not name: a model's check imports its own ops' modules only (every module: ~17 ms of each process)."""
    if not _loaded:
        from . import load_for

        if not load_for(type_):
            _ensure_loaded()


# ---- helpers shared by op rules -------------------------------------------------


def same_dim(a: int, b: int) -> bool:
    return a == -1 or b == -1 or a == b


def merge_dim(a: int, b: int) -> int:
    return b if a == -1 else a


def normalize_axes(axes: Sequence[int], rank: int, what: str = "axes") -> list[int]:
    out = []
    for a in axes:
        a = int(a)
        if not -rank <= a < rank:
            raise fail("IRN032", f"{what} value {a} is out of range [{-rank}, {rank - 1}] for rank {rank}")
        out.append(a + rank if a < 0 else a)
    return out


def require_float(ctx: NodeContext, i: int, what: str) -> str:
    t = ctx.inputs[i].dtype
    if t not in FLOAT_TYPES:
        raise fail("IRN033", f"{what} must be a floating-point tensor, got {t}")
    return t


def require_same_type(ctx: NodeContext, i: int, j: int, what: str) -> None:
    a, b = ctx.inputs[i].dtype, ctx.inputs[j].dtype
    if a != b:
        raise fail("IRN033", f"{what} has element type {b}, expected {a} (same as input {i})")


def int_list_length(ctx: NodeContext, index: int, what: str, *, scalar_ok: bool = True, where: str = ""
                    ) -> int | None:
    """Check that input `index` is an integer scalar (when `scalar_ok`) or 1-D tensor (axes, lengths)
    and return how many values it holds: None when that is dynamic.  Used for such inputs whether they
    are constants or arrive at run time (ONNX opset-18 exports pass reduce axes as model inputs)."""
    info = ctx.inputs[index]
    if info.dtype not in INT_TYPES:
        raise fail("IRN033", f"{what}{where} must be an integer tensor, got {info.dtype}")
    if info.shape is None:
        return None
    if len(info.shape) not in ((0, 1) if scalar_ok else (1,)):
        kind = "a scalar or 1-D" if scalar_ok else "1-D"
        raise fail("IRN032", f"{what}{where} must be {kind}, got {fmt_shape(info.shape)}")
    return 1 if not info.shape else (None if info.shape[0] == -1 else info.shape[0])


def constant_axes(ctx: NodeContext, index: int, rank: int | None, what: str = "axes", *, unique: bool = True,
                  scalar_ok: bool = True, where: str = "") -> list[int] | None:
    """A constant axes input (1-D integer tensor, or a scalar when `scalar_ok`), normalized to [0, rank)
    in the given order (None when the rank is unknown).  `unique` makes repeated axes an error;
    `where` (e.g. " (input 1)") is added to the type and shape messages."""
    int_list_length(ctx, index, what, scalar_ok=scalar_ok, where=where)
    raw = [int(a) for a in ctx.const(index, what).reshape(-1)]
    if rank is None:
        return None
    axes = normalize_axes(raw, rank, what)
    if unique and len(set(axes)) != len(axes):
        raise fail("IRN032", f"{what} {raw} has repeated axes")
    return axes


def broadcast_shape(a: tuple[int, ...] | None, b: tuple[int, ...] | None, mode: str,
                    names: tuple[str, str] = ("input 0", "input 1")) -> tuple[int, ...] | None:
    """Output shape of a binary op under ``mode`` ('numpy' or 'none'); -1 dims tolerated.
    Raises IRN032 naming the offending dim."""
    if a is None or b is None:
        return None
    if mode == "none":
        if len(a) != len(b):
            raise fail("IRN032", f"auto_broadcast=none needs equal shapes, got {fmt_shape(a)} ({names[0]}) and "
                                 f"{fmt_shape(b)} ({names[1]}) of different ranks")
        out = []
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != -1 and y != -1 and x != y:
                raise fail("IRN032", f"auto_broadcast=none needs equal shapes, got {fmt_shape(a)} and {fmt_shape(b)}: "
                                     f"dim {k} is {x} in {names[0]} and {y} in {names[1]}")
            out.append(y if x == -1 else x)
        return tuple(out)
    r = max(len(a), len(b))
    pa = (1,) * (r - len(a)) + tuple(a)
    pb = (1,) * (r - len(b)) + tuple(b)
    out = []
    for k, (x, y) in enumerate(zip(pa, pb, strict=True)):
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x == -1:
            out.append(y)
        elif y == -1:
            out.append(x)
        else:
            raise fail("IRN032", f"shapes {fmt_shape(a)} ({names[0]}) and {fmt_shape(b)} ({names[1]}) do not "
                                 f"broadcast (numpy rule): output dim {k} is {x} in {names[0]} and {y} in "
                                 f"{names[1]} (counted from the right: dim {k - r})")
    return tuple(out)


def runtime_error(layer, message: str):
    """An error found while running (the inputs' concrete values or shapes), located at the layer."""
    return InputError(Diagnostic("IRN064", message, **layer.where(None)))


# ---- partly known integer tensors (shape subgraphs) ------------------------------------


@dataclass
class PartialInfo(TensorInfo):
    """A small integer tensor (scalar or 1-D) whose elements are partly known at load time, as
    OpenVINO's value propagation knows them: ``ShapeOf`` of ``[?, 4, ?]`` is ``(None, 4, None)``.
    Gather, Concat, Squeeze/Unsqueeze/Reshape and integer arithmetic carry the known elements, and a
    tensor whose elements all become known turns into a constant, so the part of a dynamic shape
    subgraph that depends only on static dims folds at load time."""

    partial: tuple[int | None, ...] | None = None


def partial_of(info: TensorInfo) -> list[int | None] | None:
    """The elements of a scalar or 1-D integer tensor (None where unknown), or None if nothing is known."""
    if info.dtype not in INT_TYPES or info.shape is None or len(info.shape) > 1:
        return None
    if info.value is not None:
        return [int(v) for v in np.asarray(info.value).reshape(-1)]
    p = getattr(info, "partial", None)
    return list(p) if p is not None else None


def with_partial(shape: tuple[int, ...], dtype: str, elems: list[int | None] | None) -> TensorInfo:
    """An info for a scalar/1-D integer result: a constant when every element is known, a
    PartialInfo when some are, a plain TensorInfo otherwise."""
    if elems is None or all(e is None for e in elems) or prod(shape) != len(elems):
        return TensorInfo(shape, dtype)
    if all(e is not None for e in elems):
        return TensorInfo(shape, dtype, np.array(elems, ELEMENT_TYPES[dtype]).reshape(shape))
    return PartialInfo(shape, dtype, None, tuple(elems))


def prod(dims) -> int:
    """Product of a sequence of ints (1 for an empty one)."""
    n = 1
    for d in dims:
        n *= int(d)
    return n


def values_at(rows: np.ndarray, row_of: np.ndarray, column: np.ndarray) -> np.ndarray:
    """rows[row_of, column] as float64, NaN where a column index is outside the rows (pointed_values' read:
    the indices come from a file's model or from another runtime, so they are checked, never trusted)."""
    column = np.asarray(column).astype(np.int64)
    inside = (column >= 0) & (column < rows.shape[1])
    got = rows[row_of, np.where(inside, column, 0)].astype(np.float64) if rows.shape[1] else \
        np.zeros(column.shape, np.float64)
    return np.where(inside, got, np.nan)
