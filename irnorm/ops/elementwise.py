"""Elementwise ops: Add, Subtract, Multiply, Divide, Maximum, Minimum, Power, SquaredDifference
(opset1+, `auto_broadcast` numpy or none) and the unary Sqrt, Abs, Negative, Exp, Log, Erf,
Sigmoid, Tanh (opset1+).

Semantics, checked against OpenVINO 2026.4:

* Both inputs of a binary op have the same element type (IRN033 otherwise); boolean is refused.
* ``auto_broadcast="numpy"`` (the default) is numpy's rule; ``"none"`` (alias ``"explicit"``) needs
  equal shapes.  ``pdpd`` is not supported.
* f16 and bf16 are computed in float32 and rounded back after every op (the op's reference
  semantics).  OpenVINO's CPU plugin at f32 precision keeps a chain of f16 ops in float32 and rounds
  once at the end, so a chain differs from it by about one f16 ulp per op.
* Integer Divide: ``m_pythondiv="true"`` (the default) is floor division, ``"false"`` truncates
  toward zero, as OpenVINO's reference (used for constant folding) does; its CPU plugin truncates in
  both cases.  Integer division by zero is an error (the reference throws; the CPU returns INT_MIN).
  Integer Power is computed in float64 and truncated toward zero, as the reference does.
* Maximum and Minimum propagate NaN.

Shape-subgraph arithmetic (i32/i64) runs in numpy; float binary ops run in the Numba kernels of
``irnorm.kernels.elementwise`` (see there for which broadcast patterns are fast).  When every input
is a constant, ``infer`` computes the value with numpy, so constant subgraphs fold at load time
without importing numba, and shape values keep flowing when a dynamic model is re-inferred.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ..ir.attrs import Attr, AttrSchema, optional, parse_bool, parse_float
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, cast, compute_dtype, is_float_dtype
from ..kernels.opcodes import ABS, ADD, DIV, ERF, EXP, LOG, MAX, MIN, MUL, NEG, POW, SIGMOID, SQDIFF, SQRT, SUB, TANH
from .base import (
    AUTO_BROADCAST,
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    broadcast_shape,
    fail,
    partial_of,
    register,
    require_same_type,
    runtime_error,
    with_partial,
)

# ---- shape rules ------------------------------------------------------------------------


# ---- numpy semantics (constant folding, integers, and the kernels' fallback) ------------


def _sqdiff(x, y):
    d = x - y
    return d * d


_FLOAT_BINARY = {ADD: np.add, SUB: np.subtract, MUL: np.multiply, DIV: np.divide, MAX: np.maximum,
                 MIN: np.minimum, POW: np.power, SQDIFF: _sqdiff}


def int_divide(a: np.ndarray, b: np.ndarray, pythondiv: bool) -> np.ndarray:
    """Integer division: floor (Python) or truncation toward zero (C). Division by zero raises."""
    if np.any(b == 0):
        raise ZeroDivisionError("integer division by zero")
    q = np.floor_divide(a, b)
    if not pythondiv:
        fix = (np.remainder(a, b) != 0) & ((a < 0) != (b < 0))
        q = q + fix.astype(q.dtype)
    return q


def compute_binary(code: int, a: np.ndarray, b: np.ndarray, pythondiv: bool = True) -> np.ndarray:
    """The op's semantics in plain numpy (same element type in, same type out, numpy broadcasting).
    Integer division by zero raises ZeroDivisionError."""
    dt = a.dtype
    if is_float_dtype(dt):
        cdt = compute_dtype(dt)
        x, y = a.astype(cdt, copy=False), b.astype(cdt, copy=False)
        with np.errstate(all="ignore"):
            r = _FLOAT_BINARY[code](x, y)
        return cast(r, dt)
    if dt == np.bool_:
        raise TypeError("boolean arithmetic is not supported")
    with np.errstate(all="ignore"):
        if code == DIV:
            r = int_divide(a, b, pythondiv)
        elif code == POW:
            r = np.trunc(np.power(a.astype(np.float64), b.astype(np.float64)))
        elif code == SQDIFF:
            d = np.subtract(a, b)
            r = d * d
        else:
            r = {ADD: np.add, SUB: np.subtract, MUL: np.multiply, MAX: np.maximum, MIN: np.minimum}[code](a, b)
        return cast(r, dt)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


_erf_vec = np.vectorize(math.erf, otypes=[np.float64])
_FLOAT_UNARY = {SQRT: np.sqrt, ABS: np.abs, NEG: np.negative, EXP: np.exp, LOG: np.log, ERF: _erf_vec,
                SIGMOID: _sigmoid, TANH: np.tanh}


def compute_unary(code: int, x: np.ndarray) -> np.ndarray:
    dt = x.dtype
    if is_float_dtype(dt):
        cdt = compute_dtype(dt)
        with np.errstate(all="ignore"):
            r = _FLOAT_UNARY[code](x.astype(cdt, copy=False))
        return cast(np.asarray(r).astype(cdt), dt)
    with np.errstate(all="ignore"):
        r = np.abs(x) if code == ABS else np.negative(x)
    return cast(r, dt)


# ---- ops ---------------------------------------------------------------------------------


class _Binary(Op):
    version = 1
    opsets = (1, None)
    schema = AttrSchema([AUTO_BROADCAST])
    inputs = (2, 2)
    code: ClassVar[int]

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        a, b = ctx.inputs
        require_same_type(ctx, 0, 1, "input 1")
        if a.dtype == "boolean":
            raise fail("IRN033", f"{self.type} does not take boolean inputs")
        shape = broadcast_shape(a.shape, b.shape, ctx.attrs["auto_broadcast"])
        out = TensorInfo(shape, a.dtype)
        if a.value is not None and b.value is not None:
            try:
                out.value = compute_binary(self.code, a.value, b.value, self._pythondiv(ctx))
            except ZeroDivisionError:
                raise fail("IRN032", "integer division by zero in a constant subgraph") from None
        elif a.dtype in INT_TYPES and shape is not None and len(shape) <= 1 and -1 not in shape:
            return [self._partial(ctx, shape)]
        return [out]

    def _partial(self, ctx: NodeContext, shape: tuple[int, ...]) -> TensorInfo:
        """Shape arithmetic on partly known shape values (see base.PartialInfo)."""
        a, b = ctx.inputs
        n = shape[0] if shape else 1
        elems = []
        for p in (partial_of(a), partial_of(b)):
            elems.append([None] * n if p is None else p * n if len(p) == 1 else p)
        dt = ELEMENT_TYPES[a.dtype]
        out: list[int | None] = []
        for x, y in zip(*elems, strict=True):
            try:
                v = None if x is None or y is None else int(compute_binary(
                    self.code, np.array(x, dt), np.array(y, dt), self._pythondiv(ctx)))
            except ZeroDivisionError:
                v = None
            out.append(v)
        return with_partial(shape, a.dtype, out)

    def _pythondiv(self, ctx: NodeContext) -> bool:
        return True

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import elementwise as kern  # lazy: validate never imports numba

        code = self.code
        pythondiv = self._pythondiv(ctx)
        none = ctx.attrs["auto_broadcast"] == "none"
        layer = ctx.layer

        from ..kernels.pool import OUTPUTS

        # (a's shape, b's shape, dtype) -> numpy's ufunc when the kernel module picks it for such small
        # operands (False: it does not), decided once per shape: the checks cost more than the addition
        small: dict[tuple, object] = {}

        def run(ins):
            a, b = ins
            key = (a.shape, b.shape, a.dtype)
            ufunc = small.get(key)
            if ufunc is None:  # shapes not seen yet: checked once here (the shape rules may not have known them:
                ufunc = False  # a ReadValue's or a NonZero's dims)
                if not none:
                    try:
                        np.broadcast_shapes(a.shape, b.shape)
                    except ValueError:
                        raise runtime_error(layer, f"shapes {list(a.shape)} and {list(b.shape)} do not broadcast "
                                                   "(numpy rule)") from None
                if (not none or a.shape == b.shape) and (a.ndim or b.ndim):  # two 0-d: numpy gives a scalar
                    ufunc = kern.small_ufunc(code, a.shape, b.shape, a.dtype) or False
                if len(small) < 64:
                    small[key] = ufunc
            if ufunc is not False and not OUTPUTS.providing():
                return [ufunc(a, b)]  # a fresh array (not a 0-d scalar: one operand has a dim)
            if none and a.shape != b.shape:
                raise runtime_error(layer, f"auto_broadcast=none needs equal shapes, got {list(a.shape)} and "
                                           f"{list(b.shape)}")
            if is_float_dtype(a.dtype):
                y = kern.binary(code, a, b)
                if y is not None:
                    return [y]
            try:
                return [compute_binary(code, a, b, pythondiv)]
            except ZeroDivisionError:
                raise runtime_error(layer, "integer division by zero") from None

        a_info, b_info = ctx.inputs
        if (a_info.shape is not None and b_info.shape is not None
                and all(d >= 0 for d in (*a_info.shape, *b_info.shape)) and a_info.dtype in FLOAT_TYPES
                and (not none or a_info.shape == b_info.shape)):
            # static shapes for which run() takes numpy's ufunc: the plan's straight-line runner calls the
            # ufunc itself on every operand (runtime/plan.py), without run()'s list, key and checks (~1 us
            # of a 2.5 us step); its result is run()'s (the runner has no caller's out= array to fill)
            dtype = ELEMENT_TYPES[a_info.dtype]
            ufunc = kern.small_ufunc(code, tuple(a_info.shape), tuple(b_info.shape), dtype)
            if ufunc is not None and (a_info.shape or b_info.shape):
                run.static_all = ufunc  # type: ignore[attr-defined]
            elif ufunc is not None:  # two 0-d operands: numpy's result would be a scalar, a step's is an array
                run.static_all = lambda a, b: ufunc(a, b, out=np.empty((), dtype))  # type: ignore[attr-defined]
        return run


_ARITH_DOC = "same element type; auto_broadcast numpy (default) or none. "


@register
class Add(_Binary):
    type = "Add"
    code = ADD
    doc = "a + b; " + _ARITH_DOC + "f16/bf16 computed in f32 and rounded back; integers wrap."


@register
class Subtract(_Binary):
    type = "Subtract"
    code = SUB
    doc = "a - b; " + _ARITH_DOC + "f16/bf16 computed in f32 and rounded back; integers wrap."


@register
class Multiply(_Binary):
    type = "Multiply"
    code = MUL
    doc = "a * b; " + _ARITH_DOC + "f16/bf16 computed in f32 and rounded back; integers wrap."


@register
class Divide(_Binary):
    type = "Divide"
    code = DIV
    schema = AttrSchema([AUTO_BROADCAST, optional("m_pythondiv", parse_bool, True,
                                          doc="integer division: floor (true, default) or truncation (false)")])
    doc = ("a / b; " + _ARITH_DOC + "integers: floor division when m_pythondiv=true (default; OpenVINO's CPU "
           "truncates), truncation when false; integer division by zero is an error.")

    def _pythondiv(self, ctx: NodeContext) -> bool:
        return bool(ctx.attrs["m_pythondiv"])


@register
class Maximum(_Binary):
    type = "Maximum"
    code = MAX
    doc = "max(a, b), NaN propagates; " + _ARITH_DOC


@register
class Minimum(_Binary):
    type = "Minimum"
    code = MIN
    doc = "min(a, b), NaN propagates; " + _ARITH_DOC


@register
class Power(_Binary):
    type = "Power"
    code = POW
    doc = "a ** b; " + _ARITH_DOC + "integers: computed in float64 and truncated toward zero."


@register
class SquaredDifference(_Binary):
    type = "SquaredDifference"
    code = SQDIFF
    doc = "(a - b) ** 2; " + _ARITH_DOC


class _Unary(Op):
    version = 1
    opsets = (1, None)
    inputs = (1, 1)
    code: ClassVar[int]
    ints: ClassVar[bool] = False  # integer inputs allowed

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype not in FLOAT_TYPES and not (self.ints and x.dtype != "boolean"):
            what = "a floating-point" if not self.ints else "a numeric (not boolean)"
            raise fail("IRN033", f"{self.type} needs {what} input, got {x.dtype}")
        out = TensorInfo(x.shape, x.dtype)
        if x.value is not None:
            out.value = compute_unary(self.code, x.value)
        return [out]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import elementwise as kern  # lazy

        code = self.code

        def run(ins):
            x = ins[0]
            if is_float_dtype(x.dtype):
                return [kern.unary(code, x)]
            return [compute_unary(code, x)]

        return run


@register
class Sqrt(_Unary):
    type = "Sqrt"
    code = SQRT
    doc = "sqrt(x), floating-point; negative x gives NaN."


@register
class Abs(_Unary):
    type = "Abs"
    code = ABS
    ints = True
    doc = "|x|; float or integer."


@register
class Negative(_Unary):
    type = "Negative"
    code = NEG
    ints = True
    doc = "-x; float or integer (integers wrap)."


@register
class Exp(_Unary):
    type = "Exp"
    code = EXP
    doc = "exp(x), floating-point."


@register
class Log(_Unary):
    type = "Log"
    code = LOG
    doc = "natural log, floating-point; log(0) = -inf, negative x gives NaN."


@register
class Erf(_Unary):
    type = "Erf"
    code = ERF
    doc = "the Gauss error function, floating-point."


@register
class Sigmoid(_Unary):
    type = "Sigmoid"
    code = SIGMOID
    doc = "1 / (1 + exp(-x)), floating-point."


@register
class Tanh(_Unary):
    type = "Tanh"
    code = TANH
    doc = "tanh(x), floating-point."


@register
class Clamp(Op):
    type = "Clamp"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([Attr("min", parse_float), Attr("max", parse_float)])
    doc = ("min(max(x, min), max); `min <= max`. Integer data clamps to ceil(min)..floor(max). NaN stays NaN "
           "(OpenVINO's reference; its CPU plugin returns `min` for NaN).")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        lo, hi = ctx.attrs["min"], ctx.attrs["max"]
        if lo > hi:
            raise fail("IRN023", f"min={lo} is greater than max={hi}")
        if x.dtype == "boolean":
            raise fail("IRN033", "Clamp needs a numeric input, got boolean")
        out = TensorInfo(x.shape, x.dtype)
        if x.value is not None:
            out.value = clamp(x.value, lo, hi)
        return [out]

    def build(self, ctx: NodeContext) -> Kernel:
        lo, hi = ctx.attrs["min"], ctx.attrs["max"]
        return lambda ins: [clamp(ins[0], lo, hi)]


def clamp(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    if is_float_dtype(x.dtype):
        cdt = compute_dtype(x.dtype)
        return cast(np.clip(x.astype(cdt, copy=False), cdt.type(lo), cdt.type(hi)), x.dtype)
    info = np.iinfo(x.dtype)
    ilo, ihi = max(math.ceil(lo), info.min), min(math.floor(hi), info.max)
    return np.clip(x, ilo, ihi).astype(x.dtype)
