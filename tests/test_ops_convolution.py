"""Convolution-1, GroupConvolution-1, ConvolutionBackpropData-1 beyond the conformance table: every
shape/attribute rule as a malformed-IR test, run-time rule failures under dynamic dims, the batch
chunking of the unfolded buffer, auto_pad same_* with the explicit pads exports write next to it, and
an OpenVINO-written conv -> depthwise conv -> matmul chain (f16 weights behind decompression
Converts) run at two dynamic input shapes."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import element_type, expect_error, run_model, single_op_model
from ovutil import HAVE_OPENVINO, compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R
from irnorm.errors import InputError

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as op1

ATTRS = {"strides": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0], "dilations": [1, 1], "auto_pad": "explicit"}


def _conv(type_, x_shape, w, attrs=None, out_rank=None, extra=(), et="f32"):
    attrs = dict(ATTRS, **(attrs or {}))
    rank = out_rank if out_rank is not None else len(x_shape)
    return single_op_model(type_, [("param:x", (x_shape, et)), ("w", w), *extra],
                           [((-1,) * rank, "dynamic")], attrs, version="opset1")


def _w(*shape):
    return np.ones(shape, np.float32)


def test_channel_mismatch(tmp_path):
    expect_error(_conv("Convolution", (1, 3, 8, 8), _w(4, 2, 3, 3)), tmp_path / "c", "IRN032", "C_in=3")
    expect_error(_conv("GroupConvolution", (1, 6, 8, 8), _w(3, 2, 3, 3, 3)), tmp_path / "g", "IRN032", "3*3 = 9")
    expect_error(_conv("ConvolutionBackpropData", (1, 3, 8, 8), _w(4, 2, 3, 3)), tmp_path / "b", "IRN032", "C_in=3")
    expect_error(_conv("GroupConvolutionBackpropData", (1, 6, 8, 8), _w(3, 3, 2, 3, 3)), tmp_path / "gb", "IRN032",
                 "3*3 = 9")


def test_groups_not_dividing(tmp_path):
    expect_error(_conv("GroupConvolution", (1, 7, 8, 8), _w(2, 2, 3, 3, 3)), tmp_path, "IRN032", "not divisible")
    expect_error(_conv("GroupConvolutionBackpropData", (1, 7, 8, 8), _w(2, 2, 3, 3, 3)), tmp_path / "b", "IRN032",
                 "not divisible")


@pytest.mark.parametrize("name", ["pads_begin", "pads_end"])
def test_negative_pads(tmp_path, name):
    expect_error(_conv("Convolution", (1, 2, 8, 8), _w(4, 2, 3, 3), {name: [0, -1]}), tmp_path, "IRN023", name)


@pytest.mark.parametrize("attrs, fragment", [({"strides": [1, 0]}, "strides"), ({"dilations": [0, 1]}, "dilations")])
def test_strides_dilations_positive(tmp_path, attrs, fragment):
    expect_error(_conv("Convolution", (1, 2, 8, 8), _w(4, 2, 3, 3), attrs), tmp_path, "IRN023", fragment)


def test_negative_output_padding(tmp_path):
    expect_error(_conv("ConvolutionBackpropData", (1, 2, 4, 4), _w(2, 3, 3, 3), {"output_padding": [0, -1]}),
                 tmp_path, "IRN023", "output_padding")


def test_kernel_larger_than_padded_input(tmp_path):
    d = expect_error(_conv("Convolution", (1, 2, 4, 4), _w(3, 2, 3, 3), {"dilations": [2, 2], "pads_end": [0, 0]}),
                     tmp_path / "dil", "IRN032", "larger than the padded input")
    assert "5 = 2*(3-1)+1" in d.message
    # pads that make it fit are fine
    x = np.ones((1, 2, 4, 4), np.float32)
    y = run_model(_conv("Convolution", x.shape, _w(3, 2, 3, 3), {"dilations": [2, 2], "pads_end": [1, 1]}),
                  tmp_path / "ok", {"x": x})["y"]
    assert y.shape == (1, 3, 1, 1)


def test_kernel_larger_than_input_at_run_time(tmp_path):
    m = irnorm.load(_conv("Convolution", (1, 2, -1, -1), _w(3, 2, 3, 3)).save(tmp_path))
    assert m.run({"x": np.ones((1, 2, 3, 5), np.float32)})["y"].shape == (1, 3, 1, 3)
    with pytest.raises(InputError) as e:
        m.run({"x": np.ones((1, 2, 2, 5), np.float32)})
    assert e.value.code == "IRN064" and "larger than the padded input" in str(e.value)


@pytest.mark.parametrize("type_, w, fragment", [
    ("Convolution", _w(3, 2, 3), "rank 3"),
    ("Convolution", _w(1, 3, 2, 3, 3), "rank 5"),
    ("GroupConvolution", _w(3, 2, 3, 3), "rank 4"),
    ("ConvolutionBackpropData", _w(2, 3, 3, 3, 3), "rank 5"),
])
def test_wrong_weight_rank(tmp_path, type_, w, fragment):
    expect_error(_conv(type_, (1, 2, 8, 8), w), tmp_path, "IRN032", fragment)


def test_data_rank(tmp_path):
    expect_error(_conv("Convolution", (1, 2), _w(3, 2), {"strides": [], "dilations": [], "pads_begin": [],
                                                         "pads_end": []}), tmp_path, "IRN032", "1 to 3 spatial")


def test_attribute_length_must_match_spatial_rank(tmp_path):
    expect_error(_conv("Convolution", (1, 2, 8, 8), _w(3, 2, 3, 3), {"strides": [1, 1, 1]}), tmp_path / "s",
                 "IRN032", "strides has 3 values")
    expect_error(_conv("Convolution", (1, 2, 8, 8), _w(3, 2, 3, 3), {"pads_begin": [1]}), tmp_path / "p",
                 "IRN032", "pads_begin has 1 values")


def test_bad_auto_pad_and_types(tmp_path):
    expect_error(_conv("Convolution", (1, 2, 8, 8), _w(3, 2, 3, 3), {"auto_pad": "same"}), tmp_path / "a",
                 "IRN021", "auto_pad")
    b = single_op_model("Convolution", [("param:x", ((1, 2, 8, 8), "f32")), ("w", np.ones((3, 2, 3, 3), np.float16))],
                        [((-1,) * 4, "dynamic")], ATTRS, version="opset1")
    expect_error(b, tmp_path / "t", "IRN033", "filter")
    b = single_op_model("Convolution", [("param:x", ((1, 2, 8, 8), "boolean")), ("w", np.ones((3, 2, 3, 3), bool))],
                        [((-1,) * 4, "dynamic")], ATTRS, version="opset1")
    expect_error(b, tmp_path / "b", "IRN033", "numeric")


@pytest.mark.parametrize("dt", [np.int8, np.int64])
def test_integer_convolution_wraps_exactly(tmp_path, dt):
    """Integer data: exact sums wrapped to the element type (int8: 4*9*4*4 = 576 wraps to 64)."""
    x = np.full((1, 4, 5, 5), 4, dt)
    w = np.full((2, 4, 3, 3), 4, dt)
    y = run_model(_conv("Convolution", x.shape, w, et=element_type(dt)), tmp_path, {"x": x})["y"]
    assert y.dtype == dt
    np.testing.assert_array_equal(y, np.full((1, 2, 3, 3), 576, np.int64).astype(dt))


def test_output_shape_input_rules(tmp_path):
    base = ("ConvolutionBackpropData", (1, 2, 4, 4), _w(2, 3, 3, 3))
    expect_error(_conv(*base, extra=[("os", np.array([5, 5, 5], np.int64))]), tmp_path / "n", "IRN032", "3 values")
    expect_error(_conv(*base, extra=[("os", np.array([5.0, 5.0], np.float32))]), tmp_path / "t", "IRN033",
                 "integer")
    expect_error(_conv(*base, extra=[("os", np.array([5, -1], np.int64))]), tmp_path / "neg", "IRN032", "negative")


def test_same_upper_ignores_explicit_pads_dynamic(tmp_path):
    """auto_pad same_* next to pads attributes (as exports write them): pads are computed from the run-time
    input size, the attributes ignored."""
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 3, 3, 2)).astype(np.float32)
    attrs = {"strides": [2, 3], "pads_begin": [5, 5], "pads_end": [0, 7], "auto_pad": "same_lower"}
    m = irnorm.load(_conv("Convolution", (-1, 3, -1, -1), w, attrs).save(tmp_path))
    for shape in [(1, 3, 7, 8), (2, 3, 6, 11)]:
        x = rng.standard_normal(shape).astype(np.float32)
        y = m.run({"x": x})["y"]
        exp = R.convolution(x, w, [2, 3], [0, 0], [0, 0], [1, 1], "same_lower")
        assert y.shape == (shape[0], 4, -(-shape[2] // 2), -(-shape[3] // 3))
        np.testing.assert_allclose(y, exp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("budget", [300, 2000])
def test_tiles_of_the_unfolded_buffer(tmp_path, monkeypatch, budget):
    """A small unfold budget forces one GEMM per block of output rows (300) or of images (2000);
    results are unchanged."""
    from irnorm.kernels import conv

    rng = np.random.default_rng(4)
    x = rng.standard_normal((5, 4, 6, 7)).astype(np.float32)
    w = rng.standard_normal((2, 3, 2, 3, 3)).astype(np.float32)  # grouped, not depthwise
    wd = rng.standard_normal((4, 2, 2, 3)).astype(np.float32)
    exp = R.group_convolution(x, w, [1, 2], [1, 0], [1, 2], [1, 1])
    expd = R.convolution_backprop_data(x, wd, [2, 1], [1, 0], [0, 1], [1, 2])
    monkeypatch.setattr(conv, "COL_BUDGET", budget)
    y = run_model(_conv("GroupConvolution", x.shape, w, {"strides": [1, 2], "pads_begin": [1, 0],
                                                         "pads_end": [1, 2]}), tmp_path / "g", {"x": x})["y"]
    np.testing.assert_allclose(y, exp, rtol=1e-5, atol=1e-5)
    y = run_model(_conv("ConvolutionBackpropData", x.shape, wd, {"strides": [2, 1], "pads_begin": [1, 0],
                                                                 "pads_end": [0, 1], "dilations": [1, 2]}),
                  tmp_path / "b", {"x": x})["y"]
    np.testing.assert_allclose(y, expd, rtol=1e-5, atol=1e-5)


def test_empty_batch_and_zero_channels(tmp_path):
    m = irnorm.load(_conv("Convolution", (-1, 2, 5, 5), _w(3, 2, 3, 3)).save(tmp_path / "n"))
    assert m.run({"x": np.ones((0, 2, 5, 5), np.float32)})["y"].shape == (0, 3, 3, 3)
    y = run_model(_conv("Convolution", (1, 0, 5, 5), _w(3, 0, 3, 3)), tmp_path / "c",
                  {"x": np.ones((1, 0, 5, 5), np.float32)})["y"]
    np.testing.assert_array_equal(y, np.zeros((1, 3, 3, 3), np.float32))


def test_backprop_runtime_output_shape(tmp_path):
    """A non-constant output_shape (a model input) is read when running."""
    rng = np.random.default_rng(6)
    w = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    attrs = dict(ATTRS, strides=[2, 2], auto_pad="same_upper")
    b = single_op_model("ConvolutionBackpropData", [("param:x", ((1, 2, 4, 4), "f32")), ("w", w),
                                                     ("param:os", ((2,), "i64"))],
                        [((-1,) * 4, "dynamic")], attrs, version="opset1")
    m = irnorm.load(b.save(tmp_path))
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    for os_ in ([8, 8], [7, 9]):
        y = m.run({"x": x, "os": np.array(os_, np.int64)})["y"]
        exp = R.convolution_backprop_data(x, w, [2, 2], [0, 0], [0, 0], [1, 1], "same_upper", None, os_)
        np.testing.assert_allclose(y, exp, rtol=1e-5, atol=1e-5)


@requires_openvino
def test_openvino_conv_chain_two_dynamic_shapes(tmp_path):
    """Conv 3x3 (same_upper) -> depthwise 3x3 stride 2 -> MatMul over the last axis, written by OpenVINO with
    f16-compressed weights; batch and height dynamic, run at two shapes."""
    rng = np.random.default_rng(8)
    x = op1.parameter(ov.PartialShape([-1, 3, -1, 12]), np.float32, name="x")
    c1 = op1.convolution(x, op1.constant(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3),
                         [1, 1], [1, 1], [1, 1], [1, 1], "same_upper")
    c2 = op1.group_convolution(c1, op1.constant(rng.standard_normal((8, 1, 1, 3, 3)).astype(np.float32) * 0.3),
                               [2, 2], [1, 1], [1, 1], [1, 1])
    mm = op1.matmul(c2, op1.constant(rng.standard_normal((5, 6)).astype(np.float32)), False, True)
    mm.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([mm], [x], "chain"), tmp_path, "chain", compress_to_fp16=True)
    text = xml.read_text()
    assert "GroupConvolution" in text and "MatMul" in text and 'element_type="f16"' in text
    for shape in [(1, 3, 10, 12), (2, 3, 7, 12)]:
        got = compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(np.float32)})["y"]
        assert got.shape == (shape[0], 8, -(-shape[2] // 2), 5)


def test_empty_kernel_and_out_of_range_attributes(tmp_path):
    expect_error(_conv("Convolution", (1, 2, 5, 5), _w(3, 2, 0, 3)), tmp_path / "k", "IRN032", "empty kernel")
    expect_error(_conv("ConvolutionBackpropData", (1, 2, 5, 5), _w(2, 3, 3, 0)), tmp_path / "kb", "IRN032",
                 "empty kernel")
    # int32 range: the kernels' int64 index arithmetic cannot overflow
    expect_error(_conv("Convolution", (1, 2, 5, 5), _w(3, 2, 3, 3), {"strides": [2**31, 1]}), tmp_path / "s",
                 "IRN023", "strides must all be in [1, 2147483647]")
    expect_error(_conv("Convolution", (1, 2, 5, 5), _w(3, 2, 3, 3), {"pads_begin": [2**70, 0]}), tmp_path / "p",
                 "IRN023", "pads_begin")


def test_backprop_runtime_output_shape_out_of_range(tmp_path):
    b = single_op_model("ConvolutionBackpropData", [("param:x", ((1, 2, 4, 4), "f32")), ("w", _w(2, 3, 3, 3)),
                                                     ("param:os", ((2,), "i64"))],
                        [((-1,) * 4, "dynamic")], ATTRS, version="opset1")
    m = irnorm.load(b.save(tmp_path))
    x = np.ones((1, 2, 4, 4), np.float32)
    for os_, fragment in (([2**40, 3], "does not fit"), ([2**30, 2**30], "cannot allocate"),
                          ([-1, 3], "does not fit")):
        with pytest.raises(InputError) as e:
            m.run({"x": x, "os": np.array(os_, np.int64)})
        assert e.value.code == "IRN064" and fragment in str(e.value), str(e.value)


@requires_openvino
@pytest.mark.parametrize("compress", [True, False])
def test_onnx_export_conv_group_deconv_matmul(tmp_path, compress):
    """A real export path: an ONNX graph (Conv auto_pad SAME_UPPER with bias, depthwise Conv, ConvTranspose,
    MatMul) converted by OpenVINO's ONNX frontend and written by save_model (f16-compressed weights behind
    decompression Converts, or f32), dynamic batch and height; irnorm against OpenVINO and onnxruntime."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(11)
    weights = {"W1": rng.standard_normal((8, 3, 3, 3)) * 0.3, "B1": rng.standard_normal(8),
               "W2": rng.standard_normal((8, 1, 3, 3)) * 0.3, "W3": rng.standard_normal((8, 4, 2, 2)) * 0.3,
               "W4": rng.standard_normal((32, 6))}
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], auto_pad="SAME_UPPER", strides=[2, 2]),
             helper.make_node("Conv", ["c1", "W2"], ["c2"], group=8, pads=[1, 1, 1, 1]),
             helper.make_node("ConvTranspose", ["c2", "W3"], ["c3"], strides=[2, 2]),
             helper.make_node("MatMul", ["c3", "W4"], ["y"])]
    graph = helper.make_graph(
        nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, "H2", 6])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    onnx_path = tmp_path / "chain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(onnx_path))
    xml = save(ov.convert_model(str(onnx_path)), tmp_path, "chain", compress_to_fp16=compress)
    text = xml.read_text()
    assert 'auto_pad="same_upper"' in text and "ConvolutionBackpropData" in text and "GroupConvolution" in text
    sess = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    for shape in [(1, 3, 16, 32), (2, 3, 11, 32)]:
        x = rng.standard_normal(shape).astype(np.float32)
        got = compare_with_openvino(xml, {"x": x})["y"]
        assert got.shape == (shape[0], 4, 2 * -(-shape[2] // 2), 6)
        if not compress:
            (exp,) = sess.run(None, {"x": x})
            np.testing.assert_allclose(got, exp, rtol=1e-4, atol=1e-4 * float(np.abs(exp).max()))


@pytest.mark.parametrize("seed", range(12))
def test_unfold_paths_match_the_reference(seed, monkeypatch):
    """conv_forward's three unfolds -- stride-1 2-D in the padded row width (``_wide_products``), row by row
    from a padded copy (``im2col``), bounds-checked on the input itself (``im2col_bounded``, huge pads with
    huge strides) -- on one thread and on the pool, and the small-convolution path (one serial bounded
    unfold, ``im2col_bounded_serial``), against the float64 reference; each path is checked to be the one
    taken."""
    from irnorm.kernels import conv

    rng = np.random.default_rng(seed)
    rank = (1, 2, 2, 3)[seed % 4]
    n, g = int(rng.integers(1, 3)), int(rng.choice([1, 2]))
    cin, cout = g * int(rng.integers(1, 4)), g * int(rng.integers(1, 4))
    k = [int(v) for v in rng.integers(1, 4, rank)]
    d = [int(v) for v in rng.integers(1, 3, rank)]
    s = [1] * rank if seed % 3 == 0 else [int(v) for v in rng.integers(1, 3, rank)]
    pb = [int(v) for v in rng.integers(0, 3, rank)]
    pe = [int(v) for v in rng.integers(0, 3, rank)]
    if seed % 6 == 5:  # padding much larger than the input, strides as large: the bounded unfold
        pb, pe, s = [40] * rank, [40] * rank, [37] * rank
    spatial = [int(v) + (kk - 1) * dd for v, kk, dd in zip(rng.integers(1, 9, rank), k, d, strict=True)]
    x = rng.standard_normal((n, cin, *spatial)).astype(np.float32)
    w = rng.standard_normal((g, cout // g, cin // g, *k)).astype(np.float32)
    exp = R.group_convolution(x, w, s, pb, pe, d)
    out_sp = exp.shape[2:]
    wp = np.ascontiguousarray(w.reshape(g, cout // g, -1))
    unfold_free = k == [1] * rank and s == [1] * rank and pb == [0] * rank and list(out_sp) == spatial
    wide = rank < 3 and s == [1] * rank and 2 * out_sp[-1] >= out_sp[-1] + (k[-1] - 1) * d[-1]
    expected = (["im2col_bounded"] if seed % 6 == 5 else [] if unfold_free else ["_wide_products"] if wide
                else ["im2col"])
    taken: list[str] = []
    for name in ("_wide_products", "im2col", "im2col_bounded", "im2col_bounded_serial", "gather_unfold"):
        orig = getattr(conv, name)

        def spy(*a, _orig=orig, _name=name):
            r = _orig(*a)
            if r is not False:
                taken.append(_name)
            return r

        monkeypatch.setattr(conv, name, spy)
    monkeypatch.setattr(conv.SCRATCH, "MIN_BYTES", 0)  # every size through the reused per-thread buffers
    monkeypatch.setattr(conv, "SMALL_COL", 0)  # the paths for convolutions that are not small
    # the unfolds as they run without the banded path (test_banded_convolution): grouped and 3-D
    # convolutions, single output rows, a BLAS other than the OpenBLAS irnorm drives
    monkeypatch.setattr(conv.blas, "gemm_pointer", lambda dt: None)
    _without_implicit(monkeypatch, conv)  # the implicit GEMM (no unfold) has a test of its own
    for parallel_min in (1 << 30, 1):
        monkeypatch.setattr(conv, "UNFOLD_PARALLEL_MIN", parallel_min)
        taken.clear()
        y = conv.conv_forward(x, wp, k, s, d, pb, out_sp)
        np.testing.assert_allclose(y, exp, rtol=1e-4, atol=1e-4)
        assert taken == expected
    # every one of them small: one serial bounded unfold, or the index-table gather when the output rows
    # are short (a 1x1 convolution needs neither); then both, forced, bit-identical (the same copies)
    monkeypatch.setattr(conv, "SMALL_COL", 1 << 40)
    small_unfold = "gather_unfold" if out_sp[-1] <= conv.GATHER_MAX_WIDTH else "im2col_bounded_serial"
    taken.clear()
    y = conv.conv_forward(x, wp, k, s, d, pb, out_sp)
    np.testing.assert_allclose(y, exp, rtol=1e-4, atol=1e-4)
    assert taken == ([] if unfold_free else [small_unfold])
    if not unfold_free:
        results = {}
        for width in (0, 1 << 30):
            monkeypatch.setattr(conv, "GATHER_MAX_WIDTH", width)
            taken.clear()
            results[width] = conv.conv_forward(x, wp, k, s, d, pb, out_sp)
            assert taken == ["im2col_bounded_serial" if width == 0 else "gather_unfold"]
        np.testing.assert_array_equal(results[0], results[1 << 30])


@pytest.mark.parametrize("x5, k, pad, stride, larger_input", [
    ((1, 2, 1, 4, 4), 3, 1, 1, False), ((2, 3, 1, 5, 7), 2, 2, 1, False), ((1, 3, 1, 9, 8), 3, 1, 2, False),
    ((1, 4, 1, 11, 11), 1, 0, 7, True), ((2, 2, 1, 10, 9), 2, 1, 5, True), ((1, 1, 1, 1, 1), 3, 2, 1, False)])
def test_gather_unfold_copies_the_index_table(x5, k, pad, stride, larger_input):
    """gather_unfold (gemm_epilogue's gather too) against the index table's meaning: col[i] = x[idx[i]], +0.0
    where idx[i] is the input's size (a tap in the padding); NaN / -0.0 / inf copied as they are; on inputs
    no larger than the unfolded buffer (the extended copy) and larger (large strides: the select per tap)."""
    from irnorm.kernels import conv

    rng = np.random.default_rng(sum(x5) + k)
    o3 = [1] + [(x5[a] + 2 * pad - k) // stride + 1 for a in (3, 4)]
    idx = conv.unfold_index(x5, [1, k, k], [1, stride, stride], [1, 1, 1], [0, pad, pad], o3)
    x = rng.standard_normal(x5).astype(np.float32)
    xf = x.reshape(-1)
    xf[rng.random(x.size) < 0.2] = np.nan
    xf[rng.random(x.size) < 0.1] = -0.0
    xf[0] = np.inf
    assert idx.dtype == np.uint32 and idx.max() <= xf.size and (xf.size > idx.size) == larger_input
    col = np.full(idx.shape, 7.0, np.float32)
    conv.gather_unfold(xf, idx, col)
    want = np.where(idx < xf.size, xf[np.minimum(idx, xf.size - 1)], np.float32(0.0))
    np.testing.assert_array_equal(col.view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("parallel_min", [1 << 40, 1])
def test_depthwise_paths_and_reused_buffers_match_the_reference(monkeypatch, parallel_min):
    """conv_depthwise over random geometries in one thread (the per-thread scratch buffers are reused
    from one call to the next, so stale padding would show): the padded-row-width kernel (stride 1,
    1-D/2-D) and the direct one (strides, 3-D), serial and on the pool, against the float64 reference."""
    from irnorm.kernels import conv

    monkeypatch.setattr(conv, "DEPTHWISE_PARALLEL_MIN", parallel_min)
    monkeypatch.setattr(conv.SCRATCH, "MIN_BYTES", 0)  # every size through the reused buffers
    monkeypatch.setattr(conv, "STRIDE2_MIN_WIDTH", 1 << 30)  # (which has a test of its own)
    monkeypatch.setattr(conv, "STRIDE1_MIN_WIDTH", 1 << 30)
    rng = np.random.default_rng(11)
    taken = {"wide": 0, "direct": 0}
    for name, key in (("depthwise_wide", "wide"), ("depthwise", "direct")):
        orig = getattr(conv, name)

        def spy(*a, _orig=orig, _key=key):
            taken[_key] += 1
            return _orig(*a)

        monkeypatch.setattr(conv, name, spy)
    for case in range(24):
        rank = (1, 2, 2, 3)[case % 4]
        g, mult = int(rng.integers(1, 6)), int(rng.integers(1, 3))
        k = [int(v) for v in rng.integers(1, 6, rank)]
        d = [int(v) for v in rng.integers(1, 3, rank)]
        s = [1] * rank if case % 3 else [int(v) for v in rng.integers(1, 3, rank)]
        pb = [int(v) for v in rng.integers(0, 3, rank)]
        pe = [int(v) for v in rng.integers(0, 3, rank)]
        spatial = [int(v) + (kk - 1) * dd for v, kk, dd in zip(rng.integers(1, 12, rank), k, d, strict=True)]
        x = rng.standard_normal((int(rng.integers(1, 3)), g, *spatial)).astype(np.float32)
        w = rng.standard_normal((g, mult, 1, *k)).astype(np.float32)
        exp = R.group_convolution(x, w, s, pb, pe, d)
        y = conv.conv_depthwise(x, np.ascontiguousarray(w.reshape(g * mult, *k)), s, d, pb, exp.shape[2:])
        np.testing.assert_allclose(y, exp, rtol=1e-4, atol=1e-4, err_msg=f"case {case}")
    assert taken["wide"] >= 6 and taken["direct"] >= 6, taken


@pytest.mark.parametrize("seed", range(4))
def test_depthwise_channels_inner_equals_the_other_kernels(monkeypatch, seed):
    """Small depthwise convolutions with many channels take the channels-inner kernel (strides, or output
    planes of at most CHANNELS_INNER_PLANE pixels): it sums the same taps in the same order as the
    padded-row and direct kernels, so its results are theirs bit for bit (and the reference's), with the
    filter transposed by the caller (constant weights) or on the fly."""
    from irnorm.kernels import conv

    monkeypatch.setattr(conv, "STRIDE2_MIN_WIDTH", 1 << 30)  # (where irnorm's vector kernels run)
    monkeypatch.setattr(conv, "STRIDE1_MIN_WIDTH", 1 << 30)
    rng = np.random.default_rng(100 + seed)
    taken = []
    orig = conv._depthwise_plan

    def spy(*a):  # the plan chosen (below ONE_CALL_MAX outputs: depthwise_inner_epilogue, the kernel and the
        plan = orig(*a)  # epilogue in one call)
        if plan.__name__ == "channels_inner":
            taken.append(1)
        return plan

    monkeypatch.setattr(conv, "_depthwise_plan", spy)
    for case in range(12):
        rank = 1 if case % 4 == 0 else 2
        g = int(rng.integers(conv.CHANNELS_INNER_MIN, 80))
        k = [int(v) for v in rng.integers(1, 6, rank)]
        d = [int(v) for v in rng.integers(1, 3, rank)]
        s = [int(v) for v in rng.integers(1, 3, rank)]
        pb = [int(v) for v in rng.integers(0, 3, rank)]
        pe = [int(v) for v in rng.integers(0, 3, rank)]
        spatial = [int(v) + (kk - 1) * dd for v, kk, dd in zip(rng.integers(1, 9, rank), k, d, strict=True)]
        x = rng.standard_normal((int(rng.integers(1, 3)), g, *spatial)).astype(np.float32)
        w = rng.standard_normal((g, 1, 1, *k)).astype(np.float32)
        wp = np.ascontiguousarray(w.reshape(g, *k))
        exp = R.group_convolution(x, w, s, pb, pe, d)
        before = len(taken)
        y = np.array(conv.conv_depthwise(x, wp, s, d, pb, exp.shape[2:]), copy=True)
        y_kept = np.array(conv.conv_depthwise(x, wp, s, d, pb, exp.shape[2:], conv.channels_inner_filter(wp)),
                          copy=True)
        assert len(taken) == before + 2, f"case {case}: not the channels-inner kernel"
        with monkeypatch.context() as mp:
            mp.setattr(conv, "CHANNELS_INNER_MIN", 1 << 30)  # the other kernels
            other = conv.conv_depthwise(x, wp, s, d, pb, exp.shape[2:])
        assert len(taken) == before + 2
        np.testing.assert_array_equal(y, other, err_msg=f"case {case}")
        np.testing.assert_array_equal(y_kept, other)
        np.testing.assert_allclose(y, exp, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, k, s, p", [((1, 20, 40, 40), 3, 2, 1), ((2, 17, 23, 29), 5, 2, 2),
                                           ((1, 48, 32, 32), 3, 2, 1), ((1, 16, 17, 1), 3, 2, 1)])
def test_depthwise_channels_inner_large_planes(monkeypatch, shape, k, s, p):
    """Planes of more than 256 pixels take the channels-inner kernel's tiled transpose: the same bits
    as the other kernels, and the reference's values."""
    from irnorm.kernels import conv

    monkeypatch.setattr(conv, "STRIDE2_MIN_WIDTH", 1 << 30)  # (where irnorm's vector kernels run)
    monkeypatch.setattr(conv, "STRIDE1_MIN_WIDTH", 1 << 30)
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    g = shape[1]
    kw = 1 if shape[3] == 1 else k
    w = rng.standard_normal((g, 1, 1, k, kw)).astype(np.float32)
    sw, pw = (1, 0) if kw == 1 else (s, p)
    exp = R.group_convolution(x, w, [s, sw], [p, pw], [p, pw], [1, 1])
    wp = np.ascontiguousarray(w.reshape(g, k, kw))
    taken = []
    orig = conv._depthwise_plan

    def spy(*a):
        plan = orig(*a)
        taken.append(plan.__name__)
        return plan

    monkeypatch.setattr(conv, "_depthwise_plan", spy)
    y = np.array(conv.conv_depthwise(x, wp, [s, sw], [1, 1], [p, pw], exp.shape[2:]), copy=True)
    assert taken == ["channels_inner"]
    monkeypatch.setattr(conv, "CHANNELS_INNER_MIN", 1 << 30)
    other = conv.conv_depthwise(x, wp, [s, sw], [1, 1], [p, pw], exp.shape[2:])
    np.testing.assert_array_equal(y, other)
    np.testing.assert_allclose(y, exp, rtol=1e-4, atol=1e-4)


def _record_calls(monkeypatch, module, name: str, index: int) -> list:
    """module.name still runs, each call's argument `index` appended to the list returned."""
    calls: list = []
    orig = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a: calls.append(a[index]) or orig(*a))
    return calls


def _without_implicit(monkeypatch, conv) -> None:
    """Every convolution off the implicit GEMM (where irnorm's GEMM kernels run it takes many): the paths it
    would replace are what a test checks."""
    monkeypatch.setattr(conv, "IMPLICIT_MAX_COUT", 0)
    monkeypatch.setattr(conv, "IMPLICIT_MIN_PIXELS", 1 << 40)
    monkeypatch.setattr(conv, "IMPLICIT_SMALL_COL", -1)
    monkeypatch.setattr(conv, "STRIDED_MAX_COUT", -1)
    monkeypatch.setattr(conv, "IMPLICIT_BY_ROWS", False)  # (dense strided ones take it for rows of whole panels)
    monkeypatch.setattr(conv, "_threads", lambda: 1 << 30)  # (and where there are as many images as threads)
    monkeypatch.setattr(conv, "IMPLICIT_MID_COUT", 0)


def _watch_direct(monkeypatch, conv) -> list:
    """Record each direct_conv call's task count (its last argument) while still running it; a call of the
    one-call serial kernel (direct_serial) as 1.  The implicit GEMM, which takes many of these convolutions
    where irnorm's GEMM kernels run (AVX-512), is switched off: the direct kernel is what is tested."""
    _without_implicit(monkeypatch, conv)
    taken: list = []
    orig, serial = conv.direct_conv, conv.direct_serial
    monkeypatch.setattr(conv, "direct_conv", lambda *a: taken.append(a[-1]) or orig(*a))
    monkeypatch.setattr(conv, "direct_serial", lambda *a: taken.append(1) or serial(*a))
    return taken


def _check_direct(monkeypatch, conv, taken, x, wp, k, d, pb, exp, case) -> None:
    """conv_forward of x with prepared weights wp takes the direct kernel (one more call in `taken`) and
    matches the float64 reference `exp`, and the unfold + GEMM path to rounding."""
    before = len(taken)
    y = np.array(conv.conv_forward(x, wp, tuple(k), (1, 1), tuple(d), tuple(pb), exp.shape[2:]), copy=True)
    assert len(taken) == before + 1, f"case {case}: not the direct kernel"
    np.testing.assert_allclose(y, exp, rtol=1e-4, atol=1e-4, err_msg=f"case {case}")
    with monkeypatch.context() as mp:
        mp.setattr(conv, "DIRECT_MAX_COUT", 0)
        other = conv.conv_forward(x, wp, tuple(k), (1, 1), tuple(d), tuple(pb), exp.shape[2:])
    np.testing.assert_allclose(y, other, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("bands, parallel", [(False, False), (True, False), (True, True)])
def test_direct_kernel_for_few_output_channels_matches_the_reference(monkeypatch, bands, parallel):
    """Stride-1 2-D convolutions with at most DIRECT_MAX_COUT output channels (one group) run the direct
    kernel from the padded planes, band by band of output rows, serial or on the pool: the float64
    reference's values (and the GEMM path's, to rounding) over random geometries, dilations and pads,
    half of them with filter rows of three taps (taken in one pass) and 1 to DIRECT_MAX_COUT output channels (blocks of
    four and the rest)."""
    from irnorm.kernels import conv

    if bands:
        monkeypatch.setattr(conv, "DIRECT_BAND_ELEMS", 64)  # a band of one or two rows
    if parallel:
        monkeypatch.setattr(conv, "DEPTHWISE_PARALLEL_MIN", 1)
    taken = _watch_direct(monkeypatch, conv)
    rng = np.random.default_rng(21)
    for case in range(10):
        cout = int(rng.integers(1, conv.DIRECT_MAX_COUT + 1))
        k = [int(v) for v in rng.integers(1, 4, 2)]
        if case % 2 == 0:
            k[1] = 3  # filter rows of three taps take the kernel's three-tap pass
        least = -(-conv.DIRECT_MIN_TAPS // (k[0] * k[1]))
        cin = int(rng.integers(least, least + 8))
        d = [int(v) for v in rng.integers(1, 3, 2)]
        pb = [int(v) for v in rng.integers(0, 3, 2)]
        pe = [int(v) for v in rng.integers(0, 3, 2)]
        spatial = [int(v) + (kk - 1) * dd for v, kk, dd in zip(rng.integers(1, 14, 2), k, d, strict=True)]
        x = rng.standard_normal((int(rng.integers(1, 3)), cin, *spatial)).astype(np.float32)
        w = rng.standard_normal((cout, cin, *k)).astype(np.float32)
        exp = R.convolution(x, w, [1, 1], pb, pe, d)
        _check_direct(monkeypatch, conv, taken, x, np.ascontiguousarray(w.reshape(1, cout, -1)), k, d, pb, exp, case)
    assert (max(taken) > 1) == parallel


def test_padded_planes_match_numpy_padding_and_cropping():
    """conv._padded_planes (one flat pass in a kernel) lays each plane out at hp x wp with pb zero rows /
    columns before, zeros after and `spare` zeros past the last plane; negative pads crop, and a plane
    shifted wholly outside comes out all zeros.  Checked against numpy slicing on a dirty scratch buffer."""
    from irnorm.kernels import conv

    rng = np.random.default_rng(8)
    for _ in range(60):
        n, c, h, w = (int(v) for v in rng.integers(1, 5, 4))
        pb = [0, int(rng.integers(-3, 4)), int(rng.integers(-3, 4))]
        hp, wp = (int(v) for v in rng.integers(1, 9, 2))
        spare = int(rng.integers(0, 4))
        x5 = rng.standard_normal((n, c, 1, h, w)).astype(np.float32)
        conv.SCRATCH.get(0, (n * c * hp * wp + spare,), np.float32)[...] = np.nan  # whatever was there before
        got = conv._padded_planes(x5, hp, wp, pb, spare)
        want = np.zeros((n, c, hp, wp), np.float32)
        for r in range(hp):
            for q in range(wp):
                y, t = r - pb[1], q - pb[2]
                if 0 <= y < h and 0 <= t < w:
                    want[:, :, r, q] = x5[:, :, 0, y, t]
        np.testing.assert_array_equal(got[:n * c * hp * wp].reshape(want.shape), want)
        assert not got[n * c * hp * wp:].any()


@pytest.mark.parametrize("parallel", [False, True])
def test_direct_kernel_for_grouped_convolutions_matches_the_reference(monkeypatch, parallel):
    """Grouped stride-1 2-D convolutions (not depthwise) with filter rows of three taps, at most
    DIRECT_MAX_COUT output channels per group and at least DIRECT_MIN_TAPS values per output run the
    direct kernel group by group: the float64 reference's values (and the unfold + GEMM path's, to
    rounding), batches of 1-2, 2-4 groups."""
    from irnorm.kernels import conv

    if parallel:
        monkeypatch.setattr(conv, "DEPTHWISE_PARALLEL_MIN", 1)
    taken = _watch_direct(monkeypatch, conv)
    rng = np.random.default_rng(22)
    for case in range(8):
        g = int(rng.integers(2, 5))
        cpg = int(rng.integers(1, conv.DIRECT_MAX_COUT + 1))
        k = [int(rng.integers(1, 4)), 3]  # grouped filters take the direct kernel with rows of three taps
        least = -(-conv.DIRECT_MIN_TAPS // (k[0] * k[1]))
        cin_g = int(rng.integers(least, least + 6))
        pb = [int(v) for v in rng.integers(0, 2, 2)]
        pe = [int(v) for v in rng.integers(0, 2, 2)]
        spatial = [int(v) + kk - 1 for v, kk in zip(rng.integers(1, 12, 2), k, strict=True)]
        x = rng.standard_normal((int(rng.integers(1, 3)), g * cin_g, *spatial)).astype(np.float32)
        w = rng.standard_normal((g, cpg, cin_g, *k)).astype(np.float32)
        exp = R.group_convolution(x, w, [1, 1], pb, pe, [1, 1])
        _check_direct(monkeypatch, conv, taken, x, np.ascontiguousarray(w.reshape(g, cpg, -1)), k, [1, 1], pb, exp,
                      case)
    assert (max(taken) > 1) == parallel


@pytest.mark.parametrize("shape, k, cout, direct", [
    ((1, 3, 20, 20), (3, 3), 8, True),    # an RGB first layer: 27 taps, rows of three
    ((2, 1, 9, 11), (3, 3), 16, True),    # one input channel: 9 taps
    ((1, 1, 40), (3,), 4, True),          # 1-D, 3 taps
    ((1, 1, 12, 12), (5, 5), 8, True),    # 25 taps in rows of five (>= DIRECT_MIN_TAPS_DENSE)
    ((1, 3, 64, 64), (3, 3), 32, True),   # 32 channels on a 4096-pixel plane
    ((1, 3, 16, 16), (3, 3), 32, False),  # 32 channels on a small plane: unfold + GEMM
    ((1, 3, 9, 9), (2, 2), 8, False),     # 12 taps in rows of two: unfold + GEMM
])
def test_direct_kernel_for_few_taps(monkeypatch, shape, k, cout, direct):
    """Dense stride-1 convolutions with fewer than DIRECT_MIN_TAPS values per output (an image's first
    layer) take the direct kernel when its filter rows have three taps or there are at least
    DIRECT_MIN_TAPS_DENSE taps, with up to 2 * DIRECT_MAX_COUT output channels on large planes; either
    way the float64 reference's values."""
    from irnorm.kernels import conv

    taken = _watch_direct(monkeypatch, conv)
    rng = np.random.default_rng(sum(shape) + cout)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((cout, shape[1], *k)).astype(np.float32)
    nd = len(k)
    pads = [kk // 2 for kk in k]
    exp = R.convolution(x, w, [1] * nd, pads, pads, [1] * nd)
    y = conv.conv_forward(x, np.ascontiguousarray(w.reshape(1, cout, -1)), k, (1,) * nd, (1,) * nd, tuple(pads),
                          exp.shape[2:])
    assert (len(taken) == 1) == direct
    np.testing.assert_allclose(y, exp, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, k, cout, strides, dil, pads, dtype", [
    ((1, 32, 40, 37), (3, 3), 24, (1, 1), (1, 1), (1, 1), np.float32),   # a VGG / UNet layer
    ((1, 3, 64, 64), (7, 7), 64, (2, 2), (1, 1), (3, 3), np.float32),    # ResNet's stem
    ((2, 16, 23, 29), (3, 3), 40, (2, 1), (2, 2), (2, 0), np.float32),   # batch 2, mixed strides, dilation
    ((1, 24, 30, 30), (5, 5), 36, (1, 1), (1, 1), (0, 4), np.float64),   # float64: dgemm
    ((1, 16, 6, 600), (1, 5), 20, (1, 3), (1, 1), (0, 2), np.float32),  # 1-D filters on a few long rows
    ((1, 8, 120, 121), (4, 4), 16, (4, 4), (1, 1), (0, 0), np.float32),  # a patchify stem: four column phases
    ((1, 12, 61, 95), (3, 3), 24, (3, 2), (2, 3), (1, 2), np.float32),  # column taps 0, 3, 6 across two phases
])
def test_banded_convolution(monkeypatch, shape, k, cout, strides, dil, pads, dtype):
    """Dense 2-D convolutions too large for the one-call path and not direct run band by band of output
    rows (unfold into an L2-sized buffer, one BLAS call per band into the output; with a column stride, from
    the planes split into column phases): the float64 reference's values, the unfold + GEMM path's to
    rounding, and the same bits whatever the thread count.  (A single
    output row, as 1-D data has, keeps the unfold + GEMM path: one band would leave a thread idle.)"""
    import numba

    from irnorm.kernels import blas, conv

    if blas.gemm_pointer(np.dtype(dtype)) is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS irnorm drives: the banded path is not taken")
    _without_implicit(monkeypatch, conv)  # the implicit GEMM has tests of its own
    taken: list = []
    orig = conv.banded_conv
    monkeypatch.setattr(conv, "banded_conv", lambda *a: taken.append(a[15]) or orig(*a))  # its tasks
    rng = np.random.default_rng(sum(shape) + cout)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal((cout, shape[1], *k)).astype(dtype)
    pe = [max(0, p - 1) for p in pads]  # asymmetric: fewer zeros at the end
    exp = R.convolution(x.astype(np.float64), w.astype(np.float64), list(strides), list(pads), pe, list(dil))
    wp = np.ascontiguousarray(w.reshape(1, cout, -1))

    def forward() -> np.ndarray:
        return np.array(conv.conv_forward(x, wp, k, strides, dil, pads, exp.shape[2:]), copy=True)

    y = forward()
    assert taken, "not the banded path"
    assert y.dtype == dtype
    # bands on several threads: a fused step's epilogue then runs on several too (kernels.conv.with_epilogue)
    assert getattr(conv.forward_plan(x.shape, wp, k, strides, dil, pads, exp.shape[2:]), "parallel", False)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(y, exp, rtol=tol, atol=tol * np.abs(exp).max())
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = forward()
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(one, y)
    # a fused step's epilogue applied band by band in the same call: the bits of the product followed by the
    # layers' epilogue pass, the reference's values
    from irnorm.kernels.activation import RELU, SWISH, Epilogue

    bias = rng.standard_normal(cout).astype(dtype)
    res = rng.standard_normal(exp.shape).astype(dtype)
    for epi, r in ((Epilogue(bias, RELU, 0.0, 0.0, True), res), (Epilogue(bias, SWISH, 1.0, 0.0, False), None),
                   (Epilogue(None, RELU, 0.0, 0.0, False), None)):
        before = len(taken)
        got = np.array(conv.forward_plan(x.shape, wp, k, strides, dil, pads, exp.shape[2:], epi)(x, r), copy=True)
        assert len(taken) == before + 1
        layered = conv.with_epilogue(conv.forward_plan(x.shape, wp, k, strides, dil, pads, exp.shape[2:]), epi)(x, r)
        np.testing.assert_array_equal(got, layered)
        pre = exp + (0 if epi.bias is None else bias.reshape(1, -1, 1, 1)) + (0 if r is None else r)
        want = np.maximum(pre, 0) if epi.code == RELU else pre / (1 + np.exp(-pre))
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    with monkeypatch.context() as mp:  # the unfold + GEMM path it replaces
        mp.setattr(blas, "gemm_pointer", lambda dt: None)
        before = len(taken)
        np.testing.assert_allclose(forward(), y, rtol=tol, atol=tol * np.abs(exp).max())
        assert len(taken) == before


@pytest.mark.parametrize("shape, k, cout, strides, pads, dtype", [
    ((1, 16, 6, 6), (1, 1), 24, (1, 1), (0, 0), np.float32),   # 1x1: the input is its own columns
    ((2, 8, 5, 7), (1, 1), 4, (1, 1), (0, 0), np.float64),
    ((1, 32, 4, 4), (3, 3), 40, (1, 1), (1, 1), np.float32),  # narrow rows: the index-table gather
    ((2, 12, 3, 3), (3, 3), 20, (2, 2), (1, 1), np.float32),  # a 2x2 output per image, two images
    ((1, 24, 2, 2), (3, 3), 32, (2, 2), (1, 1), np.float32),  # one output pixel: a [32, 216] x [216, 1] product
    ((1, 20, 10, 12), (3, 3), 24, (1, 1), (1, 1), np.float64),  # wider rows: the bounded unfold
    ((1, 6, 9, 15), (3, 5), 17, (2, 1), (1, 2), np.float32),
    ((1, 16, 8, 8), (3, 3), 8, (1, 1), (1, 1), np.float32),  # few output channels: the direct kernel, serial
    ((2, 8, 6, 5), (3, 3), 16, (1, 1), (1, 1), np.float64),
])
@pytest.mark.parametrize("case", ["plain", "bias_relu", "residual_swish", "bias_residual"])
def test_one_call_convolution(monkeypatch, shape, k, cout, strides, pads, dtype, case):
    """A dense convolution whose product is one single-threaded GEMM below PARALLEL_MIN outputs runs as one
    Numba call (unfold, cblas_?gemm per image, the fused step's epilogue), as does a serial direct one
    (padding, the direct kernel, the epilogue): the float64 reference's values,
    the bits of its product followed by the epilogue kernels as passes of their own (what the unfused
    layers do), the separate calls it replaces (np.matmul) to rounding -- and for a residual that
    broadcasts at run time, the layers' way."""
    from irnorm.kernels import activation, blas, conv

    if blas.gemm_pointer(np.dtype(dtype)) is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS irnorm drives: the one-call path is not taken")
    _without_implicit(monkeypatch, conv)  # (which takes some of these where irnorm's GEMM kernels run)
    rng = np.random.default_rng(sum(shape) + cout + len(case))
    x = rng.standard_normal(shape).astype(dtype)
    if shape[2] * shape[3] > 4:  # (where NaN would not cover every output)
        x.reshape(-1)[:3] = [np.nan, np.inf, -0.0]
    w = (rng.standard_normal((cout, shape[1], *k)) / 8).astype(dtype)
    pe = [max(0, p - 1) for p in pads]
    ref = R.convolution(x.astype(np.float64), w.astype(np.float64), list(strides), list(pads), pe, [1, 1])
    out_sp = ref.shape[2:]
    wp = np.ascontiguousarray(w.reshape(1, cout, -1))
    bias = rng.standard_normal(cout).astype(dtype) if "bias" in case else None
    code = {"plain": -1, "bias_relu": activation.RELU, "residual_swish": activation.SWISH, "bias_residual": -1}[case]
    residual = "residual" in case
    epilogue = None if case == "plain" else conv.Epilogue(bias, code, 1.25, 0.0, residual)
    res = rng.standard_normal(ref.shape).astype(dtype) if residual else None

    def run(plan) -> np.ndarray:
        return np.array(plan(x, res) if residual else plan(x), copy=True)

    plan = conv.forward_plan(x.shape, wp, k, strides, (1, 1), pads, out_sp, epilogue)
    assert getattr(plan, "fused", False), "not the one-call path"
    got = run(plan)
    assert got.dtype == dtype and got.shape == ref.shape
    tol = 1e-4 if dtype == np.float32 else 1e-10
    if epilogue is not None:  # the same product, then the epilogue as a pass of its own: the same bits
        bare = conv.forward_plan(x.shape, wp, k, strides, (1, 1), pads, out_sp)
        assert getattr(bare, "fused", False)
        np.testing.assert_array_equal(got, run(conv.with_epilogue(bare, epilogue)))
    with monkeypatch.context() as mp:  # the separate calls it replaces (np.matmul): the same to rounding
        mp.setattr(conv, "ONE_CALL_MAX", 0)
        two_pass = conv.forward_plan(x.shape, wp, k, strides, (1, 1), pads, out_sp, epilogue)
        assert not getattr(two_pass, "fused", False)
        np.testing.assert_allclose(got, run(two_pass), rtol=tol, atol=tol * np.nanmax(np.abs(got[np.isfinite(got)])))
    want = ref if bias is None else ref + bias.astype(np.float64)[:, None, None]
    if residual:
        want = want + res
    if code >= 0:
        want = activation.unary(code, want.astype(dtype), 1.25, 0.0).astype(np.float64)
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=tol, atol=tol * max(1.0, np.abs(want[finite]).max()))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    if residual:  # a residual of another shape at run time: the layers' broadcasting Add
        wide = rng.standard_normal(ref.shape[:-1] + (1,)).astype(dtype)
        unfused = run(conv.forward_plan(x.shape, wp, k, strides, (1, 1), pads, out_sp))
        b = 0 if bias is None else bias[:, None, None]
        s = (unfused + b) + wide
        expect = activation.unary(code, s, 1.25, 0.0) if code >= 0 else s
        np.testing.assert_array_equal(plan(x, wide), expect)


@pytest.mark.parametrize("shape, k, strides, case", [
    ((1, 32, 4, 4), (3, 3), (1, 1), "bias_relu"),
    ((2, 20, 7, 6), (5, 5), (2, 2), "residual_swish"),
    ((1, 48, 8, 8), (3, 3), (2, 2), "bias_residual"),
    ((1, 24, 9), (3,), (1,), "bias_relu"),  # 1-D data
])
def test_depthwise_epilogue_in_the_call(shape, k, strides, case):
    """A small depthwise convolution with many channels runs the channels-inner kernel and the fused step's
    epilogue in one call: the bits of the kernel followed by the epilogue as a pass of its own, and for a
    residual that broadcasts at run time the layers' way."""
    from irnorm.kernels import activation, conv

    rng = np.random.default_rng(sum(shape) + len(case))
    dtype = np.float32
    g = shape[1]
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:2] = [np.nan, -np.inf]
    w = rng.standard_normal((g, *k)).astype(dtype)
    pads = tuple(kk // 2 for kk in k)
    out_sp = tuple((n + 2 * p - kk) // s + 1 for n, p, kk, s in zip(shape[2:], pads, k, strides, strict=True))
    bias = rng.standard_normal(g).astype(dtype) if "bias" in case else None
    code = activation.SWISH if "swish" in case else activation.RELU if "relu" in case else -1
    epilogue = conv.Epilogue(bias, code, 1.25, 0.0, "residual" in case)
    res = rng.standard_normal((shape[0], g, *out_sp)).astype(dtype) if epilogue.residual else None
    ones = (1,) * len(k)
    plan = conv.depthwise_plan(x.shape, w, strides, ones, pads, out_sp, None, epilogue)
    bare = conv.depthwise_plan(x.shape, w, strides, ones, pads, out_sp)
    assert getattr(plan, "fused", False), "not the channels-inner kernel with its epilogue"
    got = np.array(plan(x, res), copy=True)
    np.testing.assert_array_equal(got, conv.with_epilogue(bare, epilogue)(x, res))
    b = 0 if bias is None else bias.reshape((g,) + ones).astype(np.float64)
    want = R.group_convolution(x.astype(np.float64), w.reshape(g, 1, 1, *k).astype(np.float64), list(strides),
                               list(pads), list(pads), list(ones)) + b + (0 if res is None else res)
    want = activation.unary(code, want.astype(dtype), 1.25, 0.0) if code >= 0 else want
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    if epilogue.residual:
        wide = rng.standard_normal(res.shape[:-1] + (1,)).astype(dtype)
        s = (np.array(bare(x), copy=True) + (0 if bias is None else bias.reshape((g,) + ones))) + wide
        np.testing.assert_array_equal(plan(x, wide), activation.unary(code, s, 1.25, 0.0) if code >= 0 else s)


def test_static_convolution_called_with_its_runtime_operands(tmp_path):
    """On a static model a convolution with constant filters -- alone, or fused with its bias and a residual
    Add and Relu -- is written into the plan's straight-line runner as a call with its runtime operands (the
    data, and the residual: the kernel's static_call); the results are the kernel's own bits (a profiled
    run calls the kernel), and a dynamic model keeps the kernel call."""
    from irbuilder import IRBuilder

    rng = np.random.default_rng(41)
    w1 = (rng.standard_normal((8, 4, 3, 3)) / 4).astype(np.float32)
    w2 = (rng.standard_normal((8, 8, 1, 1)) / 4).astype(np.float32)
    bias = rng.standard_normal((1, 8, 1, 1)).astype(np.float32)
    x = rng.standard_normal((1, 4, 9, 9)).astype(np.float32)
    conv = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1]}
    one = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}
    for dims, static in (((1, 4, 9, 9), True), ((-1, 4, 9, 9), False)):
        b = IRBuilder(f"conv{static}")
        p = b.parameter("x", dims, "f32")
        shape = (dims[0], 8, 9, 9)
        (h,) = b.layer("Convolution", [p, b.const(w1)], [(shape, "f32")], conv, version="opset1")
        (g,) = b.layer("Convolution", [h, b.const(w2)], [(shape, "f32")], one, version="opset1")
        (g,) = b.layer("Add", [g, b.const(bias)], [(shape, "f32")], version="opset1")
        (g,) = b.layer("Add", [g, h], [(shape, "f32")], version="opset1")
        (y,) = b.layer("Relu", [g], [(shape, "f32")], version="opset1", names=["y"])
        b.result(y)
        m = irnorm.load(b.save(tmp_path / str(static)))
        lines = [ln for ln in m._plan.source.splitlines() if "= fast" in ln]
        assert len(lines) == (2 if static else 0)
        if static:
            assert any(ln.count(", v") == 1 for ln in lines)  # the fused step: data and residual
        hx = R.convolution(x.astype(np.float64), w1.astype(np.float64), [1, 1], [1, 1], [1, 1], [1, 1])
        gx = R.convolution(hx, w2.astype(np.float64), [1, 1], [0, 0], [0, 0], [1, 1]) + bias + hx
        want = np.maximum(gx, 0)
        for _ in range(2):  # planned on the first run, the bound path after
            got = m.run({"x": x})["y"]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            np.testing.assert_array_equal(got, m.run({"x": x}, profile=True)["y"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pixels", [1, 2, 3, 4, 5])
def test_narrow_products_as_dot_products(tmp_path, monkeypatch, dtype, pixels):
    """A one-call convolution whose output has at most DOT_MAX_COLS pixels per image (a late stage's 2x2 or
    1x1 map) computes its product as dot products (kernels/conv.py's _dot_columns) instead of cblas_?gemm:
    against the float64 reference and the GEMM way within rounding, and the fused step (bias, residual,
    Relu) bit-identical to the layers. Five pixels take the GEMM."""
    from irbuilder import IRBuilder

    from irnorm.kernels import conv

    rng = np.random.default_rng(60 + pixels)
    et = element_type(dtype)
    x = rng.standard_normal((2, 24, 3, pixels + 2)).astype(dtype)
    x.reshape(-1)[:4] = [0.0, -0.0, 1e30, -1e30]
    w3 = (rng.standard_normal((20, 24, 3, 3)) / 14).astype(dtype)
    w1 = (rng.standard_normal((20, 20, 1, 1)) / 5).astype(dtype)
    bias = rng.standard_normal((1, 20, 1, 1)).astype(dtype)
    valid = {"strides": [1, 1], "dilations": [1, 1], "pads_begin": [0, 0], "pads_end": [0, 0]}
    shape = (2, 20, 1, pixels)
    b = IRBuilder("narrow")
    p = b.parameter("x", x.shape, et)
    (h,) = b.layer("Convolution", [p, b.const(w3)], [(shape, et)], valid, version="opset1")  # unfolded
    (g,) = b.layer("Convolution", [h, b.const(w1)], [(shape, et)], valid, version="opset1")  # 1x1
    (g,) = b.layer("Add", [g, b.const(bias)], [(shape, et)], version="opset1")
    (g,) = b.layer("Add", [g, h], [(shape, et)], version="opset1")
    (y,) = b.layer("Relu", [g], [(shape, et)], version="opset1", names=["y"])
    b.result(y)
    xml = b.save(tmp_path)
    hx = R.convolution(x.astype(np.float64), w3.astype(np.float64), [1, 1], [0, 0], [0, 0], [1, 1])
    want = np.maximum(R.convolution(hx, w1.astype(np.float64), [1, 1], [0, 0], [0, 0], [1, 1]) + bias + hx, 0)
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    got = fused.run({"x": x})["y"]
    np.testing.assert_array_equal(got, plain.run({"x": x})["y"])
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * float(np.abs(want).max()))
    monkeypatch.setattr(conv, "DOT_MAX_COLS", 0)  # plans made from here on take cblas_?gemm
    by_gemm = irnorm.load(xml).run({"x": x})["y"]
    np.testing.assert_allclose(got, by_gemm, rtol=tol, atol=tol * float(np.abs(want).max()))


@pytest.mark.parametrize("shape, stride, pads", [
    ((1, 16, 32, 32), 1, ([1, 1], [1, 1])),
    ((2, 8, 33, 36), 2, ([1, 0], [0, 1])),    # odd sizes, asymmetric padding, stride 2 on few channels
    ((1, 4, 18, 40), (1, 2), ([0, 0], [0, 0])),  # no padding, a different stride per axis
    ((2, 32, 48, 48), 1, ([1, 1], [1, 1])),  # above DEPTHWISE_PARALLEL_MIN: planes shared over the threads
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("parallel", [False, True])
def test_depthwise3_rows(tmp_path, monkeypatch, shape, stride, pads, dtype, parallel):
    """3x3 depthwise convolutions with output rows of DEPTHWISE3_MIN_WIDTH or more take kernels/conv.py's
    depthwise3 (nine taps summed in registers along the row): against the float64 reference, the fused step
    (bias, residual Add, Relu) bit-identical to the layers, with inf/NaN/signed zeros in the input; also with
    the planes in groups over the threads, each group's epilogue on its own planes."""
    from irbuilder import IRBuilder

    from irnorm.kernels import conv

    if parallel:
        monkeypatch.setattr(conv, "DEPTHWISE_PARALLEL_MIN", 1)

    rng = np.random.default_rng(sum(shape))
    et = element_type(dtype)
    n, c, h, w_in = shape
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    (pt, pl), (pbm, pr) = pads
    oh, ow = (h + pt + pbm - 3) // sh + 1, (w_in + pl + pr - 3) // sw + 1
    assert ow >= 16
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    w = rng.standard_normal((c, 1, 1, 3, 3)).astype(dtype)
    bias = rng.standard_normal((1, c, 1, 1)).astype(dtype)
    res = rng.standard_normal((n, c, oh, ow)).astype(dtype)
    attrs = {"strides": [sh, sw], "dilations": [1, 1], "pads_begin": [pt, pl], "pads_end": [pbm, pr]}
    out = ((n, c, oh, ow), et)
    b = IRBuilder("dw3")
    p = b.parameter("x", shape, et)
    r = b.parameter("r", res.shape, et)
    (y,) = b.layer("GroupConvolution", [p, b.const(w)], [out], attrs, version="opset1")
    (y,) = b.layer("Add", [y, b.const(bias)], [out], version="opset1")
    (y,) = b.layer("Add", [y, r], [out], version="opset1")
    (y,) = b.layer("Relu", [y], [out], version="opset1", names=["y"])
    b.result(y)
    xml = b.save(tmp_path)
    fused, plain = irnorm.load(xml), irnorm.load(xml, fuse=False)
    assert fused.fused_steps and fused.fused_steps[0][0] == "GroupConvolution+Add+Add+Relu"
    got = fused.run({"x": x, "r": res})["y"]
    np.testing.assert_array_equal(got, plain.run({"x": x, "r": res})["y"])
    clean = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
    want = np.maximum(R.group_convolution(clean, w, [sh, sw], [pt, pl], [pbm, pr], [1, 1]) + bias + res, 0)
    got_clean = fused.run({"x": clean, "r": res})["y"]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got_clean, want, rtol=tol, atol=tol)
    # NaN/inf spread only to the outputs whose window holds them (as in the reference's own arithmetic)
    poisoned = R.group_convolution(np.where(np.isfinite(x), 0.0, 1.0), np.ones_like(w), [sh, sw], [pt, pl],
                                   [pbm, pr], [1, 1]) > 0
    np.testing.assert_array_equal(got[~poisoned], got_clean[~poisoned])


@pytest.mark.parametrize("parallel", [False, True])
def test_implicit_gemm_convolution_matches_the_reference(monkeypatch, parallel):
    """2-D / 1-D float32 convolutions, dense and grouped, as an implicit GEMM (taps read by offset from the
    padded input -- with strides, from its phase planes --, the product in the padded row width, the valid
    columns copied out; or a product per output row straight into the output): the float64 reference's values
    over random geometries, strides, dilations, pads, groups and batches, with a fused epilogue (bias,
    residual, Relu) as a fused step has it, serial and with the columns over the threads, and the same bits
    from both forms.  Built directly, so checked on any CPU; networks take it where irnorm's
    GEMM kernels are enabled (next test)."""
    from irnorm.kernels import conv
    from irnorm.kernels.activation import RELU, Epilogue

    if parallel:
        monkeypatch.setattr(conv, "IMPLICIT_PARALLEL_MIN", 1)
    calls = _record_calls(monkeypatch, conv, "implicit_conv", 12)  # its tasks
    modes = _record_calls(monkeypatch, conv, "implicit_conv", 13)  # wide form 0, rows 1, rows by channels 2
    rng = np.random.default_rng(33)
    cases = 24
    for case in range(cases):
        one_d = case % 4 == 3
        k = [1, int(rng.integers(1, 6))] if one_d else [int(v) for v in rng.integers(1, 4, 2)]
        d = [1, int(rng.integers(1, 3))] if one_d else [int(v) for v in rng.integers(1, 3, 2)]
        st = ([1, 1] if case < 8 else [1, int(rng.integers(2, 5))] if one_d
              else [int(v) for v in rng.integers(1, 5, 2)])
        pb = [0, int(rng.integers(0, 3))] if one_d else [int(v) for v in rng.integers(0, 3, 2)]
        pe = [0, int(rng.integers(0, 3))] if one_d else [int(v) for v in rng.integers(0, 3, 2)]
        g = int(rng.integers(1, 4)) if case % 3 else 1
        cin, cout, n = g * int(rng.integers(1, 8)), g * int(rng.integers(1, 14)), int(rng.integers(1, 3))
        spatial = [1 if one_d else int(rng.integers(1, 12)) + (k[0] - 1) * d[0],
                   int(rng.integers(1, 40)) + (k[1] - 1) * d[1]]
        x4 = rng.standard_normal((n, cin, *spatial)).astype(np.float32)
        w4 = rng.standard_normal((cout, cin // g, *k)).astype(np.float32)
        exp = np.concatenate([R.convolution(x4[:, i * cin // g:(i + 1) * cin // g],
                                            w4[i * cout // g:(i + 1) * cout // g], st, pb, pe, d)
                              for i in range(g)], axis=1)
        oh, ow = exp.shape[2:]
        bias = rng.standard_normal(cout).astype(np.float32)
        with_res = case % 2 == 0  # the residual form and the bias + activation form of the epilogue
        res = rng.standard_normal(exp.shape).astype(np.float32) if with_res else None
        want = np.maximum(exp + bias.reshape(1, -1, 1, 1) + (res if with_res else 0), 0)
        kk, ss, dd, pads, o3 = conv._geom(k, st, d, pb, [oh, ow])
        hp, wp = o3[1] + (kk[1] - 1) * dd[1] // ss[1], o3[2] + (kk[2] - 1) * dd[2] // ss[2]
        epi = Epilogue(bias, RELU, 0.0, 0.0, with_res)

        plan_args = ((n, cin, 1, *spatial), np.ascontiguousarray(w4.reshape(g, cout // g, -1)), (n, cout, oh, ow),
                     cin, hp, wp, k[0], k[1], d[0], d[1], pads, epi, ss[1], ss[2])
        monkeypatch.setattr(conv, "IMPLICIT_BY_ROWS", case % 2 == 1)
        y = conv._implicit_plan(*plan_args)(x4, res)
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * np.sqrt(cin * k[0] * k[1]),
                                   err_msg=f"case {case}")
        # the other form (row by row into the output, or over the padded width and copied out): the same bits
        monkeypatch.setattr(conv, "IMPLICIT_BY_ROWS", case % 2 == 0)
        np.testing.assert_array_equal(y, conv._implicit_plan(*plan_args)(x4, res), err_msg=f"case {case}")
        if parallel:  # the threads' bands of rows (or of panels) give the serial call's bits
            monkeypatch.setattr(conv, "IMPLICIT_PARALLEL_MIN", 1 << 62)
            monkeypatch.setattr(conv, "IMPLICIT_PARALLEL_MIN_IMAGES", 1 << 62)
            np.testing.assert_array_equal(y, conv._implicit_plan(*plan_args)(x4, res), err_msg=f"case {case}")
            monkeypatch.setattr(conv, "IMPLICIT_PARALLEL_MIN", 1)
            # and so do the row form's threads on ranges of output channels (one group)
            monkeypatch.setattr(conv, "IMPLICIT_BY_ROWS", True)
            monkeypatch.setattr(conv, "IMPLICIT_BY_CHANNELS", True)
            np.testing.assert_array_equal(y, conv._implicit_plan(*plan_args)(x4, res), err_msg=f"case {case}")
            monkeypatch.setattr(conv, "IMPLICIT_BY_CHANNELS", None)
    assert len(calls) == cases * (4 if parallel else 2) and (max(calls) > 1) == parallel
    assert (2 in modes) == (parallel and conv._threads() > 1)


def test_implicit_gemm_shares_whole_images_from_fewer_multiply_adds():
    """With at least as many images as threads the implicit GEMM goes parallel from IMPLICIT_PARALLEL_MIN_IMAGES
    multiply-adds (each thread takes whole images); with fewer images from IMPLICIT_PARALLEL_MIN.  A dynamic
    ResNet-18's first 3x3 at batch 2, [2, 64, 20, 20] -> 8: 4.06 M multiply-adds over the padded rows."""
    from irnorm.kernels import conv
    from irnorm.kernels.activation import RELU, Epilogue

    threads = conv._threads()
    rng = np.random.default_rng(5)
    w = rng.standard_normal((1, 8, 64 * 9)).astype(np.float32)
    epi = Epilogue(rng.standard_normal(8).astype(np.float32), RELU, 0.0, 0.0, False)
    values = {}
    for n in (1, 2, threads):
        macs = 8 * 64 * 9 * 20 * 22 * n
        plan = conv._implicit_plan((n, 64, 1, 20, 20), w, (n, 8, 20, 20), 64, 22, 22, 3, 3, 1, 1, [0, 1, 1], epi)
        limit = conv.IMPLICIT_PARALLEL_MIN if n < threads else min(conv.IMPLICIT_PARALLEL_MIN,
                                                                  conv.IMPLICIT_PARALLEL_MIN_IMAGES)
        assert plan.parallel == (threads > 1 and macs >= limit), (n, macs)
        x = rng.standard_normal((n, 64, 20, 20)).astype(np.float32)
        values[n] = (x, plan(x, None).copy())
    x, y = values[2]
    exp = R.convolution(x.astype(np.float64), w.reshape(8, 64, 3, 3).astype(np.float64), [1, 1], [1, 1], [1, 1],
                        [1, 1])
    np.testing.assert_allclose(y, np.maximum(exp + epi.bias.reshape(1, -1, 1, 1), 0), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("geometry", [(3, 80, 64, 7, 3), (16, 40, 32, 3, 1), (24, 40, 48, 3, 1)])
def test_dense_strided_convolutions_of_several_images_take_the_implicit_gemm(monkeypatch, geometry):
    """A dense strided 2-D convolution with at least as many images as threads and more columns than the
    one-call path takes (SMALL_COL) takes the implicit GEMM over its phase planes in the form _by_rows picks (a
    ResNet stem at batch 2 on 80 x 80 images: the wide form with AVX-512's tiles), where irnorm's GEMM kernels
    run; with fewer images than threads only where _by_rows picks the row form, else the banded path as before.
    The float64 reference's values either way."""
    from irnorm.kernels import conv, microgemm
    from irnorm.kernels.activation import RELU, Epilogue

    cin, size, cout, k, pad = geometry
    n = max(2, conv._threads())
    rng = np.random.default_rng(cin + k)
    x = rng.standard_normal((n, cin, size, size)).astype(np.float32)
    w = rng.standard_normal((cout, cin, k, k)).astype(np.float32)
    exp = R.convolution(x.astype(np.float64), w.astype(np.float64), [2, 2], [pad, pad], [pad, pad], [1, 1])
    epi = Epilogue(rng.standard_normal(cout).astype(np.float32), RELU, 0.0, 0.0, False)
    want = np.maximum(exp + epi.bias.reshape(1, -1, 1, 1), 0)
    wp = np.ascontiguousarray(w.reshape(1, cout, -1))
    out_hw = exp.shape[2:]
    ow = out_hw[1]
    rows = conv._by_rows(ow, ow + (k - 1) // 2, cin * k * k)  # (with AVX-512's tiles: rows of partly filled panels)
    plan = conv.forward_plan(x.shape, wp, (k, k), (2, 2), (1, 1), (pad, pad), out_hw, epi)
    assert n * cin * k * k * out_hw[0] * out_hw[1] > conv.SMALL_COL
    assert (plan.__name__ == "implicit") == microgemm.ENABLED, plan.__name__
    np.testing.assert_allclose(plan(x, None), want, rtol=1e-4, atol=1e-4 * np.sqrt(cin * k * k))
    monkeypatch.setattr(conv, "_threads", lambda: n + 1)  # fewer images than threads
    before = conv.forward_plan(x.shape, wp, (k, k), (2, 2), (1, 1), (pad, pad), out_hw, epi)
    assert before.__name__ == ("implicit" if microgemm.ENABLED and rows else "banded")
    np.testing.assert_allclose(before(x, None), want, rtol=1e-4, atol=1e-4 * np.sqrt(cin * k * k))


def test_implicit_row_form_keeps_the_threads_of_one_row_images(monkeypatch):
    """The implicit GEMM's row form shares whole output rows out over the threads, so an image of fewer rows
    than the threads would get (1-D data: one row) keeps the wide form and its ranges of panels on every
    thread, even where the row form would fill the panels better; and a dense strided filter of many
    channels on such data does not take the implicit GEMM for the row form's sake."""
    from irnorm.kernels import conv, microgemm

    if not microgemm.ENABLED:
        pytest.skip("irnorm's GEMM kernels do not run on this CPU: no implicit GEMM")
    if conv._threads() < 2:
        pytest.skip("one thread: nothing to share out")
    by_rows = _record_calls(monkeypatch, conv, "implicit_conv", 13)
    tasks = _record_calls(monkeypatch, conv, "implicit_conv", 12)
    monkeypatch.setattr(conv, "IMPLICIT_BY_ROWS", True)
    rng = np.random.default_rng(12)
    x = rng.standard_normal((1, 32, 1, 4000)).astype(np.float32)
    w = rng.standard_normal((16, 32, 1, 3)).astype(np.float32)
    want = R.convolution(x, w, [1, 1], [0, 1], [0, 1], [1, 1])
    y = conv.conv_forward(x, np.ascontiguousarray(w.reshape(1, 16, -1)), (1, 3), (1, 1), (1, 1), (0, 1),
                          want.shape[2:])
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-3)
    assert by_rows == [False] and len(tasks) == 1 and tasks[0] > 1
    monkeypatch.setattr(conv, "IMPLICIT_BY_ROWS", None)
    w2 = rng.standard_normal((128, 32, 1, 3)).astype(np.float32)
    want2 = R.convolution(x, w2, [1, 2], [0, 1], [0, 1], [1, 1])
    y2 = conv.conv_forward(x, np.ascontiguousarray(w2.reshape(1, 128, -1)), (1, 3), (1, 2), (1, 1), (0, 1),
                           want2.shape[2:])
    np.testing.assert_allclose(y2, want2, rtol=1e-4, atol=1e-3)
    assert len(by_rows) == 1  # not the implicit GEMM


def test_implicit_gemm_taken_where_the_gemm_kernels_run(monkeypatch):
    """conv_forward takes the implicit GEMM for a few output channels, many on a large map or on a map whose
    unfolded columns are few, up to 64 on rows of 16+ (little padding), an image's first layer at stride 1
    (27 taps), strided filters (phase planes) with few output channels on rows of 16+ and dense strided
    filters with more on rows of whole GEMM panels (ResNet's 7x7 / 2 stem to 64, 3x3 / 2 to 128 on rows of
    16), exactly where irnorm's GEMM kernels are enabled; not for 128 channels on a mid-sized map, 64 on rows
    of 13 padded to 17, one input channel, a strided 1x1 filter, dense strided filters on rows of 28 (a panel
    and a part) nor rows of 8 at stride 2 with AVX-512 (half a panel).  The stem's threads take ranges of its
    output channels (a small input, 32 channels a thread)."""
    from irnorm.kernels import conv, microgemm

    calls = _record_calls(monkeypatch, conv, "implicit_conv", 13)  # the form: wide 0, rows 1, rows by channels 2
    rng = np.random.default_rng(3)
    on = microgemm.ENABLED
    for shape, cout, k, st, expected in (((1, 64, 16, 16), 8, 3, 1, on), ((1, 16, 40, 40), 32, 3, 1, on),
                                         ((1, 48, 9, 9), 32, 3, 1, on), ((1, 64, 16, 16), 64, 3, 1, on),
                                         ((1, 64, 16, 16), 128, 3, 1, False), ((1, 64, 13, 13), 64, 5, 1, False),
                                         ((1, 3, 64, 64), 8, 3, 1, on), ((1, 1, 28, 28), 8, 5, 1, False),
                                         ((1, 3, 64, 64), 8, 7, 2, on),
                                         ((1, 3, 64, 64), 64, 7, 2, on), ((1, 32, 32, 32), 128, 3, 2, on),
                                         # rows of 8 at stride 2: whole panels only where they are 8 wide (AVX2)
                                         ((1, 16, 16, 16), 16, 3, 2, on and microgemm.NR == 16),
                                         ((1, 16, 32, 32), 16, 1, 2, False), ((1, 32, 56, 56), 64, 3, 2, False)):
        x = rng.standard_normal(shape).astype(np.float32)
        w = rng.standard_normal((cout, shape[1], k, k)).astype(np.float32)
        p = k // 2
        want = R.convolution(x, w, [st, st], [p, p], [p, p], [1, 1])
        before = len(calls)
        y = conv.conv_forward(x, np.ascontiguousarray(w.reshape(1, cout, -1)), (k, k), (st, st), (1, 1), (p, p),
                              want.shape[2:])
        assert (len(calls) > before) == expected, (shape, cout, k, st)
        if expected and (shape, cout, k) == ((1, 3, 64, 64), 64, 7):
            assert calls[-1] == (2 if conv._threads() > 1 else 1)
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("column_stride, parallel", [(2, False), (2, True), (1, False), (1, True)])
def test_depthwise_vector_rows(monkeypatch, column_stride, parallel):
    """Depthwise convolutions of column stride 2 (1-D and 2-D, any row stride, filter, pads, batch) or of
    stride 1 on rows of 8+ outputs take the vector-row kernel (depthwise_rows) where irnorm's vector kernels
    run -- at stride 1 except 3x3 filters on rows of 16+ (depthwise3's) -- : the float64 reference's values,
    the other depthwise kernels' bits (the same taps in the same order, a multiply then an add each; NaN and
    inf where they fall), with a fused epilogue (bias, residual, Swish) as a fused step has it, serial and
    with the planes over the threads; maps of fewer than four, four to eight and more rows."""
    from irnorm.kernels import activation, conv, microgemm

    if parallel:
        monkeypatch.setattr(conv, "DEPTHWISE_PARALLEL_MIN", 1)
    monkeypatch.setattr(conv.SCRATCH, "MIN_BYTES", 0)  # reused buffers: stale padding would show
    calls = _record_calls(monkeypatch, conv, "depthwise_rows", 10)  # its tasks
    rng = np.random.default_rng(21 + column_stride)
    kinds = [False, False, False, True] * 4  # 1-D data every fourth case
    taken = 0
    for case, one_d in enumerate(kinds):
        k = [1, int(rng.integers(1, 6))] if one_d else [int(v) for v in rng.integers(1, 6, 2)]
        if column_stride == 1 and case % 3 == 0 and not one_d:
            k = [3, 3]
        row_stride = 1 if one_d or column_stride == 1 else int(rng.integers(1, 4))
        s = [1, column_stride] if one_d else [row_stride, column_stride]
        pb = [0, int(rng.integers(0, 3))] if one_d else [int(v) for v in rng.integers(0, 3, 2)]
        pe = [0, int(rng.integers(0, 3))] if one_d else [int(v) for v in rng.integers(0, 3, 2)]
        g, n = int(rng.integers(1, 40)), int(rng.integers(1, 3))
        width = column_stride * int(rng.integers(8, 40)) + k[1] - column_stride
        spatial = [1 if one_d else int(rng.integers(1, 20)) + k[0], width]
        x = rng.standard_normal((n, g, *spatial)).astype(np.float32)
        if case % 5 == 0:
            x.reshape(-1)[[1, 7]] = [np.nan, np.inf]
        w = rng.standard_normal((g, 1, 1, *k)).astype(np.float32)
        exp = R.group_convolution(x, w, s, pb, pe, [1, 1])
        bias = rng.standard_normal(g).astype(np.float32)
        res = rng.standard_normal(exp.shape).astype(np.float32)
        epi = conv.Epilogue(bias, activation.SWISH, 1.0, 0.0, True)
        wp = np.ascontiguousarray(w.reshape(g, *k[-2:]) if not one_d else w.reshape(g, k[1]))
        args = (x.shape, wp, s[-1:] if one_d else s, [1] if one_d else [1, 1], pb[-1:] if one_d else pb,
                exp.shape[2:], None, epi)
        before = len(calls)
        y = np.array(conv.depthwise_plan(*args)(x, res), copy=True)
        rows_kernel = microgemm.ENABLED and not (column_stride == 1 and k == [3, 3] and exp.shape[-1] >= 16)
        assert (len(calls) > before) == rows_kernel, f"case {case}"
        taken += rows_kernel
        with monkeypatch.context() as mp:
            mp.setattr(conv, "STRIDE2_MIN_WIDTH", 1 << 30)
            mp.setattr(conv, "STRIDE1_MIN_WIDTH", 1 << 30)
            other = conv.depthwise_plan(*args)(x, res)
        np.testing.assert_array_equal(y, other, err_msg=f"case {case}")
        want = activation.unary(activation.SWISH, (exp + bias.reshape(1, -1, 1, 1) + res).astype(np.float32), 1.0,
                                0.0)
        finite = np.isfinite(want)
        np.testing.assert_allclose(y[finite], want[finite], rtol=1e-4, atol=1e-4 * np.sqrt(k[0] * k[1]),
                                   err_msg=f"case {case}")
        np.testing.assert_array_equal(np.isnan(y), np.isnan(want))
    if microgemm.ENABLED:
        assert len(calls) == taken >= len(kinds) // 2 and (max(calls) > 1) == parallel


@pytest.mark.parametrize("spatial, k, strides", [
    ((37,), (5,), (2,)), ((30,), (3,), (1,)), ((1, 6, 40), (1, 3, 3), (1, 2, 2)), ((1, 9, 12), (1, 5, 5), (1, 1, 1)),
    ((1, 9, 20), (1, 3, 3), (1, 1, 1))])
def test_depthwise_vector_rows_on_1d_and_3d_data(spatial, k, strides):
    """The vector-row and 3x3 kernels' geometry for 1-D data (one row of outputs) and 3-D data of depth 1 (its
    plane): the float64 reference's values (1-D data of column stride 2 had failed with an IndexError on the
    vector rows, depth-1 3-D data with a reshape error on the 3x3 kernel)."""
    from irnorm.kernels import conv

    rng = np.random.default_rng(sum(spatial))
    g = 12
    x = rng.standard_normal((2, g, *spatial)).astype(np.float32)
    w = rng.standard_normal((g, *k)).astype(np.float32)
    pads = [kk // 2 for kk in k]
    want = R.group_convolution(x.astype(np.float64), w.reshape(g, 1, 1, *k).astype(np.float64), list(strides), pads,
                               pads, [1] * len(k))
    got = conv.depthwise_plan(x.shape, w, strides, (1,) * len(k), pads, want.shape[2:])(x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n, c, hw, cout", [(1, 8, (32, 32), 48), (2, 16, (20, 31), 25), (3, 5, (40, 7), 96),
                                            (1, 64, (16, 16), 13)])
def test_pointwise_convolution_rows_over_the_threads(monkeypatch, n, c, hw, cout):
    """float32 1x1 convolutions of POINTWISE_MIN_OUTPUTS outputs or more with two row blocks of output channels
    or more take pointwise_rows where irnorm's GEMM kernels run (channels over the threads, each range's
    epilogue in its call): the float64 reference's values and, with a fused bias + residual + Swish, the bits of
    the paths before (the same GEMM kernels, the same epilogue)."""
    import numba

    from irnorm.kernels import activation, conv, microgemm

    calls = _record_calls(monkeypatch, conv, "pointwise_rows", 4)  # its tasks
    rng = np.random.default_rng(c + cout)
    x = rng.standard_normal((n, c, *hw)).astype(np.float32)
    w = rng.standard_normal((cout, c, 1, 1)).astype(np.float32)
    bias = rng.standard_normal(cout).astype(np.float32)
    exp = R.convolution(x, w, [1, 1], [0, 0], [0, 0], [1, 1])
    res = rng.standard_normal(exp.shape).astype(np.float32)
    wp = np.ascontiguousarray(w.reshape(1, cout, c))
    epi = conv.Epilogue(bias, activation.SWISH, 1.0, 0.0, True)
    y = np.array(conv.forward_plan(x.shape, wp, (1, 1), (1, 1), (1, 1), (0, 0), hw, epi)(x, res), copy=True)
    bare = conv.forward_plan(x.shape, wp, (1, 1), (1, 1), (1, 1), (0, 0), hw)(x)
    np.testing.assert_allclose(bare, exp, rtol=1e-4, atol=1e-4 * np.sqrt(c))
    expected = microgemm.ENABLED and n * cout * hw[0] * hw[1] >= conv.POINTWISE_MIN_OUTPUTS and cout > microgemm.MR
    assert (len(calls) == 2) == expected
    assert all(t >= min(2, numba.config.NUMBA_NUM_THREADS) for t in calls)  # shared out when there are threads
    monkeypatch.setattr(conv, "POINTWISE_MIN_OUTPUTS", 1 << 40)
    other = conv.forward_plan(x.shape, wp, (1, 1), (1, 1), (1, 1), (0, 0), hw, epi)(x, res)
    np.testing.assert_array_equal(y, other)


@pytest.mark.parametrize("shape, k, cout, strides, dilations, pads, pads_end", [
    ((1, 64, 2, 2), (3, 3), 64, (1, 1), (1, 1), (1, 1), (1, 1)),  # ResNet-18's last stage
    ((3, 16, 3, 2), (5, 3), 24, (1, 1), (1, 1), (2, 1), (2, 1)),  # three images, a 3x2 map
    ((1, 12, 2, 2), (3, 3), 10, (2, 2), (1, 1), (1, 1), (1, 1)),  # stride 2: one output pixel
    ((2, 8, 2, 1), (3, 3), 20, (1, 1), (1, 2), (1, 2), (1, 2)),   # dilated columns: most taps in the padding
    ((1, 10, 3), (5,), 20, (1,), (1,), (2,), (2,)),                # 1-D data
    ((1, 5, 2, 2, 2), (3, 3, 3), 4, (1, 1, 1), (1, 1, 1), (1, 1, 1), (0, 0, 0)),  # 3-D data, uneven pads
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["plain", "bias_relu", "bias_residual_relu", "residual_swish"])
def test_dense_map_convolution(monkeypatch, shape, k, cout, strides, dilations, pads, pads_end, dtype, case):
    """A convolution whose input planes are no larger than its filter runs as a dense linear map of the whole
    input (kernels/conv.py _dense_plan: the taps inside the input placed at their pixels, dot products of rows)
    with the fused step's epilogue in the call: the float64 reference's values, NaN where an input NaN reaches,
    the bits of its product followed by the epilogue as a pass of its own, and the GEMM path to rounding."""
    from irnorm.kernels import activation, conv

    rng = np.random.default_rng(sum(shape) * cout + len(case))
    x = rng.standard_normal(shape).astype(dtype)
    if shape[0] > 1:
        x[-1].reshape(-1)[1] = np.nan  # (every window covers every pixel: the last image's outputs all NaN)
    w = (rng.standard_normal((cout, shape[1], *k)) / 8).astype(dtype)
    ref = R.convolution(x.astype(np.float64), w.astype(np.float64), list(strides), list(pads), list(pads_end),
                        list(dilations))
    out_sp = ref.shape[2:]
    wp = np.ascontiguousarray(w.reshape(1, cout, -1))
    bias = rng.standard_normal(cout).astype(dtype) if "bias" in case else None
    code = activation.SWISH if "swish" in case else (activation.RELU if "relu" in case else -1)
    residual = "residual" in case
    epilogue = None if case == "plain" else conv.Epilogue(bias, code, 1.0, 0.0, residual)
    res = rng.standard_normal(ref.shape).astype(dtype) if residual else None

    def run(plan) -> np.ndarray:
        return np.array(plan(x, res) if residual else plan(x), copy=True)

    plan = conv.forward_plan(x.shape, wp, k, strides, dilations, pads, out_sp, epilogue)
    assert plan.__name__ == "dense" and getattr(plan, "fused", False)
    got = run(plan)
    assert got.dtype == dtype and got.shape == ref.shape
    spatial = tuple(range(2, ref.ndim))
    want = ref if bias is None else ref + bias.astype(np.float64).reshape((-1,) + (1,) * len(spatial))
    if residual:
        want = want + res
    if code >= 0:
        want = activation.unary(code, want.astype(dtype), 1.0, 0.0).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got[ok], want[ok], rtol=tol, atol=tol * max(1.0, np.abs(want[ok]).max()))
    if epilogue is not None:  # the same product, then the epilogue as a pass of its own: the same bits
        bare = conv.forward_plan(x.shape, wp, k, strides, dilations, pads, out_sp)
        assert bare.__name__ == "dense"
        np.testing.assert_array_equal(got, run(conv.with_epilogue(bare, epilogue)))
    monkeypatch.setattr(conv, "DENSE_MAX_WEIGHTS", 0)  # plans made from here on take the unfold and a GEMM
    other = conv.forward_plan(x.shape, wp, k, strides, dilations, pads, out_sp, epilogue)
    assert other.__name__ != "dense"
    np.testing.assert_allclose(got[ok], run(other)[ok], rtol=tol, atol=tol * max(1.0, np.abs(want[ok]).max()))


@pytest.mark.parametrize("shape, k, strides, dilations, pads", [
    ((1, 8, 3, 3), (3, 3), (2, 2), (1, 1), (1, 1)),  # output (0, 0) does not reach the last row and column
    ((1, 8, 2, 3), (3, 3), (1, 1), (1, 1), (1, 1)),  # nor, on a 2x3 map, the third column
    ((1, 8, 2, 2), (3, 3), (1, 1), (2, 2), (2, 2)),  # dilated: taps skip a pixel
])
def test_dense_map_only_where_every_window_covers_the_input(shape, k, strides, dilations, pads):
    """Where some window misses an input pixel, D would multiply it by a zero that is no tap (inf * 0 = NaN in
    outputs the layer keeps finite): those convolutions keep the unfold, and give the reference's NaN pattern."""
    from irnorm.kernels import conv

    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    x[0, 0, -1, -1] = np.inf
    w = rng.standard_normal((6, shape[1], *k)).astype(np.float32)
    ref = R.convolution(x.astype(np.float64), w.astype(np.float64), list(strides), list(pads), list(pads),
                        list(dilations))
    plan = conv.forward_plan(x.shape, np.ascontiguousarray(w.reshape(1, 6, -1)), k, strides, dilations, pads,
                             ref.shape[2:])
    assert plan.__name__ != "dense"
    got = plan(x)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(ref))
    ok = np.isfinite(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=1e-4, atol=1e-4 * np.abs(ref[ok]).max())


@pytest.mark.parametrize("k, cout", [((5,), 12), ((3,), 40)])
def test_one_call_convolutions_of_a_strided_view(k, cout):
    """The one-call convolution paths take their data as C-contiguous memory: a strided view whose flattening
    numpy would leave strided (every other column of a 1-D signal) gives the contiguous copy's bits."""
    from irnorm.kernels import conv

    rng = np.random.default_rng(len(k) + cout)
    y = rng.standard_normal((1, 8, 64)).astype(np.float32)
    x = y[..., ::2]
    assert not x.reshape(-1).flags.c_contiguous  # what the kernels must not be handed
    w = rng.standard_normal((1, cout, 8 * k[0])).astype(np.float32)
    pad = (k[0] // 2,)
    ep = conv.Epilogue(rng.standard_normal(cout).astype(np.float32), -1, 0.0, 0.0, False)
    plan = conv.forward_plan(x.shape, w, k, (1,), (1,), pad, (32,), ep)
    np.testing.assert_array_equal(plan(x), plan(np.ascontiguousarray(x)))


def _epilogue_case(case: str, rng, x: np.ndarray, exp: np.ndarray) -> tuple:
    """(epilogue, expected values, plan arguments) for a convolution whose values without a fused step are `exp`:
    "plain" (no epilogue), "bias_relu", "bias_residual_swish" (a random bias and residual)."""
    from irnorm.kernels import activation, conv

    cout = exp.shape[1]
    bias = rng.standard_normal(cout).astype(np.float32)
    res = rng.standard_normal(exp.shape).astype(np.float32)
    if case == "plain":
        return None, exp, (x,)
    if case == "bias_relu":
        return conv.Epilogue(bias, activation.RELU, 0.0, 0.0, False), np.maximum(exp + bias.reshape(1, -1, 1, 1), 0), (
            x, None)
    z = exp + bias.reshape(1, -1, 1, 1) + res.astype(exp.dtype)
    return conv.Epilogue(bias, activation.SWISH, 1.0, 0.0, True), z / (1 + np.exp(-z)), (x, res)


@pytest.mark.parametrize("case", ["plain", "bias_relu", "bias_residual_swish"])
@pytest.mark.parametrize("seed", range(4))
def test_pixel_rows_convolution(monkeypatch, seed, case):
    """Dense float32 2-D convolutions of small maps and many output channels (a late stage's) take the
    pixel-rows product where irnorm's GEMM kernels run (kernels/conv.py pixel_rows_conv: output pixels as the
    GEMM's rows, channels-last unfold, output channels over the threads, the fused epilogue in the call):
    the float64 reference's values over random strides, dilations, pads, filter sizes (1x1 with unit strides
    included) and output channel counts that leave partial panels; the same values as the paths it replaced
    to rounding."""
    from irnorm.kernels import conv, microgemm

    calls = _record_calls(monkeypatch, conv, "pixel_rows_conv", 15)  # its tasks
    monkeypatch.setattr(conv.SCRATCH, "MIN_BYTES", 0)  # every size through the reused per-thread buffers
    monkeypatch.setattr(conv, "PIXEL_ROWS_MIN_MACS", 0)  # (a speed threshold) test sizes take the path too
    rng = np.random.default_rng(100 + seed)
    for trial in range(4):
        k = [int(v) for v in rng.integers(1, 4, 2)] if trial else [1, 1]
        strides = [int(v) for v in rng.integers(1, 3, 2)] if trial else [1, 1]
        dil = [int(v) for v in rng.integers(1, 3, 2)] if trial > 1 else [1, 1]
        pads = [int(v) for v in rng.integers(0, 3, 2)] if trial else [0, 0]
        pads_end = [int(v) for v in rng.integers(0, 3, 2)] if trial else [0, 0]
        cin = int(rng.integers(-(-conv.PIXEL_ROWS_MIN_DEPTH // (k[0] * k[1])), 80))
        cout = int(rng.integers(conv.PIXEL_ROWS_MIN_COUT, conv.PIXEL_ROWS_MIN_COUT + 70))
        n = int(rng.integers(1, 3))
        spatial = [int(v) for v in rng.integers(3, 12, 2)]
        x = rng.standard_normal((n, cin, *spatial)).astype(np.float32)
        w = rng.standard_normal((cout, cin, *k)).astype(np.float32)
        exp = R.convolution(x, w, strides, pads, pads_end, dil)
        out_hw = exp.shape[2:]
        wp = np.ascontiguousarray(w.reshape(1, cout, -1))
        epi, want, args = _epilogue_case(case, rng, x, exp)
        before = len(calls)
        y = np.array(conv.forward_plan(x.shape, wp, k, strides, dil, pads, out_hw, epi)(*args), copy=True)
        direct = k == [1, 1] and strides == [1, 1] and pads == [0, 0]
        fits = 0 < out_hw[0] * out_hw[1] <= (conv.PIXEL_ROWS_DIRECT_MAX if direct else conv.PIXEL_ROWS_MAX)
        assert (len(calls) > before) == (microgemm.ENABLED and fits), (trial, out_hw)
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * np.sqrt(cin * k[0] * k[1]))
        with monkeypatch.context() as mp:
            mp.setattr(conv, "PIXEL_ROWS_MAX", 0)
            mp.setattr(conv, "PIXEL_ROWS_DIRECT_MAX", 0)
            other = conv.forward_plan(x.shape, wp, k, strides, dil, pads, out_hw, epi)(*args)
        np.testing.assert_allclose(y, other, rtol=1e-5, atol=1e-5 * np.sqrt(cin * k[0] * k[1]))
    assert not microgemm.ENABLED or calls


def test_forward_plan_refuses_weights_of_another_layout():
    """conv.forward_plan's kernels index by the weights' and input's shapes unchecked: weights not in the
    prepared [G, Cout/G, C/G * K] layout for this input and filter are refused with a ValueError before any
    kernel runs (a mistaken call once crashed the process)."""
    from irnorm.kernels import conv

    x_shape = (1, 8, 5, 5)
    for bad in (np.zeros((1, 4, 8, 3, 3), np.float32), np.zeros((1, 4, 71), np.float32), np.zeros((4, 72), np.float32)):
        with pytest.raises(ValueError, match="do not fit"):
            conv.forward_plan(x_shape, bad, (3, 3), (1, 1), (1, 1), (1, 1), (5, 5))
    with pytest.raises(ValueError, match="do not fit"):
        conv.forward_plan((1, 8, 5), np.zeros((1, 4, 72), np.float32), (3, 3), (1, 1), (1, 1), (1, 1), (5, 5))
    good = conv.forward_plan(x_shape, np.ones((2, 4, 36), np.float32), (3, 3), (1, 1), (1, 1), (1, 1), (5, 5))
    assert good(np.ones(x_shape, np.float32)).shape == (1, 8, 5, 5)


@pytest.mark.parametrize("case", ["plain", "bias_relu", "bias_residual_swish"])
@pytest.mark.parametrize("seed", range(4))
def test_pixel_rows_serial_convolution(seed, case):
    """The one-call path's small float32 products whose columns would fill few GEMM panels (a late stage's 3x3
    on 3x3 or 5x5 maps, one or a few images) take the pixel rows on the calling thread where irnorm's GEMM
    kernels run (kernels/conv.py pixel_rows_serial: every image's pixels the rows of one product): the float64
    reference's values over random strides, dilations, pads, filter sizes and channel counts, one to four
    images; the same values as the one-call path it replaced to rounding; the choice follows the tile count
    (_pixel_rows_serial_fits)."""
    from irnorm.kernels import conv, microgemm

    rng = np.random.default_rng(200 + seed)
    taken = 0
    for trial in range(6):
        k = [int(v) for v in rng.integers(2, 4, 2)]
        strides = [int(v) for v in rng.integers(1, 3, 2)]
        dil = [int(v) for v in rng.integers(1, 3, 2)] if trial % 3 == 2 else [1, 1]
        pads = [int(v) for v in rng.integers(0, 3, 2)]
        pads_end = [int(v) for v in rng.integers(0, 3, 2)]
        cin = int(rng.integers(-(-conv.PIXEL_ROWS_SERIAL_MIN_DEPTH // (k[0] * k[1])), 80))
        cout = int(rng.integers(17, 100))
        n = int(rng.integers(1, 5))
        spatial = [int(v) for v in rng.integers(3, 7, 2)]
        x = rng.standard_normal((n, cin, *spatial)).astype(np.float32)
        w = rng.standard_normal((cout, cin, *k)).astype(np.float32)
        exp = R.convolution(x.astype(np.float64), w.astype(np.float64), strides, pads, pads_end, dil)
        out_hw = exp.shape[2:]
        wp = np.ascontiguousarray(w.reshape(1, cout, -1))
        epi, want, args = _epilogue_case(case, rng, x, exp)
        plan = conv.forward_plan(x.shape, wp, k, strides, dil, pads, out_hw, epi)
        y = np.array(plan(*args), copy=True)
        ck = cin * k[0] * k[1]
        fits = (microgemm.ENABLED and n * cout * ck * exp[0, 0].size < conv.PIXEL_ROWS_MIN_MACS
                and conv._pixel_rows_serial_fits(n, cout, ck, [1, *k], [1, *out_hw]))
        if plan.__name__ == "pixel_rows_serial":
            taken += 1
            assert fits, (trial, x.shape, out_hw)
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * np.sqrt(ck))
        saved = conv.PIXEL_ROWS_SERIAL_SHARE
        conv.PIXEL_ROWS_SERIAL_SHARE = -1.0  # the path it replaced
        try:
            other_plan = conv.forward_plan(x.shape, wp, k, strides, dil, pads, out_hw, epi)
            other = other_plan(*args)
        finally:
            conv.PIXEL_ROWS_SERIAL_SHARE = saved
        assert other_plan.__name__ != "pixel_rows_serial"
        np.testing.assert_allclose(y, other, rtol=1e-5, atol=1e-5 * np.sqrt(ck))
    assert taken > 0 or not microgemm.ENABLED


@pytest.mark.parametrize("shape, cout, takes", [((2, 64, 3, 3), 64, True), ((1, 64, 3, 3), 64, True),
                                                ((2, 32, 5, 5), 32, True), ((1, 32, 5, 5), 32, False),
                                                ((4, 64, 4, 4), 64, False), ((1, 256, 2, 2), 256, False),
                                                ((2, 16, 10, 10), 16, False)])
def test_pixel_rows_serial_choice(shape, cout, takes):
    """Which 3x3 convolutions (padding 1) take pixel_rows_serial where irnorm's GEMM kernels run with AVX-512's
    12 x 32 tiles: ResNet's late 3x3s at batch 1 and 2 do; a 5 x 5 map at batch 1 (its 25 columns fill as many
    tiles either way), 4 x 4 maps (16 columns: a half panel each), 2 x 2 maps (dot products) and 144 taps x
    channels (the unfold's share) do not."""
    from irnorm.kernels import conv, microgemm

    if not (microgemm.ENABLED and microgemm.MR == 12):
        pytest.skip("the choice measured is for AVX-512's 12 x 32 tiles; the values are tested above on any CPU")
    x = np.zeros(shape, np.float32)
    w = np.zeros((1, cout, shape[1] * 9), np.float32)
    plan = conv.forward_plan(x.shape, w, (3, 3), (1, 1), (1, 1), (1, 1), shape[2:])
    assert (plan.__name__ == "pixel_rows_serial") == takes, plan.__name__
