"""Numba kernels for the float elementwise ops.

Binary ops: the output shape and both input shapes are collapsed to at most four dims
``(d0, d1, d2, d3)`` by dropping size-1 output dims and merging neighbours that broadcast the same
way in both inputs.  Each input then has one element stride per dim, 0 where it is broadcast, and
the innermost stride is 1 or 0.  That covers, with a vectorized inner loop:

* same shape (one dim, both strides 1),
* a scalar or size-1 operand,
* per-channel ``[N,C,H,W] op [1,C,1,1]`` -> ``(N, C, HW)`` with the channel value constant per row,
* row broadcast ``[B,T,D] op [D]`` -> ``(BT, D)``, and keep-dims statistics ``[B,T,D] op [B,T,1]``,
* any other pattern that collapses to four dims or fewer.

Patterns that need five or more collapsed dims, and integer tensors, go to the numpy fallback in
``irnorm.ops.elementwise`` (``binary`` returns None for them).

Work is split into fixed blocks of one row, so results do not depend on the thread count.  f32 and
f64 compute in their own type; f16 and bf16 are converted to float32 on the way in and rounded back
(round to nearest even) on the way out.  Division by zero gives inf/NaN (numpy error model).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ir.dtypes import cast, compute_dtype
from . import PARALLEL_MIN
from .halfprec import load, store
from .jit import njit, prange
from .opcodes import ABS, ADD, DIV, ERF, EXP, LOG, MAX, MIN, MUL, NEG, POW, SIGMOID, SQRT, SUB
from .pool import OUTPUTS
from .vmath import verf, vexp, vlog, vtanh

_BLOCK = 16384  # elements per task along the innermost dim
_MAX_DIMS = 4

_JIT = dict(nogil=True, cache=True, error_model="numpy")  # nogil: Ctrl-C and other threads run during kernels


# ---- powers by a constant exponent --------------------------------------------------------------
# Exports raise to 2 (RMSNorm, variance), 0.5 / -0.5 (norms), -1, 3 (tanh-Gelu) and small integers: a
# multiply or a square root instead of a pow call per element.  Each matches IEEE pow's special cases
# (pow(-0, 0.5) = +0, pow(-inf, 0.5) = +inf, pow(-0, -0.5) = +inf, pow(nan, 0) = 1).


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _ipow(v, k):
    """v ** k for an integer k, |k| <= 16, by squaring."""
    m = -k if k < 0 else k
    r = 1.0  # float64: the product of up to 16 factors rounds once, when stored
    b = v
    while m:
        if m & 1:
            r = r * b
        b = b * b
        m >>= 1
    return 1 / r if k < 0 else r


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def power(v, p):
    """v ** p with the fast cases for a constant p (used per element inside loops over one p)."""
    if p == 2.0:
        return v * v
    if p == 1.0:
        return v
    if p == 0.5:
        return math.inf if v == -math.inf else abs(math.sqrt(v))
    if p == -0.5:
        return 0.0 if v == -math.inf else 1 / abs(math.sqrt(v))
    if p == math.floor(p) and abs(p) <= 16.0:
        return _ipow(v, int(p))
    return v ** p


@njit(**_JIT)
def _pow_scalar(a, y, o):
    """o = a ** y for a scalar y; the common exponents get their own loop (vectorised)."""
    n = o.shape[0]
    if y == 2.0:
        for i in range(n):
            v = a[i]
            o[i] = v * v
    elif y == 3.0:
        for i in range(n):
            v = a[i]
            o[i] = v * v * v
    elif y == 1.0:
        for i in range(n):
            o[i] = a[i]
    elif y == -1.0:
        for i in range(n):
            o[i] = 1 / a[i]
    elif y == 0.0:
        for i in range(n):
            o[i] = 1
    elif y == 0.5:
        for i in range(n):
            o[i] = abs(math.sqrt(a[i]))
            if a[i] == -math.inf:
                o[i] = math.inf
    elif y == -0.5:
        for i in range(n):
            o[i] = 1 / abs(math.sqrt(a[i]))
            if a[i] == -math.inf:
                o[i] = 0
    else:
        for i in range(n):
            o[i] = power(a[i], y)


# ---- inner loops: one per (inner stride pattern); the op branch sits outside the loop ----


@njit(**_JIT)
def _vv(code, a, b, o):
    n = o.shape[0]
    if code == ADD:
        for i in range(n):
            o[i] = a[i] + b[i]
    elif code == SUB:
        for i in range(n):
            o[i] = a[i] - b[i]
    elif code == MUL:
        for i in range(n):
            o[i] = a[i] * b[i]
    elif code == DIV:
        for i in range(n):
            o[i] = a[i] / b[i]
    elif code == MAX:
        for i in range(n):
            x, y = a[i], b[i]
            o[i] = x if (x >= y or x != x) else y
    elif code == MIN:
        for i in range(n):
            x, y = a[i], b[i]
            o[i] = x if (x <= y or x != x) else y
    elif code == POW:
        for i in range(n):
            o[i] = a[i] ** b[i]
    else:
        for i in range(n):
            d = a[i] - b[i]
            o[i] = d * d


@njit(**_JIT)
def _vs(code, a, y, o):
    n = o.shape[0]
    if code == ADD:
        for i in range(n):
            o[i] = a[i] + y
    elif code == SUB:
        for i in range(n):
            o[i] = a[i] - y
    elif code == MUL:
        for i in range(n):
            o[i] = a[i] * y
    elif code == DIV:
        for i in range(n):
            o[i] = a[i] / y
    elif code == MAX:
        for i in range(n):
            x = a[i]
            o[i] = x if (x >= y or x != x) else y
    elif code == MIN:
        for i in range(n):
            x = a[i]
            o[i] = x if (x <= y or x != x) else y
    elif code == POW:
        _pow_scalar(a, y, o)
    else:
        for i in range(n):
            d = a[i] - y
            o[i] = d * d


@njit(**_JIT)
def _sv(code, x, b, o):
    n = o.shape[0]
    if code == ADD:
        for i in range(n):
            o[i] = x + b[i]
    elif code == SUB:
        for i in range(n):
            o[i] = x - b[i]
    elif code == MUL:
        for i in range(n):
            o[i] = x * b[i]
    elif code == DIV:
        for i in range(n):
            o[i] = x / b[i]
    elif code == MAX:
        for i in range(n):
            y = b[i]
            o[i] = x if (x >= y or x != x) else y
    elif code == MIN:
        for i in range(n):
            y = b[i]
            o[i] = x if (x <= y or x != x) else y
    elif code == POW:
        for i in range(n):
            o[i] = x ** b[i]
    else:
        for i in range(n):
            d = x - b[i]
            o[i] = d * d


@njit(**_JIT)
def _task(code, a, b, out, d, sa, sb, t, nblk, block):
    r = t // nblk
    c0 = (t % nblk) * block
    n = min(c0 + block, d[3]) - c0
    i2 = r % d[2]
    q = r // d[2]
    i1 = q % d[1]
    i0 = q // d[1]
    oa = i0 * sa[0] + i1 * sa[1] + i2 * sa[2]
    ob = i0 * sb[0] + i1 * sb[1] + i2 * sb[2]
    oo = r * d[3] + c0
    o = out[oo: oo + n]
    if sa[3] != 0 and sb[3] != 0:
        _vv(code, a[oa + c0: oa + c0 + n], b[ob + c0: ob + c0 + n], o)
    elif sa[3] != 0:
        _vs(code, a[oa + c0: oa + c0 + n], b[ob], o)
    else:  # collapse() never makes both inner strides 0
        _sv(code, a[oa], b[ob + c0: ob + c0 + n], o)


@njit(parallel=True, **_JIT)
def binary_parallel(code, a, b, out, d, sa, sb, block):
    """a, b, out: flat C-contiguous arrays; d: collapsed dims; sa/sb: element strides (0 = broadcast)."""
    nblk = (d[3] + block - 1) // block
    for t in prange(d[0] * d[1] * d[2] * nblk):
        _task(code, a, b, out, d, sa, sb, t, nblk, block)


@njit(**_JIT)
def binary_serial(code, a, b, out, d, sa, sb, block):
    nblk = (d[3] + block - 1) // block
    for t in range(d[0] * d[1] * d[2] * nblk):
        _task(code, a, b, out, d, sa, sb, t, nblk, block)


# ---- float16 <-> float32 (numpy's conversion is several times slower than the arithmetic) ----
# The shared conversions of kernels/halfprec.py (F16C): exact, round to nearest even, inf past 65504;
# the tests compare them bit for bit with numpy.


@njit(nogil=True, parallel=True, cache=True)
def _f16_to_f32(src, dst, block):
    n = src.shape[0]
    for t in prange((n + block - 1) // block):
        s = src[t * block: min(t * block + block, n)]
        d = dst[t * block: min(t * block + block, n)]
        for i in range(s.shape[0]):
            d[i] = load(s[i])  # F16C, exact


@njit(nogil=True, parallel=True, cache=True)
def _f32_to_f16(src, dst, block):
    n = src.shape[0]
    for t in prange((n + block - 1) // block):
        s = src[t * block: min(t * block + block, n)]
        d = dst[t * block: min(t * block + block, n)]
        for i in range(s.shape[0]):
            store(d, i, s[i])  # F16C, round to nearest even


def f16_to_f32(x: np.ndarray) -> np.ndarray:
    """A float32 copy of a float16 array (same shape), converted by the Numba kernel."""
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, np.float32)
    if x.size:
        _f16_to_f32(x.reshape(-1).view(np.uint16), out.reshape(-1), _BLOCK)
    return out


def f32_to_f16(x: np.ndarray) -> np.ndarray:
    """A float16 copy of a float32 array, rounded to nearest even (inf past 65504)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(x.shape, np.float16)
    if x.size:
        _f32_to_f16(x.reshape(-1), out.reshape(-1).view(np.uint16), _BLOCK)
    return out


def _to_compute(x: np.ndarray, cdt: np.dtype) -> np.ndarray:
    if x.dtype == np.float16 and x.size >= PARALLEL_MIN:
        return f16_to_f32(x)
    return np.ascontiguousarray(x, dtype=cdt)


def _from_compute(y: np.ndarray, dt: np.dtype) -> np.ndarray:
    if y.dtype == dt:
        return y
    if dt == np.float16 and y.size >= PARALLEL_MIN:
        return f32_to_f16(y)
    return cast(y, dt)


def collapse(out_shape: tuple[int, ...], a_shape: tuple[int, ...], b_shape: tuple[int, ...]
             ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """(dims, a strides, b strides), each of length 4, or None if more than four collapsed dims."""
    r = len(out_shape)
    pa = (1,) * (r - len(a_shape)) + tuple(a_shape)
    pb = (1,) * (r - len(b_shape)) + tuple(b_shape)
    groups: list[list] = []  # [size, a_full, b_full]
    for s, x, y in zip(out_shape, pa, pb, strict=True):
        if s == 1:
            continue
        fa, fb = x == s, y == s
        if groups and groups[-1][1] == fa and groups[-1][2] == fb:
            groups[-1][0] *= s
        else:
            groups.append([s, fa, fb])
    if not groups:
        groups = [[1, True, True]]
    if len(groups) > _MAX_DIMS:
        return None
    dims, sa, sb = [], [], []
    acc_a = acc_b = 1
    for s, fa, fb in reversed(groups):
        dims.append(s)
        sa.append(acc_a if fa else 0)
        sb.append(acc_b if fb else 0)
        acc_a *= s if fa else 1
        acc_b *= s if fb else 1
    pad = _MAX_DIMS - len(dims)
    return ((1,) * pad + tuple(reversed(dims)), (0,) * pad + tuple(reversed(sa)),
            (0,) * pad + tuple(reversed(sb)))


# Up to this many elements a numpy ufunc call beats planning the broadcast and dispatching to Numba: 1.2
# against 11 us for [1,65,64] + [1,65,64], 29 against 209 us for [1,4096,8] + [8] (measured on an AVX2
# machine); for these ops on f32/f64 it computes the same IEEE operation, so results are bit-identical
# either way.  Numpy's SIMD loops stay ahead of the kernel on its two threads up to 128K elements (AVX2
# EPYC, [1, 64, N] + scalar / same shape / per channel / last axis: 12-30 against 40-44 us at 64K; mixed at
# 256K, the kernel ahead from 1M).
SMALL = 1 << 17
_SMALL_UFUNC = {ADD: np.add, SUB: np.subtract, MUL: np.multiply, DIV: np.divide, MAX: np.maximum, MIN: np.minimum}
_NATIVE = (np.dtype(np.float32), np.dtype(np.float64))


def _broadcasts_into(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    """`small` broadcasts to `big` without growing it (the output is `big`, so it stays small too)."""
    if len(small) > len(big):
        return False
    for x, y in zip(reversed(big), reversed(small), strict=False):
        if y != 1 and y != x:
            return False
    return True


def small_ufunc(code: int, a_shape: tuple[int, ...], b_shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """numpy's ufunc for the op when both operands are small f32/f64 arrays and one of them has the
    result's shape (numpy's loop is then cheaper than a kernel call); else None."""
    if code not in _SMALL_UFUNC or dtype not in _NATIVE or math.prod(a_shape) > SMALL or math.prod(b_shape) > SMALL:
        return None
    if _broadcasts_into(b_shape, a_shape) or _broadcasts_into(a_shape, b_shape):
        return _SMALL_UFUNC[code]
    return None


def binary(code: int, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Float binary op with numpy broadcasting (a and b of one float dtype); a fresh array of
    that dtype, or None when the broadcast pattern needs the numpy fallback."""
    dt = a.dtype
    ufunc = small_ufunc(code, a.shape, b.shape, dt)
    if ufunc is not None:
        out = OUTPUTS.empty(np.broadcast_shapes(a.shape, b.shape), dt)  # the caller's out= array when it provided one
        return ufunc(a, b, out=out)  # inf/NaN are results: runs are under np.errstate
    out_shape = np.broadcast_shapes(a.shape, b.shape)
    plan = collapse(out_shape, a.shape, b.shape)
    if plan is None:
        return None
    cdt = compute_dtype(dt)
    out = OUTPUTS.empty(out_shape, cdt)
    if out.size == 0:
        return out.astype(dt, copy=False)
    af = _to_compute(a, cdt).reshape(-1)
    bf = _to_compute(b, cdt).reshape(-1)
    dims, sa, sb = plan
    kern = binary_parallel if out.size >= PARALLEL_MIN else binary_serial
    kern(code, af, bf, out.reshape(-1), dims, sa, sb, _BLOCK)
    return _from_compute(out, dt)


# ---- unary ------------------------------------------------------------------------------


@njit(**_JIT)
def _unary_block(code, x, o):
    n = o.shape[0]
    if code == SQRT:
        for i in range(n):
            o[i] = math.sqrt(x[i])
    elif code == ABS:
        for i in range(n):
            o[i] = abs(x[i])
    elif code == NEG:
        for i in range(n):
            o[i] = -x[i]
    elif code == EXP:
        for i in range(n):
            o[i] = vexp(x[i])
    elif code == LOG:
        for i in range(n):
            o[i] = vlog(x[i])  # -inf at +-0, NaN below: vlog's selects for float32, libm's log for float64
    elif code == ERF:
        for i in range(n):
            o[i] = verf(x[i])
    elif code == SIGMOID:
        for i in range(n):
            o[i] = 1.0 / (1.0 + vexp(-x[i]))
    else:
        for i in range(n):
            o[i] = vtanh(x[i])


@njit(parallel=True, **_JIT)
def unary_parallel(code, x, out, block):
    n = x.shape[0]
    for t in prange((n + block - 1) // block):
        s = t * block
        e = min(s + block, n)
        _unary_block(code, x[s:e], out[s:e])


def unary(code: int, x: np.ndarray) -> np.ndarray:
    """Float unary op; a fresh array of x's dtype."""
    dt = x.dtype
    cdt = compute_dtype(dt)
    out = OUTPUTS.empty(x.shape, cdt)
    if out.size:
        xf = _to_compute(x, cdt).reshape(-1)
        if out.size >= PARALLEL_MIN:
            unary_parallel(code, xf, out.reshape(-1), _BLOCK)
        else:
            _unary_block(code, xf, out.reshape(-1))
    return _from_compute(out, dt)
