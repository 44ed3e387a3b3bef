"""Activations (irnorm.ops.activation) beyond the conformance table: malformed IR, the kernels' f16/bf16
codecs and parallel path, PRelu's slope rules, OpenVINO-written files with dynamic dims run at two
shapes, and the documented departures of OpenVINO's CPU plugin from its reference."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error, run_model, single_op_model
from ovutil import compare_with_openvino, ov_run, requires_openvino, save

import irnorm
from irnorm import reference as R

BF16 = np.dtype(ml_dtypes.bfloat16)


def _one(type_: str, version: str, inputs, out, attrs=None) -> IRBuilder:
    return single_op_model(type_, inputs, [out], attrs, version=version)


# ---- malformed IR ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("type_", "version", "et", "fragment"), [
    ("Gelu", "opset7", "i32", "Gelu needs a floating-point input, got i32"),
    ("Sin", "opset1", "i64", "Sin needs a floating-point input, got i64"),
    ("Mish", "opset4", "boolean", "Mish needs a floating-point input, got boolean"),
    ("Relu", "opset1", "boolean", "Relu needs a numeric (float or integer) input, got boolean"),
    ("Sign", "opset1", "boolean", "Sign needs a numeric"),
    ("SoftSign", "opset9", "u8", "SoftSign needs a floating-point input"),
])
def test_data_type_rules(tmp_path, type_, version, et, fragment):
    b = _one(type_, version, [("param:x", ((2, 3), et))], ((2, 3), et))
    expect_error(b, tmp_path, "IRN033", fragment)


def test_parameter_input_rules(tmp_path):
    f32 = ("param:x", ((2, 3), "f32"))
    # Swish: beta of another type, or not a scalar
    expect_error(_one("Swish", "opset4", [f32, ("beta", np.array(1, np.float16))], ((2, 3), "f32")),
                 tmp_path / "a", "IRN033", "beta (input 1) has element type f16")
    expect_error(_one("Swish", "opset4", [f32, ("beta", np.ones(1, np.float32))], ((2, 3), "f32")),
                 tmp_path / "b", "IRN032", "beta (input 1) must be a scalar (rank 0), got [1]")
    # Selu: one element each (any rank), HardSigmoid: scalars
    expect_error(_one("Selu", "opset1", [f32, ("a", np.ones(2, np.float32)), ("l", np.ones(1, np.float32))],
                      ((2, 3), "f32")), tmp_path / "c", "IRN032", "alpha (input 1) must have exactly one element")
    expect_error(_one("HardSigmoid", "opset1", [f32, ("a", np.ones(1, np.float32)), ("b", np.float32(0.5))],
                      ((2, 3), "f32")), tmp_path / "d", "IRN032", "alpha (input 1) must be a scalar")
    expect_error(_one("HardSigmoid", "opset1", [f32, ("a", np.float32(0.2)), ("b", np.float64(0.5))],
                      ((2, 3), "f32")), tmp_path / "e", "IRN033", "beta (input 2) has element type f64")


def test_attribute_rules(tmp_path):
    f32 = [("param:x", ((4,), "f32"))]
    expect_error(_one("Gelu", "opset7", f32, ((4,), "f32"), {"approximation_mode": "sigmoid"}), tmp_path / "a",
                 "IRN021", "not one of ERF, TANH")
    expect_error(_one("Round", "opset5", f32, ((4,), "f32"), {"mode": "half_up"}), tmp_path / "b", "IRN021",
                 "half_to_even")
    expect_error(_one("Elu", "opset1", f32, ((4,), "f32"), {"alpha": "nan"}), tmp_path / "c", "IRN021",
                 "not a finite number")
    expect_error(_one("Gelu", "opset2", f32, ((4,), "f32"), {"approximation_mode": "tanh"}), tmp_path / "d",
                 "IRN022", "approximation_mode")  # Gelu-2 has no attributes


def test_opset_resolution(tmp_path):
    """Gelu written as opset2..6 is Gelu-2 (erf only), opset7+ is Gelu-7; Asinh exists from opset4."""
    x = np.array([-1.5, 0.25, 2.0], np.float32)
    for version in ("opset2", "opset6"):
        b = _one("Gelu", version, [("param:x", ((3,), "f32"))], ((3,), "f32"))
        got = run_model(b, tmp_path / version, {"x": x})["y"]
        np.testing.assert_allclose(got, R.gelu(x), rtol=1e-6)
    b = _one("Gelu", "opset13", [("param:x", ((3,), "f32"))], ((3,), "f32"), {"approximation_mode": "tanh"})
    np.testing.assert_allclose(run_model(b, tmp_path / "g13", {"x": x})["y"], R.gelu(x, "tanh"), rtol=1e-6)
    b = _one("Asinh", "opset3", [("param:x", ((3,), "f32"))], ((3,), "f32"))
    expect_error(b, tmp_path / "as3", "IRN012", "Asinh in opset4+")  # Asinh-3 is first listed in opset4


def test_prelu_slope_shape_rules(tmp_path):
    x = ("param:x", ((2, 3, 4), "f32"))
    expect_error(_one("PRelu", "opset1", [x, ("s", np.ones(5, np.float32))], ((2, 3, 4), "f32")), tmp_path / "a",
                 "IRN032", "slope [5] does not broadcast to the data [2,3,4]")
    expect_error(_one("PRelu", "opset1", [x, ("s", np.ones((2, 2, 3, 4), np.float32))], ((2, 3, 4), "f32")),
                 tmp_path / "b", "IRN032", "higher rank")
    expect_error(_one("PRelu", "opset1", [x, ("s", np.ones(3, np.float16))], ((2, 3, 4), "f32")), tmp_path / "c",
                 "IRN033", "slope (input 1) has element type f16")


def test_prelu_channel_rule_wins_over_numpy_broadcast(tmp_path):
    """[2, 3, 3] data with a [3] slope: the slope runs along axis 1 (OpenVINO's rule), not the last axis."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 3)).astype(np.float32)
    s = np.array([0.1, 0.2, 0.3], np.float32)
    b = _one("PRelu", "opset1", [("param:x", ((2, 3, 3), "f32")), ("s", s)], ((2, 3, 3), "f32"))
    got = run_model(b, tmp_path, {"x": x})["y"]
    np.testing.assert_array_equal(got, np.where(x < 0, x * s.reshape(1, 3, 1), x))


def test_prelu_single_slope_value_fits_any_data(tmp_path):
    """A one-element slope (any rank) applies to every element, scalar data included; 0-d integer data
    comes back as a 0-d array."""
    for et, dt in (("f32", np.float32), ("i32", np.int32)):
        b = _one("PRelu", "opset1", [("param:x", ((), et)), ("s", np.full((1, 1), 3, dt))], ((), et))
        got = run_model(b, tmp_path / et, {"x": np.array(-2, dt)})["y"]
        assert isinstance(got, np.ndarray) and got.shape == () and got.dtype == dt and got == -6
    b = _one("Relu", "opset1", [("param:x", ((), "i64"))], ((), "i64"))
    got = run_model(b, tmp_path / "relu", {"x": np.array(-2, np.int64)})["y"]
    assert isinstance(got, np.ndarray) and got.shape == () and got == 0


# ---- kernels --------------------------------------------------------------------------------------


def test_half_codecs_are_bit_exact():
    """Every float16 value decodes exactly; float32 values round to f16 and bf16 as numpy/ml_dtypes do."""
    from irnorm.kernels import activation as K

    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    buf = np.empty(1 << 16, np.float32)
    K._decode(1, h, buf)
    ref = h.view(np.float16).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(buf.view(np.uint32)[~nan], ref.view(np.uint32)[~nan]) and np.isnan(buf[nan]).all()
    K._decode(2, h, buf)
    ref = h.view(BF16).astype(np.float32)
    nan = np.isnan(ref)
    assert np.array_equal(buf.view(np.uint32)[~nan], ref.view(np.uint32)[~nan]) and np.isnan(buf[nan]).all()

    rng = np.random.default_rng(1)
    f = (rng.standard_normal(200_000) * 10.0 ** rng.integers(-9, 7, 200_000)).astype(np.float32)
    edges = [65504, 65519.996, 65520, 1e9, np.inf, -np.inf, 0, -0.0, 2 ** -25, 2 ** -24 * 1.5, 6.1e-5, 3e-8,
             3.4e38, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -9]
    f = np.concatenate([f, np.array(edges, np.float32)])
    out = np.empty(f.size, np.uint16)
    K._encode(1, f.copy(), out)
    with np.errstate(over="ignore"):
        assert np.array_equal(out, f.astype(np.float16).view(np.uint16))
    K._encode(2, f.copy(), out)
    assert np.array_equal(out, f.astype(BF16).view(np.uint16))
    K._encode(2, np.array([np.nan, -np.nan], np.float32), out[:2])
    assert np.isnan(out[:2].view(BF16).astype(np.float32)).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
def test_parallel_and_serial_paths_agree(dtype):
    """A tensor above the parallel threshold gives, element for element, what the serial path gives
    on its pieces (fixed blocks: no dependence on the thread count).  The threshold is the op's:
    PARALLEL_MIN for an exp or erf per element, CHEAP_PARALLEL_MIN for a piecewise-linear op."""
    from irnorm.kernels import CHEAP_PARALLEL_MIN, PARALLEL_MIN
    from irnorm.kernels import activation as K

    rng = np.random.default_rng(2)
    assert K.parallel_min(K.CODES["gelu_erf"]) == PARALLEL_MIN
    assert K.parallel_min(K.CODES["round_away"]) == K.parallel_min(-1) == CHEAP_PARALLEL_MIN
    for name in ("gelu_erf", "mish", "round_away", "hard_sigmoid"):
        code = K.CODES[name]
        x = (rng.standard_normal(K.parallel_min(code) + 17) * 4).astype(dtype)  # its 7 pieces: one thread
        whole = K.unary(code, x, 0.2, 0.5)
        parts = np.concatenate([K.unary(code, p, 0.2, 0.5) for p in np.array_split(x, 7)])
        assert whole.dtype == x.dtype
        assert np.array_equal(whole.view(np.uint8), parts.view(np.uint8)), name
    s = rng.standard_normal(5).astype(dtype)
    xx = rng.standard_normal(5 * 3 * 4000).astype(dtype).reshape(3, 5, 4000)
    cd = np.float64 if dtype == np.float64 else np.float32
    expected = np.where(xx.astype(cd) < 0, xx.astype(cd) * s.astype(cd).reshape(1, 5, 1), xx.astype(cd)).astype(dtype)
    assert np.array_equal(K.prelu_channel(xx, s).view(np.uint8), expected.view(np.uint8))
    assert np.array_equal(K.prelu_channel(xx[:1, :, :10], s).view(np.uint8), expected[:1, :, :10].view(np.uint8))


@pytest.mark.parametrize(("dtype", "rel"), [(np.float64, 1e-15), (np.float32, 3e-7)])
def test_one_exp_forms_of_tanh_gelu_and_mish(dtype, rel):
    """The kernels compute the tanh Gelu as x sigmoid(2u) and Mish from one exp; over a dense range and
    the special values they agree with the textbook tanh formulas to about an ulp."""
    from irnorm.kernels import activation as K

    x = np.concatenate([np.linspace(-60, 60, 120_001), [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30, -1e30, 40.0,
                                                          39.99, 44.0]]).astype(dtype)
    for name, ref in (("gelu_tanh", lambda v: R.gelu(v, "tanh")), ("mish", R.mish)):
        got = K.unary(K.CODES[name], x).astype(np.float64)
        e = ref(x.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(e), err_msg=name)
        np.testing.assert_array_equal(got[np.isinf(e)], e[np.isinf(e)], err_msg=name)
        fin = np.isfinite(e)
        np.testing.assert_allclose(got[fin], e[fin], rtol=rel, atol=rel, err_msg=name)


def _trig_data(dtype, rows: int) -> np.ndarray:
    """[3, rows] arguments: a rotary table's (positions times inverse frequencies, up to 8192 rad); wide ones,
    up to 2e6 (beyond vmath.TRIG_MAX in most 8192-element blocks, not in the first ones); tiny ones, zeros and
    the specials."""
    rng = np.random.default_rng(11)
    rotary = np.outer(np.arange(rows // 64), 10000.0 ** -(np.arange(64) / 64)).reshape(-1)
    wide = rng.uniform(-2e6, 2e6, rows) * np.where(np.arange(rows) < 3 * 8192, 1e-2, 1.0)
    small = np.concatenate([np.logspace(-40, 0, rows - 8), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -3e38, 8e6]])
    with np.errstate(over="ignore"):  # float16: the wide ones overflow to +-inf
        return np.stack([rotary, wide, small]).astype(dtype)


# numpy's and libm's function, float32 ulps: vmath's bound (Tan: libm's tanf past TRIG_MAX, 0.79 here)
_TRIG = {"Sin": (np.sin, math.sin, 1.6), "Cos": (np.cos, math.cos, 1.6), "Tan": (np.tan, math.tan, 1.0),
         "Atan": (np.arctan, math.atan, 1.5)}


@pytest.mark.parametrize("type_", list(_TRIG))
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16, np.float64])
def test_trig_against_float64(tmp_path, type_, dtype):
    """Sin, Cos and Tan: float32 (f16 and bf16 computed in float32) take vmath's vectorized functions in the
    blocks whose |x| stay below vmath.TRIG_MAX, libm element by element past it; Atan vmath's everywhere.
    Within vmath's bounds of float64 (f16 / bf16: the float64 result rounded to that type, or its neighbour);
    float64 is libm's.  The parallel path (a model) and the serial one (a small tensor) both; -0.0 kept
    by the odd ones, NaN where float64 gives NaN (inf, except Atan's +-pi/2)."""
    from irnorm.kernels import activation as K
    from irnorm.kernels.vmath import TRIG_MAX

    ref_fn, libm, bound = _TRIG[type_]
    x = _trig_data(dtype, 40_000)
    if dtype != np.float16:
        assert np.abs(x[1].astype(np.float32)).max() > 2 * TRIG_MAX
    et = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", BF16: "bf16", np.dtype(np.float64): "f64"}
    b = _one(type_, "opset1", [("param:x", (x.shape, et[np.dtype(dtype)]))], (x.shape, et[np.dtype(dtype)]))
    got = run_model(b, tmp_path, {"x": x})["y"]
    serial = K.unary(K.CODES[type_.lower()], x[:, -5000:])
    assert np.array_equal(serial.view(np.uint8), got[:, -5000:].view(np.uint8))  # the same per element
    x64, g64 = x.astype(np.float64).reshape(-1), got.astype(np.float64).reshape(-1)
    with np.errstate(invalid="ignore"):
        ref = ref_fn(x64)
    nan = np.isnan(ref)
    assert np.isnan(g64[nan]).all()
    g64, ref, xf = g64[~nan], ref[~nan], x64[~nan]
    if dtype == np.float64:
        assert g64.tolist() == [libm(v) for v in xf]
        return
    if dtype == np.float32:
        normal = np.abs(ref) > np.finfo(np.float32).tiny
        ulps = np.abs(g64[normal] - ref[normal]) / np.spacing(np.abs(ref[normal]).astype(np.float32))
        assert ulps.max() < bound, ulps.max()
    else:  # f16 / bf16: the float64 result rounded to the type, or the float32 result's rounding next to it
        with np.errstate(over="ignore"):
            r = ref.astype(dtype)
        fin = np.isfinite(r)  # (Tan: past the type's largest value, both round to +-inf or its neighbour)
        r, ref, g = r[fin], ref[fin], g64[fin]
        step = np.abs(np.nextafter(r, (2 * np.abs(ref) + 1).astype(dtype)).astype(np.float64) - r.astype(np.float64))
        assert np.all(np.abs(g - r.astype(np.float64)) <= step)
    if type_ != "Cos":
        zeros = xf == 0
        assert np.signbit(xf[zeros]).any()
        assert np.array_equal(np.signbit(g64[zeros]), np.signbit(xf[zeros]))  # f(-0) = -0


def test_nasty_values_follow_the_reference_formulas(tmp_path):
    """The documented NaN/inf results (OpenVINO's reference), where its CPU plugin differs."""
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 100.0, -100.0], np.float32)
    expect = {
        ("Relu", "opset1"): [np.nan, np.inf, 0, -0.0, 100, 0],  # CPU plugin: Relu(NaN) = 0
        ("HSigmoid", "opset5"): [np.nan, 1, 0, 0.5, 1, 0],  # CPU plugin: HSigmoid(NaN) = 0
        ("Gelu", "opset2"): [np.nan, np.inf, np.nan, -0.0, 100, -0.0],  # CPU plugin: Gelu(inf) = NaN
        ("SoftPlus", "opset4"): [np.nan, np.inf, 0, np.log(2), 100, 0],
        ("Sign", "opset1"): [np.nan, 1, -1, 0, 1, -1],
    }
    for (type_, version), e in expect.items():
        b = _one(type_, version, [("param:x", ((6,), "f32"))], ((6,), "f32"))
        got = run_model(b, tmp_path / type_, {"x": x})["y"]
        np.testing.assert_allclose(got, np.array(e, np.float32), rtol=1e-6, atol=1e-30, err_msg=type_)
    b = _one("HardSigmoid", "opset1", [("param:x", ((6,), "f32")), ("a", np.float32(0.2)), ("b", np.float32(0.5))],
             ((6,), "f32"))
    got = run_model(b, tmp_path / "hs", {"x": x})["y"]
    np.testing.assert_array_equal(got, np.array([1, 1, 0, 0.5, 1, 0], np.float32))  # std::min(1, NaN) = 1


def test_integer_data(tmp_path):
    x = np.array([-7, -1, 0, 3, 120], np.int8)
    for type_, version, attrs, e in [("Relu", "opset1", None, [0, 0, 0, 3, 120]), ("Sign", "opset1", None,
                                     [-1, -1, 0, 1, 1]), ("Floor", "opset1", None, x), ("Ceiling", "opset1", None, x),
                                     ("Round", "opset5", {"mode": "half_away_from_zero"}, x)]:
        b = _one(type_, version, [("param:x", ((5,), "i8"))], ((5,), "i8"), attrs)
        got = run_model(b, tmp_path / type_, {"x": x})["y"]
        assert got.dtype == np.int8 and got.tolist() == list(e), type_
    b = _one("PRelu", "opset1", [("param:x", ((5,), "i8")), ("s", np.array([2], np.int8))], ((5,), "i8"))
    assert run_model(b, tmp_path / "prelu", {"x": x})["y"].tolist() == [-14, -2, 0, 3, 120]


def test_constant_inputs_fold_at_load(tmp_path):
    b = IRBuilder("fold")
    p = b.parameter("p", (3,), "f32")
    c = b.const(np.array([-1.0, 0.5, 2.0], np.float32))
    (g,) = b.layer("Gelu", [c], [((3,), "f32")], {"approximation_mode": "tanh"}, version="opset7")
    (y,) = b.layer("Add", [p, g], [((3,), "f32")], {}, version="opset1", names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    got = m.run({"p": np.zeros(3, np.float32)})["y"]
    np.testing.assert_allclose(got, R.gelu([-1.0, 0.5, 2.0], "tanh"), rtol=1e-6)


def test_swish_beta_as_model_input(tmp_path):
    """beta may be a model input (a scalar Parameter); a rank-1 one is refused at load."""
    for shape, ok in (((), True), ((-1,), False)):
        b = IRBuilder("swish")
        x = b.parameter("x", (4,), "f32")
        beta = b.parameter("beta", shape, "f32")
        (y,) = b.layer("Swish", [x, beta], [((4,), "f32")], None, version="opset4", names=["y"])
        b.result(y)
        xml = b.save(tmp_path / str(ok))
        if ok:
            xv = np.array([-2.0, -0.5, 0.5, 3.0], np.float32)
            got = irnorm.load(xml).run({"x": xv, "beta": np.array(1.3, np.float32)})["y"]
            np.testing.assert_allclose(got, R.swish(xv, 1.3), rtol=1e-6)
        else:
            errs = [d for d in irnorm.check(xml) if d.severity == "error"]
            assert [d.code for d in errs] == ["IRN032"] and "scalar" in errs[0].message


# ---- OpenVINO-written files ------------------------------------------------------------------------


@requires_openvino
def test_openvino_file_with_dynamic_dims_at_two_shapes(tmp_path):
    ov = pytest.importorskip("openvino")
    import openvino.opset4 as op4
    import openvino.opset5 as op5
    import openvino.opset7 as op7
    import openvino.opset9 as op9

    x = op4.parameter(ov.PartialShape([-1, 8, -1]), np.float32, name="x")
    s = op4.constant(np.linspace(0.05, 0.4, 8).astype(np.float32))
    outs = {
        "gelu": op7.gelu(x, "tanh"), "swish": op4.swish(x, op4.constant(np.float32(1.3))), "hswish": op4.hswish(x),
        "hsig": op5.hsigmoid(x), "mish": op4.mish(x), "softplus": op4.softplus(x), "elu": op4.elu(x, 0.3),
        "prelu": op4.prelu(x, s), "softsign": op9.softsign(x), "round": op5.round(x, "half_away_from_zero"),
        "atan": op4.atan(x), "floor": op4.floor(x),
    }
    for name, node in outs.items():
        node.output(0).get_tensor().set_names({name})
    xml = save(ov.Model([op4.result(n) for n in outs.values()], [x], "acts"), tmp_path, "acts")
    rng = np.random.default_rng(3)
    for shape in [(2, 8, 5), (3, 8, 4000)]:  # the second takes the parallel kernels
        got = compare_with_openvino(xml, {"x": (rng.standard_normal(shape) * 4).astype(np.float32)})
        assert got["gelu"].shape == shape


@requires_openvino
def test_cpu_plugin_divergences(tmp_path):
    """Where OpenVINO's CPU plugin departs from OpenVINO's reference, irnorm follows the reference; the
    plugin agrees with irnorm on the other values of the same file, and on the divergent ones gives
    either the reference value or the departure documented in irnorm.ops.activation (which one may
    depend on the plugin's version and instruction set)."""
    ov = pytest.importorskip("openvino")
    import openvino.opset5 as op5

    x = op5.parameter([3], np.float32, name="x")
    outs = {"relu": op5.relu(x), "hsig": op5.hsigmoid(x),
            "hard": op5.hard_sigmoid(x, op5.constant(np.float32(0.2)), op5.constant(np.float32(0.0)))}
    for name, node in outs.items():
        node.output(0).get_tensor().set_names({name})
    xml = save(ov.Model([op5.result(n) for n in outs.values()], [x], "div"), tmp_path, "div")
    feeds = {"x": np.array([np.nan, 1.0, -1.0], np.float32)}
    cpu, ours = ov_run(xml, feeds), irnorm.load(xml).run(feeds)
    # irnorm: the reference formulas
    assert np.isnan(ours["relu"][0]) and ours["relu"][1:].tolist() == [1.0, 0.0]
    assert np.isnan(ours["hsig"][0])
    np.testing.assert_allclose(ours["hsig"][1:], [4 / 6, 2 / 6], rtol=1e-6)
    np.testing.assert_allclose(ours["hard"], [1.0, 0.2, 0.0], rtol=1e-6)  # NaN -> 1 (std::min/max order)
    # the CPU plugin: same on ordinary values; NaN gives 0 for Relu/HSigmoid (documented) or NaN
    np.testing.assert_allclose(cpu["relu"][1:], ours["relu"][1:])
    np.testing.assert_allclose(cpu["hsig"][1:], ours["hsig"][1:], rtol=1e-6)
    assert cpu["relu"][0] == 0 or np.isnan(cpu["relu"][0])
    assert cpu["hsig"][0] == 0 or np.isnan(cpu["hsig"][0])
    # HardSigmoid: the CPU plugin 2026.4 uses beta = 0.5 whatever the beta input holds
    hard = cpu["hard"][1:]
    assert np.allclose(hard, [0.7, 0.3], rtol=1e-6) or np.allclose(hard, ours["hard"][1:], rtol=1e-6)
