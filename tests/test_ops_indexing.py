"""ScatterUpdate-3, ScatterElementsUpdate-3/12, GatherND-5/8, OneHot-1/16 beyond the conformance rows
(tests/conformance/indexing.py): the spec's own examples, the shape rules (GatherND-5 vs -8, a run-time
OneHot depth), random cases against OpenVINO's CPU plugin and numpy with dynamic dims and negative
axes, and coded errors for malformed layers and for indices from data that do not fit (never an
out-of-bounds read or write)."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import element_type, expect_error, single_op_model
from ovutil import compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R


def _model(type_, version, inputs, attrs=None, rank=None):
    """One layer whose output dims are left for irnorm to infer (declared dynamic)."""
    return single_op_model(type_, inputs, [([-1] * (rank or 1), "dynamic")], attrs, name=type_, version=version)


def _load(b, tmp_path, name="m"):
    return irnorm.load(b.save(tmp_path / name))


def _param(name, arr, dynamic=False):
    return (f"param:{name}", ([-1] * arr.ndim if dynamic else list(arr.shape), element_type(arr.dtype)))


# ---- the spec's examples ----------------------------------------------------------------------------


@pytest.mark.parametrize("reduction,use_init,indices,expected", [
    ("sum", True, [1, 0, 0, -2, -1, 2], [52, 13, 104, 76]),  # ScatterElementsUpdate-12 spec example 1
    ("sum", False, [1, 0, 0, 2, 3, 2], [50, 10, 100, 70]),  # example 2
    ("prod", True, [1, 0, 0, 2, 3, 2], [1200, 30, 9600, 420]),
    ("max", False, [1, 0, 0, 2, 3, 2], [30, 10, 60, 70]),
    ("min", True, [1, 0, 0, 2, 3, 2], [2, 3, 4, 6]),
    ("mean", True, [1, 0, 0, 2, 3, 2], [17.333333, 6.5, 34.666668, 38]),
    ("mean", False, [1, 0, 0, 2, 3, 2], [25, 10, 50, 70]),
    ("none", True, [1, 0, 3, 2, -3, -4], [60, 70, 40, 30]),  # duplicates: the last update wins
])
def test_scatter_elements_spec_examples(tmp_path, reduction, use_init, indices, expected):
    x = np.array([2, 3, 4, 6], np.float32)
    upd = np.array([10, 20, 30, 40, 70, 60], np.float32)
    b = _model("ScatterElementsUpdate", "opset12", [_param("x", x), _param("i", np.zeros(6, np.int64)),
                                                    _param("u", upd), ("axis", np.array([0]))],
               {"reduction": reduction, "use_init_val": use_init})
    y = _load(b, tmp_path).run({"x": x, "i": np.array(indices), "u": upd})["y"]
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    if reduction != "none":  # the float64 oracle agrees
        np.testing.assert_allclose(y, R.scatter_elements_update(x, indices, upd, 0, reduction, use_init), rtol=1e-6)


def test_scatter_elements_integer_mean_rounds_down(tmp_path):
    """The spec rounds an integer mean towards -inf; OpenVINO's CPU plugin truncates (docs/ir-format.md §12),
    so this is checked against the spec only."""
    for dt in ("i32", "i64"):
        x = np.array([0, 0, 1, 7], np.dtype(dt.replace("i", "int")))
        upd = np.array([-5, 5, 2, -2], x.dtype)
        b = _model("ScatterElementsUpdate", "opset12", [_param("x", x), _param("i", np.zeros(4, np.int64)),
                                                        _param("u", upd), ("axis", np.array(0))],
                   {"reduction": "mean", "use_init_val": True})
        y = _load(b, tmp_path, dt).run({"x": x, "i": np.array([0, 1, 1, 3]), "u": upd})["y"]
        assert y.dtype == x.dtype and y.tolist() == [-3, 2, 1, 2]  # -2.5 -> -3, 7/3 -> 2, 2.5 -> 2


def test_scatter_elements_booleans_sum_is_or_prod_is_and(tmp_path):
    x = np.array([True, False, True, False])
    upd = np.array([False, True, False, False])
    idx = np.array([0, 1, 2, 3])
    for red, want in (("sum", [True, True, True, False]), ("prod", [False, False, False, False]),
                      ("max", [True, True, True, False]), ("min", [False, False, False, False])):
        b = _model("ScatterElementsUpdate", "opset12", [_param("x", x), ("i", idx), _param("u", upd),
                                                        ("axis", np.array(0))], {"reduction": red})
        assert _load(b, tmp_path, red).run({"x": x, "u": upd})["y"].tolist() == want


def test_gather_nd_5_folds_the_batch_dims_8_keeps_them(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    idx = np.stack([rng.integers(-4, 4, (2, 3, 6))], axis=-1)  # [2, 3, 6, 1], negative indices too
    for version, shape in (("opset5", (6, 6, 5)), ("opset8", (2, 3, 6, 5))):
        for dyn in (False, True):
            b = _model("GatherND", version, [_param("x", x, dyn), _param("i", idx, dyn)], {"batch_dims": 2},
                       rank=len(shape))
            m = _load(b, tmp_path, f"{version}{dyn}")
            if not dyn:
                assert m.outputs[0].shape == shape
            y = m.run({"x": x, "i": idx})["y"]
            exp = np.stack([x[a, c, idx[a, c, :, 0] % 4] for a in range(2) for c in range(3)]).reshape(shape)
            np.testing.assert_array_equal(y, exp)


def test_gather_nd_spec_examples(tmp_path):
    data = np.array([[1, 2], [3, 4]], np.int32)
    for idx, want in (([[0, 0], [1, 0]], [1, 3]), ([[1], [0]], [[3, 4], [1, 2]]),
                      ([[[1]], [[0]]], [[[3, 4]], [[1, 2]]]), ([[-1, -2]], [3])):
        idx = np.array(idx, np.int64)
        b = _model("GatherND", "opset8", [_param("x", data), ("i", idx)], rank=idx.ndim + 1 - idx.shape[-1])
        assert _load(b, tmp_path, f"g{idx.size}{idx.min()}").run({"x": data})["y"].tolist() == want


def test_one_hot_depth_at_run_time_makes_the_axis_dynamic(tmp_path):
    idx = np.array([[0, 2], [-1, 5]], np.int64)
    for version, mode in (("opset1", None), ("opset16", "ignore_negative"), ("opset16", "normalize")):
        attrs = {"axis": -2} | ({"negative_indices_mode": mode} if mode else {})
        b = _model("OneHot", version, [_param("i", idx), _param("d", np.array(3, np.int64)),
                                       ("on", np.array(5.0, np.float32)), ("off", np.array(-1.0, np.float32))], attrs,
                   rank=3)
        m = _load(b, tmp_path, f"{version}{mode}")
        assert m.outputs[0].shape == (2, -1, 2)
        for depth in (1, 3, 6):
            y = m.run({"i": idx, "d": np.array(depth)})["y"]
            exp = R.one_hot(idx, depth, np.float32(5), np.float32(-1), -2, mode == "normalize")
            assert y.dtype == np.float32 and y.shape == (2, depth, 2)
            np.testing.assert_array_equal(y, exp)
    y = m.run({"i": idx, "d": np.array(3)})["y"]  # normalize: -1 -> 2; 5 is out of range: an all-off row
    assert y[1, :, 0].tolist() == [-1, -1, 5] and y[1, :, 1].tolist() == [-1, -1, -1]


def test_one_hot_constant_depth_gives_a_static_axis_and_folds(tmp_path):
    b = _model("OneHot", "opset1", [("i", np.array([1, 0, 3], np.int32)), ("d", np.array([3], np.int64)),
                                    ("on", np.array(1, np.int8)), ("off", np.array(0, np.int8))], {"axis": 0},
               rank=2)
    m = _load(b, tmp_path)
    assert m.outputs[0].shape == (3, 3)
    y = m.run({})["y"]
    assert y.dtype == np.int8 and y.tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 0]]


def test_scatter_update_matches_numpy_on_random_cases(tmp_path):
    rng = np.random.default_rng(3)
    for k in range(10):
        x = rng.standard_normal(tuple(rng.integers(1, 5, rng.integers(1, 4)))).astype(np.float32)
        ax = int(rng.integers(-x.ndim, x.ndim))
        a = ax % x.ndim
        m = int(rng.integers(1, x.shape[a] + 1))
        idx = rng.permutation(x.shape[a])[:m]
        upd = rng.standard_normal(x.shape[:a] + (m,) + x.shape[a + 1:]).astype(np.float32)
        b = _model("ScatterUpdate", "opset3", [_param("x", x, k % 2 == 1), _param("i", idx, k % 2 == 1),
                                               _param("u", upd, k % 2 == 1), ("axis", np.array(ax))], rank=x.ndim)
        y = _load(b, tmp_path, str(k)).run({"x": x, "i": idx, "u": upd})["y"]
        exp = x.copy()
        np.moveaxis(exp, a, 0)[idx] = np.moveaxis(upd, a, 0)
        np.testing.assert_array_equal(y, exp)


# ---- against OpenVINO's CPU plugin --------------------------------------------------------------------


@requires_openvino
@pytest.mark.parametrize("seed", range(6))
def test_random_cases_match_openvino(tmp_path, seed):
    """All four ops on random shapes, negative axes and indices, dynamic dims; with a reduction the
    indices repeat (sum/min/max/prod; float32: order-independent up to rounding)."""
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset8 as op8
    import openvino.opset12 as op12
    import openvino.opset16 as op16

    rng = np.random.default_rng(100 + seed)

    def par(arr, dyn):
        return op1.parameter(ov.PartialShape([-1] * arr.ndim if dyn else list(arr.shape)), arr.dtype)

    dyn = bool(seed % 2)
    # ScatterElementsUpdate-12 with repeated indices and a reduction
    x = rng.standard_normal(tuple(rng.integers(2, 5, 3))).astype(np.float32)
    ax = int(rng.integers(-3, 0))
    ishape = list(x.shape)
    ishape[ax] = 2 * x.shape[ax]
    idx = rng.integers(-x.shape[ax], x.shape[ax], ishape)
    upd = rng.standard_normal(ishape).astype(np.float32)
    red = ["sum", "max", "min", "prod", "mean", "sum"][seed]
    ps = [par(x, dyn), par(idx, dyn), par(upd, dyn)]
    n = op12.scatter_elements_update(*ps, np.int64(ax), red, bool(seed % 3))
    n.get_output_tensor(0).set_names({"y"})
    compare_with_openvino(save(ov.Model([n], ps), tmp_path, "sceu"), {p.get_friendly_name(): v for p, v in
                                                                      zip(ps, (x, idx, upd), strict=True)})
    # GatherND-8 with batch dims
    bd = seed % 3
    x = rng.standard_normal(tuple(rng.integers(1, 4, bd + 2))).astype(np.float32)
    k = int(rng.integers(1, 3))
    lead = x.shape[:bd] + (3,)
    idx = np.stack([rng.integers(-x.shape[bd + j], x.shape[bd + j], lead) for j in range(k)], -1)
    px = par(x, dyn)
    n = op8.gather_nd(px, op1.constant(idx), bd)
    n.get_output_tensor(0).set_names({"y"})
    compare_with_openvino(save(ov.Model([n], [px]), tmp_path, "gnd"), {px.get_friendly_name(): x})
    # OneHot-16 with a negative axis, both modes
    idx = rng.integers(-4, 5, tuple(rng.integers(1, 4, 2)))
    pi = par(idx, dyn)
    mode = "normalize" if seed % 2 else "ignore_negative"
    n = op16.one_hot(pi, np.int64(4), np.float32(2.5), np.float32(-0.5), int(rng.integers(-3, 0)), mode)
    n.get_output_tensor(0).set_names({"y"})
    compare_with_openvino(save(ov.Model([n], [pi]), tmp_path, "oh"), {pi.get_friendly_name(): idx})


# ---- out-of-range indices and sizes from data ----------------------------------------------------------


def _oob_cases():
    x = np.zeros((3, 4), np.float32)
    yield ("ScatterUpdate", "opset3", [_param("x", x), _param("i", np.zeros(1, np.int64)),
                                       _param("u", np.zeros((1, 4), np.float32)), ("axis", np.array(0))],
           None, {"x": x, "u": np.ones((1, 4), np.float32)}, "i", [3, -1, 1 << 40], 2)
    yield ("ScatterElementsUpdate", "opset3", [_param("x", x), _param("i", np.zeros((1, 4), np.int64)),
                                               _param("u", np.zeros((1, 4), np.float32)), ("axis", np.array(-1))],
           None, {"x": x, "u": np.ones((1, 4), np.float32)}, "i", [4, -5, -(1 << 40)], 2)
    yield ("ScatterElementsUpdate", "opset12", [_param("x", x), _param("i", np.zeros((1, 4), np.int64)),
                                                _param("u", np.zeros((1, 4), np.float32)), ("axis", np.array(0))],
           {"reduction": "sum"}, {"x": x, "u": np.ones((1, 4), np.float32)}, "i", [3, -4], 2)
    yield ("GatherND", "opset8", [_param("x", x), _param("i", np.zeros((2, 2), np.int64))], None, {"x": x}, "i",
           [4, -5, 1 << 40], 1)
    yield ("GatherND", "opset5", [_param("x", x), _param("i", np.zeros((2, 1), np.int64))], None, {"x": x}, "i",
           [3, -4], 2)


@pytest.mark.parametrize("case", list(_oob_cases()), ids=lambda c: f"{c[0]}-{c[1]}")
def test_out_of_range_indices_are_coded(tmp_path, case):
    type_, version, inputs, attrs, feeds, key, bads, rank = case
    m = _load(_model(type_, version, inputs, attrs, rank=rank), tmp_path)
    shape = next(s for lbl, (s, _) in inputs if lbl == f"param:{key}")
    ok = np.zeros(shape, np.int64)
    m.run(feeds | {key: ok})
    for bad in bads:
        i = ok.copy()
        i.reshape(-1)[-1] = bad
        with pytest.raises(irnorm.InputError) as e:
            m.run(feeds | {key: i})
        assert e.value.code == "IRN064" and "out of range" in e.value.diagnostics[0].message


def test_run_time_shapes_that_do_not_fit_are_coded(tmp_path):
    x = np.zeros((2, 3), np.float32)
    # ScatterElementsUpdate: indices larger than data off the axis (only known at run time)
    b = _model("ScatterElementsUpdate", "opset3", [_param("x", x, True), _param("i", np.zeros((3, 3), np.int64), True),
                                                   _param("u", np.zeros((3, 3), np.float32), True),
                                                   ("axis", np.array(1))], rank=2)
    with pytest.raises(irnorm.InputError, match="exceed data"):
        _load(b, tmp_path, "se").run({"x": x, "i": np.zeros((3, 3), np.int64), "u": np.zeros((3, 3), np.float32)})
    # ScatterUpdate: updates of the wrong shape
    b = _model("ScatterUpdate", "opset3", [_param("x", x, True), _param("i", np.zeros(2, np.int64), True),
                                           _param("u", np.zeros((2, 2), np.float32), True), ("axis", np.array(1))],
               rank=2)
    with pytest.raises(irnorm.InputError, match="must be"):
        _load(b, tmp_path, "su").run({"x": x, "i": np.array([0, 1]), "u": np.zeros((3, 2), np.float32)})
    # GatherND: batch dims that differ
    b = _model("GatherND", "opset8", [_param("x", x, True), _param("i", np.zeros((2, 1), np.int64), True)],
               {"batch_dims": 1}, rank=1)
    with pytest.raises(irnorm.InputError, match="batch dim"):
        _load(b, tmp_path, "gnd").run({"x": x, "i": np.zeros((3, 1), np.int64)})
    # OneHot: a negative or absurd depth from data
    b = _model("OneHot", "opset1", [_param("i", np.zeros(4, np.int64)), _param("d", np.array(3, np.int64)),
                                    ("on", np.array(1.0, np.float32)), ("off", np.array(0.0, np.float32))],
               {"axis": -1}, rank=2)
    m = _load(b, tmp_path, "oh")
    for depth in (-1, 1 << 40):
        with pytest.raises(irnorm.InputError) as e:
            m.run({"i": np.zeros(4, np.int64), "d": np.array(depth)})
        assert e.value.code == "IRN064"


# ---- malformed layers ---------------------------------------------------------------------------------


F = ((2, 3), "f32")


@pytest.mark.parametrize("layer,inputs,outputs,attrs,version,code,fragment", [
    ("ScatterUpdate", [("param:x", F), ("i", np.array([0])), ("param:u", ((2, 2), "f32")), ("a", np.array(1))],
     [F], None, "opset3", "IRN032", "updates"),
    ("ScatterUpdate", [("param:x", F), ("i", np.array([0])), ("param:u", ((2, 1), "f32")), ("a", np.array(2))],
     [F], None, "opset3", "IRN032", "out of range"),
    ("ScatterUpdate", [("param:x", F), ("i", np.array([0.0])), ("param:u", ((2, 1), "f32")), ("a", np.array(1))],
     [F], None, "opset3", "IRN033", "integer"),
    ("ScatterUpdate", [("param:x", F), ("i", np.array([0])), ("param:u", ((2, 1), "f16")), ("a", np.array(1))],
     [F], None, "opset3", "IRN033", "element type"),
    ("ScatterElementsUpdate", [("param:x", F), ("i", np.zeros((2, 2), np.int64)), ("param:u", ((2, 3), "f32")),
                               ("a", np.array(0))], [F], None, "opset3", "IRN032", "one shape"),
    ("ScatterElementsUpdate", [("param:x", F), ("i", np.zeros((2,), np.int64)), ("param:u", ((2,), "f32")),
                               ("a", np.array(0))], [F], None, "opset3", "IRN032", "rank"),
    ("ScatterElementsUpdate", [("param:x", F), ("i", np.zeros((2, 4), np.int64)), ("param:u", ((2, 4), "f32")),
                               ("a", np.array(0))], [F], None, "opset3", "IRN032", "exceed"),
    ("ScatterElementsUpdate", [("param:x", F), ("i", np.zeros((2, 3), np.int64)), ("param:u", ((2, 3), "f32")),
                               ("a", np.array(-3))], [F], None, "opset3", "IRN032", "out of range"),
    ("ScatterElementsUpdate", [("param:x", F), ("i", np.zeros((2, 3), np.int64)), ("param:u", ((2, 3), "f32")),
                               ("a", np.array(0))], [F], {"reduction": "average"}, "opset12", "IRN", ""),
    ("ScatterElementsUpdate", [("param:x", ((2, 3), "boolean")), ("i", np.zeros((2, 3), np.int64)),
                               ("param:u", ((2, 3), "boolean")), ("a", np.array(0))], [((2, 3), "boolean")],
     {"reduction": "mean"}, "opset12", "IRN033", "boolean"),
    ("GatherND", [("param:x", F), ("i", np.zeros((2, 3), np.int64))], [((2,), "f32")], None, "opset8", "IRN032",
     "exceeds"),
    ("GatherND", [("param:x", F), ("i", np.zeros((2, 1), np.int64))], [((2,), "f32")], {"batch_dims": 2},
     "opset8", "IRN032", "batch_dims"),
    ("GatherND", [("param:x", F), ("i", np.zeros((3, 1), np.int64))], [((3,), "f32")], {"batch_dims": 1},
     "opset5", "IRN032", "batch dim 0"),
    ("GatherND", [("param:x", F), ("i", np.zeros((2, 1), np.int64))], [((2,), "f32")], {"batch_dims": -1},
     "opset8", "IRN", ""),
    ("OneHot", [("param:i", ((4,), "i64")), ("d", np.array(3)), ("on", np.array(1.0, np.float32)),
                ("off", np.array(0.0, np.float32))], [((4, 3), "f32")], {"axis": 2}, "opset1", "IRN032", "axis"),
    ("OneHot", [("param:i", ((4,), "i64")), ("d", np.array(-3)), ("on", np.array(1.0, np.float32)),
                ("off", np.array(0.0, np.float32))], [((4, 3), "f32")], {"axis": 1}, "opset1", "IRN032", "depth"),
    ("OneHot", [("param:i", ((4,), "i64")), ("d", np.array([3, 4])), ("on", np.array(1.0, np.float32)),
                ("off", np.array(0.0, np.float32))], [((4, 3), "f32")], {"axis": 1}, "opset1", "IRN032", "depth"),
    ("OneHot", [("param:i", ((4,), "i64")), ("d", np.array(3)), ("on", np.array(1.0, np.float32)),
                ("off", np.array(0, np.int32))], [((4, 3), "f32")], {"axis": 1}, "opset1", "IRN033", "off_value"),
    ("OneHot", [("param:i", ((4,), "f32")), ("d", np.array(3)), ("on", np.array(1.0, np.float32)),
                ("off", np.array(0.0, np.float32))], [((4, 3), "f32")], {"axis": 1}, "opset1", "IRN033", "indices"),
    ("OneHot", [("param:i", ((4,), "i64")), ("d", np.array(3)), ("on", np.array(1.0, np.float32)),
                ("off", np.array(0.0, np.float32))], [((4, 3), "f32")],
     {"axis": 1, "negative_indices_mode": "wrap"}, "opset16", "IRN", ""),
])
def test_malformed_indexing_layers(tmp_path, layer, inputs, outputs, attrs, version, code, fragment):
    b = single_op_model(layer, inputs, outputs, attrs, version=version)
    if code == "IRN":  # a bad attribute value: whichever attribute code the parser uses
        diags = [d for d in irnorm.check(b.save(tmp_path)) if d.severity == "error"]
        assert diags and all(d.code.startswith("IRN") for d in diags)
        return
    expect_error(b, tmp_path, code, fragment)


def test_u64_indices_past_int64_stay_out_of_range(tmp_path):
    """A u64 index of 2**64 - 1 must not wrap to -1 (a valid index counted from the end)."""
    big = np.array([[np.iinfo(np.uint64).max]], np.uint64)
    x = np.arange(3, dtype=np.float32)
    b = _model("GatherND", "opset8", [_param("x", x), _param("i", big)], rank=1)
    with pytest.raises(irnorm.InputError, match="out of range"):
        _load(b, tmp_path, "g").run({"x": x, "i": big})
    b = _model("OneHot", "opset16", [_param("i", big[0]), ("d", np.array(3)), ("on", np.array(1.0, np.float32)),
                                     ("off", np.array(0.0, np.float32))],
               {"axis": -1, "negative_indices_mode": "normalize"}, rank=2)
    assert _load(b, tmp_path, "o").run({"i": big[0]})["y"].tolist() == [[0, 0, 0]]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "bool", "int64", "float64", "uint8"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_scatter_in_order_keeps_the_last_update_for_every_element_type(dtype, axis):
    """kernels/scatter.py walks the indices in C order and copies elements as unsigned integers of their
    size: every type, repeated targets taking the last value in order, indices smaller than the data off the
    axis, negative indices counted from the end; an index out of range is reported by position."""
    import ml_dtypes

    from irnorm.kernels.scatter import scatter_along_axis

    dt = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(axis)
    data = (rng.random((4, 5, 3)) > 0.5) if dt == np.bool_ else rng.integers(0, 50, (4, 5, 3)).astype(dt)
    shape = [3, 4, 2]
    shape[axis] = 7  # more updates than the axis has: repeats
    n = data.shape[axis]
    idx = rng.integers(-n, n, shape).astype(np.int32 if axis == 1 else np.int64)
    values = (rng.random(shape) > 0.5) if dt == np.bool_ else rng.integers(50, 99, shape).astype(dt)
    before = data.copy()
    got, bad = scatter_along_axis(data, idx, values, axis)
    expected = data.copy()
    for pos in np.ndindex(*shape):
        target = list(pos)
        target[axis] = int(idx[pos]) % n
        expected[tuple(target)] = values[pos]
    assert bad == -1 and got.dtype == dt and got.tobytes() == expected.tobytes()
    assert data.tobytes() == before.tobytes()  # written into a copy
    idx.reshape(-1)[5] = n
    assert scatter_along_axis(data, idx, values, axis)[1] == 5
