"""Rows for the SSD family: PriorBox-1/8 (min/max sizes, flipped aspect ratios, MXNet-style
scale_all_sizes=false, fixed sizes with density and fixed ratios, clip, 0/1/4 variances, folded from constant
sizes or computed from run-time ones), PriorBoxClustered-1 (steps, clip, variances) and DetectionOutput-1/8
(CORNER and CENTER_SIZE, shared or per-class locations, variance in the priors or in the target, pixel priors
with an end marker, top_k / keep_top_k, clipping, MXNet-style decrease_label_id, the 5-input ARM form).
Scores are distinct so that no tie decides the order."""

from __future__ import annotations

import numpy as np

from irnorm import reference as R

from . import REF_TOL, Case, Row

CODES = ("caffe.PriorBoxParameter.CORNER", "caffe.PriorBoxParameter.CENTER_SIZE")


def _sizes(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    it = (np.int64, np.int32)[int(rng.integers(2))]
    hw = np.array([rng.integers(1, 5), rng.integers(1, 5)], it)
    img = np.array([rng.integers(20, 300), rng.integers(20, 300)], it)
    return hw, img, ((0, 1) if rng.integers(2) else ())


def _prior_box(v8: bool):
    def sample(rng: np.random.Generator) -> Case:
        hw, img, params = _sizes(rng)
        a: dict = {"offset": float(rng.choice([0.25, 0.5])), "clip": bool(rng.integers(2)),
                   "flip": bool(rng.integers(2)), "variance": [[], [0.1], [0.1, 0.1, 0.2, 0.2]][int(rng.integers(3))],
                   "aspect_ratio": [[], [2.0], [2.0, 3.0], [0.5, 2.0]][int(rng.integers(4))],
                   "step": float(rng.choice([0.0, 8.0, 16.5]))}
        mode = int(rng.integers(4))
        not_ov = ""
        if mode == 0:
            a["min_size"] = [float(x) for x in rng.uniform(5, 100, int(rng.integers(1, 3))).round(1)]
            if rng.integers(2):
                a["max_size"] = [m + 20 for m in a["min_size"]]
            if v8:
                a["min_max_aspect_ratios_order"] = bool(rng.integers(2))
                if not a["min_max_aspect_ratios_order"] and params:
                    not_ov = "OpenVINO's CPU plugin runs PriorBox-8 at run time only with min_max_aspect_ratios_order"
        elif mode == 1:
            a["scale_all_sizes"] = False
            a["min_size"] = [float(x) for x in rng.uniform(0.05, 0.5, int(rng.integers(1, 3))).round(2)]
            a["step"] = float(rng.choice([0.0, 0.1]))
        elif mode == 2:
            a["fixed_size"] = [float(rng.choice([16.0, 32.0, 33.0]))]
            a["density"] = [float(rng.integers(1, 4))]
        else:
            a["fixed_size"], a["density"], a["aspect_ratio"] = [32.0, 17.0], [2.0, 1.0], []
            a["fixed_ratio"] = [1.0]
        if params and any(int(f) % 2 for f in a.get("fixed_size", [])):
            not_ov = "OpenVINO's CPU plugin halves an odd fixed_size as a float at run time (its fold: an integer)"
        return Case((hw, img), a, params=params, not_openvino=not_ov,
                    label=f"size {hw.tolist()} image {img.tolist()} {'run time' if params else 'folded'} {a}")

    return sample


def _prior_box_ref(c: Case) -> list[np.ndarray]:
    a = c.attrs
    return [R.prior_box(c.inputs[0], c.inputs[1], a.get("min_size", []), a.get("max_size", []), a["aspect_ratio"],
                        a["flip"], a["clip"], a["step"], a["offset"], a["variance"], a.get("scale_all_sizes", True),
                        a.get("fixed_size", []), a.get("fixed_ratio", []), a.get("density", []),
                        a.get("min_max_aspect_ratios_order", True))]


def _prior_box_ov(v8: bool):
    def build(nodes, c: Case):
        import openvino.opset1 as op1
        import openvino.opset8 as op8

        return (op8 if v8 else op1).prior_box(*nodes, dict(c.attrs))

    return build


def _clustered(rng: np.random.Generator) -> Case:
    hw, img, params = _sizes(rng)
    k = int(rng.integers(1, 4))
    a: dict = {"width": [float(x) for x in rng.uniform(1, 80, k).round(1)],
               "height": [float(x) for x in rng.uniform(1, 80, k).round(1)], "clip": bool(rng.integers(2)),
               "offset": float(rng.choice([0.25, 0.5])),
               "variance": [[], [0.1], [0.1, 0.1, 0.2, 0.2]][int(rng.integers(3))]}
    st = int(rng.integers(4))
    if st == 1:
        a["step"] = float(rng.choice([8.0, 16.0]))
    elif st == 2:
        a["step_w"], a["step_h"] = 8.0, 12.0
    elif st == 3:
        a["step_h"] = 12.0  # step_w falls back to step (0): every centre at x = 0
    return Case((hw, img), a, params=params, label=f"size {hw.tolist()} image {img.tolist()} {a}")


def _clustered_ref(c: Case) -> list[np.ndarray]:
    a = c.attrs
    return [R.prior_box_clustered(c.inputs[0], c.inputs[1], a["width"], a["height"], a["clip"], a.get("step", 0.0),
                                  a.get("step_w", 0.0), a.get("step_h", 0.0), a["offset"], a["variance"])]


def _clustered_ov(nodes, c: Case):
    import openvino.opset1 as op1

    return op1.prior_box_clustered(*nodes, dict(c.attrs))


def _detection(v1: bool):
    def sample(rng: np.random.Generator) -> Case:
        n, p, c = int(rng.integers(1, 3)), int(rng.integers(1, 16)), int(rng.integers(2, 5))
        a: dict = {"keep_top_k": [int(rng.choice([-1, 5, 50]))], "nms_threshold": float(rng.choice([0.3, 0.5, 0.7])),
                   "top_k": int(rng.choice([-1, 3, 10])), "share_location": bool(rng.integers(2)),
                   "background_label_id": int(rng.choice([0, 0, -1, 1])),
                   "confidence_threshold": float(rng.choice([0.0, 0.1, 0.3])), "code_type": str(rng.choice(CODES)),
                   "variance_encoded_in_target": bool(rng.integers(2)), "normalized": bool(rng.integers(3) > 0),
                   "clip_before_nms": bool(rng.integers(2)), "clip_after_nms": bool(rng.integers(2)),
                   "decrease_label_id": bool(rng.integers(4) == 0)}
        if v1:
            a = {"num_classes": c, **a}
        if a["decrease_label_id"]:
            a["background_label_id"] = 0
        if not a["normalized"]:
            a["input_height"], a["input_width"] = int(rng.integers(50, 300)), int(rng.integers(50, 300))
        arm = bool(rng.integers(4) == 0)
        if arm:
            a["objectness_score"] = float(rng.choice([0.0, 0.3]))
        loc_cls = 1 if a["share_location"] else c
        psize = 4 if a["normalized"] else 5
        ctr, wh = rng.uniform(0.1, 0.9, (p, 2)), rng.uniform(0.05, 0.4, (p, 2))
        boxes = np.concatenate([ctr - wh / 2, ctr + wh / 2], 1)
        if not a["normalized"]:
            boxes = np.concatenate([np.zeros((p, 1)), boxes * ([a["input_width"], a["input_height"]] * 2)], 1)
            if p > 2 and rng.integers(3) == 0:
                boxes[p - 2:, 0] = -1  # the plugin's end-of-priors marker
        nb = n if rng.integers(3) == 0 else 1
        pri = np.repeat(boxes.reshape(1, 1, -1), nb, 0)
        if not a["variance_encoded_in_target"]:
            var = np.tile([0.1, 0.1, 0.2, 0.2], (nb, 1, p)).reshape(nb, 1, -1)
            pri = np.concatenate([pri, np.concatenate([var, np.zeros((nb, 1, p * psize - 4 * p))], 2)], 1)
        conf = (rng.permutation(n * p * c) + 1) / (n * p * c + 1)  # distinct scores: no ties
        ins = [rng.normal(0, 0.5, (n, p * loc_cls * 4)), conf.reshape(n, p * c), pri]
        if arm:
            ins += [rng.uniform(0, 1, (n, 2 * p)), rng.normal(0, 0.3, (n, p * loc_cls * 4))]
        dt = np.float32 if rng.integers(3) else np.float16
        return Case(tuple(x.astype(dt) for x in ins), a, params=tuple(range(len(ins))),
                    label=f"{np.dtype(dt).name} N{n} P{p} C{c} arm {arm} priors per image {nb > 1} {a}")

    return sample


def _detection_ref(c: Case) -> list[np.ndarray]:
    a = {k: v for k, v in c.attrs.items() if k != "num_classes"}
    k = a.pop("keep_top_k")[0]
    thr = a.pop("nms_threshold")
    arm = len(c.inputs) == 5
    return [R.detection_output(*c.inputs[:3], c.inputs[3] if arm else None, c.inputs[4] if arm else None, k, thr,
                               **a)]


def _detection_ov(v1: bool):
    def build(nodes, c: Case):
        import openvino.opset1 as op1
        import openvino.opset8 as op8

        return (op1 if v1 else op8).detection_output(*nodes[:3], dict(c.attrs), *nodes[3:])

    return build


_DET_TOL = {**REF_TOL, "float16": (4e-3, 4e-3)}

ROWS = [
    Row("PriorBox-1", "opset1", _prior_box(False), _prior_box_ref, _prior_box_ov(False)),
    Row("PriorBox-8", "opset8", _prior_box(True), _prior_box_ref, _prior_box_ov(True)),
    Row("PriorBoxClustered-1", "opset1", _clustered, _clustered_ref, _clustered_ov),
    Row("DetectionOutput-1", "opset1", _detection(True), _detection_ref, _detection_ov(True), tol=_DET_TOL),
    Row("DetectionOutput-8", "opset8", _detection(False), _detection_ref, _detection_ov(False), tol=_DET_TOL),
]
