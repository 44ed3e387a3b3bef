"""LRN-1: OpenVINO's reference window rule, conformance against OpenVINO where its CPU plugin
implements the reference (axes [1] or exactly the spatial axes, integer bias), the float64
oracle for every other axes set, the pinned CPU deviations, and one malformed-IR test per rule."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ovutil import HAVE_OPENVINO, assert_close, compare_with_openvino, ov_run, requires_openvino, save
from test_ops_mvn import assert_diag, check_ref, errors_of, make_ir, run1

from irnorm import reference as R

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as ops1

BF16 = np.dtype(ml_dtypes.bfloat16)


def _model(shape, dtype, axes, alpha, beta, bias, size):
    p = ops1.parameter(shape, dtype, name="x")
    node = ops1.lrn(p, ops1.constant(np.array(axes, np.int64)), alpha, beta, bias, size)
    node.output(0).get_tensor().set_names({"y"})
    return ov.Model([node], [p], "lrn")


def _ir(tmp_path, shape, axes, alpha=1e-2, beta=0.75, bias=1.0, size=3, et="f32", name="m"):
    """Hand-written LRN IR (any axes set, no OpenVINO needed)."""
    attrs = {"alpha": repr(float(alpha)), "beta": repr(float(beta)), "bias": repr(float(bias)), "size": str(size)}
    return make_ir(tmp_path / f"{name}.xml", "LRN", "opset1", attrs,
                   [("param", "x", list(shape), et), np.array(axes, np.int64)])


@requires_openvino
def test_random_vs_openvino_and_reference(tmp_path):
    """Axes sets the CPU plugin implements as the reference does: [1] and the spatial axes."""
    rng = np.random.default_rng(0)
    for case in range(30):
        rank = int(rng.integers(3, 6))
        shape = [int(d) for d in rng.integers(1, 7, size=rank)]
        spatial = list(range(2, rank))
        axes = [1] if case % 2 else [int(a) for a in rng.permutation(spatial)]
        size = int(rng.integers(1, 8))
        alpha = float(rng.choice([1e-4, 0.1, 2.0]))
        beta = float(rng.choice([0.5, 0.75, 1.0, 2.0]))
        bias = float(rng.choice([1.0, 2.0, 3.0]))  # integers: the CPU plugin truncates bias
        et = np.float16 if case % 5 == 4 else np.float32
        x = (rng.standard_normal(shape) * rng.choice([0.5, 3.0])).astype(et)
        xml = save(_model(shape, et, axes, alpha, beta, bias, size), tmp_path, f"m{case}")
        what = f"case {case}: {shape} axes={axes} size={size} a={alpha} b={beta} k={bias} {np.dtype(et).name}"
        got = compare_with_openvino(xml, {"x": x})["y"]
        check_ref(got, R.lrn(x, axes, alpha, beta, bias, size).astype(et), what)


def test_any_axes_set_vs_reference(tmp_path):
    """Axes sets the CPU plugin cannot run (or runs differently): irnorm follows the reference."""
    rng = np.random.default_rng(1)
    cases = [([2, 5, 4, 3], [0]), ([2, 5, 4, 3], [2]), ([2, 5, 4, 3], [-1]), ([2, 5, 4, 3], [1, 2, 3]),
             ([2, 5, 4, 3], [0, 2, 3]), ([2, 5, 4, 3], [3, 0, 1, 2]), ([2, 5, 4, 3], [1, 3]), ([6, 5], [0, 1]),
             ([7], [0]), ([7], [-1]), ([3, 4, 5], []), ([2, 3, 2, 2, 3, 2], [5, 1, 3])]
    for i, (shape, axes) in enumerate(cases):
        size = int(rng.integers(1, 7))
        alpha, beta, bias = float(rng.uniform(0.1, 3)), float(rng.uniform(0.3, 2)), float(rng.uniform(0.5, 3))
        x = rng.standard_normal(shape).astype(np.float32) * 2
        got = run1(_ir(tmp_path, shape, axes, alpha, beta, bias, size, name=f"a{i}"), x)
        check_ref(got, R.lrn(x, axes, alpha, beta, bias, size).astype(np.float32), f"{shape} {axes} size={size}")


def test_even_size_window_rule(tmp_path):
    """size=2 covers only the element itself and size=4 three elements, yet alpha is divided by size."""
    x = np.arange(1.0, 7.0, dtype=np.float32).reshape(1, 6, 1)
    y2 = run1(_ir(tmp_path, [1, 6, 1], [1], alpha=1.0, beta=1.0, bias=1.0, size=2, name="s2"), x)
    np.testing.assert_allclose(y2, x / (1 + x * x / 2), rtol=1e-6)
    y4 = run1(_ir(tmp_path, [1, 6, 1], [1], alpha=1.0, beta=1.0, bias=1.0, size=4, name="s4"), x)
    v = x[0, :, 0].astype(np.float64)
    sq = v * v
    window = np.array([sq[max(0, i - 1): i + 2].sum() for i in range(6)])
    np.testing.assert_allclose(y4[0, :, 0], v / (1 + window / 4), rtol=1e-6)
    # two axes: the box is size-1 wide along each, alpha / size**2
    x2 = np.arange(1.0, 13.0, dtype=np.float32).reshape(1, 1, 3, 4)
    y = run1(_ir(tmp_path, [1, 1, 3, 4], [2, 3], alpha=1.0, beta=1.0, bias=1.0, size=4, name="b"), x2)
    s = x2[0, 0].astype(np.float64) ** 2
    box = np.array([[s[max(0, i - 1): i + 2, max(0, j - 1): j + 2].sum() for j in range(4)] for i in range(3)])
    np.testing.assert_allclose(y[0, 0], x2[0, 0] / (1 + box / 16), rtol=1e-6)


def test_nasty_inputs(tmp_path):
    """Zeros, huge values whose squares overflow float32 (the sums run in float64), and f16/bf16."""
    shape = [2, 5, 3, 3]
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    x[0] = 0.0
    x[1, 2] = 3e19
    got = run1(_ir(tmp_path, shape, [1], alpha=1e-4, beta=0.75, bias=1.0, size=5), x)
    assert np.all(got[0] == 0) and np.isfinite(got).all()
    check_ref(got, R.lrn(x, [1], 1e-4, 0.75, 1.0, 5).astype(np.float32))
    for dt, et in ((np.float16, "f16"), (BF16, "bf16")):
        xs = (np.random.default_rng(3).standard_normal(shape) * 4).astype(dt)
        got = run1(_ir(tmp_path, shape, [2, 3], alpha=0.5, beta=0.75, bias=2.0, size=3, et=et, name=et), xs)
        check_ref(got, R.lrn(xs, [2, 3], 0.5, 0.75, 2.0, 3).astype(dt), et)


@requires_openvino
def test_bf16_via_convert_vs_openvino(tmp_path):
    p = ops1.parameter([2, 6, 4], ov.Type.bf16, name="x")
    node = ops1.lrn(ops1.convert(p, "f32"), ops1.constant(np.array([1], np.int64)), 0.1, 0.75, 1.0, 5)
    node.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([node], [p]), tmp_path, "via")
    x = (np.random.default_rng(4).standard_normal((2, 6, 4)) * 2).astype(BF16)
    got = compare_with_openvino(xml, {"x": x})["y"]
    check_ref(got, R.lrn(x, [1], 0.1, 0.75, 1.0, 5).astype(np.float32))


@requires_openvino
def test_dynamic_shape(tmp_path):
    p = ops1.parameter(ov.PartialShape([-1, 5, -1, -1]), np.float32, name="x")
    node = ops1.lrn(p, ops1.constant(np.array([1], np.int64)), 1e-3, 0.75, 2.0, 3)
    node.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([node], [p]), tmp_path, "dyn")
    rng = np.random.default_rng(5)
    for shape in ([1, 5, 2, 3], [3, 5, 7, 1]):
        compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(np.float32)})


# ---- pinned CPU-plugin deviations -------------------------------------------------------------


@requires_openvino
def test_cpu_truncates_bias(tmp_path):
    xml = save(_model([2, 5, 3], np.float32, [1], 0.5, 0.75, 1.5, 3), tmp_path, "m")
    x = np.random.default_rng(6).standard_normal((2, 5, 3)).astype(np.float32)
    got = run1(xml, x)
    check_ref(got, R.lrn(x, [1], 0.5, 0.75, 1.5, 3).astype(np.float32))
    cpu = ov_run(xml, {"x": x})["y"]
    assert_close(cpu, R.lrn(x, [1], 0.5, 0.75, 1.0, 3).astype(np.float32), "cpu uses int(bias)")
    assert not np.allclose(cpu, got, rtol=1e-3)


@requires_openvino
@pytest.mark.parametrize("axes", [[1, 2, 3], [0, 2, 3], [0, 1, 2, 3]])
def test_cpu_reduces_spatial_axes_only(tmp_path, axes):
    xml = save(_model([2, 5, 4, 3], np.float32, axes, 0.5, 0.75, 1.0, 3), tmp_path, "m")
    x = np.random.default_rng(7).standard_normal((2, 5, 4, 3)).astype(np.float32)
    got = run1(xml, x)
    check_ref(got, R.lrn(x, axes, 0.5, 0.75, 1.0, 3).astype(np.float32))
    cpu = ov_run(xml, {"x": x})["y"]
    assert_close(cpu, R.lrn(x, [2, 3], 0.5, 0.75, 1.0, 3).astype(np.float32), f"cpu {axes}")
    assert not np.allclose(cpu, got, rtol=1e-3)


@requires_openvino
@pytest.mark.parametrize("axes", [[2], [0], [-1], [1, 2]])
def test_cpu_cannot_compile_other_axes_sets(tmp_path, axes):
    xml = save(_model([2, 5, 4, 3], np.float32, axes, 0.5, 0.75, 1.0, 3), tmp_path, "m")
    x = np.random.default_rng(8).standard_normal((2, 5, 4, 3)).astype(np.float32)
    check_ref(run1(xml, x), R.lrn(x, axes, 0.5, 0.75, 1.0, 3).astype(np.float32))
    with pytest.raises(RuntimeError, match="not implemented for op"):
        ov_run(xml, {"x": x})


# ---- malformed IR -----------------------------------------------------------------------------

GOOD = {"alpha": "0.0001", "beta": "0.75", "bias": "1", "size": "5"}
X = ("param", "x", [2, 5, 4], "f32")


def _lrn(tmp_path, attrs=None, axes=None, data=X):
    return make_ir(tmp_path / "bad.xml", "LRN", "opset1", GOOD if attrs is None else attrs,
                   [data, np.array([1], np.int64) if axes is None else axes])


def test_malformed_good_baseline(tmp_path):
    assert errors_of(_lrn(tmp_path)) == []


@pytest.mark.parametrize("size", ["0", "-3"])
def test_malformed_size_not_positive(tmp_path, size):
    assert_diag(_lrn(tmp_path, {**GOOD, "size": size}), "IRN023", rf"size=\"{size}\": must be at least 1")


def test_malformed_size_not_integer(tmp_path):
    assert_diag(_lrn(tmp_path, {**GOOD, "size": "2.5"}), "IRN021", r"size=\"2.5\": '2.5' is not an integer")


@pytest.mark.parametrize("beta", ["0", "-0.5"])
def test_malformed_beta_not_positive(tmp_path, beta):
    assert_diag(_lrn(tmp_path, {**GOOD, "beta": beta}), "IRN023", rf"beta=\"{beta}\": must be positive")


@pytest.mark.parametrize("missing", ["alpha", "beta", "bias", "size"])
def test_malformed_missing_attribute(tmp_path, missing):
    attrs = {k: v for k, v in GOOD.items() if k != missing}
    assert_diag(_lrn(tmp_path, attrs), "IRN020", f"required attribute '{missing}' is missing")


def test_malformed_unknown_attribute(tmp_path):
    assert_diag(_lrn(tmp_path, {**GOOD, "region": "across"}), "IRN022",
                r"unknown attribute 'region' \(allowed: alpha, beta, bias, size\)")


@pytest.mark.parametrize("axes,pattern", [
    ([3], r"axes value 3 is out of range \[-3, 2\] for rank 3"),
    ([-4], r"axes value -4 is out of range \[-3, 2\] for rank 3"),
])
def test_malformed_axes_out_of_range(tmp_path, axes, pattern):
    assert_diag(_lrn(tmp_path, axes=np.array(axes, np.int64)), "IRN032", pattern)


def test_malformed_repeated_axes(tmp_path):
    assert_diag(_lrn(tmp_path, axes=np.array([2, -1], np.int64)), "IRN032", r"axes \[2, -1\] has repeated axes")


def test_malformed_axes_shape_and_type(tmp_path):
    assert_diag(_lrn(tmp_path, axes=np.array(1, np.int64)), "IRN032", r"axes \(input 1\) must be 1-D, got \[\]")
    assert_diag(_lrn(tmp_path, axes=np.array([1.0], np.float32)), "IRN033",
                r"axes \(input 1\) must be an integer tensor, got f32")


def test_malformed_non_constant_axes(tmp_path):
    xml = make_ir(tmp_path / "bad.xml", "LRN", "opset1", GOOD, [X, ("param", "axes", [1], "i64")])
    assert_diag(xml, "IRN034", r"input 1 \(axes\) must be a constant")


def test_malformed_integer_data(tmp_path):
    assert_diag(_lrn(tmp_path, data=("param", "x", [2, 5, 4], "i8")), "IRN033",
                r"data must be a floating-point tensor, got i8")
