"""Normalization (irnorm1 extension, TensorRT INormalization): instance, group and layer flavours
against the float64 reference (and the spec's own example code), against onnxruntime's
InstanceNormalization / GroupNormalization-21, and every rule as a malformed-IR test."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error, run_model, single_op_model
from ovutil import assert_close, compare_with_openvino, requires_openvino

import irnorm
from irnorm import reference as R

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16}
TOL = {"f32": (1e-5, 1e-5), "f16": (1e-3, 1e-3), "bf16": (8e-3, 8e-3)}


def mask_of(axes) -> int:
    return sum(1 << a for a in axes)


def trt_model(x_shape, et, scale, bias, attrs, params_as_inputs=False):
    ins = [("param:x", (x_shape, et))]
    if params_as_inputs:
        ins += [("param:scale", (scale.shape, et)), ("param:bias", (bias.shape, et))]
    else:
        ins += [("scale", scale), ("bias", bias)]
    return single_op_model("Normalization", ins, [(x_shape, et)], attrs)


def random_x(rng, shape, kind, dt):
    if kind == "normal":
        x = rng.standard_normal(shape) * rng.uniform(0.5, 5) + rng.uniform(-3, 3)
    elif kind == "big_mean":
        x = 1e4 + 1e-2 * rng.standard_normal(shape)
    elif kind == "zeros":
        x = np.zeros(shape)
    else:  # constant per (n, c): zero variance for instance norm
        x = np.broadcast_to(rng.standard_normal(shape[:2] + (1,) * (len(shape) - 2)), shape).copy()
    return x.astype(dt)


def check(tmp_path, x, scale, bias, mask, groups=1, eps=1e-5, name="m", write_groups=False, extra=None):
    """Run one Normalization layer and compare with the float64 reference; return irnorm's output."""
    et = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", BF16: "bf16"}[x.dtype]
    attrs = {"axes": mask, "epsilon": eps}
    if groups != 1 or write_groups:
        attrs["num_groups"] = groups
    attrs.update(extra or {})
    out = run_model(trt_model(x.shape, et, scale, bias, attrs), tmp_path, {"x": x}, name=name)["y"]
    ref = R.trt_normalization(x, scale, bias, mask, groups, eps)
    assert out.dtype == x.dtype and out.shape == x.shape
    rtol, atol = TOL[et]
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=rtol, atol=atol,
                               err_msg=f"{et} {x.shape} mask={mask:#x} G={groups} scale={scale.shape}")
    return out


def test_spec_example(tmp_path):
    """The spec's example: (2,3,2,2) input, axes = 1<<2 | 1<<3, scale [1,2,3], bias [-3,-2,-1],
    checked against the spec's own normalization_reference code."""

    def normalization_reference(x, s, bias, axes, epsilon=1e-5):  # copied from the spec
        num_dims = len(x.shape)
        converted = tuple(i for i in range(num_dims) if axes & (1 << i))
        mean = np.mean(x, axis=converted, keepdims=True)
        var = np.var(x, axis=converted, keepdims=True)
        return s * (x - mean) / np.sqrt(var + epsilon) + bias

    rng = np.random.default_rng(0)
    x = rng.random((2, 3, 2, 2)).astype(np.float32)
    s = np.array([1.0, 2.0, 3.0], np.float32).reshape(1, 3, 1, 1)
    b = np.array([-3.0, -2.0, -1.0], np.float32).reshape(1, 3, 1, 1)
    axes = 1 << 2 | 1 << 3
    out = run_model(trt_model(x.shape, "f32", s, b, {"axes": axes}), tmp_path, {"x": x})["y"]
    np.testing.assert_allclose(out, normalization_reference(x.astype(np.float64), s, b, axes), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("et", ["f32", "f16", "bf16"])
def test_instance_norm_random(tmp_path, et):
    rng = np.random.default_rng({"f32": 1, "f16": 2, "bf16": 3}[et])
    for case in range(8):
        r = int(rng.integers(3, 6))
        shape = (int(rng.integers(1, 4)), int(rng.integers(1, 6))) + tuple(int(d) for d in rng.integers(1, 6, r - 2))
        c = shape[1]
        x = random_x(rng, shape, ["normal", "big_mean", "zeros", "constant"][case % 4], DTYPES[et])
        s = rng.standard_normal((1, c) + (1,) * (r - 2)).astype(DTYPES[et])
        b = rng.standard_normal((1, c) + (1,) * (r - 2)).astype(DTYPES[et])
        check(tmp_path, x, s, b, mask_of(range(2, r)), name=f"in{case}", write_groups=case % 2 == 0)


@pytest.mark.parametrize("et", ["f32", "f16", "bf16"])
def test_layer_norm_random(tmp_path, et):
    """num_groups=1 with a trailing axes range (or any mask); scale/bias shaped by the axes
    ([1,1,D2,...,DN] for axes 2..N), or broadcasting over some of them."""
    rng = np.random.default_rng({"f32": 4, "f16": 5, "bf16": 6}[et])
    dt = DTYPES[et]
    for case in range(8):
        r = int(rng.integers(2, 5))
        shape = tuple(int(d) for d in rng.integers(1, 6, r))
        first = int(rng.integers(0, r))
        axes = list(range(first, r))
        pshape = tuple(1 if a < first or rng.random() < 0.3 else shape[a] for a in range(r))
        x = random_x(rng, shape, ["normal", "big_mean", "zeros"][case % 3], dt)
        s = rng.standard_normal(pshape).astype(dt)
        b = rng.standard_normal(pshape).astype(dt)
        check(tmp_path, x, s, b, mask_of(axes), name=f"ln{case}")


def test_arbitrary_masks_and_broadcast_shapes(tmp_path):
    """Any mask (non-contiguous, with axis 0, empty) and any same-rank scale that broadcasts,
    including ones that vary along non-reduced trailing axes (the unfused fallback)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    for k, mask in enumerate([0b0101, 0b1010, 0b0001, 0b1000, 0b0100, 0, 0b1111, 0b1001, 0b0110]):
        for pshape in [(1, 4, 1, 1), (1, 1, 5, 6), (3, 4, 5, 6), (1, 1, 1, 6), (3, 1, 5, 1)]:
            s = rng.standard_normal(pshape).astype(np.float32)
            b = rng.standard_normal(pshape).astype(np.float32)
            check(tmp_path, x, s, b, mask, name=f"m{k}")


@pytest.mark.parametrize("et", ["f32", "f16", "bf16"])
def test_group_norm_random(tmp_path, et):
    rng = np.random.default_rng({"f32": 8, "f16": 9, "bf16": 10}[et])
    dt = DTYPES[et]
    for case in range(10):
        r = int(rng.integers(2, 5))
        g = int(rng.choice([1, 2, 3, 4]))
        c = g * int(rng.integers(1, 4))
        shape = (int(rng.integers(1, 4)), c) + tuple(int(d) for d in rng.integers(1, 5, r - 2))
        spatial = list(range(2, r))
        # the usual mask (all spatial axes), or a random subset, sometimes with axis 0
        axes = spatial if case % 3 == 0 else [a for a in spatial if rng.random() < 0.5] + ([0] if case % 4 == 1 else [])
        k = g if case % 2 else c  # per group (TensorRT docs) or per channel (ONNX-21 / PyTorch / OpenVINO)
        pshape = (1, k) + (1,) * (r - 2)
        x = random_x(rng, shape, ["normal", "big_mean", "zeros", "constant"][case % 4], dt)
        s = rng.standard_normal(pshape).astype(dt)
        b = rng.standard_normal(pshape).astype(dt)
        check(tmp_path, x, s, b, mask_of(axes), groups=g, name=f"gn{case}", write_groups=True)


def test_group_norm_per_group_equals_repeated_per_channel(tmp_path):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 6, 4, 4)).astype(np.float32)
    sg = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    bg = rng.standard_normal((1, 3, 1, 1)).astype(np.float32)
    a = check(tmp_path, x, sg, bg, 0b1100, groups=3, name="pg")
    b = check(tmp_path, x, np.repeat(sg, 2, axis=1), np.repeat(bg, 2, axis=1), 0b1100, groups=3, name="pc")
    np.testing.assert_array_equal(a, b)


def test_params_as_model_inputs_and_dynamic_dims(tmp_path):
    rng = np.random.default_rng(13)
    s = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
    b = rng.standard_normal((1, 4, 1, 1)).astype(np.float32)
    x = rng.standard_normal((2, 8, 3, 3)).astype(np.float32)
    out = run_model(trt_model(x.shape, "f32", s, b, {"axes": 12, "num_groups": 4}, params_as_inputs=True), tmp_path,
                    {"x": x, "scale": s, "bias": b})["y"]
    np.testing.assert_allclose(out, R.trt_normalization(x, s, b, 12, 4), rtol=1e-5, atol=1e-5)
    m = irnorm.load(trt_model((-1, -1, -1, -1), "f32", s, b, {"axes": 12, "num_groups": 4}).save(tmp_path, "dyn"))
    for shape in [(2, 8, 3, 3), (1, 4, 5, 2), (3, 12, 1, 1)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(m.run({"x": x})["y"], R.trt_normalization(x, s, b, 12, 4), rtol=1e-5, atol=1e-5)
    with pytest.raises(irnorm.InputError) as e:  # C=6 is not divisible by 4 groups
        m.run({"x": np.zeros((1, 6, 2, 2), np.float32)})
    assert e.value.code == "IRN064" and "C=6 channels are not divisible by num_groups=4" in str(e.value)


def test_compute_precision_is_accepted_and_never_lowers_precision(tmp_path):
    rng = np.random.default_rng(14)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float16)
    s = rng.standard_normal((1, 3, 1, 1)).astype(np.float16)
    b = rng.standard_normal((1, 3, 1, 1)).astype(np.float16)
    outs = [check(tmp_path, x, s, b, 12, name=f"cp{cp}", extra={"compute_precision": cp}) for cp in ("f32", "F16")]
    np.testing.assert_array_equal(outs[0], outs[1])


def test_epsilon_zero_on_constant_instances(tmp_path):
    x = np.full((1, 2, 2, 2), 0.25, np.float32)
    x[0, 1] = [[1, 2], [3, 4]]
    ones, zeros = np.ones((1, 2, 1, 1), np.float32), np.zeros((1, 2, 1, 1), np.float32)
    out = run_model(trt_model(x.shape, "f32", ones, zeros, {"axes": 12, "epsilon": 0.0}), tmp_path, {"x": x})["y"]
    assert np.isnan(out[0, 0]).all()
    np.testing.assert_allclose(out[0, 1], R.trt_normalization(x, ones, zeros, 12, 1, 0.0)[0, 1], rtol=1e-6)


# ---- onnxruntime ------------------------------------------------------------------------------------


def _ort(op, x, scale, bias, **attrs):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    t = TensorProto.FLOAT16 if x.dtype == np.float16 else TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info("X", t, x.shape), helper.make_tensor_value_info("S", t, scale.shape),
              helper.make_tensor_value_info("B", t, bias.shape)]
    node = helper.make_node(op, ["X", "S", "B"], ["Y"], **attrs)
    model = helper.make_model(helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y", t, x.shape)]),
                              opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x, "S": scale, "B": bias})[0]


@pytest.mark.parametrize("et", ["f32", "f16"])
def test_instance_norm_matches_onnxruntime(tmp_path, et):
    rng = np.random.default_rng(20)
    dt = DTYPES[et]
    for k, shape in enumerate([(2, 3, 4, 5), (1, 4, 7), (2, 2, 3, 2, 2)]):
        x = (rng.standard_normal(shape) * 2 + 10).astype(dt)
        c, r = shape[1], len(shape)
        s = rng.standard_normal(c).astype(dt)
        b = rng.standard_normal(c).astype(dt)
        y = _ort("InstanceNormalization", x, s, b, epsilon=1e-5)
        p = (1, c) + (1,) * (r - 2)
        out = run_model(trt_model(shape, et, s.reshape(p), b.reshape(p), {"axes": mask_of(range(2, r))}), tmp_path,
                        {"x": x}, name=f"ort{k}")["y"]
        tol = 1e-5 if et == "f32" else 2e-3
        np.testing.assert_allclose(out.astype(np.float32), y.astype(np.float32), rtol=tol, atol=tol)


@pytest.mark.parametrize("et", ["f32", "f16"])
def test_group_norm_matches_onnxruntime_groupnorm21(tmp_path, et):
    """ONNX GroupNormalization-21 takes per-channel [C] scale/bias: irnorm's per-channel reading."""
    rng = np.random.default_rng(21)
    dt = DTYPES[et]
    for k, (shape, g) in enumerate([((2, 6, 4, 5), 3), ((1, 8, 9), 2), ((2, 4, 2, 3, 2), 4), ((3, 6, 2, 2), 1)]):
        x = (rng.standard_normal(shape) * 2 - 5).astype(dt)
        c, r = shape[1], len(shape)
        s = rng.standard_normal(c).astype(dt)
        b = rng.standard_normal(c).astype(dt)
        y = _ort("GroupNormalization", x, s, b, epsilon=1e-5, num_groups=g)
        p = (1, c) + (1,) * (r - 2)
        attrs = {"axes": mask_of(range(2, r)), "num_groups": g}
        if g == 1:  # TensorRT's layer flavour: one group = every channel reduced together
            attrs = {"axes": mask_of(range(1, r))}
        out = run_model(trt_model(shape, et, s.reshape(p), b.reshape(p), attrs), tmp_path, {"x": x},
                        name=f"gort{k}")["y"]
        tol = 1e-5 if et == "f32" else 2e-3
        np.testing.assert_allclose(out.astype(np.float32), y.astype(np.float32), rtol=tol, atol=tol)


# ---- malformed IR -------------------------------------------------------------------------------------


def _bad(tmp_path, code, *fragments, x_shape=(2, 6, 3, 3), et="f32", pshape=(1, 6, 1, 1), bshape=None, attrs=None,
         pdtype=np.float32):
    s = np.ones(pshape, pdtype)
    b = np.zeros(bshape or pshape, pdtype)
    return expect_error(trt_model(x_shape, et, s, b, attrs if attrs is not None else {"axes": 12}), tmp_path, code,
                        *fragments)


def test_rule_mask_with_channel_axis_in_group_norm(tmp_path):
    _bad(tmp_path, "IRN023", "axes=14 (bitmask 0xe) contains axis 1", "num_groups=3 > 1",
         attrs={"axes": 14, "num_groups": 3})


def test_rule_mask_beyond_rank_and_range(tmp_path):
    _bad(tmp_path, "IRN023", "axes=16 (bitmask 0x10) selects axis 4, but the input has rank 4", attrs={"axes": 16})
    _bad(tmp_path, "IRN023", 'axes="-1"', "must be a uint32 bitmask", attrs={"axes": -1})
    _bad(tmp_path, "IRN023", 'axes="4294967296"', "uint32", attrs={"axes": 1 << 32})
    _bad(tmp_path, "IRN021", 'axes="2, 3"', "is not an integer", attrs={"axes": "2, 3"})
    _bad(tmp_path, "IRN020", "required attribute 'axes' is missing", attrs={"epsilon": 1e-5})


def test_rule_attribute_values(tmp_path):
    _bad(tmp_path, "IRN023", 'num_groups="0"', "must be at least 1", attrs={"axes": 12, "num_groups": 0})
    _bad(tmp_path, "IRN023", 'epsilon="-0.001"', "must be non-negative", attrs={"axes": 12, "epsilon": -1e-3})
    _bad(tmp_path, "IRN021", 'compute_precision="f64"', "is not one of f32, f16",
         attrs={"axes": 12, "compute_precision": "f64"})
    _bad(tmp_path, "IRN022", "unknown attribute 'nb_groups'", attrs={"axes": 12, "nb_groups": 2})


def test_rule_groups_and_channels(tmp_path):
    _bad(tmp_path, "IRN023", "C=6 channels are not divisible by num_groups=4", pshape=(1, 4, 1, 1),
         attrs={"axes": 12, "num_groups": 4})
    _bad(tmp_path, "IRN023", "num_groups=8 exceeds the channel count C=6", pshape=(1, 8, 1, 1),
         attrs={"axes": 12, "num_groups": 8})
    _bad(tmp_path, "IRN032", "needs an input [N, C, ...] of rank >= 2", x_shape=(6,), pshape=(6,),
         attrs={"axes": 1, "num_groups": 2})


def test_rule_group_norm_scale_shapes(tmp_path):
    _bad(tmp_path, "IRN032", "scale has shape [1,4,1,1]; with num_groups=3 it must be per group [1,3,1,1] (TensorRT) "
                             "or per channel [1,6,1,1]", pshape=(1, 4, 1, 1), attrs={"axes": 12, "num_groups": 3})
    _bad(tmp_path, "IRN032", "scale has shape [6]", pshape=(6,), attrs={"axes": 12, "num_groups": 3})
    _bad(tmp_path, "IRN032", "bias has shape [1,3,1,2]", pshape=(1, 3, 1, 1), bshape=(1, 3, 1, 2),
         attrs={"axes": 12, "num_groups": 3})
    _bad(tmp_path, "IRN032", "scale [1,3,1,1] is per group but bias [1,6,1,1] is per channel", pshape=(1, 3, 1, 1),
         bshape=(1, 6, 1, 1), attrs={"axes": 12, "num_groups": 3})


def test_rule_instance_and_layer_scale_shapes(tmp_path):
    _bad(tmp_path, "IRN032", "scale has shape [6]; it must have the input's rank 4", pshape=(6,))
    _bad(tmp_path, "IRN032", "scale has shape [1,3,1,1]", "each dim 1 or the input's dim", pshape=(1, 3, 1, 1))
    _bad(tmp_path, "IRN032", "bias has shape [1,1,3,4]", pshape=(1, 1, 3, 3), bshape=(1, 1, 3, 4),
         attrs={"axes": 12})


def test_rule_types(tmp_path):
    _bad(tmp_path, "IRN033", "input must be f32, f16 or bf16", et="f64", pdtype=np.float64)
    _bad(tmp_path, "IRN033", "scale has element type f16, expected f32", pdtype=np.float16)


# ---- OpenVINO --------------------------------------------------------------------------------------


@requires_openvino
@pytest.mark.parametrize("per", ["channel", "group"])
def test_group_norm_matches_openvino_groupnorm12(tmp_path, per):
    """The same data through OpenVINO's GroupNormalization-12 (per-channel [C] scale/bias) and
    irnorm's Normalization (per channel, or per group with the values repeated per channel).  The
    OpenVINO IR is written by tests/irbuilder.py, which also checks that its layout is one
    OpenVINO reads."""
    rng = np.random.default_rng(30)
    x = (rng.standard_normal((2, 6, 5, 4)) * 2 + 3).astype(np.float32)
    g = 3
    sg, bg = rng.standard_normal(g).astype(np.float32), rng.standard_normal(g).astype(np.float32)
    s, b = (np.repeat(sg, 2), np.repeat(bg, 2)) if per == "group" else (rng.standard_normal(6).astype(np.float32),
                                                                        rng.standard_normal(6).astype(np.float32))
    ov_model = IRBuilder("gn12")
    xp = ov_model.parameter("x", x.shape)
    (y,) = ov_model.layer("GroupNormalization", [xp, ov_model.const(s), ov_model.const(b)], [(x.shape, "f32")],
                          {"num_groups": g, "epsilon": 1e-5}, version="opset12", names=["y"])
    ov_model.result(y)
    expected = compare_with_openvino(ov_model.save(tmp_path), {"x": x})["y"]
    ps, pb = (sg, bg) if per == "group" else (s, b)
    shape = (1, ps.size, 1, 1)
    out = run_model(trt_model(x.shape, "f32", ps.reshape(shape), pb.reshape(shape), {"axes": 12, "num_groups": g}),
                    tmp_path, {"x": x}, name="trt")["y"]
    assert_close(out, expected, "Normalization vs GroupNormalization-12")
