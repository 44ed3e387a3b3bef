"""Axes and lengths that arrive as model inputs rather than constants (ONNX opset-18 exports pass
Reduce* and Squeeze/Unsqueeze axes and Split lengths this way; OpenVINO runs such IRs): the shape
rules give dynamic dims (and the rank where the count of axes is known), the kernels take the values
at run time, and a bad value is a coded run-time error (IRN064), never a traceback."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import single_op_model
from ovutil import compare_with_openvino, requires_openvino, save

import irnorm
from irnorm.errors import InputError


def _reduce(tmp_path, type_, shape, axes_len, keep, out_dims, version="opset1", name="m"):
    b = single_op_model(type_, [("param:x", (shape, "f32")), ("param:axes", ((axes_len,), "i64"))],
                        [(out_dims, "f32")], {"keep_dims": "true" if keep else "false"}, version=version)
    return irnorm.load(b.save(tmp_path, name))


@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("kind", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2"])
def test_reduce_with_runtime_axes_matches_numpy(tmp_path, kind, keep):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    out_dims = [-1, -1, -1] if keep else [-1]
    m = _reduce(tmp_path, kind, [3, 4, 5], 2, keep, out_dims, version="opset4" if kind == "ReduceL2" else "opset1")
    fn = {"ReduceSum": np.sum, "ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min,
          "ReduceProd": np.prod, "ReduceL2": lambda a, axis, keepdims: np.sqrt(np.sum(a * a, axis, keepdims=keepdims))}
    x64 = x.astype(np.float64)
    for axes in ([0, 2], [-1, 1], [2, 0]):
        got = m.run({"x": x, "axes": np.array(axes, np.int64)})["y"]
        want = fn[kind](x64, axis=tuple(axes), keepdims=keep)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert m.output_shapes([(3, 4, 5), (2,)]) == [(-1, -1, -1) if keep else (-1,)]


def test_reduce_runtime_axes_bad_values_are_coded_errors(tmp_path):
    m = _reduce(tmp_path, "ReduceSum", [3, 4], 2, False, [])
    x = np.ones((3, 4), np.float32)
    assert m.run({"x": x, "axes": np.array([0, 1], np.int64)})["y"] == 12
    with pytest.raises(InputError) as e:
        m.run({"x": x, "axes": np.array([0, 5], np.int64)})  # out of range
    assert e.value.code == "IRN064" and "out of range" in str(e.value)
    with pytest.raises(InputError) as e:
        m.run({"x": x, "axes": np.array([1, -1], np.int64)})  # the same axis twice: rank would not be 0
    assert e.value.code == "IRN064" and "twice" in str(e.value)


def test_reduce_runtime_axes_count_over_rank_is_refused_at_load(tmp_path):
    b = single_op_model("ReduceSum", [("param:x", ([3, 4], "f32")), ("param:axes", ((3,), "i64"))],
                        [([-1], "f32")], {"keep_dims": "false"}, version="opset1")
    diags = irnorm.check(b.save(tmp_path, "over"))
    assert any(d.code == "IRN032" and "more than the data's rank" in d.message for d in diags)


def test_squeeze_unsqueeze_with_runtime_axes(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(1, 3, 1, 2)
    sq = irnorm.load(single_op_model("Squeeze", [("param:x", ([1, 3, 1, 2], "f32")), ("param:axes", ((1,), "i64"))],
                                     [([-1, -1, -1], "f32")], None, version="opset1").save(tmp_path, "sq"))
    assert sq.run({"x": x, "axes": np.array([2], np.int64)})["y"].shape == (1, 3, 2)
    assert sq.run({"x": x, "axes": np.array([-4], np.int64)})["y"].shape == (3, 1, 2)
    assert sq.output_shapes([(1, 3, 1, 2), (1,)]) == [None]  # which dims go is known only with the values
    with pytest.raises(InputError) as e:
        sq.run({"x": x, "axes": np.array([4], np.int64)})
    assert e.value.code == "IRN064"
    un = irnorm.load(single_op_model("Unsqueeze", [("param:x", ([3, 2], "f32")), ("param:axes", ((2,), "i64"))],
                                     [([-1, -1, -1, -1], "f32")], None, version="opset1").save(tmp_path, "un"))
    assert un.run({"x": x.reshape(3, 2), "axes": np.array([0, -1], np.int64)})["y"].shape == (1, 3, 2, 1)
    with pytest.raises(InputError) as e:
        un.run({"x": x.reshape(3, 2), "axes": np.array([1, 1], np.int64)})  # rank 3, not the 4 promised
    assert e.value.code == "IRN064" and "twice" in str(e.value)


def test_variadic_split_with_runtime_lengths(tmp_path):
    b = single_op_model("VariadicSplit", [("param:x", ([2, 7], "f32")), ("axis", np.array(1, np.int64)),
                                          ("param:lengths", ((-1,), "i64"))],
                        [([2, -1], "f32")] * 3, None, version="opset1")
    m = irnorm.load(b.save(tmp_path, "vs"))
    x = np.arange(14, dtype=np.float32).reshape(2, 7)
    out = m.run({"x": x, "lengths": np.array([2, -1, 1], np.int64)})
    for got, want in zip(out.values(), np.split(x, [2, 6], axis=1), strict=True):
        np.testing.assert_array_equal(got, want)
    for bad in ([2, 2], [3, 3, 3], [-1, -1, 7]):  # wrong count, wrong sum, two -1
        with pytest.raises(InputError) as e:
            m.run({"x": x, "lengths": np.array(bad, np.int64)})
        assert e.value.code == "IRN064"


@requires_openvino
def test_runtime_axes_match_openvino(tmp_path):
    ov = pytest.importorskip("openvino")
    op1 = pytest.importorskip("openvino.opset1")
    x = op1.parameter([2, 3, 4], np.float32, name="x")
    axes = op1.parameter([1], np.int64, name="axes")
    lengths = op1.parameter([2], np.int64, name="lengths")
    # (not Unsqueeze: OpenVINO gives it a dynamic rank with run-time axes, and its CPU plugin refuses that)
    outs = [op1.reduce_mean(x, axes, False), op1.reduce_max(x, axes, True)]
    outs += list(op1.variadic_split(x, op1.constant(np.int64(2)), lengths).outputs())
    for k, o in enumerate(outs):
        (o.output(0) if hasattr(o, "output") else o).get_tensor().set_names({f"y{k}"})
    model = ov.Model([op1.result(o) for o in outs], [x, axes, lengths], "runtime_axes")
    xml = save(model, tmp_path, "rt")
    rng = np.random.default_rng(3)
    for ax in (0, -1, 1):
        feeds = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32), "axes": np.array([ax], np.int64),
                 "lengths": np.array([1, 3], np.int64)}
        assert len(compare_with_openvino(xml, feeds)) == len(outs)
