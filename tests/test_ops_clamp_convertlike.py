"""Clamp-1 and ConvertLike-1 (both appear in real PyTorch/ONNX exports) against OpenVINO and numpy."""

from __future__ import annotations

import numpy as np
import pytest
from ovutil import compare_with_openvino, requires_openvino, save

import irnorm

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset12")


@requires_openvino
@pytest.mark.parametrize("et", ["f32", "f16", "i32", "i64"])
@pytest.mark.parametrize(("lo", "hi"), [(-1.5, 2.25), (0.0, 0.0), (-1e30, 1e30), (-2.5, 2.5)])
def test_clamp_matches_openvino(tmp_path, et, lo, hi):
    x = ops.parameter([4, 5], getattr(ov.Type, et), name="x")
    m = ov.Model([ops.clamp(x, lo, hi).output(0)], [x])
    rng = np.random.default_rng(3)
    data = (rng.standard_normal((4, 5)) * 4).astype(getattr(ov.Type, et).to_dtype())
    compare_with_openvino(save(m, tmp_path, "clamp"), {"x": data})


def test_clamp_nan_propagates_and_rules(tmp_path):
    """OpenVINO's reference keeps NaN (its CPU plugin returns `min`); min > max is an error."""
    from irbuilder import IRBuilder, expect_error

    b = IRBuilder("c")
    x = b.parameter("x", (3,), "f32")
    (y,) = b.layer("Clamp", [x], [((3,), "f32")], {"min": -1.0, "max": 1.0}, version="opset1", names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    got = m.run({"x": np.array([np.nan, -5, 5], np.float32)})["y"]
    assert np.isnan(got[0]) and list(got[1:]) == [-1, 1]
    b2 = IRBuilder("c2")
    x = b2.parameter("x", (3,), "f32")
    (y,) = b2.layer("Clamp", [x], [((3,), "f32")], {"min": 2.0, "max": 1.0}, version="opset1", names=["y"])
    b2.result(y)
    expect_error(b2, tmp_path, "IRN023", "greater than max")


@requires_openvino
@pytest.mark.parametrize(("src", "dst"), [("f32", "i32"), ("f32", "f16"), ("i64", "f32"), ("f16", "f32")])
def test_convert_like_matches_openvino(tmp_path, src, dst):
    x = ops.parameter([2, 3], getattr(ov.Type, src), name="x")
    like = ops.parameter([1], getattr(ov.Type, dst), name="like")
    m = ov.Model([ops.convert_like(x, like).output(0)], [x, like])
    data = np.array([[-2.7, -1, 0], [0.4, 2.5, 100]]).astype(getattr(ov.Type, src).to_dtype())
    compare_with_openvino(save(m, tmp_path, "cl"), {"x": data, "like": np.zeros(1, getattr(ov.Type, dst).to_dtype())})
