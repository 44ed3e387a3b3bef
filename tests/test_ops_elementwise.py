"""Elementwise ops (Add, Subtract, Multiply, Divide, Maximum, Minimum, Power, SquaredDifference and
the unary math ops) against OpenVINO on IRs written by openvino.save_model, the Numba kernels
against the numpy semantics, and one malformed-IR test per rule."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error
from ovutil import compare_with_openvino, ov_run, requires_openvino, save

import irnorm
from irnorm.kernels.opcodes import ADD, DIV, MAX, MIN, POW, SQDIFF, SUB
from irnorm.ops.base import broadcast_shape
from irnorm.ops.elementwise import compute_binary

ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")

BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "squared_difference"]
UNARY = ["sqrt", "abs", "negative", "exp", "log", "erf", "sigmoid", "tanh"]

# (a shape, b shape): fast paths (same shape, scalar, per-channel, row, keep-dims statistics), both
# operand orders, two-sided broadcasts, a pattern that needs the numpy fallback, zero-size tensors.
PATTERNS = [
    ((2, 3, 4), (2, 3, 4)),
    ((2, 3, 4, 5), (1, 3, 1, 1)),
    ((1, 3, 1, 1), (2, 3, 4, 5)),
    ((4, 5, 6), (6,)),
    ((6,), (4, 5, 6)),
    ((4, 5, 6), (4, 5, 1)),
    ((3, 1, 5), (1, 4, 1)),
    ((1,), (2, 3)),
    ((), (3, 2)),
    ((7,), ()),
    ((2, 1, 3, 1, 4, 1), (1, 2, 1, 3, 1, 4)),
    ((2, 0, 3), (3,)),
    ((1, 1), (1, 1)),
]


def _random_pattern(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...]]:
    r = int(rng.integers(1, 6))
    out = tuple(int(d) for d in rng.integers(1, 6, size=r))
    rb = int(rng.integers(0, r + 1))
    b = tuple(1 if rng.random() < 0.4 else d for d in out[r - rb:])
    a = tuple(1 if rng.random() < 0.2 else d for d in out)
    return (a, b) if rng.random() < 0.5 else (b, a)


def _named(node, name: str):
    node.output(0).get_tensor().set_names({name})
    return node


def _values(rng: np.random.Generator, shape, dtype) -> np.ndarray:
    """Values away from zero (Divide, Power and Log stay finite), both signs."""
    v = rng.uniform(0.25, 2.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    return np.asarray(v).astype(dtype)


def _binary_model(a_shape, b_shape, et, autob="numpy"):
    a = op1.parameter(list(a_shape), et, name="a")
    b = op1.parameter(list(b_shape), et, name="b")
    outs = []
    for name in BINARY:
        fn = getattr(op1, name)
        lhs = op1.abs(a) if name == "power" else a
        outs.append(_named(fn(lhs, b, auto_broadcast=autob), name))
    return ov.Model([op1.result(o) for o in outs], [a, b], "binary")


@requires_openvino
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_binary_ops_match_openvino_over_broadcast_patterns(tmp_path, dtype):
    rng = np.random.default_rng(1 if dtype == np.float32 else 2)
    cases = PATTERNS + [_random_pattern(rng) for _ in range(8)]
    for k, (sa, sb) in enumerate(cases):
        xml = save(_binary_model(sa, sb, dtype), tmp_path, f"bin{k}")
        feeds = {"a": _values(rng, sa, dtype), "b": _values(rng, sb, dtype)}
        got = compare_with_openvino(xml, feeds)
        assert got["add"].shape == np.broadcast_shapes(sa, sb)


@requires_openvino
def test_binary_ops_f64_and_bf16_match_openvino(tmp_path):
    rng = np.random.default_rng(3)
    for dtype in (np.float64, ml_dtypes.bfloat16):
        for k, (sa, sb) in enumerate([((2, 3, 4, 5), (1, 3, 1, 1)), ((4, 6), (6,)), ((3, 5), (3, 5))]):
            et = ov.Type.bf16 if dtype is ml_dtypes.bfloat16 else dtype
            xml = save(_binary_model(sa, sb, et), tmp_path, f"b{np.dtype(dtype).name}{k}")
            compare_with_openvino(xml, {"a": _values(rng, sa, dtype), "b": _values(rng, sb, dtype)})


@requires_openvino
def test_auto_broadcast_none_matches_openvino(tmp_path):
    rng = np.random.default_rng(4)
    xml = save(_binary_model((3, 4, 5), (3, 4, 5), np.float32, autob="none"), tmp_path, "none")
    assert 'auto_broadcast="none"' in xml.read_text()
    compare_with_openvino(xml, {"a": _values(rng, (3, 4, 5), np.float32), "b": _values(rng, (3, 4, 5), np.float32)})


@requires_openvino
def test_dynamic_shapes_run_with_any_fitting_shape(tmp_path):
    rng = np.random.default_rng(5)
    xml = save(_binary_model((-1, 4, -1), (1, 4, 1), np.float32), tmp_path, "dyn")
    m = irnorm.load(xml)
    assert m.inputs[0].shape == (-1, 4, -1)
    for shape in [(2, 4, 3), (1, 4, 17), (5, 4, 1), (3, 4, 40000)]:
        compare_with_openvino(xml, {"a": _values(rng, shape, np.float32), "b": _values(rng, (1, 4, 1), np.float32)})


@requires_openvino
@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_unary_ops_match_openvino(tmp_path, dtype):
    rng = np.random.default_rng(6)
    x = op1.parameter([-1, 5], ov.Type.bf16 if dtype is ml_dtypes.bfloat16 else dtype, name="x")
    outs = []
    for name in UNARY:
        arg = op1.abs(x) if name in ("sqrt", "log") else x
        outs.append(_named(getattr(op1, name)(arg), name))
    xml = save(ov.Model([op1.result(o) for o in outs], [x], "unary"), tmp_path, "unary")
    for rows in (1, 7, 9000):
        feeds = {"x": (rng.standard_normal((rows, 5)) * 2).astype(dtype)}
        compare_with_openvino(xml, feeds)


@requires_openvino
def test_integer_arithmetic_matches_openvino(tmp_path):
    rng = np.random.default_rng(7)
    for et in (np.int32, np.int64):
        a = op1.parameter([3, 4], et, name="a")
        b = op1.parameter([4], et, name="b")
        outs = [_named(getattr(op1, n)(a, b), n) for n in
                ("add", "subtract", "multiply", "maximum", "minimum", "squared_difference")]
        outs += [_named(op1.abs(a), "abs"), _named(op1.negative(a), "negative")]
        xml = save(ov.Model([op1.result(o) for o in outs], [a, b], "ints"), tmp_path, f"i{np.dtype(et).name}")
        feeds = {"a": rng.integers(-50, 50, (3, 4)).astype(et), "b": rng.integers(-50, 50, (4,)).astype(et)}
        compare_with_openvino(xml, feeds, tol=(0, 0))


def _int_divide_model(tmp_path, pythondiv: bool, constant: bool):
    a = np.array([-7, 7, -7, 7, 0, -1], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5], np.int32)
    p = op1.parameter([6], np.int32, name="p")
    if constant:
        y = op1.add(p, op1.divide(op1.constant(a), op1.constant(b)))
    else:
        q = op1.parameter([6], np.int32, name="q")
        y = op1.divide(p, q)
    xml = save(ov.Model([op1.result(_named(y, "y"))], [p] if constant else [p, q], "div"), tmp_path,
               f"div{pythondiv}{constant}")
    text = xml.read_text()
    assert 'm_pythondiv="true"' in text
    xml.write_text(text.replace('m_pythondiv="true"', f'm_pythondiv="{str(pythondiv).lower()}"'))
    feeds = {"p": np.zeros(6, np.int32)} if constant else {"p": a, "q": b}
    return xml, feeds


@requires_openvino
@pytest.mark.parametrize("pythondiv,expected", [(True, [-4, 3, 3, -4, 0, -1]), (False, [-3, 3, 3, -3, 0, 0])])
def test_integer_divide_follows_openvino_reference(tmp_path, pythondiv, expected):
    # Folded constants: OpenVINO's reference (floor for m_pythondiv=true, truncation otherwise).
    xml, feeds = _int_divide_model(tmp_path, pythondiv, constant=True)
    assert ov_run(xml, feeds)["y"].tolist() == expected
    assert irnorm.load(xml).run(feeds)["y"].tolist() == expected
    # Runtime inputs: irnorm still follows the reference ...
    xml, feeds = _int_divide_model(tmp_path, pythondiv, constant=False)
    assert irnorm.load(xml).run(feeds)["y"].tolist() == expected
    # ... while the CPU plugin truncates in both modes (pinned deviation).
    assert ov_run(xml, feeds)["y"].tolist() == [-3, 3, 3, -3, 0, 0]


def test_integer_division_by_zero_is_an_error(tmp_path):
    b = IRBuilder("divzero")
    x = b.parameter("x", (3,), "i32")
    zero = b.const(np.array([1, 0, 2], np.int32))
    (y,) = b.layer("Divide", [x, zero], [((3,), "i32")], {"auto_broadcast": "numpy", "m_pythondiv": "true"},
                   version="opset1", names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.array([4, 5, 6], np.int32)})
    assert e.value.code == "IRN064" and "integer division by zero" in str(e.value)

    b = IRBuilder("divzero_const")
    x = b.parameter("x", (3,), "i32")
    q = b.layer("Divide", [b.const(np.array([1, 2, 3], np.int32)), b.const(np.array([1, 0, 2], np.int32))],
                [((3,), "i32")], {"auto_broadcast": "numpy"}, version="opset1")[0]
    (y,) = b.layer("Add", [x, q], [((3,), "i32")], {"auto_broadcast": "numpy"}, version="opset1", names=["y"])
    b.result(y)
    expect_error(b, tmp_path, "IRN032", "integer division by zero")


# ---- kernels against the numpy semantics ------------------------------------------------------


def test_kernel_fast_paths_match_numpy_semantics():
    from irnorm.kernels import elementwise as kern

    rng = np.random.default_rng(8)
    # large ones past elementwise.SMALL (f32/f64 below it take numpy's ufunc), on the kernel's threads
    cases = PATTERNS + [_random_pattern(rng) for _ in range(30)] + [((70000,), (70000,)), ((3, 40000), (3, 1)),
                                                                     ((200_000,), (200_000,)), ((3, 70000), (3, 1))]
    for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
        for sa, sb in cases:
            a, b = _values(rng, sa, dtype), _values(rng, sb, dtype)
            for code in (ADD, SUB, DIV, MAX, MIN, POW, SQDIFF):
                lhs = np.abs(a) if code == POW else a
                y = kern.binary(code, lhs, b)
                want = compute_binary(code, lhs, b)
                if y is None:  # only patterns needing more than four collapsed dims fall back
                    assert kern.collapse(np.broadcast_shapes(sa, sb), sa, sb) is None
                    continue
                assert y.dtype == np.dtype(dtype) and y.shape == want.shape
                # f32 arithmetic is exact IEEE in both; pow may differ by an f32 ulp between libms,
                # which can flip the rounding to f16/bf16
                tol = {2: 1e-2, 4: 2e-3}.get(np.dtype(dtype).itemsize, 1e-6) if code == POW else 0
                np.testing.assert_allclose(y.astype(np.float64), want.astype(np.float64), rtol=tol, atol=0)


def test_f16_is_computed_in_f32_and_rounded_per_op(tmp_path):
    rng = np.random.default_rng(9)
    b = IRBuilder("f16")
    x = b.parameter("x", (4, 300), "f16")
    s = b.parameter("s", (300,), "f16")
    (y,) = b.layer("Multiply", [x, s], [((4, 300), "f16")], {"auto_broadcast": "numpy"}, version="opset1",
                   names=["y"])
    (z,) = b.layer("Divide", [y, s], [((4, 300), "f16")], {"auto_broadcast": "numpy"}, version="opset1",
                   names=["z"])
    b.result(y)
    b.result(z)
    feeds = {"x": (rng.standard_normal((4, 300)) * 300).astype(np.float16),
             "s": (rng.standard_normal(300) * 300).astype(np.float16)}
    out = irnorm.load(b.save(tmp_path)).run(feeds)
    with np.errstate(all="ignore"):
        y32 = (feeds["x"].astype(np.float32) * feeds["s"].astype(np.float32)).astype(np.float16)
        z32 = (y32.astype(np.float32) / feeds["s"].astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(out["y"], y32)  # overflows to inf exactly where f16 does
    np.testing.assert_array_equal(out["z"], z32)
    assert np.isinf(out["y"]).any()


def test_f16_conversion_kernels_are_bit_exact():
    from irnorm.kernels import elementwise as kern

    every_half = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        want = every_half.astype(np.float32)
    got = kern.f16_to_f32(every_half)
    nan = np.isnan(want)
    assert (np.isnan(got) == nan).all()
    np.testing.assert_array_equal(got.view(np.uint32)[~nan], want.view(np.uint32)[~nan])

    rng = np.random.default_rng(10)
    finite = want[np.isfinite(want)].astype(np.float64)
    ulp = np.abs(finite) * 2.0 ** -11
    f = np.concatenate([
        (rng.standard_normal(200_000) * 10.0 ** rng.uniform(-9, 6, 200_000)),
        finite, finite + ulp / 2, finite - ulp / 2, finite + ulp / 3,  # ties and near-ties
        [np.inf, -np.inf, np.nan, -0.0, 65504, 65519.996, 65520, 1e9, 2.0 ** -24, 2.0 ** -25, 2.0 ** -26,
         3 * 2.0 ** -26, 2.0 ** -14 * (1 - 2.0 ** -12)],
    ]).astype(np.float32)
    with np.errstate(all="ignore"):
        want16 = f.astype(np.float16)
    got16 = kern.f32_to_f16(f)
    nan = np.isnan(want16)
    assert (np.isnan(got16) == nan).all()
    np.testing.assert_array_equal(got16.view(np.uint16)[~nan], want16.view(np.uint16)[~nan])


def test_nan_propagates_through_maximum_and_minimum():
    from irnorm.kernels import elementwise as kern

    a = np.array([np.nan, 1.0, 2.0, np.nan], np.float32)
    b = np.array([1.0, np.nan, 1.0, np.nan], np.float32)
    for code in (MAX, MIN):
        y = kern.binary(code, a, b)
        assert np.isnan(y[[0, 1, 3]]).all() and y[2] == (2.0 if code == MAX else 1.0)
        np.testing.assert_array_equal(y, compute_binary(code, a, b))


def test_broadcast_shape_rule_tolerates_dynamic_dims():
    assert broadcast_shape((-1, 3, 1), (4, 1, 5), "numpy") == (4, 3, 5)
    assert broadcast_shape((-1, 1), (1, -1), "numpy") == (-1, -1)
    assert broadcast_shape((-1, 3), (1,), "numpy") == (-1, 3)
    assert broadcast_shape((-1, 3), (2, -1), "none") == (2, 3)
    assert broadcast_shape(None, (2,), "numpy") is None


# ---- malformed IR -------------------------------------------------------------------------------


def _bin(tmp_path, a_shape, b_shape, attrs, a_et="f32", b_et="f32", type_="Add", out=None):
    b = IRBuilder("bad")
    x = b.parameter("a", a_shape, a_et)
    y = b.parameter("b", b_shape, b_et)
    (z,) = b.layer(type_, [x, y], [(out or a_shape, a_et)], attrs, version="opset1", names=["z"])
    b.result(z)
    return b


@pytest.mark.parametrize("code,attrs,a,bsh,fragments", [
    ("IRN032", {"auto_broadcast": "numpy"}, (2, 3), (4,),
     ("do not broadcast", "dim 1 is 3 in input 0 and 4 in input 1")),
    ("IRN032", {"auto_broadcast": "numpy"}, (5, 2, 3), (4, 3), ("dim 1 is 2 in input 0 and 4 in input 1", "dim -2")),
    ("IRN032", {"auto_broadcast": "none"}, (2, 3), (2, 1), ("auto_broadcast=none", "dim 1 is 3 in input 0 and 1")),
    ("IRN032", {"auto_broadcast": "none"}, (2, 3), (3,), ("auto_broadcast=none", "different ranks")),
    ("IRN021", {"auto_broadcast": "sideways"}, (2,), (2,), ("auto_broadcast", "not one of numpy, none")),
    ("IRN023", {"auto_broadcast": "pdpd"}, (2,), (2,), ("pdpd", "not supported")),
    ("IRN022", {"auto_broadcast": "numpy", "axis": "1"}, (2,), (2,), ("unknown attribute 'axis'",)),
])
def test_malformed_binary(tmp_path, code, attrs, a, bsh, fragments):
    expect_error(_bin(tmp_path, a, bsh, attrs), tmp_path, code, *fragments)


def test_malformed_types(tmp_path):
    expect_error(_bin(tmp_path, (2,), (2,), {}, b_et="f16"), tmp_path, "IRN033", "input 1 has element type f16",
                 "expected f32")
    expect_error(_bin(tmp_path, (2,), (2,), {}, "boolean", "boolean", "Multiply"), tmp_path, "IRN033", "boolean")
    expect_error(_bin(tmp_path, (2,), (2,), {"m_pythondiv": "yes"}, type_="Divide"), tmp_path, "IRN021",
                 "m_pythondiv")
    b = IRBuilder("sqrt_int")
    x = b.parameter("x", (3,), "i32")
    (y,) = b.layer("Sqrt", [x], [((3,), "i32")], None, version="opset1", names=["y"])
    b.result(y)
    expect_error(b, tmp_path, "IRN033", "Sqrt needs a floating-point input, got i32")


def test_malformed_arity(tmp_path):
    b = IRBuilder("arity")
    x = b.parameter("x", (3,), "f32")
    (y,) = b.layer("Add", [x], [((3,), "f32")], {"auto_broadcast": "numpy"}, version="opset1", names=["y"])
    b.result(y)
    expect_error(b, tmp_path, "IRN017", "has 1 input ports", "Add-1 takes 2")


def test_runtime_shape_mismatch_in_a_dynamic_model(tmp_path):
    m = irnorm.load(_bin(tmp_path, (-1, 3), (4, 3), {"auto_broadcast": "numpy"}).save(tmp_path))
    out = m.run({"a": np.ones((4, 3), np.float32), "b": np.ones((4, 3), np.float32)})
    assert out["z"].shape == (4, 3)
    m.run({"a": np.ones((1, 3), np.float32), "b": np.ones((4, 3), np.float32)})
    with pytest.raises(irnorm.InputError) as e:
        m.run({"a": np.ones((2, 3), np.float32), "b": np.ones((4, 3), np.float32)})
    assert e.value.code == "IRN064" and "dim 0 is 2 in input 0 and 4 in input 1" in str(e.value)


# ---- Power by a constant exponent: the fast cases keep C pow's results, special values included ------

def _c_pow(x: np.ndarray, p: float) -> np.ndarray:
    """Per element math.pow (C99 pow) in float64, with its domain errors as NaN / inf."""
    out = []
    for v in x.astype(np.float64).reshape(-1):
        if v == 0 and p < 0:  # Python raises here; C gives +-inf (the sign of zero for odd integer p)
            out.append(math.copysign(math.inf, v) if p == math.floor(p) and int(p) % 2 else math.inf)
            continue
        try:
            out.append(math.pow(v, p))
        except ValueError:  # a negative base to a non-integer power
            out.append(math.nan)
        except OverflowError:
            out.append(math.inf)
    return np.array(out).reshape(x.shape)


@pytest.mark.parametrize("p", [2.0, 3.0, 1.0, -1.0, 0.0, 0.5, -0.5, 4.0, -3.0, 16.0, 1.7, -2.2])
@pytest.mark.parametrize("fused", [False, True])
def test_power_by_constant_exponent_matches_c_pow(tmp_path, p, fused):
    rng = np.random.default_rng(int(p * 10) + 100)
    special = np.array([-np.inf, -2.5, -1, -0.0, 0.0, 0.3, 1, 2.5, np.inf, np.nan], np.float32)
    x = np.concatenate([special, rng.uniform(-3, 3, 300).astype(np.float32)]).reshape(2, -1)
    b = IRBuilder("pow")
    src = b.parameter("x", x.shape, "f32")
    if fused:  # Multiply by 1 + Power: the planner's Multiply/Add/Power chain (the Scale kernel)
        (src,) = b.layer("Multiply", [src, b.const(np.float32(1.0), "one")], [(x.shape, "f32")], None,
                         version="opset1")
    (y,) = b.layer("Power", [src, b.const(np.float32(p), "p")], [(x.shape, "f32")], None, version="opset1",
                   names=["y"])
    b.result(y)
    got = irnorm.load(b.save(tmp_path, "pow")).run({"x": x})["y"]
    want = _c_pow(x, p).astype(np.float32)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0, equal_nan=True)
    finite_zero = (got == 0) & (want == 0)
    assert np.array_equal(np.signbit(got[finite_zero]), np.signbit(want[finite_zero])), "signed zeros differ"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_static_small_binary_ops_call_numpy_directly(tmp_path, dtype):
    """On a static model a small float binary op that takes numpy's ufunc (a computed operand and a constant
    on either side, or two computed ones; broadcasting into the larger) is written into the plan's
    straight-line runner as the ufunc's own call with every operand; the results are the kernel's bits (a
    profiled run calls the kernel), with inf/NaN/signed zeros, and a dynamic model keeps the kernel call."""
    rng = np.random.default_rng(17)
    et = {np.float32: "f32", np.float64: "f64"}[dtype]
    row = rng.standard_normal(6).astype(dtype)
    x = rng.standard_normal((3, 4, 6)).astype(dtype)
    x.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    for dims, static in (((3, 4, 6), True), ((-1, 4, 6), False)):
        b = IRBuilder(f"bin{static}")
        p = b.parameter("x", dims, et)
        shape = (dims[0], 4, 6)
        (h,) = b.layer("Multiply", [p, b.const(row)], [(shape, et)], version="opset1")  # constant second
        (g,) = b.layer("Subtract", [b.const(row), h], [(shape, et)], version="opset1")  # constant first
        (g,) = b.layer("Divide", [g, h], [(shape, et)], version="opset1")  # both computed
        (y,) = b.layer("Maximum", [g, p], [(shape, et)], version="opset1", names=["y"])
        b.result(y)
        m = irnorm.load(b.save(tmp_path / str(static)))
        assert m._plan.source.count("= every") == (4 if static else 0)
        h = x * row
        with np.errstate(all="ignore"):
            want = np.maximum((row - h) / h, x)
        for _ in range(2):
            got = m.run({"x": x})["y"]
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, m.run({"x": x}, profile=True)["y"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_static_binary_op_on_two_scalars_gives_a_0d_array(tmp_path, dtype):
    """Two 0-d operands on a static model (torchvision's NMS head adds two scalars) take numpy's ufunc in
    the straight-line runner too; the step's result stays a 0-d array of the op's type, not a numpy
    scalar, with the kernel's bits (a profiled run calls the kernel)."""
    et = {np.float32: "f32", np.float64: "f64"}[dtype]
    b = IRBuilder("scalars")
    p = b.parameter("x", (), et)
    (h,) = b.layer("Add", [p, b.const(np.array(1.5, dtype))], [((), et)], version="opset1")
    (y,) = b.layer("Multiply", [h, p], [((), et)], version="opset1", names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    assert m._plan.source.count("= every") == 2
    for v in (2.25, np.inf, -0.0, np.nan):
        x = np.array(v, dtype)
        with np.errstate(all="ignore"):
            want = (x + dtype(1.5)) * x
            got, profiled = m.run({"x": x})["y"], m.run({"x": x}, profile=True)["y"]
        for out in (got, profiled):
            assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == dtype
            np.testing.assert_array_equal(out, want)
