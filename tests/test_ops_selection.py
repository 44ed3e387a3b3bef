"""NonMaxSuppression-9 and Unique-10 beyond the conformance rows (tests/conformance/selection.py):
malformed layers get coded errors, shapes that only disagree at run time are IRN064, and the
outputs' sizes follow the values (including nothing selected)."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import expect_error, single_op_model

import irnorm
from irnorm.errors import InputError

F = np.float32


def _nms(boxes=((1, 6, 4), "f32"), scores=((1, 2, 6), "f32"), attrs=None, extra=()):
    inputs = [("param:boxes", boxes), ("param:scores", scores), *extra]
    return single_op_model("NonMaxSuppression", inputs, [((-1, 3), "i64"), ((-1, 3), "f32"), ((1,), "i64")],
                           attrs, version="opset9")


@pytest.mark.parametrize("kw,code,fragments", [
    ({"boxes": ((1, 6), "f32")}, "IRN032", ("boxes must have rank 3",)),
    ({"boxes": ((1, 6, 5), "f32")}, "IRN032", ("4 values per box",)),
    ({"scores": ((1, 2, 7), "f32")}, "IRN032", ("disagree",)),
    ({"boxes": ((1, 6, 4), "i32")}, "IRN033", ("boxes must be a floating-point",)),
    ({"attrs": {"box_encoding": "diagonal"}}, "IRN021", ("box_encoding",)),
    ({"extra": [("max", np.array(1.5, F))]}, "IRN033", ("max_output_boxes_per_class",)),
    ({"extra": [("max", np.array([1, 2], np.int64))]}, "IRN032", ("one value",)),
])
def test_malformed_nms(tmp_path, kw, code, fragments):
    expect_error(_nms(**kw), tmp_path, code, *fragments)


def test_nms_selects_by_iou_and_sizes_outputs_at_run_time(tmp_path):
    b = _nms(boxes=((1, -1, 4), "f32"), scores=((1, 1, -1), "f32"),
             extra=[("max", np.array(10, np.int64)), ("iou", np.array(0.5, F)), ("score", np.array(0.0, F))],
             attrs={"sort_result_descending": "false"})
    m = irnorm.load(b.save(tmp_path, "nms"))
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [1, 1, 0, 0], [0, 10, 1, 11], [5, 5, 5, 6]]], F)
    scores = np.array([[[0.9, 0.8, 0.7, 0.95, 0.99]]], F)
    out = m.run({"boxes": boxes, "scores": scores})
    # box 4 has zero area (IoU 0 with everything); box 1 overlaps box 0 (IoU 0.82), box 2 is box 0 flipped
    np.testing.assert_array_equal(out["y"], [[0, 0, 4], [0, 0, 3], [0, 0, 0]])
    np.testing.assert_allclose(out["y1"][:, 2], [0.99, 0.95, 0.9])
    assert out["y2"].tolist() == [3]
    none = m.run({"boxes": boxes, "scores": np.zeros((1, 1, 5), F)})  # nothing above the threshold
    assert none["y"].shape == (0, 3) and none["y2"].tolist() == [0]
    with pytest.raises(InputError) as e:
        m.run({"boxes": boxes, "scores": np.zeros((1, 1, 4), F)})
    assert e.value.code == "IRN064" and "disagree" in str(e.value)


def _unique(x_spec, axis=None, attrs=None):
    inputs = [("param:x", x_spec)] + ([axis] if axis is not None else [])
    return single_op_model("Unique", inputs, [((-1,), x_spec[1]), ((-1,), "i64"), ((-1,), "i64"), ((-1,), "i64")],
                           attrs, version="opset10")


def test_malformed_unique(tmp_path):
    expect_error(_unique(((4,), "boolean")), tmp_path, "IRN033", "numeric")
    expect_error(_unique(((2, 3), "f32"), ("axis", np.array(2, np.int64))), tmp_path, "IRN032", "out of range")
    expect_error(_unique(((2, 3), "f32"), ("param:axis", ((), "i64"))), tmp_path, "IRN034", "axis")
    expect_error(_unique(((4,), "f32"), attrs={"index_element_type": "u8"}), tmp_path, "IRN021",
                 "index_element_type")


def test_unique_unsorted_and_along_an_axis(tmp_path):
    m = irnorm.load(_unique(((-1,), "i32"), attrs={"sorted": "false"}).save(tmp_path, "u"))
    out = list(m.run({"x": np.array([3, 1, 3, 2, 1], np.int32)}).values())
    assert [o.tolist() for o in out] == [[3, 1, 2], [0, 1, 3], [0, 1, 0, 2, 1], [2, 2, 1]]
    empty = list(m.run({"x": np.zeros(0, np.int32)}).values())
    assert all(o.size == 0 for o in empty)
    b = single_op_model("Unique", [("param:x", ((3, 2), "f32")), ("axis", np.array(-2, np.int64))],
                        [((-1, 2), "f32"), ((-1,), "i64"), ((3,), "i64"), ((-1,), "i64")], None, version="opset10")
    ax = irnorm.load(b.save(tmp_path, "ax"))
    vals, first, inv, counts = ax.run({"x": np.array([[1, 2], [0, 5], [1, 2]], F)}).values()
    assert vals.tolist() == [[0, 5], [1, 2]] and first.tolist() == [1, 0]
    assert inv.tolist() == [1, 0, 1] and counts.tolist() == [1, 2]


def _roi(attrs=None, x=((1, 2, 6, 6), "f32"), rois=((-1, 4), "f32"), idx=((-1,), "i64"), version="opset9"):
    a = {"pooled_h": 2, "pooled_w": 2, "sampling_ratio": 2, "spatial_scale": 1.0, "mode": "avg"}
    a.update(attrs or {})
    return single_op_model("ROIAlign", [("param:x", x), ("param:rois", rois), ("param:idx", idx)],
                           [((-1, 2, a["pooled_h"], a["pooled_w"]), x[1])], a, version=version)


@pytest.mark.parametrize("kw,code,fragments", [
    ({"attrs": {"pooled_h": "0"}}, "IRN023", ("pooled_h",)),
    ({"attrs": {"spatial_scale": "0"}}, "IRN023", ("spatial_scale",)),
    ({"attrs": {"mode": "median"}}, "IRN021", ("mode",)),
    ({"attrs": {"aligned_mode": "centered"}}, "IRN021", ("aligned_mode",)),
    ({"rois": ((3, 5), "f32")}, "IRN032", ("4 coordinates",)),
    ({"rois": ((3, 4), "f32"), "idx": ((2,), "i64")}, "IRN032", ("disagree",)),
    ({"x": ((1, 2, 6), "f32")}, "IRN032", ("data must have rank 4",)),
    ({"rois": ((3, 4), "f16")}, "IRN033", ("rois has element type f16",)),
])
def test_malformed_roi_align(tmp_path, kw, code, fragments):
    expect_error(_roi(**kw), tmp_path, code, *fragments)


def test_roi_align_batch_indices_out_of_range_are_a_runtime_error(tmp_path):
    m = irnorm.load(_roi().save(tmp_path, "roi"))
    x = np.arange(72, dtype=F).reshape(1, 2, 6, 6)
    rois = np.array([[0, 0, 3, 3], [1, 1, 5, 4]], F)
    out = m.run({"x": x, "rois": rois, "idx": np.array([0, 0], np.int64)})["y"]
    assert out.shape == (2, 2, 2, 2) and np.all(np.isfinite(out))
    with pytest.raises(InputError) as e:
        m.run({"x": x, "rois": rois, "idx": np.array([0, 1], np.int64)})
    assert e.value.code == "IRN064" and "batch_indices" in str(e.value)


@pytest.mark.parametrize("seed", range(6))
def test_hard_nms_kernel_selects_what_the_step_by_step_loop_selects(seed):
    """nms_hard (the Numba kernel used for sigma = 0) against nms_select (OpenVINO's reference loop, kept for
    soft NMS): the same boxes in the same order, over tied scores, duplicate and zero-area boxes, scores
    at the threshold, limits below the number of candidates, both box encodings, sorted and unsorted."""
    from irnorm.ops.selection import _corners, nms_hard, nms_select

    rng = np.random.default_rng(seed)
    b, c, n = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(0, 300))
    xy = rng.uniform(0, 20, (b, n, 2)).astype(np.float32)
    wh = rng.uniform(0, 8, (b, n, 2)).astype(np.float32)
    wh[rng.random((b, n)) < 0.05] = 0  # zero-area boxes
    boxes = np.concatenate([xy, xy + wh], axis=-1)
    if n > 4:
        boxes[:, 1] = boxes[:, 0]  # a duplicate box
        boxes[:, 2] = boxes[:, 2, [2, 3, 0, 1]]  # corners in the other order
    scores = np.round(rng.random((b, c, n)), 2).astype(np.float32)  # many ties
    for center in (False, True):
        corners = _corners(boxes, center)
        for max_per_class, iou, thr in ((n, 0.5, 0.0), (5, 0.3, 0.25), (1 << 40, 0.0, 0.5), (0, 0.5, 0.0),
                                        (n, 1.0, 0.1)):
            slow = nms_select(corners, scores, max_per_class, iou, thr, 0.0)
            for sort_desc in (False, True):
                if sort_desc:
                    slow = sorted(slow, key=lambda p: -p[3])
                idx, sel = nms_hard(boxes, scores, center, max_per_class, iou, thr, sort_desc)
                assert idx.dtype == np.int64 and sel.dtype == np.float32
                assert idx.tolist() == [list(p[:3]) for p in slow]
                assert sel.tolist() == [[p[0], p[1], float(p[3])] for p in slow]
