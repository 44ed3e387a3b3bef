"""Rows for the ops whose output size depends on the values: NonMaxSuppression-9 (corner and center
boxes in any corner order, hard and soft NMS, thresholds, sorted or not) and Unique-10 (flattened or
along an axis, sorted or in order of appearance, many duplicates)."""

from __future__ import annotations

import numpy as np

from irnorm import reference as R

from . import Case, Row


def _nms(rng: np.random.Generator) -> Case:
    b, c, n = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 12))
    center = bool(rng.integers(2))
    if center:
        boxes = np.concatenate([rng.uniform(0, 10, (b, n, 2)), rng.uniform(0.5, 5, (b, n, 2))], -1)
    else:
        boxes = rng.uniform(0, 10, (b, n, 4))  # corners in any order: y1 > y2 happens
    dt = np.float32 if rng.integers(3) else np.float16
    scores = rng.uniform(0, 1, (b, c, n))
    sigma = float(rng.choice([0.0, 0.0, 0.5]))
    attrs = {"box_encoding": "center" if center else "corner", "sort_result_descending": bool(rng.integers(2)),
             "output_type": str(rng.choice(["i64", "i32"]))}
    ins = (boxes.astype(dt), scores.astype(dt), np.array(int(rng.integers(0, 6)), np.int64),
           np.array(float(rng.choice([0.0, 0.3, 0.5, 0.9])), dt), np.array(float(rng.choice([0.0, 0.2, 0.6])), dt),
           np.array(sigma, dt))
    dynamic = bool(rng.integers(2))
    not_ov = ""
    if int(ins[2]) == 0 and attrs["output_type"] == "i32":
        not_ov = "OpenVINO's CPU plugin leaves an i32 valid_outputs unwritten when nothing may be selected"
    elif dynamic:
        not_ov = "OpenVINO's CPU plugin needs the boxes' last dim (4) static"
    return Case(ins, attrs, params=(0, 1), dynamic=dynamic, not_openvino=not_ov,
                label=f"{np.dtype(dt).name} B{b} C{c} N{n} max {int(ins[2])} iou {float(ins[3])} "
                      f"score {float(ins[4])} sigma {sigma} {attrs}")


def _nms_ref(c: Case) -> list[np.ndarray]:
    boxes, scores, mx, iou, sc, sigma = c.inputs
    a = c.attrs
    idx, sel = R.non_max_suppression(boxes, scores, int(mx), float(iou), float(sc), float(sigma),
                                     a["box_encoding"] == "center", a["sort_result_descending"])
    return [idx, sel, np.array([len(idx)])]


def _nms_ov(nodes, c: Case):
    import openvino.opset9 as op9

    return op9.non_max_suppression(*nodes, **c.attrs)


def _unique(rng: np.random.Generator) -> Case:
    rank = int(rng.integers(1, 4))
    dims = tuple(int(d) for d in rng.integers(1, 5, rank))
    dt = (np.float32, np.int32, np.int64, np.float16)[int(rng.integers(4))]
    x = rng.integers(-2, 3, dims).astype(dt)  # few distinct values: many duplicates
    attrs = {"sorted": bool(rng.integers(2)), "index_element_type": str(rng.choice(["i64", "i32"])),
             "count_element_type": str(rng.choice(["i64", "i32"]))}
    ins: tuple = (x,)
    if rng.integers(2):
        ins = (x, np.array(int(rng.integers(-rank, rank)), np.int64))
    return Case(ins, attrs, dynamic=bool(rng.integers(2)),
                label=f"{x.dtype} {dims} axis {int(ins[1]) if len(ins) > 1 else None} {attrs}")


def _unique_ref(c: Case) -> list[np.ndarray]:
    x = c.inputs[0]
    axis = int(c.inputs[1]) % x.ndim if len(c.inputs) > 1 else None
    return R.unique(x, axis, c.attrs["sorted"])


def _unique_ov(nodes, c: Case):
    import openvino.opset10 as op10

    return op10.unique(*nodes, **c.attrs)


ROWS = [
    Row("NonMaxSuppression-9", "opset9", _nms, _nms_ref, _nms_ov),
    Row("Unique-10", "opset10", _unique, _unique_ref, _unique_ov),
]
