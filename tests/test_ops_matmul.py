"""MatMul-1 beyond the conformance table: the shape/type rules as malformed-IR tests, a run-time
inner-dim mismatch under dynamic dims, integer and empty products, the batched-2-D GEMM path, and a
Linear layer written by OpenVINO with an f16 weight behind a decompression Convert, run at two
dynamic input shapes."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import expect_error, run_model, single_op_model
from ovutil import HAVE_OPENVINO, compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R
from irnorm.errors import InputError
from irnorm.ops.base import RuleError
from irnorm.ops.matmul import matmul_shape

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as op1


def _mm(a_shape, b_shape, et="f32", et_b=None, attrs=None):
    """A MatMul of two Parameters; the output is declared with the rank the rule gives (dims and type
    left dynamic), or [?] when the rule fails."""
    attrs = attrs or {}
    try:
        rank = len(matmul_shape(a_shape, b_shape, attrs.get("transpose_a") is True, attrs.get("transpose_b") is True))
    except RuleError:
        rank = 1
    return single_op_model("MatMul", [("param:a", (a_shape, et)), ("param:b", (b_shape, et_b or et))],
                           [((-1,) * rank, "dynamic")], attrs, version="opset1")


@pytest.mark.parametrize("a_shape, b_shape, attrs, fragment", [
    ((2, 3), (4, 5), {}, "inner dims differ"),
    ((2, 3), (2, 3), {"transpose_a": "false", "transpose_b": "false"}, "K=3"),
    ((3,), (4,), {}, "inner dims differ"),
    ((2, 3, 4), (5, 4, 6), {}, "do not broadcast"),
    ((), (3, 4), {}, "scalar"),
])
def test_shape_rule(tmp_path, a_shape, b_shape, attrs, fragment):
    expect_error(_mm(a_shape, b_shape, attrs=attrs), tmp_path, "IRN032", fragment)


def test_transpose_makes_it_fit(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = run_model(_mm(a.shape, b.shape, attrs={"transpose_a": True, "transpose_b": True}), tmp_path,
                  {"a": a, "b": b})["y"]
    np.testing.assert_array_equal(y, a.T @ b.T)


def test_type_rules(tmp_path):
    expect_error(_mm((2, 3), (3, 4), "f32", "f16"), tmp_path / "mixed", "IRN033", "same as A")
    expect_error(_mm((2, 3), (3, 4), "boolean"), tmp_path / "bool", "IRN033", "numeric")


def test_bad_transpose_attribute(tmp_path):
    expect_error(_mm((2, 3), (3, 4), attrs={"transpose_a": "maybe"}), tmp_path, "IRN021", "transpose_a")


def test_runtime_inner_dim_mismatch(tmp_path):
    m = irnorm.load(_mm((-1, -1), (-1, 4)).save(tmp_path))
    y = m.run({"a": np.ones((2, 3), np.float32), "b": np.ones((3, 4), np.float32)})["y"]
    np.testing.assert_array_equal(y, np.full((2, 4), 3, np.float32))
    with pytest.raises(InputError) as e:
        m.run({"a": np.ones((2, 3), np.float32), "b": np.ones((5, 4), np.float32)})
    assert e.value.code == "IRN064"


@pytest.mark.parametrize("et, dt", [("i64", np.int64), ("i32", np.int32), ("u8", np.uint8)])
def test_integer_products_are_exact(tmp_path, et, dt):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 9, size=(2, 3, 4)).astype(dt)
    b = rng.integers(0, 9, size=(4, 5)).astype(dt)
    y = run_model(_mm(a.shape, b.shape, et), tmp_path, {"a": a, "b": b})["y"]
    assert y.dtype == dt
    np.testing.assert_array_equal(y, R.matmul(a, b).astype(dt))  # u8 wraps like C++ arithmetic


def test_empty_inner_dim_gives_zeros(tmp_path):
    y = run_model(_mm((2, 0), (0, 3)), tmp_path, {"a": np.ones((2, 0), np.float32),
                                                   "b": np.ones((0, 3), np.float32)})["y"]
    np.testing.assert_array_equal(y, np.zeros((2, 3), np.float32))


def test_vector_operands_and_fresh_outputs(tmp_path):
    """1-D x 1-D is a scalar; 1-D x batched removes the unsqueezed dim; outputs own their memory."""
    a, b = np.arange(3, dtype=np.float32), np.arange(3, dtype=np.float32) + 1
    y = run_model(_mm((3,), (3,)), tmp_path / "dot", {"a": a, "b": b})["y"]
    assert y.shape == () and y == np.dot(a, b)
    bb = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    y = run_model(_mm((3,), (2, 3, 4)), tmp_path / "vb", {"a": a, "b": bb})["y"]
    np.testing.assert_array_equal(y, np.matmul(a, bb))
    assert y.shape == (2, 4) and y.flags.owndata


def test_batched_a_against_const_2d_b(tmp_path):
    """[B, M, K] x const [N, K]^T: the one-GEMM path for a Linear layer, f16 weights."""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((6, 5)).astype(np.float16)
    b = single_op_model("MatMul", [("param:a", ((-1, -1, 5), "f16")), ("w", w)], [((-1, -1, 6), "f16")],
                        {"transpose_b": True}, version="opset1")
    m = irnorm.load(b.save(tmp_path))
    for shape in [(2, 3, 5), (1, 7, 5)]:
        a = rng.standard_normal(shape).astype(np.float16)
        y = m.run({"a": a})["y"]
        assert y.dtype == np.float16
        np.testing.assert_allclose(y.astype(np.float64), R.matmul(a, w, False, True), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("et, dt", [("f32", np.float32), ("f64", np.float64), ("i32", np.int32)])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_batched_a_against_const_2d_b_of_its_own_type_is_one_gemm(tmp_path, et, dt, transpose_b):
    """[..., M, K] x const [K, N] in the compute type: one product over all rows, its plan kept per shape
    of A -- numpy's matmul's values (exact for integers; floats to rounding: BLAS may block the rows
    differently), at two shapes, each run twice."""
    rng = np.random.default_rng(8)
    w = (rng.standard_normal((6, 5) if transpose_b else (5, 6)) * 4).astype(dt)
    b = single_op_model("MatMul", [("param:a", ((-1, -1, -1, 5), et)), ("w", w)], [((-1, -1, -1, 6), et)],
                        {"transpose_b": transpose_b}, version="opset1")
    m = irnorm.load(b.save(tmp_path))
    wm = w.T if transpose_b else w
    for shape in [(2, 3, 4, 5), (1, 1, 7, 5), (2, 3, 4, 5)]:
        a = (rng.standard_normal(shape) * 4).astype(dt)
        for _ in range(2):
            y = m.run({"a": a})["y"]
            assert y.dtype == dt and y.flags.c_contiguous
            if et == "i32":
                np.testing.assert_array_equal(y, np.matmul(a, wm))
            else:
                np.testing.assert_allclose(y, np.matmul(a, wm), rtol=1e-6, atol=1e-5)


@requires_openvino
def test_openvino_linear_layer_f16_weight_two_shapes(tmp_path):
    """An OpenVINO-written Linear layer (weight compressed to f16 + decompression Convert), batched
    A with dynamic batch and sequence dims, run at two shapes."""
    rng = np.random.default_rng(7)
    x = op1.parameter(ov.PartialShape([-1, -1, 16]), np.float32, name="x")
    w = rng.standard_normal((24, 16)).astype(np.float32)
    y = op1.matmul(x, op1.constant(w), False, True)
    y2 = op1.matmul(y, op1.constant(rng.standard_normal((24,)).astype(np.float32)), False, False)
    y.output(0).get_tensor().set_names({"y"})
    y2.output(0).get_tensor().set_names({"v"})
    xml = save(ov.Model([y, y2], [x], "linear"), tmp_path, "linear", compress_to_fp16=True)
    assert "Convert" in xml.read_text()
    for shape in [(2, 5, 16), (1, 9, 16)]:
        got = compare_with_openvino(xml, {"x": rng.standard_normal(shape).astype(np.float32)})
        assert got["y"].shape == shape[:2] + (24,) and got["v"].shape == shape[:2]


@pytest.mark.parametrize("et, dt", [("f32", np.float32), ("f64", np.float64)])
@pytest.mark.parametrize("ta, tb", [(False, False), (False, True), (True, False), (True, True)])
def test_batched_computed_operands_one_matmul_path(tmp_path, monkeypatch, et, dt, ta, tb):
    """Attention's products (both operands computed, batch dims broadcast, either transposed) take a
    per-shape shortcut to np.matmul: the bits of the general path it skips (that path forced by a
    second model), right against float64, at shapes that change between calls, a shape's plan reused
    with non-contiguous inputs, and a product large enough to be cut into blocks (no shortcut)."""
    import irnorm.ops.matmul as mm_op

    rng = np.random.default_rng(11)
    b = single_op_model("MatMul", [("param:a", ((-1, -1, -1, -1), et)), ("param:b", ((-1, -1, -1, -1), et))],
                        [((-1, -1, -1, -1), et)], {"transpose_a": ta, "transpose_b": tb}, version="opset1")
    xml = b.save(tmp_path)
    m = irnorm.load(xml)
    general = irnorm.load(xml)  # a second model whose calls are all sent down the general path
    shortcut = mm_op._one_matmul
    decided = []  # what the shortcut decided for `m`, per new shape pair
    forced = [False]

    def recorder(*args):
        if forced[0]:
            return False
        decided.append(shortcut(*args))
        return decided[-1]

    monkeypatch.setattr(mm_op, "_one_matmul", recorder)

    def general_run(feeds):
        forced[0] = True
        try:
            return general.run(feeds)["y"]
        finally:
            forced[0] = False

    def operand(batch, rows, cols, transposed, strided=False):
        x = rng.standard_normal(batch + ((cols, rows) if transposed else (rows, cols))).astype(dt)
        if strided:  # the same shape, as a view with a step along the last axis
            wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dt)
            wide[..., ::2] = x
            x = wide[..., ::2]
        return x

    for (ba, bb, mm, k, n), strided in [(((1, 2), (1, 2), 8, 16, 8), False), (((1, 2), (1, 2), 8, 16, 8), True),
                                        (((2, 3), (1, 3), 5, 7, 4), False), (((1, 1), (2, 1), 1, 3, 9), True),
                                        (((1, 1), (1, 1), 64, 256, 512), False)]:
        a = operand(ba, mm, k, ta, strided)
        bmat = operand(bb, k, n, tb, strided)
        want = R.matmul(a, bmat, ta, tb)
        for _ in range(2):
            y = m.run({"a": a, "b": bmat})["y"]
            assert y.dtype == dt and y.flags.c_contiguous and y.shape == want.shape
            np.testing.assert_array_equal(y, general_run({"a": a, "b": bmat}))
            tol = 1e-5 if dt == np.float32 else 1e-12
            np.testing.assert_allclose(y, want, rtol=tol, atol=tol * np.sqrt(k))
    assert decided == [True, True, True, False]  # 3 small shape pairs take it (one reused), the large one not


@pytest.mark.parametrize("rows, depth, n", [(1, 32, 32), (8, 32, 64), (65, 64, 192), (3, 1, 7), (16, 40, 300)])
@pytest.mark.parametrize("layout", ["row_major", "transposed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_linear_in_one_call(rows, depth, n, layout, dtype):
    """A small product by a constant matrix with its bias and activation runs as one Numba call
    (kernels/linear.py: one cblas_?gemm, then the epilogue): np.dot's values to rounding, and the bits of
    its own product followed by the Add and activation as passes of their own; B as stored row-major or as
    the transposed view of an exported [N, K] weight."""
    from irnorm.kernels import activation, blas
    from irnorm.kernels.linear import linear_plan

    if blas.gemm_address(np.dtype(dtype)) is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS irnorm drives: the one-call path is not taken")
    rng = np.random.default_rng(rows + depth + n)
    a = rng.standard_normal((rows, depth)).astype(dtype)
    if rows > 1:
        a[0, 0] = np.inf  # a row of inf / NaN among finite ones
    b = (rng.standard_normal((n, depth)).astype(dtype).T if layout == "transposed"
         else rng.standard_normal((depth, n)).astype(dtype))
    bias = rng.standard_normal(n).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for code in (-1, activation.RELU, activation.GELU_TANH):
        epilogue = activation.Epilogue(bias, code, 0.0, 0.0, False)
        run, bare = linear_plan(rows, b, epilogue), linear_plan(rows, b, None)
        assert run is not None and bare is not None
        got, plain = np.empty((rows, n), dtype), np.empty((rows, n), dtype)
        run(a, got)
        bare(a, plain)
        np.testing.assert_array_equal(got, activation.bias_activation_last(plain, bias, code))
        with np.errstate(all="ignore"):  # inf * 0 in the reference product
            want = activation.bias_activation_last(np.dot(a, b), bias, code)
        finite = np.isfinite(want)
        np.testing.assert_allclose(got[finite], want[finite], rtol=tol, atol=tol * max(1.0, np.abs(want[finite]).max()))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert linear_plan(rows, np.asfortranarray(np.ones((depth, n), dtype))[::1, ::-1], None) is None  # not one C block


@pytest.mark.parametrize("rows, depth, n", [(256, 32, 128), (64, 256, 64), (37, 512, 61), (33, 24, 2050)])
@pytest.mark.parametrize("layout", ["row_major", "transposed"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_rows_on_threads(rows, depth, n, layout, dtype, monkeypatch):
    """A product from LINEAR_PARALLEL_FLOPS on runs as row ranges on Numba's threads, each with its epilogue
    (linear_parallel): the bits of the one-call path on the calling thread for every epilogue form (bias,
    activation, residual), a row count that does not divide evenly and rows longer than SHORT_ROW_MAX included,
    and np.dot's values to rounding."""
    from irnorm.kernels import activation, blas, linear

    if blas.gemm_address(np.dtype(dtype)) is None:
        pytest.skip("numpy's BLAS is not an OpenBLAS irnorm drives: the one-call path is not taken")
    assert 2 * rows * depth * n >= linear.LINEAR_PARALLEL_FLOPS and linear.linear_tasks(rows, n, depth) > 1
    rng = np.random.default_rng(rows * n)
    a = rng.standard_normal((rows, depth)).astype(dtype)
    a[rows // 2, 3] = np.nan  # a NaN in a row of the second range
    b = (rng.standard_normal((n, depth)).astype(dtype).T if layout == "transposed"
         else rng.standard_normal((depth, n)).astype(dtype))
    bias = rng.standard_normal(n).astype(dtype)
    res = rng.standard_normal((rows, n)).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    forms = [(None, False), (bias, False), (None, True), (bias, True)]
    forms += [(bias, code) for code in (activation.RELU, activation.GELU_ERF, activation.SWISH)]
    for bias_v, form in forms:
        residual = form is True
        code = -1 if isinstance(form, bool) else form
        epilogue = activation.Epilogue(bias_v, code, 1.0, 0.0, residual)
        extra = (res,) if residual else ()
        threaded = linear.linear_plan(rows, b, epilogue)
        assert threaded is not None and threaded.__name__ == "run_parallel"
        got, want_bits = np.empty((rows, n), dtype), np.empty((rows, n), dtype)
        threaded(a, got, *extra)
        # the bits of one call on the calling thread per row range of the cut
        tasks = linear.linear_tasks(rows, n, depth)
        monkeypatch.setattr(linear, "LINEAR_PARALLEL_FLOPS", 1 << 62)
        monkeypatch.setattr(linear, "LINEAR_ONE_CALL_MAX", 1 << 62)  # the one call even for a large output
        for t in range(tasks):
            r0, r1 = t * rows // tasks, (t + 1) * rows // tasks
            serial = linear.linear_plan(r1 - r0, b, epilogue)
            assert serial is not None and serial.__name__ == "run"
            serial(a[r0:r1], want_bits[r0:r1], *(e[r0:r1] for e in extra))
        monkeypatch.undo()
        np.testing.assert_array_equal(got, want_bits)
        ref = a.astype(np.float64) @ b.astype(np.float64) + (0.0 if bias_v is None else bias_v)
        if residual:
            ref = ref + res
        if code == activation.RELU:
            ref = np.maximum(ref, 0.0)
        elif code == activation.GELU_ERF:
            from math import erf

            ref = 0.5 * ref * (1.0 + np.vectorize(erf)(ref / np.sqrt(2.0)))
        elif code == activation.SWISH:
            with np.errstate(over="ignore"):
                ref = ref / (1.0 + np.exp(-ref))
        finite = ~np.isnan(ref)
        assert np.isnan(got[~finite]).all()
        np.testing.assert_allclose(got[finite], ref[finite], rtol=tol * 10, atol=tol * 10 * np.sqrt(depth))


def test_batched_product_in_one_call():
    """Small batched products of computed float32 operands (attention's P @ V) run as one call of irnorm's GEMM
    kernels where they are enabled (blas.batched_product): np.matmul's values to rounding, a new C-contiguous
    array of np.matmul's shape; other dtypes, broadcast batch dims and strided operands are np.matmul's."""
    from irnorm.kernels import blas

    rng = np.random.default_rng(5)
    for lead, m, k, n in [((16, 2), 16, 16, 16), ((3,), 5, 33, 7), ((2, 1, 2), 64, 8, 3), ((4,), 1, 1, 1)]:
        a = rng.standard_normal(lead + (m, k)).astype(np.float32)
        b = rng.standard_normal(lead + (k, n)).astype(np.float32)
        a[(0,) * len(lead) + (0, 0)] = np.nan
        got = blas.batched_product(a, b)
        want = np.matmul(a.astype(np.float64), b.astype(np.float64))
        assert got.shape == want.shape and got.dtype == np.float32 and got.flags.c_contiguous
        assert not np.shares_memory(got, a) and not np.shares_memory(got, b)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        ok = ~np.isnan(want)
        np.testing.assert_allclose(got[ok], want[ok], rtol=1e-5, atol=1e-5 * np.sqrt(k))
    a = rng.standard_normal((3, 8, 16)).astype(np.float32)
    b = rng.standard_normal((3, 16, 8)).astype(np.float32)
    b_t = np.swapaxes(np.ascontiguousarray(np.swapaxes(b, -1, -2)), -1, -2)  # B as the transposed view of K
    for x, y in [(a.astype(np.float64), b.astype(np.float64)), (a[:1], b), (a, b_t), (a[:, :, ::2], b[:, ::2])]:
        np.testing.assert_array_equal(blas.batched_product(x, y), np.matmul(x, y))


def test_static_linear_called_with_its_one_operand(tmp_path):
    """On a static model a MatMul by a constant B (fused with its bias and Relu, or alone) is written into
    the plan's straight-line runner as a call with A alone (the kernel's static_call); the results are the
    kernel's own bits (a profiled run calls the kernel), and a dynamic model keeps the kernel call."""
    from irbuilder import IRBuilder

    rng = np.random.default_rng(31)
    w1 = rng.standard_normal((16, 24)).astype(np.float32)
    w2 = rng.standard_normal((8, 16)).astype(np.float32)
    bias = rng.standard_normal(16).astype(np.float32)
    x = rng.standard_normal((2, 5, 24)).astype(np.float32)
    for dims, static in (((2, 5, 24), True), ((-1, 5, 24), False)):
        b = IRBuilder(f"linear{static}")
        p = b.parameter("x", dims, "f32")
        rows = (dims[0], 5)
        (h,) = b.layer("MatMul", [p, b.const(w1)], [(rows + (16,), "f32")], {"transpose_b": True}, version="opset1")
        (h,) = b.layer("Add", [h, b.const(bias)], [(rows + (16,), "f32")], version="opset1")
        (h,) = b.layer("Relu", [h], [(rows + (16,), "f32")], version="opset1")
        (y,) = b.layer("MatMul", [h, b.const(w2)], [(rows + (8,), "f32")], {"transpose_b": True}, version="opset1",
                       names=["y"])
        b.result(y)
        m = irnorm.load(b.save(tmp_path / str(static)))
        assert m._plan.source.count("= fast") == (2 if static else 0)
        want = np.maximum(x @ w1.T + bias, 0) @ w2.T
        for _ in range(2):  # planned on the first run, the bound path after
            got = m.run({"x": x})["y"]
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(got, m.run({"x": x}, profile=True)["y"])


@pytest.mark.parametrize("rows", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_narrow_linear_as_dot_products(rows, dtype):
    """A product of at most NARROW_ROWS rows by a constant weight (a classifier head, one token) runs as
    dot products against the weight's [N, K] rows (kernels/linear.py narrow_linear): the float64
    product's values to rounding; its columns split over threads give the same bits as one range; the
    bias, the residual and the activation are the Add / Add / activation layers' operations in order."""
    from irnorm.kernels import activation
    from irnorm.kernels.linear import (
        NARROW_PARALLEL_MIN,
        NARROW_ROWS,
        linear_plan,
        narrow_linear,
        narrow_linear_parallel,
    )

    assert rows <= NARROW_ROWS
    rng = np.random.default_rng(rows)
    depth, n = 2100, 1003  # rows * K * N over NARROW_PARALLEL_MIN: the split path; N not a multiple of anything
    assert rows * depth * n >= NARROW_PARALLEL_MIN
    a = rng.standard_normal((rows, depth)).astype(dtype)
    weight = rng.standard_normal((n, depth)).astype(dtype)  # as exported: [N, K], transpose_b
    bias = rng.standard_normal(n).astype(dtype)
    res = rng.standard_normal((rows, n)).astype(dtype)
    exact = a.astype(np.float64) @ weight.T.astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-12

    bare = np.empty((rows, n), dtype)
    linear_plan(rows, weight.T, None)(a, bare)  # B as the transposed view of the weight: no copy
    np.testing.assert_allclose(bare, exact, rtol=tol, atol=tol * np.sqrt(depth))
    k = activation._K64 if dtype == np.float64 else activation._K32
    zero = dtype(0)
    for tasks in (2, 3, 7):
        split = np.empty((rows, n), dtype)
        narrow_linear_parallel(a, weight, split, np.zeros((0, 1), dtype), np.zeros(0, dtype), -1, zero, zero, k, tasks)
        np.testing.assert_array_equal(split, bare)
    one = np.empty((rows, n), dtype)
    narrow_linear(a, weight, one, np.zeros((0, 1), dtype), np.zeros(0, dtype), -1, zero, zero, k)
    np.testing.assert_array_equal(one, bare)

    for code in (-1, activation.RELU, activation.GELU_ERF):
        got = np.empty((rows, n), dtype)
        linear_plan(rows, np.ascontiguousarray(weight.T), activation.Epilogue(bias, code, 0.0, 0.0, False),
                    lambda: weight)(a, got)
        np.testing.assert_array_equal(got, activation.bias_activation_last(bare.copy(), bias, code))
    got = np.empty((rows, n), dtype)
    linear_plan(rows, weight.T, activation.Epilogue(bias, -1, 0.0, 0.0, True))(a, got, res)
    np.testing.assert_array_equal(got, (bare + bias) + res)


def test_narrow_linear_in_a_model(tmp_path):
    """A one-row linear layer with its bias, a residual and a Relu after (a classifier head on one image)
    through the loaded model: the float64 reference's values, the same result on every run and from the
    unfused plan's layers to rounding."""
    from irbuilder import IRBuilder

    rng = np.random.default_rng(5)
    w1 = rng.standard_normal((640, 900)).astype(np.float32)
    w2 = rng.standard_normal((900, 640)).astype(np.float32)  # not transposed: [K, N]
    bias = rng.standard_normal(640).astype(np.float32)
    x = rng.standard_normal((1, 900)).astype(np.float32)
    b = IRBuilder("head")
    p = b.parameter("x", (1, 900), "f32")
    (h,) = b.layer("MatMul", [p, b.const(w1)], [((1, 640), "f32")], {"transpose_b": True}, version="opset1")
    (h,) = b.layer("Add", [h, b.const(bias)], [((1, 640), "f32")], version="opset1")
    (r,) = b.layer("Relu", [h], [((1, 640), "f32")], version="opset1")
    (y,) = b.layer("MatMul", [p, b.const(w2)], [((1, 640), "f32")], version="opset1")
    (y,) = b.layer("Add", [y, r], [((1, 640), "f32")], version="opset1", names=["y"])
    b.result(y)
    xml = b.save(tmp_path / "head")
    m, unfused = irnorm.load(xml), irnorm.load(xml, fuse=False)
    x64 = x.astype(np.float64)
    want = x64 @ w2 + np.maximum(x64 @ w1.T + bias, 0)
    first = m.run({"x": x})["y"]
    np.testing.assert_allclose(first, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(first, unfused.run({"x": x})["y"], rtol=1e-5, atol=1e-4)
    for _ in range(2):
        np.testing.assert_array_equal(m.run({"x": x})["y"], first)


@pytest.mark.parametrize("rows, n, laid_out", [(176, 1536, True), (2, 1536, False), (-1, 512, True), (-1, 1536, False)])
def test_transposed_weight_kept_once_in_row_major_layout(tmp_path, rows, n, laid_out):
    """A transpose_b weight [N, K] (how exports write linear layers) above the old 1M-element cut, by an A of more
    rows than weight_rows_linear takes (test_large_exported_weight_read_in_place): laid out once
    as [K, N] for the GEMM kernels, and the model then holds the weight in that copy alone -- the checked
    graph's constant is the copy's transposed view, with the file's values -- while a product of a few rows
    known at load time reads the [N, K] original, and so does a dynamic A against a weight above
    DYNAMIC_LAYOUT_MAX (a one-token call would need the [N, K] rows too).  Same values as the float64
    reference, from the fused and the unfused plans."""
    from irnorm.ops.matmul import DYNAMIC_LAYOUT_MAX

    rng = np.random.default_rng(11)
    k = 768
    assert (n * k > DYNAMIC_LAYOUT_MAX) == (n == 1536)
    w = rng.standard_normal((n, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    from irbuilder import IRBuilder

    b = IRBuilder("linear")
    p = b.parameter("x", (rows, k), "f32")
    (h,) = b.layer("MatMul", [p, b.const(w, "w")], [((rows, n), "f32")], {"transpose_b": True}, version="opset1")
    (y,) = b.layer("Add", [h, b.const(bias)], [((rows, n), "f32")], version="opset1", names=["y"])
    b.result(y)
    xml = b.save(tmp_path / "linear")
    m = irnorm.load(xml)
    const = next(nd for nd in m.graph.nodes if nd.op_type == "Const" and nd.outputs[0].shape == (n, k))
    held = const.outputs[0].value
    np.testing.assert_array_equal(held, w)
    if laid_out:
        assert not held.flags.c_contiguous and held.T.flags.c_contiguous  # the [K, N] copy, seen as [N, K]
    else:
        assert held.flags.c_contiguous
    for m_rows in ((16, 1) if rows < 0 else (rows,)):  # a dynamic A: many rows, then one
        x = rng.standard_normal((m_rows, k)).astype(np.float32)
        want = x.astype(np.float64) @ w.T.astype(np.float64) + bias
        got = m.run({"x": x})["y"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(irnorm.load(xml, fuse=False).run({"x": x})["y"], got, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("seed", range(3))
def test_weight_rows_kernel_against_the_laid_out_product(seed, monkeypatch):
    """kernels/linear.py's weight_rows_linear (out^T = W @ A^T with the exported [N, K] weight read in place,
    A^T laid out per call, out written back transposed): on random shapes -- rows across the admitted range, N
    and K leaving partial weight chunks, panels and tiles -- and every epilogue form (bias, activation,
    residual), the bits of the [K, N] path (linear_plan on the weight laid out) and float64's values to
    rounding, each from a fresh plan's first call (its stages must not overlap: a fused loop once read A^T
    before it was written)."""
    from irnorm.kernels import activation, linear, microgemm

    monkeypatch.setattr(linear, "WEIGHT_ROWS_MIN_WEIGHT", 0)  # (a speed threshold) small weights take it too
    rng = np.random.default_rng(300 + seed)
    for trial in range(6):
        rows = int(rng.integers(linear.WEIGHT_ROWS_MIN_ROWS, linear.WEIGHT_ROWS_MAX_ROWS + 1))
        n, depth = int(rng.integers(1, 300)), int(rng.integers(1, 900))
        w = rng.standard_normal((n, depth)).astype(np.float32)
        a = rng.standard_normal((rows, depth)).astype(np.float32)
        bias = rng.standard_normal(n).astype(np.float32)
        res = rng.standard_normal((rows, n)).astype(np.float32)
        for epi, extra in ((None, ()), (activation.Epilogue(bias, -1, 0.0, 0.0, False), ()),
                           (activation.Epilogue(bias, activation.GELU_ERF, 0.0, 0.0, False), ()),
                           (activation.Epilogue(bias, -1, 0.0, 0.0, True), (res,))):
            run = linear.weight_rows_plan(rows, w, epi)
            if not microgemm.ENABLED:  # AVX2: irnorm's GEMM kernels do not run, nor does this path
                assert run is None
                return
            got = np.full((rows, n), np.nan, np.float32)
            run(a, got, *extra)
            laid = np.empty((rows, n), np.float32)
            with monkeypatch.context() as mp:
                mp.setattr(linear, "LINEAR_ONE_CALL_MAX", 1 << 40)  # the one-call [K, N] path at every size
                other = linear.linear_plan(rows, np.ascontiguousarray(w.T), epi)
            if other is not None:
                other(a, laid, *extra)
                np.testing.assert_array_equal(got, laid, err_msg=f"{rows}x{depth} @ {depth}x{n}, trial {trial}")
            want = a.astype(np.float64) @ w.T.astype(np.float64)
            if epi is not None:
                want = want + bias
                if epi.residual:
                    want = want + res
                elif epi.code >= 0:
                    want = activation.bias_activation_last(want, None, epi.code)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(depth))
    assert linear.weight_rows_plan(4, w, None) is None  # NARROW_ROWS and below: the dot products
    assert linear.weight_rows_plan(linear.WEIGHT_ROWS_MAX_ROWS + 1, w, None) is None
    assert linear.weight_rows_plan(rows, np.asfortranarray(w), None) is None or w.shape[0] == 1 or w.shape[1] == 1


@pytest.mark.parametrize("rows", [8, 37, 128, -1])
@pytest.mark.parametrize("epilogue", ["none", "bias_gelu", "bias_residual"])
def test_large_exported_weight_read_in_place(tmp_path, monkeypatch, rows, epilogue):
    """A linear layer's exported weight [N, K] (transpose_b) of at least WEIGHT_ROWS_MIN_WEIGHT elements by an A
    of WEIGHT_ROWS_MIN_ROWS..WEIGHT_ROWS_MAX_ROWS rows, where irnorm's GEMM kernels run: the product reads the
    weight in place (weight_rows_linear), the model holds the file's [N, K] array (no [K, N] copy); a dynamic A
    too, for calls of rows in that range (one row: the dot products; 300 rows: the other paths), its weight above
    DYNAMIC_LAYOUT_MAX kept as it is.  Fused and unfused, the float64 reference's values, and the bits of the
    same model with the path switched off (weights laid out as [K, N])."""
    from irbuilder import IRBuilder

    from irnorm.kernels import linear, microgemm
    from irnorm.ops.matmul import DYNAMIC_LAYOUT_MAX

    calls = []
    orig = linear.weight_rows_linear
    monkeypatch.setattr(linear, "weight_rows_linear", lambda *a: calls.append(a[6]) or orig(*a))  # (its rows)
    rng = np.random.default_rng(rows + len(epilogue))
    k, n = 512, 2100  # 1.05M elements: above DYNAMIC_LAYOUT_MAX (kept as it is for a dynamic A)
    assert n * k > DYNAMIC_LAYOUT_MAX and n * k >= linear.WEIGHT_ROWS_MIN_WEIGHT
    w = rng.standard_normal((n, k)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    b = IRBuilder("linear")
    x = b.parameter("x", (rows, k), "f32")
    (h,) = b.layer("MatMul", [x, b.const(w, "w")], [((rows, n), "f32")], {"transpose_b": True}, version="opset1")
    if epilogue != "none":
        (h,) = b.layer("Add", [h, b.const(bias)], [((rows, n), "f32")], version="opset1")
    if epilogue == "bias_gelu":
        (h,) = b.layer("Gelu", [h], [((rows, n), "f32")], version="opset7")
    if epilogue == "bias_residual":
        r = b.parameter("r", (rows, n), "f32")
        (h,) = b.layer("Add", [h, r], [((rows, n), "f32")], version="opset1")
    b.result(h)
    xml = b.save(tmp_path / "linear")
    m = irnorm.load(xml)
    held = next(nd for nd in m.graph.nodes if nd.op_type == "Const" and nd.outputs[0].shape == (n, k)).outputs[0].value
    np.testing.assert_array_equal(held, w)
    with monkeypatch.context() as mp:
        mp.setattr(linear, "WEIGHT_ROWS_MIN_ROWS", 1 << 40)  # the path off: the [K, N] layout (static A)
        laid = irnorm.load(xml)
        laid_held = next(nd for nd in laid.graph.nodes if nd.op_type == "Const"
                         and nd.outputs[0].shape == (n, k)).outputs[0].value
        sizes = (8, 1, 300) if rows < 0 else (rows,)
        laid_out = {s: laid.run({"x": np.zeros((s, k), np.float32),
                                 **({"r": np.zeros((s, n), np.float32)} if epilogue == "bias_residual" else {})})
                    for s in sizes}  # plans are made on first calls: while the path is off
    assert laid_held.flags.c_contiguous == (rows < 0)  # static: the [K, N] copy; dynamic: as it is
    takes = microgemm.ENABLED  # AVX2: irnorm's GEMM kernels do not run, nor does this path
    assert held.flags.c_contiguous == (takes or rows < 0)
    unfused = irnorm.load(xml, fuse=False)
    for s in sizes:
        xs = rng.standard_normal((s, k)).astype(np.float32)
        feeds = {"x": xs}
        want = xs.astype(np.float64) @ w.T.astype(np.float64)
        if epilogue != "none":
            want = want + bias
        if epilogue == "bias_gelu":
            want = R.gelu(want)
        if epilogue == "bias_residual":
            feeds["r"] = rng.standard_normal((s, n)).astype(np.float32)
            want = want + feeds["r"]
        before = len(calls)
        got = m.run(feeds)
        got = next(iter(got.values()))
        assert (len(calls) > before) == (takes and linear.WEIGHT_ROWS_MIN_ROWS <= s <= linear.WEIGHT_ROWS_MAX_ROWS), s
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.sqrt(k))
        other = next(iter(laid.run(feeds).values()))
        if rows > 0 or not takes:  # the same GEMM kernels on the [K, N] copy: the same bits
            np.testing.assert_array_equal(got, other)
        else:  # a dynamic A's weight stays [N, K]: with the path off, OpenBLAS on its transposed view
            np.testing.assert_allclose(got, other, rtol=1e-5, atol=1e-5 * np.sqrt(k))
        np.testing.assert_allclose(next(iter(unfused.run(feeds).values())), got, rtol=1e-5, atol=1e-5 * np.sqrt(k))
    assert laid_out  # (the first calls above ran with the path off)
