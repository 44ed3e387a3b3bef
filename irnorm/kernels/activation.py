"""Numba kernels for the unary activation and float math ops (irnorm.ops.activation).

One pass over the flat data: f32 and f64 compute in their own type (the formulas' constants are passed
in that type, so float32 arithmetic stays float32); f16 and bf16 are decoded to float32 block by block
inside the same parallel task (their bits are read as uint16), computed in float32 into a second buffer
(so the loop vectorizes: :func:`_half_block`), and rounded back to nearest even, so a half-precision
activation touches its data once.  Transcendental functions are
scalar libm calls (this Numba build has no SVML) except exp, expm1, erf, log1p, sin, cos, tan and atan on
float32, which come from kernels/vmath.py and vectorize (0.1-0.4 ns per element instead of 2-5 ns for exp,
4-8 ns for the trigonometric ones and 10-20 ns for erf); so the tanh Gelu is computed as ``x sigmoid(2u)``
and Mish as ``x e(e+2) / (e(e+2) + 2)`` with ``e = exp(x)`` (one exp each, same values to an ulp); SoftPlus
and Elu/Selu use vmath's log1p and expm1; Sin, Cos and Tan use vmath's in each block whose |x| stay below
vmath.TRIG_MAX (2**19; a block reaching past it takes libm for those elements); Atan uses vmath's
everywhere; the other trigonometric ops pay their libm call.  Piecewise-linear ops (Relu, HSwish, HSigmoid,
Round, ...) run at memory speed.  Work is split into fixed blocks (results do not depend on the thread count);
tensors under ``PARALLEL_MIN`` elements run on the calling thread, and so do those under
``CHEAP_PARALLEL_MIN`` whose pass is memory-bound (a bias add alone, a piecewise-linear activation:
:func:`parallel_min`).

Ops are chosen by the codes in :data:`CODES` (the kernel's own; the op module refers to them by
name, so ``irnorm validate`` never imports Numba).  Two float parameters ``p0``/``p1`` carry the
op's constants (Elu's alpha, Swish's beta, Selu's alpha and lambda, HardSigmoid's alpha and beta,
SoftPlus's threshold, a scalar PRelu slope).  Each formula is the OpenVINO reference's, with its
NaN/inf behaviour: ``ReLU(x) = x < 0 ? 0 : x`` keeps NaN, ``HardSigmoid`` clamps NaN to 1 as
``std::min/std::max`` do, ``HSigmoid``/``HSwish`` keep NaN.

PRelu with a per-channel slope has its own kernel (:func:`prelu_channel`): ``[N, C, inner]`` data,
one slope value per channel.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from math import prod
from typing import NamedTuple

import numpy as np

from . import CHEAP_PARALLEL_MIN, PARALLEL_MIN
from .jit import c_array, entry, get_num_threads, njit, prange  # (get_num_threads: no per-call import, ~0.5 us)
from .pool import OUTPUTS
from .vmath import TRIG_MAX, vatan, vcos, verf, vexp, vexp_sat, vexpm1, vlog1p, vsin, vtan

_NAMES = (
    "relu", "gelu_erf", "gelu_tanh", "swish", "hswish", "hsigmoid", "mish", "softplus", "elu", "selu",
    "hard_sigmoid", "softsign", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
    "atanh", "floor", "ceiling", "sign", "round_even", "round_away", "prelu_scalar", "sigmoid",
)
CODES = {name: i for i, name in enumerate(_NAMES)}
(RELU, GELU_ERF, GELU_TANH, SWISH, HSWISH, HSIGMOID, MISH, SOFTPLUS, ELU, SELU, HARD_SIGMOID, SOFTSIGN, SIN, COS,
 TAN, ASIN, ACOS, ATAN, SINH, COSH, ASINH, ACOSH, ATANH, FLOOR, CEILING, SIGN, ROUND_EVEN, ROUND_AWAY,
 PRELU_SCALAR, SIGMOID) = range(len(_NAMES))

BLOCK = 8192  # elements per task

# piecewise-linear activations: a compare or two an element, at memory speed like a bias add
_CHEAP = frozenset((RELU, HSWISH, HSIGMOID, HARD_SIGMOID, PRELU_SCALAR, FLOOR, CEILING, SIGN, ROUND_EVEN,
                    ROUND_AWAY))


def is_cheap(code: int) -> bool:
    """Whether activation `code` is piecewise linear (a compare or two an element: memory-bound)."""
    return code in _CHEAP


def parallel_min(code: int) -> int:
    """Elements from which a pass with activation `code` (-1: none, a bias or residual add alone) runs on
    several threads: CHEAP_PARALLEL_MIN for a memory-bound pass, PARALLEL_MIN for one with an exp, erf
    or division per element."""
    return CHEAP_PARALLEL_MIN if code < 0 or code in _CHEAP else PARALLEL_MIN

_JIT = dict(nogil=True, cache=True, error_model="numpy")


def pool_tasks(rows: int) -> int:
    """Tasks for a pass over `rows` rows on Numba's threads: four a thread, for balance on a shared host (each
    task stages through a buffer of its own: 64 tasks on two threads cost ~1.5 us more than 8 on [256, 128])."""
    return max(1, min(rows, 4 * get_num_threads()))


@njit(nogil=True, cache=True, inline="always")
def _trig_reduces(x):
    """Whether no |x[i]| reaches vmath.TRIG_MAX (NaN does not), so vsin / vcos / vtan hold for the whole
    block: a count that vectorizes, a read of the whole block before the pass (which may write over it: x and
    o may be one array)."""
    big = 0
    for i in range(x.shape[0]):
        big += 1 if abs(x[i]) >= TRIG_MAX else 0
    return big == 0


@njit(nogil=True, cache=True, inline="always")
def _trig_one(code, v):
    """Sin, Cos or Tan (by `code`) of one element: vmath's below TRIG_MAX, libm's from there on."""
    if abs(v) < TRIG_MAX:
        return vsin(v) if code == SIN else (vcos(v) if code == COS else vtan(v))
    return math.sin(v) if code == SIN else (math.cos(v) if code == COS else math.tan(v))


def _apply_body(code, x, o, p0, p1, k):  # noqa: C901 - one branch per op, each a plain loop
    """o[i] = f(x[i]) for one block; x and o may be the same array.  `k` holds the formulas' constants
    in the compute type (see constants()), so float32 data is computed in float32 throughout (a Python
    float literal would promote the arithmetic to float64)."""
    n = o.shape[0]
    zero, half, one, two, three, six = k[0], k[1], k[2], k[3], k[4], k[5]
    sqrt1_2, gelu_k, gelu_c, mish_big = k[6], k[7], k[8], k[9]
    if code == RELU:
        for i in range(n):
            v = x[i]
            o[i] = zero if v < zero else v
    elif code == GELU_ERF:
        for i in range(n):
            v = x[i]
            o[i] = half * v * (one + verf(v * sqrt1_2))
    elif code == GELU_TANH:  # 0.5 x (1 + tanh(u)) = x sigmoid(2u): one exp instead of a tanh
        two_k = two * gelu_k
        for i in range(n):
            v = x[i]
            o[i] = v / (one + vexp_sat(-two_k * (v + gelu_c * v * v * v)))
    elif code == SWISH:  # vexp_sat: vexp's bits here (x carries NaN; 1 + e is 1 where they differ), 15% faster
        for i in range(n):
            v = x[i]
            o[i] = v / (one + vexp_sat(-p0 * v))
    elif code == HSWISH:
        for i in range(n):
            v = x[i]
            t = v + three
            t = zero if t < zero else (six if t > six else t)
            o[i] = v * t / six
    elif code == HSIGMOID:
        for i in range(n):
            t = x[i] + three
            t = zero if t < zero else (six if t > six else t)
            o[i] = t / six
    elif code == MISH:  # tanh(log(1 + e)) = e (e + 2) / (e (e + 2) + 2) with e = exp(x): one exp
        for i in range(n):
            v = x[i]
            # beyond mish_big the ratio is 1 far past float64's precision (and exp(x)**2 would overflow
            # f32); selects rather than a branch, so the loop vectorizes
            e = vexp(v if v < mish_big else mish_big)
            t = e * (e + two)
            o[i] = v if v >= mish_big else v * (t / (t + two))
    elif code == SOFTPLUS:  # log(1 + exp(x)) below log(max) (p0), x itself from there; selects, so it vectorizes
        for i in range(n):
            v = x[i]
            r = vlog1p(vexp(v if v < p0 else p0))
            o[i] = r if v < p0 else v
    elif code == ELU:
        for i in range(n):
            v = x[i]
            o[i] = v if v > zero else p0 * vexpm1(v)
    elif code == SELU:
        for i in range(n):
            v = x[i]
            o[i] = p1 * (v if v > zero else p0 * vexpm1(v))
    elif code == HARD_SIGMOID:
        for i in range(n):
            t = p0 * x[i] + p1
            t = t if t < one else one  # std::min(1, t): NaN -> 1
            o[i] = t if t > zero else zero
    elif code == SOFTSIGN:
        for i in range(n):
            v = x[i]
            o[i] = v / (one + abs(v))
    elif code == SIN or code == COS or code == TAN:
        if _trig_reduces(x):  # vmath's float32 functions, vectorized (float64: libm either way)
            if code == SIN:
                for i in range(n):
                    o[i] = vsin(x[i])
            elif code == COS:
                for i in range(n):
                    o[i] = vcos(x[i])
            else:
                for i in range(n):
                    o[i] = vtan(x[i])
        else:  # libm for the elements past vmath's reduction, element by element
            for i in range(n):
                o[i] = _trig_one(code, x[i])
    elif code == ATAN:
        for i in range(n):
            o[i] = vatan(x[i])
    elif code == ASIN:
        for i in range(n):
            v = x[i]
            o[i] = math.asin(v) if -one <= v <= one else math.nan
    elif code == ACOS:
        for i in range(n):
            v = x[i]
            o[i] = math.acos(v) if -one <= v <= one else math.nan
    elif code == SINH:
        for i in range(n):
            o[i] = math.sinh(x[i])
    elif code == COSH:
        for i in range(n):
            o[i] = math.cosh(x[i])
    elif code == ASINH:
        for i in range(n):
            o[i] = math.asinh(x[i])
    elif code == ACOSH:
        for i in range(n):
            v = x[i]
            o[i] = math.acosh(v) if v >= one else math.nan
    elif code == ATANH:
        for i in range(n):
            v = x[i]
            o[i] = math.atanh(v) if -one < v < one else (math.copysign(math.inf, v) if abs(v) == one else math.nan)
    elif code == FLOOR:
        for i in range(n):
            o[i] = np.floor(x[i])
    elif code == CEILING:
        for i in range(n):
            o[i] = np.ceil(x[i])
    elif code == SIGN:
        for i in range(n):
            v = x[i]
            o[i] = one if v > zero else (-one if v < zero else (zero if v == zero else v))
    elif code == ROUND_EVEN:
        for i in range(n):
            o[i] = np.rint(x[i])
    elif code == ROUND_AWAY:
        for i in range(n):
            v = x[i]
            t = np.trunc(v)
            o[i] = t + math.copysign(one, v) if abs(v - t) >= half else t
    elif code == SIGMOID:  # the Sigmoid layer's own expression (kernels/elementwise.py), the same bits
        for i in range(n):
            o[i] = 1.0 / (1.0 + vexp(-x[i]))
    else:  # PRELU_SCALAR
        for i in range(n):
            v = x[i]
            o[i] = v * p0 if v < zero else v


_apply = njit(**_JIT)(_apply_body)
# The same loops inlined into activate_in_place, where x and o are one array: LLVM then sees one pointer.  Passed the
# same array as two arguments, _apply's loops take LLVM's run-time overlap check, which sends every element down
# the scalar loop (a Swish over 16K elements in place: 43 us, against 6.8 inlined; callers with two distinct arrays
# or a staging buffer are not affected).  Not cached on its own: only its callers' code is.
_apply_inlined = njit(inline="always", nogil=True, error_model="numpy")(_apply_body)


@njit(**_JIT)
def activate_in_place(code, y, p0, p1, k):
    """y[i] = f(y[i]) over flat y, vectorized (_apply_inlined): the epilogues with no bias to add."""
    _apply_inlined(code, y, y, p0, p1, k)


def constants(dtype) -> np.ndarray:
    """The constants _apply reads, in `dtype` (float32 or float64)."""
    return np.array([0.0, 0.5, 1.0, 2.0, 3.0, 6.0, 1.0 / math.sqrt(2.0), math.sqrt(2.0 / math.pi), 0.044715, 40.0],
                    dtype)


_K32 = constants(np.float32)
_K64 = constants(np.float64)


def epilogue_args(code: int, p0: float, p1: float, dtype: np.dtype) -> tuple:
    """Activation `code` with its parameters as a kernel's fused-epilogue argument for data of `dtype`
    (float32 or float64): (code, p0, p1, constants), each in the type activate_in_place computes in."""
    ftype = np.dtype(dtype).type
    return (np.int64(code), ftype(p0), ftype(p1), _K64 if np.dtype(dtype) == np.float64 else _K32)


# ---- float16 / bfloat16 bits <-> float32, per block --------------------------------------------


@njit(**_JIT)
def _decode(kind, src, buf):
    """uint16 bits (kind 1: float16, 2: bfloat16) -> float32 buf (written through its uint32 view)."""
    bits = buf.view(np.uint32)
    n = src.shape[0]
    if kind == 2:
        for i in range(n):
            bits[i] = np.uint32(src[i]) << 16
        return
    for i in range(n):
        h = np.uint32(src[i])
        sign = (h & 0x8000) << 16
        e = (h >> 10) & 0x1F
        m = h & 0x3FF
        if e == 0:  # zero or subnormal: m * 2**-24, exact in float32
            v = np.float32(m) * np.float32(5.9604644775390625e-08)
            buf[i] = -v if sign else v
        elif e == 31:
            bits[i] = sign | 0x7F800000 | (m << 13)
        else:
            bits[i] = sign | ((e + 112) << 23) | (m << 13)


@njit(**_JIT)
def _encode(kind, buf, dst):
    """float32 buf -> uint16 bits of float16 (kind 1) or bfloat16 (kind 2), round to nearest even."""
    bits = buf.view(np.uint32)
    n = dst.shape[0]
    if kind == 2:
        for i in range(n):
            u = np.uint32(bits[i])
            if (u & 0x7FFFFFFF) > 0x7F800000:  # NaN stays a quiet NaN
                dst[i] = np.uint16((u >> 16) | 0x40)
            else:
                dst[i] = np.uint16((u + 0x7FFF + ((u >> 16) & 1)) >> 16)
        return
    for i in range(n):
        u = np.uint32(bits[i])
        sign = np.uint32((u >> 16) & 0x8000)
        a = u & 0x7FFFFFFF
        if a > 0x7F800000:
            h = np.uint32(0x7E00)
        elif a >= 0x477FF000:  # 65520 and up round to inf
            h = np.uint32(0x7C00)
        elif a >= 0x38800000:  # normal half
            r = a - (112 << 23)
            h = np.uint32((r + 0xFFF + ((r >> 13) & 1)) >> 13)
        else:  # subnormal half or zero: round(|x| * 2**24) to nearest even (exact scaling)
            h = np.uint32(np.rint(abs(buf[i]) * np.float32(16777216.0)))
        dst[i] = np.uint16(sign | h)


# ---- drivers ------------------------------------------------------------------------------------


@njit(parallel=True, **_JIT)
def _float_parallel(code, x, o, p0, p1, k, block):
    n = x.shape[0]
    for t in prange((n + block - 1) // block):
        s = t * block
        e = min(s + block, n)
        _apply(code, x[s:e], o[s:e], p0, p1, k)


@njit(**_JIT)
def _half_block(code, kind, x, o, p0, p1, buf, k):
    """Decode into the first half of `buf` (two float32 values per element), compute into the second half,
    encode from there: from one array into another the activation's loop vectorizes (in place, LLVM's
    overlap check sends every element down its scalar loop: Swish 4.9 against 0.9 ns an element, Sin 2.8
    against 0.3)."""
    m = x.shape[0]
    b, c = buf[:m], buf[m: 2 * m]
    _decode(kind, x, b)
    _apply(code, b, c, np.float32(p0), np.float32(p1), k)
    _encode(kind, c, o)


@njit(parallel=True, **_JIT)
def _half_parallel(code, kind, x, o, p0, p1, k, block):
    n = x.shape[0]
    for t in prange((n + block - 1) // block):
        s = t * block
        e = min(s + block, n)
        buf = np.empty(2 * (e - s), np.float32)
        _half_block(code, kind, x[s:e], o[s:e], p0, p1, buf, k)


@njit(**_JIT)
def _half_serial(code, kind, x, o, p0, p1, k, block):
    buf = np.empty(2 * min(block, x.shape[0]), np.float32)
    n = x.shape[0]
    for s in range(0, n, block):
        _half_block(code, kind, x[s:min(s + block, n)], o[s:min(s + block, n)], p0, p1, buf, k)


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_APPLY: dict = {}  # dtype -> _apply's entry point (jit.entry)
_SHORT_ROWS: dict = {}  # (data dtype, bias dtype) -> _bias_act_short_rows' entry point


def unary(code: int, x: np.ndarray, p0: float = 0.0, p1: float = 0.0) -> np.ndarray:
    """Apply activation `code` to a float tensor (f64, f32, f16 or bf16); a fresh array of x's dtype."""
    dt = x.dtype
    out = OUTPUTS.empty(x.shape, dt)
    n = out.size
    if n == 0:
        return out
    xf = x.reshape(-1) if x.flags.c_contiguous else np.ascontiguousarray(x).reshape(-1)
    of = out.reshape(-1)
    if dt == _F32 or dt == _F64:
        ftype, k = (np.float32, _K32) if dt == _F32 else (np.float64, _K64)
        if n >= parallel_min(code):
            _float_parallel(code, xf, of, ftype(p0), ftype(p1), k, BLOCK)
        else:
            apply = _APPLY.get(dt)
            if apply is None:  # xf and of are always 1-D C-contiguous arrays of dt here: one signature
                apply = _APPLY[dt] = entry(_apply, code, of, of, ftype(p0), ftype(p1), k)
            apply(code, xf, of, ftype(p0), ftype(p1), k)
        return out
    kind = 1 if dt == np.float16 else 2
    xb, ob = xf.view(np.uint16), of.view(np.uint16)
    if out.size >= PARALLEL_MIN:
        _half_parallel(code, kind, xb, ob, float(p0), float(p1), _K32, BLOCK)
    else:
        _half_serial(code, kind, xb, ob, float(p0), float(p1), _K32, BLOCK)
    return out


# ---- a producer's per-channel bias and activation, in place -------------------------------------


class Epilogue(NamedTuple):
    """What a fused step does in place on a product (a convolution's, a MatMul's), in the layers' order:
    + bias (None: nothing; one value per channel for a convolution, per last-axis position for a MatMul),
    + the step's residual operand (a tensor of the output's shape) when `residual`, then activation `code`
    (-1: none) with parameters p0, p1."""
    bias: np.ndarray | None
    code: int
    p0: float
    p1: float
    residual: bool


_ACT_CHUNK = 1024  # elements staged per activation call: an L1-sized buffer
# Rows at most this long take the short-row kernels (whole rows staged together, one activation call for
# them all; the bias alone added in place): a call per row, with its slices, costs ~50 ns, more than a
# 256-value row's add (AVX-512 EPYC, one thread: [64, 256] with Swish 11.2 -> 7.6 us, + bias alone 6.0 ->
# 2.6; [16, 1024] 8.3 -> 7.5 and 3.2 -> 2.5).
SHORT_ROW_MAX = _ACT_CHUNK


@njit(nogil=True, cache=True, inline="always")
def _copy_in(dst, src):
    """dst[i] = src[i] for dst's length.  A loop, not ``dst[:] = src``: Numba's slice assignment takes its
    general broadcasting path, ~7x slower for a 1024-element row (bias-only epilogues spent most of their
    time there: 48 rows of 1024, 27 against 4 us)."""
    for i in range(dst.shape[0]):
        dst[i] = src[i]


@njit(**_JIT)
def _add_activate(code, row, bias, b, per_element, buf, p0, p1, k):
    """row[i] = f(row[i] + bias) in place, chunk by chunk through `buf`: the activation reads the buffer
    and writes the row, two distinct arrays, so its loop vectorizes (on one array passed as both input
    and output, LLVM's run-time overlap check sends every element down the scalar loop).  The bias is
    bias[i] when per_element, else the scalar b; code < 0: no activation."""
    n = row.shape[0]
    if code < 0:  # the add alone, in place (one array, one index: nothing for LLVM to check)
        if per_element:
            for i in range(n):
                row[i] = row[i] + bias[i]
        else:
            for i in range(n):
                row[i] = row[i] + b
        return
    if code == RELU:  # in place too, the staged form's operations (a compare an element: 64 x 1024 6.7 -> 5.0 us)
        zero = k[0]
        if per_element:
            for i in range(n):
                v = row[i] + bias[i]
                row[i] = zero if v < zero else v
        else:
            for i in range(n):
                v = row[i] + b
                row[i] = zero if v < zero else v
        return
    for s in range(0, n, _ACT_CHUNK):
        m = min(_ACT_CHUNK, n - s)
        seg = row[s: s + m]
        staged = buf[:m]
        if per_element:
            part = bias[s: s + m]
            for i in range(m):
                staged[i] = seg[i] + part[i]
        else:
            for i in range(m):
                staged[i] = seg[i] + b
        _apply(code, staged, seg, p0, p1, k)


@njit(**_JIT)
def _bias_act_rows(code, y, bias, c_count, r0, r1, p0, p1, k):
    """Rows r0..r1-1 of y [N*C, inner]: += bias[channel] (when bias has C values), then activation
    `code` (none when negative)."""
    if bias.shape[0] == 0:  # the activation alone: the rows are one run, activated in place
        if code >= 0 and r1 > r0:
            activate_in_place(code, y[r0:r1].reshape(-1), p0, p1, k)
        return
    buf = np.empty(min(_ACT_CHUNK, y.shape[1]), y.dtype)
    for r in range(r0, r1):
        _add_activate(code, y[r], bias, bias[r % c_count], False, buf, p0, p1, k)


@njit(**_JIT)
def _bias_act_short_rows(code, y, bias, c_count, per_column, r0, r1, p0, p1, k):
    """Rows r0..r1-1 of y [rows, inner] with rows shorter than a staging chunk (small feature maps:
    [288 channels, 2x2]; a small MatMul's [tokens, features]): the biased values of as many whole rows as
    fit are staged, then one activation call runs over them all, instead of one call per short row.
    The bias is one value per row's channel (r % c_count), or per column when `per_column`; an empty
    bias adds nothing (the activation runs in place over the rows).  Same operations per element as
    _add_activate.  With no activation the add runs in place.  The bias's two forms are two loop nests, each
    with its row loop inside its branch: with the branch inside the row loop LLVM left both scalar ([256, 128]
    + a bias per column: 7.8 -> 1.5 us)."""
    inner = y.shape[1]
    zero = k[0]
    has_bias = bias.shape[0] > 0
    if code < 0:  # the add alone, in place (one array: LLVM vectorizes either form with the branch here)
        for r in range(r0, r1):
            row = y[r]
            if per_column and has_bias:
                for i in range(inner):
                    row[i] = row[i] + bias[i]
            else:
                b = bias[r % c_count] if has_bias else zero
                for i in range(inner):
                    row[i] = row[i] + b
        return
    if not has_bias:  # the activation alone: the rows are one run, activated in place
        if r1 > r0:
            activate_in_place(code, y[r0:r1].reshape(-1), p0, p1, k)
        return
    per = max(1, _ACT_CHUNK // inner)
    buf = np.empty(per * inner, y.dtype)
    for c0 in range(r0, r1, per):
        c1 = min(r1, c0 + per)
        if per_column and has_bias:
            for r in range(c0, c1):
                row = y[r]
                dst = buf[(r - c0) * inner:(r - c0 + 1) * inner]  # indices from 0: the loops vectorize
                for i in range(inner):
                    dst[i] = row[i] + bias[i]
        else:
            for r in range(c0, c1):
                row = y[r]
                b = bias[r % c_count] if has_bias else zero
                dst = buf[(r - c0) * inner:(r - c0 + 1) * inner]
                for i in range(inner):
                    dst[i] = row[i] + b
        _apply(code, buf[:(c1 - c0) * inner], y[c0:c1].reshape(-1), p0, p1, k)


@njit(**_JIT)
def _bias_act_flat(code, y, bias, per_element, p0, p1, k):
    """y[i] = f(y[i] + bias[i]) (per_element, chunk by chunk: _add_activate) or f(y[i]) in place over flat y."""
    if not per_element:
        if code >= 0:
            activate_in_place(code, y, p0, p1, k)
        return
    buf = np.empty(min(_ACT_CHUNK, y.shape[0]), y.dtype)
    _add_activate(code, y, bias, k[0], per_element, buf, p0, p1, k)


@njit(parallel=True, **_JIT)
def _bias_act_short_parallel(code, y, bias, c_count, per_column, p0, p1, k, tasks):
    rows = y.shape[0]
    for t in prange(tasks):
        _bias_act_short_rows(code, y, bias, c_count, per_column, t * rows // tasks, (t + 1) * rows // tasks, p0,
                             p1, k)


@njit(parallel=True, **_JIT)
def _bias_act_parallel(code, y, bias, c_count, p0, p1, k, tasks):
    rows = y.shape[0]
    short = y.shape[1] <= SHORT_ROW_MAX
    for t in prange(tasks):
        if short:
            _bias_act_short_rows(code, y, bias, c_count, False, t * rows // tasks, (t + 1) * rows // tasks, p0, p1,
                                 k)
        else:
            _bias_act_rows(code, y, bias, c_count, t * rows // tasks, (t + 1) * rows // tasks, p0, p1, k)


def bias_activation(y: np.ndarray, bias: np.ndarray | None, code: int, p0: float = 0.0, p1: float = 0.0
                    ) -> np.ndarray:
    """In place on y [N, C, *spatial] (f32 or f64, C-contiguous, owned by the caller): y + bias[c]
    (one value per channel, y's dtype), then activation `code` (-1: none).  The same float operations,
    in the same order, as an Add layer followed by the activation layer: results are bit-identical."""
    return bias_activation_plan(y.shape, y.dtype, bias, code, p0, p1)(y)


def bias_activation_plan(shape: tuple[int, ...], dtype: np.dtype, bias: np.ndarray | None, code: int,
                         p0: float = 0.0, p1: float = 0.0, after_parallel: bool = False
                         ) -> Callable[[np.ndarray], np.ndarray]:
    """bias_activation for arrays of one shape and dtype, every choice made once (a fused step keeps
    it per shape).  `after_parallel`: the data was just written by several threads (it is in their
    caches), so even a memory-bound pass runs on several from PARALLEL_MIN; else from parallel_min(code)."""
    size = prod(shape)
    if size == 0:
        return _unchanged
    n, c = shape[0], shape[1]
    rows_shape = (n * c, size // (n * c))
    b = np.zeros(0, dtype) if bias is None else bias
    ftype, k = np.dtype(dtype).type, (_K64 if dtype == np.float64 else _K32)
    a0, a1 = ftype(p0), ftype(p1)
    if size >= (PARALLEL_MIN if after_parallel else parallel_min(code)) and n * c > 1:
        tasks = pool_tasks(n * c)

        run_parallel = entry(_bias_act_parallel, code, c_array(2, dtype), b, c, a0, a1, k, tasks)

        def parallel(y: np.ndarray) -> np.ndarray:
            y = y if y.flags.c_contiguous else np.ascontiguousarray(y)
            run_parallel(code, y.reshape(rows_shape), b, c, a0, a1, k, tasks)
            return y
        return parallel
    if bias is None and code < 0:
        return _unchanged
    if rows_shape[1] < _ACT_CHUNK // 4 and size < PARALLEL_MIN:
        # Short rows (small feature maps) of a tensor below PARALLEL_MIN: the bias laid out once per element
        # (at most PARALLEL_MIN values), so one flat pass adds and activates -- the same two operations per
        # element as the layers, without a loop per row ([1, 288, 2, 2] with Swish: 4 -> 1.5 us).
        per_element = bias is not None
        flat_bias = np.tile(np.repeat(b, rows_shape[1]), n) if per_element else b
        run_flat = entry(_bias_act_flat, code, c_array(1, dtype), flat_bias, per_element, a0, a1, k)

        def short_rows(y: np.ndarray) -> np.ndarray:
            y = y if y.flags.c_contiguous else np.ascontiguousarray(y)
            run_flat(code, y.reshape(-1), flat_bias, per_element, a0, a1, k)
            return y
        return short_rows

    run_rows = entry(_bias_act_rows, code, c_array(2, dtype), b, c, 0, rows_shape[0], a0, a1, k)

    def rows(y: np.ndarray) -> np.ndarray:
        y = y if y.flags.c_contiguous else np.ascontiguousarray(y)
        run_rows(code, y.reshape(rows_shape), b, c, 0, rows_shape[0], a0, a1, k)
        return y
    return rows


def _unchanged(y: np.ndarray) -> np.ndarray:
    return y


@njit(**_JIT)
def _bias_residual_rows(code, y, res, bias, c_count, r0, r1, p0, p1, k):
    """Rows r0..r1-1 of y [N*C, inner] in place: ((y + bias[channel]) + res), then activation `code`
    (none when negative) -- a convolution's bias Add, the residual Add and the activation layers'
    operations in their order (no bias: y + res alone).  res: the same shape as y."""
    buf = np.empty(min(_ACT_CHUNK, y.shape[1]), y.dtype)
    has_bias = bias.shape[0] > 0
    for r in range(r0, r1):
        _bias_residual_span(code, y[r], res[r], bias[r % c_count] if has_bias else k[0], has_bias, buf, p0, p1, k)


@njit(**_JIT)
def _bias_residual_span(code, row, other, b, has_bias, buf, p0, p1, k):
    """row[i] = f((row[i] + b) + other[i]) in place (row[i] + other[i] without bias), chunk by chunk through
    `buf` (at least min(len, _ACT_CHUNK) values): _bias_residual_rows' operations on one row or part of one."""
    n = row.shape[0]
    for s in range(0, n, _ACT_CHUNK):
        m = min(_ACT_CHUNK, n - s)
        seg = row[s: s + m]
        part = other[s: s + m]
        staged = buf[:m]
        if has_bias:
            for i in range(m):
                staged[i] = (seg[i] + b) + part[i]
        else:
            for i in range(m):
                staged[i] = seg[i] + part[i]
        if code >= 0:
            _apply(code, staged, seg, p0, p1, k)
        else:
            _copy_in(seg, staged)


@njit(**_JIT)
def epilogue_span(code, y, res, bias, c_count, r, s0, s1, buf, p0, p1, k):
    """A fused step's epilogue (residual_rows / _bias_act_rows: + bias[r % c_count], + res, activation `code`)
    on values s0..s1-1 of row r of y [N * C, inner] in place: a thread's share of an output plane, finished
    while in its cache.  buf: epilogue_buffer's.  The same operations per element as the whole-row forms."""
    has_bias = bias.shape[0] > 0
    b = bias[r % c_count] if has_bias else k[0]
    if res.shape[0] > 0:
        _bias_residual_span(code, y[r, s0:s1], res[r, s0:s1], b, has_bias, buf, p0, p1, k)
    elif has_bias or code >= 0:
        _add_activate(code, y[r, s0:s1], bias, b, False, buf, p0, p1, k)


@njit(nogil=True, cache=True, inline="always")
def epilogue_buffer(y):
    """Scratch for epilogue_span on y's dtype (one per thread)."""
    return np.empty(_ACT_CHUNK, y.dtype)


@njit(**_JIT)
def _bias_residual_short_rows(code, y, res, bias, c_count, r0, r1, p0, p1, k):
    """_bias_residual_rows for rows of at most SHORT_ROW_MAX values (a late stage's [C, 4x4] or [C, 2x2]
    maps): as many whole rows as fit are staged, then one activation call covers them all, as
    _bias_act_short_rows does -- per row, the slices and the activation call had cost more than the row's
    arithmetic ([64, 4] with a residual: 3.7 us against ~0.3); with no activation the adds run in place.
    Same operations per element.  Loops index from 0 and the bias's two forms are two loop nests (as in
    _bias_act_short_rows: otherwise LLVM left them scalar)."""
    inner = y.shape[1]
    has_bias = bias.shape[0] > 0
    if code < 0:
        if has_bias:
            for r in range(r0, r1):
                row, other, b = y[r], res[r], bias[r % c_count]
                for i in range(inner):
                    row[i] = (row[i] + b) + other[i]
        else:
            for r in range(r0, r1):
                row, other = y[r], res[r]
                for i in range(inner):
                    row[i] = row[i] + other[i]
        return
    per = max(1, _ACT_CHUNK // inner)
    buf = np.empty(per * inner, y.dtype)
    for c0 in range(r0, r1, per):
        c1 = min(r1, c0 + per)
        if has_bias:
            for r in range(c0, c1):
                row, other, b = y[r], res[r], bias[r % c_count]
                dst = buf[(r - c0) * inner:(r - c0 + 1) * inner]
                for i in range(inner):
                    dst[i] = (row[i] + b) + other[i]
        else:
            for r in range(c0, c1):
                row, other = y[r], res[r]
                dst = buf[(r - c0) * inner:(r - c0 + 1) * inner]
                for i in range(inner):
                    dst[i] = row[i] + other[i]
        _apply(code, buf[:(c1 - c0) * inner], y[c0:c1].reshape(-1), p0, p1, k)


@njit(**_JIT, inline="always")
def residual_rows(code, y, res, bias, c_count, r0, r1, p0, p1, k):
    """Rows r0..r1-1 of y [N*C, inner] in place: ((y + bias[channel]) + res), then activation `code`: the
    short-row form for rows of at most SHORT_ROW_MAX values, else one row at a time."""
    if y.shape[1] <= SHORT_ROW_MAX:
        _bias_residual_short_rows(code, y, res, bias, c_count, r0, r1, p0, p1, k)
    else:
        _bias_residual_rows(code, y, res, bias, c_count, r0, r1, p0, p1, k)


@njit(parallel=True, **_JIT)
def _bias_residual_parallel(code, y, res, bias, c_count, p0, p1, k, tasks):
    rows = y.shape[0]
    for t in prange(tasks):
        residual_rows(code, y, res, bias, c_count, t * rows // tasks, (t + 1) * rows // tasks, p0, p1, k)


def bias_residual_plan(shape: tuple[int, ...], dtype: np.dtype, bias: np.ndarray | None, code: int,
                       p0: float = 0.0, p1: float = 0.0, after_parallel: bool = False
                       ) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """For y [N, C, *spatial] (f32/f64, C-contiguous, owned by the caller) and a residual of y's shape and
    dtype: y + bias[c] + residual, then activation `code` (-1: none), in place on y, one pass -- bit for
    bit the Add, Add and activation layers (a ResNet block's end).  Planned once per shape;
    `after_parallel` as bias_activation_plan's."""
    size = prod(shape)
    if size == 0:
        return lambda y, res: y
    n, c = shape[0], shape[1]
    rows_shape = (n * c, size // (n * c))
    b = np.zeros(0, dtype) if bias is None else bias
    ftype, k = np.dtype(dtype).type, (_K64 if dtype == np.float64 else _K32)
    a0, a1 = ftype(p0), ftype(p1)
    typed = c_array(2, dtype)
    if size >= (PARALLEL_MIN if after_parallel else parallel_min(code)) and n * c > 1:
        tasks = pool_tasks(n * c)
        run_parallel = entry(_bias_residual_parallel, code, typed, typed, b, c, a0, a1, k, tasks)

        def parallel(y: np.ndarray, res: np.ndarray) -> np.ndarray:
            res = res if res.flags.c_contiguous else np.ascontiguousarray(res)
            y = y if y.flags.c_contiguous else np.ascontiguousarray(y)
            run_parallel(code, y.reshape(rows_shape), res.reshape(rows_shape), b, c, a0, a1, k, tasks)
            return y
        return parallel
    kernel = _bias_residual_short_rows if rows_shape[1] <= SHORT_ROW_MAX else _bias_residual_rows
    run_rows = entry(kernel, code, typed, typed, b, c, 0, rows_shape[0], a0, a1, k)

    def rows(y: np.ndarray, res: np.ndarray) -> np.ndarray:
        res = res if res.flags.c_contiguous else np.ascontiguousarray(res)
        y = y if y.flags.c_contiguous else np.ascontiguousarray(y)
        run_rows(code, y.reshape(rows_shape), res.reshape(rows_shape), b, c, 0, rows_shape[0], a0, a1, k)
        return y
    return rows


@njit(**_JIT)
def _bias_act_cols(code, y, bias, r0, r1, p0, p1, k):
    """Rows r0..r1-1 of y [M, N]: += bias[column] (when bias has N values), then activation `code`
    (none when negative)."""
    buf = np.empty(min(_ACT_CHUNK, y.shape[1]), y.dtype)
    per_element = bias.shape[0] > 0
    for r in range(r0, r1):
        _add_activate(code, y[r], bias, k[0], per_element, buf, p0, p1, k)


@njit(parallel=True, **_JIT)
def _bias_act_cols_parallel(code, y, bias, p0, p1, k, tasks):
    rows = y.shape[0]
    for t in prange(tasks):
        _bias_act_cols(code, y, bias, t * rows // tasks, (t + 1) * rows // tasks, p0, p1, k)


def bias_activation_last(y: np.ndarray, bias: np.ndarray | None, code: int, p0: float = 0.0, p1: float = 0.0
                         ) -> np.ndarray:
    """In place on y [..., N] (f32 or f64, C-contiguous, owned by the caller): y + bias[n] (one value per
    last-axis position, y's dtype), then activation `code` (-1: none) -- how a MatMul's bias and
    activation arrive.  Bit-identical to the Add layer and the activation layer run one after the other."""
    if y.size == 0:
        return y
    if code < 0:
        if bias is not None:
            np.add(y, bias, out=y)  # the Add layer's own operation
        return y
    rows = y.reshape(-1, y.shape[-1])
    b = np.zeros(0, y.dtype) if bias is None else bias
    ftype, k = y.dtype.type, (_K64 if y.dtype == np.float64 else _K32)
    short = rows.shape[1] <= SHORT_ROW_MAX
    if y.size >= parallel_min(code) and rows.shape[0] > 1:
        tasks = pool_tasks(rows.shape[0])
        if short:
            _bias_act_short_parallel(code, rows, b, 1, True, ftype(p0), ftype(p1), k, tasks)
        else:
            _bias_act_cols_parallel(code, rows, b, ftype(p0), ftype(p1), k, tasks)
    elif short and b.flags.c_contiguous:
        # rows is C-contiguous (the caller's contract) and b too: the types depend on the dtypes only
        run = _SHORT_ROWS.get((y.dtype, b.dtype))
        if run is None:
            run = _SHORT_ROWS[(y.dtype, b.dtype)] = entry(_bias_act_short_rows, code, rows, b, 1, True, 0,
                                                          rows.shape[0], ftype(p0), ftype(p1), k)
        run(code, rows, b, 1, True, 0, rows.shape[0], ftype(p0), ftype(p1), k)
    elif short:
        _bias_act_short_rows(code, rows, b, 1, True, 0, rows.shape[0], ftype(p0), ftype(p1), k)
    else:
        _bias_act_cols(code, rows, b, 0, rows.shape[0], ftype(p0), ftype(p1), k)
    return y


# ---- PRelu with one slope per channel -------------------------------------------------------------


@njit(**_JIT)
def _prelu_rows(x, slope, o, c, inner, r0, r1):
    for r in range(r0, r1):
        s = slope[r % c]
        base = r * inner
        for i in range(inner):
            v = x[base + i]
            o[base + i] = v * s if v < 0 else v


@njit(parallel=True, **_JIT)
def _prelu_parallel(x, slope, o, c, inner, rows_per_task):
    rows = x.shape[0] // inner
    for t in prange((rows + rows_per_task - 1) // rows_per_task):
        _prelu_rows(x, slope, o, c, inner, t * rows_per_task, min(rows, (t + 1) * rows_per_task))


@njit(**_JIT)
def _prelu_half_rows(kind, x, slope, o, c, inner, r0, r1):
    buf = np.empty((r1 - r0) * inner, np.float32)
    _decode(kind, x[r0 * inner: r1 * inner], buf)
    for r in range(r0, r1):
        s = slope[r % c]
        base = (r - r0) * inner
        for i in range(inner):
            v = buf[base + i]
            buf[base + i] = v * s if v < 0 else v
    _encode(kind, buf, o[r0 * inner: r1 * inner])


@njit(parallel=True, **_JIT)
def _prelu_half_parallel(kind, x, slope, o, c, inner, rows_per_task):
    rows = x.shape[0] // inner
    for t in prange((rows + rows_per_task - 1) // rows_per_task):
        _prelu_half_rows(kind, x, slope, o, c, inner, t * rows_per_task, min(rows, (t + 1) * rows_per_task))


@njit(**_JIT)
def _prelu_half_serial(kind, x, slope, o, c, inner, rows_per_task):
    rows = x.shape[0] // inner
    for r0 in range(0, rows, rows_per_task):
        _prelu_half_rows(kind, x, slope, o, c, inner, r0, min(rows, r0 + rows_per_task))


def prelu_channel(x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """PRelu of x ([N, C, ...] or [C]) with slope [C] along axis 1 (axis 0 for rank 1); fresh array."""
    dt = x.dtype
    out = OUTPUTS.empty(x.shape, dt)
    if out.size == 0:
        return out
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    inner = out.size // (x.shape[0] * c) if x.ndim > 1 else 1
    rows_per_task = max(1, BLOCK // max(inner, 1))
    xf = np.ascontiguousarray(x).reshape(-1)
    of = out.reshape(-1)
    if dt == np.float64 or dt == np.float32:
        s = np.ascontiguousarray(slope, dtype=dt).reshape(-1)
        if out.size >= PARALLEL_MIN:
            _prelu_parallel(xf, s, of, c, inner, rows_per_task)
        else:
            _prelu_rows(xf, s, of, c, inner, 0, out.size // inner)
        return out
    kind = 1 if dt == np.float16 else 2
    s = np.asarray(slope).astype(np.float32).reshape(-1)
    run = _prelu_half_parallel if out.size >= PARALLEL_MIN else _prelu_half_serial
    run(kind, xf.view(np.uint16), s, of.view(np.uint16), c, inner, rows_per_task)
    return out
