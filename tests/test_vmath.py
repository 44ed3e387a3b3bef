"""kernels/vmath.py: the vectorizable float32 exp, expm1, erf, tanh, log, log1p, sin, cos, tan and atan, against
float64 libm over their whole range (sin, cos and tan: below TRIG_MAX), with the special values; float64 arguments
keep libm exactly; the kernels built on them (softmax, sigmoid, Swish, Exp, Erf, the erf Gelu) against float64
formulas (the tanh Gelu and Mish: tests/test_ops_activation.py's one-exp test; Sin, Cos, Tan and Atan: its test
against float64)."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from numba import njit

from irnorm.kernels import vmath
from irnorm.kernels.vmath import (
    TRIG_MAX,
    vatan,
    vcos,
    verf,
    vexp,
    vexp_sat,
    vexpm1,
    vlog,
    vlog1p,
    vsin,
    vtan,
    vtanh,
)

F32 = np.finfo(np.float32)


def _loop(fn):
    """A jitted loop applying `fn` (one of vmath's functions) to every element."""
    @njit(error_model="numpy")
    def run(x, o):
        for i in range(x.shape[0]):
            o[i] = fn(x[i])
    return run


_exp_loop = _loop(vexp)
_erf_loop = _loop(verf)
_tanh_loop = _loop(vtanh)
_log_loop = _loop(vlog)
_log1p_loop = _loop(vlog1p)
_expm1_loop = _loop(vexpm1)
_sin_loop = _loop(vsin)
_cos_loop = _loop(vcos)
_tan_loop = _loop(vtan)
_atan_loop = _loop(vatan)


def _ulps(got: np.ndarray, ref64: np.ndarray) -> np.ndarray:
    """|got - exact| in units of the last place of the float32 result (normal results only)."""
    with np.errstate(over="ignore"):
        r32 = ref64.astype(np.float32)
    return np.abs(got.astype(np.float64) - ref64) / np.spacing(np.abs(r32)).astype(np.float64)


def test_exp_within_one_ulp_over_the_float32_range():
    x = np.linspace(-110.0, 95.0, 4_000_001, dtype=np.float32)
    got = np.empty_like(x)
    _exp_loop(x, got)
    ref = np.exp(x.astype(np.float64))
    normal = (ref > F32.tiny) & (ref < F32.max)
    assert _ulps(got[normal], ref[normal]).max() < 1.0
    # subnormal results: within one subnormal step; past the largest float32: inf; far below: 0
    sub = (ref <= F32.tiny) & (ref > 0)
    assert np.abs(got[sub].astype(np.float64) - ref[sub]).max() <= float(np.finfo(np.float32).smallest_subnormal)
    assert np.all(np.isinf(got[ref >= 2.0 ** 128]))
    assert np.all(got[x < -104.0] == 0)


def test_exp_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 88.72283, 88.72284, -87.33655, 1e-30, -1e-30], np.float32)
    got = np.empty_like(x)
    _exp_loop(x, got)
    assert got[0] == 1 and got[1] == 1 and got[2] == np.inf and got[3] == 0 and np.isnan(got[4])
    assert np.isfinite(got[5]) and got[6] == np.inf  # the largest float32 result, then overflow
    assert got[7] > 0 and got[8] == 1 and got[9] == 1


@njit(error_model="numpy")
def _ratios(x, beta, old, new, sat):
    """v / (1 + e**(-beta v)) (Swish's form) by vexp and by vexp_sat, and vexp_sat itself."""
    one = np.float32(1.0)
    for i in range(x.shape[0]):
        v = x[i]
        old[i] = v / (one + vexp(-beta * v))
        new[i] = v / (one + vexp_sat(-beta * v))
        sat[i] = vexp_sat(v)


def test_exp_sat_gives_the_bits_of_exp_where_one_plus_it_is_used():
    """vexp_sat (the Swish and tanh-Gelu exp: argument clamped to [-86, 89], no NaN select) is vexp's bits on
    [-86, 89), inf from 89 on, and in the ratio x / (1 + e**(-beta x)) the bits of vexp's everywhere: below -86
    both sums round to 1, NaN and +-inf come out as before."""
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 87.0, -87.0, 88.72283, 88.72284, 89.0, -89.0, -104.0,
                         -150.0, 150.0, F32.max, -F32.max, F32.tiny, -F32.tiny], np.float32)
    x = np.concatenate([np.linspace(-200.0, 200.0, 2_000_001, dtype=np.float32), specials])
    for beta in (1.0, 0.5, 1.702, 3.0, -1.0):
        old, new, sat = np.empty_like(x), np.empty_like(x), np.empty_like(x)
        _ratios(x, np.float32(beta), old, new, sat)
        np.testing.assert_array_equal(new.view(np.int32), old.view(np.int32))
    ref = np.empty_like(x)
    _exp_loop(x, ref)
    inside = (x >= -86.0) & (x < 89.0)
    np.testing.assert_array_equal(sat[inside].view(np.int32), ref[inside].view(np.int32))
    assert np.all(np.isinf(sat[x >= 89.0])) and np.all(sat[x < -86.0] == sat[x == -86.0][0])


def test_erf_accuracy_and_special_values():
    x = np.concatenate([np.linspace(-6.0, 6.0, 1_000_001, dtype=np.float32),
                        np.logspace(-37, 0, 20_001).astype(np.float32),
                        -np.logspace(-37, 0, 20_001).astype(np.float32)])
    got = np.empty_like(x)
    _erf_loop(x, got)
    ref = np.array([math.erf(float(v)) for v in x])
    assert np.abs(got - ref).max() < 5e-7  # absolute: near +-1 a few float32 ulps
    normal = np.abs(ref) > F32.tiny
    assert _ulps(got[normal], ref[normal]).max() < 8  # relative, also near 0 where erf(x) ~ 2x/sqrt(pi)
    assert np.array_equal(np.sign(got), np.sign(ref))
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 4.0, 100.0], np.float32)
    out = np.empty_like(sp)
    _erf_loop(sp, out)
    assert out[0] == 0 and math.copysign(1, out[1]) == -1 and out[2] == 1 and out[3] == -1
    assert np.isnan(out[4]) and out[5] == 1 and out[6] == 1


def test_tanh_within_one_and_a_half_ulp_and_special_values():
    """Both formulas (the polynomial below 0.625, 1 - 2 / (e**2|x| + 1) above) and the switch between them,
    the tiny arguments (tanh x = x) and the saturation at +-1."""
    x = np.concatenate([np.linspace(-12.0, 12.0, 2_000_001, dtype=np.float32),
                        np.linspace(0.6, 0.65, 100_001, dtype=np.float32),
                        np.logspace(-40, 1, 100_001).astype(np.float32),
                        -np.logspace(-40, 1, 100_001).astype(np.float32)])
    got = np.empty_like(x)
    _tanh_loop(x, got)
    ref = np.tanh(x.astype(np.float64))
    normal = np.abs(ref) > F32.tiny
    assert _ulps(got[normal], ref[normal]).max() < 1.5
    assert np.array_equal(got[~normal], x[~normal])  # subnormal arguments come back as they are
    assert np.all(np.abs(got) <= 1) and np.array_equal(np.sign(got), np.sign(x))
    assert np.all(np.abs(got[np.abs(x) >= 9.1]) == 1)  # where float32 tanh rounds to +-1
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 100.0, -3e38, 1e-30], np.float32)
    out = np.empty_like(sp)
    _tanh_loop(sp, out)
    assert out[0] == 0 and math.copysign(1, out[0]) == 1 and out[1] == 0 and math.copysign(1, out[1]) == -1
    assert out[2] == 1 and out[3] == -1 and np.isnan(out[4]) and out[5] == 1 and out[6] == -1
    assert out[7] == np.float32(1e-30)


def test_log_within_one_ulp_and_special_values():
    """Normal and subnormal arguments over the whole positive range, densely around 1 (where the result
    is small); -inf at +-0, NaN below 0 and for NaN, inf at inf."""
    x = np.concatenate([np.logspace(-45, 38.5, 2_000_001).astype(np.float32),
                        np.linspace(0.5, 2.0, 1_000_001, dtype=np.float32)])
    x = x[x > 0]
    got = np.empty_like(x)
    _log_loop(x, got)
    ref = np.log(x.astype(np.float64))
    nonzero = ref != 0
    assert _ulps(got[nonzero], ref[nonzero]).max() < 1.0
    assert np.all(got[~nonzero] == 0)
    sp = np.array([0.0, -0.0, -1.0, -np.inf, np.inf, np.nan, F32.max, F32.smallest_subnormal], np.float32)
    out = np.empty_like(sp)
    _log_loop(sp, out)
    assert out[0] == -np.inf and out[1] == -np.inf and np.isnan(out[2]) and np.isnan(out[3])
    assert out[4] == np.inf and np.isnan(out[5])
    assert out[6] == np.float32(math.log(float(F32.max))) and out[7] == np.float32(math.log(2.0 ** -149))


def test_log1p_within_two_and_a_half_ulp_and_special_values():
    """log(1 + x) keeps tiny x's relative accuracy (the rounding of 1 + x corrected); -inf at -1, NaN
    below."""
    x = np.concatenate([np.logspace(-45, 38, 1_000_001).astype(np.float32),
                        -np.logspace(-45, -1e-7, 1_000_001).astype(np.float32),
                        np.linspace(-0.999, 10.0, 1_000_001, dtype=np.float32)])
    got = np.empty_like(x)
    _log1p_loop(x, got)
    ref = np.log1p(x.astype(np.float64))
    normal = np.abs(ref) > F32.tiny
    assert _ulps(got[normal], ref[normal]).max() < 2.5
    assert np.array_equal(got[~normal], x[~normal])  # log1p(x) = x where that is subnormal
    sp = np.array([0.0, -0.0, -1.0, -2.0, np.inf, -np.inf, np.nan, 1e-30], np.float32)
    out = np.empty_like(sp)
    _log1p_loop(sp, out)
    assert out[0] == 0 and math.copysign(1, out[1]) == -1 and out[2] == -np.inf and np.isnan(out[3])
    assert out[4] == np.inf and np.isnan(out[5]) and np.isnan(out[6]) and out[7] == np.float32(1e-30)


def test_expm1_within_two_ulp_and_special_values():
    """The series below |x| = 1/2 (tiny x keep their relative accuracy), e**x - 1 beyond, overflow to inf,
    -1 far below."""
    x = np.concatenate([np.linspace(-110.0, 89.0, 2_000_001, dtype=np.float32),
                        np.linspace(-1.0, 1.0, 1_000_001, dtype=np.float32),
                        np.logspace(-45, 0, 100_001).astype(np.float32),
                        -np.logspace(-45, 0, 100_001).astype(np.float32)])
    got = np.empty_like(x)
    _expm1_loop(x, got)
    with np.errstate(over="ignore"):
        ref = np.expm1(x.astype(np.float64))
    normal = (np.abs(ref) > F32.tiny) & (np.abs(ref) < F32.max)
    assert _ulps(got[normal], ref[normal]).max() < 2.0
    assert np.array_equal(got[np.abs(ref) <= F32.tiny], x[np.abs(ref) <= F32.tiny])
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 89.0, -200.0], np.float32)
    out = np.empty_like(sp)
    _expm1_loop(sp, out)
    assert out[0] == 0 and math.copysign(1, out[1]) == -1 and out[2] == np.inf and out[3] == -1
    assert np.isnan(out[4]) and out[5] == np.inf and out[6] == -1


PI = Fraction("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534")


def test_sin_cos_reduction_constants():
    """pi/2 in three float32 parts, each the float32 nearest what the parts before it leave (their sum is
    pi/2 to about 2**-75); 2/pi and the bound as documented."""
    left = PI / 2
    for part in (vmath._PIO2_1, vmath._PIO2_2, vmath._PIO2_3):
        assert part == np.float32(float(left))
        left -= Fraction(float(part))
    assert abs(left) < Fraction(1, 2 ** 74)
    assert vmath._TWO_OVER_PI == np.float32(float(2 / PI)) and TRIG_MAX == 2.0 ** 19


def _near_multiples_of_half_pi(k_max: int, count: int) -> np.ndarray:
    """The float32 values nearest k pi/2 for `count` k up to k_max (where sin or cos is tiny, so the
    reduction's cancellation shows), with the two neighbours on each side, both signs."""
    k = np.unique(np.geomspace(1, k_max, count).astype(np.int64))
    centre = np.array([np.float32(float(int(v) * PI / 2)) for v in k], np.float32)
    near = [centre]
    for step in (1, 2):
        near += [np.nextafter(centre, np.float32(np.inf)), np.nextafter(centre, np.float32(0))]
        centre_up, centre_down = near[-2], near[-1]
        if step == 1:
            near += [np.nextafter(centre_up, np.float32(np.inf)), np.nextafter(centre_down, np.float32(0))]
    x = np.concatenate(near)
    return np.concatenate([x, -x])


def _below_trig_max() -> np.ndarray:
    """3.4M arguments across +-TRIG_MAX, densely below 8, tiny and subnormal ones, near multiples of pi/2."""
    t = float(TRIG_MAX)
    return np.concatenate([np.linspace(-t, t, 2_000_001, dtype=np.float32)[1:-1],
                           np.linspace(-8.0, 8.0, 1_000_001, dtype=np.float32),
                           np.logspace(-45, np.log10(t) - 1e-7, 200_001).astype(np.float32),
                           -np.logspace(-45, np.log10(t) - 1e-7, 200_001).astype(np.float32),
                           _near_multiples_of_half_pi(int(t / (math.pi / 2)) - 1, 40_000)])


@pytest.mark.parametrize(("name", "loop", "ref"), [("sin", _sin_loop, np.sin), ("cos", _cos_loop, np.cos)])
def test_sin_cos_within_1_6_ulp_below_trig_max(name, loop, ref):
    """Over the reduction's whole range (every float32 below TRIG_MAX, both signs, measured: sin 1.577, cos
    1.564 ulp at most), near multiples of pi/2 where the result is tiny, small and subnormal arguments."""
    x = _below_trig_max()
    assert np.abs(x).max() < TRIG_MAX
    got = np.empty_like(x)
    loop(x, got)
    r = ref(x.astype(np.float64))
    normal = np.abs(r) > F32.tiny
    u = _ulps(got[normal], r[normal])
    assert u.max() < 1.6, (u.max(), x[normal][np.argmax(u)])
    assert np.all(np.abs(got) <= 1)
    if name == "sin":
        assert np.array_equal(got[~normal], x[~normal])  # sin x = x where that is subnormal
        assert np.array_equal(np.signbit(got[x != 0]), np.signbit(r[x != 0]))
    else:
        assert normal.all()


def test_sin_cos_special_values():
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, F32.smallest_subnormal,
                   -F32.smallest_subnormal, 1.0, -1.0], np.float32)
    s, c = np.empty_like(sp), np.empty_like(sp)
    _sin_loop(sp, s)
    _cos_loop(sp, c)
    assert s[0] == 0 and not np.signbit(s[0]) and s[1] == 0 and np.signbit(s[1])  # +-0 kept
    assert np.isnan(s[2:5]).all() and np.isnan(c[2:5]).all()  # inf, -inf, NaN -> NaN
    assert np.array_equal(s[5:9], sp[5:9]) and np.all(c[[0, 1, 5, 6, 7, 8]] == 1)
    assert abs(float(s[9]) - math.sin(1.0)) < 1e-7 and abs(float(c[9]) - math.cos(1.0)) < 1e-7
    # odd and even to the bit: the reduction rounds -x to -j
    x = np.linspace(-float(TRIG_MAX), float(TRIG_MAX), 1_000_001, dtype=np.float32)
    for loop, sign in ((_sin_loop, -1), (_cos_loop, 1)):
        a, b = np.empty_like(x), np.empty_like(x)
        loop(x, a)
        loop(-x, b)
        assert np.array_equal(b, sign * a)


def test_tan_within_half_an_ulp_below_trig_max():
    """Computed in float64 and rounded once: every float32 below TRIG_MAX within 0.5 ulp (measured, both
    signs); near multiples of pi/2 (tan tiny or huge), tiny and subnormal arguments; the specials."""
    x = _below_trig_max()
    got = np.empty_like(x)
    _tan_loop(x, got)
    r = np.tan(x.astype(np.float64))
    normal = np.abs(r) > F32.tiny
    assert _ulps(got[normal], r[normal]).max() < 0.501
    assert np.array_equal(got[~normal], x[~normal])
    assert np.abs(r).max() > 1e6  # the arguments reach the poles' neighbourhood
    sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30], np.float32)
    out = np.empty_like(sp)
    _tan_loop(sp, out)
    assert out[0] == 0 and not np.signbit(out[0]) and out[1] == 0 and np.signbit(out[1])
    assert np.isnan(out[2:5]).all() and np.array_equal(out[5:], sp[5:])


def test_atan_within_one_and_a_half_ulp_and_special_values():
    """Every range of the reduction and both split points (tan(pi/8), tan(3pi/8)) densely, where pi/4 +
    atan(t) cancels; +-pi/2 at +-inf and far out, -0.0 kept, NaN stays NaN."""
    x = np.concatenate([np.logspace(-45, 38.5, 2_000_001).astype(np.float32),
                        np.linspace(0.0, 4.0, 2_000_001, dtype=np.float32),
                        np.linspace(0.41, 0.42, 200_001, dtype=np.float32),
                        np.linspace(2.40, 2.43, 200_001, dtype=np.float32)])
    x = np.concatenate([x, -x])
    got = np.empty_like(x)
    _atan_loop(x, got)
    r = np.arctan(x.astype(np.float64))
    normal = np.abs(r) > F32.tiny
    assert _ulps(got[normal], r[normal]).max() < 1.5
    assert np.array_equal(got[~normal], x[~normal]) and np.array_equal(np.signbit(got), np.signbit(x))
    sp = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 3e38, 1.0], np.float32)
    out = np.empty_like(sp)
    _atan_loop(sp, out)
    half_pi = np.float32(math.pi / 2)
    assert out[0] == half_pi and out[1] == -half_pi and np.isnan(out[2]) and out[5] == half_pi
    assert out[3] == 0 and not np.signbit(out[3]) and out[4] == 0 and np.signbit(out[4])
    assert out[6] == np.float32(math.pi / 4)


def test_float64_arguments_keep_libm():
    x = np.random.default_rng(3).standard_normal(1000) * 20
    e, f, t = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    _exp_loop(x, e)
    _erf_loop(x, f)
    _tanh_loop(x, t)
    assert e.tolist() == [math.exp(v) for v in x]
    assert f.tolist() == [math.erf(v) for v in x]
    assert t.tolist() == [math.tanh(v) for v in x]
    pos = np.abs(x) + 0.5
    lg, lp = np.empty_like(x), np.empty_like(x)
    _log_loop(pos, lg)
    _log1p_loop(pos, lp)
    assert lg.tolist() == [math.log(v) for v in pos]
    assert lp.tolist() == [math.log1p(v) for v in pos]
    em = np.empty_like(x)
    _expm1_loop(x, em)
    assert em.tolist() == [math.expm1(v) for v in x]
    big = np.concatenate([x, x * 1e6, [1e300, -1e22]])  # float64: no bound, libm's reduction
    sn, cs = np.empty_like(big), np.empty_like(big)
    _sin_loop(big, sn)
    _cos_loop(big, cs)
    assert sn.tolist() == [math.sin(v) for v in big]
    assert cs.tolist() == [math.cos(v) for v in big]
    tn, at = np.empty_like(big), np.empty_like(big)
    _tan_loop(big, tn)
    _atan_loop(big, at)
    assert tn.tolist() == [math.tan(v) for v in big]
    assert at.tolist() == [math.atan(v) for v in big]


def test_float32_loops_call_no_libm_function():
    """What makes them fast: no call to exp/erf left in the loop, so LLVM can vectorize it."""
    x = np.ones(8, np.float32)
    for fn in (_exp_loop, _erf_loop, _tanh_loop, _log_loop, _log1p_loop, _expm1_loop, _sin_loop, _cos_loop, _tan_loop,
               _atan_loop):
        fn(x, np.empty_like(x))
        ir = fn.inspect_llvm(fn.signatures[0])
        names = "exp|erf|tanh|log|log1p|expm1|sin|cos|tan|atan"
        calls = re.findall(rf"call [^@]*@\"?(?:llvm\.)?(?:{names})(?:f|\.f32|\.f64)?\b", ir)
        assert calls == [], calls
        assert re.search(r"<(?:4|8|16) x float>", ir), "the loop did not vectorize"


@pytest.mark.parametrize("shape", [(260, 65), (3, 1), (2, 40000), (7, 1000)])
def test_softmax_rows_against_float64(shape):
    from irnorm.kernels.softmax import softmax_rows

    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 8).astype(np.float32)
    if shape[1] > 1:
        x[0, :: max(1, shape[1] // 3)] = -np.inf  # masked entries
    got = softmax_rows(x)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-12)
    log = softmax_rows(x, log=True)
    fin = np.isfinite(x)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(log[fin], np.log(ref)[fin], rtol=2e-6, atol=2e-6)


def test_activations_on_vmath_against_float64():
    from irnorm import reference as R
    from irnorm.kernels import activation as A
    from irnorm.kernels import elementwise as E
    from irnorm.kernels.opcodes import ERF, EXP, SIGMOID

    # float32 arguments of exp carry their own rounding (|arg| * 2**-24 relative in exp(arg)): hence
    # the range and the tolerance
    x = np.concatenate([np.linspace(-20, 20, 200_001), [0.0, -0.0]]).astype(np.float32)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        cases = [
            (A.unary(A.CODES["swish"], x, 1.3), x64 / (1 + np.exp(-1.3 * x64)), 4e-6),
            (E.unary(EXP, x), np.exp(x64), 1.2e-7),
            (E.unary(SIGMOID, x), 1 / (1 + np.exp(-x64)), 4e-6),
        ]
    for got, ref, rtol in cases:
        np.testing.assert_allclose(got, ref, rtol=rtol, atol=1e-30)
    # erf and the erf Gelu: a few float32 ulps absolute (near erf = -1 the Gelu's 1 + erf cancels,
    # in any float32 evaluation of the formula)
    np.testing.assert_allclose(E.unary(ERF, x), [math.erf(v) for v in x64], rtol=0, atol=5e-7)
    np.testing.assert_allclose(A.unary(A.CODES["gelu_erf"], x), R.gelu(x64), rtol=2e-6, atol=3e-7 * 20)
