"""MaxPool / AvgPool: malformed IR gets coded errors, the empty-window rules, and an OpenVINO-written
ResNet-style stem at two dynamic shapes.  Random shapes and attributes: tests/conformance/pooling.py."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error, run_model, single_op_model
from ovutil import compare_with_openvino, save

import irnorm
from irnorm import reference as R

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


# ---- AdaptiveAvgPool-8 / AdaptiveMaxPool-8 (random shapes and sizes: tests/conformance/pooling.py) ----------


def _adaptive(type_, x_spec, sizes, out, attrs=None, n_out=1):
    size_in = ("param:s", sizes) if isinstance(sizes, tuple) else ("s", np.asarray(sizes))
    outs = [(out, "f32")] + ([(out, (attrs or {}).get("index_element_type", "i64"))] if n_out > 1 else [])
    return single_op_model(type_, [("param:x", x_spec), size_in], outs, attrs or {}, version="opset8")


@pytest.mark.parametrize("x_spec,sizes,code,fragment", [
    (((2, 3), "f32"), np.array([3], np.int64), "IRN032", "rank 3, 4 or 5"),
    (((1, 2, 3, 4, 5, 6), "f32"), np.array([1, 1, 1, 1], np.int64), "IRN032", "rank 3, 4 or 5"),
    (((1, 2, 6, 6), "i32"), np.array([3, 3], np.int64), "IRN033", "floating-point"),
    (((1, 2, 6, 6), "f32"), np.array([3], np.int64), "IRN032", "has 1 values"),
    (((1, 2, 6, 6), "f32"), np.array([3, -1], np.int64), "IRN032", "must be >= 0"),
    (((1, 2, 6, 6), "f32"), np.array([3.0, 3.0], np.float32), "IRN033", "integer"),
    (((1, 2, 6, 6), "f32"), np.array([[3, 3]], np.int64), "IRN032", "1-D"),
    (((1, 2, 0, 6), "f32"), np.array([2, 3], np.int64), "IRN032", "every window would be empty"),
])
@pytest.mark.parametrize("type_", ["AdaptiveAvgPool", "AdaptiveMaxPool"])
def test_malformed_adaptive_pooling(tmp_path, type_, x_spec, sizes, code, fragment):
    expect_error(_adaptive(type_, x_spec, sizes, [-1] * max(len(x_spec[0]), 3)), tmp_path, code, fragment)


def test_adaptive_index_element_type_is_checked(tmp_path):
    b = _adaptive("AdaptiveMaxPool", ((1, 2, 6, 6), "f32"), np.array([3, 3], np.int64), [1, 2, 3, 3],
                  {"index_element_type": "f32"}, n_out=2)
    expect_error(b, tmp_path, "IRN021", "index_element_type", "not i32 or i64")


def test_adaptive_sizes_given_at_run_time_are_checked_there(tmp_path):
    """The sizes as a model input: the output shape is found per call; a size that breaks the rule is an
    IRN064 at the layer (never a traceback), and a good call after it still runs."""
    m = irnorm.load(_adaptive("AdaptiveAvgPool", ((1, 2, -1, -1), "f32"), ((-1,), "i64"), [1, 2, -1, -1])
                    .save(tmp_path, "rt"))
    x = np.arange(2 * 6 * 4, dtype=np.float32).reshape(1, 2, 6, 4)
    for bad, fragment in (([3, -2], "must be >= 0"), ([3, 3, 3], "has 3 values")):
        with pytest.raises(irnorm.InputError) as e:
            m.run({"x": x, "s": np.array(bad, np.int64)})
        assert e.value.diagnostics[0].code == "IRN064" and fragment in str(e.value)
    with pytest.raises(irnorm.InputError, match="every window would be empty"):
        m.run({"x": np.zeros((1, 2, 0, 4), np.float32), "s": np.array([1, 1], np.int64)})
    y = m.run({"x": x, "s": np.array([3, 2], np.int64)})["y"]
    assert np.array_equal(y, x.reshape(1, 2, 3, 2, 2, 2).mean(axis=(3, 5)))  # even windows: plain block means


def test_adaptive_windows_overlap_when_sizes_do_not_divide(tmp_path):
    """5 -> 3: windows [0, 2), [1, 4), [3, 5) (floor(i n / o), ceil((i + 1) n / o)): the middle one takes 3
    elements and overlaps both neighbours; 2 -> 5 repeats elements."""
    x = np.array([[[1.0, 2.0, 4.0, 8.0, 16.0]]], np.float32)
    got = run_model(_adaptive("AdaptiveAvgPool", ((1, 1, 5), "f32"), np.array([3], np.int64), [1, 1, 3]), tmp_path,
                    {"x": x})["y"]
    assert got.dtype == np.float32 and np.allclose(got, [[[1.5, 14 / 3, 12.0]]], rtol=1e-7, atol=0)
    up = run_model(_adaptive("AdaptiveMaxPool", ((1, 1, 2), "f32"), np.array([5], np.int64), [1, 1, 5],
                             {"index_element_type": "i32"}, n_out=2), tmp_path, {"x": x[..., :2]})
    # window i of 5 over 2: [floor(2i / 5), ceil(2(i + 1) / 5)) = [0,1) [0,1) [0,2) [1,2) [1,2)
    assert up["y"].tolist() == [[[1.0, 1.0, 2.0, 2.0, 2.0]]] and up["y1"].tolist() == [[[0, 0, 1, 1, 1]]]
    assert up["y1"].dtype == np.int32


def test_adaptive_max_pool_ties_and_nan_follow_openvino(tmp_path):
    """The first maximum wins ties; a NaN is kept only as a window's first tap (a later NaN never compares
    greater) -- what OpenVINO's CPU plugin gives (i32 indices: it cannot compile i64 ones)."""
    x = op1.parameter([1, 1, 3, 4], np.float32, name="x")
    m = ov.opset8.adaptive_max_pool(x, op1.constant(np.array([2, 2], np.int64)), "i32")
    m.output(0).get_tensor().set_names({"v"})
    m.output(1).get_tensor().set_names({"i"})
    xml = save(ov.Model([op1.result(m.output(0)), op1.result(m.output(1))], [x]), tmp_path, "ties")
    data = np.array([[[[np.nan, 3, 3, 1], [3, np.nan, 1, 3], [0, 0, 0, 0]]]], np.float32)
    got = irnorm.load(xml).run({"x": data})
    expected = ov.Core().compile_model(xml, "CPU")([data])
    assert np.array_equal(got["v"], expected[0], equal_nan=True) and np.array_equal(got["i"], expected[1])
    assert got["i"].tolist() == [[[[0, 2], [4, 7]]]]  # NaN first (0); ties 3 at 2 and 7 -> 2; 3 at 4 of [3, nan, 0, 0]


def test_adaptive_max_pool_indices_unread_or_undeclared(tmp_path):
    """A layer declaring one output port (or whose indices nothing reads) returns just the maxima."""
    x = np.random.default_rng(5).standard_normal((2, 3, 7, 5)).astype(np.float32)
    one = run_model(_adaptive("AdaptiveMaxPool", ((2, 3, 7, 5), "f32"), np.array([3, 2], np.int64), [2, 3, 3, 2]),
                    tmp_path, {"x": x}, name="one")["y"]
    ref, _ = R.adaptive_max_pool(x, [3, 2])
    assert one.dtype == np.float32 and np.array_equal(one, ref.astype(np.float32))


def test_vgg_style_head_from_openvino_at_two_dynamic_shapes(tmp_path):
    """AdaptiveAvgPool2d((7, 7)) as a torchvision VGG exports it (a constant size input), on dynamic spatial
    dims: inputs smaller than 7 repeat elements, larger ones average."""
    x = op1.parameter([-1, 4, -1, -1], np.float32, name="x")
    p = ov.opset8.adaptive_avg_pool(x, op1.constant(np.array([7, 7], np.int64)))
    y = op1.reshape(p, op1.constant(np.array([0, -1], np.int64)), True)
    y.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([op1.result(y)], [x]), tmp_path, "vgg_head")
    rng = np.random.default_rng(7)
    for shape in [(1, 4, 5, 3), (2, 4, 16, 23)]:
        got = compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(np.float32)})
        assert got["y"].shape == (shape[0], 4 * 49)


@pytest.mark.parametrize("shape, pad", [((1, 64, 32, 32), 1), ((2, 5, 17, 23), 1), ((1, 3, 40, 9), 0),
                                        ((1, 4, 9, 70), 1), ((1, 6, 15, 20), 2), ((1, 2, 4, 40), 2),
                                        ((1, 2, 3, 3), 1), ((2, 3, 5, 2), 1), ((1, 3, 6, 7), 3),
                                        ((1, 2, 20, 70), 1), ((1, 3, 13, 16), 1), ((1, 2, 19, 33), 0)])
def test_max_pool_3x3_stride_2_vector_rows(shape, pad):
    """Values-only float32 3x3 / 2 max pools (ResNet's stem pool) take the vector-row kernel inside the input
    where irnorm's vector kernels run (kernels/rowvec.py), and so do the windows cut by the padding (all but
    those wholly in it, down to maps narrower than a window and pads as wide as one): the rule's values, NaN,
    infinities and ties included, and the loop's bits."""
    from irnorm.kernels import microgemm, pooling

    rng = np.random.default_rng(sum(shape))
    x = rng.integers(-3, 4, shape).astype(np.float32)  # small integers: many ties
    x[rng.random(shape) < 0.05] = np.nan
    x[rng.random(shape) < 0.02] = np.inf
    x[rng.random(shape) < 0.02] = -np.inf
    out_hw = [(n + 2 * pad - 3) // 2 + 1 for n in shape[2:]]
    results = {}
    for vector in (True, False):
        pooling.VECTOR_ROWS = vector
        try:
            plan = pooling.max_pool_plan(shape, out_hw, [3, 3], [2, 2], [1, 1], [pad, pad], np.dtype(np.float32),
                                         float(-np.inf), False)
            results[vector] = np.array(plan(x)[0], copy=True)
        finally:
            pooling.VECTOR_ROWS = microgemm.ENABLED
    np.testing.assert_array_equal(results[True], results[False])
    if pad >= 3:  # windows wholly in the padding (the rule below has no value for one): the lowest value
        def padded(o: int, n: int) -> bool:
            return o * 2 - pad + 3 <= 0 or o * 2 - pad >= n
        rows = [o for o in range(out_hw[0]) if padded(o, shape[2])]
        cols = [o for o in range(out_hw[1]) if padded(o, shape[3])]
        assert rows and cols
        assert np.all(results[True][:, :, rows, :] == -np.inf) and np.all(results[True][:, :, :, cols] == -np.inf)
        return
    want = np.stack([_max_pool_rule(x[i:i + 1], [3, 3], [2, 2], [1, 1], [pad, pad], tuple(out_hw))[0][0]
                     for i in range(shape[0])])
    np.testing.assert_array_equal(results[True], want)


@pytest.mark.parametrize("indices", [False, True])
def test_pool_plans_bound_on_their_first_call_take_any_input_after(indices):
    """max_pool_plan / adaptive_pool_plan bind their kernel's entry point on the first call: later calls with
    a read-only input, a non-contiguous one and a float64 one (converted) give the reference's values, and
    so does a first call with a read-only input."""
    from irnorm.kernels import pooling

    rng = np.random.default_rng(3 + indices)
    shape = (2, 3, 9, 11)
    args = ([5, 6], [3, 3], [2, 2], [1, 1], [1, 1], np.dtype(np.float32), float(np.finfo(np.float32).min), indices)
    feeds = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    feeds[0].flags.writeable = False
    wide = rng.standard_normal(shape[:3] + (22,)).astype(np.float32)
    feeds += [wide[..., ::2], rng.standard_normal(shape)]
    for order in (feeds, feeds[::-1]):
        plan = pooling.max_pool_plan(shape, *args)
        adaptive = pooling.adaptive_pool_plan(shape, [3, 4], np.dtype(np.float32), average=False)
        for x in order:
            want = R.max_pool(np.asarray(x, np.float32), [3, 3], [2, 2], [1, 1], [1, 1], [5, 6])[0]
            vals, idx = plan(x)
            np.testing.assert_array_equal(vals, want)
            assert (idx is not None) == indices
            got, _ = adaptive(x)
            np.testing.assert_array_equal(got, R.adaptive_max_pool(np.asarray(x, np.float32), [3, 4])[0])


@pytest.mark.parametrize("window", ["generic", "inside_3x3_2", "inside_2x2_2"])
@pytest.mark.parametrize("indices", [False, True])
def test_pool_kernels_give_the_same_bits_on_one_task_or_several(monkeypatch, window, indices):
    """Each pooling kernel runs one task on the calling thread (no parallel launch) and several over the
    threads: max (generic and per-window kernels, with and without indices), average (padding counted or
    not) and adaptive pools give the same bits either way, NaN and ties included."""
    from irnorm.kernels import pooling

    rng = np.random.default_rng(7)
    shape = (2, 5, 13, 17)
    x = rng.integers(-3, 4, shape).astype(np.float32)
    x[rng.random(shape) < 0.05] = np.nan
    k, s, d, pb = {"generic": ([2, 3], [1, 2], [2, 1], [1, 2]), "inside_3x3_2": ([3, 3], [2, 2], [1, 1], [1, 1]),
                   "inside_2x2_2": ([2, 2], [2, 2], [1, 1], [0, 0])}[window]
    out_hw = [(n + 2 * p - (dd * (kk - 1) + 1)) // ss + 1 for n, p, dd, kk, ss in zip(shape[2:], pb, d, k, s,
                                                                                       strict=True)]
    results = {}
    for tasks in (1, 3):
        monkeypatch.setattr(pooling, "_tasks", lambda rows, work, t=tasks: t)
        vals, idx = pooling.max_pool_plan(shape, out_hw, k, s, d, pb, np.dtype(np.float32), float(-np.inf),
                                          indices)(x)
        avg = [pooling.avg_pool(x, out_hw, k, s, pb, pb, ex, np.dtype(np.float32), d) for ex in (False, True)]
        ada = [pooling.adaptive_pool_plan(shape, [4, 5], np.dtype(np.float32), average=a)(x) for a in (False, True)]
        results[tasks] = [np.array(vals, copy=True)] + ([np.array(idx, copy=True)] if indices else []) + avg + \
            [np.array(a[0], copy=True) for a in ada] + [np.array(ada[0][1], copy=True)]
    for one, several in zip(results[1], results[3], strict=True):
        assert one.tobytes() == several.tobytes()
    want = _max_pool_rule(x[:1], k, s, d, pb, tuple(out_hw))
    np.testing.assert_array_equal(results[1][0][:1], want[0])
