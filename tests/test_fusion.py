"""The planner's fusions (irnorm/runtime/fuse.py) against the unfused graph and OpenVINO: every rule
over random shapes and dtypes, the cases where a rule must not fire, dynamic shapes, and the
debugging paths that must still see every original layer."""

from __future__ import annotations

import numpy as np
import pytest
from ovutil import compare_with_openvino, save

import irnorm

ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")
op6 = pytest.importorskip("openvino.opset6")
op12 = pytest.importorskip("openvino.opset12")

# fused vs unfused (the fused step rounds once where the layers round after each op)
TOL = {np.float32: (2e-6, 2e-6), np.float16: (2e-3, 2e-3)}


def _named(node, name):
    node.output(0).get_tensor().set_names({name})
    return node


def _model(out, params):
    return ov.Model([op1.result(o) for o in (out if isinstance(out, list) else [out])], params, "m")


def _check(xml, feeds, label, dtype):
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == [label], fused.fused_steps
    assert plain.fused_steps == []
    got, want = fused.run(feeds), plain.run(feeds)
    rtol, atol = TOL[dtype]
    for k in want:
        assert got[k].dtype == want[k].dtype
        ref = want[k].astype(np.float64)
        np.testing.assert_allclose(got[k].astype(np.float64), ref, rtol=rtol,
                                   atol=atol * max(1.0, float(np.abs(ref).max())), err_msg=k)
    return fused


def _left_alone(xml, prefix, feed):
    """No fused step of the model is labelled `prefix`..., and fused and unfused runs give the same bits."""
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert all(not label.startswith(prefix) for label, _ in fused.fused_steps), fused.fused_steps
    got, want = fused.run(feed), plain.run(feed)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def _layer_norm(shape, dtype, dynamic, with_bias=True, rng=None):
    """MVN-6 + Multiply + Add as exporters write a LayerNorm; `dynamic`: every dim but the last."""
    x = op1.parameter([-1] * (len(shape) - 1) + [shape[-1]] if dynamic else list(shape), dtype, name="x")
    axes = op1.constant(np.array([-1], np.int64))
    mvn = op6.mvn(x, axes, True, 1e-5, "inside_sqrt")
    g = op1.constant(rng.standard_normal(shape[-1]).astype(dtype))
    y = op1.multiply(mvn, g)
    if with_bias:
        y = op1.add(y, op1.constant(rng.standard_normal(shape[-1]).astype(dtype)))
    return _model(_named(y, "y"), [x])


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_mvn_multiply_add_is_one_step(tmp_path, dtype, dynamic):
    rng = np.random.default_rng(1)
    for k, shape in enumerate([(2, 5, 16), (1, 7, 768), (3, 33)]):
        xml = save(_layer_norm(shape, dtype, dynamic, rng=rng), tmp_path, f"ln{k}")
        x = (rng.standard_normal(shape) * 3 + 10).astype(dtype)
        m = _check(xml, {"x": x}, "MVN+Multiply+Add", dtype)
        fresh = irnorm.load(xml)
        first = fresh.run({"x": x})["y"]  # the first call at a shape plans; later ones take the bound kernel call
        for _ in range(2):
            assert fresh.run({"x": x})["y"].tobytes() == first.tobytes()
        compare_with_openvino(xml, {"x": x})
        if dynamic:  # another shape through the same plan
            x2 = rng.standard_normal((4,) + shape[1:]).astype(dtype)
            np.testing.assert_allclose(m.run({"x": x2})["y"].astype(np.float64),
                                       irnorm.load(xml, fuse=False).run({"x": x2})["y"].astype(np.float64),
                                       rtol=TOL[dtype][0], atol=TOL[dtype][1] * 10)


def test_fused_layer_norm_runs_its_kept_normalizer_from_the_first_call(tmp_path, monkeypatch):
    """A fused LayerNorm plans once per input shape and runs the normalizer it keeps from the first call on (not a
    throwaway one through moments.normalize first), so that normalizer binds its entry point on the step's
    second call -- within two warm-up runs -- and every call gives the same bits."""
    from irnorm.kernels import moments

    rng = np.random.default_rng(6)
    xml = save(_layer_norm((1, 8, 32), np.float32, True, rng=rng), tmp_path, "ln")
    m = irnorm.load(xml)
    want = irnorm.load(xml).run({"x": np.ones((1, 8, 32), np.float32)})  # kernels compiled or loaded
    planned = []
    normalizer = moments.normalizer

    def counted(*args, **kwargs):
        planned.append(args[0])
        return normalizer(*args, **kwargs)

    def not_called(*args, **kwargs):
        raise AssertionError("a throwaway normalizer")

    monkeypatch.setattr(moments, "normalizer", counted)
    monkeypatch.setattr(moments, "normalize", not_called)
    for shape in ((1, 8, 32), (2, 5, 32)):
        x = rng.standard_normal(shape).astype(np.float32)
        first = m.run({"x": x})["y"]
        for _ in range(3):
            assert m.run({"x": x})["y"].tobytes() == first.tobytes()
    assert planned == [(1, 8, 32), (2, 5, 32)]
    assert m.run({"x": np.ones((1, 8, 32), np.float32)})["y"].tobytes() == want["y"].tobytes()


def test_layer_norm_over_a_dynamic_dim_is_not_fused(tmp_path):
    """With the normalized dim dynamic the planner cannot prove that the scale keeps the data's shape (at
    run time that dim could be 1 and the Multiply broadcast), so the layers run as they are: their results
    are the static model's unfused bits, and within the fusion's tolerance of its fused ones (a fused step
    rounds differently: the fuzzer's "dim made dynamic" mutation meets exactly this)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 16)).astype(np.float32)
    static = save(_layer_norm((2, 3, 16), np.float32, False, rng=np.random.default_rng(5)), tmp_path, "s")
    dyn = save(_layer_norm((2, 3, 16), np.float32, False, rng=np.random.default_rng(5)), tmp_path, "d")
    text = dyn.read_text()
    assert text.count("<dim>16</dim>") >= 2
    dyn.write_text(text.replace('shape="2,3,16"', 'shape="2,3,?"', 1).replace("<dim>16</dim>", "<dim>-1</dim>", 1))
    md = irnorm.load(dyn)
    assert md.inputs[0].shape[-1] == -1 and md.fused_steps == []
    assert [label for label, _ in irnorm.load(static).fused_steps] == ["MVN+Multiply+Add"]
    got = md.run({"x": x})["y"]
    assert got.tobytes() == irnorm.load(static, fuse=False).run({"x": x})["y"].tobytes()
    np.testing.assert_allclose(got, irnorm.load(static).run({"x": x})["y"], rtol=1e-5, atol=1e-6)
    compare_with_openvino(dyn, {"x": x})


def _norm_activation_net(shape, axes, act, rng, with_act=True):
    """MVN-6 over `axes` + Multiply + Add by constants varying along axis 1 (an exported InstanceNorm) or the
    last axis (a LayerNorm), then an activation."""
    x = op1.parameter(list(shape), np.float32, name="x")
    y = op6.mvn(x, op1.constant(np.array(axes, np.int64)), True, 1e-5, "inside_sqrt")
    along = [1, shape[1]] + [1] * (len(shape) - 2) if axes != [-1] else [shape[-1]]
    y = op1.multiply(y, op1.constant(rng.standard_normal(along).astype(np.float32)))
    y = op1.add(y, op1.constant(rng.standard_normal(along).astype(np.float32)))
    if with_act:
        y = {"relu": lambda v: op1.relu(v), "swish": lambda v: op4.swish(v),
             "leaky": lambda v: op1.prelu(v, op1.constant(np.array([0.01], np.float32))),
             "gelu_erf": lambda v: op7.gelu(v, "erf")}[act](y)
    return _model(_named(y, "y"), [x])


@pytest.mark.parametrize("shape, axes, act", [
    ((1, 8, 12, 12), [2, 3], "relu"),  # an InstanceNorm + ReLU: rows of one channel's map, one thread
    ((2, 16, 40, 40), [2, 3], "leaky"),  # + LeakyReLU (PRelu with one slope), on the pool
    ((1, 32, 24, 24), [2, 3], "swish"),  # from EPILOGUE_PARALLEL_MIN on the pool
    ((2, 7, 96), [-1], "gelu_erf"),  # a LayerNorm + Gelu: the short-row blocks
    ((1, 16, 8, 8), [1], "relu"),  # across channels: the strided kernels, the activation a pass after them
])
def test_mvn_affine_activation_is_one_step(tmp_path, shape, axes, act):
    """MVN + Multiply + Add + an activation, on f32 data: one step whose activation is the moments engine's
    epilogue -- bit-identical to the fused normalization without the activation followed by the activation
    layer's own kernel, and within the fusion's tolerance of the unfused layers and of OpenVINO."""
    from irnorm.kernels import activation

    rng = np.random.default_rng(shape[1] + len(act))
    xml = save(_norm_activation_net(shape, axes, act, np.random.default_rng(9)), tmp_path, "n")
    bare = save(_norm_activation_net(shape, axes, act, np.random.default_rng(9), with_act=False), tmp_path, "b")
    name = {"relu": "Relu", "swish": "Swish", "leaky": "PRelu", "gelu_erf": "Gelu"}[act]
    fused = _check(xml, {"x": rng.standard_normal(shape).astype(np.float32)}, f"MVN+Multiply+Add+{name}",
                   np.float32)
    norm = irnorm.load(bare)
    code, p0 = {"relu": (activation.RELU, 0.0), "swish": (activation.SWISH, 1.0), "leaky": (activation.PRELU_SCALAR,
                0.01), "gelu_erf": (activation.GELU_ERF, 0.0)}[act]
    x = (rng.standard_normal(shape) * 3 + 100).astype(np.float32)
    x.reshape(-1)[:3] = [np.nan, np.inf, 0.0]
    want = activation.unary(code, norm.run({"x": x})["y"], p0)
    for _ in range(3):  # the first call plans, the third runs through the bound entry point
        assert fused.run({"x": x})["y"].tobytes() == want.tobytes()
    compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(np.float32)})


def test_mvn_multiply_without_add(tmp_path):
    rng = np.random.default_rng(2)
    xml = save(_layer_norm((2, 4, 8), np.float32, False, with_bias=False, rng=rng), tmp_path, "ln")
    _check(xml, {"x": rng.standard_normal((2, 4, 8)).astype(np.float32)}, "MVN+Multiply", np.float32)


def test_no_fusion_when_an_intermediate_is_used_elsewhere(tmp_path):
    """The MVN output is a model output too (and feeds Multiply): it must exist, so nothing fuses."""
    x = op1.parameter([2, 8], np.float32, name="x")
    mvn = _named(op6.mvn(x, op1.constant(np.array([1], np.int64)), True, 1e-5, "inside_sqrt"), "n")
    y = _named(op1.add(op1.multiply(mvn, op1.constant(np.ones(8, np.float32) * 2)),
                       op1.constant(np.ones(8, np.float32))), "y")
    xml = save(_model([y, mvn], [x]), tmp_path, "m")
    m = irnorm.load(xml)
    assert all(label != "MVN+Multiply+Add" for label, _ in m.fused_steps)
    compare_with_openvino(xml, {"x": np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)})


def test_no_fusion_with_a_non_constant_scale(tmp_path):
    x = op1.parameter([2, 8], np.float32, name="x")
    g = op1.parameter([8], np.float32, name="g")
    mvn = op6.mvn(x, op1.constant(np.array([1], np.int64)), True, 1e-5, "inside_sqrt")
    xml = save(_model(_named(op1.multiply(mvn, g), "y"), [x, g]), tmp_path, "m")
    assert irnorm.load(xml).fused_steps == []


@pytest.mark.parametrize("half", ["f16", "bf16"])
def test_converts_around_group_norm_fold_into_it(tmp_path, half):
    """Parameter f16 -> Convert f32 -> GroupNormalization -> Convert f16: the norm reads and writes f16."""
    rng = np.random.default_rng(4)
    et = ov.Type.f16 if half == "f16" else ov.Type.bf16
    x = op1.parameter([1, 32, 8, 8], et, name="x")
    gn = op12.group_normalization(op1.convert(x, "f32"), op1.constant(rng.standard_normal(32).astype(np.float32)),
                                  op1.constant(rng.standard_normal(32).astype(np.float32)), 8, 1e-5)
    xml = save(_model(_named(op1.convert(gn, half), "y"), [x]), tmp_path, "gn")
    import ml_dtypes

    dt = np.float16 if half == "f16" else ml_dtypes.bfloat16
    data = (rng.standard_normal((1, 32, 8, 8)) * 2 + 1).astype(dt)
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == ["Convert+GroupNormalization+Convert"]
    got, want = fused.run({"x": data})["y"], plain.run({"x": data})["y"]
    assert got.dtype == want.dtype == np.dtype(dt)
    # one rounding instead of two (f32 then half): at most one ulp of the half type apart
    ulp = 2.0 ** -10 if half == "f16" else 2.0 ** -7
    g64, w64 = got.astype(np.float64), want.astype(np.float64)
    assert np.all(np.abs(g64 - w64) <= ulp * np.maximum(np.abs(w64), 2.0 ** -14) * 1.01)
    if half == "f16":
        compare_with_openvino(xml, {"x": data})


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_multiply_add_power_is_one_scale_pass(tmp_path, dtype):
    """The SC1 pattern: per-channel Multiply and Add by constants, then Power by 2."""
    rng = np.random.default_rng(5)
    x = op1.parameter([2, 6, 5, 5], dtype, name="x")
    y = op1.multiply(x, op1.constant(rng.standard_normal((1, 6, 1, 1)).astype(dtype)))
    y = op1.add(y, op1.constant(rng.standard_normal((1, 6, 1, 1)).astype(dtype)))
    y = _named(op1.power(y, op1.constant(np.array(2, dtype))), "y")
    xml = save(_model(y, [x]), tmp_path, "sc")
    data = rng.standard_normal((2, 6, 5, 5)).astype(dtype)
    _check(xml, {"x": data}, "Multiply+Add+Power", dtype)
    compare_with_openvino(xml, {"x": data})


@pytest.mark.parametrize("p", [2.0, 0.5, 3.0, -1.0])
def test_power_by_a_scalar_constant(tmp_path, p):
    rng = np.random.default_rng(6)
    x = op1.parameter([3, 40], np.float32, name="x")
    xml = save(_model(_named(op1.power(x, op1.constant(np.array(p, np.float32))), "y"), [x]), tmp_path, "pw")
    data = np.abs(rng.standard_normal((3, 40))).astype(np.float32) + 0.1
    _check(xml, {"x": data}, "Power", np.float32)
    compare_with_openvino(xml, {"x": data})


def test_debugging_runs_see_every_original_layer(tmp_path):
    """capture= and compare name the original layers even where the plan fuses them."""
    rng = np.random.default_rng(7)
    xml = save(_layer_norm((2, 3, 8), np.float32, False, rng=rng), tmp_path, "ln")
    m = irnorm.load(xml)
    assert m.fused_steps
    res = m.run({"x": rng.standard_normal((2, 3, 8)).astype(np.float32)}, capture=True)
    assert {c.type for c in res.captures} >= {"MVN", "Multiply", "Add"}
    assert [n.layer.type for n in m.layers_run] == ["MVN", "Multiply", "Add"]
    report = irnorm.compare(m, "reference")
    assert report.ok and {r.type for r in report.layers} >= {"MVN", "Multiply", "Add"}
    prof = m.run({"x": rng.standard_normal((2, 3, 8)).astype(np.float32)}, profile=True)
    assert [t.type for t in prof.profile] == ["MVN+Multiply+Add"]


def test_fused_and_unfused_refuse_bad_inputs_alike(tmp_path):
    """A dynamic model fed inputs that do not fit: the same coded error with and without fusion."""
    rng = np.random.default_rng(8)
    xml = save(_layer_norm((2, 3, 8), np.float32, True, rng=rng), tmp_path, "ln")
    for bad in ({"x": np.zeros((2, 8), np.float32)}, {"x": np.zeros((2, 3, 5), np.float32)}):
        codes = []
        for fuse in (True, False):
            with pytest.raises(irnorm.InputError) as e:
                irnorm.load(xml, fuse=fuse).run(bad)
            codes.append(e.value.code)
        assert codes[0] == codes[1] == "IRN061"


def _rms_norm(shape, dtype, variant, with_weight, rng):
    """RMSNorm as exporters write it (llama: Power, ReduceMean, Add, Sqrt, Divide(1, .), Multiply(x, .),
    Multiply(weight, .)); `variant` "div" divides x by the root directly, "rsqrt" uses Power(., -0.5)."""
    x = op1.parameter([-1, -1, shape[2]], dtype, name="x")
    ms = op1.reduce_mean(op1.power(x, op1.constant(np.array([[[2.0]]], dtype))), op1.constant(np.array([-1])), True)
    v = op1.add(ms, op1.constant(np.array([[[1e-6]]], dtype)))
    if variant == "rsqrt":
        y = op1.multiply(x, op1.power(v, op1.constant(np.array(-0.5, dtype))))
    elif variant == "div":
        y = op1.divide(x, op1.sqrt(v))
    else:
        y = op1.multiply(x, op1.divide(op1.constant(np.array([[[1.0]]], dtype)), op1.sqrt(v)))
    if with_weight:
        y = op1.multiply(op1.constant(rng.standard_normal((1, 1, shape[2])).astype(dtype)), y)
    return _model(_named(y, "y"), [x])


@pytest.mark.parametrize("variant", ["reciprocal", "div", "rsqrt"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_rms_norm_decomposition_is_one_normalization(tmp_path, variant, dtype):
    rng = np.random.default_rng(9)
    for with_weight in (True, False):
        xml = save(_rms_norm((2, 5, 64), dtype, variant, with_weight, rng), tmp_path, f"rms{with_weight}")
        m = irnorm.load(xml)
        assert len(m.fused_steps) == 1 and m.fused_steps[0][0].startswith("RMSNorm("), m.fused_steps
        for shape in [(2, 5, 64), (1, 9, 64)]:
            x = (rng.standard_normal(shape) * 4).astype(dtype)
            x[0, 0] = 0  # an all-zero row: eps keeps it finite
            got, want = m.run({"x": x})["y"], irnorm.load(xml, fuse=False).run({"x": x})["y"]
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=TOL[dtype][0] * 4,
                                       atol=TOL[dtype][1] * 4 * float(np.abs(want).max()))
            compare_with_openvino(xml, {"x": x})


@pytest.mark.parametrize("with_weight", [True, False])
def test_f_normalize_decomposition_is_one_normalization(tmp_path, with_weight):
    """ReduceL2 -> Maximum(eps) -> Divide(x, .) [-> Multiply by a weight] (torch's F.normalize, SSD's L2Norm)."""
    rng = np.random.default_rng(10)
    x = op1.parameter([-1, 16, 5, 5], np.float32, name="x")
    n = op1.maximum(op1.constant(np.array(1e-12, np.float32)),
                    ov.opset4.reduce_l2(x, op1.constant(np.array([1])), True))
    y = op1.divide(x, n)
    if with_weight:
        y = op1.multiply(op1.constant(np.full((1, 16, 1, 1), 20.0, np.float32)), y)
    xml = save(_model(_named(y, "y"), [x]), tmp_path, "l2")
    m = irnorm.load(xml)
    assert len(m.fused_steps) == 1 and m.fused_steps[0][0].startswith("L2Norm(")
    data = rng.standard_normal((3, 16, 5, 5)).astype(np.float32)
    data[0, :, 0, 0] = 0  # a zero vector: divided by eps, stays 0
    got, want = m.run({"x": data})["y"], irnorm.load(xml, fuse=False).run({"x": data})["y"]
    np.testing.assert_allclose(got, want, rtol=4e-6, atol=4e-6 * float(np.abs(want).max()))
    assert np.all(got[0, :, 0, 0] == 0)
    compare_with_openvino(xml, {"x": data})


def _conv_net(kind, act, bias, dtype, dynamic, rng, rank=2):
    """A convolution with constant weights, then optionally an Add of `bias` and an activation."""
    cin, cout = 4, 6
    spatial = [9, 7][:rank] if rank == 2 else [11]
    shape = [2, cin, *spatial]
    x = op1.parameter([-1, cin] + [-1] * rank if dynamic else shape, dtype, name="x")
    k = [3] * rank
    s, pb, pe, d = [1] * rank, [1] * rank, [0] * rank, [1] * rank
    if kind == "conv":
        y = op1.convolution(x, op1.constant(rng.standard_normal([cout, cin, *k]).astype(dtype)), s, pb, pe, d)
    elif kind == "conv_strided":
        y = op1.convolution(x, op1.constant(rng.standard_normal([cout, cin, *k]).astype(dtype)), [2] * rank, pb, pe,
                            [2] * rank)
    elif kind == "group":
        w = rng.standard_normal([2, cout // 2, cin // 2, *k]).astype(dtype)
        y = op1.group_convolution(x, op1.constant(w), s, pb, pe, d)
    elif kind == "depthwise":
        cout = cin
        y = op1.group_convolution(x, op1.constant(rng.standard_normal([cin, 1, 1, *k]).astype(dtype)), s, pb, pe, d)
    else:  # transposed
        y = op1.convolution_backprop_data(x, op1.constant(rng.standard_normal([cin, cout, *k]).astype(dtype)),
                                          [2] * rank, pb, pe, d)
    if bias == "channel":
        y = op1.add(y, op1.constant(rng.standard_normal([1, cout] + [1] * rank).astype(dtype)))
    elif bias == "channel_short":  # [C, 1, 1]: numpy broadcasting adds the batch dim
        y = op1.add(op1.constant(rng.standard_normal([cout] + [1] * rank).astype(dtype)), y)
    elif bias == "scalar":
        y = op1.add(y, op1.constant(np.array(0.25, dtype)))
    if act == "relu":
        y = op1.relu(y)
    elif act == "swish":
        y = op4.swish(y, op1.constant(np.array(1.5, dtype)))
    elif act == "hswish":
        y = op4.hswish(y)
    elif act == "elu":
        y = op1.elu(y, 0.7)
    elif act == "gelu_tanh":
        y = op7.gelu(y, "tanh")
    elif act == "leaky":  # LeakyReLU as exporters write it: PRelu with one slope
        y = op1.prelu(y, op1.constant(np.array([0.1], dtype)))
    return _model(_named(y, "y"), [x]), shape


op4 = pytest.importorskip("openvino.opset4")
op7 = pytest.importorskip("openvino.opset7")


@pytest.mark.parametrize("kind, act, bias, dtype, dynamic, rank", [
    ("conv", "relu", "channel", np.float32, False, 2),
    ("conv", None, "channel", np.float32, True, 2),
    ("conv", "swish", None, np.float32, False, 1),
    ("conv_strided", "hswish", "channel_short", np.float32, False, 2),
    ("group", "elu", "channel", np.float64, False, 2),
    ("depthwise", "gelu_tanh", "scalar", np.float32, True, 2),
    ("depthwise", "relu", "channel", np.float32, False, 1),
    ("transposed", "relu", "channel", np.float32, False, 2),
    ("conv", "leaky", "channel", np.float32, False, 2),
    ("depthwise", "leaky", None, np.float64, True, 2),
])
def test_convolution_bias_activation_is_one_step(tmp_path, kind, act, bias, dtype, dynamic, rank):
    """The bias and the activation run in place on the product: the same float operations in the same
    order as the layers, so the results are bit-identical to the unfused graph's (and match OpenVINO)."""
    rng = np.random.default_rng(len(kind) + rank)
    model, shape = _conv_net(kind, act, bias, dtype, dynamic, rng, rank)
    xml = save(model, tmp_path, "c")
    ops = {"conv": "Convolution", "conv_strided": "Convolution", "group": "GroupConvolution",
           "depthwise": "GroupConvolution", "transposed": "ConvolutionBackpropData"}[kind]
    label = "+".join([ops] + (["Add"] if bias else []) +
                     ([{"relu": "Relu", "swish": "Swish", "hswish": "HSwish", "elu": "Elu", "gelu_tanh": "Gelu",
                        "leaky": "PRelu"}[act]] if act else []))
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == [label]
    for feed in [x] + ([rng.standard_normal([3, *shape[1:-1], shape[-1] + 4]).astype(dtype)] if dynamic else []):
        np.testing.assert_array_equal(fused.run({"x": feed})["y"], plain.run({"x": feed})["y"])
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(dtype)})


@pytest.mark.parametrize("case", ["spatial_bias", "broadcast_residual", "used_twice", "f16", "output_too"])
def test_convolution_is_left_alone(tmp_path, case):
    """A bias that varies along a spatial axis, a computed addend that broadcasts, a product used twice or
    that is a model output, and f16 data: no fusion of the Add (and so none of an activation after it)."""
    rng = np.random.default_rng(3)
    dtype = np.float16 if case == "f16" else np.float32
    x = op1.parameter([1, 4, 6, 6], dtype, name="x")
    conv = op1.convolution(x, op1.constant(rng.standard_normal([4, 4, 3, 3]).astype(dtype)), [1, 1], [1, 1],
                           [1, 1], [1, 1])
    outs = []
    if case == "spatial_bias":
        y = op1.relu(op1.add(conv, op1.constant(rng.standard_normal([1, 1, 1, 6]).astype(dtype))))
    elif case == "broadcast_residual":  # a computed [1, 4, 1, 6] addend: the sum is not a residual Add
        y = op1.relu(op1.add(conv, op1.reduce_max(x, op1.constant(np.array([2], np.int64)), True)))
    elif case == "used_twice":
        y = op1.add(op1.relu(op1.add(conv, op1.constant(np.ones([1, 4, 1, 1], dtype)))), conv)
    elif case == "output_too":
        outs = [_named(conv, "conv")]
        y = op1.relu(op1.add(conv, op1.constant(np.ones([1, 4, 1, 1], dtype))))
    else:
        y = op1.relu(op1.add(conv, op1.constant(np.ones([1, 4, 1, 1], dtype))))
    xml = save(_model([_named(y, "y"), *outs], [x]), tmp_path, "c")
    _left_alone(xml, "Convolution+Add", {"x": rng.standard_normal([1, 4, 6, 6]).astype(dtype)})


@pytest.mark.parametrize("act", ["relu", "none", "swish"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_convolution_residual_add_is_one_step(tmp_path, act, bias, dtype, dynamic):
    """A residual block's end as ResNets / MobileNets export it: Convolution -> (+ bias) -> Add of the
    other branch -> (activation). One step, the sum and the activation in the convolution's epilogue; the
    other branch (a strided projection computed after the main convolution) is ready because the step
    runs where the Add ran. Bit-identical to the layers (NaN, infinities, signed zeros) and OpenVINO's."""
    rng = np.random.default_rng(int(bias) + 2 * len(act))
    shape = [2, 4, 10, 8]
    x = op1.parameter([-1, 4, -1, -1] if dynamic else shape, dtype, name="x")

    def conv(v, cin, cout, k, stride):
        w = op1.constant((rng.standard_normal([cout, cin, k, k]) / (cin * k)).astype(dtype))
        return op1.convolution(v, w, [stride] * 2, [k // 2] * 2, [k // 2] * 2, [1, 1])

    def biased(v, c):
        return op1.add(v, op1.constant(rng.standard_normal([1, c, 1, 1]).astype(dtype))) if bias else v

    main = biased(conv(op1.relu(biased(conv(x, 4, 6, 3, 2), 6)), 6, 6, 3, 1), 6)
    shortcut = biased(conv(x, 4, 6, 1, 2), 6)  # computed after the main branch's convolutions
    s = op1.add(main, shortcut)
    y = {"relu": lambda: op1.relu(s), "none": lambda: s,
         "swish": lambda: op4.swish(s, op1.constant(np.array(1.25, dtype)))}[act]()
    xml = save(_model(_named(y, "y"), [x]), tmp_path, "res")
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    tail = {"relu": "+Relu", "none": "", "swish": "+Swish"}[act]
    residual = "Convolution" + ("+Add" if bias else "") + "+Add" + tail
    labels = [f[0] for f in fused.fused_steps]
    assert residual in labels, labels
    xv = rng.standard_normal(shape).astype(dtype)
    xv.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    feeds = [xv] + ([rng.standard_normal([1, 4, 7, 13]).astype(dtype)] if dynamic else [])
    for feed in feeds:
        for _ in range(2):  # planned on the first run, the bound epilogue after
            np.testing.assert_array_equal(fused.run({"x": feed})["y"], plain.run({"x": feed})["y"])
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(dtype)})


@pytest.mark.parametrize("code_name, with_bias", [("relu", True), ("swish", False), ("none", True)])
def test_bias_residual_kernel(code_name, with_bias):
    """The residual epilogue below and above its parallel threshold (the tasks split the channel rows:
    PARALLEL_MIN with a Swish, CHEAP_PARALLEL_MIN for the memory-bound adds and Relu), with a strided
    residual, on rows shorter than a staging chunk (several rows staged per activation call, across
    chunk boundaries, serial and parallel) and longer: bit-identical to Add (bias), Add (residual) and the
    activation as separate passes, NaN, infinities and signed zeros included."""
    from irnorm.kernels import activation

    rng = np.random.default_rng(8)
    code = activation.CODES.get(code_name, -1)
    big = (2, 16, 40, 40) if code_name == "swish" else (2, 16, 200, 200)
    short_big = (1, 4000, 4, 4) if code_name == "swish" else (1, 40000, 4, 8)
    assert 4 * 8 < activation._ACT_CHUNK // 4 and np.prod(short_big) >= activation.parallel_min(code)
    for shape in [(1, 8, 6, 6), (1, 300, 2, 2), (2, 70, 4, 4), (1, 3, 1, 1), short_big, (2, 16, 40, 40), big]:
        y = rng.standard_normal(shape).astype(np.float32)
        y.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0][:y.size]
        res = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(np.float32)[..., ::2]
        b = rng.standard_normal(shape[1]).astype(np.float32) if with_bias else None
        s = (y + b[:, None, None] if with_bias else y) + res
        want = activation.unary(code, s, 1.25, 0.0) if code >= 0 else s
        epilogue = activation.bias_residual_plan(shape, y.dtype, b, code, 1.25, 0.0)
        for _ in range(2):
            np.testing.assert_array_equal(epilogue(y.copy(), res), want)
    assert y.size >= activation.parallel_min(code)


@pytest.mark.parametrize("code_name, with_bias", [("relu", True), ("swish", False), ("hswish", True)])
def test_bias_activation_kernel_on_the_pool(code_name, with_bias):
    """The in-place kernel above its parallel threshold (the tasks split the channel rows: PARALLEL_MIN with
    a Swish, CHEAP_PARALLEL_MIN for Relu / HSwish) and just below it: bit-identical to an Add followed by
    the activation kernel, and the parallel kernel runs exactly above the threshold."""
    from irnorm.kernels import activation

    rng = np.random.default_rng(5)
    code = activation.CODES[code_name]
    ran: list[int] = []
    parallel = activation._bias_act_parallel

    def spy(*a):
        ran.append(1)
        return parallel(*a)

    for hw in (40, 200):
        y = rng.standard_normal((2, 16, hw, hw)).astype(np.float32)
        b = rng.standard_normal(16).astype(np.float32) if with_bias else None
        want = activation.unary(code, y + b[:, None, None] if with_bias else y, 1.25, 0.0)
        got = activation.bias_activation(y.copy(), b, code, 1.25, 0.0)
        np.testing.assert_array_equal(got, want)
        ran.clear()
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(activation, "_bias_act_parallel", spy)
            np.testing.assert_array_equal(activation.bias_activation(y.copy(), b, code, 1.25, 0.0), want)
            assert bool(ran) == (y.size >= activation.parallel_min(code)), (code_name, y.shape)
            ran.clear()  # after a product computed on several threads: several threads from PARALLEL_MIN
            after = activation.bias_activation_plan(y.shape, y.dtype, b, code, 1.25, 0.0, after_parallel=True)
            np.testing.assert_array_equal(after(y.copy()), want)
            assert ran, (code_name, y.shape)


def _group_norm_net(act, bias, dtype, dynamic, rng, shape, const_scale=True):
    """GroupNormalization (G = C/2), then optionally an Add of a per-channel `bias` and an activation."""
    c = shape[1]
    x = op1.parameter([-1, c] + [-1] * (len(shape) - 2) if dynamic else list(shape), dtype, name="x")
    params = [x]
    if const_scale:
        scale = op1.constant(rng.standard_normal(c).astype(dtype))
    else:
        scale = op1.parameter([c], dtype, name="scale")
        params.append(scale)
    y = op12.group_normalization(x, scale, op1.constant(rng.standard_normal(c).astype(dtype)), c // 2, 1e-5)
    if bias:
        y = op1.add(y, op1.constant(rng.standard_normal([c] + [1] * (len(shape) - 2)).astype(dtype)))
    y = {"relu": lambda v: op1.relu(v), "swish": lambda v: op4.swish(v), "hswish": lambda v: op4.hswish(v),
         "gelu_erf": lambda v: op7.gelu(v, "erf"), "elu": lambda v: op1.elu(v, 0.7)}[act](y)
    return _model(_named(y, "y"), params)


@pytest.mark.parametrize("act, bias, dtype, dynamic, shape", [
    ("relu", False, np.float32, False, (1, 16, 8, 8)),
    ("swish", False, np.float32, True, (2, 8, 5, 7)),
    ("gelu_erf", False, np.float32, False, (2, 4, 33)),
    ("hswish", True, np.float64, False, (1, 6, 4, 4)),
    ("elu", False, np.float32, True, (3, 4, 6)),
    ("relu", False, np.float32, False, (2, 32, 40, 40)),  # above PARALLEL_MIN: the epilogue on the pool
])
def test_group_norm_activation_is_one_step(tmp_path, act, bias, dtype, dynamic, shape):
    """GroupNormalization -> (Add) -> activation runs as one step, the activation in place on the
    normalized output: the same float operations as the layers, so bit-identical to the unfused graph
    (NaN, infinities and constant groups included), over changing shapes when dynamic; and OpenVINO's."""
    rng = np.random.default_rng(len(shape) * 7 + len(act))
    xml = save(_group_norm_net(act, bias, dtype, dynamic, rng, shape), tmp_path, "gn")
    label = "+".join(["GroupNormalization"] + (["Add"] if bias else []) +
                     [{"relu": "Relu", "swish": "Swish", "gelu_erf": "Gelu", "hswish": "HSwish",
                       "elu": "Elu"}[act]])
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == [label]
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 0] = np.nan  # a NaN group
    x[-1, -1] = 3.0  # a constant group: zero variance
    x.reshape(-1)[-1] = np.inf
    feeds = [x, rng.standard_normal(shape).astype(dtype) * 100 + 1e4]
    if dynamic:
        feeds.append(rng.standard_normal((shape[0] + 1, *shape[1:-1], shape[-1] + 3)).astype(dtype))
    for feed in feeds:
        np.testing.assert_array_equal(fused.run({"x": feed})["y"], plain.run({"x": feed})["y"])
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(dtype)})


@pytest.mark.parametrize("act, shape, dtype, kernel", [
    ("swish", (1, 16, 8, 8), np.float32, "rows_serial"),  # blocks of short rows
    ("gelu_erf", (1, 4, 40, 40), np.float32, "rows_serial"),  # rows of 3200: a row's chunks one by one
    ("gelu_erf", (2, 8, 30, 30), np.float64, "rows_parallel"),  # a task per row
    ("gelu_erf", (4, 256, 8, 8), np.float32, "rows_parallel"),  # blocks of short rows on the pool
    ("swish", (1, 8, 72, 72), np.float32, "rows_split"),  # four long rows: (row, chunk) tasks
    ("relu", (1, 8, 72, 72), np.float64, "rows_split"),
])
def test_group_norm_activation_runs_in_the_engine(tmp_path, act, shape, dtype, kernel):
    """With no Add between them, the moments engine applies the activation to each chunk it writes (no
    pass of its own over the output: the epilogue kernels are not called), in every row kernel, bit-identical
    to the unfused layers -- NaN, infinities and constant groups included, the bound entry point's calls too."""
    from irnorm.kernels import activation, moments

    rng = np.random.default_rng(shape[-1] + len(act))
    xml = save(_group_norm_net(act, False, dtype, False, rng, shape), tmp_path, "gn")
    n, c = shape[:2]
    spatial = int(np.prod(shape[2:]))
    code = activation.CODES[act]
    serial_max = moments.PARALLEL_MIN if activation.is_cheap(code) else moments.EPILOGUE_PARALLEL_MIN
    plan = moments._plan((n * c // 2, 2 * spatial), np.dtype(dtype), (1,), spatial, c // 2, np.dtype(dtype),
                         serial_max)
    assert plan.kern.__name__ == kernel  # the case covers the kernel it names

    def no_second_pass(*args, **kwargs):
        raise AssertionError("the activation ran as a pass of its own")

    plain = irnorm.load(xml, fuse=False)
    with pytest.MonkeyPatch.context() as mp:
        for name in ("bias_activation_plan", "bias_activation", "bias_residual_plan"):
            mp.setattr(activation, name, no_second_pass)
        fused = irnorm.load(xml)
        assert [f[0] for f in fused.fused_steps] == ["GroupNormalization+" + {"swish": "Swish", "gelu_erf": "Gelu",
                                                                             "relu": "Relu"}[act]]
        x = rng.standard_normal(shape).astype(dtype)
        x[0, 0] = np.nan  # a NaN group
        x[-1, -1] = 3.0  # a constant group: zero variance
        x.reshape(-1)[-1] = np.inf
        for feed in (x, rng.standard_normal(shape).astype(dtype) * 100 + 1e4, x):
            want = plain.run({"x": feed})["y"]
            for _ in range(3):  # the third call through the bound entry point
                got = fused.run({"x": feed})["y"]
                assert got.tobytes() == want.tobytes()


def test_group_norm_activation_with_a_scale_input(tmp_path):
    """The GroupNormalization's scale a model input (not a constant): still one step, its operands passed
    through, bit-identical to the unfused graph."""
    rng = np.random.default_rng(12)
    xml = save(_group_norm_net("relu", False, np.float32, False, rng, (1, 8, 4, 4), const_scale=False), tmp_path,
               "gn")
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == ["GroupNormalization+Relu"]
    feed = {"x": rng.standard_normal((1, 8, 4, 4)).astype(np.float32),
            "scale": rng.standard_normal(8).astype(np.float32)}
    np.testing.assert_array_equal(fused.run(feed)["y"], plain.run(feed)["y"])


@pytest.mark.parametrize("case", ["used_twice", "output_too", "f16"])
def test_group_norm_is_left_alone(tmp_path, case):
    """A normalized output used twice or that is a model output, and f16 data: no GroupNorm fusion."""
    rng = np.random.default_rng(6)
    dtype = np.float16 if case == "f16" else np.float32
    x = op1.parameter([1, 8, 4, 4], dtype, name="x")
    gn = op12.group_normalization(x, op1.constant(np.ones(8, dtype)), op1.constant(np.zeros(8, dtype)), 4, 1e-5)
    outs = [_named(gn, "gn")] if case == "output_too" else []
    y = op1.add(op1.relu(gn), gn) if case == "used_twice" else op1.relu(gn)
    xml = save(_model([_named(y, "y"), *outs], [x]), tmp_path, "gn")
    _left_alone(xml, "GroupNormalization", {"x": rng.standard_normal([1, 8, 4, 4]).astype(dtype)})


@pytest.mark.parametrize("act, dtype, dynamic, shape", [
    ("relu", np.float32, False, (1, 16, 8, 8)),
    ("relu", np.float32, True, (2, 8, 5, 7)),
    ("swish", np.float64, False, (3, 4, 9)),
    ("relu", np.float32, False, (2, 32, 40, 40)),  # above PARALLEL_MIN: the epilogue on the pool
])
def test_residual_add_activation_is_one_step(tmp_path, act, dtype, dynamic, shape):
    """A ResNet block's end, Add(computed, computed) -> ReLU: one step, the activation in place on the sum;
    bit-identical to the unfused graph (NaN, infinities, signed zeros), and OpenVINO's."""
    rng = np.random.default_rng(len(shape) + len(act))
    x = op1.parameter([-1, shape[1]] + [-1] * (len(shape) - 2) if dynamic else list(shape), dtype, name="x")
    left = op1.relu(x) if act == "relu" else op1.sigmoid(x)  # two computed operands of the same shape
    right = op1.multiply(x, op1.constant(np.array(-1.5, dtype)))
    s = op1.add(left, right)
    y = op1.relu(s) if act == "relu" else op4.swish(s, op1.constant(np.array(1.25, dtype)))
    xml = save(_model(_named(y, "y"), [x]), tmp_path, "res")
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == ["Add+" + ("Relu" if act == "relu" else "Swish")]
    xv = rng.standard_normal(shape).astype(dtype)
    xv.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    feeds = [xv] + ([rng.standard_normal((shape[0] + 1, *shape[1:-1], shape[-1] + 2)).astype(dtype)] if dynamic else [])
    for feed in feeds:
        np.testing.assert_array_equal(fused.run({"x": feed})["y"], plain.run({"x": feed})["y"])
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(dtype)})


@pytest.mark.parametrize("case", ["constant", "broadcast", "sum_used_twice", "f16"])
def test_add_activation_is_left_alone(tmp_path, case):
    """An Add of a constant or one that broadcasts an operand (the bias rules' business), a sum used twice,
    f16 data: no residual fusion."""
    rng = np.random.default_rng(9)
    dtype = np.float16 if case == "f16" else np.float32
    x = op1.parameter([1, 4, 6, 6], dtype, name="x")
    left = op1.relu(x)
    if case == "constant":
        right = op1.constant(rng.standard_normal([1, 4, 6, 6]).astype(dtype))
    elif case == "broadcast":
        right = op1.reduce_mean(x, op1.constant(np.array([2, 3], np.int64)), True)
    else:
        right = op1.multiply(x, op1.constant(np.array(2, dtype)))
    s = op1.add(left, right)
    y = op1.add(op1.relu(s), s) if case == "sum_used_twice" else op1.relu(s)
    xml = save(_model(_named(y, "y"), [x]), tmp_path, "res")
    _left_alone(xml, "Add+", {"x": rng.standard_normal([1, 4, 6, 6]).astype(dtype)})


def _squeeze_excite(rng, dtype, shape, dynamic=False, inner="swish", gate="sigmoid", bias1=True, gate_first=False,
                    case=None):
    """x -> ReduceMean(spatial, keep_dims) -> 1x1 conv (+ bias, inner activation) -> 1x1 conv + bias ->
    gate -> Multiply(x, gate), as EfficientNet / MobileNetV3 / RegNetY export it; `case` breaks it."""
    c, mid, rank = shape[1], 4, len(shape)
    x = op1.parameter([-1, c] + [-1] * (rank - 2) if dynamic else list(shape), dtype, name="x")
    axes = list(range(2, rank)) if case != "some_axes" else [rank - 1]
    s = op1.reduce_mean(x, op1.constant(np.array(axes, np.int64)), case != "no_keep_dims")
    if case == "no_keep_dims":
        s = op1.unsqueeze(s, op1.constant(np.array(axes, np.int64)))
    k = [3] * (rank - 2) if case == "spatial_filter" else [1] * (rank - 2)
    pads = [1] * (rank - 2) if case == "spatial_filter" else [0] * (rank - 2)
    one = [1] * (rank - 2)
    h = op1.convolution(s, op1.constant((rng.standard_normal([mid, c, *k]) * 0.3).astype(dtype)), one, pads, pads,
                        one)
    if bias1:
        h = op1.add(h, op1.constant(rng.standard_normal([1, mid] + one).astype(dtype)))
    h = {"swish": lambda v: op4.swish(v, op1.constant(np.array(1.0, dtype))), "relu": op1.relu}[inner](h)
    zeros = [0] * (rank - 2)
    g = op1.convolution(h, op1.constant((rng.standard_normal([c, mid] + one) * 0.3).astype(dtype)), one, zeros, zeros,
                        one)
    g = op1.add(g, op1.constant(rng.standard_normal([1, c] + one).astype(dtype)))
    g = op1.sigmoid(g) if gate == "sigmoid" else op5.hsigmoid(g)
    other = op1.relu(x) if case == "other_tensor" else x
    y = op1.multiply(g, other) if gate_first else op1.multiply(other, g)
    outs = [_named(y, "y")] + ([_named(h, "h")] if case == "mid_is_output" else [])
    return _model(outs, [x])


op5 = pytest.importorskip("openvino.opset5")


@pytest.mark.parametrize("dtype, shape, dynamic, inner, gate, bias1, gate_first", [
    (np.float32, (1, 16, 8, 8), False, "swish", "sigmoid", True, False),
    (np.float32, (2, 8, 5, 7), True, "relu", "hsigmoid", True, True),
    (np.float64, (3, 12, 4, 4), False, "relu", "sigmoid", False, False),
    (np.float32, (2, 6, 11), False, "swish", "sigmoid", True, False),  # 1-D data
    (np.float32, (2, 32, 40, 40), False, "swish", "sigmoid", True, False),  # the Multiply on the pool
])
def test_squeeze_excite_is_one_step(tmp_path, monkeypatch, dtype, shape, dynamic, inner, gate, bias1, gate_first):
    """A squeeze-and-excitation block runs as one step -- one Numba call (kernels/conv.py's squeeze_excite)
    below ONE_CALL_MAX elements, the layers' own kernels back to back above: bit-identical to the unfused
    graph (NaN, infinities, over changing shapes when dynamic), and OpenVINO's."""
    from irnorm.kernels import blas, conv

    calls: list = []
    orig = conv.squeeze_excite
    monkeypatch.setattr(conv, "squeeze_excite", lambda *a: calls.append(a[0].shape) or orig(*a))
    rng = np.random.default_rng(shape[1] + len(shape))
    xml = save(_squeeze_excite(rng, dtype, shape, dynamic, inner, gate, bias1, gate_first), tmp_path, "se")
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    labels = [f[0] for f in fused.fused_steps]
    assert len(labels) == 1 and labels[0].startswith("SqueezeExcite(ReduceMean+Convolution"), labels
    assert labels[0].endswith(("+Sigmoid" if gate == "sigmoid" else "+HSigmoid") + "+Multiply)"), labels
    x = rng.standard_normal(shape).astype(dtype)
    x[0, 1].reshape(-1)[:3] = [np.nan, np.inf, -np.inf]
    feeds = [x, rng.standard_normal(shape).astype(dtype) * 30]
    if dynamic:
        feeds.append(rng.standard_normal((shape[0] + 1, shape[1], *(d + 2 for d in shape[2:]))).astype(dtype))
    for feed in feeds:
        np.testing.assert_array_equal(fused.run({"x": feed})["y"], plain.run({"x": feed})["y"])
    if blas.gemm_pointer(np.dtype(dtype)) is not None:  # which way it ran
        assert bool(calls) == (np.prod(shape) < conv.ONE_CALL_MAX), calls
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(dtype)})


@pytest.mark.parametrize("case", ["no_keep_dims", "some_axes", "spatial_filter", "other_tensor", "mid_is_output"])
def test_squeeze_excite_is_left_alone(tmp_path, case):
    """Not a squeeze-excite block: the mean kept without its axes, over some spatial axes only, a 3x3
    filter, a gate multiplying another tensor, an intermediate that is a model output: no such step, and
    the same results as unfused."""
    rng = np.random.default_rng(13)
    xml = save(_squeeze_excite(rng, np.float32, (1, 8, 6, 6), case=case), tmp_path, "se")
    _left_alone(xml, "SqueezeExcite", {"x": rng.standard_normal((1, 8, 6, 6)).astype(np.float32)})


def _linear_net(act, bias, dtype, dynamic, rng, transpose_b=False, const_b=True):
    """A MatMul (constant weights unless const_b is False), then optionally an Add of `bias` along the
    last axis and an activation: how exports write a linear layer."""
    k, n = 12, 10
    shape = [2, 5, k]
    x = op1.parameter([-1, -1, k] if dynamic else shape, dtype, name="x")
    params = [x]
    if const_b:
        w = rng.standard_normal([n, k] if transpose_b else [k, n]).astype(dtype)
        b_in = op1.constant(w)
    else:
        b_in = op1.parameter([k, n], dtype, name="w")
        params.append(b_in)
    y = op1.matmul(x, b_in, False, transpose_b)
    if bias == "last":
        y = op1.add(y, op1.constant(rng.standard_normal(n).astype(dtype)))
    elif bias == "last_padded":  # [1, 1, N] on the left: same values
        y = op1.add(op1.constant(rng.standard_normal([1, 1, n]).astype(dtype)), y)
    elif bias == "scalar":
        y = op1.add(y, op1.constant(np.array(-0.5, dtype)))
    if act == "gelu":
        y = op7.gelu(y, "erf")
    elif act == "gelu_tanh":
        y = op7.gelu(y, "tanh")
    elif act == "relu":
        y = op1.relu(y)
    elif act == "swish":
        y = op4.swish(y)
    elif act == "leaky":  # PRelu with one slope (LeakyReLU)
        y = op1.prelu(y, op1.constant(np.array([0.2], dtype)))
    return _model(_named(y, "y"), params), shape, [k, n]


@pytest.mark.parametrize("act, bias, dtype, dynamic, transpose_b, const_b", [
    ("gelu", "last", np.float32, False, False, True),
    (None, "last", np.float32, True, True, True),
    ("gelu_tanh", "last_padded", np.float32, False, False, True),
    ("relu", None, np.float64, False, True, True),
    ("swish", "scalar", np.float32, True, False, True),
    (None, "last", np.float32, False, False, False),
    ("gelu", "last", np.float64, True, False, True),
    ("leaky", "last", np.float32, True, False, True),
])
def test_matmul_bias_activation_is_one_step(tmp_path, act, bias, dtype, dynamic, transpose_b, const_b):
    """A linear layer's bias and activation run in place on the product: bit-identical to the layers,
    static and dynamic, with constant or run-time weights, and equal to OpenVINO's results."""
    rng = np.random.default_rng(11 + len(act or "") + len(bias or ""))
    model, shape, wshape = _linear_net(act, bias, dtype, dynamic, rng, transpose_b, const_b)
    xml = save(model, tmp_path, "l")
    label = "+".join(["MatMul"] + (["Add"] if bias else []) +
                     ([{"gelu": "Gelu", "gelu_tanh": "Gelu", "relu": "Relu", "swish": "Swish", "leaky": "PRelu"}[act]]
                      if act else []))
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == [label]
    feeds = [rng.standard_normal(shape).astype(dtype)]
    feeds[0].reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    if dynamic:
        feeds.append(rng.standard_normal([3, 700, shape[-1]]).astype(dtype))  # past PARALLEL_MIN: parallel rows
    w = {} if const_b else {"w": rng.standard_normal(wshape).astype(dtype)}
    for feed in feeds:
        np.testing.assert_array_equal(fused.run({"x": feed, **w})["y"], plain.run({"x": feed, **w})["y"])
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(dtype), **w})


@pytest.mark.parametrize("case", ["middle_axis_bias", "broadcast_residual", "used_twice", "f16", "integer"])
def test_matmul_is_left_alone(tmp_path, case):
    """A bias varying along another axis, a computed addend the sum broadcasts, a product used twice, f16 or
    integer data: no MatMul fusion."""
    rng = np.random.default_rng(4)
    dtype = {"f16": np.float16, "integer": np.int32}.get(case, np.float32)
    x = op1.parameter([2, 3, 4], dtype, name="x")
    mm = op1.matmul(x, op1.constant((rng.standard_normal([4, 4]) * 3).astype(dtype)), False, False)
    if case == "middle_axis_bias":
        y = op1.relu(op1.add(mm, op1.constant(rng.standard_normal([3, 1]).astype(dtype))))
    elif case == "broadcast_residual":  # a computed [1, 3, 4] addend: the sum is not a residual Add
        y = op1.relu(op1.add(mm, op1.reduce_max(x, op1.constant(np.array([0], np.int64)), True)))
    elif case == "used_twice":
        y = op1.add(op1.relu(op1.add(mm, op1.constant(np.ones([4], dtype)))), mm)
    else:
        y = op1.relu(op1.add(mm, op1.constant(np.ones([4], dtype))))
    xml = save(_model([_named(y, "y")], [x]), tmp_path, "m")
    _left_alone(xml, "MatMul", {"x": (rng.standard_normal([2, 3, 4]) * 3).astype(dtype)})


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("residual_first", [False, True])
def test_matmul_residual_add_is_one_step(tmp_path, bias, dtype, dynamic, residual_first):
    """A transformer block's `x + proj(h)`: MatMul by constant weights -> (+ bias) -> Add of a computed tensor
    of the product's shape (either operand order; here computed after the MatMul, so the step runs where
    the Add ran). No step of its own for the Add, the residual added in the linear layer's call;
    bit-identical to the layers (NaN, infinities, signed zeros), static and dynamic (the dynamic model also
    with rows past the one-call path), and equal to OpenVINO's results. On a static model the straight-line
    runner calls it with its two runtime operands."""
    rng = np.random.default_rng(7 + int(bias) + 2 * int(dynamic) + 4 * int(residual_first))
    k, n = 12, 10
    shape = [2, 5, k]
    x = op1.parameter([-1, -1, k] if dynamic else shape, dtype, name="x")
    mm = op1.matmul(x, op1.constant(rng.standard_normal([n, k]).astype(dtype)), False, True)
    if bias:
        mm = op1.add(mm, op1.constant(rng.standard_normal(n).astype(dtype)))
    # the residual: another linear layer of x, computed after the first (it follows it in the file)
    other = op1.matmul(x, op1.constant(rng.standard_normal([k, n]).astype(dtype)), False, False)
    y = op1.add(other, mm) if residual_first else op1.add(mm, other)
    xml = save(_model(_named(y, "y"), [x]), tmp_path, "r")
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    # two steps, every Add fused (with the residual first, the other MatMul may take it: then the sum's
    # other operand is the biased product)
    assert len(fused._plan.steps) == 2, fused.fused_steps
    assert sum(f[0].count("+Add") for f in fused.fused_steps) == (2 if bias else 1), fused.fused_steps
    calls = [ln for ln in fused._plan.source.splitlines() if "= fast" in ln]
    assert len(calls) == (0 if dynamic else 2) and (dynamic or sum(ln.count(", v") for ln in calls) == 1), calls
    feeds = [rng.standard_normal(shape).astype(dtype)]
    feeds[0].reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    if dynamic:
        feeds.append(rng.standard_normal([3, 700, k]).astype(dtype))  # past the one-call path
    for feed in feeds:
        for _ in range(2):  # planned on the first run, the bound path after
            np.testing.assert_array_equal(fused.run({"x": feed})["y"], plain.run({"x": feed})["y"])
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(dtype)})


def test_matmul_residual_that_broadcasts_at_run_time(tmp_path):
    """A dynamic model whose residual and product both read [-1, -1, N] but meet as [1, 5, N] + [2, 5, N]:
    the fused step falls back to the Add layer's broadcasting, as the layers do."""
    rng = np.random.default_rng(5)
    x = op1.parameter([-1, -1, 6], np.float32, name="x")
    r = op1.parameter([-1, -1, 4], np.float32, name="r")
    mm = op1.add(op1.matmul(x, op1.constant(rng.standard_normal([6, 4]).astype(np.float32)), False, False),
                 op1.constant(rng.standard_normal(4).astype(np.float32)))
    xml = save(_model(_named(op1.add(mm, r), "y"), [x, r]), tmp_path, "b")
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert "MatMul+Add+Add" in [f[0] for f in fused.fused_steps]
    for xs, rs in (([2, 5, 6], [1, 5, 4]), ([1, 5, 6], [3, 5, 4]), ([2, 5, 6], [2, 5, 4])):
        feed = {"x": rng.standard_normal(xs).astype(np.float32), "r": rng.standard_normal(rs).astype(np.float32)}
        got, want = fused.run(feed)["y"], plain.run(feed)["y"]
        assert got.shape == want.shape == np.broadcast_shapes(tuple(xs[:2]) + (4,), tuple(rs))
        np.testing.assert_array_equal(got, want)
    compare_with_openvino(xml, {"x": rng.standard_normal([2, 5, 6]).astype(np.float32),
                                "r": rng.standard_normal([1, 5, 4]).astype(np.float32)})


@pytest.mark.parametrize("code_name, with_bias", [("gelu_erf", True), ("relu", False), (None, True)])
def test_bias_activation_last_kernel(code_name, with_bias):
    """The last-axis in-place kernel, serial and parallel, short rows (staged several at a time) and long
    ones: bit-identical to an Add followed by the activation kernel."""
    from irnorm.kernels import PARALLEL_MIN, activation

    rng = np.random.default_rng(6)
    for shape in [(3, 7), (4, 300, 40), (2, 600), (64, 1024)]:
        y = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape[-1]).astype(np.float32) if with_bias else None
        code = activation.CODES[code_name] if code_name else -1
        added = y + b if with_bias else y
        want = activation.unary(code, added) if code >= 0 else added
        got = activation.bias_activation_last(y.copy(), b, code)
        np.testing.assert_array_equal(got, want)
    assert y.size >= PARALLEL_MIN


@pytest.mark.parametrize("shape", [(1, 300, 2, 2), (2, 7, 3), (1, 5, 255)])
@pytest.mark.parametrize("code_name, with_bias", [("swish", True), ("hswish", False), ("none", True)])
def test_bias_activation_kernel_on_short_rows(shape, code_name, with_bias):
    """Feature maps of a few pixels per channel stage several rows per activation call: bit-identical to
    an Add followed by the activation kernel (NaN, infinities and signed zeros included)."""
    from irnorm.kernels import activation

    rng = np.random.default_rng(6)
    y = rng.standard_normal(shape).astype(np.float32)
    y.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    c = shape[1]
    b = rng.standard_normal(c).astype(np.float32) if with_bias else None
    added = y + b.reshape((c,) + (1,) * (len(shape) - 2)) if with_bias else y
    code = -1 if code_name == "none" else activation.CODES[code_name]
    want = added if code < 0 else activation.unary(code, added, 1.25, 0.0)
    got = activation.bias_activation(y.copy(), b, code, 1.25, 0.0)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_epilogue_is_the_sigmoid_layers_expression(dtype):
    """The activation module's sigmoid code (a squeeze-excite gate in its epilogue) gives the bits of the
    Sigmoid layer's kernel, over ordinary, huge, tiny and non-finite values."""
    from irnorm.kernels import activation, elementwise
    from irnorm.kernels.opcodes import SIGMOID

    rng = np.random.default_rng(8)
    y = np.concatenate([rng.standard_normal(4000) * 10, [0.0, -0.0, 88.0, -88.0, 1e-30, -1e30, np.nan, np.inf, -np.inf],
                        rng.standard_normal(40000)]).astype(dtype)
    b = rng.standard_normal(1).astype(dtype)
    for shape, bias in [((1, 1, y.size), None), ((1, 1, y.size), b), ((y.size, 1, 1), None)]:
        want = elementwise.unary(SIGMOID, (y + (bias[0] if bias is not None else 0)).reshape(shape))
        got = activation.bias_activation(y.copy().reshape(shape), bias, activation.CODES["sigmoid"])
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("act, dtype, shaper", [("gelu_tanh", np.float32, "reshape"), ("relu", np.float64, "unsqueeze"),
                                                ("gelu", np.float32, "reshape")])
def test_matmul_bias_reshape_activation_is_one_step(tmp_path, act, dtype, shaper):
    """GPT-2's Conv1D as OpenVINO writes it: [M, K] x [K, N] + bias -> Reshape to [1, M, N] -> Gelu. The
    activation runs on the product in place before the reshape: one step, bit-identical to the layers
    (NaN, infinities, signed zeros), OpenVINO's results."""
    rng = np.random.default_rng(31 + len(act))
    m, k, n = 6, 12, 20
    x = op1.parameter([m, k], dtype, name="x")
    y = op1.add(op1.matmul(x, op1.constant(rng.standard_normal([k, n]).astype(dtype)), False, False),
                op1.constant(rng.standard_normal(n).astype(dtype)))
    if shaper == "reshape":
        y = op1.reshape(y, op1.constant(np.array([1, m, n], np.int64)), False)
    else:
        y = op1.unsqueeze(y, op1.constant(np.array([0], np.int64)))
    y = {"gelu": lambda v: op7.gelu(v, "erf"), "gelu_tanh": lambda v: op7.gelu(v, "tanh"), "relu": op1.relu}[act](y)
    xml = save(_model(_named(y, "y"), [x]), tmp_path, "c1d")
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    label = "+".join(["MatMul", "Add", "Reshape" if shaper == "reshape" else "Unsqueeze",
                      "Relu" if act == "relu" else "Gelu"])
    assert [f[0] for f in fused.fused_steps] == [label]
    feed = rng.standard_normal([m, k]).astype(dtype)
    feed.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    for _ in range(2):
        got, want = fused.run({"x": feed})["y"], plain.run({"x": feed})["y"]
        assert got.shape == (1, m, n)
        np.testing.assert_array_equal(got, want)
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal([m, k]).astype(dtype)})


def test_reshape_between_matmul_and_activation_left_alone_when_dynamic_or_shared(tmp_path):
    """A Reshape whose output shape is not static, or whose input is also used elsewhere: the activation
    stays its own step (the MatMul + Add still fuse); the same bits either way."""
    rng = np.random.default_rng(5)
    x = op1.parameter([-1, 8], np.float32, name="x")
    y = op1.add(op1.matmul(x, op1.constant(rng.standard_normal([8, 4]).astype(np.float32)), False, False),
                op1.constant(rng.standard_normal(4).astype(np.float32)))
    r = op1.reshape(y, op1.constant(np.array([1, -1, 4], np.int64)), False)
    out = op1.relu(r)
    xml = save(_model(_named(out, "y"), [x]), tmp_path, "dyn")
    assert [f[0] for f in irnorm.load(xml).fused_steps] == ["MatMul+Add"]
    _left_alone(xml, "MatMul+Add+", {"x": rng.standard_normal([3, 8]).astype(np.float32)})
    x2 = op1.parameter([3, 8], np.float32, name="x")
    y2 = op1.add(op1.matmul(x2, op1.constant(rng.standard_normal([8, 4]).astype(np.float32)), False, False),
                 op1.constant(rng.standard_normal(4).astype(np.float32)))
    r2 = op1.reshape(y2, op1.constant(np.array([1, 3, 4], np.int64)), False)
    both = op1.add(op1.relu(r2), r2)
    xml2 = save(_model(_named(both, "y"), [x2]), tmp_path, "shared")
    _left_alone(xml2, "MatMul+Add+", {"x": rng.standard_normal([3, 8]).astype(np.float32)})


def test_norm_steps_called_with_their_data_on_a_static_model(tmp_path):
    """On a static model the fused LayerNorm (MVN + Multiply + Add), the fused RMSNorm and a GroupNormalization
    with constant scale and bias are written into the plan's straight-line runner as calls with the data alone
    (their kernels' static_call); the results are the bits of the kernels' own calls (a profiled run), every
    run (planned on the first, bound after), and a dynamic model keeps the kernel calls."""
    rng = np.random.default_rng(12)
    for dynamic in (False, True):
        shape = (2, 5, 64)
        x = op1.parameter([-1, -1, 64] if dynamic else list(shape), np.float32, name="x")
        mvn = op6.mvn(x, op1.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")
        ln = op1.add(op1.multiply(mvn, op1.constant(rng.standard_normal(64).astype(np.float32))),
                     op1.constant(rng.standard_normal(64).astype(np.float32)))
        ms = op1.reduce_mean(op1.power(ln, op1.constant(np.array([[[2.0]]], np.float32))),
                             op1.constant(np.array([-1])), True)
        root = op1.sqrt(op1.add(ms, op1.constant(np.array([[[1e-6]]], np.float32))))
        rms = op1.multiply(ln, op1.divide(op1.constant(np.array([[[1.0]]], np.float32)), root))
        gn = op12.group_normalization(op1.reshape(rms, op1.constant(np.array([2, 8, 5, 8], np.int64)), False),
                                      op1.constant(rng.standard_normal(8).astype(np.float32)),
                                      op1.constant(rng.standard_normal(8).astype(np.float32)), 4, 1e-5)
        xml = save(_model(_named(gn, "y"), [x]), tmp_path, f"norms{dynamic}")
        m = irnorm.load(xml)
        labels = [label for label, _ in m.fused_steps]
        assert labels[0] == "MVN+Multiply+Add" and labels[1].startswith("RMSNorm("), labels
        assert m._plan.source.count("= fast") == (0 if dynamic else 3), m._plan.source
        data = (rng.standard_normal(shape) * 3 + 5).astype(np.float32)
        data[0, 0] = 7.0  # a row of one value: zero variance
        want = irnorm.load(xml, fuse=False).run({"x": data})["y"]
        for _ in range(3):
            got = m.run({"x": data})["y"]
            np.testing.assert_array_equal(got, m.run({"x": data}, profile=True)["y"])
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
        compare_with_openvino(xml, {"x": data})


op8 = pytest.importorskip("openvino.opset8")


def _attention_net(rng, batch, L, S, E, Ev, *, keys_given, scale, mask, softmax_axis=-1, v_transposed=False):
    """Attention written out as exports without ScaledDotProductAttention write it: MatMul(Q, K^T) (K^T a
    Transpose of K, or K with transpose_b), a Multiply / Divide by a scalar constant, an Add of a mask
    (a parameter or a constant of the given shape), SoftMax, MatMul(P, V)."""
    q = op1.parameter(list(batch) + [L, E], np.float32, name="q")
    k = op1.parameter(list(batch) + [S, E], np.float32, name="k")
    v = op1.parameter(list(batch) + ([Ev, S] if v_transposed else [S, Ev]), np.float32, name="v")
    params = [q, k, v]
    if keys_given:
        s = op1.matmul(q, k, False, True)
    else:
        perm = list(range(len(batch))) + [len(batch) + 1, len(batch)]
        s = op1.matmul(q, op1.transpose(k, op1.constant(np.array(perm, np.int64))), False, False)
    if scale is not None:
        op, c = scale
        c = op1.constant(np.full([1] * (len(batch) + 2) if op == "Multiply4" else [], c, np.float32))
        s = op1.divide(s, c) if op == "Divide" else op1.multiply(s, c)
    if mask is not None:
        kind, shape = mask
        if kind == "param":
            m = op1.parameter(list(shape), np.float32, name="m")
            params.append(m)
        else:
            m = op1.constant((rng.standard_normal(shape) * 3).astype(np.float32))
        s = op1.add(s, m)
    p = op8.softmax(s, softmax_axis)
    y = op1.matmul(p, v, False, v_transposed)
    return _model(_named(y, "y"), params)


@pytest.mark.parametrize("batch, L, S, E, Ev, keys_given, scale, mask", [
    ((1, 2), 8, 8, 16, 16, False, ("Multiply4", 0.25), ("param", (1, 1, 8, 8))),  # DistilBERT's
    ((2, 3), 5, 7, 4, 6, True, ("Divide", 2.0), ("const", (2, 3, 5, 7))),
    ((3,), 9, 4, 8, 8, True, None, ("param", (4,))),
    ((1, 4), 6, 6, 8, 3, False, ("Multiply", 0.3), None),
    ((2, 2), 17, 18, 20, 24, True, ("Multiply", 0.2), ("const", (1, 17, 1))),
])
def test_attention_written_out_is_one_attention_step(tmp_path, batch, L, S, E, Ev, keys_given, scale, mask):
    """MatMul -> scale -> mask -> SoftMax -> MatMul as one ScaledDotProductAttention step: against the layers
    (a different order of sums: within a few ulps), NaN rows where a mask is all -inf, a static model's second
    call (the step's static_call) the same bits as its first, and OpenVINO's results."""
    rng = np.random.default_rng(L * 7 + S)
    xml = save(_attention_net(rng, batch, L, S, E, Ev, keys_given=keys_given, scale=scale, mask=mask), tmp_path,
               "att")
    label = "+".join(["MatMul"] + ([scale[0][:8]] if scale else []) + (["Add"] if mask else []) +
                     ["SoftMax", "MatMul"])
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == [label], fused.fused_steps
    feeds = {"q": rng.standard_normal(list(batch) + [L, E]).astype(np.float32),
             "k": rng.standard_normal(list(batch) + [S, E]).astype(np.float32),
             "v": rng.standard_normal(list(batch) + [S, Ev]).astype(np.float32)}
    if mask is not None and mask[0] == "param":
        m = (rng.standard_normal(mask[1]) * 3).astype(np.float32)
        m.reshape(-1)[0] = -np.inf
        if len(mask[1]) == 4:
            m[..., 1, :] = -np.inf  # query row 1 sees nothing: NaN in both
        feeds["m"] = m
    got, want = fused.run(feeds)["y"], plain.run(feeds)["y"]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)
    np.testing.assert_array_equal(fused.run(feeds)["y"], got)
    if mask is None or mask[0] != "param" or len(mask[1]) != 4:  # OpenVINO's NaN rows are its own business
        compare_with_openvino(xml, feeds)


@pytest.mark.parametrize("case", ["softmax_axis", "v_transposed", "mask_widens", "scores_used_twice",
                                  "heads_too_large", "per_head_mask_on_broadcast_batch"])
def test_attention_written_out_left_alone(tmp_path, case):
    """SoftMax over another axis, V given transposed, a mask that widens the scores, scores read elsewhere, heads
    beyond the one-call attention kernel, a mask whose batch dims are neither all 1 nor the heads': the layers
    run as they are (the same bits as unfused)."""
    rng = np.random.default_rng(9)
    batch, L, S, E, Ev = (2, 2), 6, 6, 8, 8
    kw = dict(keys_given=True, scale=("Multiply", 0.5), mask=("param", (1, 1, L, S)))
    if case == "softmax_axis":
        kw["softmax_axis"] = -2
    elif case == "v_transposed":
        kw["v_transposed"] = True
    elif case == "mask_widens":
        kw["mask"] = ("param", (3, 1, 1, L, S))
    elif case == "heads_too_large":
        batch, L, S, E, Ev = (4, 4), 32, 32, 16, 16
        kw["mask"] = ("param", (1, 1, L, S))
    elif case == "per_head_mask_on_broadcast_batch":
        kw["mask"] = ("const", (1, 2, L, S))
    model = _attention_net(rng, batch, L, S, E, Ev, **kw)
    if case == "scores_used_twice":
        s = model.get_results()[0].input_value(0).get_node()  # the last MatMul
        model = _model([_named(s, "y"), _named(op1.relu(s.input_value(0).get_node().input_value(0)), "z")],
                       list(model.get_parameters()))
    xml = save(model, tmp_path, "att")
    out = kw["mask"][1] if kw["mask"][0] == "param" else None
    feeds = {"q": rng.standard_normal(list(batch) + [L, E]).astype(np.float32),
             "k": rng.standard_normal(list(batch) + [S, E]).astype(np.float32),
             "v": rng.standard_normal(list(batch) + ([Ev, S] if case == "v_transposed" else [S, Ev]))
             .astype(np.float32)}
    if out is not None:
        feeds["m"] = rng.standard_normal(out).astype(np.float32)
    _left_alone(xml, "MatMul+Multiply", feeds)


def _separable_attention_net(shape, d, dtype, *, softmax_axis=-1, reduce_axis=-1, keep_dims=True, k_first=True,
                             also_output=False):
    """MobileViTv2's separable self-attention as OpenVINO writes it: VariadicSplit of x along axis 1 into [1, d,
    d] -> SoftMax(q), Multiply(k, that), ReduceSum over the last axis, Relu(v), Multiply(Relu(v), the sums)."""
    x = op1.parameter(list(shape), dtype, name="x")
    parts = op1.variadic_split(x, op1.constant(np.array(1, np.int64)), op1.constant(np.array([1, d, d], np.int64)))
    q, k, v = parts.output(0), parts.output(1), parts.output(2)
    s = op8.softmax(q, softmax_axis)
    ks = op1.multiply(k, s) if k_first else op1.multiply(s, k)
    ctx = op1.reduce_sum(ks, op1.constant(np.array([reduce_axis], np.int64)), keep_dims)
    y = op1.multiply(op1.relu(v), ctx)
    outs = [_named(y, "y")] + ([_named(op1.relu(ks), "z")] if also_output else [])
    return _model(outs, [x])


@pytest.mark.parametrize("shape, d, dtype, k_first", [((1, 65, 4, 16), 32, np.float32, True),
                                                      ((2, 9, 3, 5, 7), 4, np.float32, False),
                                                      ((1, 17, 11), 8, np.float64, True),
                                                      ((1, 3, 1, 1), 1, np.float32, True)])
def test_separable_attention_is_one_step(tmp_path, shape, d, dtype, k_first):
    """VariadicSplit + SoftMax + Multiply + ReduceSum + Relu + Multiply as one step: against the layers (the sums'
    order may differ: within a few ulps; NaN, inf and -0.0 in the values), a static model's second call, and
    OpenVINO's results."""
    rng = np.random.default_rng(sum(shape) + d)
    xml = save(_separable_attention_net(shape, d, dtype, k_first=k_first), tmp_path, "sep")
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert [f[0] for f in fused.fused_steps] == ["VariadicSplit+SoftMax+Relu+Multiply+ReduceSum+Multiply"]
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    v = x[:, 1 + d:].reshape(-1)
    v[:3] = [np.nan, -np.inf, -0.0][:v.size]
    got, want = fused.run({"x": x})["y"], plain.run({"x": x})["y"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    tol = 2e-6 if dtype == np.float32 else 1e-14
    finite = np.abs(want[np.isfinite(want)])
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * (float(finite.max()) if finite.size else 1.0))
    np.testing.assert_array_equal(fused.run({"x": x})["y"], got)
    if dtype == np.float32:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(dtype)})


@pytest.mark.parametrize("case", ["softmax_axis", "reduce_axis", "no_keep_dims", "intermediate_output"])
def test_separable_attention_left_alone(tmp_path, case):
    """SoftMax or ReduceSum over another axis, ReduceSum without keep_dims, an intermediate also read elsewhere:
    the layers run as they are (the same bits as unfused)."""
    rng = np.random.default_rng(2)
    shape, d = (1, 9, 4, 4), 4
    kw = {"softmax_axis": {"softmax_axis": 2}, "reduce_axis": {"reduce_axis": 2},
          "no_keep_dims": {"keep_dims": False}, "intermediate_output": {"also_output": True}}[case]
    xml = save(_separable_attention_net(shape, d, np.float32, **kw), tmp_path, "sep")
    _left_alone(xml, "VariadicSplit", {"x": rng.standard_normal(shape).astype(np.float32)})
