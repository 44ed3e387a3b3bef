"""Bucketize-3, SearchSorted-15 and Inverse-14 beyond the conformance rows: against OpenVINO's CPU plugin
(skipped without OpenVINO) and the float64 reference over random shapes, attributes and element types
(mixed ones for Bucketize), dynamic dims, ties, NaN and inf, empty and single-element tensors, singular
matrices, and malformed layers or inputs -> coded errors (never a traceback)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import element_type, expect_error, single_op_model
from ovutil import HAVE_OPENVINO, compare_with_openvino, ov_run, requires_openvino, save

import irnorm
from irnorm import reference as R
from irnorm.ops.bucketing import search_1d, search_rows

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset3 as op3
    import openvino.opset14 as op14
    import openvino.opset15 as op15

BF16 = np.dtype(ml_dtypes.bfloat16)
NUMERIC = (np.float32, np.float16, np.float64, BF16, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
           np.int64, np.uint64)


def _model(type_, version, inputs, attrs=None, rank=None, out_et="dynamic"):
    """One layer whose output dims and type are left for irnorm to infer (declared dynamic)."""
    return single_op_model(type_, inputs, [([-1] * (rank or 0), out_et)], attrs, name=type_, version=version)


def _param(name, arr, dynamic=False):
    return (f"param:{name}", ([-1] * arr.ndim if dynamic else list(arr.shape), element_type(arr.dtype)))


def _load(b, tmp_path, name="m"):
    return irnorm.load(b.save(tmp_path / name))


def _ov_param(arr, name, dynamic=False):
    t = ov.Type.bf16 if arr.dtype == BF16 else arr.dtype
    return op1.parameter(ov.PartialShape([-1] * arr.ndim if dynamic else list(arr.shape)), t, name=name)


def _ov_save(node, params, tmp_path, name):
    node.output(0).get_tensor().set_names({"y"})
    return save(ov.Model([node], params, name), tmp_path, name)


def _lattice(rng, dims, dt):
    """Quarters in [-3, 3] (integers in [-12, 12]; unsigned [0, 24]): exact in every type, many ties."""
    k = np.asarray(rng.integers(-12, 13, dims))
    dt = np.dtype(dt)
    if dt.kind == "u":
        return (k + 12).astype(dt)
    return np.asarray(k.astype(dt) if dt.kind == "i" else (k / 4).astype(dt))


# ---- the spec's examples and the attribute -> side mapping ---------------------------------------------


@pytest.mark.parametrize("right,expected", [(True, [[1, 3], [2, 0]]), (False, [[1, 3], [3, 0]])])
def test_bucketize_spec_example(tmp_path, right, expected):
    """Spec: [[3, 50], [10, -1]] in [0, 5, 10] with the right bound gives [[1, 3], [2, 0]]; without it
    10 falls in the bucket it opens."""
    x = np.array([[3, 50], [10, -1]], np.int32)
    b = _model("Bucketize", "opset3", [_param("x", x), ("b", np.array([0, 5, 10], np.int64))],
               {"with_right_bound": right}, rank=2)
    y = _load(b, tmp_path).run({"x": x})["y"]
    assert y.dtype == np.int64 and y.tolist() == expected


def test_bucketize_defaults_and_output_types(tmp_path):
    """Defaults: output_type i64 and with_right_bound true; i32 writes int32."""
    x = np.array([-1, 0, 0.5, 1, 2, 3], np.float32)
    bk = np.array([0, 1, 2], np.float32)
    y = _load(_model("Bucketize", "opset3", [_param("x", x), ("b", bk)], {}, rank=1), tmp_path, "d").run({"x": x})
    assert y["y"].dtype == np.int64 and y["y"].tolist() == [0, 0, 1, 1, 2, 3]
    y = _load(_model("Bucketize", "opset3", [_param("x", x), ("b", bk)], {"output_type": "i32",
                                                                          "with_right_bound": False}, rank=1),
              tmp_path, "i32").run({"x": x})
    assert y["y"].dtype == np.int32 and y["y"].tolist() == [0, 1, 1, 2, 3, 3]


def test_search_sorted_ties_and_rows(tmp_path):
    """right_mode false is count(s < v), true count(s <= v); each row of values in its own row."""
    s = np.array([[0, 1, 1, 2], [10, 20, 20, 30]], np.float32)
    v = np.array([[1, -5, 2, 9], [20, 30, 31, 0]], np.float32)
    for right, exp in ((False, [[1, 0, 3, 4], [1, 3, 4, 0]]), (True, [[3, 0, 4, 4], [3, 4, 4, 0]])):
        b = _model("SearchSorted", "opset15", [_param("s", s), _param("v", v)], {"right_mode": right}, rank=2)
        y = _load(b, tmp_path, str(right)).run({"s": s, "v": v})["y"]
        assert y.dtype == np.int64 and y.tolist() == exp


# ---- NaN, inf, -0.0 --------------------------------------------------------------------------------------


def test_nan_inf_and_signed_zero_positions(tmp_path):
    """NaN -> 0, except Bucketize without the right bound: len(buckets) (OpenVINO's lower/upper_bound);
    -0.0 ties with 0.0; +-inf at the ends."""
    x = np.array([-np.inf, -0.0, 0.0, 1, np.inf, np.nan], np.float32)
    bk = np.array([0, 1, 2], np.float32)
    for right, exp in ((True, [0, 0, 0, 1, 3, 0]), (False, [0, 1, 1, 2, 3, 3])):
        b = _model("Bucketize", "opset3", [_param("x", x), ("b", bk)], {"with_right_bound": right}, rank=1)
        assert _load(b, tmp_path, f"b{right}").run({"x": x})["y"].tolist() == exp
        assert R.bucketize(x, bk, right).tolist() == exp
    for right, exp in ((False, [0, 0, 0, 1, 3, 0]), (True, [0, 1, 1, 2, 3, 0])):
        b = _model("SearchSorted", "opset15", [("s", bk), _param("v", x)], {"right_mode": right}, rank=1)
        assert _load(b, tmp_path, f"s{right}").run({"v": x})["y"].tolist() == exp
        assert R.search_sorted(bk, x, right).tolist() == exp


@requires_openvino
@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16])
def test_nan_inf_positions_match_openvino(tmp_path, dt):
    x = np.array([[-np.inf, -0.0, 0.0, 1, np.inf, np.nan], [0.5, 2, 2.5, np.nan, -1, 1]], dt)
    bk = np.array([0, 1, 2], dt)
    for right in (True, False):
        px, pb = _ov_param(x, "x"), _ov_param(bk, "b")
        xml = _ov_save(op3.bucketize(px, pb, "i64", right), [px, pb], tmp_path, f"b{right}")
        compare_with_openvino(xml, {"x": x, "b": bk})
        ps, pv = _ov_param(np.stack([bk, bk]), "s"), _ov_param(x, "v")
        xml = _ov_save(op15.search_sorted(ps, pv, right), [ps, pv], tmp_path, f"s{right}")
        compare_with_openvino(xml, {"s": np.stack([bk, bk]), "v": x})


# ---- element types ---------------------------------------------------------------------------------------


def test_bucketize_mixed_types_compare_exactly(tmp_path):
    """The two types' values are compared exactly: integers past float32's 2**24 against float buckets,
    u64 against signed buckets and the other way round (OpenVINO's CPU plugin compares in float32 and
    mishandles u64 past 2**63: docs/ir-format.md section 12)."""
    cases = [
        (np.array([16777217, 16777216, 16777215, -3], np.int64), np.array([16777216, 16777218], np.float32)),
        (np.array([16777217, 16777216], np.int32), np.array([16777216.0], np.float64)),
        (np.array([1 + 2.0 ** -40, 1.0, 1 - 2.0 ** -40], np.float64), np.array([1.0], np.float32)),
        (np.array([2 ** 63 + 5, 2 ** 64 - 1, 3, 0], np.uint64), np.array([-4, 0, 2 ** 62], np.int64)),
        (np.array([-(2 ** 62), -1, 0, 2 ** 62, 7], np.int64), np.array([0, 7, 2 ** 63, 2 ** 64 - 2], np.uint64)),
        (np.array([2 ** 63 + 5, 2 ** 63], np.uint64), np.array([2 ** 63, 2 ** 63 + 10], np.uint64)),
        (np.array([300, -200, 5], np.int16), np.array([-128, 5, 127], np.int8)),
        (np.array([250, 3], np.uint8), np.array([-1, 3, 255], np.int16)),
    ]
    for k, (x, bk) in enumerate(cases):
        for right in (True, False):
            b = _model("Bucketize", "opset3", [_param("x", x), ("b", bk)], {"with_right_bound": right}, rank=1)
            y = _load(b, tmp_path, f"{k}{right}").run({"x": x})["y"]
            exp = R.bucketize(x, bk, right)
            assert y.tolist() == exp.tolist(), (x, bk, right)
    # the first case by hand: 16777217 > 16777216 exactly
    assert R.bucketize(cases[0][0], cases[0][1], True).tolist() == [1, 0, 0, 0]


@requires_openvino
@pytest.mark.parametrize("seed", range(8))
def test_bucketize_random_types_match_openvino(tmp_path, seed):
    """Any pair of numeric types (OpenVINO's CPU plugin compares in float32: the lattice keeps every value
    exact there), both attributes, both output types, static and dynamic dims, constant or run-time
    buckets (empty ones included)."""
    rng = np.random.default_rng(seed)
    for k in range(6):
        dt, bt = (np.dtype(NUMERIC[int(i)]) for i in rng.integers(len(NUMERIC), size=2))
        x = _lattice(rng, tuple(rng.integers(1, 5, int(rng.integers(0, 4)))), dt)
        bk = np.sort(_lattice(rng, (int(rng.integers(0, 6)),), bt).astype(np.float64)).astype(bt)
        right, ot, dyn = bool(rng.integers(2)), str(rng.choice(["i32", "i64"])), bool(seed % 2)
        const = k % 2 == 0 and bk.size > 0 and bt != BF16  # (opset1.constant takes neither)
        px = _ov_param(x, "x", dyn)
        pb = op1.constant(bk) if const else _ov_param(bk, "b", dyn)
        params = [px] if const else [px, pb]
        xml = _ov_save(op3.bucketize(px, pb, ot, right), params, tmp_path, f"b{k}")
        feeds = {"x": x} | ({} if const else {"b": bk})
        got = compare_with_openvino(xml, feeds)
        assert got["y"].tolist() == R.bucketize(x, bk, right).tolist()


@requires_openvino
@pytest.mark.parametrize("seed", range(8))
def test_search_sorted_random_cases_match_openvino(tmp_path, seed):
    """1-D sequences with values of any rank (scalar included) and [..., M] sequences with rows of values,
    every numeric type, both modes, ties, static and dynamic dims."""
    rng = np.random.default_rng(50 + seed)
    for k in range(6):
        dt = np.dtype(NUMERIC[int(rng.integers(len(NUMERIC)))])
        lead = tuple(int(d) for d in rng.integers(1, 4, int(rng.integers(0, 3))))
        m = int(rng.integers(1, 7))
        one_d = not lead or k % 3 == 0
        s = np.sort(_lattice(rng, (m,) if one_d else lead + (m,), dt).astype(np.float64), -1).astype(dt)
        vd = tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(0, 4)))) if one_d else \
            lead + (int(rng.integers(1, 6)),)
        v = _lattice(rng, vd, dt)
        right, dyn = bool(rng.integers(2)), bool(seed % 2)
        ps, pv = _ov_param(s, "s", dyn), _ov_param(v, "v", dyn)
        xml = _ov_save(op15.search_sorted(ps, pv, right), [ps, pv], tmp_path, f"s{k}")
        got = compare_with_openvino(xml, {"s": s, "v": v})
        assert got["y"].tolist() == R.search_sorted(s, v, right).tolist()


@requires_openvino
def test_search_sorted_output_type_i32_matches_openvino(tmp_path):
    """output_type (i64 default, or i32): OpenVINO 2026.4 writes and reads it (its Python builder has no
    parameter for it), so the model is written here and both run that file."""
    rng = np.random.default_rng(3)
    s = np.sort(_lattice(rng, (3, 5), np.float32), -1)
    v = _lattice(rng, (3, 4), np.float32)
    for right in (False, True):
        b = single_op_model("SearchSorted", [("param:s", ((3, 5), "f32")), ("param:v", ((3, 4), "f32"))],
                            [((3, 4), "i32")], {"right_mode": right, "output_type": "i32"}, version="opset15")
        xml = b.save(tmp_path, f"ss{right}")
        got = compare_with_openvino(xml, {"s": s, "v": v})
        assert got["y"].dtype == np.int32 and got["y"].tolist() == R.search_sorted(s, v, right).tolist()


# ---- rows, edge sizes ----------------------------------------------------------------------


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.float16, BF16, np.int8, np.uint8, np.int64, np.uint64])
def test_search_rows_matches_a_row_by_row_search(dt):
    """search_rows equals a float64 numpy.searchsorted row by row, ties, repeated values, negative values and
    -0.0 included, for every row count."""
    rng = np.random.default_rng(9)
    for r, m, k in ((1, 5, 3), (7, 1, 4), (50, 9, 13), (300, 4, 2), (4, 30, 1)):
        s = np.sort(_lattice(rng, (r, m), dt).astype(np.float64), -1).astype(dt)
        v = _lattice(rng, (r, k), dt)
        if np.dtype(dt).kind == "f":
            v[v == 0] = -0.0
        for side in ("left", "right"):
            exp = np.stack([np.searchsorted(s[i].astype(np.float64), v[i].astype(np.float64), side)
                            for i in range(r)])
            assert np.array_equal(search_rows(s, v, side), exp), (r, m, k, side)


def test_search_1d_empty_sequence_and_empty_values():
    assert search_1d(np.zeros(0, np.float32), np.ones((2, 3), np.float32), "left").tolist() == [[0] * 3] * 2
    assert search_1d(np.ones(3, np.int32), np.zeros((0, 2), np.int32), "right").shape == (0, 2)
    assert search_rows(np.zeros((2, 0), np.float32), np.ones((2, 3), np.float32), "right").tolist() == [[0] * 3] * 2


def test_empty_tensors_and_scalars(tmp_path):
    """Empty buckets or sequence -> 0 (the spec; OpenVINO's CPU plugin returns uninitialised memory for an
    empty SearchSorted sequence); empty data -> empty output; scalar data and scalar values."""
    x = np.array([[-1, 0.5], [2, np.nan]], np.float32)
    for right in (True, False):
        b = _model("Bucketize", "opset3", [_param("x", x, True), _param("b", np.zeros(0, np.float32), True)],
                   {"with_right_bound": right}, rank=2)
        assert _load(b, tmp_path, f"eb{right}").run({"x": x, "b": np.zeros(0, np.float32)})["y"].tolist() == \
            [[0, 0], [0, 0]]
    b = _model("SearchSorted", "opset15", [_param("s", np.zeros((2, 0), np.float32), True), _param("v", x, True)],
               {"right_mode": True}, rank=2)
    assert _load(b, tmp_path, "es").run({"s": np.zeros((2, 0), np.float32), "v": x})["y"].tolist() == [[0, 0], [0, 0]]
    b = _model("Bucketize", "opset3", [_param("x", x, True), ("b", np.array([0.0, 1.0], np.float32))], rank=2)
    assert _load(b, tmp_path, "ed").run({"x": np.zeros((0, 3), np.float32)})["y"].shape == (0, 3)
    b = _model("Bucketize", "opset3", [_param("x", np.float32(0.5)), ("b", np.array([0.0, 1.0], np.float32))])
    y = _load(b, tmp_path, "sc").run({"x": np.array(0.5, np.float32)})["y"]
    assert y.shape == () and int(y) == 1
    b = _model("SearchSorted", "opset15", [("s", np.array([0.0, 1.0], np.float32)), _param("v", np.float32(1.0))],
               {"right_mode": True})
    y = _load(b, tmp_path, "sv").run({"v": np.array(1.0, np.float32)})["y"]
    assert y.shape == () and int(y) == 2
    for right, exp in ((True, 0), (False, 2)):  # a NaN scalar
        b = _model("Bucketize", "opset3", [_param("x", np.float32(0.5)), ("b", np.array([0.0, 1.0], np.float32))],
                   {"with_right_bound": right})
        y = _load(b, tmp_path, f"nan{right}").run({"x": np.array(np.nan, np.float32)})["y"]
        assert y.shape == () and int(y) == exp
    b = _model("SearchSorted", "opset15", [("s", np.array([0.0, 1.0], np.float32)), _param("v", np.float32(1.0))],
               {"right_mode": True})
    y = _load(b, tmp_path, "svnan").run({"v": np.array(np.nan, np.float32)})["y"]
    assert y.shape == () and int(y) == 0
    b = _model("Bucketize", "opset3", [_param("x", np.int64(0)), ("b", np.array([0, 2 ** 63], np.uint64))])
    y = _load(b, tmp_path, "su").run({"x": np.array(-1, np.int64)})["y"]
    assert y.shape == () and int(y) == 0


# ---- unsorted boundaries ---------------------------------------------------------------------------------


def test_unsorted_constant_boundaries_are_refused_at_load(tmp_path):
    """OpenVINO returns whatever its binary search stumbles on; irnorm refuses (IRN032 for a constant)."""
    x = ((4,), "f32")
    expect_error(single_op_model("Bucketize", [("param:x", x), ("b", np.array([0, 2, 1], np.float32))],
                                 [((4,), "i64")], {}, version="opset3"), tmp_path / "a", "IRN032", "sorted",
                 "[1] (2.0) is greater than element [2] (1.0)")
    expect_error(single_op_model("Bucketize", [("param:x", x), ("b", np.array([0, np.nan], np.float32))],
                                 [((4,), "i64")], {}, version="opset3"), tmp_path / "b", "IRN032", "NaN")
    expect_error(single_op_model("SearchSorted", [("s", np.array([[0, 1], [3, 2]], np.int32)),
                                                  ("param:v", ((2, 4), "i32"))],
                                 [((2, 4), "i64")], {}, version="opset15"), tmp_path / "c", "IRN032",
                 "element [1, 0] (3) is greater than element [1, 1] (2)")


def test_unsorted_run_time_boundaries_are_coded(tmp_path):
    x = np.zeros(3, np.float32)
    m = _load(_model("Bucketize", "opset3", [_param("x", x), _param("b", np.zeros(3, np.float32), True)], rank=1),
              tmp_path, "b")
    assert m.run({"x": x, "b": np.array([1, 1, 2], np.float32)})["y"].tolist() == [0, 0, 0]  # ties are fine
    for bad in ([1, 0, 2], [0, np.nan, 1], [np.nan]):
        with pytest.raises(irnorm.InputError) as e:
            m.run({"x": x, "b": np.array(bad, np.float32)})
        assert e.value.code == "IRN064" and "sorted" in e.value.diagnostics[0].message
    m = _load(_model("SearchSorted", "opset15", [_param("s", np.zeros((2, 3), np.int64), True),
                                                 _param("v", np.zeros((2, 2), np.int64), True)], rank=2),
              tmp_path, "s")
    with pytest.raises(irnorm.InputError) as e:
        m.run({"s": np.array([[0, 1, 2], [5, 4, 6]]), "v": np.zeros((2, 2), np.int64)})
    assert e.value.code == "IRN064" and "element [1, 0] (5) is greater than element [1, 1] (4)" in str(e.value)


def test_run_time_shapes_that_do_not_fit_are_coded(tmp_path):
    m = _load(_model("SearchSorted", "opset15", [_param("s", np.zeros((2, 3), np.float32), True),
                                                 _param("v", np.zeros((2, 2), np.float32), True)], rank=2),
              tmp_path, "s")
    with pytest.raises(irnorm.InputError) as e:
        m.run({"s": np.zeros((2, 3), np.float32), "v": np.zeros((3, 2), np.float32)})
    assert e.value.code in ("IRN064", "IRN061")
    m = _load(_model("Inverse", "opset14", [_param("x", np.zeros((2, 3, 3), np.float32), True)], rank=3),
              tmp_path, "i")
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.zeros((2, 3, 4), np.float32)})
    assert e.value.code == "IRN064" and "square" in str(e.value)


# ---- shape inference -------------------------------------------------------------------------------------


def test_search_sorted_shape_rule(tmp_path):
    """Output = values' shape, leading dims merged with the sequence's; values of unknown rank give the
    sequence's leading dims and a dynamic last dim (a 1-D sequence: unknown rank), as OpenVINO infers."""
    from irnorm.ops.base import NodeContext, TensorInfo, lookup

    op = lookup("SearchSorted", "opset15")()
    attrs = {"right_mode": False, "output_type": "i64"}

    def infer(s, v):
        return op.infer(NodeContext(None, attrs, [TensorInfo(s, "f32"), TensorInfo(v, "f32")], 1))[0].shape

    assert infer((-1, 3), (2, 5)) == (2, 5)
    assert infer((2, -1), (-1, 5)) == (2, 5)
    assert infer((2, 3), None) == (2, -1)
    assert infer((3,), None) is None
    assert infer((3,), ()) == ()
    assert infer(None, (2, 3)) == (2, 3)


# ---- Inverse ---------------------------------------------------------------------------------------------


def _well_conditioned(rng, dims, dt):
    n = dims[-1]
    return (rng.standard_normal(dims) + n * np.eye(n)).astype(dt)


@requires_openvino
@pytest.mark.parametrize("seed", range(6))
def test_inverse_random_cases_match_openvino(tmp_path, seed):
    """Batched [..., N, N] of every float type, both adjoint values, static and dynamic dims."""
    rng = np.random.default_rng(200 + seed)
    for k, dt in enumerate((np.float32, np.float16, BF16, np.float64)):
        n = int(rng.integers(1, 7))
        dims = tuple(int(d) for d in rng.integers(1, 4, int(rng.integers(0, 3)))) + (n, n)
        x = _well_conditioned(rng, dims, dt)
        adjoint = bool(rng.integers(2))
        p = _ov_param(x, "x", bool(seed % 2))
        xml = _ov_save(op14.inverse(p, adjoint), [p], tmp_path, f"i{k}")
        got = compare_with_openvino(xml, {"x": x}, tol=(2e-5, 2e-5) if dt == np.float64 else None)
        exp = R.inverse(x, adjoint)
        tol = {np.dtype(np.float32): 1e-5, np.dtype(np.float64): 1e-12}.get(np.dtype(dt), 1e-2)
        np.testing.assert_allclose(got["y"].astype(np.float64), exp, rtol=tol, atol=tol)


@requires_openvino
def test_inverse_adjoint_is_the_transpose_as_openvino_computes(tmp_path):
    """adjoint gives (A^-1)^T (the spec; OpenVINO 2026.4's CPU plugin agrees), not det(A) * A^-1."""
    a = np.array([[1, 2], [3, 4]], np.float32)
    p = _ov_param(a, "x")
    got = compare_with_openvino(_ov_save(op14.inverse(p, True), [p], tmp_path, "adj"), {"x": a})
    np.testing.assert_allclose(got["y"], [[-2, 1.5], [1, -0.5]], rtol=1e-6)


def test_inverse_edge_sizes(tmp_path):
    """N = 1 is the reciprocal (0 -> NaN: singular); an empty batch and N = 0 give empty outputs."""
    m = _load(_model("Inverse", "opset14", [_param("x", np.zeros((3, 1, 1), np.float32), True)], rank=3), tmp_path)
    y = m.run({"x": np.array([[[4.0]], [[0.0]], [[-2.0]]], np.float32)})["y"]
    assert y[0, 0, 0] == 0.25 and np.isnan(y[1, 0, 0]) and y[2, 0, 0] == -0.5
    for shape in ((0, 3, 3), (2, 0, 0)):
        y = m.run({"x": np.zeros(shape, np.float32)})["y"]
        assert y.shape == shape and y.dtype == np.float32


SINGULAR = [np.array([[1, 2], [2, 4]]), np.zeros((2, 2)), np.array([[1, 2], [0, 0]]), np.array([[0, 1], [0, 3]])]


def test_singular_and_non_finite_matrices_give_nan_the_others_are_inverted(tmp_path):
    """The spec leaves a singular matrix undefined; irnorm gives NaN for that matrix only (the CPU plugin:
    inf/NaN there too).  A matrix holding NaN or inf gives all NaN, as the CPU plugin does."""
    good = np.array([[2, 1], [1, 3]], np.float64)
    bad = SINGULAR + [np.array([[1, np.nan], [0, 1]]), np.array([[np.inf, 1], [0, 1]])]
    x = np.stack([good] + bad + [good.T]).astype(np.float32)
    for adjoint in (False, True):
        m = _load(_model("Inverse", "opset14", [_param("x", x)], {"adjoint": adjoint}, rank=3), tmp_path,
                  str(adjoint))
        y = m.run({"x": x})["y"]
        inv = np.linalg.inv(good)
        np.testing.assert_allclose(y[0], inv.T if adjoint else inv, rtol=1e-6)
        np.testing.assert_allclose(y[-1], inv if adjoint else inv.T, rtol=1e-6)
        assert np.isnan(y[1:-1]).all()
        np.testing.assert_array_equal(np.isnan(R.inverse(x, adjoint)), np.isnan(y))
    y = _load(_model("Inverse", "opset14", [_param("x", x[1])], rank=2), tmp_path, "one").run({"x": x[1]})["y"]
    assert np.isnan(y).all()


@requires_openvino
def test_singular_matrices_are_non_finite_in_openvino_too(tmp_path):
    """Evidence for the documented choice: OpenVINO's CPU plugin gives only inf/NaN for each singular
    matrix (and all NaN for a matrix holding a NaN), and inverts the other matrices of the batch.  (For an
    infinite element it gives NaN, inf or a finite limit depending on where it is: [[inf, 1], [0, 1]] ->
    [[0, 0], [0, 1]] but [[1, inf], [0, 1]] -> NaN; irnorm gives NaN.)"""
    good = np.array([[2, 1], [1, 3]], np.float32)
    x = np.stack([good] + [s.astype(np.float32) for s in SINGULAR] +
                 [np.array([[1, np.nan], [0, 1]], np.float32), np.array([[1, 0], [0, np.nan]], np.float32)])
    p = _ov_param(x, "x")
    exp = ov_run(_ov_save(op14.inverse(p, False), [p], tmp_path, "sing"), {"x": x})["y"]
    got = _load(_model("Inverse", "opset14", [_param("x", x)], rank=3), tmp_path, "m").run({"x": x})["y"]
    np.testing.assert_allclose(got[0], exp[0], rtol=1e-6)
    assert not np.isfinite(exp[1:]).any() and np.isnan(exp[-2:]).all()
    assert np.isnan(got[1:]).all()


# ---- malformed layers ------------------------------------------------------------------------------------


F = ((4,), "f32")


@pytest.mark.parametrize("layer,inputs,outputs,attrs,version,code,fragment", [
    ("Bucketize", [("param:x", F), ("param:b", ((2, 2), "f32"))], [((4,), "i64")], None, "opset3", "IRN032",
     "1-D"),
    ("Bucketize", [("param:x", ((4,), "boolean")), ("param:b", F)], [((4,), "i64")], None, "opset3", "IRN033",
     "data"),
    ("Bucketize", [("param:x", F), ("param:b", ((4,), "boolean"))], [((4,), "i64")], None, "opset3", "IRN033",
     "buckets"),
    ("Bucketize", [("param:x", F), ("param:b", F)], [((4,), "f32")], {"output_type": "f32"}, "opset3", "IRN021",
     "f32"),
    ("Bucketize", [("param:x", F), ("param:b", F)], [((4,), "i64")], {"with_right_bound": "maybe"}, "opset3",
     "IRN021", "bool"),
    ("Bucketize", [("param:x", F), ("param:b", F)], [((4,), "i32")], None, "opset3", "IRN031", "i64"),
    ("SearchSorted", [("param:s", ((), "f32")), ("param:v", F)], [((4,), "i64")], None, "opset15", "IRN032",
     "scalar"),
    ("SearchSorted", [("param:s", ((2, 3), "f32")), ("param:v", ((3, 2, 3), "f32"))], [((3, 2, 3), "i64")], None,
     "opset15", "IRN032", "rank"),
    ("SearchSorted", [("param:s", ((2, 3), "f32")), ("param:v", ((4,), "f32"))], [((4,), "i64")], None,
     "opset15", "IRN032", "rank"),
    ("SearchSorted", [("param:s", ((2, 3), "f32")), ("param:v", ((3, 4), "f32"))], [((3, 4), "i64")], None,
     "opset15", "IRN032", "dim 0"),
    ("SearchSorted", [("param:s", ((1, 3), "f32")), ("param:v", ((2, 4), "f32"))], [((2, 4), "i64")], None,
     "opset15", "IRN032", "dim 0"),
    ("SearchSorted", [("param:s", ((3,), "f32")), ("param:v", ((4,), "i32"))], [((4,), "i64")], None,
     "opset15", "IRN033", "element type"),
    ("SearchSorted", [("param:s", ((3,), "boolean")), ("param:v", ((4,), "boolean"))], [((4,), "i64")], None,
     "opset15", "IRN033", "numeric"),
    ("SearchSorted", [("param:s", ((3,), "f32")), ("param:v", F)], [((4,), "i64")], {"right_mode": "2"},
     "opset15", "IRN021", "bool"),
    ("SearchSorted", [("param:s", ((3,), "f32")), ("param:v", F)], [((4,), "i64")], {"output_type": "u8"},
     "opset15", "IRN021", "u8"),
    ("Inverse", [("param:x", F)], [F], None, "opset14", "IRN032", "2-D"),
    ("Inverse", [("param:x", ((2, 3), "f32"))], [((2, 3), "f32")], None, "opset14", "IRN032", "square"),
    ("Inverse", [("param:x", ((2, 2), "i32"))], [((2, 2), "i32")], None, "opset14", "IRN033", "floating-point"),
    ("Inverse", [("param:x", ((2, 2), "f32"))], [((2, 2), "f32")], {"adjoint": "yes"}, "opset14", "IRN021",
     "bool"),
    ("Inverse", [("param:x", ((2, 2), "f32"))], [((2, 2), "f32")], None, "opset13", "IRN012", ""),
    ("SearchSorted", [("param:s", ((3,), "f32")), ("param:v", F)], [((4,), "i64")], None, "opset14", "IRN012", ""),
    ("Bucketize", [("param:x", F), ("param:b", F)], [((4,), "i64")], None, "opset2", "IRN012", ""),
])
def test_malformed_layers(tmp_path, layer, inputs, outputs, attrs, version, code, fragment):
    expect_error(single_op_model(layer, inputs, outputs, attrs, version=version), tmp_path, code, fragment)


def test_dynamic_dims_infer_and_run(tmp_path):
    """Dynamic [?, ?] Inverse infers [?, ?] and runs any square size; partly known dims merge."""
    m = _load(_model("Inverse", "opset14", [("param:x", ((-1, 3), "f32"))], rank=2), tmp_path, "a")
    assert list(m.outputs[0].shape) == [3, 3]
    x = np.array([[2, 0, 0], [0, 4, 0], [0, 0, 8]], np.float32)
    np.testing.assert_array_equal(m.run({"x": x})["y"], np.diag([0.5, 0.25, 0.125]).astype(np.float32))


@requires_openvino
def test_models_written_by_openvino_validate_and_run_from_the_cli(tmp_path, capsys):
    """A model with all three ops written by openvino.save_model: irnorm.check finds no error, and the CLI's
    validate, info and run accept it."""
    from irnorm.cli import main

    px = op1.parameter(ov.PartialShape([-1, 3, 3]), np.float32, name="x")
    inv = op14.inverse(px, False)
    bk = op3.bucketize(inv, op1.constant(np.array([-0.5, 0.0, 0.5], np.float32)), "i32", False)
    ss = op15.search_sorted(op1.constant(np.array([-1.0, 0.0, 1.0], np.float32)), inv, True)
    for node, name in ((inv, "inv"), (bk, "bk"), (ss, "ss")):
        node.output(0).get_tensor().set_names({name})
    xml = save(ov.Model([inv, bk, ss], [px], "three"), tmp_path, "three")
    assert not [d for d in irnorm.check(xml) if d.severity == "error"]
    for argv in (["validate", str(xml)], ["info", str(xml)], ["run", str(xml)]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        out, err = capsys.readouterr()
        assert e.value.code == 0 and "Traceback" not in out + err, (argv, out, err)
        assert argv[0] != "info" or ("Inverse" in out and "SearchSorted" in out and "Bucketize" in out)
    x = _well_conditioned(np.random.default_rng(0), (2, 3, 3), np.float32)
    compare_with_openvino(xml, {"x": x})
