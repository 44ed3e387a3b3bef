"""Shape ops (ShapeOf, Gather, Concat, Reshape, Squeeze, Unsqueeze, Broadcast) against OpenVINO on
IRs written by openvino.save_model, load-time folding of static shape subgraphs, the dynamic
ShapeOf -> Gather -> Concat -> Reshape chains real dynamic exports contain, and malformed IR."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error
from ovutil import compare_with_openvino, ov_run, requires_openvino, save

import irnorm

ov = pytest.importorskip("openvino")
op1 = pytest.importorskip("openvino.opset1")
op3 = pytest.importorskip("openvino.opset3")
op7 = pytest.importorskip("openvino.opset7")
op8 = pytest.importorskip("openvino.opset8")
op15 = pytest.importorskip("openvino.opset15")


def C(v, dtype=np.int64):
    return op1.constant(np.array(v, dtype))


def _model(outputs: dict, params: list):
    outs = []
    for name, node in outputs.items():
        node.output(0).get_tensor().set_names({name})
        outs.append(op1.result(node))
    return ov.Model(outs, params, "m")


def _step_types(m) -> list[str]:
    return [n.layer.type for n in m.layers_run]


def _f32(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


# ---- ShapeOf -------------------------------------------------------------------------------------


@requires_openvino
def test_shape_of_folds_when_static_and_runs_when_dynamic(tmp_path):
    rng = np.random.default_rng(21)
    x = op1.parameter([2, 3, 4], np.float32, name="x")
    xml = save(_model({"s1": op1.shape_of(x), "s3": op3.shape_of(x, "i32"), "s0": op3.shape_of(op1.shape_of(x))},
                      [x]), tmp_path, "static")
    got = compare_with_openvino(xml, {"x": _f32(rng, (2, 3, 4))}, tol=(0, 0))
    assert got["s1"].dtype == np.int64 and got["s3"].dtype == np.int32 and got["s1"].tolist() == [2, 3, 4]
    m = irnorm.load(xml)
    assert _step_types(m) == []  # everything folded at load time
    x = op1.parameter([-1, 3, -1], np.float32, name="x")
    xml = save(_model({"s1": op1.shape_of(x), "s3": op3.shape_of(x, "i32")}, [x]), tmp_path, "dyn")
    m = irnorm.load(xml)
    assert _step_types(m) == ["ShapeOf", "ShapeOf"]
    for shape in [(1, 3, 1), (5, 3, 7), (0, 3, 2)]:
        got = compare_with_openvino(xml, {"x": _f32(rng, shape)}, tol=(0, 0))
        assert got["s1"].tolist() == list(shape)


# ---- Gather --------------------------------------------------------------------------------------


@requires_openvino
def test_gather_matches_openvino(tmp_path):
    rng = np.random.default_rng(22)
    cases = []
    for _ in range(24):
        r = int(rng.integers(1, 5))
        data = tuple(int(d) for d in rng.integers(1, 5, size=r))
        axis = int(rng.integers(-r, r))
        ax = axis % r
        b = int(rng.integers(0, ax + 1)) if ax else 0
        q_extra = tuple(int(d) for d in rng.integers(1, 4, size=int(rng.integers(0, 3))))
        idx_shape = data[:b] + q_extra
        cases.append((data, axis, b, idx_shape))
    for k, (data, axis, b, idx_shape) in enumerate(cases):
        n = data[axis]
        idx = rng.integers(-n, n, size=idx_shape).astype(np.int64 if k % 2 else np.int32)
        pos = np.where(idx < 0, idx + n, idx).astype(idx.dtype)
        x = op1.parameter(list(data), np.float32, name="x")
        outs = {"g8": op8.gather(x, C(idx, idx.dtype), C(axis), batch_dims=b),
                "g7": op7.gather(x, C(pos, idx.dtype), C(axis), batch_dims=b)}
        if b == 0:
            outs["g1"] = op1.gather(x, C(pos, idx.dtype), C(axis))
        if b and k % 3 == 0:  # negative batch_dims counts from the indices rank
            outs["g8neg"] = op8.gather(x, C(idx, idx.dtype), C(axis), batch_dims=b - len(idx_shape))
        xml = save(_model(outs, [x]), tmp_path, f"g{k}")
        got = compare_with_openvino(xml, {"x": _f32(rng, data)}, tol=(0, 0))
        want_shape = data[:axis % len(data)] + idx_shape[b:] + data[axis % len(data) + 1:]
        assert got["g8"].shape == want_shape


@requires_openvino
def test_gather_of_one_constant_index_is_indexing_in_the_static_runner(tmp_path):
    """A Gather picking one slice by a constant in-range index on a static model is written into the
    straight-line runner as the indexing itself (a view where it is one C block, else a copy; a [1] index
    keeps the axis; rank-1 data gives a 0-d array); an out-of-range index keeps the kernel (zeros).
    OpenVINO's results bit for bit, numpy's take, and an output that is a view of the caller's input is
    still the model's own array."""
    rng = np.random.default_rng(40)
    cases = [((3, 4, 5), 0, np.array(2)), ((1, 4, 5), 1, np.array(-1)), ((3, 4, 5), 2, np.array(4)),
             ((3, 4, 5), -2, np.array([1])), ((6,), 0, np.array(5, np.int32)), ((3, 4, 5), 1, np.array(7)),
             ((2, 3), 0, np.array(-2))]
    for k, (shape, axis, idx) in enumerate(cases):
        x = op1.parameter(list(shape), np.float32, name="x")
        g = op8.gather(x, C(idx, idx.dtype), C(axis))
        xml = save(_model({"g": g, "h": op1.multiply(g, C(np.float32(2), np.float32))}, [x]), tmp_path, f"sel{k}")
        data = _f32(rng, shape)
        got = compare_with_openvino(xml, {"x": data}, tol=(0, 0))
        n = shape[axis]
        in_range = -n <= int(idx.reshape(-1)[0]) < n
        if in_range:
            np.testing.assert_array_equal(got["g"], np.take(data, idx, axis=axis))
        else:
            assert not got["g"].any()
        m = irnorm.load(xml)
        indexed = "np.ascontiguousarray(" in m._plan.source or "...].copy()" in m._plan.source
        assert indexed == in_range, (k, m._plan.source)
        out = m.run({"x": data})["g"]
        assert isinstance(out, np.ndarray) and not np.shares_memory(out, data)
        assert out.shape == got["g"].shape and out.flags.c_contiguous
        if in_range:
            assert out.shape == np.take(data, idx, axis=axis).shape
        np.testing.assert_array_equal(out, got["g"])


@requires_openvino
def test_slice_with_constant_bounds_is_slicing_in_the_static_runner(tmp_path):
    """Slice-8 with constant bounds on a static model is written into the straight-line runner as the
    slicing itself (clamped bounds, negative steps, an axes subset, an empty result); a dynamic model keeps
    the kernel. Both give OpenVINO's results bit for bit, as C-contiguous arrays that are never the
    caller's input."""
    rng = np.random.default_rng(41)
    cases = [((4, 6, 5), [1, 0], [3, 6], [1, 2], [0, 1]), ((4, 6, 5), [-1], [-100], [-2], [2]),
             ((4, 6, 5), [2, -3], [100, 6], [1, 1], [-1, 1]), ((1, 8, 3), [0], [8], [1], [1]),
             ((3, 5), [4], [1], [1], [1]), ((7,), [5], [-9], [-1], [0])]
    for k, (shape, start, stop, step, axes) in enumerate(cases):
        for static in (True, False):
            dims = list(shape) if static else [-1] + list(shape[1:])
            x = op1.parameter(ov.PartialShape(dims), np.float32, name="x")
            y = op8.slice(x, C(start), C(stop), C(step), C(axes))
            xml = save(_model({"y": y}, [x]), tmp_path, f"sl{k}{static}")
            data = _f32(rng, shape)
            got = compare_with_openvino(xml, {"x": data}, tol=(0, 0))
            m = irnorm.load(xml)
            assert ("np.ascontiguousarray(" in m._plan.source) == static, (k, m._plan.source)
            out = m.run({"x": data})["y"]
            np.testing.assert_array_equal(out, got["y"])
            assert out.flags.c_contiguous and not np.shares_memory(out, data)


@requires_openvino
def test_splits_with_constant_lengths_are_slicing_in_the_static_runner(tmp_path):
    """Split and VariadicSplit with a constant axis and lengths on a static model are written into the
    straight-line runner as one tuple of slices (a -1 length, a zero-length part, a negative axis); a
    dynamic model keeps the kernel. OpenVINO's results bit for bit, every part C-contiguous."""
    rng = np.random.default_rng(42)
    cases = [("split", (2, 6, 4), 1, 3), ("split", (6, 5), -2, 2), ("vsplit", (3, 7, 2), 1, [2, -1, 0, 1]),
             ("vsplit", (4, 9), -1, [1, 8]), ("split", (3, 4), 0, 1)]
    for k, (kind, shape, axis, lengths) in enumerate(cases):
        for static in (True, False):
            dims = list(shape) if static else [-1] + list(shape[1:])
            x = op1.parameter(ov.PartialShape(dims), np.float32, name="x")
            node = op1.split(x, C(axis), lengths) if kind == "split" else \
                op1.variadic_split(x, C(axis), C(np.array(lengths)))
            results = []
            for i in range(len(node.outputs())):
                node.output(i).get_tensor().set_names({f"p{i}"})
                results.append(op1.result(node.output(i)))
            xml = save(ov.Model(results, [x], "m"), tmp_path, f"sp{k}{static}")
            data = _f32(rng, shape)
            got = compare_with_openvino(xml, {"x": data}, tol=(0, 0))
            m = irnorm.load(xml)
            assert ("np.ascontiguousarray(" in m._plan.source) == static, (k, m._plan.source)
            res = m.run({"x": data})
            for name, part in got.items():
                assert res[name].shape == part.shape and res[name].flags.c_contiguous
                np.testing.assert_array_equal(res[name], part)


@requires_openvino
def test_gather_negative_and_out_of_range_indices(tmp_path):
    data = (np.arange(5) * 10).astype(np.float32)
    idx = [-1, 4, 7, -6, 0]
    x = op1.parameter([5], np.float32, name="x")
    xml = save(_model({"g8": op8.gather(x, C(idx), C(0)), "g7": op7.gather(x, C(idx), C(0)),
                       "g1": op1.gather(x, C(idx), C(0))}, [x]), tmp_path, "neg")
    got = irnorm.load(xml).run({"x": data})
    for k in ("g8", "g7", "g1"):  # negative counts from the end; out of range gives 0 (the reference)
        assert got[k].tolist() == [40, 40, 0, 0, 0], k
    cpu = ov_run(xml, {"x": data})
    assert cpu["g8"].tolist() == [40, 40, 0, 0, 0]
    # Pinned CPU deviation: Gather-1/-7 return 0 for negative indices at run time ...
    assert cpu["g7"].tolist() == [0, 40, 0, 0, 0] and cpu["g1"].tolist() == [0, 40, 0, 0, 0]
    # ... while OpenVINO's reference (constant folding) normalizes them, as irnorm does.
    p = op1.parameter([5], np.float32, name="p")
    folded = _model({"g7": op1.add(p, op7.gather(op1.constant(data), C(idx), C(0)))}, [p])
    xml = save(folded, tmp_path, "neg_folded")
    assert ov_run(xml, {"p": np.zeros(5, np.float32)})["g7"].tolist() == [40, 40, 0, 0, 0]
    compare_with_openvino(xml, {"p": np.zeros(5, np.float32)}, tol=(0, 0))


# ---- Concat / Reshape / Squeeze / Unsqueeze / Broadcast ------------------------------------------


@requires_openvino
def test_concat_matches_openvino(tmp_path):
    rng = np.random.default_rng(23)
    for k in range(10):
        r = int(rng.integers(1, 5))
        base = [int(d) for d in rng.integers(1, 5, size=r)]
        axis = int(rng.integers(-r, r))
        shapes = []
        for _ in range(int(rng.integers(1, 4))):
            s = list(base)
            s[axis] = int(rng.integers(0, 4))
            shapes.append(s)
        params = [op1.parameter(s, np.float32, name=f"x{i}") for i, s in enumerate(shapes)]
        xml = save(_model({"y": op1.concat(params, axis)}, params), tmp_path, f"c{k}")
        compare_with_openvino(xml, {f"x{i}": _f32(rng, s) for i, s in enumerate(shapes)}, tol=(0, 0))


RESHAPES = [  # (input shape, target, special_zero)
    ((2, 3, 4), [0, -1], True), ((2, 3, 4), [-1], False), ((2, 3, 4), [4, 0, 2], True), ((2, 3, 4), [4, 3, 2], False),
    ((2, 3, 4), [0, 0, 2, 2], True), ((6,), [2, 1, 3], False), ((1, 1), [], False), ((2, 3), [3, -1], True),
    ((0, 3), [0, -1], False), ((0, 3), [-1, 0], False), ((0, 3), [0, -1], True), ((0, 3), [2, -1], False),
    ((0, 3), [-1], True), ((5,), [5, 1, 1], False),
]


@requires_openvino
def test_reshape_matches_openvino(tmp_path):
    rng = np.random.default_rng(24)
    for k, (shape, target, sz) in enumerate(RESHAPES):
        x = op1.parameter(list(shape), np.float32, name="x")
        t = ov.op.Constant(ov.Tensor(np.array(target, np.int64))) if target else \
            ov.op.Constant(ov.Tensor(np.zeros(0, np.int64)))
        model = _model({"y": op1.reshape(x, t, sz)}, [x])
        xml = save(model, tmp_path, f"r{k}")
        feeds = {"x": _f32(rng, shape)}
        if target:
            got = compare_with_openvino(xml, feeds, tol=(0, 0))
        else:  # OpenVINO cannot read a zero-byte Const back: compare with the in-memory model
            from ovutil import OV_CONFIG, core

            got = irnorm.load(xml).run(feeds)
            want = core().compile_model(model, "CPU", OV_CONFIG)(feeds)[0]
            np.testing.assert_array_equal(got["y"], want)
        assert got["y"].size == int(np.prod(shape))


@requires_openvino
def test_squeeze_and_unsqueeze_match_openvino(tmp_path):
    rng = np.random.default_rng(25)
    x = op1.parameter([1, 3, 1, 2], np.float32, name="x")
    outs = {
        "sq_axis": op1.squeeze(x, C([0])),
        "sq_neg": op1.squeeze(x, C([-2, 0])),
        "sq_skip": op1.squeeze(x, C([1, 2])),  # dim 1 is 3: skipped since 2024.3
        "sq_rep": op1.squeeze(x, C([0, 0])),
        "sq_scalar": op1.squeeze(x, C(2)),
        "sq15": op15.squeeze(x, C([0, 1]), allow_axis_skip=False),
        "sq15skip": op15.squeeze(x, C([2]), allow_axis_skip=True),
        "un": op1.unsqueeze(x, C([0, -1])),
        "un_rep": op1.unsqueeze(x, C([0, 0])),
        "un_mid": op1.unsqueeze(x, C([2, 4])),
        "un_scalar": op1.unsqueeze(x, C(1)),
    }
    xml = save(_model(outs, [x]), tmp_path, "sq")
    got = compare_with_openvino(xml, {"x": _f32(rng, (1, 3, 1, 2))}, tol=(0, 0))
    assert got["sq_skip"].shape == (1, 3, 2) and got["un_rep"].shape == (1, 1, 3, 1, 2)


def _squeeze_no_axes(shape, version="opset1"):
    b = IRBuilder("sq_all")
    x = b.parameter("x", shape, "f32")
    out = tuple(d for d in shape if d != 1)
    (y,) = b.layer("Squeeze", [x], [(out, "f32")], None, version=version, names=["y"])
    b.result(y)
    return b


@requires_openvino
def test_squeeze_without_axes_removes_every_one(tmp_path):
    xml = _squeeze_no_axes((1, 3, 1, 2)).save(tmp_path)
    got = compare_with_openvino(xml, {"x": np.ones((1, 3, 1, 2), np.float32)}, tol=(0, 0))
    assert got["y"].shape == (3, 2)


def test_squeeze_on_dynamic_dims(tmp_path):
    # an axis on a dynamic dim is removed (assumed 1) and must be 1 at run time
    b = IRBuilder("sqdyn")
    x = b.parameter("x", (-1, 3), "f32")
    (y,) = b.layer("Squeeze", [x, b.const(np.array([0], np.int64))], [((3,), "f32")], None, version="opset1",
                   names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    assert m.outputs[0].shape == (3,)
    assert m.run({"x": np.ones((1, 3), np.float32)})["y"].shape == (3,)
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.ones((2, 3), np.float32)})
    assert e.value.code == "IRN064" and "axis 0" in str(e.value) and "not 1" in str(e.value)
    # without axes, a dynamic dim makes the output rank dynamic: fine inside a model
    b = IRBuilder("sqdyn_all")
    x = b.parameter("x", (-1, 1, 3), "f32")
    (y,) = b.layer("Squeeze", [x], [((-1,), "f32")], None, version="opset1")
    (z,) = b.layer("ReduceSum", [y, b.const(np.array([-1], np.int64))], [((-1,), "f32")], {"keep_dims": "false"},
                   version="opset1", names=["z"])
    b.result(z)
    m = irnorm.load(b.save(tmp_path))
    assert m.run({"x": np.ones((4, 1, 3), np.float32)})["z"].tolist() == [3, 3, 3, 3]
    assert m.run({"x": np.ones((1, 1, 3), np.float32)})["z"].tolist() == 3


@requires_openvino
def test_broadcast_matches_openvino(tmp_path):
    rng = np.random.default_rng(26)
    x = op1.parameter([3, 1], np.float32, name="x")
    v = op1.parameter([3], np.float32, name="v")
    outs = {
        "b1_numpy": op1.broadcast(x, C([2, 3, 4])),
        "b1_explicit": op1.broadcast(v, C([2, 3, 4]), C([1]), mode="explicit"),
        "b3_numpy": op3.broadcast(x, C([2, 3, 4])),
        "b3_bidir": op3.broadcast(x, C([2, 1, 5]), broadcast_spec="bidirectional"),
        "b3_bidir_small": op3.broadcast(x, C([1]), broadcast_spec="bidirectional"),
        "b3_explicit": op3.broadcast(x, C([3, 2, 1]), C([0, 2]), broadcast_spec="explicit"),
        "b3_i32_target": op3.broadcast(v, C([2, 3], np.int32)),
    }
    xml = save(_model(outs, [x, v]), tmp_path, "bc")
    text = xml.read_text()
    assert 'mode="none"' in text and 'element_type="u8"' in text  # how Broadcast-1 is written
    got = compare_with_openvino(xml, {"x": _f32(rng, (3, 1)), "v": _f32(rng, (3,))}, tol=(0, 0))
    assert got["b3_bidir"].shape == (2, 3, 5) and got["b3_bidir_small"].shape == (3, 1)


# ---- dynamic chains and folding --------------------------------------------------------------------


def _group_norm_decomposed(shape, groups: int):
    """x -> Reshape [N, G, -1] (target from ShapeOf/Gather/Concat) -> (x - mean) * rsqrt(var + eps)
    -> Reshape back to ShapeOf(x) -> * per-channel scale built from ShapeOf (Gather -> Divide ->
    Broadcast -> Reshape), as dynamic ONNX exports do."""
    c = shape[1]
    x = op1.parameter(list(shape), np.float32, name="x")
    s = op3.shape_of(x)
    n = op8.gather(s, C([0]), C(0))
    tgt = op1.concat([n, C([groups]), C([-1])], 0)
    g = op1.reshape(x, tgt, True)
    mean = op1.reduce_mean(g, C([-1]), True)
    d = op1.subtract(g, mean)
    var = op1.reduce_mean(op1.multiply(d, d), C([-1]), True)
    y = op1.divide(d, op1.sqrt(op1.add(var, C(1e-5, np.float32))))
    y = op1.reshape(y, s, False)
    ch = op8.gather(s, C(1), C(0))  # scalar C
    per_group = op1.divide(ch, C(groups))
    gscale = C((np.arange(groups) + 1).reshape(groups, 1), np.float32)
    scale = op3.broadcast(gscale, op1.concat([C([groups]), op1.unsqueeze(per_group, C(0))], 0),
                          broadcast_spec="bidirectional")
    scale = op1.reshape(scale, op1.concat([C([1]), C([-1]), C([1])], 0), False)
    return _model({"y": op1.multiply(y, scale)}, [x]), c


@requires_openvino
def test_dynamic_shape_chain_matches_openvino(tmp_path):
    rng = np.random.default_rng(27)
    model, _ = _group_norm_decomposed((-1, 6, -1), 3)
    xml = save(model, tmp_path, "chain")
    m = irnorm.load(xml)
    steps = _step_types(m)
    assert "ShapeOf" in steps and steps.count("Reshape") == 2
    # the scale path depends only on the static C = 6: partly known shape values fold it at load time
    assert not {"Broadcast", "Unsqueeze"} & set(steps) and steps.count("Divide") == 1, steps
    assert steps.count("Gather") == 1 and steps.count("Concat") == 1  # N is dynamic: [N, 3, -1] is built per run
    first_reshape = next(n for n in m.layers_run if n.layer.type == "Reshape")
    assert first_reshape.outputs[0].shape == (-1, 3, -1)
    for shape in [(1, 6, 1), (2, 6, 5), (3, 6, 40), (1, 6, 4000)]:
        compare_with_openvino(xml, {"x": (_f32(rng, shape) * 3 + 2)})


@requires_openvino
def test_static_shape_chain_folds_at_load_time(tmp_path):
    rng = np.random.default_rng(28)
    model, _ = _group_norm_decomposed((2, 6, 5), 3)
    xml = save(model, tmp_path, "chain_static")
    m = irnorm.load(xml)
    steps = _step_types(m)
    assert not {"ShapeOf", "Gather", "Concat", "Broadcast", "Unsqueeze"} & set(steps), steps
    assert steps.count("Reshape") == 2  # the two reshapes of the activation tensor remain
    compare_with_openvino(xml, {"x": _f32(rng, (2, 6, 5))})


def test_partly_known_shape_values():
    from irnorm.ops.base import PartialInfo, TensorInfo, partial_of, with_partial

    assert partial_of(TensorInfo((3,), "i64", np.array([1, 2, 3]))) == [1, 2, 3]
    assert partial_of(TensorInfo((3,), "f32", np.array([1, 2, 3], np.float32))) is None
    assert partial_of(PartialInfo((3,), "i64", None, (None, 4, None))) == [None, 4, None]
    assert partial_of(TensorInfo((3,), "i64")) is None
    c = with_partial((2,), "i32", [4, 5])
    assert c.value.dtype == np.int32 and c.value.tolist() == [4, 5] and not isinstance(c, PartialInfo)
    assert with_partial((), "i64", [7]).value.shape == ()
    assert with_partial((2,), "i64", [None, None]).value is None
    assert isinstance(with_partial((2,), "i64", [None, 3]), PartialInfo)


def test_partial_values_flow_through_shape_arithmetic(tmp_path):
    b = IRBuilder("partial")
    x = b.parameter("x", (-1, 4, -1), "f32")
    (s,) = b.layer("ShapeOf", [x], [((3,), "i64")], {"output_type": "i64"}, version="opset3")
    (c,) = b.layer("Gather", [s, b.const(np.array([1, -1], I64)), b.const(np.array(0, I64))], [((2,), "i64")],
                   {"batch_dims": "0"}, version="opset8")
    (c2,) = b.layer("Multiply", [c, b.const(np.array([2, 1], I64))], [((2,), "i64")], {"auto_broadcast": "numpy"},
                    version="opset1")
    (t,) = b.layer("Concat", [b.const(np.array([-1], I64)), c2], [((3,), "i64")], {"axis": "0"}, version="opset1")
    (y,) = b.layer("Reshape", [x, t], [((-1, -1, -1), "f32")], {"special_zero": "false"}, version="opset1",
                   names=["y"])
    b.result(y)
    m = irnorm.load(b.save(tmp_path))
    nodes = {n.layer.type: n for n in m.graph.nodes}
    assert nodes["ShapeOf"].outputs[0].partial == (None, 4, None)
    assert nodes["Gather"].outputs[0].partial == (4, None)
    assert nodes["Multiply"].outputs[0].partial == (8, None)
    assert nodes["Reshape"].outputs[0].shape == (-1, 8, -1)
    v = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    np.testing.assert_array_equal(m.run({"x": v})["y"], v.reshape(-1, 8, 6))


def test_shape_kernels_return_fresh_arrays(tmp_path):
    b = IRBuilder("fresh")
    x = b.parameter("x", (2, 3), "f32")
    (r,) = b.layer("Reshape", [x, b.const(np.array([3, 2], np.int64))], [((3, 2), "f32")], {"special_zero": "false"},
                   version="opset1", names=["r"])
    (u,) = b.layer("Unsqueeze", [x, b.const(np.array([0], np.int64))], [((1, 2, 3), "f32")], None, version="opset1",
                   names=["u"])
    b.result(r)
    b.result(u)
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = irnorm.load(b.save(tmp_path)).run({"x": v})
    for k in ("r", "u"):
        assert not np.shares_memory(out[k], v)


# ---- malformed IR ------------------------------------------------------------------------------------


def _one(type_, inputs, attrs=None, out=((1,), "f32"), version="opset1"):
    """Parameters ('param:NAME', shape, et) or Consts (array) -> one layer -> Result."""
    b = IRBuilder("bad")
    srcs = []
    for spec in inputs:
        if isinstance(spec, tuple):
            _, name, shape, et = spec
            srcs.append(b.parameter(name, shape, et))
        else:
            srcs.append(b.const(np.asarray(spec)))
    (y,) = b.layer(type_, srcs, [out], attrs, version=version, names=["y"])
    b.result(y)
    return b


X23 = ("param", "x", (2, 3), "f32")
I64 = np.int64


@pytest.mark.parametrize("inputs,attrs,code,fragments", [
    ([X23, np.array([4, 5], I64)], {"special_zero": "false"}, "IRN032",
     ("cannot reshape [2,3] (6 elements) to [4,5] (20 elements)",)),
    ([X23, np.array([4, -1], I64)], {"special_zero": "false"}, "IRN032", ("6 is not divisible by 4",)),
    ([X23, np.array([-1, -1], I64)], {"special_zero": "false"}, "IRN032", ("more than one -1",)),
    ([X23, np.array([-2, 3], I64)], {"special_zero": "false"}, "IRN032", ("value -2 at index 0 is invalid",)),
    ([X23, np.array([0, 0, 0], I64)], {"special_zero": "true"}, "IRN032",
     ("0 at index 2 copies input dim 2", "has rank 2")),
    ([X23, np.array([[6]], I64)], {"special_zero": "false"}, "IRN032", ("target shape must be 1-D",)),
    ([X23, np.array([6.0], np.float32)], {"special_zero": "false"}, "IRN033", ("target shape must be an integer",)),
    ([X23, np.array([6], I64)], None, "IRN020", ("special_zero",)),
    ([X23, ("param", "t", (2,), "i64")], {"special_zero": "false"}, None, ()),  # runtime target: fine
])
def test_malformed_reshape(tmp_path, inputs, attrs, code, fragments):
    b = _one("Reshape", inputs, attrs, out=((-1, -1), "f32"))
    if code is None:
        assert not [d for d in irnorm.check(b.save(tmp_path)) if d.severity == "error"]
    else:
        expect_error(b, tmp_path, code, *fragments)


@pytest.mark.parametrize("inputs,attrs,version,code,fragments", [
    ([X23, np.array([0], I64), np.array(2, I64)], None, "opset8", "IRN032", ("axis value 2 is out of range",)),
    ([X23, np.array([0], I64), np.array([0, 1], I64)], None, "opset8", "IRN032", ("axis must hold one value",)),
    ([X23, np.array([0.0], np.float32), np.array(0, I64)], None, "opset8", "IRN033", ("indices must be an integer",)),
    ([X23, np.array([[0]], I64), np.array(1, I64)], {"batch_dims": "2"}, "opset8", "IRN032",
     ("batch_dims=2 must not exceed the axis (1)",)),
    ([X23, np.array([0], I64), np.array(1, I64)], {"batch_dims": "3"}, "opset8", "IRN032",
     ("batch_dims=3 is out of range",)),
    ([X23, np.array([[0], [1], [0]], I64), np.array(1, I64)], {"batch_dims": "1"}, "opset7", "IRN032",
     ("batch dim 0 differs", "data [2,3] has 2", "indices [3,1] have 3")),
    ([X23, np.array([0], I64), ("param", "ax", (), "i64")], None, "opset8", "IRN034", ("axis", "constant")),
    ([X23, np.array([0], I64), np.array(0, I64)], {"batch_dims": "0"}, "opset1", "IRN022", ("batch_dims",)),
])
def test_malformed_gather(tmp_path, inputs, attrs, version, code, fragments):
    expect_error(_one("Gather", inputs, attrs, version=version), tmp_path, code, *fragments)


@pytest.mark.parametrize("inputs,axis,code,fragments", [
    ([X23, ("param", "z", (2, 3, 1), "f32")], "0", "IRN032", ("input 1 has rank 3",)),
    ([X23, ("param", "z", (4, 4), "f32")], "0", "IRN032", ("differs from input 0 [2,3] in dim 1 (4 vs 3)",)),
    ([X23, ("param", "z", (2, 3), "f16")], "0", "IRN033", ("input 1 has element type f16",)),
    ([X23, X23], "2", "IRN032", ("axis value 2 is out of range",)),
    ([("param", "s", (), "f32")], "0", "IRN032", ("rank >= 1",)),
])
def test_malformed_concat(tmp_path, inputs, axis, code, fragments):
    inputs = [(k, f"{n}{i}", s, e) if isinstance(k, str) else k for i, (k, n, s, e) in enumerate(inputs)]
    expect_error(_one("Concat", inputs, {"axis": axis}), tmp_path, code, *fragments)


@pytest.mark.parametrize("type_,inputs,attrs,version,code,fragments", [
    ("Squeeze", [X23, np.array([2], I64)], None, "opset1", "IRN032", ("axes value 2 is out of range",)),
    ("Squeeze", [X23, np.array([0], I64)], {"allow_axis_skip": "perhaps"}, "opset15", "IRN021", ("allow_axis_skip",)),
    ("Squeeze", [X23, ("param", "a", (1,), "f32")], None, "opset1", "IRN033", ("axes", "integer")),
    ("Unsqueeze", [X23, np.zeros(0, I64)], None, "opset1", "IRN032", ("axes is empty",)),
    ("Unsqueeze", [X23, np.array([3], I64)], None, "opset1", "IRN032", ("axes value 3 is out of range [-3, 2]",)),
    ("Unsqueeze", [X23, np.array([[0]], I64)], None, "opset1", "IRN032", ("axes must be a scalar or 1-D",)),
    ("ShapeOf", [X23], {"output_type": "f32"}, "opset3", "IRN021", ("output_type",)),
    ("ShapeOf", [X23], {"output_type": "i32"}, "opset1", "IRN022", ("output_type",)),
])
def test_malformed_squeeze_unsqueeze_shapeof(tmp_path, type_, inputs, attrs, version, code, fragments):
    expect_error(_one(type_, inputs, attrs, version=version), tmp_path, code, *fragments)


@pytest.mark.parametrize("inputs,attrs,version,code,fragments", [
    ([X23, np.array([2, 4], I64)], {"mode": "numpy"}, "opset3", "IRN032",
     ("data dim 1 (size 3) of [2,3] cannot be broadcast to target dim 1 (size 4)",)),
    ([X23, np.array([3], I64)], {"mode": "numpy"}, "opset3", "IRN032", ("smaller than the data rank 2",)),
    ([X23, np.array([4, 1], I64)], {"mode": "bidirectional"}, "opset3", "IRN032",
     ("do not broadcast", "dim 0 is 2 in data and 4 in target_shape")),
    ([X23, np.array([2, -3], I64)], {"mode": "numpy"}, "opset3", "IRN032", ("negative value at index 1",)),
    ([X23, np.array([2, 3, 4], I64), np.array([0], I64)], {"mode": "explicit"}, "opset3", "IRN032",
     ("axes_mapping [0] has 1 values", "rank 2")),
    ([X23, np.array([2, 3, 4], I64), np.array([1, 0], I64)], {"mode": "explicit"}, "opset3", "IRN032",
     ("strictly increasing",)),
    ([X23, np.array([2, 3, 4], I64), np.array([0, 3], I64)], {"mode": "explicit"}, "opset3", "IRN032",
     ("axes_mapping value 3 is out of range",)),
    ([X23, np.array([2, 4, 3], I64), np.array([0, 1], I64)], {"mode": "none"}, "opset1", "IRN032",
     ("data dim 1 (size 3) does not match target dim 1 (size 4)",)),
    ([X23, np.array([2, 3, 4], I64)], {"mode": "explicit"}, "opset3", "IRN017", ("axes_mapping",)),
    ([X23, np.array([2, 3], I64)], {"mode": "bidirectional"}, "opset1", "IRN021", ("mode",)),
    ([X23, np.array([2, 3], I64)], {"mode": "pdpd"}, "opset3", "IRN023", ("pdpd",)),
    ([X23, np.array([[2, 3]], I64)], {"mode": "numpy"}, "opset3", "IRN032", ("target_shape must be 1-D",)),
])
def test_malformed_broadcast(tmp_path, inputs, attrs, version, code, fragments):
    expect_error(_one("Broadcast", inputs, attrs, version=version), tmp_path, code, *fragments)


def test_runtime_reshape_mismatch_in_a_dynamic_model(tmp_path):
    b = _one("Reshape", [("param", "x", (-1, 10), "f32"), np.array([-1, 4], I64)], {"special_zero": "false"},
             out=((-1, 4), "f32"))
    m = irnorm.load(b.save(tmp_path))
    assert m.run({"x": np.ones((2, 10), np.float32)})["y"].shape == (5, 4)
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.ones((3, 10), np.float32)})
    assert e.value.code == "IRN064" and "30 is not divisible by 4" in str(e.value)
