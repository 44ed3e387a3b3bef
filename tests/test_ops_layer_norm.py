"""LayerNormalization (irnorm1 extension, ONNX-17 semantics): against the float64 reference over
random shapes/axes/dtypes/broadcast shapes and nasty inputs, against onnxruntime, and every
attribute/shape/type rule as a malformed-IR test."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error, run_model, single_op_model

from irnorm import reference as R

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16, "f64": np.dtype(np.float64)}
# (rtol, atol) of irnorm's Y against the float64 reference on the same (rounded) inputs: ~1 ulp of T
TOL = {"f64": (1e-12, 1e-12), "f32": (1e-5, 1e-5), "f16": (1e-3, 1e-3), "bf16": (8e-3, 8e-3)}


def ln_model(x_shape, et, scale, bias=None, attrs=None, n_out=1, scale_param=False):
    """Parameter x -> LayerNormalization(x, Const scale[, Const bias]) -> Results y[, mean, inv]."""
    r = len(x_shape)
    axis = (attrs or {}).get("axis", -1)
    axis = int(axis) % r if isinstance(axis, int) and r else 0
    stats = tuple(x_shape[:axis]) + (1,) * (r - axis)
    stash = {"1": "f32", "16": "bf16", "11": "f64"}.get(str((attrs or {}).get("stash_type", 1)), "f32")
    ins = [("param:x", (x_shape, et))]
    ins.append(("param:scale", (scale.shape, et)) if scale_param else ("scale", scale))
    if bias is not None:
        ins.append(("bias", bias))
    outs = [(x_shape, et), (stats, stash), (stats, stash)][:n_out]
    return single_op_model("LayerNormalization", ins, outs, attrs, out_names=["y", "mean", "inv_std_dev"][:n_out])


def random_x(rng, shape, kind, dtype):
    if kind == "normal":
        x = rng.standard_normal(shape) * rng.uniform(0.1, 10) + rng.uniform(-5, 5)
    elif kind == "big_mean":  # mean 1e4, tiny spread: cancellation trap
        x = 1e4 + 1e-2 * rng.standard_normal(shape)
    elif kind == "constant_rows":  # zero variance along the last axis
        x = np.broadcast_to(rng.standard_normal(shape[:-1] + (1,)) * 3, shape).copy()
    elif kind == "zeros":
        x = np.zeros(shape)
    else:  # "mixed": huge and tiny magnitudes
        x = rng.standard_normal(shape) * np.where(rng.random(shape) < 0.2, 1e3, 1e-3)
    return x.astype(dtype)


def random_broadcast_shape(rng, x_shape):
    """A shape unidirectionally broadcastable to x_shape: a suffix of it with some dims set to 1."""
    k = int(rng.integers(0, len(x_shape) + 1))
    tail = x_shape[len(x_shape) - k:]
    return tuple(int(d) if rng.random() < 0.7 else 1 for d in tail)


@pytest.mark.parametrize("seed", range(8))
def test_matches_reference_random(tmp_path, seed):
    rng = np.random.default_rng(1000 + seed)
    for case in range(6):
        r = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.choice([1, 2, 3, 5, 8], size=r))
        et = ["f32", "f16", "bf16", "f64"][(seed + case) % 4]
        dt = DTYPES[et]
        axis = int(rng.integers(-r, r))
        eps = float(rng.choice([1e-5, 1e-3, 0.5]))
        kind = ["normal", "big_mean", "constant_rows", "zeros", "mixed"][(seed * 6 + case) % 5]
        x = random_x(rng, shape, kind, dt)
        scale = (rng.standard_normal(random_broadcast_shape(rng, shape)) + 1).astype(dt)
        bias = rng.standard_normal(random_broadcast_shape(rng, shape)).astype(dt) if rng.random() < 0.7 else None
        n_out = int(rng.integers(1, 4))
        b = ln_model(shape, et, scale, bias, {"axis": axis, "epsilon": eps}, n_out)
        out = run_model(b, tmp_path, {"x": x}, name=f"ln{case}")
        ry, rm, ri = R.layer_normalization(x, scale, bias, axis=axis, epsilon=eps)
        msg = f"case {case}: {et} {shape} axis={axis} scale={scale.shape} kind={kind}"
        assert out["y"].dtype == dt and out["y"].shape == shape, msg
        rtol, atol = TOL[et]
        np.testing.assert_allclose(out["y"].astype(np.float64), ry, rtol=rtol, atol=atol, err_msg=msg)
        if n_out > 1:
            assert out["mean"].dtype == np.float32 and out["mean"].shape == rm.shape, msg
            np.testing.assert_allclose(out["mean"], rm, rtol=1e-6, atol=1e-30, err_msg=msg)
        if n_out > 2:
            assert out["inv_std_dev"].dtype == np.float32 and out["inv_std_dev"].shape == ri.shape, msg
            np.testing.assert_allclose(out["inv_std_dev"], ri, rtol=2e-6, err_msg=msg)


def test_scale_varying_along_non_normalized_axes(tmp_path):
    """Unidirectional broadcasting allows a Scale/B that varies along axes before `axis`."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5, 6)).astype(np.float32)
    for axis, sshape, bshape in [(2, (4, 1, 6), (3, 4, 5, 1)), (-1, (4, 5, 1), (6,)), (1, (3, 1, 1, 6), (1, 5, 1))]:
        s = rng.standard_normal(sshape).astype(np.float32)
        bb = rng.standard_normal(bshape).astype(np.float32)
        out = run_model(ln_model(x.shape, "f32", s, bb, {"axis": axis}), tmp_path, {"x": x})
        np.testing.assert_allclose(out["y"], R.layer_normalization(x, s, bb, axis=axis)[0], rtol=1e-5, atol=1e-5)


def test_scale_as_model_input_and_default_attributes(tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 16)).astype(np.float32)
    s = rng.standard_normal(16).astype(np.float32)
    out = run_model(ln_model(x.shape, "f32", s, scale_param=True), tmp_path, {"x": x, "scale": s})
    np.testing.assert_allclose(out["y"], R.layer_normalization(x, s)[0], rtol=1e-5, atol=1e-5)


def test_stash_type_picks_the_statistics_type(tmp_path):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 8)).astype(np.float16)
    s = np.ones(8, np.float16)
    _, rm, ri = R.layer_normalization(x, s)
    for stash, dt in [(1, np.float32), (16, BF16), (11, np.float64)]:
        out = run_model(ln_model(x.shape, "f16", s, None, {"stash_type": stash}, 3), tmp_path, {"x": x})
        assert out["y"].dtype == np.float16
        assert out["mean"].dtype == dt and out["inv_std_dev"].dtype == dt
        tol = 8e-3 if dt == BF16 else 1e-6
        np.testing.assert_allclose(out["mean"].astype(np.float64), rm, rtol=tol, atol=1e-30)
        np.testing.assert_allclose(out["inv_std_dev"].astype(np.float64), ri, rtol=tol)


def test_epsilon_zero_on_constant_rows_gives_nan(tmp_path):
    x = np.full((2, 8), 0.5, np.float32)
    x[1] = np.arange(8)
    out = run_model(ln_model(x.shape, "f32", np.ones(8, np.float32), None, {"epsilon": 0.0}, 3), tmp_path, {"x": x})
    assert np.isnan(out["y"][0]).all() and np.isinf(out["inv_std_dev"][0]).all()
    assert out["mean"][0, 0] == 0.5
    np.testing.assert_allclose(out["y"][1], R.layer_normalization(x[1:], np.ones(8), epsilon=0.0)[0][0], rtol=1e-6)


def test_dynamic_dims_and_empty_tensors(tmp_path):
    rng = np.random.default_rng(5)
    s = rng.standard_normal(8).astype(np.float32)
    b = ln_model((-1, -1, 8), "f32", s, None, {"axis": -1}, 3)
    import irnorm

    m = irnorm.load(b.save(tmp_path))
    for shape in [(2, 3, 8), (1, 1, 8), (5, 2, 8), (0, 4, 8)]:
        x = rng.standard_normal(shape).astype(np.float32)
        out = m.run({"x": x})
        assert out["y"].shape == shape and out["mean"].shape == shape[:2] + (1,)
        if x.size:
            np.testing.assert_allclose(out["y"], R.layer_normalization(x, s)[0], rtol=1e-5, atol=1e-5)
    # a zero-size normalized extent: empty Y, NaN statistics
    b = ln_model((3, -1), "f32", np.ones(1, np.float32), None, {"axis": 1}, 3)
    out = irnorm.load(b.save(tmp_path, "empty")).run({"x": np.zeros((3, 0), np.float32)})
    assert out["y"].shape == (3, 0) and out["mean"].shape == (3, 1) and np.isnan(out["mean"]).all()
    assert np.isnan(out["inv_std_dev"]).all()


# ---- onnxruntime ------------------------------------------------------------------------------------


def _ort_layer_norm(x, scale, bias, axis, eps):
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    t = TensorProto.FLOAT16 if x.dtype == np.float16 else TensorProto.FLOAT
    a = axis % x.ndim
    stats = x.shape[:a] + (1,) * (x.ndim - a)
    inputs = [helper.make_tensor_value_info("X", t, x.shape), helper.make_tensor_value_info("S", t, scale.shape),
              helper.make_tensor_value_info("B", t, bias.shape)]
    outputs = [helper.make_tensor_value_info("Y", t, x.shape),
               helper.make_tensor_value_info("Mean", TensorProto.FLOAT, stats),
               helper.make_tensor_value_info("Inv", TensorProto.FLOAT, stats)]
    node = helper.make_node("LayerNormalization", ["X", "S", "B"], ["Y", "Mean", "Inv"], axis=axis, epsilon=eps)
    model = helper.make_model(helper.make_graph([node], "ln", inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, {"X": x, "S": scale, "B": bias})


@pytest.mark.parametrize("et", ["f32", "f16"])
def test_matches_onnxruntime(tmp_path, et):
    rng = np.random.default_rng(11)
    dt = DTYPES[et]
    cases = [((4, 16), -1), ((2, 3, 8), -1), ((2, 3, 8), 1), ((2, 3, 4, 5), -2), ((3, 5), 0), ((2, 3, 4, 5), 1)]
    for k, (shape, axis) in enumerate(cases):
        mean = 100.0 if k % 2 else 0.0  # f16 data of mean 100: where f16 accumulation would lose accuracy
        x = (mean + rng.standard_normal(shape) * 3).astype(dt)
        norm_shape = shape[axis % len(shape):]
        s = rng.standard_normal(norm_shape).astype(dt)
        b = rng.standard_normal(norm_shape).astype(dt)
        y, m, inv = _ort_layer_norm(x, s, b, axis, 1e-5)
        assert m.dtype == np.float32 and inv.dtype == np.float32  # ORT: U = float even for f16 X
        out = run_model(ln_model(shape, et, s, b, {"axis": axis, "epsilon": 1e-5}, 3), tmp_path, {"x": x},
                        name=f"ort{k}")
        rtol, atol = (1e-5, 1e-5) if et == "f32" else (1e-3, 2e-3)
        np.testing.assert_allclose(out["y"].astype(np.float32), y.astype(np.float32), rtol=rtol, atol=atol)
        assert out["mean"].dtype == m.dtype and out["mean"].shape == m.shape
        np.testing.assert_allclose(out["mean"], m, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(out["inv_std_dev"], inv, rtol=1e-4)


def test_broadcast_scale_matches_onnxruntime(tmp_path):
    """A (3, 1) Scale with axis=1 (unidirectional broadcast) runs in ORT and in irnorm alike."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    s = rng.standard_normal((3, 1)).astype(np.float32)
    b = rng.standard_normal((1, 4)).astype(np.float32)
    y, _, _ = _ort_layer_norm(x, s, b, 1, 1e-5)
    out = run_model(ln_model(x.shape, "f32", s, b, {"axis": 1}, 1), tmp_path, {"x": x})
    np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-5)


# ---- malformed IR -------------------------------------------------------------------------------------


def _bad(tmp_path, code, *fragments, x_shape=(2, 3, 4), et="f32", scale=None, bias=None, attrs=None, n_out=1,
         outs=None):
    scale = np.ones(4, DTYPES.get(et, np.float32)) if scale is None else scale
    if outs is None:
        b = ln_model(x_shape, et, scale, bias, attrs, n_out)
    else:
        ins = [("param:x", (x_shape, et)), ("scale", scale)] + ([("bias", bias)] if bias is not None else [])
        b = single_op_model("LayerNormalization", ins, outs, attrs)
    return expect_error(b, tmp_path, code, *fragments)


def test_rule_axis_out_of_range(tmp_path):
    _bad(tmp_path, "IRN023", "axis=3 is out of range [-3, 2]", attrs={"axis": 3})
    _bad(tmp_path, "IRN023", "axis=-4 is out of range", attrs={"axis": -4})


def test_rule_attribute_values(tmp_path):
    _bad(tmp_path, "IRN023", 'epsilon="-1"', "must be non-negative", attrs={"epsilon": -1.0})
    _bad(tmp_path, "IRN023", 'stash_type="10"', "must be 1 (float32), 16 (bfloat16) or 11", attrs={"stash_type": 10})
    _bad(tmp_path, "IRN021", 'stash_type="float"', attrs={"stash_type": "float"})
    _bad(tmp_path, "IRN021", 'axis="1.5"', "is not an integer", attrs={"axis": "1.5"})
    _bad(tmp_path, "IRN022", "unknown attribute 'axes'", attrs={"axes": "1"})


def test_rule_scale_and_bias_broadcast(tmp_path):
    _bad(tmp_path, "IRN032", "Scale [3]", "not unidirectionally broadcastable to X [2,3,4]", "must be 1 or 4",
         scale=np.ones(3, np.float32))
    _bad(tmp_path, "IRN032", "B [2,1]", "its dim 0 is 2", bias=np.ones((2, 1), np.float32))
    _bad(tmp_path, "IRN032", "has rank 4, more than X", scale=np.ones((1, 2, 3, 4), np.float32))


def test_rule_types(tmp_path):
    _bad(tmp_path, "IRN033", "Scale has element type f16, expected f32", scale=np.ones(4, np.float16))
    _bad(tmp_path, "IRN033", "B has element type f64", bias=np.ones(4, np.float64))
    b = single_op_model("LayerNormalization", [("param:x", ((2, 4), "i32")), ("s", np.ones(4, np.int32))],
                        [((2, 4), "i32")], {})
    expect_error(b, tmp_path, "IRN033", "X must be a floating-point tensor, got i32")


def test_rule_ports(tmp_path):
    _bad(tmp_path, "IRN017", "has 4 output ports", outs=[((2, 3, 4), "f32")] * 4)
    b = IRBuilder()
    x = b.parameter("x", (2, 4))
    (y,) = b.layer("LayerNormalization", [x], [((2, 4), "f32")], {})
    b.result(y)
    expect_error(b, tmp_path, "IRN017", "has 1 input ports")


def test_rule_declared_statistics(tmp_path):
    """Mean/InvStdDev are U (f32 for stash_type 1) of shape X.shape[:axis] + [1]*(r-axis); ORT rejects
    a model that declares them f16, and so does irnorm."""
    outs = [((2, 3, 4), "f16"), ((2, 3, 1), "f16")]
    _bad(tmp_path, "IRN031", "output port 3 declares precision FP16 but the operation gives f32", et="f16",
         outs=outs)
    outs = [((2, 3, 4), "f32"), ((2, 1, 1), "f32")]
    _bad(tmp_path, "IRN030", "output port 3 declares dims [2,1,1] but the operation gives [2,3,1]", outs=outs)
