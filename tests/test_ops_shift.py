"""BitwiseLeftShift-15 / BitwiseRightShift-15 (irnorm.ops.logic) beyond the conformance rows: the type rules,
every integer type's edge cases (counts 0, bits - 1, bits and beyond, negative counts, negative data), the
float64-free reference, constant folding, torch's export of ``<<`` / ``>>`` (the layers and attributes OpenVINO's
PyTorch frontend writes) and what OpenVINO's CPU plugin computes where it departs (docs/ir-format.md)."""

from __future__ import annotations

import numpy as np
import pytest
from conformance.logic import SHIFT_INTS, cpu_shift
from irbuilder import IRBuilder, expect_error, run_model, single_op_model
from ovutil import compare_with_openvino, ov_run, requires_openvino, save

import irnorm
from irnorm import reference as R


def _shift(type_, a, b, out, attrs=None) -> IRBuilder:
    return single_op_model(type_, [a, b], [out], attrs, version="opset15")


@pytest.mark.parametrize(("type_", "ets", "code", "fragment"), [
    ("BitwiseLeftShift", ("f32", "f32"), "IRN033", "BitwiseLeftShift takes integer inputs, got f32"),
    ("BitwiseRightShift", ("boolean", "boolean"), "IRN033", "BitwiseRightShift takes integer inputs, got boolean"),
    ("BitwiseLeftShift", ("i32", "i64"), "IRN033", "input 1 has element type i64, expected i32"),
    ("BitwiseRightShift", ("u8", "i8"), "IRN033", "input 1 has element type i8"),
])
def test_type_rules(tmp_path, type_, ets, code, fragment):
    b = _shift(type_, ("param:a", ((3,), ets[0])), ("param:b", ((3,), ets[1])), ((3,), ets[0]))
    expect_error(b, tmp_path, code, fragment)


def test_broadcast_rules_and_opset(tmp_path):
    expect_error(_shift("BitwiseLeftShift", ("param:a", ((2, 3), "i32")), ("param:b", ((4,), "i32")), ((2, 3), "i32")),
                 tmp_path / "a", "IRN032", "do not broadcast")
    expect_error(_shift("BitwiseRightShift", ("param:a", ((2, 3), "i32")), ("param:b", ((3,), "i32")), ((2, 3), "i32"),
                        {"auto_broadcast": "none"}), tmp_path / "b", "IRN032", "auto_broadcast=none")
    b = single_op_model("BitwiseLeftShift", [("param:a", ((3,), "i32")), ("param:b", ((3,), "i32"))], [((3,), "i32")],
                        None, version="opset14")
    expect_error(b, tmp_path / "c", "IRN012", "opset15+")


def test_runtime_broadcast_failure_is_coded(tmp_path):
    m = irnorm.load(_shift("BitwiseLeftShift", ("param:a", ((-1,), "i64")), ("param:b", ((-1,), "i64")),
                           ((-1,), "i64")).save(tmp_path))
    assert m.run({"a": np.array([1, 2, 3]), "b": np.array([2])})["y"].tolist() == [4, 8, 12]
    with pytest.raises(irnorm.InputError) as e:
        m.run({"a": np.arange(3), "b": np.ones(2, np.int64)})
    assert e.value.code == "IRN064" and "do not broadcast" in str(e.value)


# (dtype, a, count, a << count, a >> count): wrapping, arithmetic right shifts, and counts outside [0, bits)
EDGES = [
    (np.int8, -5, 1, -10, -3), (np.int8, -5, 7, -128, -1), (np.int8, -5, 8, 0, -1), (np.int8, 5, 8, 0, 0),
    (np.int8, -128, 0, -128, -128), (np.int8, -128, 100, 0, -1), (np.int8, 3, -1, 0, 0), (np.int8, -3, -8, 0, -1),
    (np.int8, 1, 6, 64, 0), (np.int8, 3, 6, -64, 0),
    (np.uint8, 250, 1, 244, 125), (np.uint8, 255, 7, 128, 1), (np.uint8, 255, 8, 0, 0), (np.uint8, 255, 255, 0, 0),
    (np.int16, -1, 15, -32768, -1), (np.int16, -32768, 16, 0, -1), (np.int16, 1, 33, 0, 0),
    (np.uint16, 65535, 15, 32768, 1), (np.uint16, 65535, 16, 0, 0),
    (np.int32, -5, 31, -2147483648, -1), (np.int32, -5, 32, 0, -1), (np.int32, 1, 33, 0, 0), (np.int32, 7, -1, 0, 0),
    (np.uint32, 4294967295, 1, 4294967294, 2147483647), (np.uint32, 2 ** 31, 31, 0, 1), (np.uint32, 5, 32, 0, 0),
    (np.int64, 1, 40, 2 ** 40, 0), (np.int64, -(2 ** 62), 1, -(2 ** 63), -(2 ** 61)),
    (np.int64, -1, 63, -(2 ** 63), -1), (np.int64, -1, 64, 0, -1), (np.int64, 2 ** 40, -2, 0, 0),
    (np.uint64, 2 ** 64 - 1, 1, 2 ** 64 - 2, 2 ** 63 - 1), (np.uint64, 2 ** 63, 63, 0, 1), (np.uint64, 9, 64, 0, 0),
]


def test_edges_in_every_type(tmp_path):
    """One model per type, both ops; the values follow the rule of the module docstring, and the plain
    reference agrees element by element."""
    for dt in SHIFT_INTS:
        rows = [r for r in EDGES if np.dtype(r[0]) == dt]
        a = np.array([r[1] for r in rows], dt)
        s = np.array([r[2] for r in rows], np.int64).astype(dt)
        et = {"int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16", "int32": "i32", "uint32": "u32",
              "int64": "i64", "uint64": "u64"}[dt.name]
        b = IRBuilder(dt.name)
        pa, pb = b.parameter("a", (len(rows),), et), b.parameter("b", (len(rows),), et)
        (left,) = b.layer("BitwiseLeftShift", [pa, pb], [((len(rows),), et)], {}, version="opset15", names=["left"])
        (right,) = b.layer("BitwiseRightShift", [pa, pb], [((len(rows),), et)], {}, version="opset15",
                           names=["right"])
        b.result(left)
        b.result(right)
        got = run_model(b, tmp_path / dt.name, {"a": a, "b": s})
        assert got["left"].dtype == dt and got["right"].dtype == dt
        assert got["left"].tolist() == [int(np.array(r[3]).astype(dt)) for r in rows], dt
        assert got["right"].tolist() == [int(np.array(r[4]).astype(dt)) for r in rows], dt
        assert R.bitwise_left_shift(a, s).tolist() == got["left"].tolist()
        assert R.bitwise_right_shift(a, s).tolist() == got["right"].tolist()


def test_constant_subgraph_folds(tmp_path):
    b = IRBuilder("fold")
    p = b.parameter("p", (3,), "i64")
    (k,) = b.layer("BitwiseLeftShift", [b.const(np.array([1, 2, 3], np.int64)), b.const(np.array(4, np.int64))],
                   [((3,), "i64")], {}, version="opset15")
    (y,) = b.layer("Add", [p, k], [((3,), "i64")], {}, version="opset1", names=["y"])
    b.result(y)
    assert run_model(b, tmp_path, {"p": np.zeros(3, np.int64)})["y"].tolist() == [16, 32, 48]


def test_torch_export_layers(tmp_path):
    """What OpenVINO's PyTorch frontend writes for ``(a << 2, b >> 1)`` on i64 tensors of dynamic shape (the
    layers and attributes of a real export): a shift by a scalar i64 Const, auto_broadcast numpy."""
    b = IRBuilder("torch")
    pa, pb = b.parameter("a", (-1, -1), "i64"), b.parameter("b", (-1, -1), "i64")
    (lsh,) = b.layer("BitwiseLeftShift", [pa, b.const(np.array(2, np.int64))], [((-1, -1), "i64")],
                     {"auto_broadcast": "numpy"}, version="opset15", names=["lshift"])
    (rsh,) = b.layer("BitwiseRightShift", [pb, b.const(np.array(1, np.int64))], [((-1, -1), "i64")],
                     {"auto_broadcast": "numpy"}, version="opset15", names=["rshift"])
    b.result(lsh)
    b.result(rsh)
    a = np.array([[194, 54, 233], [-7, 0, 2 ** 40]], np.int64)
    got = run_model(b, tmp_path, {"a": a, "b": a})
    assert got["lshift"].tolist() == [[776, 216, 932], [-28, 0, 2 ** 42]]
    assert got["rshift"].tolist() == [[97, 27, 116], [-4, 0, 2 ** 39]]


@requires_openvino
def test_against_openvino_and_its_divergences(tmp_path):
    """irnorm equals the CPU plugin wherever the plugin's i32 arithmetic with count b & 31 (cpu_shift, which
    reproduces the plugin exactly on every type) gives the exact result; the plugin departs for i64/u64 data
    beyond 32 bits, u32 right shifts of values >= 2**31, and counts outside [0, 32)."""
    ov = pytest.importorskip("openvino")
    import openvino.opset15 as op15

    rng = np.random.default_rng(15)
    for dt in SHIFT_INTS:
        info = np.iinfo(dt)
        a = op15.parameter([-1], dt, name="a")
        s = op15.parameter([-1], dt, name="b")
        outs = [op15.bitwise_left_shift(a, s), op15.bitwise_right_shift(a, s)]
        for n, o in zip(("left", "right"), outs, strict=True):
            o.output(0).get_tensor().set_names({n})
        xml = save(ov.Model([op15.result(o) for o in outs], [a, s], "shift"), tmp_path, dt.name)
        x = rng.integers(info.min, info.max, 3000, dtype=dt, endpoint=True)
        x[:1000] = rng.integers(-50 if info.min < 0 else 0, 50, 1000)
        c = rng.integers(max(info.min, -70), min(info.max, 140), 3000, endpoint=True).astype(dt)
        cpu = ov_run(xml, {"a": x, "b": c})
        got = irnorm.load(xml).run({"a": x, "b": c})
        for name, left in (("left", True), ("right", False)):
            np.testing.assert_array_equal(cpu[name], cpu_shift(x, c, left), err_msg=f"{dt} {name}: plugin model")
            exact = R.bitwise_left_shift(x, c) if left else R.bitwise_right_shift(x, c)
            np.testing.assert_array_equal(got[name], exact)
            same = cpu[name] == exact
            if dt.itemsize < 4 or dt == np.int32:  # every count in [0, 32) agrees
                inside = (c.astype(np.int64) >= 0) & (c.astype(np.int64) < 32)
                assert same[inside].all(), dt
        ok = (c.astype(np.int64) >= 0) & (c.astype(np.int64) < min(info.bits, 32)) & (np.abs(x.astype(float)) < 2 ** 20)
        if dt.itemsize == 4 or dt.itemsize == 8:
            ok &= c.astype(np.int64) < 8  # results still inside 32 bits
        compare_with_openvino(xml, {"a": x[ok], "b": c[ok]})
