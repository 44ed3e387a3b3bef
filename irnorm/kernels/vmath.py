"""exp, expm1, erf, tanh, log, sin, cos, tan and atan that vectorize, for float32 data inside Numba kernels.

This Numba/llvmlite build has no SVML, so ``math.exp`` and ``math.erf`` are scalar libm calls that
stop LLVM from vectorizing the loop around them: 2-5 ns per element for exp, 10-16 ns for erf, the
whole cost of a softmax, sigmoid, Swish, Gelu, Tanh, Log, SoftPlus, Elu or a trigonometric op.  The float32
versions here are straight-line arithmetic with no calls and no branches (clamps are selects), so a
loop of them vectorizes to AVX2/AVX-512 lanes:

* ``vexp``: Cephes' expf scheme -- ``x = n ln2 + r`` with ``n`` rounded to nearest by the 1.5 * 2**23
  trick, ln2 split in two for an exact ``r``, a degree-6 polynomial for ``e**r``, and ``2**n`` built
  from exponent bits in two halves so results down into the subnormals and overflow to inf come out
  right.  Within 1 ulp of the correctly rounded result over the whole float32 range (measured against
  float64 ``exp`` over 2M points, tests/test_vmath.py); inf, -inf, NaN, overflow and underflow as libm.
* ``vexpm1``: ``e**x - 1`` -- the Taylor series to ``x**9 / 9!`` below ``|x| = 1/2`` (no cancellation),
  ``vexp(x) - 1`` beyond; within 2 ulp (1.69 measured); -0.0 kept.  libm's ``expm1f`` cost ~11 ns an
  element here (Elu, Selu on negative inputs).
* ``vtanh``: Cephes' tanhf scheme -- an odd polynomial ``x + x**3 P(x**2)`` below 0.625, ``1 - 2 /
  (e**2|x| + 1)`` (with ``vexp``) above, both computed and one selected; within 1.5 ulp (1.29 measured,
  just above 0.625); +-0 and NaN as they are, +-1 from 9.1 on.  libm's ``tanhf`` as Numba calls it took
  ~29 ns an element here, the Tanh op's whole cost.
* ``vlog``: Cephes' logf scheme -- the exponent and a mantissa in [sqrt(1/2), sqrt(2)) from the bits
  (subnormals scaled up first), a degree-8 polynomial, ln2 split in two; within 1 ulp (0.82 measured);
  -inf at +-0, NaN below 0, inf at inf.  ``vlog1p``: ``log(w) * x / (w - 1)`` with ``w = 1 + x`` rounded
  (the quotient undoes w's rounding, so tiny x keep their accuracy); within 2.5 ulp (2.35 measured).  libm's
  ``logf`` / ``log1pf`` cost 4-14 ns an element here (Log, SoftPlus).
* ``vsin`` / ``vcos``: Cephes' sinf / cosf scheme -- ``x = j pi/2 + r`` with j rounded to nearest by the
  1.5 * 2**23 trick (its low bits, the quadrant, read from the sum's bits), r by three FMAs with pi/2 in
  three float32 parts (the first step exact), Cephes' sin and cos polynomials on [-pi/4, pi/4], both
  computed and +-sin(r) or +-cos(r) selected by quadrant.  Accurate for |x| < ``TRIG_MAX`` = 2**19:
  over every float32 below it (both signs) sin is within 1.58 ulp, cos 1.57 (measured against float64);
  past it j times the split's residue and the roundings of the last two steps grow (2.1 ulp below 2**21,
  5.3 below 2**22, thousands beyond), so callers send larger |x| to libm (the Sin / Cos kernel checks each
  block first: kernels/activation.py).  Odd and even to the bit; -0.0 stays -0.0 in sin; inf and NaN give
  NaN.  libm's ``sinf`` / ``cosf`` cost ~4 ns an element here, 0.17 vectorized.
* ``vtan``: in float64 from the float32 argument (tan magnifies the remainder's relative error up to
  pi/2-fold and the odd quadrants' ``-1 / tan(r)`` adds a rounding; Cephes' float32 tanf was 2.8 ulp off
  here below 2**12, 5.4 below 2**19): ``x = j pi/2 + r`` with pi/2 in two float64 parts, Cephes' double
  tan ``r + r z P(z) / Q(z)`` written as one quotient ``n / d``, or ``-d / n`` in the odd quadrants,
  rounded to float32 once: 0.5 ulp over every float32 below ``TRIG_MAX`` (the same bound and fall-back as
  sin).  libm's ``tanf`` ~8.5 ns an element, 0.41 vectorized.
* ``vatan``: Cephes' atanf scheme -- ``pi/2 + atan(-1/|x|)`` above tan(3pi/8), ``pi/4 + atan((|x| - 1) /
  (|x| + 1))`` above tan(pi/8), ``atan(|x|)`` below: one quotient of selected operands (in the middle range
  corrected for the roundings of ``|x| -+ 1`` and its own, which otherwise cost 2.3 ulp where pi/4 +
  atan(t) cancels), the odd polynomial, pi/2 or pi/4 added in two parts, x's sign bit put back; within
  1.5 ulp over every float32 (1.47 measured, just above tan(pi/8)), +-pi/2 at +-inf, -0.0 kept.  libm's
  ``atanf`` ~4.2 ns an element, 0.30 vectorized.
* ``verf``: the rational approximation ``x P(x**2) / Q(x**2)`` on [-4, 4] that Eigen and XLA use for
  float32 (erf is +-1 in float32 beyond 4); within 8 ulp (7.5 measured, near +-1), also relative
  to tiny results; NaN stays NaN.

The polynomial and range-reduction steps are explicit fused multiply-adds (``_fma``, LLVM's
``llvm.fma`` intrinsic: one rounding, as IEEE 754 defines it; every polynomial is one ``_horner`` over a
tuple of float32 coefficients, a straight-line chain of them), never fastmath contraction (which lets
LLVM decide per CPU which products fuse, so results would depend on the CPU); an explicit FMA rounds
the same everywhere (a CPU without FMA instructions gets libm's ``fmaf``: slower, the same bits).
Against a multiply and an add per step the FMA form is ~25% faster (AVX2 EPYC: 16.9K exps 15-19 ->
12-14 us).  float64 arguments take libm (``math.exp`` / ``math.erf`` / ``math.sin`` ...): f64 data keeps
full double accuracy.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir as llvm_ir

from .jit import intrinsic, njit, overload, types

_I32 = llvm_ir.IntType(32)


@intrinsic
def _pow2(typingctx, n):
    """2.0**n as float32 for an int32 n in [-126, 127], from the exponent bits."""
    def codegen(context, builder, signature, args):
        bits = builder.shl(builder.add(args[0], llvm_ir.Constant(_I32, 127)), llvm_ir.Constant(_I32, 23))
        return builder.bitcast(bits, llvm_ir.FloatType())

    return types.float32(types.int32), codegen


@intrinsic
def _bits(typingctx, x):
    """A float32's bits as an int32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], _I32)

    return types.int32(types.float32), codegen


@intrinsic
def _from_bits(typingctx, i):
    """The float32 whose bits are the int32 i."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], llvm_ir.FloatType())

    return types.float32(types.int32), codegen


_FLOATS = {types.float32: llvm_ir.FloatType(), types.float64: llvm_ir.DoubleType()}


def _llvm_fma(builder, ty):
    f = _FLOATS[ty]
    return builder.module.declare_intrinsic("llvm.fma", [f], llvm_ir.FunctionType(f, [f, f, f]))


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (three float32 or three float64), as llvm.fma: a vector FMA instruction on
    every AVX2 CPU."""
    if a not in _FLOATS or not b == c == a:
        return None

    def codegen(context, builder, signature, args):
        return builder.call(_llvm_fma(builder, a), args)

    return a(a, a, a), codegen


@intrinsic
def _horner(typingctx, x, coeffs):
    """coeffs[0] x**n + coeffs[1] x**(n-1) + ... + coeffs[n] for a float32 (float64) x and a tuple of n + 1
    float32 (float64) coefficients (highest power first), as Horner's n steps ``p = _fma(p, x, c)``:
    straight-line llvm.fma calls on the tuple's elements, as the steps written out one by one would be."""
    if x not in _FLOATS or not (isinstance(coeffs, types.UniTuple) and coeffs.dtype == x and coeffs.count >= 2):
        return None

    def codegen(context, builder, signature, args):
        fma = _llvm_fma(builder, x)
        t, cs = args
        p = builder.extract_value(cs, 0)
        for k in range(1, coeffs.count):
            p = builder.call(fma, [p, t, builder.extract_value(cs, k)])
        return p

    return x(x, coeffs), codegen


_F = np.float32
# exp: clamp range (below -104 the result rounds to 0, above 89 it is inf), log2(e), the rounding
# constant 1.5 * 2**23, ln2 = _LN2_HI + _LN2_LO with _LN2_HI exact in 8 bits, Cephes' polynomial
_EXP_LO, _EXP_HI, _LOG2E, _ROUND = _F(-104.0), _F(89.0), _F(1.44269504088896341), _F(12582912.0)
_LN2_HI, _LN2_LO = _F(0.693359375), _F(-2.12194440e-4)
_EXP_P = (_F(1.9875691500e-4), _F(1.3981999507e-3), _F(8.3334519073e-3), _F(4.1665795894e-2), _F(1.6666665459e-1),
          _F(5.0000001201e-1))
_ZERO, _ONE, _TWO, _FOUR = _F(0.0), _F(1.0), _F(2.0), _F(4.0)
# log: Cephes' logf polynomial (t**8 first), sqrt(1/2), the smallest normal float32, 2**25, inf, NaN
_LOG_P = (
    _F(7.0376836292e-2), _F(-1.1514610310e-1), _F(1.1676998740e-1), _F(-1.2420140846e-1), _F(1.4249322787e-1),
    _F(-1.6668057665e-1), _F(2.0000714765e-1), _F(-2.4999993993e-1), _F(3.3333331174e-1))
_SQRTHF, _F32_TINY, _TWO25, _HALF = _F(0.707106781186547524), _F(1.17549435e-38), _F(33554432.0), _F(0.5)
_INF, _NAN = _F(np.inf), _F(np.nan)
# expm1: 1/9!, 1/8!, ..., 1/3!, 1/2 (the series' coefficients, x**9 first)
_EXPM1_P = tuple(_F(1 / math.factorial(k)) for k in range(9, 1, -1))
# tanh: where the polynomial ends, where float32 tanh is +-1, Cephes' tanhf coefficients (x**9 first)
_TANH_SPLIT, _TANH_HI = _F(0.625), _F(10.0)
_TANH_P = (_F(-5.70498872745e-3), _F(2.06390887954e-2), _F(-5.37397155531e-2), _F(1.33314422036e-1),
           _F(-3.33332819422e-1))
# erf: numerator (odd powers, x**13 first) and denominator (even powers, x**8 first)
_ERF_P = tuple(_F(c) for c in (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
                                -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
                                -1.60960333262415e-02))
_ERF_Q = tuple(_F(c) for c in (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
                                -7.37332916720468e-03, -1.42647390514189e-02))
# sin, cos: 2/pi, pi/2 = _PIO2_1 + _PIO2_2 + _PIO2_3 (each the float32 nearest what the ones before leave),
# Cephes' sinf and cosf polynomials on [-pi/4, pi/4] (in z = r**2, highest power first), where the float32
# reduction holds (TRIG_MAX)
_TWO_OVER_PI = _F(0.636619772367581343)
_PIO2_1, _PIO2_2, _PIO2_3 = _F(1.5707964), _F(-4.371139e-08), _F(-1.7151245e-15)
_SIN_P = (_F(-1.9515295891e-4), _F(8.3321608736e-3), _F(-1.6666654611e-1))
_COS_P = (_F(2.443315711809948e-5), _F(-1.388731625493765e-3), _F(4.166664568298827e-2))
# tan, in float64: 2/pi, the 1.5 * 2**52 rounding constant, pi/2 in two float64 parts, Cephes' double tan
# rational function tan(r) = r + r z P(z) / Q(z) on [-pi/4, pi/4] (z**2 / z**4 first, Q's leading 1 written)
_TWO_OVER_PI_64, _ROUND_64 = 0.6366197723675814, 6755399441055744.0
_PIO2_64_1, _PIO2_64_2 = 1.5707963267948966, 6.123233995736766e-17
_TAN_P64 = (-1.30936939181383777646e4, 1.15351664838587416140e6, -1.79565251976484877988e7)
_TAN_Q64 = (1.0, 1.36812963470692954678e4, -1.32089234440210967447e6, 2.50083801823357915839e7,
            -5.38695755929454629881e7)
# atan: Cephes' atanf polynomial (z**3 first), its split points
_ATAN_P = (_F(8.05374449538e-2), _F(-1.38776856032e-1), _F(1.99777106478e-1), _F(-3.33329491539e-1))
_TAN_3PI_8, _TAN_PI_8 = _F(2.414213562373095), _F(0.4142135623730950)
TRIG_MAX = _F(524288.0)  # 2**19: vsin / vcos are accurate below; callers take libm for larger |x|


def _jit_only(name: str, what: str):
    """A function for Numba kernels to call, typed by the overload _float32_or_libm gives it below."""
    def f(x):  # pragma: no cover - only the overload is ever called (inside jitted code)
        raise NotImplementedError
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"{what}: vectorizable for float32, libm for float64."
    return f


vexp = _jit_only("vexp", "e**x")
vexp_sat = _jit_only("vexp_sat", "e**x where only 1 + e**x is used and a NaN x is carried by the caller: exact to "
                                 "vexp's bits from -86 on (below, 1 + either is 1), NaN gives a finite value")
verf = _jit_only("verf", "erf(x)")
vlog = _jit_only("vlog", "log(x)")
vlog1p = _jit_only("vlog1p", "log(1 + x)")
vexpm1 = _jit_only("vexpm1", "e**x - 1")
vtanh = _jit_only("vtanh", "tanh(x)")
vsin = _jit_only("vsin", "sin(x) (float32: |x| < TRIG_MAX only)")
vcos = _jit_only("vcos", "cos(x) (float32: |x| < TRIG_MAX only)")
vtan = _jit_only("vtan", "tan(x) (float32: |x| < TRIG_MAX only)")
vatan = _jit_only("vatan", "atan(x)")


def _exp32(x):
    xc = x if x > _EXP_LO else _EXP_LO  # selects, not branches; NaN falls through to the last line
    xc = xc if xc < _EXP_HI else _EXP_HI
    n = _fma(xc, _LOG2E, _ROUND) - _ROUND  # round to nearest
    r = _fma(-n, _LN2_HI, xc)
    r = _fma(-n, _LN2_LO, r)
    p = _horner(r, _EXP_P)
    p = p * r * r + r + _ONE  # (the last step unfused: 0.975 ulp at most, fused 1.005)
    ni = np.int32(n)
    half = ni >> np.int32(1)  # 2**n in two factors: n in [-150, 128] reaches subnormals and inf
    y = p * _pow2(half) * _pow2(ni - half)
    return y if x == x else x


# exp_sat's clamp: below -86 (e**x < 2**-124) 1 + e**x is 1 in float32 whatever e**x is; from 89 on it is inf
_SAT_LO, _SAT_HI = _F(-86.0), _F(89.0)


def _exp_sat32(x):
    # _exp32's steps on x clamped to [-86, 89]: n in [-124, 128], so 2**n is 2**(n - 1) (a normal float32)
    # times 2, both exact scalings as _exp32's two factors are; NaN clamps to -86 (the callers' numerators carry
    # it).  No select for NaN and a clamp from 2**n's own range: fewer vector instructions than _exp32
    xc = x if x > _SAT_LO else _SAT_LO
    xc = xc if xc < _SAT_HI else _SAT_HI
    n = _fma(xc, _LOG2E, _ROUND) - _ROUND
    r = _fma(-n, _LN2_HI, xc)
    r = _fma(-n, _LN2_LO, r)
    p = _horner(r, _EXP_P)
    p = p * r * r + r + _ONE
    return p * _pow2(np.int32(n) - np.int32(1)) * _TWO


def _erf32(x):
    xc = x if x > -_FOUR else -_FOUR
    xc = xc if xc < _FOUR else _FOUR
    x2 = xc * xc
    y = xc * _horner(x2, _ERF_P) / _horner(x2, _ERF_Q)
    return y if x == x else x


def _expm1_32(x):
    # |x| < 1/2: the Taylor series to x**9 / 9! (truncated below 2e-9 relative), no cancellation; beyond:
    # e**x - 1, where the difference loses less than an ulp
    p = _horner(x, _EXPM1_P)
    small = _fma(p * x, x, x)
    big = vexp(x) - _ONE
    a = x if x >= _ZERO else -x
    y = small if a < _HALF else big
    return y if a != _ZERO else x  # -0.0 stays -0.0


def _tanh32(x):
    a = x if x >= _ZERO else -x
    # |x| >= 0.625: 1 - 2 / (e**2|x| + 1) with the sign of x (no cancellation: the result is > 0.55);
    # from 9.01 on it rounds to 1 in float32, so the argument of exp is clamped at 10 (inf gives +-1)
    e = vexp(_TWO * (a if a < _TANH_HI else _TANH_HI))
    big = _ONE - _TWO / (e + _ONE)
    big = big if x >= _ZERO else -big
    # below: Cephes' odd polynomial x + x**3 P(x**2); +-0 returned as they are (the sum would make -0 +0)
    s = x * x
    p = _horner(s, _TANH_P)
    y = _fma(p * s, x, x) if a < _TANH_SPLIT else big
    return y if a != _ZERO and x == x else x


def _log32(x):
    # subnormals scaled into the normal range first, so the exponent bits give the exponent
    tiny = x < _F32_TINY
    xs = x * _TWO25 if tiny else x
    i = _bits(xs)
    e = ((i >> np.int32(23)) & np.int32(0xFF)) - np.int32(126) - (np.int32(25) if tiny else np.int32(0))
    m = _from_bits((i & np.int32(0x007FFFFF)) | np.int32(0x3F000000))  # xs = m * 2**e, m in [0.5, 1)
    low = m < _SQRTHF  # Cephes: m in [sqrt(1/2), sqrt(2)) around 1, the exponent adjusted
    e = e - (np.int32(1) if low else np.int32(0))
    t = (m + m if low else m) - _ONE
    z = t * t
    p = _horner(t, _LOG_P)
    fe = np.float32(e)
    y = _fma(fe, _LN2_LO, p * t * z)
    y = _fma(-_HALF, z, y)
    r = _fma(fe, _LN2_HI, t + y)
    r = -_INF if x == _ZERO else r
    r = _NAN if x < _ZERO else r
    return x if x == _INF or x != x else r


def _log1p32(x):
    # log(1 + x) = log(w) * x / (w - 1) with w = 1 + x rounded: the quotient corrects w's rounding, so
    # tiny x keep their relative accuracy (w == 1: x itself)
    w = x + _ONE
    d = w - _ONE
    r = vlog(w) * (x / (d if d != _ZERO else _ONE))
    r = x if d == _ZERO else r
    return x if x == _INF else r


@njit(nogil=True, cache=True, inline="always")
def _reduce_half_pi(x):
    """(r, q) with x = j pi/2 + r for float32 x, |x| < TRIG_MAX: j the nearest integer (the 1.5 * 2**23
    trick), q an int32 whose low two bits are j's (those of the rounding sum's bits), r by three FMAs with
    the three parts of pi/2 (the first exact).  inf and NaN give a NaN r."""
    jr = _fma(x, _TWO_OVER_PI, _ROUND)
    j = jr - _ROUND
    r = _fma(-j, _PIO2_1, x)
    r = _fma(-j, _PIO2_2, r)
    return _fma(-j, _PIO2_3, r), _bits(jr)


@njit(nogil=True, cache=True, inline="always")
def _sin_quadrant(x, q0):
    """sin(x + q0 pi/2) for float32 x, |x| < TRIG_MAX, q0 an int32: +-sin(r) or +-cos(r) by quadrant
    j + q0, both polynomials computed and one selected.  inf and NaN give NaN."""
    r, q = _reduce_half_pi(x)
    q = q + q0
    z = r * r
    s = _fma(_horner(z, _SIN_P) * z, r, r)
    c = _fma(_horner(z, _COS_P) * z, z, _fma(-_HALF, z, _ONE))
    y = c if q & np.int32(1) else s
    return -y if q & np.int32(2) else y


def _sin32(x):
    y = _sin_quadrant(x, np.int32(0))
    return y if x != _ZERO else x  # -0.0 stays -0.0


def _cos32(x):
    return _sin_quadrant(x, np.int32(1))


def _tan32(x):
    # in float64 (tan magnifies r's relative error up to pi/2-fold, and the odd quadrants' -1 / tan(r) adds
    # a rounding: a float32 evaluation was 2.8 ulp off below 2**12, 5.4 below 2**19): x = j pi/2 + r with r
    # to float64 accuracy, tan(r) = n / d with n = r (Q + z P), d = Q, -1 / tan(r) = -d / n in odd quadrants
    # (one quotient of selected operands), rounded to float32 once
    xd = np.float64(x)
    j = _fma(xd, _TWO_OVER_PI_64, _ROUND_64) - _ROUND_64
    r = _fma(-j, _PIO2_64_1, xd)
    r = _fma(-j, _PIO2_64_2, r)
    z = r * r
    d = _horner(z, _TAN_Q64)
    n = r * _fma(z, _horner(z, _TAN_P64), d)
    odd = (np.int32(j if abs(j) < 1e9 else 0.0) & np.int32(1)) != np.int32(0)  # inf, NaN: r is NaN anyway
    return np.float32((-d if odd else n) / (n if odd else d))


def _atan32(x):
    # Cephes: |x| > tan(3pi/8): pi/2 + atan(-1/|x|); > tan(pi/8): pi/4 + atan((|x| - 1) / (|x| + 1)); else
    # atan(|x|): one quotient from selected operands, the odd polynomial, pi/2 or pi/4 added in two parts;
    # the sign of x put back into the bits (-0.0 stays -0.0, NaN stays NaN)
    a = x if x >= _ZERO else -x
    big = a > _TAN_3PI_8
    mid = a > _TAN_PI_8
    # between the split points: the quotient of num + num_lo and den + den_lo, with the rounding errors of
    # a - 1 and a + 1 (exact, Fast2Sum: the larger operand first), corrected by the quotient's exact residual,
    # so t keeps its last bits where pi/4 + atan(t) cancels (just above tan(pi/8): 2.3 ulp without)
    num = -_ONE if big else (a - _ONE if mid else a)
    den = a if big else (a + _ONE if mid else _ONE)
    small = a < _ONE
    num_lo = a - (num + _ONE) if small else _ZERO  # a >= 1: a - 1 is exact
    den_lo = a - (den - _ONE) if small else _ONE - (den - a)
    t0 = num / den
    corr = (_fma(-t0, den, num) + _fma(-t0, den_lo, num_lo)) / den
    t = t0 + corr if mid != big else t0  # (big: -1 / a is one rounding already; a = inf would give NaN)
    hi = _PIO2_1 if big else (_HALF * _PIO2_1 if mid else _ZERO)
    lo = _PIO2_2 if big else (_HALF * _PIO2_2 if mid else _ZERO)
    z = t * t
    y = hi + (_fma(_horner(z, _ATAN_P) * z, t, t) + lo)
    return _from_bits(_bits(y) | (_bits(x) & np.int32(-0x80000000)))


def _float32_or_libm(func, f32_impl, libm) -> None:
    """Overload `func`: the vectorizable `f32_impl` for float32 arguments, the libm function otherwise."""
    @overload(func)
    def _impl(x):
        if x == types.float32:
            return f32_impl
        if isinstance(x, types.Float):
            return lambda x: libm(x)
        return None


_float32_or_libm(vexp, _exp32, math.exp)
_float32_or_libm(vexp_sat, _exp_sat32, math.exp)
_float32_or_libm(verf, _erf32, math.erf)
_float32_or_libm(vtanh, _tanh32, math.tanh)
_float32_or_libm(vlog, _log32, math.log)
_float32_or_libm(vexpm1, _expm1_32, math.expm1)
_float32_or_libm(vlog1p, _log1p32, math.log1p)
_float32_or_libm(vsin, _sin32, math.sin)
_float32_or_libm(vcos, _cos32, math.cos)
_float32_or_libm(vtan, _tan32, math.tan)
_float32_or_libm(vatan, _atan32, math.atan)
