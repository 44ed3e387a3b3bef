"""BatchNormInference-1 and -5: port order on files written by ``save_model``, conformance
against OpenVINO (weights with and without fp16 compression) and the float64 oracle, nasty
inputs with the pinned CPU-plugin deviations, and one malformed-IR test per rule."""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest
from ovutil import HAVE_OPENVINO, assert_close, compare_with_openvino, ov_run, requires_openvino, save
from test_ops_mvn import assert_diag, check_ref, errors_of, make_ir, run1

import irnorm
from irnorm import reference as R

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as ops1
    import openvino.opset5 as ops5

BF16 = np.dtype(ml_dtypes.bfloat16)
BUILDERS = {1: "ops1", 5: "ops5"}


def _params(rng, c, dtype=np.float32):
    gamma = rng.uniform(-2, 2, c).astype(dtype)
    beta = rng.standard_normal(c).astype(dtype)
    mean = (rng.standard_normal(c) * 3).astype(dtype)
    var = rng.uniform(0.05, 4, c).astype(dtype)
    return gamma, beta, mean, var


def _model(version, shape, dtype, params, eps, name="x"):
    p = ops1.parameter(shape, dtype, name=name)
    build = ops1 if version == 1 else ops5
    node = build.batch_norm_inference(p, *params, eps)
    node.output(0).get_tensor().set_names({"y"})
    return ov.Model([node], [p], f"bn{version}")


def _edges_into(xml_text: str, layer_type: str) -> dict[str, int]:
    """{producer layer name: input port of the `layer_type` layer} from the XML."""
    ids = dict(re.findall(r'<layer id="(\d+)" name="([^"]*)"', xml_text))
    target = re.search(rf'<layer id="(\d+)" name="[^"]*" type="{layer_type}"', xml_text).group(1)
    return {ids[f]: int(tp) for f, tp in
            re.findall(rf'<edge from-layer="(\d+)" from-port="\d+" to-layer="{target}" to-port="(\d+)"', xml_text)}


@requires_openvino
@pytest.mark.parametrize("version,data_port,version_attr", [(1, 2, "opset1"), (5, 0, "opset5")])
def test_port_order_in_files_written_by_save_model(tmp_path, version, data_port, version_attr):
    """BN-1 is gamma, beta, data, mean, variance; BN-5 is data, gamma, beta, mean, variance."""
    rng = np.random.default_rng(version)
    gamma, beta, mean, var = _params(rng, 3)
    consts = [ops1.constant(v, name=n) for v, n in zip((gamma, beta, mean, var), ("g", "b", "m", "v"), strict=True)]
    p = ops1.parameter([2, 3, 4], np.float32, name="x")
    node = (ops1 if version == 1 else ops5).batch_norm_inference(p, *consts, 1e-3)
    node.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([node], [p]), tmp_path, "bn", compress_to_fp16=False)
    text = xml.read_text()
    assert f'type="BatchNormInference" version="{version_attr}"' in text
    ports = _edges_into(text, "BatchNormInference")
    want = {"x": data_port, "m": 3, "v": 4, **({"g": 0, "b": 1} if version == 1 else {"g": 1, "b": 2})}
    assert ports == want
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.batch_norm_inference(x, gamma, beta, mean, var, 1e-3).astype(np.float32))


@requires_openvino
def test_random_vs_openvino_and_reference(tmp_path):
    rng = np.random.default_rng(0)
    for case in range(24):
        version = 1 if case % 2 else 5
        rank = int(rng.integers(2, 6))
        shape = [int(d) for d in rng.integers(1, 6, size=rank)]
        et = np.float16 if case % 4 == 3 else np.float32
        params = _params(rng, shape[1], et)
        eps = float(rng.choice([0.0, 1e-5, 1e-3, 0.5]))
        compress = bool(case % 3 == 0)
        x = (rng.standard_normal(shape) * rng.choice([0.5, 3.0]) + rng.choice([0.0, 2.0])).astype(et)
        xml = save(_model(version, shape, et, params, eps), tmp_path, f"m{case}", compress_to_fp16=compress)
        what = f"case {case}: BN-{version} {shape} {np.dtype(et).name} eps={eps} compress={compress}"
        got = compare_with_openvino(xml, {"x": x})["y"]
        if compress and et == np.float32:  # the model's parameters are the f16-rounded ones
            params = tuple(p.astype(np.float16) for p in params)
        check_ref(got, R.batch_norm_inference(x, *params, eps).astype(et), what)


@requires_openvino
def test_compressed_weights_warn_and_match(tmp_path):
    rng = np.random.default_rng(1)
    params = _params(rng, 4)
    xml = save(_model(5, [2, 4, 3, 3], np.float32, params, 1e-5), tmp_path, "m", compress_to_fp16=True)
    assert "IRN091" in [d.code for d in irnorm.validate(xml)]
    x = rng.standard_normal((2, 4, 3, 3)).astype(np.float32)
    got = compare_with_openvino(xml, {"x": x})["y"]
    f16 = tuple(p.astype(np.float16) for p in params)
    check_ref(got, R.batch_norm_inference(x, *f16, 1e-5).astype(np.float32))


@requires_openvino
@pytest.mark.parametrize("version", [1, 5])
def test_non_constant_parameters(tmp_path, version):
    """gamma/beta/mean/variance may be model inputs: the coefficients are computed per run."""
    rng = np.random.default_rng(2)
    x_p = ops1.parameter([2, 3, 5], np.float32, name="x")
    params = [ops1.parameter([3], np.float32, name=n) for n in ("gamma", "beta", "mean", "var")]
    node = (ops1 if version == 1 else ops5).batch_norm_inference(x_p, *params, 1e-4)
    node.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([node], [x_p, *params]), tmp_path, "m")
    for _ in range(2):
        vals = _params(rng, 3)
        feeds = {"x": rng.standard_normal((2, 3, 5)).astype(np.float32),
                 **dict(zip(("gamma", "beta", "mean", "var"), vals, strict=True))}
        got = compare_with_openvino(xml, feeds)["y"]
        check_ref(got, R.batch_norm_inference(feeds["x"], *vals, 1e-4).astype(np.float32))


@requires_openvino
def test_dynamic_shape(tmp_path):
    rng = np.random.default_rng(3)
    params = _params(rng, 3)
    p = ops1.parameter(ov.PartialShape([-1, -1, -1]), np.float32, name="x")
    node = ops5.batch_norm_inference(p, *params, 1e-5)
    node.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([node], [p]), tmp_path, "dyn")
    m = irnorm.load(xml)
    assert m.outputs[0].shape == (-1, 3, -1)  # C comes from the parameters
    for shape in ([1, 3, 1], [4, 3, 9]):
        x = rng.standard_normal(shape).astype(np.float32)
        got = compare_with_openvino(xml, {"x": x})["y"]
        check_ref(got, R.batch_norm_inference(x, *params, 1e-5).astype(np.float32))
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.zeros((2, 4, 2), np.float32)})
    assert e.value.code == "IRN064" and "gamma (input 1) has 3 values but data has C=4" in str(e.value)


@requires_openvino
def test_bf16_and_f64(tmp_path):
    rng = np.random.default_rng(4)
    params = _params(rng, 3)
    # bf16 data through a Convert to f32
    p = ops1.parameter([2, 3, 4], ov.Type.bf16, name="x")
    node = ops5.batch_norm_inference(ops1.convert(p, "f32"), *params, 1e-5)
    node.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([node], [p]), tmp_path, "via")
    x = rng.standard_normal((2, 3, 4)).astype(BF16)
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.batch_norm_inference(x, *params, 1e-5).astype(np.float32))
    # bf16 end to end (OpenVINO runs it too)
    pb = tuple(v.astype(BF16) for v in params)
    p = ops1.parameter([2, 3, 4], ov.Type.bf16, name="x")
    consts = [ov.op.Constant(ov.Tensor(v.view(np.uint16), [3], ov.Type.bf16)) for v in pb]
    node = ops5.batch_norm_inference(p, *consts, 1e-5)
    node.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([node], [p]), tmp_path, "bf16")
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.batch_norm_inference(x, *pb, 1e-5).astype(BF16))
    # f64
    p64 = tuple(v.astype(np.float64) for v in params)
    xml = save(_model(1, [2, 3, 4], np.float64, p64, 1e-5), tmp_path, "f64", compress_to_fp16=False)
    x = rng.standard_normal((2, 3, 4))
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.batch_norm_inference(x, *p64, 1e-5))


@requires_openvino
def test_large_mean_small_variance_cpu_deviation(tmp_path):
    """irnorm applies (x - mean) * a + beta; the CPU plugin folds the mean into the shift
    (x * a + b) and loses about 2% of the output range at mean 1e4, variance 1e-4."""
    rng = np.random.default_rng(5)
    gamma = rng.uniform(0.5, 2, 3).astype(np.float32)
    beta = rng.standard_normal(3).astype(np.float32)
    mean = np.full(3, 1e4, np.float32)
    var = np.full(3, 1e-4, np.float32)
    xml = save(_model(5, [2, 3, 16], np.float32, (gamma, beta, mean, var), 1e-6), tmp_path, "m",
               compress_to_fp16=False)
    x = (1e4 + rng.standard_normal((2, 3, 16)) * 1e-2).astype(np.float32)
    exp = R.batch_norm_inference(x, gamma, beta, mean, var, 1e-6)
    got = run1(xml, x)
    check_ref(got, exp.astype(np.float32))
    cpu = ov_run(xml, {"x": x})["y"]
    span = np.abs(exp).max()
    assert np.abs(got - exp).max() < 1e-5 * span
    assert np.abs(cpu - exp).max() > 1e-3 * span


@requires_openvino
def test_zero_variance_and_epsilon(tmp_path):
    """variance + epsilon == 0: x == mean gives NaN (0/0) and x != mean gives +-inf, as the
    formula says; the CPU plugin gives NaN for both."""
    gamma = np.array([1.0, 2.0, -1.0], np.float32)
    beta = np.array([0.5, 0.0, 1.0], np.float32)
    mean = np.array([1.0, 0.0, 2.0], np.float32)
    var = np.zeros(3, np.float32)
    xml = save(_model(5, [1, 3, 2], np.float32, (gamma, beta, mean, var), 0.0), tmp_path, "m",
               compress_to_fp16=False)
    x = np.array([[[1.0, 2.0], [0.0, -1.0], [2.0, 3.0]]], np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        exp = R.batch_norm_inference(x, gamma, beta, mean, var, 0.0).astype(np.float32)
    got = run1(xml, x)
    np.testing.assert_array_equal(got, exp)
    assert np.isnan(got[0, :, 0]).all() and np.isinf(got[0, :, 1]).all()
    assert np.isnan(ov_run(xml, {"x": x})["y"]).all()
    # epsilon alone keeps it finite; epsilon == 0 with a positive variance is fine
    xml = save(_model(1, [1, 3, 2], np.float32, (gamma, beta, mean, var + 1), 0.0), tmp_path, "ok",
               compress_to_fp16=False)
    compare_with_openvino(xml, {"x": x})


def test_handwritten_bn1_reads_data_from_port_2(tmp_path):
    """No OpenVINO needed: BN-1 ports are gamma, beta, data, mean, variance."""
    rng = np.random.default_rng(6)
    gamma, beta, mean, var = _params(rng, 4)
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    bn1 = make_ir(tmp_path / "b1.xml", "BatchNormInference", "opset4", {"epsilon": "0.001"},
                  [gamma, beta, ("param", "x", [3, 4, 2], "f32"), mean, var])
    bn5 = make_ir(tmp_path / "b5.xml", "BatchNormInference", "opset16", {"epsilon": "0.001"},
                  [("param", "x", [3, 4, 2], "f32"), gamma, beta, mean, var])
    y1, y5 = run1(bn1, x), run1(bn5, x)
    np.testing.assert_array_equal(y1, y5)
    check_ref(y1, R.batch_norm_inference(x, gamma, beta, mean, var, 1e-3).astype(np.float32))


def test_kernel_does_not_touch_inputs_and_returns_fresh_arrays(tmp_path):
    rng = np.random.default_rng(7)
    params = _params(rng, 2)
    xml = make_ir(tmp_path / "b.xml", "BatchNormInference", "opset5", {"epsilon": "0"},
                  [("param", "x", [2, 2], "f32"), ("param", "g", [2], "f32"), *params[1:]])
    x = rng.standard_normal((2, 2)).astype(np.float32)
    g = params[0].copy()
    x0, g0 = x.copy(), g.copy()
    y = irnorm.load(xml).run({"x": x, "g": g})["y"]
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(g, g0)
    assert not np.shares_memory(y, x)
    assert_close(y, R.batch_norm_inference(x, g, *params[1:], 0.0).astype(np.float32))


# ---- malformed IR -----------------------------------------------------------------------------

C3 = np.ones(3, np.float32)


def _bn5(tmp_path, data=("param", "x", [2, 3, 4], "f32"), params=(C3, C3, C3, C3), attrs=None):
    return make_ir(tmp_path / "bad.xml", "BatchNormInference", "opset5",
                   {"epsilon": "1e-05"} if attrs is None else attrs, [data, *params])


def test_malformed_good_baseline(tmp_path):
    assert errors_of(_bn5(tmp_path)) == []


def test_malformed_rank_1_data(tmp_path):
    assert_diag(_bn5(tmp_path, data=("param", "x", [3], "f32")), "IRN032",
                r"data must have rank >= 2 \[N, C, \.\.\.\], got \[3\]")


def test_malformed_parameter_length(tmp_path):
    c4 = np.ones(4, np.float32)
    assert_diag(_bn5(tmp_path, params=(C3, C3, c4, C3)), "IRN032", r"mean \(input 3\) has 4 values but data has C=3")


def test_malformed_parameter_length_dynamic_channels(tmp_path):
    c4 = np.ones(4, np.float32)
    xml = _bn5(tmp_path, data=("param", "x", [2, -1, 4], "f32"), params=(C3, c4, C3, C3))
    assert_diag(xml, "IRN032", r"beta \(input 2\) has 4 values but another parameter has 3")


def test_malformed_parameter_rank(tmp_path):
    c13 = np.ones((1, 3), np.float32)
    assert_diag(_bn5(tmp_path, params=(c13, C3, C3, C3)), "IRN032", r"gamma \(input 1\) must be 1-D \[C\], got \[1,3\]")


def test_malformed_bn1_parameter_shape_names_the_bn1_port(tmp_path):
    xml = make_ir(tmp_path / "bad.xml", "BatchNormInference", "opset1", {"epsilon": "1e-05"},
                  [C3, C3, ("param", "x", [2, 3, 4], "f32"), C3, np.ones(2, np.float32)])
    assert_diag(xml, "IRN032", r"variance \(input 4\) has 2 values but data has C=3")
    xml = make_ir(tmp_path / "bad.xml", "BatchNormInference", "opset1", {"epsilon": "1e-05"},
                  [C3, C3, ("param", "x", [2, 3, 4], "f32"), C3, C3.astype(np.float16)])
    assert_diag(xml, "IRN033", r"variance \(input 4\) has element type f16, expected f32")


def test_malformed_element_types(tmp_path):
    assert_diag(_bn5(tmp_path, params=(C3, C3.astype(np.float16), C3, C3)), "IRN033",
                r"beta \(input 2\) has element type f16, expected f32 \(the data's type\)")
    ci = np.ones(3, np.int32)
    assert_diag(_bn5(tmp_path, data=("param", "x", [2, 3], "i32"), params=(ci, ci, ci, ci)), "IRN033",
                r"data must be a floating-point tensor, got i32")


def test_malformed_epsilon(tmp_path):
    assert_diag(_bn5(tmp_path, attrs={"epsilon": "-0.001"}), "IRN023", r"epsilon=\"-0.001\": must be non-negative")
    assert_diag(_bn5(tmp_path, attrs={}), "IRN020", r"required attribute 'epsilon' is missing")
    assert_diag(_bn5(tmp_path, attrs={"epsilon": "1e-5", "eps": "1e-5"}), "IRN022",
                r"unknown attribute 'eps' \(allowed: epsilon\)")
    assert_diag(_bn5(tmp_path, attrs={"epsilon": "tiny"}), "IRN021", r"epsilon=\"tiny\": 'tiny' is not a number")


def test_malformed_arity(tmp_path):
    xml = make_ir(tmp_path / "bad.xml", "BatchNormInference", "opset5", {"epsilon": "1e-05"},
                  [("param", "x", [2, 3, 4], "f32"), C3, C3, C3])
    assert_diag(xml, "IRN017", r"has 4 input ports, BatchNormInference-5 takes 5")
