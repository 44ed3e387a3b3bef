"""ReduceMean / ReduceSum / ReduceMax / ReduceL2 against OpenVINO on IRs written by
openvino.save_model (random shapes, negative axes, keep_dims both ways, f32/f16, integers, dynamic
shapes, zero-size and empty axes), the Numba kernel against numpy in float64, and malformed IR."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error
from ovutil import compare_with_openvino, ov_run, requires_openvino, save

import irnorm
from irnorm.kernels.opcodes import REDUCE_MAX, REDUCE_SUM, REDUCE_SUMSQ
from irnorm.ops.reduce import compute_reduce

ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")
op4 = pytest.importorskip("openvino.opset4")

OPS = {"mean": op1.reduce_mean, "sum": op1.reduce_sum, "max": op1.reduce_max, "l2": op4.reduce_l2}


def _named(node, name: str):
    node.output(0).get_tensor().set_names({name})
    return node


def _axes_const(axes):
    if len(axes) == 0:
        return ov.op.Constant(ov.Tensor(np.zeros(0, np.int64)))
    return op1.constant(np.array(axes, np.int64))


def _model(shape, et, axes, keep, kinds=tuple(OPS)):
    x = op1.parameter(list(shape), et, name="x")
    outs = [_named(OPS[k](x, _axes_const(axes), keep_dims=keep), k) for k in kinds]
    return ov.Model([op1.result(o) for o in outs], [x], "reduce")


def _random_case(rng):
    r = int(rng.integers(1, 6))
    shape = tuple(int(d) for d in rng.integers(1, 7, size=r))
    k = int(rng.integers(1, r + 1))
    axes = [int(a) for a in rng.choice(r, size=k, replace=False)]
    axes = [a - r if rng.random() < 0.5 else a for a in axes]  # negative and unsorted
    return shape, axes


@requires_openvino
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_reductions_match_openvino(tmp_path, dtype):
    rng = np.random.default_rng(11 if dtype == np.float32 else 12)
    cases = [((2, 3, 4, 5), [1]), ((2, 3, 4, 5), [2, 3]), ((2, 3, 4, 5), [0, 2]), ((4, 6), [-1]),
             ((3, 1, 5), [1]), ((7,), [0]), ((2, 3, 4), [0, 1, 2])] + [_random_case(rng) for _ in range(14)]
    for k, (shape, axes) in enumerate(cases):
        keep = bool(k % 2)
        xml = save(_model(shape, dtype, axes, keep), tmp_path, f"r{k}")
        x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
        got = compare_with_openvino(xml, {"x": x})
        r = len(shape)
        norm = sorted({a % r for a in axes})
        want = tuple(1 if i in norm else d for i, d in enumerate(shape)) if keep else \
            tuple(d for i, d in enumerate(shape) if i not in norm)
        assert got["mean"].shape == want and got["mean"].dtype == np.dtype(dtype)


@requires_openvino
def test_large_reductions_use_the_parallel_kernels_and_match_openvino(tmp_path):
    rng = np.random.default_rng(13)
    cases = [((4, 3000, 64), [1], np.float32), ((64, 4096), [-1], np.float32), ((8, 16, 32, 32), [0, 2, 3], np.float32),
             ((4, 3000, 64), [1, 2], np.float16)]
    for k, (shape, axes, dtype) in enumerate(cases):
        xml = save(_model(shape, dtype, axes, keep=True, kinds=("mean", "max", "l2")), tmp_path, f"big{k}")
        compare_with_openvino(xml, {"x": (rng.standard_normal(shape) + 5).astype(dtype)})


@requires_openvino
def test_dynamic_shapes(tmp_path):
    rng = np.random.default_rng(14)
    xml = save(_model((-1, 4, -1), np.float32, [-1], keep=True), tmp_path, "dyn")
    m = irnorm.load(xml)
    assert m.outputs[0].shape == (-1, 4, 1)
    for shape in [(1, 4, 1), (3, 4, 9), (2, 4, 5000)]:
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(np.float32)})


@requires_openvino
def test_integer_reductions_match_openvino(tmp_path):
    rng = np.random.default_rng(15)
    for et in (np.int32, np.int64):
        xml = save(_model((3, 5), et, [1], keep=False), tmp_path, f"int{np.dtype(et).name}")
        x = rng.integers(-20, 20, (3, 5)).astype(et)
        got = compare_with_openvino(xml, {"x": x}, tol=(0, 0))
        # Mean and L2 truncate toward zero (C++), not floor
        s = x.astype(np.int64).sum(1)
        assert got["mean"].tolist() == [int(v / 5) for v in s]
        assert got["l2"].tolist() == [int(np.sqrt((x.astype(np.float64) ** 2).sum(1))[i]) for i in range(3)]


@requires_openvino
def test_reduction_over_zero_elements_matches_openvino(tmp_path):
    xml = save(_model((0, 3), np.float32, [0], keep=False), tmp_path, "zero")
    got = compare_with_openvino(xml, {"x": np.zeros((0, 3), np.float32)})
    assert got["mean"].tolist() == [0, 0, 0] and got["sum"].tolist() == [0, 0, 0]
    assert (got["max"] == np.finfo(np.float32).min).all()  # lowest finite, not -inf
    xml = save(_model((3, 0), np.float32, [0], keep=True), tmp_path, "zero_out")
    assert compare_with_openvino(xml, {"x": np.zeros((3, 0), np.float32)})["sum"].shape == (1, 0)


@requires_openvino
def test_empty_axes_reduce_over_nothing(tmp_path):
    from ovutil import OV_CONFIG, core

    x = np.random.default_rng(16).standard_normal((2, 3)).astype(np.float32)
    for keep in (True, False):
        model = _model((2, 3), np.float32, [], keep=keep)
        xml = save(model, tmp_path, f"empty{keep}")
        got = irnorm.load(xml).run({"x": x})
        for k in OPS:  # each output element reduces one input element: x, and |x| for L2
            np.testing.assert_array_equal(got[k], np.abs(x) if k == "l2" else x)
        # OpenVINO cannot read back an IR holding a zero-byte Const ...
        with pytest.raises(RuntimeError, match="ptr is Null"):
            ov_run(xml, {"x": x})
        # ... and its CPU plugin compiles the in-memory model only with keep_dims=true (agreeing with the
        # reference and irnorm); with keep_dims=false it fails, where irnorm follows the reference.
        if keep:
            res = core().compile_model(model, "CPU", OV_CONFIG)({"x": x})
            for k, out in zip(OPS, res.values(), strict=True):
                np.testing.assert_array_equal(out, np.abs(x) if k == "l2" else x)
        else:
            with pytest.raises(RuntimeError, match="incorrect number of input/output dimensions"):
                core().compile_model(model, "CPU", OV_CONFIG)({"x": x})


def test_repeated_axes_act_as_a_set(tmp_path):
    b = IRBuilder("rep")
    x = b.parameter("x", (2, 3, 4), "f32")
    (y,) = b.layer("ReduceSum", [x, b.const(np.array([1, -2, 1], np.int64))], [((2, 1, 4), "f32")],
                   {"keep_dims": "true"}, version="opset1", names=["y"])
    b.result(y)
    v = np.random.default_rng(17).standard_normal((2, 3, 4)).astype(np.float32)
    out = irnorm.load(b.save(tmp_path)).run({"x": v})["y"]
    np.testing.assert_allclose(out, v.sum(1, keepdims=True), rtol=1e-6)


# ---- kernel against numpy ------------------------------------------------------------------------


def test_kernel_matches_float64_numpy():
    from irnorm.kernels import reduce as kern

    rng = np.random.default_rng(18)
    for _ in range(40):
        shape, axes = _random_case(rng)
        axes = sorted({a % len(shape) for a in axes})
        for dtype in (np.float32, np.float64, np.float16, ml_dtypes.bfloat16):
            x = (rng.standard_normal(shape) * 10 + 100).astype(dtype)
            x64 = x.astype(np.float64)
            ax = tuple(axes)
            np.testing.assert_allclose(kern.reduce(REDUCE_SUM, x, axes), x64.sum(ax), rtol=1e-12)
            np.testing.assert_allclose(kern.reduce(REDUCE_SUMSQ, x, axes), (x64 ** 2).sum(ax), rtol=1e-12)
            np.testing.assert_array_equal(kern.reduce(REDUCE_MAX, x, axes), x64.max(ax))


def test_kernel_max_propagates_nan_and_mean_is_accurate():
    from irnorm.kernels import reduce as kern

    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x[0, 1, 2] = np.nan
    r = kern.reduce(REDUCE_MAX, x, [1])  # strided
    assert np.isnan(r[0, 2]) and not np.isnan(r[0, [0, 1, 3]]).any()
    r = kern.reduce(REDUCE_MAX, x, [2])  # rows
    assert np.isnan(r[0, 1]) and np.isnan(r).sum() == 1
    # mean 1e4 with a small spread: float64 accumulation keeps the f32 result exact to rounding
    v = (1e4 + np.random.default_rng(19).standard_normal(100000)).astype(np.float32)
    got = compute_reduce("mean", v, [0], False)
    assert abs(float(got) - v.astype(np.float64).mean()) <= np.spacing(np.float32(1e4))


# ---- malformed IR ------------------------------------------------------------------------------


def _reduce(tmp_path, axes, attrs=None, x_et="f32", type_="ReduceMean", axes_param=False, version="opset1"):
    b = IRBuilder("bad")
    x = b.parameter("x", (2, 3, 4), x_et)
    a = b.parameter("axes", axes.shape, "i64") if axes_param else b.const(axes)
    (y,) = b.layer(type_, [x, a], [((2, 3, 4), x_et)], attrs if attrs is not None else {"keep_dims": "true"},
                   version=version, names=["y"])
    b.result(y)
    return b


@pytest.mark.parametrize("axes,code,fragments", [
    (np.array([3], np.int64), "IRN032", ("axes value 3 is out of range [-3, 2] for rank 3",)),
    (np.array([-4], np.int32), "IRN032", ("axes value -4 is out of range",)),
    (np.array([[1]], np.int64), "IRN032", ("axes must be a scalar or 1-D, got [1,1]",)),
    (np.array([1.0], np.float32), "IRN033", ("axes must be an integer tensor, got f32",)),
])
def test_malformed_axes(tmp_path, axes, code, fragments):
    expect_error(_reduce(tmp_path, axes), tmp_path, code, *fragments)


def test_malformed_attributes_types_and_versions(tmp_path):
    ax = np.array([1], np.int64)
    expect_error(_reduce(tmp_path, ax, {"keep_dims": "maybe"}), tmp_path, "IRN021", "keep_dims")
    expect_error(_reduce(tmp_path, ax, {"keep_dims": "true", "axis": "1"}), tmp_path, "IRN022", "unknown attribute")
    expect_error(_reduce(tmp_path, ax, x_et="boolean", type_="ReduceSum"), tmp_path, "IRN033", "boolean")
    # axes given at run time are accepted (tests/test_runtime_axes.py), but still must be a 1-D integer tensor
    expect_error(_reduce(tmp_path, np.array([[1]], np.int64), axes_param=True), tmp_path, "IRN032",
                 "axes must be a scalar or 1-D, got [1,1]")
    expect_error(_reduce(tmp_path, ax, type_="ReduceL2", version="opset3"), tmp_path, "IRN012", "ReduceL2",
                 "opset4+")


def test_declared_output_dims_are_checked(tmp_path):
    b = IRBuilder("dims")
    x = b.parameter("x", (2, 3, 4), "f32")
    (y,) = b.layer("ReduceMax", [x, b.const(np.array([1], np.int64))], [((2, 1, 4), "f32")], {"keep_dims": "false"},
                   version="opset1", names=["y"])
    b.result(y)
    expect_error(b, tmp_path, "IRN030", "declares dims [2,1,4]", "gives [2,4]")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_trailing_reductions_take_one_call_and_equal_the_general_path_bit_for_bit(tmp_path, dtype):
    """A small input reduced over its trailing axes (a global pool, a squeeze-excite block) runs one
    kernel call from the input to the output; it must equal the general kernel followed by the op's
    division, square root and cast exactly, on the first run and on later runs (remembered; on a static
    model the plan's straight-line runner calls each step with its data alone, the step's static_call); a
    non-contiguous input is refused (the op then takes the general path)."""
    from irnorm.kernels import reduce as kern
    from irnorm.kernels.opcodes import REDUCE_SUM, REDUCE_SUMSQ
    from irnorm.ops.reduce import reduced_shape

    rng = np.random.default_rng(31)
    for k, (shape, axes) in enumerate([((1, 96, 14, 14), [2, 3]), ((2, 5, 7), [-1]), ((3, 4, 1, 9), [1, 2, 3]),
                                       ((1, 1), [1])]):
        keep = k % 2 == 0
        xml = save(_model(shape, dtype, axes, keep), tmp_path, f"s{k}")
        m = irnorm.load(xml)
        assert m._plan.source.count("= fast") == len(OPS), m._plan.source
        x = (rng.standard_normal(shape) * 4 + 50).astype(dtype)
        norm = sorted({a % len(shape) for a in axes})
        n = int(np.prod([shape[a] for a in norm]))
        out_shape = reduced_shape(shape, norm, keep)
        want = {"mean": (kern.reduce(REDUCE_SUM, x, norm) / n).astype(dtype).reshape(out_shape),
                "sum": kern.reduce(REDUCE_SUM, x, norm).astype(dtype).reshape(out_shape),
                "max": x.max(axis=tuple(norm)).reshape(out_shape),
                "l2": np.sqrt(kern.reduce(REDUCE_SUMSQ, x, norm)).astype(dtype).reshape(out_shape)}
        for _ in range(2):  # the first run decides the path, the second takes the remembered one
            got = m.run({"x": x})
            for kind, w in want.items():
                assert got[kind].dtype == np.dtype(dtype) and got[kind].shape == out_shape
                np.testing.assert_array_equal(got[kind], w)
        # a non-contiguous input (a kernel may get one from a layer that returns a view): not this path
        fast = kern.small_rows(REDUCE_SUM, shape, np.dtype(dtype), tuple(norm), float(n), False, out_shape)
        wide = np.empty(shape[:-1] + (shape[-1] * 2,), dtype)
        wide[..., ::2] = x
        view = wide[..., ::2]
        assert fast is not None and (fast(view) is None) == (not view.flags.c_contiguous)  # [1, 1]: contiguous
        np.testing.assert_array_equal(fast(x), want["mean"])
    assert kern.small_rows(REDUCE_SUM, (4, 8, 8), np.dtype(np.float32), (0,), 1.0, False, (8, 8)) is None  # axis 0
    assert kern.small_rows(REDUCE_SUM, (64, 4096), np.dtype(np.float32), (1,), 1.0, False, (64,)) is None  # large
