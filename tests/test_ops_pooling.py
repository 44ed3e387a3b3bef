"""MaxPool / AvgPool: malformed IR gets coded errors, the empty-window rules, and an OpenVINO-written
ResNet-style stem at two dynamic shapes.  Random shapes and attributes: tests/conformance/pooling.py."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error, single_op_model
from ovutil import compare_with_openvino, save

import irnorm

ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")
op14 = pytest.importorskip("openvino.opset14")

BASE = {"strides": [2, 2], "pads_begin": [1, 1], "pads_end": [1, 1], "kernel": [3, 3], "rounding_type": "floor",
        "auto_pad": "explicit"}


def _maxpool(attrs, shape=(1, 2, 6, 6), out=(1, 2, 3, 3), version="opset1"):
    return single_op_model("MaxPool", [("param:x", (shape, "f32"))], [(out, "f32")], attrs, version=version)


@pytest.mark.parametrize("change,code,fragment", [
    ({"rounding_type": "round"}, "IRN021", "rounding_type"),
    ({"kernel": [9, 9], "pads_begin": [0, 0], "pads_end": [0, 0]}, "IRN032", "larger than the padded input"),
    ({"strides": [0, 2]}, "IRN023", "stride"),
    ({"pads_begin": [-1, 0]}, "IRN023", "pads"),
    ({"kernel": [3]}, "IRN032", "needs rank 3"),
    ({"strides": [2, 2, 2]}, "IRN032", "strides has 3 values"),
])
def test_malformed_pooling_attributes(tmp_path, change, code, fragment):
    expect_error(_maxpool({**BASE, **change}), tmp_path, code, fragment)


def test_ceil_torch_needs_maxpool_14(tmp_path):
    expect_error(_maxpool({**BASE, "rounding_type": "ceil_torch"}), tmp_path, "IRN021", "rounding_type")
    attrs = {**BASE, "rounding_type": "ceil_torch", "dilations": [1, 1]}
    # 6 + 1 + 1 - 3 = 5: ceil(5 / 2) + 1 = 4 windows, the last starting at 6 - 1 = 5, inside the data
    b = _maxpool(attrs, out=(1, 2, 4, 4), version="opset14")
    x = np.arange(72, dtype=np.float32).reshape(1, 2, 6, 6)
    y = irnorm.load(b.save(tmp_path, "ok")).run({"x": x})["y"]
    assert y.shape == (1, 2, 4, 4) and y[0, 0, 0, 0] == x[0, 0, :2, :2].max() and y[0, 0, 3, 3] == x[0, 0, 5, 5]


def test_a_window_with_no_data_gives_the_lowest_value_and_index_0(tmp_path):
    """ceil rounding can put a whole window in the padding: OpenVINO gives the type's lowest value (and
    index 0) for MaxPool and 0 for an AvgPool that counts the padding."""
    x = op1.parameter([1, 1, 2], np.float32, name="x")
    mp = ov.opset8.max_pool(x, [2], [1], [0], [1], [2], "ceil", "explicit", ov.Type.i64, 0)
    ap = op1.avg_pool(x, [2], [0], [1], [2], False, "ceil", "explicit")
    for node, name in ((mp.output(0), "m"), (mp.output(1), "i"), (ap.output(0), "a")):
        node.get_tensor().set_names({name})
    xml = save(ov.Model([op1.result(mp.output(0)), op1.result(mp.output(1)), op1.result(ap.output(0))], [x]),
               tmp_path, "empty")
    got = compare_with_openvino(xml, {"x": np.array([[[1.0, 2.0]]], np.float32)}, tol=(0, 0))
    assert got["m"].tolist() == [[[2.0, float(np.finfo(np.float32).min)]]] and got["i"].tolist() == [[[1, 0]]]
    assert got["a"].tolist() == [[[1.5, 0.0]]]


def test_resnet_stem_from_openvino_at_two_dynamic_shapes(tmp_path):
    x = op1.parameter([-1, 3, -1, -1], np.float32, name="x")
    mp = op14.max_pool(x, [2, 2], [1, 1], [1, 1], [1, 1], [3, 3], "ceil_torch", "explicit")
    ap = op14.avg_pool(mp.output(0), [2, 2], [0, 0], [0, 0], [2, 2], True, "ceil_torch", "explicit")
    ap.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([op1.result(ap.output(0))], [x]), tmp_path, "stem")
    rng = np.random.default_rng(3)
    for shape in [(1, 3, 16, 16), (2, 3, 11, 7)]:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(np.float32)})


def _max_pool_rule(x, k, s, d, pb, out_hw):
    """MaxPool's documented rule, one window at a time: the first tap inside the input starts the window,
    a later tap replaces it only when strictly greater (the first maximum wins ties; a NaN counts only as
    the first tap); the index counts from axis 0 (the default): ((n * C + c) * H + y) * W + x."""
    n, c, h, w = x.shape
    vals = np.empty((n, c) + out_hw, x.dtype)
    idx = np.empty((n, c) + out_hw, np.int64)
    for i in np.ndindex(n, c, *out_hw):
        best, arg = None, None
        for b in range(k[0]):
            y = i[2] * s[0] - pb[0] + b * d[0]
            for a in range(k[1]):
                t = i[3] * s[1] - pb[1] + a * d[1]
                if 0 <= y < h and 0 <= t < w and (best is None or x[i[0], i[1], y, t] > best):
                    best, arg = x[i[0], i[1], y, t], ((i[0] * c + i[1]) * h + y) * w + t
        vals[i], idx[i] = best, arg
    return vals, idx


# the window shapes with kernels of their own (kernels/pooling.py _MAX_INSIDE): kernel, strides
SPECIALIZED = [([3, 3], [2, 2]), ([3, 3], [1, 1]), ([2, 2], [2, 2])]


@pytest.mark.parametrize("indices_read", [True, False])
@pytest.mark.parametrize("seed", range(12))
def test_max_pool_windows_inside_and_across_the_border_follow_the_rule(tmp_path, seed, indices_read):
    """Windows wholly inside the input take faster paths than those across the border (a kernel per
    common window shape for 2-D inputs, the generic one otherwise); all must give the first maximum,
    NaN and ties included.  Seeds 6-11 use the specialized window shapes.  With the index output
    declared but unread (as in every exported CNN) the specialized shapes run a values-only kernel."""
    rng = np.random.default_rng(seed)
    h, w = int(rng.integers(5, 12)), int(rng.integers(5, 12))
    x = rng.integers(-3, 4, (1, 2, h, w)).astype(np.float32)  # small integers: many ties
    x[rng.random(x.shape) < 0.1] = np.nan
    k = [int(v) for v in rng.integers(1, 4, 2)]
    s = [int(v) for v in rng.integers(1, 3, 2)]
    d = [int(v) for v in rng.integers(1, 3, 2)]
    if seed >= 6:
        k, s = SPECIALIZED[seed % 3]
        d = [1, 1]
    pb = [int(rng.integers(0, kk)) for kk in k]
    out_hw = tuple((n + 2 * p - (dd * (kk - 1) + 1)) // ss + 1 for n, p, dd, kk, ss in zip((h, w), pb, d, k, s,
                                                                                          strict=True))
    attrs = {"strides": s, "pads_begin": pb, "pads_end": pb, "kernel": k, "dilations": d, "rounding_type": "floor"}
    out_specs = [((1, 2) + out_hw, "f32"), ((1, 2) + out_hw, "i64")]
    if indices_read:
        b = single_op_model("MaxPool", [("param:x", ((1, 2, h, w), "f32"))], out_specs, attrs, version="opset14")
    else:
        b = IRBuilder("mp")
        outs = b.layer("MaxPool", [b.parameter("x", (1, 2, h, w), "f32")], out_specs, attrs, version="opset14",
                       name="pool", names=["y", "y1"])
        b.result(outs[0])
    m = irnorm.load(b.save(tmp_path, "mp"))
    got = list(m.run({"x": x}).values())
    want = _max_pool_rule(x, k, s, d, pb, out_hw)
    np.testing.assert_array_equal(got[0], want[0])  # NaN == NaN here
    if indices_read:
        np.testing.assert_array_equal(got[1], want[1])
    else:
        assert len(got) == 1
        (step,) = m._plan.steps
        assert len(step.kernel([x])) == 1  # the unread indices were not computed
        # the unfused (debugging) plan still computes them, for captures
        cap = m.run({"x": x}, capture=["pool"]).captures
        np.testing.assert_array_equal(cap[1].array, want[1])
