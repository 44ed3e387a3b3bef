"""Activations and float math: Relu-1, Gelu-2, Gelu-7, Swish-4, HSwish-4, HSigmoid-5, Mish-4, SoftPlus-4,
Elu-1, Selu-1, HardSigmoid-1, SoftSign-9, PRelu-1, Sin/Cos/Tan/Asin/Acos/Atan/Sinh/Cosh-1,
Asinh/Acosh/Atanh-3, Floor-1, Ceiling-1, Sign-1, Round-5.

Semantics are OpenVINO's reference formulas (checked against its constant folding and CPU plugin,
2026.4), computed in float64 for f64 data and in float32 for f32, f16 and bf16 (one rounding back per
op), by the Numba kernels of ``irnorm.kernels.activation`` (one parallel pass; f16/bf16 decoded and
re-encoded inside it; Gelu-tanh and Mish use one-exp forms of the same formulas, see there):

* ``Relu``: ``x < 0 ? 0 : x`` (NaN stays NaN; OpenVINO's CPU plugin returns 0 for NaN).
* ``Gelu``: ``0.5 x (1 + erf(x / sqrt 2))``, or with ``approximation_mode="tanh"`` (Gelu-7)
  ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``.  Gelu(+inf) = +inf (the CPU plugin gives NaN).
* ``Swish``: ``x * sigmoid(beta x)``; ``beta`` is an optional scalar input of the data's type (default 1).
* ``HSwish``: ``x min(max(x + 3, 0), 6) / 6``; ``HSigmoid``: ``min(max(x + 3, 0), 6) / 6`` (NaN stays NaN;
  the CPU plugin gives 0 for HSigmoid(NaN)).
* ``Mish``: ``x tanh(log(1 + exp(x)))``; ``SoftPlus``: ``log(1 + exp(x))`` for ``x < log(max of the
  compute type)``, else ``x`` (OpenVINO's threshold, so large x never overflows).
* ``Elu``: ``x > 0 ? x : alpha (exp(x) - 1)``; ``Selu``: ``lambda`` times Elu with ``alpha`` (both one-element
  inputs); ``HardSigmoid``: ``max(0, min(1, alpha x + beta))`` (scalar inputs; NaN gives 1, as
  ``std::min``/``std::max`` order it in OpenVINO); ``SoftSign``: ``x / (1 + |x|)``.
* ``PRelu``: ``x < 0 ? slope x : x``.  A 1-D slope whose length equals the data's axis 1 (axis 0 for 1-D
  data) applies per channel; any other slope broadcasts to the data with numpy's rule (the output keeps
  the data's shape).
* ``Floor``, ``Ceiling``, ``Round`` (``half_to_even`` or ``half_away_from_zero``) and ``Sign`` (NaN stays NaN)
  also take integer data (returned unchanged, ``Sign`` gives -1/0/1); ``Relu`` and ``PRelu`` take integers
  too.  The trigonometric, hyperbolic and other activations take floating-point data only (IRN033):
  OpenVINO accepts integers for some of them but its CPU plugin and reference disagree on the result.

OpenVINO's CPU plugin (2026.4, f32 precision) departs from its reference here; irnorm follows the
reference: ``Relu(NaN)`` and ``HSigmoid(NaN)`` give 0, erf ``Gelu(+inf)`` gives NaN, ``HardSigmoid`` uses
beta = 0.5 whatever its beta input holds, and f64 models run in f32 with +-inf saturated to +-FLT_MAX.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from ..ir.attrs import AttrSchema, enum, optional, parse_float
from ..ir.dtypes import FLOAT_TYPES, INT_TYPES, cast, compute_dtype, is_float_dtype
from .base import (
    Kernel,
    NodeContext,
    Op,
    TensorInfo,
    fail,
    fmt_shape,
    prod,
    register,
    require_same_type,
    runtime_error,
)

_NUMERIC = FLOAT_TYPES + INT_TYPES


def _check_data(op: Op, ctx: NodeContext, ints: bool) -> TensorInfo:
    x = ctx.inputs[0]
    allowed = _NUMERIC if ints else FLOAT_TYPES
    if x.dtype not in allowed:
        what = "a numeric (float or integer)" if ints else "a floating-point"
        raise fail("IRN033", f"{op.type} needs {what} input, got {x.dtype}")
    return x


def _scalar_input(ctx: NodeContext, i: int, what: str, rank0: bool) -> None:
    """Input i is a parameter of the data's type: a scalar (rank0) or any tensor of one element."""
    require_same_type(ctx, 0, i, what)
    shape = ctx.inputs[i].shape
    if shape is None:
        return
    if rank0 and len(shape) != 0:
        raise fail("IRN032", f"{what} must be a scalar (rank 0), got {fmt_shape(shape)}")
    if -1 not in shape and prod(shape) != 1:
        raise fail("IRN032", f"{what} must have exactly one element, got {fmt_shape(shape)}")


def _value(a: np.ndarray, layer, what: str) -> float:
    if a.size != 1:
        raise runtime_error(layer, f"{what} must have exactly one element, got shape {list(a.shape)}")
    return float(np.asarray(a, dtype=np.float64).reshape(-1)[0])


class _Activation(Op):
    version = 1
    opsets = (1, None)
    inputs = (1, 1)
    kernel: ClassVar[str]  # name in irnorm.kernels.activation.CODES
    ints: ClassVar[bool] = False  # integer data allowed (see int_apply)

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = _check_data(self, ctx, self.ints)
        self.check_params(ctx)
        return [TensorInfo(x.shape, x.dtype)]

    def check_params(self, ctx: NodeContext) -> None:
        pass

    def kernel_name(self, ctx: NodeContext) -> str:
        return self.kernel

    def params(self, ctx: NodeContext, ins) -> tuple[float, float]:
        return 0.0, 0.0

    @staticmethod
    def int_apply(x: np.ndarray) -> np.ndarray:
        return x.copy()

    def fused_form(self, ctx: NodeContext, dtype: np.dtype, params: list[np.ndarray]) -> tuple[int, float, float]:
        """(kernel code, p0, p1) for running this activation inside another layer's kernel on float data
        of `dtype`; `params`: the values of the inputs after the data (constants).  See runtime/fuse.py."""
        from ..kernels import activation as kern

        p0, p1 = self.params(ctx, [np.empty(0, dtype), *params])
        return kern.CODES[self.kernel_name(ctx)], p0, p1

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import activation as kern  # lazy: validate never imports numba

        code = kern.CODES[self.kernel_name(ctx)]

        def run(ins):
            x = ins[0]
            if is_float_dtype(x.dtype):
                p0, p1 = self.params(ctx, ins)
                return [kern.unary(code, x, p0, p1)]
            return [np.asarray(self.int_apply(x))]  # ufuncs give numpy scalars for 0-d input

        return run


def _doc_float(text: str) -> str:
    return text + "; floating-point (f16/bf16 computed in f32)."


@register
class Relu(_Activation):
    type = "Relu"
    kernel = "relu"
    ints = True
    doc = "x < 0 ? 0 : x (NaN stays NaN); float or integer."

    @staticmethod
    def int_apply(x: np.ndarray) -> np.ndarray:
        return np.maximum(x, 0).astype(x.dtype)


@register
class Gelu2(_Activation):
    type = "Gelu"
    version = 2
    opsets = (2, 6)
    kernel = "gelu_erf"
    doc = _doc_float("0.5 x (1 + erf(x / sqrt 2))")


@register
class Gelu7(_Activation):
    type = "Gelu"
    version = 7
    opsets = (7, None)
    schema = AttrSchema([optional("approximation_mode", enum("ERF", "TANH"), "ERF",
                                  doc="ERF (default, exact) or TANH (the tanh approximation)")])
    doc = _doc_float("Gelu, approximation_mode ERF (default) or TANH")

    def kernel_name(self, ctx: NodeContext) -> str:
        return "gelu_tanh" if ctx.attrs["approximation_mode"] == "TANH" else "gelu_erf"


@register
class Swish(_Activation):
    type = "Swish"
    version = 4
    opsets = (4, None)
    inputs = (1, 2)
    kernel = "swish"
    doc = _doc_float("x * sigmoid(beta x); optional scalar input beta of the data's type (default 1)")

    def check_params(self, ctx: NodeContext) -> None:
        if len(ctx.inputs) > 1:
            _scalar_input(ctx, 1, "beta (input 1)", rank0=True)

    def params(self, ctx: NodeContext, ins) -> tuple[float, float]:
        return (_value(ins[1], ctx.layer, "beta") if len(ins) > 1 else 1.0), 0.0


@register
class HSwish(_Activation):
    type = "HSwish"
    version = 4
    opsets = (4, None)
    kernel = "hswish"
    doc = _doc_float("x min(max(x + 3, 0), 6) / 6")


@register
class HSigmoid(_Activation):
    type = "HSigmoid"
    version = 5
    opsets = (5, None)
    kernel = "hsigmoid"
    doc = _doc_float("min(max(x + 3, 0), 6) / 6, NaN stays NaN")


@register
class Mish(_Activation):
    type = "Mish"
    version = 4
    opsets = (4, None)
    kernel = "mish"
    doc = _doc_float("x tanh(log(1 + exp(x)))")


@register
class SoftPlus(_Activation):
    type = "SoftPlus"
    version = 4
    opsets = (4, None)
    kernel = "softplus"
    doc = _doc_float("log(1 + exp(x)), and x itself from log(max of the compute type) up (OpenVINO's threshold)")

    def params(self, ctx: NodeContext, ins) -> tuple[float, float]:
        return softplus_threshold(ins[0].dtype), 0.0


def softplus_threshold(dtype: np.dtype) -> float:
    """OpenVINO's SoftPlus threshold log(max) of the type the value is computed in."""
    return math.log(float(np.finfo(compute_dtype(dtype)).max))


@register
class Elu(_Activation):
    type = "Elu"
    kernel = "elu"
    schema = AttrSchema([optional("alpha", parse_float, 1.0, doc="scale of the negative part")])
    doc = _doc_float("x > 0 ? x : alpha (exp(x) - 1)")

    def params(self, ctx: NodeContext, ins) -> tuple[float, float]:
        return float(ctx.attrs["alpha"]), 0.0


@register
class Selu(_Activation):
    type = "Selu"
    inputs = (3, 3)
    kernel = "selu"
    doc = _doc_float("lambda (x > 0 ? x : alpha (exp(x) - 1)); alpha and lambda are one-element inputs")

    def check_params(self, ctx: NodeContext) -> None:
        _scalar_input(ctx, 1, "alpha (input 1)", rank0=False)
        _scalar_input(ctx, 2, "lambda (input 2)", rank0=False)

    def params(self, ctx: NodeContext, ins) -> tuple[float, float]:
        return _value(ins[1], ctx.layer, "alpha"), _value(ins[2], ctx.layer, "lambda")


@register
class HardSigmoid(_Activation):
    type = "HardSigmoid"
    inputs = (3, 3)
    kernel = "hard_sigmoid"
    doc = _doc_float("max(0, min(1, alpha x + beta)), alpha and beta scalar inputs; NaN gives 1 as in OpenVINO")

    def check_params(self, ctx: NodeContext) -> None:
        _scalar_input(ctx, 1, "alpha (input 1)", rank0=True)
        _scalar_input(ctx, 2, "beta (input 2)", rank0=True)

    def params(self, ctx: NodeContext, ins) -> tuple[float, float]:
        return _value(ins[1], ctx.layer, "alpha"), _value(ins[2], ctx.layer, "beta")


@register
class SoftSign(_Activation):
    type = "SoftSign"
    version = 9
    opsets = (9, None)
    kernel = "softsign"
    doc = _doc_float("x / (1 + |x|)")


def _math(name: str, type_: str, version: int, first: int, text: str) -> type[_Activation]:
    cls = type(type_, (_Activation,), {"type": type_, "version": version, "opsets": (first, None), "kernel": name,
                                       "doc": _doc_float(text), "__module__": __name__, "__qualname__": type_})
    return register(cls)


Sin = _math("sin", "Sin", 1, 1, "sin(x)")
Cos = _math("cos", "Cos", 1, 1, "cos(x)")
Tan = _math("tan", "Tan", 1, 1, "tan(x)")
Asin = _math("asin", "Asin", 1, 1, "arcsin(x), NaN outside [-1, 1]")
Acos = _math("acos", "Acos", 1, 1, "arccos(x), NaN outside [-1, 1]")
Atan = _math("atan", "Atan", 1, 1, "arctan(x)")
Sinh = _math("sinh", "Sinh", 1, 1, "sinh(x)")
Cosh = _math("cosh", "Cosh", 1, 1, "cosh(x)")
Asinh = _math("asinh", "Asinh", 3, 4, "arsinh(x)")
Acosh = _math("acosh", "Acosh", 3, 4, "arcosh(x), NaN below 1")
Atanh = _math("atanh", "Atanh", 3, 4, "artanh(x), +-inf at +-1, NaN outside [-1, 1]")


@register
class Floor(_Activation):
    type = "Floor"
    kernel = "floor"
    ints = True
    doc = "floor(x); integer data passes through unchanged."


@register
class Ceiling(_Activation):
    type = "Ceiling"
    kernel = "ceiling"
    ints = True
    doc = "ceil(x); integer data passes through unchanged."


@register
class Round(_Activation):
    type = "Round"
    version = 5
    opsets = (5, None)
    ints = True
    schema = AttrSchema([optional("mode", enum("half_to_even", "half_away_from_zero"), "half_to_even",
                                  doc="how halves round")])
    doc = "round to integral value, mode half_to_even (default) or half_away_from_zero; integers pass through."

    def kernel_name(self, ctx: NodeContext) -> str:
        return "round_even" if ctx.attrs["mode"] == "half_to_even" else "round_away"


@register
class Sign(_Activation):
    type = "Sign"
    kernel = "sign"
    ints = True
    doc = "-1, 0 or 1 by the sign of x (NaN stays NaN, -0 gives 0); float or integer."

    @staticmethod
    def int_apply(x: np.ndarray) -> np.ndarray:
        return np.sign(x).astype(x.dtype)


# ---- PRelu ----------------------------------------------------------------------------------------


def prelu_slope_shape(data: tuple[int, ...], slope: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape the slope is broadcast with: [1, C, 1, ...] for the per-channel case (1-D slope of the
    data's channel size; axis 0 for 1-D data), else None (numpy broadcasting of the slope as it is)."""
    if len(slope) != 1 or not data:
        return None
    ch = 1 if len(data) > 1 else 0
    if data[ch] == slope[0] and slope[0] != -1:
        s = [1] * len(data)
        s[ch] = slope[0]
        return tuple(s)
    return None


@register
class PRelu(Op):
    type = "PRelu"
    version = 1
    opsets = (1, None)
    inputs = (2, 2)
    doc = ("x < 0 ? slope x : x; a 1-D slope of the data's channel size (axis 1, axis 0 for 1-D data) applies "
           "per channel, any other slope broadcasts to the data (numpy rule); float or integer.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = _check_data(self, ctx, ints=True)
        require_same_type(ctx, 0, 1, "slope (input 1)")
        s = ctx.inputs[1]
        single = s.shape is not None and all(d == 1 for d in s.shape)  # one value: applies to any data
        if x.shape is not None and s.shape is not None and not single:
            eff = prelu_slope_shape(x.shape, s.shape) or s.shape
            if len(eff) > len(x.shape):
                raise fail("IRN032", f"slope {fmt_shape(s.shape)} has a higher rank than the data "
                                     f"{fmt_shape(x.shape)}")
            pad = (1,) * (len(x.shape) - len(eff)) + tuple(eff)
            for k, (d, e) in enumerate(zip(x.shape, pad, strict=True)):
                if e not in (1, -1) and d != -1 and d != e:
                    raise fail("IRN032", f"slope {fmt_shape(s.shape)} does not broadcast to the data "
                                         f"{fmt_shape(x.shape)}: dim {k} is {e} in the slope and {d} in the data")
        return [TensorInfo(x.shape, x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import activation as kern  # lazy

        layer = ctx.layer

        def run(ins):
            x, s = ins
            if s.size == 1:
                if is_float_dtype(x.dtype):
                    return [kern.unary(kern.CODES["prelu_scalar"], x, float(s.reshape(-1)[0]))]
                return [prelu_numpy(x, s.reshape(()))]
            eff = prelu_slope_shape(x.shape, s.shape)
            if eff is not None and is_float_dtype(x.dtype):
                return [kern.prelu_channel(x, s)]
            shape = eff or s.shape
            try:
                ok = np.broadcast_shapes(x.shape, shape) == x.shape
            except ValueError:
                ok = False
            if not ok:
                raise runtime_error(layer, f"slope of shape {list(s.shape)} does not broadcast to the data "
                                           f"{list(x.shape)}")
            return [prelu_numpy(x, s.reshape(shape))]

        return run


def prelu_numpy(x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """PRelu with numpy broadcasting (slope already in its broadcast shape), computed in the compute type."""
    if is_float_dtype(x.dtype):
        cdt = compute_dtype(x.dtype)
        xc, sc = x.astype(cdt, copy=False), slope.astype(cdt, copy=False)
        with np.errstate(all="ignore"):
            return cast(np.where(xc < 0, xc * sc, xc), x.dtype)
    with np.errstate(all="ignore"):
        return np.asarray(np.where(x < 0, x * slope, x).astype(x.dtype))
