"""ShuffleChannels, SpaceToBatch, BatchToSpace and GRN beyond the conformance rows: random shapes, attributes
and element types against the float64 references and OpenVINO's CPU plugin, dynamic dims and run-time block /
pad values, empty tensors, the CPU plugin's divergences pinned, and coded errors (never a traceback, never a
read outside the data) for malformed layers and for run-time values that do not fit."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import element_type, expect_error, single_op_model
from ovutil import compare_with_openvino, ov_run, requires_openvino, save

import irnorm
from irnorm import reference as R

BF16 = np.dtype(ml_dtypes.bfloat16)
ALL_TYPES = (np.float32, np.float16, np.float64, BF16, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32,
             np.uint16, np.uint8, np.bool_)


def _values(rng, dims, dt):
    if np.dtype(dt) == np.bool_:
        return rng.integers(0, 2, dims).astype(bool)
    if np.dtype(dt).kind in "iu":
        return rng.integers(0, 100, dims).astype(dt)
    return rng.standard_normal(dims).astype(dt)


def _load(b, tmp_path, name="m"):
    return irnorm.load(b.save(tmp_path, name))


def _run(b, tmp_path, feeds, name="m"):
    return _load(b, tmp_path, name).run(feeds)


# ---- ShuffleChannels -----------------------------------------------------------------------------------------


def _np_shuffle(x, axis, group):
    """The spec's formula: reshape [outer, group, C/group, inner], swap the middle dims."""
    ax = axis % x.ndim
    c = x.shape[ax]
    outer, inner = int(np.prod(x.shape[:ax])), int(np.prod(x.shape[ax + 1:]))
    return x.reshape(outer, group, c // group, inner).transpose(0, 2, 1, 3).reshape(x.shape)


def test_shuffle_channels_random_axes_groups_and_every_type(tmp_path):
    rng = np.random.default_rng(1)
    for k, dt in enumerate(ALL_TYPES):
        rank = int(rng.integers(1, 6))
        dims = [int(d) for d in rng.integers(1, 4, rank)]
        axis = int(rng.integers(-rank, rank))
        group = int(rng.integers(1, 5))
        dims[axis] = group * int(rng.integers(1, 4))
        x = _values(rng, dims, dt)
        decl = [-1] * rank if k % 2 else dims
        b = single_op_model("ShuffleChannels", [("param:x", (decl, element_type(dt)))], [(decl, element_type(dt))],
                            {"axis": axis, "group": group}, version="opset1")
        y = _run(b, tmp_path, {"x": x}, f"s{k}")["y"]
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(y, _np_shuffle(x, axis, group), err_msg=f"{dims} {dt} {axis} {group}")
        np.testing.assert_array_equal(y, R.shuffle_channels(x, axis, group))


def test_shuffle_channels_defaults_are_axis_1_group_1(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    b = single_op_model("ShuffleChannels", [("param:x", ((2, 6), "f32"))], [((2, 6), "f32")], None, version="opset1")
    np.testing.assert_array_equal(_run(b, tmp_path, {"x": x})["y"], x)
    b = single_op_model("ShuffleChannels", [("param:x", ((2, 6), "f32"))], [((2, 6), "f32")], {"group": 3},
                        version="opset1")
    assert _run(b, tmp_path, {"x": x}, "g")["y"][0].tolist() == [0, 2, 4, 1, 3, 5]


def test_shuffle_channels_empty_and_constant_input(tmp_path):
    b = single_op_model("ShuffleChannels", [("param:x", ((0, 6, 2), "f32"))], [((0, 6, 2), "f32")], {"group": 2},
                        version="opset1")
    assert _run(b, tmp_path, {"x": np.zeros((0, 6, 2), np.float32)})["y"].shape == (0, 6, 2)
    x = np.arange(6, dtype=np.int32)
    b = single_op_model("ShuffleChannels", [("x", x)], [((6,), "i32")], {"axis": 0, "group": 2}, version="opset1")
    assert _run(b, tmp_path, {}, "c")["y"].tolist() == [0, 3, 1, 4, 2, 5]


@pytest.mark.parametrize("attrs, dims, fragment, code", [
    ({"axis": 1, "group": 4}, (2, 6), "not a multiple of group 4", "IRN032"),
    ({"axis": 2, "group": 1}, (2, 6), "out of range", "IRN032"),
    ({"axis": -3, "group": 1}, (2, 6), "out of range", "IRN032"),
    ({"axis": 0, "group": 0}, (2, 6), "group", "IRN023"),
    ({"axis": 0, "group": -2}, (2, 6), "group", "IRN023"),
    ({"axis": 0, "group": 1}, (), "rank >= 1", "IRN032"),
    ({"axis": "x", "group": 1}, (2, 6), "axis", "IRN021"),
])
def test_shuffle_channels_malformed_is_coded(tmp_path, attrs, dims, fragment, code):
    b = single_op_model("ShuffleChannels", [("param:x", (dims, "f32"))], [(dims, "f32")], attrs, version="opset1")
    d = irnorm.check(b.save(tmp_path))
    hits = [e for e in d if e.code == code]
    assert hits and any(fragment in e.message for e in hits), [(e.code, e.message) for e in d]


def test_shuffle_channels_dynamic_dim_not_dividing_at_run_time(tmp_path):
    b = single_op_model("ShuffleChannels", [("param:x", ((2, -1), "f32"))], [((2, -1), "f32")], {"group": 3},
                        version="opset1")
    m = _load(b, tmp_path)
    assert m.run({"x": np.zeros((2, 9), np.float32)})["y"].shape == (2, 9)
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.zeros((2, 7), np.float32)})
    assert e.value.code == "IRN064" and "not a multiple of group 3" in e.value.diagnostics[0].message


@requires_openvino
def test_shuffle_channels_against_openvino_every_type(tmp_path):
    import openvino as ov
    import openvino.opset3 as o3

    rng = np.random.default_rng(2)
    for k, dt in enumerate(t for t in ALL_TYPES if t != BF16):
        x = _values(rng, (2, 6, 3), dt)
        p = o3.parameter([-1, 6, -1], dt, name="x")
        xml = save(ov.Model([o3.shuffle_channels(p, -2 if k % 2 else 1, 3)], [p]), tmp_path, f"sc{k}")
        compare_with_openvino(xml, {"x": x})


# ---- SpaceToBatch / BatchToSpace -----------------------------------------------------------------------------


def _batch_model(kind, dims, dt, idx_type="i64", values=None, idx_dims=None):
    """data as a Parameter; block / pads as Consts (values given) or Parameters b, p, q."""
    et = element_type(dt)
    ins = [("param:x", (dims, et))]
    for name, v in zip("bpq", values or (None, None, None), strict=True):
        if v is None:
            ins.append((f"param:{name}", (idx_dims or [len(dims)], idx_type)))
        else:
            ins.append((name, np.array(v, {"i64": np.int64, "i32": np.int32, "u8": np.uint8, "i8": np.int8,
                                           "u64": np.uint64, "f32": np.float32}[idx_type])))
    return single_op_model(kind, ins, [([-1] * len(dims), et)], None, version="opset2")


def _random_s2b(rng):
    k = int(rng.integers(1, 4))
    block = [1] + [int(b) for b in rng.integers(1, 4, k)]
    begin = [0] + [int(p) for p in rng.integers(0, 4, k)]
    dims = [int(rng.integers(1, 4))] + [int(d) for d in rng.integers(1, 5, k)]
    end = [0] + [(-(d + p)) % b + b * int(rng.integers(0, 2)) for d, p, b in zip(dims[1:], begin[1:], block[1:],
                                                                                 strict=True)]
    return dims, block, begin, end


def test_space_to_batch_and_back_random_every_type(tmp_path):
    """Constant and run-time blocks, static and dynamic dims: SpaceToBatch matches its element-by-element
    reference and BatchToSpace with the same values as crops gives the data back."""
    rng = np.random.default_rng(3)
    for k, dt in enumerate(ALL_TYPES):
        dims, block, begin, end = _random_s2b(rng)
        x = _values(rng, dims, dt)
        decl = [-1] * len(dims) if k % 2 else dims
        runtime = k % 3 == 0
        vals = None if runtime else (block, begin, end)
        feeds = {"x": x, "b": np.array(block), "p": np.array(begin), "q": np.array(end)} if runtime else {"x": x}
        y = _run(_batch_model("SpaceToBatch", decl, dt, values=vals), tmp_path, feeds, f"s{k}")["y"]
        want = R.space_to_batch(x, block, begin, end)
        assert y.dtype == x.dtype
        np.testing.assert_array_equal(y, want, err_msg=f"{dims} {block} {begin} {end} {dt}")
        feeds["x"] = y
        z = _run(_batch_model("BatchToSpace", [-1] * len(dims), dt, values=vals), tmp_path, feeds, f"b{k}")["y"]
        np.testing.assert_array_equal(z, x)
        np.testing.assert_array_equal(R.batch_to_space(y, block, begin, end), x)


def test_batch_ops_static_shapes_with_constant_values(tmp_path):
    """Known dims are computed from constant values, unknown ones stay -1; run-time values leave every dim
    -1 but the rank."""
    m = _load(_batch_model("SpaceToBatch", (2, 3, -1), np.float32, values=([1, 2, 3], [0, 1, 0], [0, 0, 0])),
              tmp_path, "a")
    assert m.outputs[0].shape == (12, 2, -1)
    m = _load(_batch_model("BatchToSpace", (12, -1, 3), np.float32, values=([1, 2, 3], [0, 1, 0], [0, 0, 2])),
              tmp_path, "b")
    assert m.outputs[0].shape == (2, -1, 7)
    m = _load(_batch_model("SpaceToBatch", (2, 3, 4), np.float32), tmp_path, "c")
    assert m.outputs[0].shape == (-1, -1, -1)


def test_batch_ops_empty_tensors(tmp_path):
    cases = (("SpaceToBatch", (0, 2, 4), [1, 1, 2], [0, 0, 0], [0, 0, 0], (0, 2, 2)),
             ("SpaceToBatch", (2, 0, 4), [1, 2, 2], [0, 1, 0], [0, 1, 0], (8, 1, 2)),
             ("BatchToSpace", (0, 2, 4), [1, 1, 2], [0, 0, 0], [0, 0, 0], (0, 2, 8)),
             ("BatchToSpace", (4, 1, 2), [1, 2, 2], [0, 1, 2], [0, 1, 2], (1, 0, 0)))
    for k, (kind, dims, block, begin, end, want) in enumerate(cases):
        x = np.zeros(dims, np.float32)
        got = _run(_batch_model(kind, dims, np.float32, values=(block, begin, end)), tmp_path,
                   {"x": x}, f"e{k}")["y"]
        ref = (R.space_to_batch if kind == "SpaceToBatch" else R.batch_to_space)(x, block, begin, end)
        assert got.shape == want == ref.shape
        np.testing.assert_array_equal(got, ref)


def test_batch_ops_every_integer_index_type(tmp_path):
    x = np.arange(8, dtype=np.float32).reshape(1, 8)
    for t in ("i32", "i8", "u8", "u64"):
        y = _run(_batch_model("SpaceToBatch", (1, 8), np.float32, t, ([1, 2], [0, 1], [0, 1])), tmp_path, {"x": x},
                 f"s{t}")["y"]
        np.testing.assert_array_equal(y, R.space_to_batch(x, [1, 2], [0, 1], [0, 1]))
        z = _run(_batch_model("BatchToSpace", (2, 5), np.float32, t, ([1, 2], [0, 1], [0, 1])), tmp_path, {"x": y},
                 f"b{t}")["y"]
        np.testing.assert_array_equal(z, x)


@pytest.mark.parametrize("kind, dims, values, fragment", [
    ("SpaceToBatch", (1, 4), ([2, 1], [0, 0], [0, 0]), "block_shape[0] is 2"),
    ("SpaceToBatch", (1, 4), ([1, 0], [0, 0], [0, 0]), "block_shape[1] is 0"),
    ("SpaceToBatch", (1, 4), ([1, -2], [0, 0], [0, 0]), "block_shape[1] is -2"),
    ("SpaceToBatch", (1, 4), ([1, 2], [1, 0], [0, 0]), "pads_begin[0] is 1"),
    ("SpaceToBatch", (1, 4), ([1, 2], [0, 0], [0, -2]), "pads_end[1] is -2"),
    ("SpaceToBatch", (1, 4), ([1, 3], [0, 0], [0, 0]), "not a multiple of block_shape[1] = 3"),
    ("SpaceToBatch", (1, 4, 2), ([1, 2], [0, 0], [0, 0]), "has rank 3"),
    ("SpaceToBatch", (1, 4), ([1, 2, 1], [0, 0, 0], [0, 0, 0]), "has rank 2"),
    ("BatchToSpace", (4, 2), ([2, 2], [0, 0], [0, 0]), "block_shape[0] is 2"),
    ("BatchToSpace", (4, 2), ([1, 3], [0, 0], [0, 0]), "not a multiple of the product of block_shape (3)"),
    ("BatchToSpace", (4, 2), ([1, 2], [0, 3], [0, 2]), "crops more than"),
    ("BatchToSpace", (4, 2), ([1, 2], [0, -1], [0, 0]), "crops_begin[1] is -1"),
    ("BatchToSpace", (4, 2), ([1, 2], [0, 0], [1, 0]), "crops_end[0] is 1"),
])
def test_batch_ops_bad_values_are_coded_at_load_and_at_run_time(tmp_path, kind, dims, values, fragment):
    """OpenVINO's CPU plugin runs several of these (block_shape[0] != 1, batch pads or crops, and every bad
    value given at run time, which gives an empty or garbage output); irnorm refuses them: IRN032 for
    constants, IRN064 for run-time values, before anything is read or allocated."""
    expect_error(_batch_model(kind, dims, np.float32, values=values), tmp_path, "IRN032", fragment)
    m = _load(_batch_model(kind, (-1,) * len(dims), np.float32, idx_dims=[-1]), tmp_path, "rt")
    feeds = {"x": np.zeros(dims, np.float32), "b": np.array(values[0]), "p": np.array(values[1]),
             "q": np.array(values[2])}
    with pytest.raises(irnorm.InputError) as e:
        m.run(feeds)
    assert e.value.code == "IRN064" and fragment in e.value.diagnostics[0].message


def test_batch_ops_malformed_inputs_are_coded(tmp_path):
    # float block_shape (OpenVINO: "block_shape must be an integral number")
    expect_error(_batch_model("SpaceToBatch", (1, 4), np.float32, "f32", ([1, 2], [0, 0], [0, 0])), tmp_path,
                 "IRN033", "block_shape (input 1) must be an integer tensor")
    # data of rank 1
    expect_error(_batch_model("BatchToSpace", (4,), np.float32, values=([1], [0], [0])), tmp_path, "IRN032",
                 "rank >= 2")
    # 2-D block_shape
    b = single_op_model("SpaceToBatch", [("param:x", ((1, 4), "f32")), ("b", np.ones((1, 2), np.int64)),
                                         ("p", np.zeros(2, np.int64)), ("q", np.zeros(2, np.int64))],
                        [((-1, -1), "f32")], None, version="opset2")
    expect_error(b, tmp_path, "IRN032", "must be 1-D")
    # lengths that disagree
    b = single_op_model("SpaceToBatch", [("param:x", ((1, 4), "f32")), ("param:b", ((2,), "i64")),
                                         ("param:p", ((3,), "i64")), ("param:q", ((2,), "i64"))],
                        [((-1, -1), "f32")], None, version="opset2")
    expect_error(b, tmp_path, "IRN032", "same length")
    # BatchToSpace: one element type for the three (OpenVINO refuses i32 / i64 / i32)
    b = single_op_model("BatchToSpace", [("param:x", ((4, 2), "f32")), ("b", np.array([1, 2], np.int32)),
                                         ("p", np.zeros(2, np.int64)), ("q", np.zeros(2, np.int32))],
                        [((-1, -1), "f32")], None, version="opset2")
    expect_error(b, tmp_path, "IRN033", "one element type")
    # SpaceToBatch accepts mixed integer types, as OpenVINO does
    b = single_op_model("SpaceToBatch", [("param:x", ((1, 4), "f32")), ("b", np.array([1, 2], np.int32)),
                                         ("p", np.zeros(2, np.int64)), ("q", np.zeros(2, np.uint8))],
                        [((2, 2), "f32")], None, version="opset2")
    assert _run(b, tmp_path, {"x": np.arange(4, dtype=np.float32).reshape(1, 4)}, "mix")["y"].tolist() == \
        [[0, 2], [1, 3]]


def test_batch_ops_run_time_shapes_of_index_inputs_are_checked(tmp_path):
    m = _load(_batch_model("SpaceToBatch", (-1, -1), np.float32, idx_dims=[-1]), tmp_path)
    x = np.zeros((1, 4), np.float32)
    with pytest.raises(irnorm.InputError) as e:  # OpenVINO returns a [0, 0] output here
        m.run({"x": x, "b": np.array([1, 2, 1]), "p": np.zeros(3, np.int64), "q": np.zeros(3, np.int64)})
    assert e.value.code == "IRN064" and "has rank 2" in e.value.diagnostics[0].message


def test_space_to_batch_absurd_run_time_pads_are_refused_before_allocating(tmp_path):
    m = _load(_batch_model("SpaceToBatch", (1, 4), np.float32), tmp_path)
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.zeros((1, 4), np.float32), "b": np.array([1, 1]), "p": np.array([0, 1 << 50]),
               "q": np.array([0, 0])})
    assert e.value.code == "IRN064" and "absurd size" in e.value.diagnostics[0].message


def test_space_to_batch_absurd_constant_pads_are_refused_at_load(tmp_path):
    expect_error(_batch_model("SpaceToBatch", (1, 4), np.float32, values=([1, 1], [0, 1 << 50], [0, 0])),
                 tmp_path, "IRN050")


@requires_openvino
def test_batch_ops_against_openvino_with_run_time_values(tmp_path):
    """Block and pads as model inputs (static lengths), i32 and i64, ranks 2 to 5, every data type."""
    import openvino as ov
    import openvino.opset2 as o2

    rng = np.random.default_rng(4)
    for k, dt in enumerate(t for t in ALL_TYPES if t != BF16):
        dims, block, begin, end = _random_s2b(rng)
        if len(dims) >= 4 and any(d < b for d, b in zip(dims[1:], block[1:], strict=True)):
            block = [1] * len(dims)  # the CPU plugin's divergence (pinned below): no block longer than its dim
            end = [0] * len(dims)
        it = np.int32 if k % 2 else np.int64
        x = _values(rng, dims, dt)
        p = o2.parameter([-1] * len(dims), dt, name="x")
        idx = [o2.parameter([len(dims)], it, name=n) for n in "bpq"]
        xml = save(ov.Model([o2.space_to_batch(p, *idx)], [p, *idx]), tmp_path, f"s{k}")
        feeds = {"x": x, "b": np.array(block, it), "p": np.array(begin, it), "q": np.array(end, it)}
        y = next(iter(compare_with_openvino(xml, feeds).values()))
        p = o2.parameter([-1] * len(dims), dt, name="x")
        idx = [o2.parameter([len(dims)], it, name=n) for n in "bpq"]
        xml = save(ov.Model([o2.batch_to_space(p, *idx)], [p, *idx]), tmp_path, f"b{k}")
        compare_with_openvino(xml, dict(feeds, x=y))


@requires_openvino
def test_space_to_batch_cpu_plugin_fills_padding_only_blocks_from_the_next_batch(tmp_path):
    """4-D / 5-D data with a dim shorter than its block, so that a block offset holds only padding: OpenVINO
    2026.4's CPU kernel writes other data values there (here the next batch's) instead of zeros; OpenVINO's own
    reference (constant folding) gives zeros, as the spec and irnorm do."""
    import openvino as ov
    import openvino.opset2 as o2

    x = np.array([1, 2], np.float32).reshape(2, 1, 1, 1)
    vals = [np.array(v, np.int64) for v in ([1, 3, 1, 1], [0, 1, 0, 0], [0, 4, 0, 0])]
    p = o2.parameter([2, 1, 1, 1], np.float32, name="x")
    xml = save(ov.Model([o2.space_to_batch(p, *(o2.constant(v) for v in vals))], [p]), tmp_path, "cpu")
    cpu = next(iter(ov_run(xml, {"x": x}).values()))
    got = irnorm.load(xml).run({"x": x})
    y = next(iter(got.values()))
    want = R.space_to_batch(x, *vals)
    np.testing.assert_array_equal(y, want)
    assert want[4, 0, 0, 0] == 0 and cpu[4, 0, 0, 0] == 2  # batch 4 = offset 2 of image 0: padding only
    folded = ov.Model([o2.space_to_batch(o2.constant(x), *(o2.constant(v) for v in vals))], [])
    fxml = save(folded, tmp_path, "folded")
    np.testing.assert_array_equal(next(iter(ov_run(fxml, {}).values())), want)


# ---- GRN -----------------------------------------------------------------------------------------------------


def _np_grn(x, bias):
    """The CPU plugin's arithmetic: float64 sum of squares of the float32 values, root rounded to float32."""
    v = x.astype(np.float32)
    s = (v.astype(np.float64) ** 2).sum(axis=1, keepdims=True)
    return (v / np.sqrt(s + np.float64(np.float32(bias))).astype(np.float32)).astype(x.dtype)


@pytest.mark.parametrize("dt", [np.float32, np.float16, BF16, np.float64])
def test_grn_random_ranks_and_types(tmp_path, dt):
    rng = np.random.default_rng(5)
    for k in range(6):
        dims = tuple(int(d) for d in rng.integers(1, 6, int(rng.integers(2, 5))))
        x = (rng.standard_normal(dims) * 3).astype(dt)
        bias = float(rng.choice([1e-4, 0.5, 2.0]))
        decl = [-1] * len(dims) if k % 2 else dims
        b = single_op_model("GRN", [("param:x", (decl, element_type(dt)))], [(decl, element_type(dt))],
                            {"bias": bias}, version="opset1")
        y = _run(b, tmp_path, {"x": x}, f"g{k}")["y"]
        assert y.dtype == x.dtype and y.shape == x.shape
        tol = {np.dtype(np.float32): 1e-6, np.dtype(np.float16): 1e-3, BF16: 8e-3, np.dtype(np.float64): 1e-6}
        np.testing.assert_allclose(y.astype(np.float64), R.grn(x, bias), rtol=tol[np.dtype(dt)],
                                   atol=tol[np.dtype(dt)])
        if dt != np.float64:
            np.testing.assert_array_equal(y, _np_grn(x, bias))


def test_grn_accumulates_in_float64(tmp_path):
    """|x| ~ 1e25: the squares overflow float32, not OpenVINO's (or irnorm's) float64 sum."""
    x = (np.array([[3.0, 4.0], [-1.0, 0.0]]) * 1e25).astype(np.float32)
    b = single_op_model("GRN", [("param:x", ((2, 2), "f32"))], [((2, 2), "f32")], {"bias": 1.0}, version="opset1")
    y = _run(b, tmp_path, {"x": x})["y"]
    np.testing.assert_allclose(y, [[0.6, 0.8], [-1.0, 0.0]], rtol=1e-6)


def test_grn_degenerate_values(tmp_path):
    """bias 0 on a zero row gives NaN (0/0); a negative bias NaN where the sum is below it; NaN spreads over
    its row (the channels), inf gives NaN at its place and zeros beside it -- the formula, as in OpenVINO."""
    x = np.array([[0.0, 3.0, 0.1, np.nan, np.inf], [0.0, 4.0, 0.1, 1.0, 1.0]], np.float32).T.copy()  # [5, 2]
    for bias, want in ((0.0, [[np.nan, 0.6, 0.70710677, np.nan, np.nan], [np.nan, 0.8, 0.70710677, np.nan, 0.0]]),
                       (-1.0, [[np.nan, 0.61237246, np.nan, np.nan, np.nan], [np.nan, 0.81649658, np.nan, np.nan,
                                                                              0.0]])):
        b = single_op_model("GRN", [("param:x", ((5, 2), "f32"))], [((5, 2), "f32")], {"bias": bias},
                            version="opset1")
        np.testing.assert_allclose(_run(b, tmp_path, {"x": x}, f"b{bias}")["y"], np.array(want).T, rtol=1e-6)


def test_grn_empty(tmp_path):
    for k, dims in enumerate(((0, 3, 2), (2, 0, 2), (2, 3, 0, 4))):
        b = single_op_model("GRN", [("param:x", (dims, "f32"))], [(dims, "f32")], {"bias": 1.0}, version="opset1")
        assert _run(b, tmp_path, {"x": np.zeros(dims, np.float32)}, f"e{k}")["y"].shape == dims


@pytest.mark.parametrize("dims, et, attrs, code, fragment", [
    ((6,), "f32", {"bias": 1.0}, "IRN032", "rank 2, 3 or 4"),
    ((1, 2, 2, 2, 2), "f32", {"bias": 1.0}, "IRN032", "rank 2, 3 or 4"),
    ((2, 3), "i32", {"bias": 1.0}, "IRN033", "floating-point"),
    ((2, 3), "f32", {}, "IRN020", "bias"),
    ((2, 3), "f32", {"bias": "nan"}, "IRN021", "bias"),
])
def test_grn_malformed_is_coded(tmp_path, dims, et, attrs, code, fragment):
    b = single_op_model("GRN", [("param:x", (dims, et))], [(dims, et)], attrs, version="opset1")
    d = irnorm.check(b.save(tmp_path))
    hits = [e for e in d if e.code == code]
    assert hits and any(fragment in e.message for e in hits), [(e.code, e.message) for e in d]


def test_grn_rank_checked_at_run_time_for_an_unknown_rank(tmp_path):
    b = single_op_model("GRN", [("param:x", ((-1, -1, -1, -1, -1), "f32"))], [((-1,) * 5, "f32")], {"bias": 1.0},
                        version="opset1")
    expect_error(b, tmp_path, "IRN032", "rank 2, 3 or 4")


@requires_openvino
@pytest.mark.parametrize("dt", [np.float32, np.float16, np.float64])
def test_grn_against_openvino(tmp_path, dt):
    import openvino as ov
    import openvino.opset1 as o1

    rng = np.random.default_rng(6)
    for k, dims in enumerate(((3, 7), (2, 5, 4), (1, 16, 3, 3))):
        for scale in (1.0, 1e22) if dt == np.float32 else (1.0,):
            x = (rng.standard_normal(dims) * scale).astype(dt)
            p = o1.parameter([-1] * len(dims), dt, name="x")
            xml = save(ov.Model([o1.grn(p, 0.75)], [p]), tmp_path, f"g{k}{scale:g}")
            compare_with_openvino(xml, {"x": x})


@requires_openvino
def test_compare_against_reference_runs_all_four(tmp_path):
    """`irnorm compare --against reference` on a model chaining the four ops (block and pads as model inputs):
    every layer has its float64 reference (irnorm/workbench/refeval.py), and irnorm agrees with it."""
    import subprocess
    import sys

    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset2 as o2
    import openvino.opset3 as o3

    x = o2.parameter([2, 8, 4, 6], np.float32, name="x")
    idx = [o2.parameter([4], np.int64, name=n) for n in "bpq"]
    y = o3.shuffle_channels(x, 1, 4)
    y = o1.grn(y, 0.5)
    y = o2.space_to_batch(y, *idx)
    y = o2.batch_to_space(y, *idx)
    y.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([y], [x, *idx]), tmp_path, "chain")
    rng = np.random.default_rng(1)
    feeds = {"x": rng.standard_normal((2, 8, 4, 6)).astype(np.float32), "b": np.array([1, 1, 2, 3], np.int64),
             "p": np.array([0, 0, 1, 0], np.int64), "q": np.array([0, 0, 1, 0], np.int64)}
    np.savez(tmp_path / "in.npz", **feeds)
    r = subprocess.run([sys.executable, "-m", "irnorm", "compare", str(xml), "--against", "reference", "--inputs",
                        str(tmp_path / "in.npz")], capture_output=True, text=True)
    assert r.returncode == 0 and "no divergence" in r.stdout and "no reference" not in r.stdout, r.stdout + r.stderr
