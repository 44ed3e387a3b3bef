"""The per-shape shortcuts a small model's layers take (decided once per input shape instead of per
call) give what the general paths give: bit for bit where the arithmetic is the same, follow a change of
shape or of a run-time operand, and still write into the caller's out= arrays."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import IRBuilder

import irnorm
from irnorm.kernels import moments
from irnorm.kernels.pool import OUTPUTS
from irnorm.ops.layer_norm import affine_tables, pad_rank


def _binary_model(tmp_path, op: str, a_shape, b_shape):
    b = IRBuilder("bin")
    a = b.parameter("a", a_shape, "f32")
    c = b.parameter("b", b_shape, "f32")
    out = tuple(-1 if -1 in (x, y) else max(x, y) for x, y in zip(a_shape, b_shape, strict=True))
    (y,) = b.layer(op, [a, c], [(out, "f32")], {"auto_broadcast": "numpy"}, version="opset1", names=["y"])
    b.result(y)
    return irnorm.load(b.save(tmp_path))


@pytest.mark.parametrize("op,ufunc", [("Add", np.add), ("Subtract", np.subtract), ("Multiply", np.multiply),
                                      ("Divide", np.divide), ("Maximum", np.maximum), ("Minimum", np.minimum)])
def test_small_binary_follows_shape_changes_and_equals_numpy(tmp_path, op, ufunc):
    """A dynamic model alternates shapes (same-shape, broadcast either way, one element, empty): each
    result is numpy's own, bit for bit; a memo keyed on the first shape must not leak into the next."""
    m = _binary_model(tmp_path, op, (-1, 4), (-1, 4))
    rng = np.random.default_rng(3)
    for rows_a, rows_b in [(3, 3), (1, 5), (5, 1), (3, 3), (1, 1), (0, 1), (2, 2)]:
        a = rng.standard_normal((rows_a, 4)).astype(np.float32)
        b = (rng.standard_normal((rows_b, 4)) + 3).astype(np.float32)
        got = m.run({"a": a, "b": b})["y"]
        want = ufunc(a, b)
        assert got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_array_equal(got, want)


def test_small_binary_writes_into_the_callers_out_array(tmp_path):
    m = _binary_model(tmp_path, "Add", (2, 3), (2, 3))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 0.5, np.float32)
    m.run({"a": a, "b": b})  # the shape's path decided first, without out=
    out = np.full((2, 3), np.nan, np.float32)
    produced = []
    got = m.run({"a": a, "b": b}, out=[out], on_layer=lambda node, arrays, _s: produced.extend(arrays))
    assert got["y"] is out
    np.testing.assert_array_equal(out, a + b)
    assert any(np.shares_memory(p, out) for p in produced), "the kernel did not write into out="


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,axes", [((1, 8, 32), [2]), ((3, 5), [1]), ((2, 4, 3, 7), [3]), ((1, 1, 1), [2])])
def test_bound_small_normalizer_is_the_general_normalize(dtype, shape, axes):
    """moments.normalizer's small-rows path (no transpose, f32/f64, output below the pool's size) gives
    moments.normalize's result bit for bit, also with zero-variance rows and huge means, before and
    after it binds its entry point; under OUTPUTS.provide it writes into the given array."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal(shape) * 3 + 1e4).astype(dtype)
    x.reshape(-1, shape[-1])[0] = 7.0  # a constant row: zero variance
    n = shape[-1]
    scale = rng.standard_normal(n).astype(dtype)
    bias = rng.standard_normal(n).astype(dtype)
    # the per-last-axis scale and bias as the kernels take them (how a fused MVN + Multiply + Add calls)
    (ts, tb), o_mod, seg_len = affine_tables(shape, axes, [pad_rank(scale, len(shape)), pad_rank(bias, len(shape))])
    kw = dict(scale=ts, bias=tb, o_mod=o_mod, seg_len=seg_len)
    bound = moments.normalizer(shape, np.dtype(dtype), axes, moments.INSIDE_SQRT, 1e-5, **kw)
    want = moments.normalize(x, axes, moments.INSIDE_SQRT, 1e-5, **kw)
    for _ in range(4):  # the first calls go through Numba's dispatcher, later ones the entry point bound to x
        got = bound(x)
        assert got.shape == x.shape and got.dtype == x.dtype and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
    assert not np.shares_memory(bound(x), got)  # a fresh result every call
    assert np.isfinite(got).all()
    ref = (x.astype(np.float64) - x.astype(np.float64).mean(-1, keepdims=True))
    ref = ref / np.sqrt((ref * ref).mean(-1, keepdims=True) + 1e-5) * scale + bias
    np.testing.assert_allclose(got, ref, rtol=2e-3 if dtype == np.float32 else 1e-9,
                               atol=2e-3 if dtype == np.float32 else 1e-9)
    dest = np.full(shape, np.nan, dtype)
    with OUTPUTS.provide([dest]):
        y = bound(x)
    assert np.shares_memory(y, dest)
    np.testing.assert_array_equal(dest, want)


def test_reshape_with_a_runtime_target_follows_its_values(tmp_path):
    """A Reshape whose target is an input: the shape memo is keyed by the target's bytes, so new values
    give new shapes (and bad ones still fail at run time)."""
    b = IRBuilder("rt")
    x = b.parameter("x", (2, 3), "f32")
    t = b.parameter("t", (-1,), "i64")
    (y,) = b.layer("Reshape", [x, t], [((-1,), "f32")], {"special_zero": "false"}, version="opset1", names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    for target in ([3, 2], [6], [1, 6, 1], [3, 2], [-1, 3]):
        got = m.run({"x": v, "t": np.array(target, np.int64)})["y"]
        np.testing.assert_array_equal(got, v.reshape(target))
        assert not np.shares_memory(got, v)
    with pytest.raises(irnorm.InputError):
        m.run({"x": v, "t": np.array([4, 2], np.int64)})


def test_pad_and_roll_follow_shapes_and_run_time_operands(tmp_path):
    """Pad and Roll remember their checked geometry per (shape, pads / shifts, axes): a dynamic model fed
    changing shapes and run-time pads, shifts and axes gives numpy's np.pad / np.roll each time (a
    repeated axis adds its shifts; negative pads crop), and a bad operand still fails at run time."""
    b = IRBuilder("padroll")
    x = b.parameter("x", (-1, -1, -1), "f32")
    pb = b.parameter("pb", (3,), "i64")
    pe = b.parameter("pe", (3,), "i64")
    v = b.parameter("v", (), "f32")
    sh = b.parameter("sh", (-1,), "i64")
    ax = b.parameter("ax", (-1,), "i64")
    (p,) = b.layer("Pad", [x, pb, pe, v], [((-1, -1, -1), "f32")], {"pad_mode": "constant"}, version="opset12",
                   names=["p"])
    (r,) = b.layer("Roll", [x, sh, ax], [((-1, -1, -1), "f32")], version="opset7", names=["r"])
    b.result(p)
    b.result(r)
    m = irnorm.load(b.save(tmp_path))
    rng = np.random.default_rng(5)
    cases = [((2, 3, 4), [0, 0, 0], [0, 0, 0], [1, -1], [1, 2]), ((2, 3, 4), [1, 0, 2], [0, 3, 1], [5, 2], [0, 0]),
             ((4, 1, 5), [-1, 0, 1], [0, 2, -2], [-3], [2]), ((2, 3, 4), [1, 0, 2], [0, 3, 1], [7, -8, 1], [0, 1, 2]),
             ((0, 3, 2), [1, 1, 0], [0, 0, 1], [2], [1]), ((2, 3, 4), [0, 0, 0], [0, 0, 0], [1, -1], [1, 2])]
    for shape, begin, end, shift, axes in cases:
        xv = rng.standard_normal(shape).astype(np.float32)
        got = m.run({"x": xv, "pb": np.array(begin, np.int64), "pe": np.array(end, np.int64),
                     "v": np.array(2.5, np.float32), "sh": np.array(shift, np.int64), "ax": np.array(axes, np.int64)})
        crop = tuple(slice(max(-bb, 0), d - max(-e, 0)) for d, bb, e in zip(shape, begin, end, strict=True))
        want_p = np.pad(xv[crop], [(max(bb, 0), max(e, 0)) for bb, e in zip(begin, end, strict=True)],
                        constant_values=2.5)
        np.testing.assert_array_equal(got["p"], want_p)
        np.testing.assert_array_equal(got["r"], np.roll(xv, shift, axis=axes))
    feeds = {"x": np.zeros((2, 3, 4), np.float32), "pb": np.array([0, -4, 0], np.int64),
             "pe": np.array([0, 0, 0], np.int64), "v": np.array(0, np.float32), "sh": np.array([1, 2], np.int64),
             "ax": np.array([0], np.int64)}
    with pytest.raises(irnorm.InputError):  # crops more than the dim has
        m.run(feeds)
    feeds["pb"] = np.array([0, 0, 0], np.int64)
    with pytest.raises(irnorm.InputError):  # two shifts for one axis
        m.run(feeds)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_group_norm_bound_per_shape_equals_the_general_path(tmp_path, monkeypatch, dtype):
    """GroupNormalization with constant scale and bias binds the moments kernel per input shape; the same
    layer with scale and bias fed at run time takes the general path every call: bit-identical results
    over changing shapes (one group, one channel per group, a spatial size of 1, zero-variance groups)."""
    t = np.float32 if dtype == "f32" else np.float64
    rng = np.random.default_rng(11)
    scale, bias = rng.standard_normal(6).astype(t), rng.standard_normal(6).astype(t)
    models = []
    for const in (True, False):
        b = IRBuilder("gn")
        x = b.parameter("x", (-1, 6, -1, -1), dtype)
        s = b.const(scale) if const else b.parameter("s", (6,), dtype)
        o = b.const(bias) if const else b.parameter("o", (6,), dtype)
        groups = 3
        (y,) = b.layer("GroupNormalization", [x, s, o], [((-1, 6, -1, -1), dtype)],
                       {"num_groups": str(groups), "epsilon": "1e-5"}, version="opset12", names=["y"])
        b.result(y)
        models.append(irnorm.load(b.save(tmp_path / str(const))))
    calls = []
    general_normalize = moments.normalize
    monkeypatch.setattr(moments, "normalize", lambda *a, **k: calls.append(1) or general_normalize(*a, **k))
    for shape in [(1, 6, 4, 4), (2, 6, 1, 1), (1, 6, 4, 4), (3, 6, 2, 5), (0, 6, 2, 2)]:
        xv = (rng.standard_normal(shape) * 4 + 100).astype(t)
        if xv.size:
            xv[0, :2] = 7  # a zero-variance group
        before = len(calls)
        bound = models[0].run({"x": xv})["y"]
        assert len(calls) == before or not xv.size, "the bound layer went through normalize()"
        general = models[1].run({"x": xv, "s": scale, "o": bias})["y"]
        assert len(calls) == before + 1 + (not xv.size)
        assert bound.shape == shape and bound.tobytes() == general.tobytes()
        if xv.size:
            g = xv.reshape(shape[0], 3, -1).astype(np.float64)
            want = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(shape)
            want = want * scale.reshape(1, 6, 1, 1) + bias.reshape(1, 6, 1, 1)
            np.testing.assert_allclose(bound, want, rtol=1e-4 if dtype == "f32" else 1e-10, atol=1e-4)


def test_variadic_split_follows_shapes_and_run_time_lengths(tmp_path):
    """VariadicSplit keeps each part's slice per (shape, axis, lengths): changing shapes and run-time
    lengths (-1 for the rest, an empty part) give np.split's parts each time; lengths that do not fit
    the dim fail at run time."""
    b = IRBuilder("vsplit")
    x = b.parameter("x", (2, -1), "f32")
    ln = b.parameter("ln", (3,), "i64")
    outs = b.layer("VariadicSplit", [x, b.const(np.array(-1, np.int64)), ln], [((2, -1), "f32")] * 3,
                   version="opset1", names=["a", "b", "c"])
    for o in outs:
        b.result(o)
    m = irnorm.load(b.save(tmp_path))
    rng = np.random.default_rng(2)
    for width, lengths in [(7, [-1, 2, 0]), (5, [1, 1, 3]), (7, [0, -1, 7 - 0 - 3]), (7, [-1, 2, 0]), (0, [0, 0, -1])]:
        xv = rng.standard_normal((2, width)).astype(np.float32)
        got = m.run({"x": xv, "ln": np.array(lengths, np.int64)})
        sizes = [width - sum(v for v in lengths if v != -1) if v == -1 else v for v in lengths]
        want = np.split(xv, np.cumsum(sizes)[:-1], axis=-1)
        for g, w in zip(got.values(), want, strict=True):
            np.testing.assert_array_equal(g, w)
            assert g.flags.c_contiguous
    with pytest.raises(irnorm.InputError):
        m.run({"x": np.zeros((2, 4), np.float32), "ln": np.array([1, 1, 1], np.int64)})


@pytest.mark.parametrize("with_indices", [False, True])
def test_max_pool_bound_per_shape_follows_shape_changes(tmp_path, with_indices):
    """MaxPool binds its geometry and kernel call per input shape: a dynamic model fed changing shapes
    (the 3x3/2 window CNNs use, with padding; a plane smaller than the padded window's reach) gives a
    float64 reference's maxima (and their flat indices) each time."""
    b = IRBuilder("mp")
    x = b.parameter("x", (-1, 3, -1, -1), "f32")
    attrs = {"kernel": "3,3", "strides": "2,2", "pads_begin": "1,1", "pads_end": "1,1", "dilations": "1,1",
             "rounding_type": "floor", "auto_pad": "explicit", "index_element_type": "i64", "axis": "2"}
    outs = b.layer("MaxPool", [x], [((-1, 3, -1, -1), "f32"), ((-1, 3, -1, -1), "i64")], attrs, version="opset8",
                   names=["y", "i"])
    b.result(outs[0])
    if with_indices:
        b.result(outs[1])
    m = irnorm.load(b.save(tmp_path))
    rng = np.random.default_rng(4)
    for shape in [(1, 3, 8, 8), (2, 3, 5, 7), (1, 3, 8, 8), (1, 3, 1, 2), (1, 3, 16, 9)]:
        xv = rng.standard_normal(shape).astype(np.float32)
        got = m.run({"x": xv})
        padded = np.pad(xv.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)], constant_values=-np.inf)
        oh, ow = (shape[2] + 2 - 3) // 2 + 1, (shape[3] + 2 - 3) // 2 + 1
        win = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))[:, :, ::2, ::2][:, :, :oh, :ow]
        want = win.reshape(win.shape[:4] + (9,)).max(-1)
        np.testing.assert_array_equal(got["y"], want.astype(np.float32))
        if with_indices:
            flat = xv.reshape(shape[0], shape[1], -1)
            picked = np.take_along_axis(flat, got["i"].reshape(shape[0], shape[1], -1), -1)
            np.testing.assert_array_equal(picked.reshape(got["y"].shape), got["y"])


@pytest.mark.parametrize("stride", [1, 2])
def test_depthwise_convolution_planned_per_shape_follows_shape_changes(tmp_path, stride):
    """A depthwise GroupConvolution with constant filters plans its kernel per input shape (the
    channels-inner kernel on small planes, the padded-row one at stride 1 on larger ones): a dynamic
    model fed changing spatial sizes and batches matches the float64 reference each time."""
    from irnorm import reference as R

    c = 24
    rng = np.random.default_rng(9)
    w = rng.standard_normal((c, 1, 1, 3, 3)).astype(np.float32)
    b = IRBuilder("dw")
    x = b.parameter("x", (-1, c, -1, -1), "f32")
    attrs = {"strides": f"{stride},{stride}", "pads_begin": "1,1", "pads_end": "1,1", "dilations": "1,1",
             "auto_pad": "explicit"}
    (y,) = b.layer("GroupConvolution", [x, b.const(w)], [((-1, c, -1, -1), "f32")], attrs, version="opset1",
                   names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    for shape in [(1, c, 2, 2), (1, c, 20, 20), (2, c, 5, 7), (1, c, 2, 2), (1, c, 40, 33)]:
        xv = rng.standard_normal(shape).astype(np.float32)
        got = m.run({"x": xv})["y"]
        want = R.group_convolution(xv.astype(np.float64), w.astype(np.float64), [stride] * 2, [1, 1], [1, 1],
                                   [1, 1])
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["f32", "f64", "i32", "i64", "u8", "f16", "boolean"])
def test_pad_of_the_last_two_dims_is_one_kernel_pass(tmp_path, monkeypatch, dtype):
    """A constant Pad of only the last two dims (NCHW spatial padding) is filled by one kernel pass into a
    pooled buffer: numpy's np.pad for every rank from 1 to 5, empty planes, one-sided pads, the pad value
    (f16 and boolean data take numpy's path: the same results)."""
    np_dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
                "f16": np.float16, "boolean": np.bool_}[dtype]
    rng = np.random.default_rng(len(dtype))
    from irnorm.kernels import planes

    calls = []
    kernel = planes.fill_padded
    monkeypatch.setattr(planes, "fill_padded", lambda *a: calls.append(a[4].dtype) or kernel(*a))
    padded = 0
    for rank in range(1, 6):
        b = IRBuilder("pad")
        x = b.parameter("x", (-1,) * rank, dtype)
        pb = b.parameter("pb", (rank,), "i64")
        pe = b.parameter("pe", (rank,), "i64")
        v = b.parameter("v", (), dtype)
        (p,) = b.layer("Pad", [x, pb, pe, v], [((-1,) * rank, dtype)], {"pad_mode": "constant"},
                       version="opset12", names=["p"])
        b.result(p)
        m = irnorm.load(b.save(tmp_path / f"r{rank}"))
        value = np.array(1, np_dtype) if dtype == "boolean" else np.array(7, np_dtype)
        lead = [0] * max(rank - 2, 0)
        for shape_tail, pads in [((5, 6), ([1, 2], [3, 0])), ((4, 3), ([0, 1], [0, 1])), ((0, 3), ([1, 1], [2, 0])),
                                 ((3, 4), ([2, 0], [0, 0])), ((2, 5), ([0, 0], [0, 0]))]:
            shape = (2, 3, 1)[:max(rank - 2, 0)] + shape_tail[-min(rank, 2):]
            begin, end = (lead + pads[0])[-rank:], (lead + pads[1])[-rank:]
            xv = (rng.standard_normal(shape) * 50).astype(np_dtype)
            got = m.run({"x": xv, "pb": np.array(begin, np.int64), "pe": np.array(end, np.int64), "v": value})["p"]
            want = np.pad(xv, list(zip(begin, end, strict=True)), constant_values=value)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            padded += any(begin) or any(end)
    # the kernel filled every padded output of the types it copies, none of the others
    assert padded == 19 and len(calls) == (0 if dtype in ("f16", "boolean") else padded)
