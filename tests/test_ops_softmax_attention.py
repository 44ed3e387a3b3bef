"""SoftMax / LogSoftmax / ScaledDotProductAttention beyond the conformance rows: malformed IR, fully
masked rows, a causal mask against OpenVINO at two dynamic shapes."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import expect_error, single_op_model
from ovutil import compare_with_openvino, save

import irnorm

ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")
op13 = pytest.importorskip("openvino.opset13")


def test_softmax_axis_out_of_range_and_integer_data(tmp_path):
    b = single_op_model("SoftMax", [("param:x", ((2, 3), "f32"))], [((2, 3), "f32")], {"axis": 2}, version="opset8")
    expect_error(b, tmp_path, "IRN023", "axis=2")
    b = single_op_model("SoftMax", [("param:x", ((2, 3), "f32"))], [((2, 3), "f32")], {"axis": -1}, version="opset1")
    expect_error(b, tmp_path, "IRN023", "axis=-1")  # SoftMax-1 takes no negative axis
    b = single_op_model("SoftMax", [("param:x", ((2, 3), "i32"))], [((2, 3), "i32")], {"axis": 1}, version="opset8")
    expect_error(b, tmp_path, "IRN033", "floating-point")


def test_sdpa_shape_and_type_rules(tmp_path):
    q = ("param:q", ((1, 2, 4, 8), "f32"))
    b = single_op_model("ScaledDotProductAttention", [q, ("param:k", ((1, 2, 5, 7), "f32")),
                                                      ("param:v", ((1, 2, 5, 8), "f32"))],
                        [((1, 2, 4, 8), "f32")], {"causal": False}, version="opset13")
    expect_error(b, tmp_path, "IRN032", "differ in the last dim")
    b = single_op_model("ScaledDotProductAttention", [q, ("param:k", ((1, 2, 5, 8), "f32")),
                                                      ("param:v", ((1, 2, 5, 8), "f32")),
                                                      ("param:m", ((4, 5), "i32"))],
                        [((1, 2, 4, 8), "f32")], {"causal": False}, version="opset13")
    expect_error(b, tmp_path, "IRN033", "attention_mask")


def test_a_fully_masked_row_gives_nan_and_causal_matches_openvino(tmp_path):
    rng = np.random.default_rng(4)
    q = op1.parameter([-1, 2, -1, 8], np.float32, name="q")
    k = op1.parameter([-1, 2, -1, 8], np.float32, name="k")
    v = op1.parameter([-1, 2, -1, 8], np.float32, name="v")
    y = op13.scaled_dot_product_attention(q, k, v, causal=True)
    y.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([op1.result(y)], [q, k, v]), tmp_path, "causal")
    for b, length in ((1, 5), (3, 9)):
        feeds = {n: rng.standard_normal((b, 2, length, 8)).astype(np.float32) for n in "qkv"}
        got = compare_with_openvino(xml, feeds)["y"]
        assert np.allclose(got[:, :, 0], feeds["v"][:, :, 0], atol=1e-6)  # query 0 sees key 0 only
    m = np.zeros((2, 3), bool)
    m[0] = True
    b = single_op_model("ScaledDotProductAttention", [("param:q", ((2, 4), "f32")), ("param:k", ((3, 4), "f32")),
                                                      ("param:v", ((3, 4), "f32")), ("m", m)],
                        [((2, 4), "f32")], {"causal": False}, version="opset13")
    y = irnorm.load(b.save(tmp_path, "masked")).run({n: np.ones(s, np.float32) for n, s in
                                                     (("q", (2, 4)), ("k", (3, 4)), ("v", (3, 4)))})["y"]
    assert np.all(np.isfinite(y[0])) and np.all(np.isnan(y[1]))
