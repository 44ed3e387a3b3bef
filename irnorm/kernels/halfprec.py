"""Element conversions inside Numba kernels, the one place for them: float16 and bfloat16 data travel
as their bits (uint16 for f16, int16 for bf16) and are widened to float32 on load and rounded back on
store, so no widened copy of an array is ever made.

* f16: LLVM ``half`` conversions -- F16C ``vcvtph2ps`` / ``vcvtps2ph`` when vectorized (every x86-64
  with AVX2 has F16C), exact on the way in, round to nearest even on the way out (inf past 65504).
* bf16: the bits are the top half of a float32 (exact in); out, round to nearest even like
  ml_dtypes, NaN kept a quiet NaN.

``load(v)`` / ``store(out, i, v)`` pick the conversion from the element type at compile time (f32/f64
pass through); ``cast_like(v, like)`` converts to the element type of an array, ``is_normal(v, like)``
tests for a normal finite number of it.  Used by the moments engine and by the elementwise kernels'
f16 <-> f32 array conversions.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir as llvm_ir

from .jit import intrinsic, overload, types

_I16, _I32 = llvm_ir.IntType(16), llvm_ir.IntType(32)


def _conversion(name: str, result: types.Type, emit, doc: str):
    """A Numba intrinsic of one scalar argument returning `result`, its body `emit(builder, value)`."""
    def typer(typingctx, v):
        def codegen(context, builder, signature, args):
            return emit(builder, args[0])

        return result(v), codegen

    typer.__name__ = typer.__qualname__ = name
    typer.__doc__ = doc
    return intrinsic(typer)


def _emit_f32_to_bf16(builder, v):
    b = builder.bitcast(v, _I32)
    top = builder.lshr(b, llvm_ir.Constant(_I32, 16))
    lsb = builder.and_(top, llvm_ir.Constant(_I32, 1))
    rounded = builder.lshr(builder.add(builder.add(b, llvm_ir.Constant(_I32, 0x7FFF)), lsb),
                           llvm_ir.Constant(_I32, 16))
    quiet = builder.or_(top, llvm_ir.Constant(_I32, 0x40))
    isnan = builder.fcmp_unordered("uno", v, v)
    return builder.trunc(builder.select(isnan, quiet, rounded), _I16)


_half_bits_to_f32 = _conversion(
    "_half_bits_to_f32", types.float32,
    lambda b, v: b.fpext(b.bitcast(v, llvm_ir.HalfType()), llvm_ir.FloatType()),
    "IEEE half bits (uint16) -> float32, exact (F16C vcvtph2ps when vectorized).")
_f32_to_half_bits = _conversion(
    "_f32_to_half_bits", types.uint16,
    lambda b, v: b.bitcast(b.fptrunc(v, llvm_ir.HalfType()), _I16),
    "float32 -> IEEE half bits (uint16), round to nearest even, overflow to inf (vcvtps2ph).")
_bf16_bits_to_f32 = _conversion(
    "_bf16_bits_to_f32", types.float32,
    lambda b, v: b.bitcast(b.shl(b.zext(v, _I32), llvm_ir.Constant(_I32, 16)), llvm_ir.FloatType()),
    "bf16 bits (int16) -> float32, exact: the bits are the top half of a float32.")
_f32_to_bf16_bits = _conversion(
    "_f32_to_bf16_bits", types.int16, _emit_f32_to_bf16,
    "float32 -> bf16 bits (int16), round to nearest even like ml_dtypes; NaN stays a quiet NaN.")


def load(v):  # pragma: no cover - only the overload below is ever called (inside jitted code)
    """An element's value in the compute type (float32 for f16/bf16 bits)."""
    raise NotImplementedError


def store(out, i, v):  # pragma: no cover - only the overload below is ever called (inside jitted code)
    """out[i] = v converted to out's element type (f16/bf16 bits rounded to nearest even)."""
    raise NotImplementedError


@overload(load, inline="always")
def _load_impl(v):
    if isinstance(v, types.Float):
        return lambda v: v
    if v == types.uint16:
        return lambda v: _half_bits_to_f32(v)
    if v == types.int16:
        return lambda v: _bf16_bits_to_f32(v)
    return None


@overload(store, inline="always")
def _store_impl(out, i, v):
    dt = out.dtype
    if isinstance(dt, types.Float):
        def impl(out, i, v):
            out[i] = v
        return impl
    if dt == types.uint16:
        def impl_h(out, i, v):
            out[i] = _f32_to_half_bits(np.float32(v))
        return impl_h
    if dt == types.int16:
        def impl_b(out, i, v):
            out[i] = _f32_to_bf16_bits(np.float32(v))
        return impl_b
    return None


def cast_like(v, like):  # pragma: no cover - only the overload below is ever called (inside jitted code)
    """v converted to the element type of the array `like` (the compute type travels as the scale
    array's dtype: a numpy type class as a kernel argument costs ~4 us per call to dispatch)."""
    raise NotImplementedError


@overload(cast_like, inline="always")
def _cast_like_impl(v, like):
    dt = like.dtype

    def impl(v, like):
        return dt(v)

    return impl


def is_normal(v, like):  # pragma: no cover - only the overload below is ever called (inside jitted code)
    """|v| is a normal, finite number of like's element type (not 0, subnormal, inf or NaN)."""
    raise NotImplementedError


@overload(is_normal, inline="always")
def _is_normal_impl(v, like):
    info = np.finfo(np.float64 if like.dtype == types.float64 else np.float32)
    tiny, big = float(info.tiny), float(info.max)

    def impl(v, like):
        a = abs(v)
        return a >= tiny and a <= big

    return impl
