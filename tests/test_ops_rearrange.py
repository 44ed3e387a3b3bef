"""SpaceToDepth, DepthToSpace, ReverseSequence, Eye, Identity and NonZero beyond the conformance rows:
numpy references over random shapes and attributes, dynamic dims, negative axes, OpenVINO's CPU
plugin on the cases the rows do not draw, and coded errors (never a traceback or an out-of-bounds
read) for malformed layers and for sizes or lengths from data that do not fit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import element_type, expect_error, single_op_model
from ovutil import HAVE_OPENVINO, compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R
from irnorm.ir.dtypes import ELEMENT_TYPES

BF16 = np.dtype(ml_dtypes.bfloat16)


def _load(b, tmp_path, name="m"):
    return irnorm.load(b.save(tmp_path, name))


def _run(b, tmp_path, feeds, name="m"):
    return _load(b, tmp_path, name).run(feeds)


def _np_d2s(x, bs, mode):
    """DepthToSpace by its textbook formula (ONNX's DCR = blocks_first, CRD = depth_first), for 2-D spatial."""
    n, c, h, w = x.shape
    if mode == "blocks_first":
        t = x.reshape(n, bs, bs, c // bs ** 2, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // bs ** 2, bs, bs, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // bs ** 2, h * bs, w * bs)


# ---- SpaceToDepth / DepthToSpace ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["blocks_first", "depth_first"])
def test_depth_to_space_matches_the_onnx_formula_and_space_to_depth_inverts_it(tmp_path, mode):
    rng = np.random.default_rng(3)
    for k in range(6):
        bs = int(rng.integers(1, 4))
        x = rng.standard_normal((2, bs * bs * int(rng.integers(1, 3)), int(rng.integers(1, 4)),
                                 int(rng.integers(1, 4)))).astype(np.float32)
        dyn = bool(k % 2)
        d2s = single_op_model("DepthToSpace", [("param:x", ([-1] * 4 if dyn else x.shape, "f32"))],
                              [([-1] * 4, "f32")], {"mode": mode, "block_size": bs}, version="opset1")
        y = _run(d2s, tmp_path, {"x": x}, f"d{k}")["y"]
        np.testing.assert_array_equal(y, _np_d2s(x, bs, mode))
        s2d = single_op_model("SpaceToDepth", [("param:x", ([-1] * 4 if dyn else y.shape, "f32"))],
                              [([-1] * 4, "f32")], {"mode": mode, "block_size": bs}, version="opset1")
        np.testing.assert_array_equal(_run(s2d, tmp_path, {"x": y}, f"s{k}")["y"], x)


def test_blocks_on_one_and_three_spatial_dims_and_other_dtypes(tmp_path):
    rng = np.random.default_rng(4)
    for k, (dims, dt) in enumerate((((2, 8, 3), np.int64), ((1, 16, 2, 1, 2), np.float16), ((1, 8, 1, 2, 2), BF16),
                                    ((3, 4, 5), np.uint8))):
        x = rng.integers(0, 100, dims).astype(dt)
        bs = 2
        for mode in ("blocks_first", "depth_first"):
            d2s = single_op_model("DepthToSpace", [("param:x", (dims, element_type(dt)))], [([-1] * len(dims),
                                  element_type(dt))], {"mode": mode, "block_size": bs}, version="opset1")
            y = _run(d2s, tmp_path, {"x": x}, f"d{k}{mode}")["y"]
            assert y.dtype == x.dtype
            np.testing.assert_array_equal(y, R.depth_to_space(x, bs, mode))
            s2d = single_op_model("SpaceToDepth", [("param:x", (y.shape, element_type(dt)))],
                                  [([-1] * len(dims), element_type(dt))], {"mode": mode, "block_size": bs},
                                  version="opset1")
            np.testing.assert_array_equal(_run(s2d, tmp_path, {"x": y}, f"s{k}{mode}")["y"], x)


def test_block_shapes_with_dynamic_dims(tmp_path):
    """Known dims are computed, unknown ones stay -1 (as OpenVINO infers [?,8,3,?] -> [?,2,6,?] / [?,72,1,?])."""
    d2s = single_op_model("DepthToSpace", [("param:x", ((-1, 8, 3, -1), "f32"))], [((-1, 2, 6, -1), "f32")],
                          {"mode": "depth_first", "block_size": 2}, version="opset1")
    assert _load(d2s, tmp_path, "d").outputs[0].shape == (-1, 2, 6, -1)
    s2d = single_op_model("SpaceToDepth", [("param:x", ((-1, 8, 3, -1), "f32"))], [((-1, 72, 1, -1), "f32")],
                          {"mode": "depth_first", "block_size": 3}, version="opset1")
    m = _load(s2d, tmp_path, "s")
    assert m.outputs[0].shape == (-1, 72, 1, -1)
    x = np.arange(2 * 8 * 3 * 6, dtype=np.float32).reshape(2, 8, 3, 6)
    np.testing.assert_array_equal(m.run({"x": x})["y"], R.space_to_depth(x, 3, "depth_first"))
    with pytest.raises(irnorm.InputError) as e:  # a runtime dim that is no multiple of block_size
        m.run({"x": np.zeros((1, 8, 3, 4), np.float32)})
    assert e.value.code == "IRN064" and "multiple of block_size" in e.value.diagnostics[0].message


def test_depth_to_space_channels_not_divisible_at_run_time_is_coded(tmp_path):
    b = single_op_model("DepthToSpace", [("param:x", ((1, -1, 2, 2), "f32"))], [((1, -1, 4, 4), "f32")],
                        {"mode": "blocks_first", "block_size": 2}, version="opset1")
    with pytest.raises(irnorm.InputError) as e:
        _run(b, tmp_path, {"x": np.zeros((1, 6, 2, 2), np.float32)})
    assert e.value.code == "IRN064" and "channels (6)" in e.value.diagnostics[0].message


@requires_openvino
@pytest.mark.parametrize("op", ["depth_to_space", "space_to_depth"])
def test_blocks_against_openvino_on_three_spatial_dims(tmp_path, op):
    import openvino as ov
    import openvino.opset1 as o1

    rng = np.random.default_rng(5)
    dims = (2, 16, 2, 2, 4) if op == "depth_to_space" else (2, 2, 4, 2, 6)
    x = rng.standard_normal(dims).astype(np.float32)
    for mode in ("blocks_first", "depth_first"):
        p = o1.parameter([-1, dims[1], -1, -1, -1], np.float32, name="x")
        node = getattr(o1, op)(p, mode, 2)
        xml = save(ov.Model([node], [p]), tmp_path, f"{op}{mode}")
        compare_with_openvino(xml, {"x": x})


# ---- ReverseSequence ----------------------------------------------------------------------------------


def _np_reverse_sequence(x, lengths, ba, sa):
    y = x.copy()
    for b, n in enumerate(lengths):
        idx = [slice(None)] * x.ndim
        idx[ba] = b
        src = list(idx)
        idx[sa] = slice(0, int(n))
        src[sa] = slice(int(n) - 1, None, -1) if n > 0 else slice(0, 0)
        y[tuple(idx)] = x[tuple(src)]
    return y


def test_reverse_sequence_random_axes_and_lengths(tmp_path):
    rng = np.random.default_rng(6)
    for k in range(10):
        x = rng.standard_normal(tuple(int(d) for d in rng.integers(1, 5, int(rng.integers(2, 5))))).astype(np.float32)
        ba, sa = (int(a) for a in rng.choice(x.ndim, 2, replace=False))
        attrs = {"batch_axis": ba - x.ndim if k % 2 else ba, "seq_axis": sa - x.ndim if k % 3 else sa}
        lengths = rng.integers(0, x.shape[sa] + 1, x.shape[ba])
        dims = [-1] * x.ndim if k % 2 else list(x.shape)
        b = single_op_model("ReverseSequence", [("param:x", (dims, "f32")), ("param:s", ([-1], "i64"))],
                            [(dims, "f32")], attrs, version="opset1")
        y = _run(b, tmp_path, {"x": x, "s": lengths}, f"r{k}")["y"]
        np.testing.assert_array_equal(y, _np_reverse_sequence(x, lengths, ba, sa))


def test_reverse_sequence_defaults_are_batch_0_seq_1(tmp_path):
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = single_op_model("ReverseSequence", [("param:x", ((3, 4), "i32")), ("s", np.array([4, 0, 2], np.int32))],
                        [((3, 4), "i32")], None, version="opset1")
    assert _run(b, tmp_path, {"x": x})["y"].tolist() == [[3, 2, 1, 0], [4, 5, 6, 7], [9, 8, 10, 11]]


@pytest.mark.parametrize("bad", [5, -1, 1 << 40, -(1 << 40)])
def test_reverse_sequence_length_out_of_range_is_coded(tmp_path, bad):
    """OpenVINO (reference and CPU plugin) errors for a length below 0 or above the dim; so does irnorm:
    IRN064 at run time, never a read past the sequence."""
    b = single_op_model("ReverseSequence", [("param:x", ((2, 4), "f32")), ("param:s", ((2,), "i64"))],
                        [((2, 4), "f32")], {"batch_axis": 0, "seq_axis": 1}, version="opset1")
    m = _load(b, tmp_path)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    assert m.run({"x": x, "s": np.array([4, 1])})["y"].tolist() == [[3, 2, 1, 0], [4, 5, 6, 7]]
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": x, "s": np.array([1, bad])})
    assert e.value.code == "IRN064" and "out of range [0, 4]" in e.value.diagnostics[0].message


def test_reverse_sequence_unsigned_and_float_lengths(tmp_path):
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    b = single_op_model("ReverseSequence", [("param:x", ((2, 5), "f32")), ("param:s", ((2,), "u64"))],
                        [((2, 5), "f32")], None, version="opset1")
    m = _load(b, tmp_path, "u")
    assert m.run({"x": x, "s": np.array([2, 5], np.uint64)})["y"].tolist() == [[1, 0, 2, 3, 4], [9, 8, 7, 6, 5]]
    with pytest.raises(irnorm.InputError, match="out of range"):
        m.run({"x": x, "s": np.array([2, 1 << 63], np.uint64)})
    b = single_op_model("ReverseSequence", [("param:x", ((2, 5), "f32")), ("param:s", ((2,), "f32"))],
                        [((2, 5), "f32")], None, version="opset1")
    m = _load(b, tmp_path, "f")
    assert m.run({"x": x, "s": np.array([2.7, 0.5], np.float32)})["y"].tolist() == [[1, 0, 2, 3, 4],
                                                                                    [5, 6, 7, 8, 9]]
    for bad in (np.nan, np.inf, -1.0):
        with pytest.raises(irnorm.InputError) as e:
            m.run({"x": x, "s": np.array([2, bad], np.float32)})
        assert e.value.code == "IRN064"


@requires_openvino
def test_reverse_sequence_float_lengths_and_negative_axes_against_openvino(tmp_path):
    import openvino as ov
    import openvino.opset1 as o1

    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    for k, (dt, ba, sa) in enumerate(((np.float32, -1, 0), (np.int32, 0, -2), (np.int64, 2, -3))):
        shape = list(x.shape)
        p = o1.parameter([-1] * 3, np.float32, name="x")
        s = o1.parameter([shape[ba]], dt, name="s")
        xml = save(ov.Model([o1.reverse_sequence(p, s, ba, sa)], [p, s]), tmp_path, f"rs{k}")
        lengths = np.arange(shape[ba]) % (shape[sa] + 1)
        lengths = (lengths + 0.6).astype(dt) if dt == np.float32 else lengths.astype(dt)
        compare_with_openvino(xml, {"x": x, "s": lengths})


def test_reverse_sequence_constant_lengths_fold_and_are_checked(tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = single_op_model("ReverseSequence", [("x", x), ("s", np.array([3, 2]))], [((2, 3), "f32")], None,
                        version="opset1")
    assert _run(b, tmp_path, {}, "ok")["y"].tolist() == [[2, 1, 0], [4, 3, 5]]
    b = single_op_model("ReverseSequence", [("param:x", ((2, 3), "f32")), ("s", np.array([4, 2]))],
                        [((2, 3), "f32")], None, version="opset1")
    expect_error(b, tmp_path, "IRN032", "out of range [0, 3]")


# ---- Eye -------------------------------------------------------------------------------------------------


def _eye_model(rows, cols, diag, batch=None, t="f32", runtime=(True, True, True, True), batch_dims=None):
    ins = []
    for name, v, rt in (("r", rows, runtime[0]), ("c", cols, runtime[1]), ("d", diag, runtime[2])):
        ins.append((f"param:{name}", ((), "i64")) if rt else (name, np.array(v, np.int64)))
    if batch is not None:
        bd = [len(batch)] if batch_dims is None else batch_dims
        ins.append(("param:b", (bd, "i64")) if runtime[3] else ("b", np.array(batch, np.int64)))
    rank = 2 + (len(batch) if batch is not None else 0)
    return single_op_model("Eye", ins, [((-1,) * rank, t)], {"output_type": t}, version="opset9")


def test_eye_random_sizes_diagonals_and_batches(tmp_path):
    rng = np.random.default_rng(7)
    for k in range(12):
        rows, cols = (int(v) for v in rng.integers(0, 6, 2))
        diag = int(rng.integers(-8, 9))
        batch = [int(v) for v in rng.integers(1, 3, int(rng.integers(0, 3)))] if k % 2 else None
        t = ("f32", "f16", "bf16", "i32", "u8", "boolean", "f64", "i64")[k % 8]
        rt = tuple(bool(v) for v in rng.integers(0, 2, 4))
        b = _eye_model(rows, cols, diag, batch, t, rt, batch_dims=[-1] if k % 4 == 3 else None)
        feeds = {n: np.array(v, np.int64) for n, v, r in (("r", rows, rt[0]), ("c", cols, rt[1]),
                                                          ("d", diag, rt[2]), ("b", batch, rt[3]))
                 if r and v is not None}
        y = _run(b, tmp_path, feeds, f"e{k}")["y"]
        want = np.broadcast_to(np.eye(rows, cols, diag), tuple(batch or ()) + (rows, cols))
        assert y.dtype == ELEMENT_TYPES[t]
        np.testing.assert_array_equal(y.astype(np.float64), want, err_msg=f"{rows}x{cols} {diag} {batch} {t}")


def test_eye_dims_are_dynamic_for_runtime_inputs(tmp_path):
    m = _load(_eye_model(3, 4, 0, [2, 5], runtime=(True, False, False, False)), tmp_path, "a")
    assert m.outputs[0].shape == (2, 5, -1, 4)
    m = _load(_eye_model(3, 4, 0, [2, 5], runtime=(False, False, True, True)), tmp_path, "b")
    assert m.outputs[0].shape == (-1, -1, 3, 4)
    m = _load(_eye_model(3, 4, 0, [2, 5], runtime=(False, False, False, True), batch_dims=[-1]), tmp_path, "c")
    assert m.outputs[0].shape is None  # a batch_shape of unknown length: unknown rank
    y = m.run({"b": np.array([2, 1, 1], np.int64)})["y"]
    assert y.shape == (2, 1, 1, 3, 4) and np.array_equal(y[1, 0, 0], np.eye(3, 4))


@pytest.mark.parametrize("feeds,fragment", [
    ({"r": -1, "c": 3, "d": 0}, "num_rows (-1)"),
    ({"r": 3, "c": -2, "d": 0}, "num_columns (-2)"),
    ({"r": 1 << 30, "c": 1 << 30, "d": 0}, "absurd size"),
])
def test_eye_bad_runtime_sizes_are_coded_before_allocating(tmp_path, feeds, fragment):
    m = _load(_eye_model(0, 0, 0), tmp_path)
    with pytest.raises(irnorm.InputError) as e:
        m.run({k: np.array(v, np.int64) for k, v in feeds.items()})
    assert e.value.code == "IRN064" and fragment in e.value.diagnostics[0].message


def test_eye_negative_runtime_batch_is_coded(tmp_path):
    m = _load(_eye_model(2, 2, 0, [1, 1], runtime=(False, False, False, True)), tmp_path)
    with pytest.raises(irnorm.InputError) as e:
        m.run({"b": np.array([2, -1], np.int64)})
    assert e.value.code == "IRN064" and "batch_shape" in e.value.diagnostics[0].message


def test_eye_empty_batch_shape_follows_the_spec(tmp_path):
    """An empty batch_shape adds no dims (OpenVINO's CPU plugin leaves this output unwritten: ir-format §12)."""
    b = single_op_model("Eye", [("r", np.array(2)), ("c", np.array(3)), ("param:d", ((), "i64")),
                                ("b", np.zeros(0, np.int64))], [((2, 3), "i32")], {"output_type": "i32"},
                        version="opset9")
    assert _run(b, tmp_path, {"d": np.array(1)})["y"].tolist() == [[0, 1, 0], [0, 0, 1]]


@requires_openvino
def test_eye_runtime_sizes_against_openvino(tmp_path):
    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset9 as o9

    r, c, d = (o1.parameter([], np.int32, name=n) for n in "rcd")
    for t in ("f32", "i64", "u8"):
        xml = save(ov.Model([o9.eye(r, c, d, t, o1.constant(np.array([2], np.int64)))], [r, c, d]), tmp_path, t)
        for rows, cols, diag in ((3, 4, 1), (4, 2, -3), (2, 2, 9), (0, 3, 0), (3, 3, -3)):
            compare_with_openvino(xml, {"r": np.array(rows, np.int32), "c": np.array(cols, np.int32),
                                        "d": np.array(diag, np.int32)})


# ---- Identity, NonZero ---------------------------------------------------------------------------------------


def test_identity_copies(tmp_path):
    for k, (shape, et, dt) in enumerate((((2, 3), "f32", np.float32), ((), "i64", np.int64), ((0, 4), "boolean",
                                                                                          np.bool_),
                                         ((3,), "bf16", BF16))):
        b = single_op_model("Identity", [("param:x", ([-1] * len(shape) if k % 2 else shape, et))],
                            [(shape, et)], None, version="opset16")
        x = np.ones(shape, dt)
        y = _run(b, tmp_path, {"x": x}, f"i{k}")["y"]
        assert y.dtype == x.dtype and np.array_equal(y.astype(np.float64), x.astype(np.float64))
        assert not np.shares_memory(x, y)
    b = single_op_model("Identity", [("c", np.array([1, 2, 3], np.int32))], [((3,), "i32")], None, version="opset16")
    assert _run(b, tmp_path, {}, "const")["y"].tolist() == [1, 2, 3]


def test_identity_is_not_in_older_opsets(tmp_path):
    b = single_op_model("Identity", [("param:x", ((2,), "f32"))], [((2,), "f32")], None, version="opset15")
    diags = [d for d in irnorm.check(b.save(tmp_path)) if d.severity == "error"]
    assert diags and all(d.code.startswith("IRN") for d in diags)


def test_non_zero_random_inputs(tmp_path):
    rng = np.random.default_rng(8)
    for k in range(10):
        dims = tuple(int(d) for d in rng.integers(0 if k == 3 else 1, 4, int(rng.integers(0, 5))))
        dt = (np.float32, np.int64, np.bool_, np.float16, BF16, np.uint8)[k % 6]
        x = (rng.integers(0, 3, dims) * (rng.integers(0, 2, dims))).astype(dt)
        t = ("i32", "i64")[k % 2]
        b = single_op_model("NonZero", [("param:x", ([-1] * len(dims) if k % 3 else dims, element_type(dt)))],
                            [((-1, -1), t)], {"output_type": t}, version="opset3")
        m = _load(b, tmp_path, f"n{k}")
        assert m.outputs[0].shape == (max(len(dims), 1), 0 if 0 in dims else -1)
        y = m.run({"x": x})["y"]
        want = np.stack(np.nonzero(x.reshape(1) if x.ndim == 0 else x.astype(np.float32))).reshape(max(x.ndim, 1), -1)
        assert y.dtype == np.dtype("int32" if t == "i32" else "int64") and np.array_equal(y, want), (dims, dt)


def test_non_zero_nan_and_negative_zero(tmp_path):
    x = np.array([[0.0, -0.0, np.nan], [np.inf, 0.0, 1e-45]], np.float32)
    b = single_op_model("NonZero", [("param:x", ((2, 3), "f32"))], [((2, -1), "i64")], None, version="opset3")
    assert _run(b, tmp_path, {"x": x})["y"].tolist() == [[0, 1, 1], [2, 0, 2]]


def test_non_zero_constant_folds_to_a_static_shape(tmp_path):
    b = single_op_model("NonZero", [("c", np.array([[0, 3], [4, 0]], np.int32))], [((2, 2), "i32")],
                        {"output_type": "i32"}, version="opset3")
    m = _load(b, tmp_path)
    assert m.outputs[0].shape == (2, 2) and m.run({})["y"].tolist() == [[0, 1], [1, 0]]


@pytest.mark.skipif(not HAVE_OPENVINO, reason="openvino (test dependency) is not installed")
def test_non_zero_against_openvino(tmp_path):
    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset3 as o3

    x = np.array([[[0.0, -0.0, np.nan], [np.inf, 0.0, 2.0]]], np.float32)
    for k, v in enumerate((x, np.zeros((2, 0), np.float32), np.array(0.0, np.float32), np.array(3.0, np.float32))):
        p = o1.parameter([-1] * v.ndim, np.float32, name="x")
        xml = save(ov.Model([o3.non_zero(p, "i32")], [p]), tmp_path, f"nz{k}")
        compare_with_openvino(xml, {"x": v})


# ---- malformed layers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("layer,inputs,outputs,attrs,version,code,fragment", [
    ("DepthToSpace", [("param:x", ((1, 8, 2, 2), "f32"))], [((1, 2, 4, 4), "f32")],
     {"mode": "blocks_first", "block_size": 0}, "opset1", "IRN02", "block_size"),
    ("DepthToSpace", [("param:x", ((1, 8, 2, 2), "f32"))], [((1, 2, 4, 4), "f32")],
     {"mode": "sideways", "block_size": 2}, "opset1", "IRN02", "mode"),
    ("DepthToSpace", [("param:x", ((1, 8), "f32"))], [((1, 8), "f32")], {"mode": "blocks_first"}, "opset1",
     "IRN032", "rank >= 3"),
    ("DepthToSpace", [("param:x", ((1, 6, 2, 2), "f32"))], [((1, 1, 4, 4), "f32")],
     {"mode": "depth_first", "block_size": 2}, "opset1", "IRN032", "not a multiple"),
    ("SpaceToDepth", [("param:x", ((1, 2, 3, 4), "f32"))], [((1, 8, 1, 2), "f32")],
     {"mode": "depth_first", "block_size": 2}, "opset1", "IRN032", "spatial dim 2 (3)"),
    ("SpaceToDepth", [("param:x", ((1, 2, 4, 4), "f32"))], [((1, 8, 2, 2), "f32")],
     {"block_size": 2}, "opset1", "IRN02", "mode"),
    ("ReverseSequence", [("param:x", ((2, 3), "f32")), ("param:s", ((2,), "i64"))], [((2, 3), "f32")],
     {"batch_axis": 0, "seq_axis": -2}, "opset1", "IRN032", "same axis 0"),
    ("ReverseSequence", [("param:x", ((2, 3), "f32")), ("param:s", ((2,), "i64"))], [((2, 3), "f32")],
     {"batch_axis": 2, "seq_axis": 1}, "opset1", "IRN032", "out of range"),
    ("ReverseSequence", [("param:x", ((2, 3), "f32")), ("param:s", ((3,), "i64"))], [((2, 3), "f32")],
     None, "opset1", "IRN032", "seq_lengths has 3 values"),
    ("ReverseSequence", [("param:x", ((2, 3), "f32")), ("param:s", ((2, 1), "i64"))], [((2, 3), "f32")],
     None, "opset1", "IRN032", "1-D"),
    ("ReverseSequence", [("param:x", ((2, 3), "f32")), ("param:s", ((2,), "boolean"))], [((2, 3), "f32")],
     None, "opset1", "IRN033", "numeric"),
    ("Eye", [("r", np.array(-3)), ("c", np.array(2)), ("d", np.array(0))], [((2, 2), "f32")],
     {"output_type": "f32"}, "opset9", "IRN032", "num_rows (-3)"),
    ("Eye", [("r", np.array(3)), ("c", np.array(2)), ("d", np.array(0)), ("b", np.array([2, -1]))],
     [((2, 1, 3, 2), "f32")], {"output_type": "f32"}, "opset9", "IRN032", "non-negative"),
    ("Eye", [("r", np.array([3, 4])), ("c", np.array(2)), ("d", np.array(0))], [((3, 2), "f32")],
     {"output_type": "f32"}, "opset9", "IRN032", "one value"),
    ("Eye", [("r", np.array(3.0, np.float32)), ("c", np.array(2)), ("d", np.array(0))], [((3, 2), "f32")],
     {"output_type": "f32"}, "opset9", "IRN033", "integer"),
    ("Eye", [("r", np.array(3)), ("c", np.array(2)), ("d", np.array(0))], [((3, 2), "f32")],
     {"output_type": "string"}, "opset9", "IRN02", "output_type"),
    ("Eye", [("r", np.array(3)), ("c", np.array(2)), ("d", np.array(0))], [((3, 2), "f32")],
     None, "opset9", "IRN02", "output_type"),
    ("Eye", [("r", np.array(1 << 30)), ("c", np.array(1 << 30)), ("d", np.array(0))], [((1 << 30, 1 << 30), "f32")],
     {"output_type": "f32"}, "opset9", "IRN050", "absurd"),
    ("NonZero", [("param:x", ((2, 2), "f32"))], [((2, -1), "i64")], {"output_type": "f32"}, "opset3", "IRN02",
     "output_type"),
])
def test_malformed_rearrange_layers(tmp_path, layer, inputs, outputs, attrs, version, code, fragment):
    b = single_op_model(layer, inputs, outputs, attrs, version=version)
    diags = [d for d in irnorm.check(b.save(tmp_path)) if d.severity == "error"]
    hits = [d for d in diags if d.code.startswith(code) and fragment in d.message]
    assert hits, [(d.code, d.message) for d in diags]
    if code == "IRN032":
        expect_error(b, tmp_path, code, fragment)
