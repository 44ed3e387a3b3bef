"""Data movement, Range, Interpolate, Einsum beyond the conformance rows: coded errors for malformed IR
and for indices or sizes from data that do not fit (never an out-of-bounds read or a giant allocation)."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import expect_error, single_op_model

import irnorm


def _run(b, tmp_path, feeds, name="m"):
    return irnorm.load(b.save(tmp_path, name)).run(feeds)


def test_gather_elements_index_out_of_range_is_coded(tmp_path):
    b = single_op_model("GatherElements", [("param:x", ((2, 3), "f32")), ("param:i", ((2, 2), "i64"))],
                        [((2, 2), "f32")], {"axis": 1}, version="opset6")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert _run(b, tmp_path, {"x": x, "i": np.array([[0, -1], [2, 1]])})["y"].tolist() == [[0, 2], [5, 4]]
    for bad in (3, -4, 1 << 40):
        with pytest.raises(irnorm.InputError) as e:
            _run(b, tmp_path, {"x": x, "i": np.array([[0, bad], [0, 0]])})
        assert e.value.code == "IRN064" and "out of range" in e.value.diagnostics[0].message


def test_scatter_nd_update_index_out_of_range_is_coded(tmp_path):
    b = single_op_model("ScatterNDUpdate", [("param:x", ((3, 2), "f32")), ("param:i", ((1, 1), "i64")),
                                            ("param:u", ((1, 2), "f32"))], [((3, 2), "f32")], None, version="opset4")
    x = np.zeros((3, 2), np.float32)
    y = _run(b, tmp_path, {"x": x, "i": np.array([[2]]), "u": np.ones((1, 2), np.float32)})["y"]
    assert y.tolist() == [[0, 0], [0, 0], [1, 1]]
    with pytest.raises(irnorm.InputError, match="out of range"):
        _run(b, tmp_path, {"x": x, "i": np.array([[3]]), "u": np.ones((1, 2), np.float32)})


def test_range_refuses_a_zero_step_and_absurd_sizes(tmp_path):
    def rng_model(start, stop, step, name):
        b = single_op_model("Range", [("param:a", ((), "f32")), ("param:b", ((), "f32")), ("param:c", ((), "f32"))],
                            [((-1,), "f32")], {"output_type": "f32"}, version="opset4")
        return _run(b, tmp_path, {"a": np.array(start, np.float32), "b": np.array(stop, np.float32),
                                  "c": np.array(step, np.float32)}, name)["y"]

    assert rng_model(0, 3, 1, "ok").tolist() == [0, 1, 2]
    for args in ((0, 3, 0), (0, 1e30, 1e-6)):
        with pytest.raises(irnorm.InputError) as e:
            rng_model(*args, "bad")
        assert e.value.code == "IRN064"


def test_reverse_by_index_and_by_mask(tmp_path):
    """Reverse-1 has no OpenVINO Python builder, so it is checked here against np.flip: axes as indices
    (negative ones too) and as a boolean mask."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for mode, axes, flip in (("index", np.array([0, -1]), (0, 2)), ("index", np.array([], np.int64), ()),
                             ("mask", np.array([False, True, True]), (1, 2))):
        b = single_op_model("Reverse", [("param:x", ((2, 3, 4), "f32")), ("a", axes)], [((2, 3, 4), "f32")],
                            {"mode": mode}, version="opset1")
        y = _run(b, tmp_path, {"x": x}, f"rev{mode}{len(flip)}")["y"]
        np.testing.assert_array_equal(y, np.flip(x, flip) if flip else x)


def test_topk_negative_k_at_run_time_is_coded(tmp_path):
    b = single_op_model("TopK", [("param:x", ((2, 5), "f32")), ("param:k", ((), "i64"))],
                        [((2, -1), "f32"), ((2, -1), "i32")], {"axis": 1, "mode": "max", "sort": "value"},
                        version="opset3")
    x = np.array([[3, 1, 4, 1, 5], [9, 2, 6, 5, 3]], np.float32)
    got = _run(b, tmp_path, {"x": x, "k": np.array(2)}, "ok")
    assert got["y"].tolist() == [[5, 4], [9, 6]] and got["y1"].tolist() == [[4, 2], [0, 2]]
    with pytest.raises(irnorm.InputError, match="must be non-negative"):
        _run(b, tmp_path, {"x": x, "k": np.array(-1)}, "bad")


@pytest.mark.parametrize("layer,inputs,outputs,attrs,version,code,fragment", [
    ("Tile", [("param:x", ((2, 3), "f32")), ("r", np.array([1, -2]))], [((2, 6), "f32")], None, "opset1",
     "IRN032", "non-negative"),
    ("Reverse", [("param:x", ((2, 3), "f32")), ("a", np.array([True]))], [((2, 3), "f32")], {"mode": "mask"},
     "opset1", "IRN032", "rank 2"),
    ("Reverse", [("param:x", ((2, 3), "f32")), ("a", np.array([2]))], [((2, 3), "f32")], {"mode": "index"},
     "opset1", "IRN032", ""),
    ("CumSum", [("param:x", ((2, 3), "f32")), ("a", np.array(5))], [((2, 3), "f32")], None, "opset3",
     "IRN032", ""),
    ("TopK", [("param:x", ((2, 3), "f32")), ("k", np.array([1, 2]))], [((2, 1), "f32"), ((2, 1), "i32")],
     {"axis": 1, "mode": "max", "sort": "value"}, "opset3", "IRN032", "single value"),
    ("StridedSlice", [("param:x", ((2, 3), "f32")), ("b", np.array([5, 0])), ("e", np.array([6, 3])),
                      ("s", np.array([1, 1]))], [((3,), "f32")],
     {"begin_mask": "0,0", "end_mask": "0,0", "shrink_axis_mask": "1,0"}, "opset1", "IRN032", "out of range"),
    ("StridedSlice", [("param:x", ((2, 3), "f32")), ("b", np.array([0, 0])), ("e", np.array([2, 3])),
                      ("s", np.array([1, 0]))], [((2, 3), "f32")],
     {"begin_mask": "0,0", "end_mask": "0,0"}, "opset1", "IRN032", "not be 0"),
    ("Transpose", [("param:x", ((2, 3), "f32")), ("o", np.array([0, 0]))], [((2, 2), "f32")], None, "opset1",
     "IRN032", "not a permutation"),
    ("Split", [("param:x", ((2, 5), "f32")), ("a", np.array(1))], [((2, 2), "f32"), ((2, 2), "f32")],
     {"num_splits": 2}, "opset1", "IRN032", "does not divide"),
    ("VariadicSplit", [("param:x", ((2, 5), "f32")), ("a", np.array(1)), ("l", np.array([-1, -1]))],
     [((2, 2), "f32"), ((2, 3), "f32")], None, "opset1", "IRN032", "at most one -1"),
    ("Pad", [("param:x", ((2, 3), "f32")), ("b", np.array([0, 4])), ("e", np.array([0, 0]))], [((2, 7), "f32")],
     {"pad_mode": "reflect"}, "opset12", "IRN032", "reflect padding"),
    ("Pad", [("param:x", ((2, 3), "f32")), ("b", np.array([0, -1])), ("e", np.array([0, 0]))], [((2, 2), "f32")],
     {"pad_mode": "constant"}, "opset1", "IRN032", "no negative pads"),
    ("Interpolate", [("param:x", ((1, 1, 2, 2), "f32")), ("z", np.array([4, 4])),
                     ("s", np.array([2.0, 2.0], np.float32)), ("a", np.array([2, 3]))], [((1, 1, 4, 4), "f32")],
     {"mode": "bicubic_pillow", "shape_calculation_mode": "scales"}, "opset4", "IRN023", "not supported"),
    ("Einsum", [("param:x", ((2, 3), "f32")), ("param:z", ((4, 5), "f32"))], [((2, 5), "f32")],
     {"equation": "ij,jk->ik"}, "opset7", "IRN032", "label 'j'"),
])
def test_malformed_movement_layers(tmp_path, layer, inputs, outputs, attrs, version, code, fragment):
    b = single_op_model(layer, inputs, outputs, attrs, version=version)
    expect_error(b, tmp_path, code, fragment)


@pytest.mark.parametrize("eq, shapes, product", [
    ("bci,bcj->bij", [(2, 5, 7), (2, 5, 3)], True),  # an exported attention block's scores
    ("bij,bcj->bci", [(2, 7, 3), (2, 5, 3)], True),  # ... and its weighted sum
    ("ij,jk->ki", [(4, 6), (6, 3)], True),  # output transposed
    ("abcd,adce->bae", [(2, 3, 4, 5), (2, 5, 4, 6)], True),  # two contracted labels
    ("i,j->ij", [(4,), (5,)], True),  # outer product: nothing contracted
    ("ij,ij->", [(3, 4), (3, 4)], True),  # everything contracted
    ("ij,jk->i", [(4, 6), (6, 3)], False),  # k summed by B alone: einsum's
    ("ii,ij->ij", [(4, 4), (4, 3)], False),  # a label twice in a term (diagonal)
    ("...ij,...jk->...ik", [(2, 4, 6), (2, 6, 3)], False),  # ellipsis
    ("bij,bjk->bik", [(1, 4, 6), (3, 6, 2)], False),  # a broadcast size-1 label
])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_einsum_products_run_as_one_matmul_and_match_float64(tmp_path, eq, shapes, product, dtype):
    """Two-input equations that are batched matrix products take one matmul between transposes (kept
    per input shapes); the rest go through numpy's einsum.  Both match float64 einsum, twice in a row."""
    from irnorm.ops.einsum import matmul_plan

    assert (matmul_plan(eq, *shapes) is not None) == product
    rng = np.random.default_rng(len(eq))
    nd = np.float32 if dtype == "f32" else np.float16
    feeds = {"x": rng.standard_normal(shapes[0]).astype(nd), "z": rng.standard_normal(shapes[1]).astype(nd)}
    want = np.einsum(eq, feeds["x"].astype(np.float64), feeds["z"].astype(np.float64))
    b = single_op_model("Einsum", [("param:x", (shapes[0], dtype)), ("param:z", (shapes[1], dtype))],
                        [(want.shape, dtype)], {"equation": eq}, version="opset7")
    m = irnorm.load(b.save(tmp_path, "einsum"))
    tol = 1e-5 if dtype == "f32" else 4e-3
    for _ in range(2):
        got = m.run(feeds)["y"]
        assert got.dtype == nd and got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * np.abs(want).max())
