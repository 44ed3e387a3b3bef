"""The embedding bags (EmbeddingBagOffsets-15, EmbeddingBagPacked-15, EmbeddingBagOffsetsSum-3,
EmbeddingBagPackedSum-3, EmbeddingSegmentsSum-3) and Col2Im-15 beyond the conformance rows: against
OpenVINO's CPU plugin (skipped without OpenVINO) and the float64 references over random shapes, types and
attributes, dynamic dims, the parallel kernels, the edge cases the plugin was probed on (values asserted
below are what OpenVINO 2026.4 returned), and malformed layers or inputs -> coded errors (never a
traceback, never an out-of-bounds read)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error, single_op_model
from ovutil import HAVE_OPENVINO, compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset3 as op3
    import openvino.opset15 as op15

BF16 = np.dtype(ml_dtypes.bfloat16)
E20 = np.arange(20, dtype=np.float32).reshape(5, 4)


def _param(v, name, dynamic=False):
    shape = ov.PartialShape([-1] * v.ndim) if dynamic else ov.PartialShape(list(v.shape))
    return op1.parameter(shape, ov.Type.bf16 if v.dtype == BF16 else v.dtype, name=name)


def _ov_model(build, feeds: dict[str, np.ndarray], tmp_path, name, dynamic=False, consts=()):
    """A model of one op whose inputs are Parameters named by `feeds` (those in `consts` are Constants)."""
    nodes, params = [], []
    for k, v in feeds.items():
        if k in consts:
            nodes.append(op1.constant(v))
        else:
            p = _param(v, k, dynamic)
            params.append(p)
            nodes.append(p)
    node = build(*nodes)
    node.output(0).get_tensor().set_names({"y"})
    return save(ov.Model([op1.result(node)], params, name), tmp_path, name)


def _run(b: IRBuilder, tmp_path, feeds, name="m"):
    return irnorm.load(b.save(tmp_path, name)).run(feeds)["y"]


def _et(v):
    return {"float32": "f32", "float16": "f16", "float64": "f64", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
            "int8": "i8", "uint8": "u8", "uint64": "u64", "int16": "i16"}[np.dtype(v).name]


def _model(type_, version, feeds: dict[str, np.ndarray], out_shape, attrs=None, dynamic=False, consts=()):
    """irbuilder model: Parameters for `feeds` (Consts for those in `consts`)."""
    ins = []
    for k, v in feeds.items():
        if k in consts:
            ins.append((k, v))
        else:
            ins.append((f"param:{k}", ([-1] * v.ndim if dynamic else v.shape, _et(v.dtype))))
    et = _et(next(iter(feeds.values())).dtype)
    return single_op_model(type_, ins, [(out_shape, et)], attrs, version=version)


def _table(rng, dt, num, dims):
    if np.dtype(dt).kind in "iu":
        return rng.integers(0 if np.dtype(dt).kind == "u" else -50, 50, (num,) + dims).astype(dt)
    return rng.standard_normal((num,) + dims).astype(dt)


# ---- against OpenVINO ------------------------------------------------------------------------------------------

TABLE_TYPES = [np.float32, np.float16, np.float64, np.int32, np.uint8]


@requires_openvino
@pytest.mark.parametrize("seed", range(10))
def test_embedding_bag_offsets_matches_openvino(tmp_path, seed):
    rng = np.random.default_rng(seed)
    dt = TABLE_TYPES[seed % len(TABLE_TYPES)]
    it = (np.int32, np.int64)[seed % 2]
    num = int(rng.integers(1, 12))
    t = _table(rng, dt, num, tuple(int(d) for d in rng.integers(1, 5, seed % 3)))
    n = int(rng.integers(1, 30))
    idx = rng.integers(0, num, n).astype(it)
    off = np.sort(rng.integers(0, n, int(rng.integers(1, 8)))).astype(it)  # below n: the plugin's range
    reduction = ("sum", "mean")[seed % 2]
    feeds = {"t": t, "i": idx, "o": off, "d": np.array(int(rng.integers(-1, num)), it)}
    weighted = reduction == "sum" and seed % 4 == 0
    if weighted:
        feeds["w"] = _table(rng, dt, n, ()) if dt != np.uint8 else rng.integers(0, 3, n).astype(dt)
    dynamic = not weighted and seed % 3 == 0  # the plugin cannot compile weights with dynamic shapes
    xml = _ov_model(lambda *a: op15.embedding_bag_offsets(*a, reduction=reduction), feeds, tmp_path, f"o{seed}",
                    dynamic)
    got = compare_with_openvino(xml, feeds)["y"]
    exp = R.embedding_bag_offsets(t, idx, off, int(feeds["d"]), feeds.get("w"), reduction)
    np.testing.assert_allclose(got.astype(np.float64), exp, rtol=2e-3, atol=2e-3 * max(1, np.abs(exp).max()))


@requires_openvino
@pytest.mark.parametrize("seed", range(8))
def test_embedding_bag_packed_and_v3_ops_match_openvino(tmp_path, seed):
    rng = np.random.default_rng(100 + seed)
    dt = TABLE_TYPES[seed % len(TABLE_TYPES)]
    it = (np.int32, np.int64)[seed % 2]
    num = int(rng.integers(1, 10))
    t = _table(rng, dt, num, (int(rng.integers(1, 6)),))
    b, k = int(rng.integers(1, 7)), int(rng.integers(1, 5))
    idx = rng.integers(0, num, (b, k)).astype(it)
    w = _table(rng, dt, b, (k,)) if dt != np.uint8 else rng.integers(0, 3, (b, k)).astype(dt)
    red = ("sum", "mean")[seed % 2]
    xml = _ov_model(lambda e, i: op15.embedding_bag_packed(e, i, reduction=red), {"t": t, "i": idx}, tmp_path,
                    f"p{seed}", dynamic=seed % 3 == 0)
    compare_with_openvino(xml, {"t": t, "i": idx})
    xml = _ov_model(op3.embedding_bag_packed_sum, {"t": t, "i": idx, "w": w}, tmp_path, f"ps{seed}")
    compare_with_openvino(xml, {"t": t, "i": idx, "w": w})
    flat = idx.reshape(-1)
    off = np.sort(rng.integers(0, flat.size, b)).astype(it)
    feeds = {"t": t, "i": flat, "o": off, "d": np.array(int(rng.integers(0, num)), it), "w": w.reshape(-1)}
    xml = _ov_model(op3.embedding_bag_offsets_sum, feeds, tmp_path, f"os{seed}")
    compare_with_openvino(xml, feeds)


@requires_openvino
@pytest.mark.parametrize("seed", range(8))
def test_embedding_segments_sum_matches_openvino(tmp_path, seed):
    """Sorted ids, some outside [0, num_segments) (dropped, as the CPU plugin does), num_segments as a
    constant or an input, default_index and weights."""
    rng = np.random.default_rng(200 + seed)
    dt = TABLE_TYPES[seed % len(TABLE_TYPES)]
    it = (np.int32, np.int64)[seed % 2]
    num = int(rng.integers(1, 10))
    t = _table(rng, dt, num, tuple(int(d) for d in rng.integers(1, 4, 1 + seed % 2)))
    n, segs = int(rng.integers(1, 20)), int(rng.integers(1, 8))
    feeds = {"t": t, "i": rng.integers(0, num, n).astype(it), "s": np.sort(rng.integers(-2, segs + 2, n)).astype(it),
             "n": np.array(segs, it)}
    if seed % 2:
        feeds["d"] = np.array(int(rng.integers(0, num)), it)
    if seed % 4 == 1:
        feeds["w"] = _table(rng, dt, n, ()) if dt != np.uint8 else rng.integers(0, 3, n).astype(dt)
    consts = ("n",) if seed % 3 else ()
    xml = _ov_model(op3.embedding_segments_sum, feeds, tmp_path, f"s{seed}", dynamic="w" not in feeds and seed % 2,
                    consts=consts)
    got = compare_with_openvino(xml, {k: v for k, v in feeds.items() if k not in consts})["y"]
    exp = R.embedding_segments_sum(t, feeds["i"], feeds["s"], segs, int(feeds["d"]) if "d" in feeds else None,
                                   feeds.get("w"))
    np.testing.assert_allclose(got.astype(np.float64), exp, rtol=2e-3, atol=2e-3 * max(1, np.abs(exp).max()))


# ---- what the plugin was probed on -----------------------------------------------------------------------------


def _offsets(tmp_path, t, idx, off, *rest, reduction="sum", name="m", version="opset15"):
    feeds = {"t": t, "i": idx, "o": off}
    for k, v in zip(("d", "w"), rest, strict=False):
        feeds[k] = v
    type_ = "EmbeddingBagOffsets" if version == "opset15" else "EmbeddingBagOffsetsSum"
    b = _model(type_, version, feeds, (off.shape[0],) + t.shape[1:],
               {"reduction": reduction} if version == "opset15" else None)
    return _run(b, tmp_path, feeds, name)


def test_offsets_spec_and_plugin_values(tmp_path):
    """The spec's examples and values OpenVINO 2026.4's CPU plugin returned for them."""
    i32 = np.array
    idx, off = i32([0, 2, 3, 4], np.int32), i32([0, 2, 2], np.int32)
    assert _offsets(tmp_path, E20, idx, off).tolist() == [[8, 10, 12, 14], [0, 0, 0, 0], [28, 30, 32, 34]]
    assert _offsets(tmp_path, E20, idx, off, reduction="mean").tolist() == [[4, 5, 6, 7], [0] * 4, [14, 15, 16, 17]]
    assert _offsets(tmp_path, E20, idx, off, np.array(1, np.int32), reduction="mean").tolist() == \
        [[4, 5, 6, 7], [4, 5, 6, 7], [14, 15, 16, 17]]
    assert _offsets(tmp_path, E20, idx, off, np.array(-1, np.int32)).tolist()[1] == [0, 0, 0, 0]
    w = np.array([0.5, 2, -1, 3], np.float32)
    assert _offsets(tmp_path, E20, idx, off, np.array(1, np.int32), w).tolist() == \
        [[16, 18.5, 21, 23.5], [4, 5, 6, 7], [36, 38, 40, 42]]
    # indices before offsets[0] belong to no bag
    assert _offsets(tmp_path, E20, idx, i32([1, 2, 2], np.int32)).tolist()[0] == [8, 9, 10, 11]
    # an unused out-of-range default_index is not an error
    assert _offsets(tmp_path, E20, idx, i32([0, 2], np.int32), np.array(7, np.int32)).shape == (2, 4)
    # EmbeddingBagOffsetsSum-3 is the sum
    assert _offsets(tmp_path, E20, idx, off, np.array(-1, np.int32), version="opset3").tolist()[2] == [28, 30, 32, 34]


def test_offsets_empty_bags_follow_the_spec(tmp_path):
    """An offset equal to the number of indices, no indices at all, repeated offsets: empty bags (zeros or
    the default row), as the spec's numpy snippet says (the CPU plugin reads unwritten memory there)."""
    idx = np.array([0, 2, 3, 4], np.int64)
    y = _offsets(tmp_path, E20, idx, np.array([0, 2, 4], np.int64), np.array(1, np.int64))
    assert y.tolist() == [[8, 10, 12, 14], [28, 30, 32, 34], [4, 5, 6, 7]]
    y = _offsets(tmp_path, E20, np.zeros(0, np.int64), np.array([0, 0], np.int64), np.array(3, np.int64),
                 reduction="mean")
    assert y.tolist() == [[12, 13, 14, 15]] * 2
    y = _offsets(tmp_path, E20, np.zeros(0, np.int32), np.zeros(0, np.int32))
    assert y.shape == (0, 4)


def test_integer_tables_wrap_and_truncate_like_openvino(tmp_path):
    """Integer sums wrap in the table's type and means truncate towards zero (OpenVINO 2026.4: u8
    200+100+7 -> 51 -> 17; i32 (-1-1-3)/3 -> -1; i8 100+100+7 -> -49)."""
    three = np.array([0, 1, 2], np.int32)
    one = np.array([0], np.int32)
    u8 = np.array([[200], [100], [7]], np.uint8)
    assert _offsets(tmp_path, u8, three, one, reduction="mean", name="u8").tolist() == [[17]]
    i32 = np.array([[-1], [-1], [-3]], np.int32)
    assert _offsets(tmp_path, i32, three, one, reduction="mean", name="i32").tolist() == [[-1]]
    i8 = np.array([[100], [100], [7]], np.int8)
    assert _offsets(tmp_path, i8, three, one, name="i8").tolist() == [[-49]]
    u64 = np.array([[2**64 - 1], [3], [1]], np.uint64)
    assert _offsets(tmp_path, u64, three, one, name="u64").tolist() == [[3]]
    b = _model("EmbeddingBagPacked", "opset15", {"t": i32, "i": np.array([[0, 2], [1, 1]], np.int64)}, (2, 1),
               {"reduction": "mean"})
    assert _run(b, tmp_path, {"t": i32, "i": np.array([[0, 2], [1, 1]], np.int64)}, "pk").tolist() == [[-2], [-1]]


def test_packed_bags_of_no_indices_are_zeros(tmp_path):
    for red in ("sum", "mean"):
        b = _model("EmbeddingBagPacked", "opset15", {"t": E20, "i": np.zeros((3, 0), np.int32)}, (3, 4),
                   {"reduction": red})
        assert _run(b, tmp_path, {"t": E20, "i": np.zeros((3, 0), np.int32)}, red).tolist() == [[0] * 4] * 3


def test_segments_drop_ids_outside_and_take_the_default(tmp_path):
    """OpenVINO 2026.4's CPU plugin: ids outside [0, num_segments) are dropped, empty segments take the
    default row."""
    i32 = np.int32
    feeds = {"t": E20, "i": np.array([0, 2, 3, 4], i32), "s": np.array([-1, 0, 2, 3], i32), "n": np.array(3, i32),
             "d": np.array(1, i32), "w": np.array([1, 2, 3, 4], np.float32)}
    b = _model("EmbeddingSegmentsSum", "opset3", feeds, (3, 4), dynamic=True)
    y = _run(b, tmp_path, feeds)
    assert y.tolist() == [[16, 18, 20, 22], [4, 5, 6, 7], [36, 39, 42, 45]]
    # num_segments as a constant gives a static output dim
    feeds.pop("w")
    b = _model("EmbeddingSegmentsSum", "opset3", feeds, (3, 4), consts=("n",))
    assert irnorm.load(b.save(tmp_path, "c")).outputs[0].shape == (3, 4)


def test_f16_bf16_tables_and_the_parallel_kernel_against_the_reference(tmp_path):
    rng = np.random.default_rng(5)
    for k, dt in enumerate([np.float16, BF16, np.float32, np.float64]):
        t = rng.standard_normal((300, 8, 4)).astype(dt)
        idx = rng.integers(0, 300, 5000).astype(np.int64)
        off = np.sort(rng.integers(0, 5000, 400)).astype(np.int64)
        off[0] = 0
        for red in ("sum", "mean"):
            y = _offsets(tmp_path, t, idx, off, np.array(7, np.int64), reduction=red, name=f"p{k}{red}")
            assert y.dtype == dt and y.shape == (400, 8, 4)
            exp = R.embedding_bag_offsets(t, idx, off, 7, None, red)
            tol = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 1e-5, "float64": 1e-12}[np.dtype(dt).name]
            np.testing.assert_allclose(y.astype(np.float64), exp, rtol=tol, atol=tol * np.abs(exp).max())


# ---- errors ----------------------------------------------------------------------------------------------------


def _run_error(b: IRBuilder, tmp_path, feeds, *fragments, name="bad"):
    m = irnorm.load(b.save(tmp_path, name))
    with pytest.raises(irnorm.InputError) as e:
        m.run(feeds)
    assert e.value.diagnostics[0].code == "IRN064", e.value
    for f in fragments:
        assert f in str(e.value), str(e.value)


@pytest.mark.parametrize("idx,off,default,fragment", [
    ([0, 2, 5, 4], [0, 2, 2], None, "index 5 is out of range"),
    ([0, 2, -1, 4], [0, 2, 2], None, "index -1 is out of range"),
    ([0, 2, 2**31 - 1, 4], [0, 2, 2], None, "out of range"),
    ([0, 2, 3, 4], [0, 3, 1], None, "must not decrease"),
    ([0, 2, 3, 4], [0, 2, 5], None, "offset 5 is out of range"),
    ([0, 2, 3, 4], [0, -1, 2], None, "offset -1"),
    ([0, 2, 3, 4], [0, 2, 2], 5, "default_index 5"),
    ([0, 2, 3, 4], [0, 2, 2], -2, "default_index -2"),
])
@pytest.mark.parametrize("dynamic", [False, True])
def test_offsets_bad_values_are_runtime_errors(tmp_path, idx, off, default, fragment, dynamic):
    """The CPU plugin reads out of bounds (static shapes) or returns an empty tensor (dynamic) for these."""
    feeds = {"t": E20, "i": np.array(idx, np.int32), "o": np.array(off, np.int32)}
    if default is not None:
        feeds["d"] = np.array(default, np.int32)
    b = _model("EmbeddingBagOffsets", "opset15", feeds, (3, 4) if not dynamic else (-1, -1), {"reduction": "sum"},
               dynamic=dynamic)
    _run_error(b, tmp_path, feeds, fragment)


def test_packed_and_segments_bad_values_are_runtime_errors(tmp_path):
    feeds = {"t": E20, "i": np.array([[0, 9]], np.int64)}
    _run_error(_model("EmbeddingBagPackedSum", "opset3", feeds, (1, 4)), tmp_path, feeds, "index 9", name="p")
    base = {"t": E20, "i": np.array([0, 2, 3, 4], np.int32), "s": np.array([0, 0, 2, 2], np.int32),
            "n": np.array(3, np.int32)}
    cases = [({"i": np.array([0, 2, 3, 7], np.int32)}, "index 7"),
             ({"s": np.array([0, 2, 0, 2], np.int32)}, "must be sorted"),
             ({"n": np.array(-1, np.int32)}, "non-negative"),
             ({"n": np.array(2**31 - 1, np.int32), "t": np.zeros((5, 1 << 20), np.float32)}, "absurd"),
             ({"d": np.array(-1, np.int32)}, "default_index -1"),
             ({"d": np.array(5, np.int32)}, "default_index 5")]
    for k, (change, fragment) in enumerate(cases):
        feeds = base | change
        b = _model("EmbeddingSegmentsSum", "opset3", feeds, (-1,) + feeds["t"].shape[1:], dynamic=True)
        _run_error(b, tmp_path, feeds, fragment, name=f"s{k}")


def test_an_unread_index_is_not_checked(tmp_path):
    """An index in a dropped segment, or before offsets[0], is never read (nor by the CPU plugin)."""
    feeds = {"t": E20, "i": np.array([0, 2, 3, 99], np.int32), "s": np.array([0, 0, 1, 7], np.int32),
             "n": np.array(3, np.int32)}
    y = _run(_model("EmbeddingSegmentsSum", "opset3", feeds, (-1, 4), dynamic=True), tmp_path, feeds, "u")
    assert y.tolist() == [[8, 10, 12, 14], [12, 13, 14, 15], [0, 0, 0, 0]]
    y = _offsets(tmp_path, E20, np.array([99, 1], np.int32), np.array([1], np.int32), name="u2")
    assert y.tolist() == [[4, 5, 6, 7]]


def _layer(tmp_path, type_, version, ins, out, attrs=None):
    return single_op_model(type_, ins, [out], attrs, version=version)


T = ("param:t", ((5, 4), "f32"))


@pytest.mark.parametrize("type_,version,ins,attrs,code,fragment", [
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "i32")), ("param:o", ((3,), "i64"))], None,
     "IRN033", "offsets"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "f32")), ("param:o", ((3,), "f32"))], None,
     "IRN033", "indices must be i32 or i64"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "i16")), ("param:o", ((3,), "i16"))], None,
     "IRN033", "indices"),
    ("EmbeddingBagOffsets", "opset15", [("param:t", ((5, 4), "boolean")), ("param:i", ((4,), "i32")),
                                        ("param:o", ((3,), "i32"))], None, "IRN033", "numeric"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((2, 2), "i32")), ("param:o", ((3,), "i32"))], None,
     "IRN032", "indices (input 1) must be 1-D"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "i32")), ("param:o", ((3, 1), "i32"))], None,
     "IRN032", "offsets"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "i32")), ("param:o", ((3,), "i32")),
                                        ("param:d", ((1,), "i32"))], None, "IRN032",
     "default_index (input 3) must be a scalar"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "i32")), ("param:o", ((3,), "i32")),
                                        ("param:d", ((), "i32")), ("param:w", ((4,), "f32"))], {"reduction": "mean"},
     "IRN017", "reduction=sum"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "i32")), ("param:o", ((3,), "i32")),
                                        ("param:d", ((), "i32")), ("param:w", ((5,), "f32"))], None, "IRN032",
     "per_sample_weights"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "i32")), ("param:o", ((3,), "i32")),
                                        ("param:d", ((), "i32")), ("param:w", ((4,), "f16"))], None, "IRN033",
     "per_sample_weights"),
    ("EmbeddingBagOffsets", "opset15", [T, ("param:i", ((4,), "i32")), ("param:o", ((3,), "i32"))],
     {"reduction": "max"}, "IRN021", ""),
    ("EmbeddingBagOffsets", "opset15", [("param:t", ((), "f32")), ("param:i", ((4,), "i32")),
                                        ("param:o", ((3,), "i32"))], None, "IRN032", "rank >= 1"),
    ("EmbeddingBagPacked", "opset15", [T, ("param:i", ((4,), "i32"))], None, "IRN032", "2-D"),
    ("EmbeddingBagPacked", "opset15", [T, ("param:i", ((2, 2), "i32")), ("param:w", ((2, 2), "f32"))],
     {"reduction": "mean"}, "IRN017", "reduction=sum"),
    ("EmbeddingBagPackedSum", "opset3", [T, ("param:i", ((2, 2), "i32")), ("param:w", ((2, 3), "f32"))], None,
     "IRN032", "per_sample_weights"),
    ("EmbeddingSegmentsSum", "opset3", [T, ("param:i", ((4,), "i32")), ("param:s", ((3,), "i32")),
                                        ("param:n", ((), "i32"))], None, "IRN032", "one length"),
    ("EmbeddingSegmentsSum", "opset3", [T, ("param:i", ((4,), "i32")), ("param:s", ((4,), "i32")),
                                        ("param:n", ((1,), "i32"))], None, "IRN032", "num_segments (input 3)"),
    ("EmbeddingSegmentsSum", "opset3", [T, ("param:i", ((4,), "i32")), ("param:s", ((4,), "i32")),
                                        ("param:n", ((), "i64"))], None, "IRN033", "num_segments"),
    ("EmbeddingSegmentsSum", "opset3", [T, ("param:i", ((4,), "i32")), ("param:s", ((4,), "i32")),
                                        ("n", np.array(-2, np.int32))], None, "IRN032", "non-negative"),
])
def test_malformed_embedding_layers(tmp_path, type_, version, ins, attrs, code, fragment):
    b = single_op_model(type_, ins, [((3, 4), "f32")], attrs, version=version)
    expect_error(b, tmp_path, code, fragment)


def test_wrong_arity_is_refused(tmp_path):
    b = single_op_model("EmbeddingBagOffsets", [T, ("param:i", ((4,), "i32"))], [((3, 4), "f32")], None,
                        version="opset15")
    expect_error(b, tmp_path, "IRN017")


# ---- Col2Im ----------------------------------------------------------------------------------------------------


def _blocks(size, k, s, d, pb, pe):
    span = size + pb + pe - (d * (k - 1) + 1)
    return span // s + 1 if span >= 0 else 0


def _fold_case(rng):
    while True:
        k, s, d = (list(map(int, rng.integers(1, hi, 2))) for hi in (4, 4, 3))
        pb, pe = (list(map(int, rng.integers(0, 3, 2))) for _ in range(2))
        size = list(map(int, rng.integers(1, 10, 2)))
        nb = [_blocks(size[a], k[a], s[a], d[a], pb[a], pe[a]) for a in range(2)]
        if nb[0] * nb[1]:
            return size, k, {"strides": s, "dilations": d, "pads_begin": pb, "pads_end": pe}, nb


@requires_openvino
@pytest.mark.parametrize("seed", range(12))
def test_col2im_matches_openvino(tmp_path, seed):
    """Random geometry; data f32/f16/f64/i32; output_size and kernel_size constant (i32 or i64) or inputs
    (static shapes: the plugin cannot compile them as inputs with dynamic shapes)."""
    rng = np.random.default_rng(300 + seed)
    size, k, attrs, nb = _fold_case(rng)
    c = int(rng.integers(1, 4))
    shape = ((int(rng.integers(1, 3)),) if seed % 4 else ()) + (c * k[0] * k[1], nb[0] * nb[1])
    dt = (np.float32, np.float16, np.float64, np.int32)[seed % 4]
    x = (rng.standard_normal(shape) * (10 if dt == np.int32 else 1)).astype(dt)
    it = (np.int32, np.int64)[seed % 2]
    feeds = {"x": x, "os": np.array(size, it), "ks": np.array(k, it)}
    as_inputs = seed % 3 == 0
    xml = _ov_model(lambda *n: op15.col2im(*n, **attrs), feeds, tmp_path, f"c{seed}",
                    dynamic=not as_inputs and seed % 2 == 1, consts=() if as_inputs else ("os", "ks"))
    got = compare_with_openvino(xml, feeds if as_inputs else {"x": x})["y"]
    exp = R.col2im(x, size, k, attrs["strides"], attrs["dilations"], attrs["pads_begin"], attrs["pads_end"])
    assert got.shape == exp.shape
    np.testing.assert_allclose(got.astype(np.float64), exp, rtol=3e-3, atol=3e-3 * max(1, np.abs(exp).max()))


@requires_openvino
def test_col2im_dilation_zero_and_bf16(tmp_path):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 4, 12)).astype(np.float32)
    feeds = {"x": x, "os": np.array([4, 4], np.int64), "ks": np.array([2, 2], np.int64)}
    xml = _ov_model(lambda *n: op15.col2im(*n, dilations=[0, 1]), feeds, tmp_path, "d0", consts=("os", "ks"))
    compare_with_openvino(xml, {"x": x})
    xb = x.astype(BF16)
    b = _model("Col2Im", "opset15", {"x": xb, "os": feeds["os"], "ks": feeds["ks"]}, (1, 1, 4, 4),
               {"dilations": [0, 1]}, consts=("os", "ks"))
    y = _run(b, tmp_path, {"x": xb}, "bf")
    assert y.dtype == BF16
    np.testing.assert_allclose(y.astype(np.float64), R.col2im(xb, [4, 4], [2, 2], dilations=(0, 1)), rtol=2e-2,
                               atol=2e-2)


def test_col2im_dynamic_inputs_and_parallel_kernel_against_the_reference(tmp_path):
    """output_size and kernel_size given at run time with every dim dynamic; a large case runs the parallel
    kernel; f16 sums in float32."""
    rng = np.random.default_rng(4)
    b = _model("Col2Im", "opset15", {"x": np.zeros((1, 1, 1), np.float32), "os": np.zeros(2, np.int64),
                                     "ks": np.zeros(2, np.int64)}, (-1, -1, -1, -1),
               {"strides": [2, 1], "dilations": [1, 2], "pads_begin": [1, 0], "pads_end": [0, 2]}, dynamic=True)
    m = irnorm.load(b.save(tmp_path, "dyn"))
    assert m.outputs[0].shape == (-1, -1, -1, -1)
    for size, k, n, c in (([5, 7], [2, 3], 2, 3), ([40, 50], [3, 3], 2, 8), ([1, 1], [1, 1], 1, 1)):
        nb = [_blocks(size[0], k[0], 2, 1, 1, 0), _blocks(size[1], k[1], 1, 2, 0, 2)]
        x = rng.standard_normal((n, c * k[0] * k[1], nb[0] * nb[1])).astype(np.float32)
        y = m.run({"x": x, "os": np.array(size, np.int64), "ks": np.array(k, np.int64)})["y"]
        exp = R.col2im(x, size, k, (2, 1), (1, 2), (1, 0), (0, 2))
        np.testing.assert_allclose(y, exp, rtol=1e-5, atol=1e-5 * max(1, np.abs(exp).max()))
    x = rng.standard_normal((3, 4 * 9, 38 * 48)).astype(np.float16)
    b = _model("Col2Im", "opset15", {"x": x, "os": np.array([40, 50], np.int32), "ks": np.array([3, 3], np.int32)},
               (3, 4, 40, 50), consts=("os", "ks"))
    y = _run(b, tmp_path, {"x": x}, "f16")
    assert y.dtype == np.float16
    np.testing.assert_allclose(y.astype(np.float64), R.col2im(x, [40, 50], [3, 3]), rtol=3e-3, atol=3e-3 * 10)


def test_col2im_kernel_larger_than_the_image_and_missing_attributes(tmp_path):
    """A dilated kernel larger than the padded image fits no block: L = 0, zeros (OpenVINO's unsigned
    block count wraps there).  A layer without the attributes takes the spec's defaults (OpenVINO's
    reader crashes on it)."""
    x = np.zeros((1, 9, 0), np.float32)
    b = _model("Col2Im", "opset15", {"x": x, "os": np.array([2, 2], np.int64), "ks": np.array([3, 3], np.int64)},
               (1, 1, 2, 2), {"strides": [2, 2]}, consts=("os", "ks"))
    assert _run(b, tmp_path, {"x": x}, "big").tolist() == [[[[0, 0], [0, 0]]]]
    x = np.arange(12, dtype=np.float32).reshape(1, 4, 3)
    b = _model("Col2Im", "opset15", {"x": x, "os": np.array([2, 4], np.int64), "ks": np.array([2, 2], np.int64)},
               (1, 1, 2, 4), None, consts=("os", "ks"))
    assert _run(b, tmp_path, {"x": x}, "noattr").tolist() == R.col2im(x, [2, 4], [2, 2]).tolist()


X = ("param:x", ((2, 12, 9), "f32"))


@pytest.mark.parametrize("ins,attrs,code,fragment", [
    ([X, ("os", np.array([5, 4])), ("ks", np.array([2, 2]))], None, "IRN032", "blocks"),
    ([X, ("os", np.array([4, 4])), ("ks", np.array([5, 1]))], None, "IRN032", "not divisible"),
    ([X, ("os", np.array([4, 4])), ("ks", np.array([0, 2]))], None, "IRN032", "positive"),
    ([X, ("os", np.array([4, 4])), ("ks", np.array([-2, -2]))], None, "IRN032", "positive"),
    ([X, ("os", np.array([-4, 4])), ("ks", np.array([2, 2]))], None, "IRN032", "non-negative"),
    ([X, ("os", np.array([4, 4])), ("ks", np.array([2, 2, 1]))], None, "IRN032", "kernel_size (input 2)"),
    ([X, ("os", np.array([4.0, 4.0], np.float32)), ("ks", np.array([2, 2]))], None, "IRN033", "output_size"),
    ([("param:x", ((1, 2, 12, 9), "f32")), ("os", np.array([4, 4])), ("ks", np.array([2, 2]))], None, "IRN032",
     "[N, C*kh*kw, L]"),
    ([("param:x", ((2, 12, 9), "boolean")), ("os", np.array([4, 4])), ("ks", np.array([2, 2]))], None, "IRN033",
     "numeric"),
    ([X, ("os", np.array([4, 4])), ("ks", np.array([2, 2]))], {"strides": [1]}, "IRN023", "2 values"),
    ([X, ("os", np.array([4, 4])), ("ks", np.array([2, 2]))], {"strides": [0, 1]}, "IRN023", "strides"),
    ([X, ("os", np.array([4, 4])), ("ks", np.array([2, 2]))], {"pads_begin": [-1, 0]}, "IRN023", "pads_begin"),
    ([X, ("os", np.array([4, 4])), ("ks", np.array([2, 2]))], {"dilations": "a,b"}, "IRN021", ""),
])
def test_malformed_col2im(tmp_path, ins, attrs, code, fragment):
    b = single_op_model("Col2Im", ins, [((2, 3, 4, 4), "f32")], attrs, version="opset15")
    expect_error(b, tmp_path, code, fragment)


def test_col2im_runtime_mismatches(tmp_path):
    b = _model("Col2Im", "opset15", {"x": np.zeros((1, 1, 1), np.float32), "os": np.zeros(2, np.int64),
                                     "ks": np.zeros(2, np.int64)}, (-1, -1, -1, -1), dynamic=True)
    x = np.zeros((2, 12, 9), np.float32)
    for k, (os_, ks, fragment) in enumerate([([5, 4], [2, 2], "blocks"), ([4, 4], [5, 1], "not divisible"),
                                              ([4, 4], [0, 2], "positive"), ([4], [2, 2], "2 elements"),
                                              ([2**31, 2**31], [1, 1], "")]):
        feeds = {"x": x, "os": np.array(os_, np.int64), "ks": np.array(ks, np.int64)}
        _run_error(b, tmp_path, feeds, fragment, name=f"r{k}")


# ---- the command line on files written by openvino.save_model --------------------------------------------------


@requires_openvino
def test_cli_validate_info_run(tmp_path):
    import subprocess
    import sys

    rng = np.random.default_rng(0)
    t = rng.standard_normal((10, 4)).astype(np.float32)
    feeds = {"t": t, "i": np.array([1, 2, 3], np.int64), "o": np.array([0, 1], np.int64)}
    xml_eb = _ov_model(lambda *a: op15.embedding_bag_offsets(*a, reduction="mean"), feeds, tmp_path, "eb",
                       dynamic=True, consts=("t",))
    xml_fold = _ov_model(lambda *n: op15.col2im(*n, strides=[2, 2]), {"x": np.zeros((1, 12, 16), np.float32),
                                                                    "os": np.array([8, 8]), "ks": np.array([2, 2])},
                         tmp_path, "fold", dynamic=True, consts=("os", "ks"))
    for xml in (xml_eb, xml_fold):
        for cmd in (["validate", str(xml)], ["info", str(xml)],
                    ["run", str(xml)] + (["--shape", "i=6", "--shape", "o=2", "--value-range", "i=0,9",
                                          "--value-range", "o=0,0"] if xml == xml_eb else
                                         ["--shape", "x=2,12,16"])):
            r = subprocess.run([sys.executable, "-m", "irnorm", *cmd], capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, (cmd, r.stdout, r.stderr)
            assert "Traceback" not in r.stderr


def test_constant_out_of_range_index_is_a_load_error(tmp_path):
    """All inputs constant: the bag folds at load, and an index outside the table is IRN032 at the layer (the
    kernel's own check, reported by the checker) -- not "the operation's shape rule cannot handle" (found by the
    structural fuzzer's export_ops seed)."""
    from irbuilder import IRBuilder

    b = IRBuilder("const_bag")
    x = b.parameter("x", (2, 3), "f32")
    table = b.const(np.ones((5, 3), np.float32))
    (y,) = b.layer("EmbeddingBagOffsets", [table, b.const(np.array([0, 7], np.int64)),
                                           b.const(np.array([0, 1], np.int64))], [((2, 3), "f32")],
                   {"reduction": "sum"}, version="opset15")
    (z,) = b.layer("Add", [x, y], [((2, 3), "f32")], None, version="opset1", names=["z"])
    b.result(z)
    diags = [d for d in irnorm.check(b.save(tmp_path)) if d.severity == "error"]
    assert [(d.code, d.layer_type) for d in diags] == [("IRN032", "EmbeddingBagOffsets")]
    assert "index 7 is out of range [0, 4]" in diags[0].message and "cannot handle" not in diags[0].message
