"""Comparison, logic, bitwise, modulo and selection ops: FloorMod-1, Mod-1, Equal-1, NotEqual-1, Less-1,
LessEqual-1, Greater-1, GreaterEqual-1, LogicalAnd/Or/Xor/Not-1, BitwiseAnd/Or/Xor/Not-13,
BitwiseLeftShift/BitwiseRightShift-15, Select-1, IsNaN-10, IsInf-10, IsFinite-10.

These run as numpy ufuncs on the (broadcast) operands, not as Numba kernels: numpy's comparison,
logical, bitwise and ``where`` loops are vectorised C already, and in real networks these ops sit on
small mask and shape tensors (attention masks, shape arithmetic), where a kernel launch would cost
more than the work.  When every input is a constant, ``infer`` computes the value, so constant
subgraphs fold at load time without importing Numba.

Semantics (OpenVINO 2026.4):

* Binary ops take ``auto_broadcast`` ``numpy`` (default) or ``none`` (alias ``explicit``; equal shapes);
  ``pdpd`` is not supported.  Both data inputs have one element type (IRN033 otherwise).
* Comparisons take any element type, boolean included, and give boolean; NaN compares unequal to
  everything (``NotEqual`` is true).  f16/bf16 compare their own values (no rounding is involved).
* ``Mod`` is the truncated remainder (the dividend's sign), ``FloorMod`` the floored one (the divisor's
  sign).  Floats use OpenVINO's formulas: ``Mod = x - trunc(x / y) * y`` in the compute type (float32 for
  f32/f16/bf16), ``FloorMod = x - y * floor(x / y)`` in float64, so ``y = 0`` or ``y = inf`` gives NaN.
  Integers are exact (C ``%`` and its floored variant); an integer divisor of 0 is an error (IRN064 at
  run time, IRN032 in a constant subgraph).  Boolean data is refused.
* ``LogicalAnd/Or/Xor/Not`` take boolean tensors only; ``BitwiseAnd/Or/Xor/Not`` take integer or boolean
  tensors (``BitwiseNot`` of a boolean is logical not).
* ``BitwiseLeftShift`` / ``BitwiseRightShift`` (torch's ``<<`` / ``>>``) take integer tensors of one type (i8..i64,
  u8..u64; not boolean, as OpenVINO).  For a shift amount ``b`` in ``[0, bits)`` of the type: ``a << b`` keeps
  the low bits (wraps), ``a >> b`` is arithmetic for signed types (the sign fills in: -5 >> 1 = -3) and
  logical for unsigned ones.  Outside that range (``b < 0`` or ``b >= bits``), where C++ and so the spec's
  reference are undefined: ``<<`` gives 0 and ``>>`` gives the sign fill (-1 for a negative signed ``a``, 0
  otherwise), what shifting one bit at a time gives, as torch and numpy do.
* ``Select(cond, then, else)``: ``cond`` is boolean, ``then``/``else`` share any element type; with
  ``numpy`` the three shapes broadcast together, with ``none`` they must be equal.
* ``IsNaN``, ``IsFinite`` and ``IsInf`` (``detect_negative``/``detect_positive``, default true) take floats
  and give boolean.

OpenVINO's CPU plugin (2026.4) departs from its reference here; irnorm follows the reference:
``Greater``/``GreaterEqual`` are true when an operand is NaN; f64 models run in f32 with +-inf saturated
to +-FLT_MAX (so f64 ``IsInf``/``IsFinite`` miss infinities and ``FloorMod`` by an infinite f64 divisor
differs); i64 bitwise ops are computed in i32.  Its shifts (docs/ir-format.md, "BitwiseLeftShift-15 /
BitwiseRightShift-15") run every type as i32 with the x86 shift count ``b & 31``: i64/u64 wrap to their low
32 bits and come back sign-extended, u32 shifts right arithmetically, and a count outside ``[0, 32)`` is
taken modulo 32; i8..u16 and i32 agree with irnorm for every count in ``[0, 32)``.  An integer divisor of 0
gives INT_MIN in the CPU plugin and in the ``FloorMod`` reference, and kills the process (SIGFPE) in the ``Mod``
reference; irnorm reports it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from ..ir.attrs import AttrSchema, optional, parse_bool
from ..ir.dtypes import FLOAT_TYPES, INT_TYPES, cast, compute_dtype, is_float_dtype
from .base import (
    AUTO_BROADCAST,
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    broadcast_shape,
    fail,
    register,
    require_same_type,
    runtime_error,
)

_ANY = FLOAT_TYPES + INT_TYPES + ("boolean",)


# ---- semantics in numpy ----------------------------------------------------------------------------


def mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Truncated remainder (sign of the dividend).  Integer division by zero raises ZeroDivisionError."""
    if is_float_dtype(a.dtype):
        cdt = compute_dtype(a.dtype)
        x, y = a.astype(cdt, copy=False), b.astype(cdt, copy=False)
        with np.errstate(all="ignore"):
            return cast(x - np.trunc(x / y) * y, a.dtype)
    if np.any(b == 0):
        raise ZeroDivisionError("integer division by zero")
    with np.errstate(all="ignore"):
        return np.fmod(a, b).astype(a.dtype)


def floor_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Floored remainder (sign of the divisor).  Integer division by zero raises ZeroDivisionError."""
    if is_float_dtype(a.dtype):
        x, y = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(all="ignore"):
            return cast(x - y * np.floor(x / y), a.dtype)
    if np.any(b == 0):
        raise ZeroDivisionError("integer division by zero")
    with np.errstate(all="ignore"):
        return np.remainder(a, b).astype(a.dtype)


def _check_none(layer, shapes: list[tuple[int, ...]]) -> None:
    if any(s != shapes[0] for s in shapes):
        raise runtime_error(layer, "auto_broadcast=none needs equal shapes, got "
                                   + " and ".join(str(list(s)) for s in shapes))


def _check_broadcast(layer, shapes: list[tuple[int, ...]]) -> None:
    """Run-time shapes (dynamic dims) that do not broadcast are a coded error, not numpy's ValueError."""
    if not _broadcasts(tuple(shapes)):
        raise runtime_error(layer, "shapes " + ", ".join(str(list(s)) for s in shapes)
                            + " do not broadcast (numpy rule)")


@functools.lru_cache(maxsize=1024)
def _broadcasts(shapes: tuple[tuple[int, ...], ...]) -> bool:
    # remembered: np.broadcast_shapes costs ~4 us a call, a step's whole budget on a small tensor
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return False
    return True


class _Binary(Op):
    version = 1
    opsets = (1, None)
    schema = AttrSchema([AUTO_BROADCAST])
    inputs = (2, 2)
    types: ClassVar[tuple[str, ...]] = _ANY  # element types the inputs may have
    types_text: ClassVar[str] = ""
    boolean_out: ClassVar[bool] = True
    fn: ClassVar[Callable[[np.ndarray, np.ndarray], np.ndarray]]

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        a, b = ctx.inputs
        if a.dtype not in self.types:
            raise fail("IRN033", f"{self.type} takes {self.types_text} inputs, got {a.dtype}")
        require_same_type(ctx, 0, 1, "input 1")
        shape = broadcast_shape(a.shape, b.shape, ctx.attrs["auto_broadcast"])
        out = TensorInfo(shape, "boolean" if self.boolean_out else a.dtype)
        if a.value is not None and b.value is not None:
            try:
                out.value = self.compute(a.value, b.value)
            except ZeroDivisionError:
                raise fail("IRN032", "integer division by zero in a constant subgraph") from None
        return [out]

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(type(self).fn(a, b))

    def build(self, ctx: NodeContext) -> Kernel:
        none = ctx.attrs["auto_broadcast"] == "none"
        layer = ctx.layer
        checked: set[tuple] = set()  # shape pairs already found to fit
        fn = type(self).fn

        def run(ins):
            a, b = ins
            key = (a.shape, b.shape)
            if key not in checked:
                if none:
                    _check_none(layer, [a.shape, b.shape])
                _check_broadcast(layer, [a.shape, b.shape])
                if len(checked) < 64:
                    checked.add(key)
            try:
                return [np.asarray(fn(a, b))]  # compute() without its errstate: execute() has one per run
            except ZeroDivisionError:
                raise runtime_error(layer, "integer division by zero") from None

        return run


_CMP_DOC = "; any element type (both the same), boolean output; auto_broadcast numpy (default) or none."


def _binary(type_: str, fn, doc: str, types=_ANY, types_text="", boolean_out=True, version=1, first=1):
    cls = type(type_, (_Binary,), {"type": type_, "version": version, "opsets": (first, None),
                                   "fn": staticmethod(fn), "doc": doc, "types": types, "types_text": types_text,
                                   "boolean_out": boolean_out, "__module__": __name__, "__qualname__": type_})
    return register(cls)


Equal = _binary("Equal", np.equal, "a == b" + _CMP_DOC)
NotEqual = _binary("NotEqual", np.not_equal, "a != b (true for NaN)" + _CMP_DOC)
Less = _binary("Less", np.less, "a < b" + _CMP_DOC)
LessEqual = _binary("LessEqual", np.less_equal, "a <= b" + _CMP_DOC)
Greater = _binary("Greater", np.greater, "a > b" + _CMP_DOC)
GreaterEqual = _binary("GreaterEqual", np.greater_equal, "a >= b" + _CMP_DOC)

_BOOL = ("boolean",)
_LOGIC_DOC = "; boolean inputs, auto_broadcast numpy (default) or none."
LogicalAnd = _binary("LogicalAnd", np.logical_and, "a and b" + _LOGIC_DOC, _BOOL, "boolean")
LogicalOr = _binary("LogicalOr", np.logical_or, "a or b" + _LOGIC_DOC, _BOOL, "boolean")
LogicalXor = _binary("LogicalXor", np.logical_xor, "a xor b" + _LOGIC_DOC, _BOOL, "boolean")

_BITS = INT_TYPES + ("boolean",)
_BIT_DOC = "; integer or boolean inputs of one type, auto_broadcast numpy (default) or none."
BitwiseAnd = _binary("BitwiseAnd", np.bitwise_and, "a & b" + _BIT_DOC, _BITS, "integer or boolean", False, 13, 13)
BitwiseOr = _binary("BitwiseOr", np.bitwise_or, "a | b" + _BIT_DOC, _BITS, "integer or boolean", False, 13, 13)
BitwiseXor = _binary("BitwiseXor", np.bitwise_xor, "a ^ b" + _BIT_DOC, _BITS, "integer or boolean", False, 13, 13)



def _shift_range(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    bits = np.iinfo(a.dtype).bits
    inside = (b >= 0) & (b < bits)
    return inside, np.where(inside, b, 0).astype(a.dtype), bits


def shift_left(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a << b in a's type (wrapping); 0 where b is outside [0, bits)."""
    a, b = np.asarray(a), np.asarray(b)
    inside, count, _ = _shift_range(a, b)
    return np.asarray(np.where(inside, np.left_shift(a, count), 0).astype(a.dtype))


def shift_right(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a >> b (arithmetic for signed types); the sign fill (-1 or 0) where b is outside [0, bits)."""
    a, b = np.asarray(a), np.asarray(b)
    inside, count, _ = _shift_range(a, b)
    fill = np.where(a < 0, -1, 0).astype(a.dtype) if a.dtype.kind == "i" else np.zeros((), a.dtype)
    return np.asarray(np.where(inside, np.right_shift(a, count), fill).astype(a.dtype))


_SHIFT_DOC = ("; integer inputs of one type (not boolean), a shift amount outside [0, bits) gives {}; auto_broadcast "
              "numpy (default) or none.")
BitwiseLeftShift = _binary("BitwiseLeftShift", shift_left, "a << b (wraps)" + _SHIFT_DOC.format("0"), INT_TYPES,
                           "integer", False, 15, 15)
BitwiseRightShift = _binary("BitwiseRightShift", shift_right, "a >> b (arithmetic for signed types)"
                            + _SHIFT_DOC.format("the sign fill (-1 or 0)"), INT_TYPES, "integer", False, 15, 15)

_NUM = FLOAT_TYPES + INT_TYPES
Mod = _binary("Mod", mod, "truncated remainder (sign of the dividend): x - trunc(x / y) y; float or integer, "
              "integer division by zero is an error; auto_broadcast numpy (default) or none.",
              _NUM, "numeric (not boolean)", False)
FloorMod = _binary("FloorMod", floor_mod, "floored remainder (sign of the divisor): x - floor(x / y) y (floats in "
                   "float64); integer division by zero is an error; auto_broadcast numpy (default) or none.",
                   _NUM, "numeric (not boolean)", False)


class _Unary(Op):
    version = 1
    opsets = (1, None)
    inputs = (1, 1)
    types: ClassVar[tuple[str, ...]]
    types_text: ClassVar[str]

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype not in self.types:
            raise fail("IRN033", f"{self.type} takes {self.types_text} input, got {x.dtype}")
        out = TensorInfo(x.shape, self.out_type(x.dtype))
        if x.value is not None:
            out.value = np.asarray(self.compute(ctx, x.value))
        return [out]

    def out_type(self, dtype: str) -> str:
        return dtype

    def compute(self, ctx: NodeContext, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def build(self, ctx: NodeContext) -> Kernel:
        return lambda ins: [np.asarray(self.compute(ctx, ins[0]))]  # ufuncs give numpy scalars for 0-d input


@register
class LogicalNot(_Unary):
    type = "LogicalNot"
    types = _BOOL
    types_text = "a boolean"
    doc = "not x; boolean."

    def compute(self, ctx: NodeContext, x: np.ndarray) -> np.ndarray:
        return np.logical_not(x)


@register
class BitwiseNot(_Unary):
    type = "BitwiseNot"
    version = 13
    opsets = (13, None)
    types = _BITS
    types_text = "an integer or boolean"
    doc = "~x; integer or boolean (logical not)."

    def compute(self, ctx: NodeContext, x: np.ndarray) -> np.ndarray:
        return np.invert(x)


class _FloatClass(_Unary):
    version = 10
    opsets = (10, None)
    types = FLOAT_TYPES
    types_text = "a floating-point"

    def out_type(self, dtype: str) -> str:
        return "boolean"


@register
class IsNaN(_FloatClass):
    type = "IsNaN"
    doc = "x is NaN; floating-point in, boolean out."

    def compute(self, ctx: NodeContext, x: np.ndarray) -> np.ndarray:
        return np.isnan(x)


@register
class IsFinite(_FloatClass):
    type = "IsFinite"
    doc = "x is neither inf nor NaN; floating-point in, boolean out."

    def compute(self, ctx: NodeContext, x: np.ndarray) -> np.ndarray:
        return np.isfinite(x)


@register
class IsInf(_FloatClass):
    type = "IsInf"
    schema = AttrSchema([optional("detect_negative", parse_bool, True, doc="-inf counts"),
                         optional("detect_positive", parse_bool, True, doc="+inf counts")])
    doc = "x is +inf (detect_positive) or -inf (detect_negative); floating-point in, boolean out."

    def compute(self, ctx: NodeContext, x: np.ndarray) -> np.ndarray:
        neg, pos = ctx.attrs["detect_negative"], ctx.attrs["detect_positive"]
        inf = np.isinf(x)
        if neg and pos:
            return inf
        if neg:
            return inf & (x < 0)
        if pos:
            return inf & (x > 0)
        return np.zeros(x.shape, np.bool_)


@register
class Select(Op):
    type = "Select"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([AUTO_BROADCAST])
    inputs = (3, 3)
    doc = ("cond ? then : else; cond boolean, then/else of one element type; auto_broadcast numpy (the three "
           "shapes broadcast together, default) or none (equal shapes).")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        c, t, e = ctx.inputs
        if c.dtype != "boolean":
            raise fail("IRN033", f"cond (input 0) must be boolean, got {c.dtype}")
        require_same_type(ctx, 1, 2, "else (input 2)")
        mode = ctx.attrs["auto_broadcast"]
        te = broadcast_shape(t.shape, e.shape, mode, ("then (input 1)", "else (input 2)"))
        shape = broadcast_shape(c.shape, te, mode, ("cond (input 0)", "then/else"))
        out = TensorInfo(shape, t.dtype)
        if c.value is not None and t.value is not None and e.value is not None:
            out.value = np.where(c.value, t.value, e.value).astype(t.value.dtype)
        return [out]

    def build(self, ctx: NodeContext) -> Kernel:
        none = ctx.attrs["auto_broadcast"] == "none"
        layer = ctx.layer

        def run(ins):
            c, t, e = ins
            if none:
                _check_none(layer, [c.shape, t.shape, e.shape])
            _check_broadcast(layer, [c.shape, t.shape, e.shape])
            return [np.where(c, t, e).astype(t.dtype, copy=False)]

        return run
