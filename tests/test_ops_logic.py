"""Comparison, logic, bitwise, modulo and Select ops (irnorm.ops.logic) beyond the conformance table:
malformed IR, integer division by zero, the sign rules of Mod and FloorMod, the boolean element type
end to end (Parameter, Const, Convert, Result), and an OpenVINO-written mask subgraph with dynamic
dims run at two shapes."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error, run_model, single_op_model
from ovutil import compare_with_openvino, ov_run, requires_openvino, save

import irnorm


def _bin(type_, a, b, out, attrs=None, version="opset1") -> IRBuilder:
    return single_op_model(type_, [a, b], [out], attrs, version=version)


# ---- malformed IR ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("type_", "version", "ets", "fragment"), [
    ("Equal", "opset1", ("i32", "i64"), "input 1 has element type i64, expected i32"),
    ("Less", "opset1", ("f16", "f32"), "input 1 has element type f32"),
    ("LogicalAnd", "opset1", ("f32", "f32"), "LogicalAnd takes boolean inputs, got f32"),
    ("LogicalXor", "opset1", ("boolean", "u8"), "input 1 has element type u8"),
    ("BitwiseAnd", "opset13", ("f32", "f32"), "BitwiseAnd takes integer or boolean inputs, got f32"),
    ("Mod", "opset1", ("boolean", "boolean"), "Mod takes numeric (not boolean) inputs, got boolean"),
    ("FloorMod", "opset1", ("i32", "u32"), "input 1 has element type u32"),
])
def test_binary_type_rules(tmp_path, type_, version, ets, fragment):
    b = _bin(type_, ("param:a", ((3,), ets[0])), ("param:b", ((3,), ets[1])), ((3,), "boolean"), None, version)
    expect_error(b, tmp_path, "IRN033", fragment)


@pytest.mark.parametrize(("type_", "version", "et", "fragment"), [
    ("LogicalNot", "opset1", "f32", "LogicalNot takes a boolean input, got f32"),
    ("BitwiseNot", "opset13", "f16", "BitwiseNot takes an integer or boolean input, got f16"),
    ("IsNaN", "opset10", "i32", "IsNaN takes a floating-point input, got i32"),
    ("IsInf", "opset10", "boolean", "IsInf takes a floating-point input"),
])
def test_unary_type_rules(tmp_path, type_, version, et, fragment):
    b = single_op_model(type_, [("param:x", ((3,), et))], [((3,), "boolean")], None, version=version)
    expect_error(b, tmp_path, "IRN033", fragment)


def test_broadcast_rules(tmp_path):
    expect_error(_bin("Less", ("param:a", ((2, 3), "f32")), ("param:b", ((4,), "f32")), ((2, 3), "boolean")),
                 tmp_path / "a", "IRN032", "do not broadcast", "dim 1 is 3 in input 0 and 4 in input 1")
    expect_error(_bin("FloorMod", ("param:a", ((2, 3), "i32")), ("param:b", ((3,), "i32")), ((2, 3), "i32"),
                      {"auto_broadcast": "none"}), tmp_path / "b", "IRN032", "auto_broadcast=none")
    expect_error(_bin("Equal", ("param:a", ((2,), "f32")), ("param:b", ((2,), "f32")), ((2,), "boolean"),
                      {"auto_broadcast": "pdpd"}), tmp_path / "c", "IRN023", "pdpd")
    expect_error(_bin("LogicalOr", ("param:a", ((2,), "boolean")), ("param:b", ((2,), "boolean")), ((2,), "boolean"),
                      {"auto_broadcast": "sideways"}), tmp_path / "d", "IRN021", "not one of numpy, none")


def _select(shapes, ets=("boolean", "f32", "f32"), attrs=None) -> IRBuilder:
    ins = [(f"param:{n}", (s, e)) for n, s, e in zip(("c", "t", "e"), shapes, ets, strict=True)]
    return single_op_model("Select", ins, [((-1,), ets[1])], attrs, version="opset1")


def test_select_rules(tmp_path):
    expect_error(_select([(3,), (3,), (3,)], ("u8", "f32", "f32")), tmp_path / "a", "IRN033",
                 "cond (input 0) must be boolean, got u8")
    expect_error(_select([(3,), (3,), (3,)], ("boolean", "f32", "f16")), tmp_path / "b", "IRN033",
                 "else (input 2) has element type f16")
    expect_error(_select([(2, 1), (3,), (4,)]), tmp_path / "c", "IRN032", "then (input 1)", "else (input 2)")
    expect_error(_select([(2,), (3, 3), (3,)]), tmp_path / "d", "IRN032", "cond (input 0)", "then/else")
    expect_error(_select([(3,), (3,), (1,)], attrs={"auto_broadcast": "none"}), tmp_path / "e", "IRN032",
                 "auto_broadcast=none")


def test_runtime_broadcast_failure_is_coded(tmp_path):
    """Dynamic dims that turn out not to broadcast: IRN064, no traceback."""
    m = irnorm.load(_select([(-1,), (-1,), (1,)]).save(tmp_path))
    got = m.run({"c": np.array([True, False]), "t": np.array([1.0, 2.0], np.float32),
                 "e": np.array([9.0], np.float32)})
    assert got["y"].tolist() == [1.0, 9.0]
    with pytest.raises(irnorm.InputError) as e:
        m.run({"c": np.array([True, False]), "t": np.ones(3, np.float32), "e": np.ones(1, np.float32)})
    assert e.value.code == "IRN064"
    b = _bin("GreaterEqual", ("param:a", ((-1,), "i64")), ("param:b", ((-1,), "i64")), ((-1,), "boolean"),
             {"auto_broadcast": "none"})
    m = irnorm.load(b.save(tmp_path / "none"))
    assert m.run({"a": np.arange(3), "b": np.ones(3, np.int64)})["y"].tolist() == [False, True, True]
    with pytest.raises(irnorm.InputError) as e:
        m.run({"a": np.arange(3), "b": np.ones(1, np.int64)})
    assert e.value.code == "IRN064" and "auto_broadcast=none" in str(e.value)


# ---- Mod / FloorMod ------------------------------------------------------------------------------


A = np.array([7, -7, 7, -7, 0, 6, -1], np.int32)
B = np.array([3, 3, -3, -3, 5, 3, 4], np.int32)


@pytest.mark.parametrize(("type_", "expected"), [("Mod", [1, -1, 1, -1, 0, 0, -1]),
                                                  ("FloorMod", [1, 2, -2, -1, 0, 0, 3])])
def test_remainder_signs(tmp_path, type_, expected):
    """Mod takes the dividend's sign, FloorMod the divisor's; floats and integers alike."""
    for et, dt in (("i32", np.int32), ("i64", np.int64), ("f32", np.float32), ("f16", np.float16)):
        b = _bin(type_, ("param:a", ((7,), et)), ("param:b", ((7,), et)), ((7,), et))
        got = run_model(b, tmp_path / et, {"a": A.astype(dt), "b": B.astype(dt)})["y"]
        assert got.dtype == dt and got.tolist() == expected, et


@pytest.mark.parametrize("type_", ["Mod", "FloorMod"])
def test_integer_division_by_zero_is_a_coded_error(tmp_path, type_):
    b = _bin(type_, ("param:a", ((2, 3), "i32")), ("b", np.array([2, 0, 1], np.int32)), ((2, 3), "i32"))
    m = irnorm.load(b.save(tmp_path / "rt"))
    with pytest.raises(irnorm.InputError) as e:
        m.run({"a": np.ones((2, 3), np.int32)})
    assert e.value.code == "IRN064" and "integer division by zero" in str(e.value)
    # all-constant: found while folding at load time
    b = IRBuilder("fold")
    p = b.parameter("p", (3,), "u8")
    (q,) = b.layer(type_, [b.const(np.array([1, 2, 3], np.uint8)), b.const(np.array([0], np.uint8))],
                   [((3,), "u8")], {}, version="opset1")
    (y,) = b.layer("BitwiseOr", [p, q], [((3,), "u8")], {}, version="opset13", names=["y"])
    b.result(y)
    expect_error(b, tmp_path / "const", "IRN032", "integer division by zero")
    # float division by zero is NaN, as the formula gives
    b = _bin(type_, ("param:a", ((2,), "f32")), ("b", np.array([0.0, np.inf], np.float32)), ((2,), "f32"))
    got = run_model(b, tmp_path / "f", {"a": np.array([1.5, -2.0], np.float32)})["y"]
    assert np.isnan(got).all()


@requires_openvino
def test_integer_remainders_match_openvino(tmp_path):
    ov = pytest.importorskip("openvino")
    import openvino.opset1 as op1

    rng = np.random.default_rng(4)
    for et in (np.int32, np.int64, np.uint8):
        a = op1.parameter([-1, 6], et, name="a")
        b = op1.parameter([6], et, name="b")
        outs = [op1.mod(a, b), op1.floor_mod(a, b)]
        for n, o in zip(("mod", "floor_mod"), outs, strict=True):
            o.output(0).get_tensor().set_names({n})
        xml = save(ov.Model([op1.result(o) for o in outs], [a, b], "rem"), tmp_path, np.dtype(et).name)
        lo = 0 if et == np.uint8 else -100
        div = rng.integers(1, 9, 6) * (1 if et == np.uint8 else rng.choice([-1, 1], 6))
        for rows in (1, 5):
            compare_with_openvino(xml, {"a": rng.integers(lo, 100, (rows, 6)).astype(et), "b": div.astype(et)})


# ---- the boolean element type end to end -----------------------------------------------------------


@requires_openvino
def test_boolean_through_parameter_const_convert_result(tmp_path):
    ov = pytest.importorskip("openvino")
    import openvino.opset13 as op13

    m = op13.parameter([-1, 4], np.bool_, name="m")
    x = op13.parameter([-1, 4], np.float32, name="x")
    keep = op13.constant(np.array([True, False, True, True]))
    both = op13.logical_and(m, keep)
    outs = {
        "mask": op13.logical_xor(both, op13.logical_not(m)),
        "as_float": op13.convert(both, "f32"),
        "from_float": op13.convert(x, "boolean"),
        "bits": op13.bitwise_xor(m, op13.convert(x, "boolean")),
        "picked": op13.select(both, x, op13.constant(np.float32(-1e4))),
        "flip": op13.bitwise_not(m),
    }
    for name, node in outs.items():
        node.output(0).get_tensor().set_names({name})
    xml = save(ov.Model([op13.result(n) for n in outs.values()], [m, x], "bools"), tmp_path, "bools")
    rng = np.random.default_rng(5)
    for rows in (1, 6):
        feeds = {"m": rng.random((rows, 4)) < 0.5,
                 "x": rng.choice([0.0, -0.0, 1.5, np.inf, -2.0, 1e-30], (rows, 4)).astype(np.float32)}
        got = compare_with_openvino(xml, feeds)
        assert got["mask"].dtype == np.bool_ and got["as_float"].dtype == np.float32
        np.testing.assert_array_equal(got["from_float"], feeds["x"] != 0)
    # NaN -> boolean: OpenVINO's reference (and irnorm) give true (NaN != 0); the CPU plugin 2026.4 gives false
    feeds = {"m": np.ones((1, 4), bool), "x": np.array([[np.nan, 0, 1, np.nan]], np.float32)}
    assert irnorm.load(xml).run(feeds)["from_float"].tolist() == [[True, False, True, True]]
    assert ov_run(xml, feeds)["from_float"][0, 1:3].tolist() == [False, True]


def test_boolean_model_without_openvino(tmp_path):
    b = IRBuilder("b")
    c = b.parameter("c", (3,), "boolean")
    k = b.const(np.array([True, True, False]))
    (a,) = b.layer("LogicalAnd", [c, k], [((3,), "boolean")], {}, version="opset1")
    (y,) = b.layer("Select", [a, b.const(np.array([1, 2, 3], np.int64)), b.const(np.array(-1, np.int64))],
                   [((3,), "i64")], {}, version="opset1", names=["y"])
    b.result(y)
    got = run_model(b, tmp_path, {"c": np.array([True, False, True])})["y"]
    assert got.dtype == np.int64 and got.tolist() == [1, -1, -1]


def test_constant_subgraph_folds(tmp_path):
    """Comparisons and Select on constants are computed while loading (shape subgraphs)."""
    b = IRBuilder("fold")
    p = b.parameter("p", (2,), "i64")
    (eq,) = b.layer("Equal", [b.const(np.array([0, 5], np.int64)), b.const(np.array(0, np.int64))],
                    [((2,), "boolean")], {}, version="opset1")
    (sel,) = b.layer("Select", [eq, b.const(np.array([7, 7], np.int64)), b.const(np.array([1, 5], np.int64))],
                     [((2,), "i64")], {}, version="opset1")
    (y,) = b.layer("Add", [p, sel], [((2,), "i64")], {}, version="opset1", names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    assert m.run({"p": np.array([1, 1])})["y"].tolist() == [8, 6]


# ---- OpenVINO-written mask subgraph ----------------------------------------------------------------


@requires_openvino
def test_openvino_mask_subgraph_with_dynamic_dims_at_two_shapes(tmp_path):
    ov = pytest.importorskip("openvino")
    import openvino.opset10 as op10

    x = op10.parameter(ov.PartialShape([-1, -1]), np.float32, name="x")
    lens = op10.parameter(ov.PartialShape([-1, 1]), np.int64, name="lens")
    pos = op10.parameter(ov.PartialShape([-1]), np.int64, name="pos")
    valid = op10.less(pos, lens)  # [B, T]
    finite = op10.is_finite(x)
    keep = op10.logical_and(valid, finite)
    outs = {
        "masked": op10.select(keep, x, op10.constant(np.float32(-np.inf))),
        "parity": op10.floor_mod(pos, op10.constant(np.int64(3))),
        "ge": op10.greater_equal(x, op10.constant(np.float32(0.0))),
        "ne": op10.not_equal(op10.mod(x, op10.constant(np.float32(2.0))), op10.constant(np.float32(0.0))),
        "nan": op10.is_nan(x),
    }
    for name, node in outs.items():
        node.output(0).get_tensor().set_names({name})
    xml = save(ov.Model([op10.result(n) for n in outs.values()], [x, lens, pos], "mask"), tmp_path, "mask")
    rng = np.random.default_rng(6)
    for bsz, t in ((2, 5), (3, 40)):
        feeds = {"x": np.round(rng.standard_normal((bsz, t)) * 4).astype(np.float32),
                 "lens": rng.integers(0, t + 1, (bsz, 1)), "pos": np.arange(t)}
        feeds["x"][0, 1] = np.inf
        cpu = ov_run(xml, feeds)
        got = compare_with_openvino(xml, feeds)
        assert got["masked"].shape == (bsz, t) and cpu["masked"].shape == (bsz, t)


def test_kernel_broadcast_check_is_remembered_and_still_refuses():
    """The kernels' own run-time broadcast check (a second line behind the shape rules) remembers shape
    tuples it has seen; a pair that does not broadcast is refused with IRN064 every time."""
    from types import SimpleNamespace

    from irnorm.errors import InputError
    from irnorm.ops import logic

    layer = SimpleNamespace(where=lambda path: {"file": path, "line": 7, "layer_id": "3", "layer_name": "sel"})
    for _ in range(2):
        logic._check_broadcast(layer, [(2, 1, 3), (4, 3), (1,)])
        with pytest.raises(InputError) as e:
            logic._check_broadcast(layer, [(2, 3), (4,)])
        assert e.value.code == "IRN064" and "do not broadcast" in str(e.value)
    assert logic._broadcasts(((2, 1, 3), (4, 3), (1,))) and not logic._broadcasts(((2, 3), (4,)))
