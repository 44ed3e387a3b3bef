"""Rows for the ops whose output size depends on the values: NonMaxSuppression-9 (corner and center
boxes in any corner order, hard and soft NMS, thresholds, sorted or not) and Unique-10 (flattened or
along an axis, sorted or in order of appearance, many duplicates); and the other detection op,
ROIAlign-3/9 (regions inside, across and outside the map, adaptive or fixed sampling, avg/max, every
aligned_mode)."""

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


def _roi(v9: bool):
    def sample(rng: np.random.Generator) -> Case:
        n, c, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(2, 9)), int(rng.integers(2, 9))
        dt = (np.float32, np.float32, np.float16, np.float64)[int(rng.integers(4))]
        r = int(rng.integers(1, 5))
        scale = float(rng.choice([1.0, 0.5, 0.25]))
        lo = rng.uniform(-2, max(w, h) / scale, (r, 2))
        rois = np.concatenate([lo, lo + rng.uniform(0.2, 6 / scale, (r, 2))], axis=1)  # x1, y1, x2, y2
        attrs = {"pooled_h": int(rng.integers(1, 4)), "pooled_w": int(rng.integers(1, 4)),
                 "sampling_ratio": int(rng.integers(0, 3)), "spatial_scale": scale,
                 "mode": str(rng.choice(["avg", "max"]))}
        if v9:
            attrs["aligned_mode"] = str(rng.choice(["asymmetric", "half_pixel_for_nn", "half_pixel"]))
        ins = (rng.standard_normal((n, c, h, w)).astype(dt), rois.astype(dt), rng.integers(0, n, r).astype(np.int64))
        dynamic = bool(rng.integers(2))
        return Case(ins, attrs, params=(0, 1, 2), dynamic=dynamic,
                    not_openvino="OpenVINO's CPU plugin needs the rois' last dim (4) static" if dynamic else "",
                    label=f"{np.dtype(dt).name} x{[n, c, h, w]} rois {np.round(rois, 2).tolist()} {attrs}")

    return sample


def _roi_ref(c: Case) -> list[np.ndarray]:
    a = c.attrs
    return [R.roi_align(*c.inputs, a["pooled_h"], a["pooled_w"], a["sampling_ratio"], a["spatial_scale"], a["mode"],
                        a.get("aligned_mode", "asymmetric"))]


def _roi_ov(v9: bool):
    def build(nodes, c: Case):
        import openvino.opset3 as op3
        import openvino.opset9 as op9

        return (op9 if v9 else op3).roi_align(*nodes, **c.attrs)

    return build


ROWS = [
    Row("ROIAlign-3", "opset3", _roi(False), _roi_ref, _roi_ov(False)),
    Row("ROIAlign-9", "opset9", _roi(True), _roi_ref, _roi_ov(True)),
    Row("NonMaxSuppression-9", "opset9", _nms, _nms_ref, _nms_ov),
    Row("Unique-10", "opset10", _unique, _unique_ref, _unique_ov),
]
