"""PriorBox-1/8, PriorBoxClustered-1 and DetectionOutput-1/8 (irnorm/ops/detection.py): malformed attributes
and shapes, the output layout (-1 row after the last detection), folding of static priors, run-time errors,
and small SSD heads (Convolutions -> Transpose/Reshape/Softmax -> DetectionOutput with PriorBox from ShapeOf)
against OpenVINO's CPU plugin.  The per-op sweeps live in tests/conformance/detection.py."""

from __future__ import annotations

import numpy as np
import pytest
from irbuilder import expect_error, single_op_model
from ovutil import compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R
from irnorm.errors import InputError

F = np.float32
PB = {"min_size": [8.0], "max_size": [16.0], "aspect_ratio": [2.0], "flip": True, "clip": False, "offset": 0.5,
      "variance": [0.1, 0.1, 0.2, 0.2]}


SIZE, IMAGE = np.array([2, 3], np.int64), np.array([32, 48], np.int64)


def _pb(attrs=None, size=SIZE, image=IMAGE, type_="PriorBox", version="opset8", out=((2, -1), "f32")):
    a = dict(PB) if type_ == "PriorBox" else {"width": [4.0, 8.0], "height": [6.0, 3.0], "offset": 0.5}
    a.update(attrs or {})
    ins = [(n, v) if isinstance(v, np.ndarray) else (f"param:{n}", v) for n, v in (("size", size), ("image", image))]
    return single_op_model(type_, ins, [out], a, version=version)


@pytest.mark.parametrize("kw,code,fragments", [
    ({"attrs": {"aspect_ratio": "0"}}, "IRN023", ("aspect_ratio",)),
    ({"attrs": {"aspect_ratio": "2,,3"}}, "IRN021", ("aspect_ratio",)),
    ({"attrs": {"min_size": "-4"}}, "IRN023", ("min_size",)),
    ({"attrs": {"variance": "0.1, 0.2"}}, "IRN023", ("variance",)),
    ({"attrs": {"density": "0", "fixed_size": "16"}}, "IRN023", ("density",)),
    ({"attrs": {"offset": None}}, "IRN020", ("offset",)),
    ({"attrs": {"scale_all_sizes": False}}, "IRN023", ("priors per cell",)),  # max_size without scale_all_sizes
    ({"attrs": {"fixed_size": [16.0], "density": [1.0]}}, "IRN023", ("priors per cell",)),  # + min_size
    ({"attrs": {"fixed_size": [16.0, 8.0], "density": [1.0]}}, "IRN023", ("density holds 1",)),
    ({"size": np.array([2, 3, 4], np.int64)}, "IRN032", ("2 values",)),
    ({"size": np.array([2, -3], np.int64)}, "IRN032", ("negative",)),
    ({"image": np.array([0, 5], np.int64)}, "IRN032", ("positive",)),
    ({"size": np.array([2.0, 3.0], F)}, "IRN033", ("integer",)),
    ({"size": np.array([60000, 60000], np.int64)}, "IRN050", ("fold",)),
])
def test_malformed_prior_box(tmp_path, kw, code, fragments):
    if "attrs" in kw and kw["attrs"].get("offset", 0) is None:
        b = _pb()
        b.layers[-2].data.pop("offset")
        expect_error(b, tmp_path, code, *fragments)
        return
    expect_error(_pb(**kw), tmp_path, code, *fragments)


@pytest.mark.parametrize("attrs,code,fragments", [
    ({"height": [6.0]}, "IRN023", ("one height per width",)),
    ({"width": [-1.0, 2.0]}, "IRN023", ("width",)),
    ({"variance": [0.1, -0.1, 0.2, 0.2]}, "IRN023", ("variance",)),
])
def test_malformed_prior_box_clustered(tmp_path, attrs, code, fragments):
    expect_error(_pb(attrs, type_="PriorBoxClustered", version="opset1"), tmp_path, code, *fragments)


def test_static_priors_fold_and_match_the_oracle(tmp_path):
    m = irnorm.load(_pb().save(tmp_path, "pb"))
    (y,) = m.run({}).values()
    assert y.shape == (2, 2 * 3 * 4 * 4) and y.dtype == F
    exp = R.prior_box([2, 3], [32, 48], [8.0], [16.0], [2.0], True, False, 0.0, 0.5,
                      [0.1, 0.1, 0.2, 0.2])
    np.testing.assert_allclose(y, exp, rtol=1e-6, atol=1e-7)
    # first cell: centre (8, 8) of a 16x16 cell, the 8x8 box first
    np.testing.assert_allclose(y[0, :4], [4 / 48, 4 / 32, 12 / 48, 12 / 32], rtol=1e-6)


def test_run_time_prior_sizes_are_checked(tmp_path):
    m = irnorm.load(_pb(size=((2,), "i64"), image=((-1,), "i32")).save(tmp_path, "pb"))
    y = m.run({"size": np.array([1, 2], np.int64), "image": np.array([10, 10], np.int32)})["y"]
    assert y.shape == (2, 1 * 2 * 4 * 4)
    for image in (np.array([10], np.int32), np.array([0, 10], np.int32)):
        with pytest.raises(InputError) as e:
            m.run({"size": np.array([1, 2], np.int64), "image": image})
        assert e.value.code == "IRN064" and "image_size" in str(e.value)


# ---- DetectionOutput --------------------------------------------------------------------------------

DO = {"keep_top_k": [4], "nms_threshold": 0.5, "normalized": True, "share_location": True,
      "background_label_id": 0, "confidence_threshold": 0.05, "code_type": "caffe.PriorBoxParameter.CORNER"}


def _do(attrs=None, loc=((1, 12), "f32"), conf=((1, 9), "f32"), pri=((1, 2, 12), "f32"), extra=(), version="opset8",
        out=((1, 1, -1, 7), "f32")):
    a = dict(DO)
    a.update(attrs or {})
    ins = [("param:loc", loc), ("param:conf", conf), ("param:pri", pri)] + [(f"param:x{k}", s)
                                                                            for k, s in enumerate(extra)]
    return single_op_model("DetectionOutput", ins, [out], a, version=version)


@pytest.mark.parametrize("kw,code,fragments", [
    ({"attrs": {"code_type": "caffe.PriorBoxParameter.CORNER_SIZE"}}, "IRN023", ("CORNER_SIZE",)),
    ({"attrs": {"code_type": "CORNER"}}, "IRN021", ("code_type",)),
    ({"attrs": {"keep_top_k": ""}}, "IRN021", ("keep_top_k",)),
    ({"attrs": {"top_k": -2}}, "IRN023", ("top_k",)),
    ({"attrs": {"keep_top_k": [0], "top_k": 5}}, "IRN023", ("keep_top_k 0 with top_k 5",)),
    ({"attrs": {"decrease_label_id": True, "background_label_id": 1}}, "IRN023", ("decrease_label_id",)),
    ({"attrs": {"normalized": False, "input_width": 0}}, "IRN023", ("input_width",)),
    ({"loc": ((1, 16), "f32")}, "IRN032", ("box_logits",)),
    ({"conf": ((1, 10), "f32")}, "IRN032", ("class_preds",)),
    ({"pri": ((1, 2, 13), "f32")}, "IRN032", ("multiple of 4",)),
    ({"pri": ((1, 1, 12), "f32")}, "IRN032", ("2 rows",)),
    ({"pri": ((1, 2, 12), "f16")}, "IRN033", ("element type f16",)),
    ({"conf": ((2, 9), "f32")}, "IRN032", ("number of images",)),
    ({"extra": (((1, 6), "f32"),)}, "IRN017", ("3 inputs or 5",)),
    ({"extra": (((1, 7), "f32"), ((1, 12), "f32"))}, "IRN032", ("aux_class_preds",)),
    ({"version": "opset1", "attrs": {"num_classes": 4}}, "IRN032", ("class_preds",)),
])
def test_malformed_detection_output(tmp_path, kw, code, fragments):
    expect_error(_do(**kw), tmp_path, code, *fragments)


def test_detection_output_layout_and_padding_row(tmp_path):
    """3 priors, 3 classes (0 background): NMS drops prior 0 of class 1 (it overlaps prior 1, 0.6 < 0.7);
    rows come class by class, highest score first, then one -1 row, zeros elsewhere (keep_top_k 6: 6 rows)."""
    m = irnorm.load(_do({"keep_top_k": [6]}).save(tmp_path, "do"))
    pri = np.array([[[0.1, 0.1, 0.5, 0.5, 0.12, 0.1, 0.52, 0.5, 0.6, 0.6, 0.9, 0.9],
                     [0.1, 0.1, 0.2, 0.2] * 3]], F)
    conf = np.array([[0.1, 0.6, 0.2, 0.1, 0.7, 0.01, 0.1, 0.3, 0.9]], F)
    y = m.run({"loc": np.zeros((1, 12), F), "conf": conf, "pri": pri})["y"]
    assert y.shape == (1, 1, 6, 7)
    np.testing.assert_allclose(y[0, 0], [
        [0, 1, 0.7, 0.12, 0.1, 0.52, 0.5],
        [0, 1, 0.3, 0.6, 0.6, 0.9, 0.9],
        [0, 2, 0.9, 0.6, 0.6, 0.9, 0.9],
        [0, 2, 0.2, 0.1, 0.1, 0.5, 0.5],
        [-1, 0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 0]], rtol=1e-6)
    with pytest.raises(InputError) as e:
        irnorm.load(_do(loc=((1, -1), "f32")).save(tmp_path, "dyn")).run(
            {"loc": np.zeros((1, 8), F), "conf": conf, "pri": pri})
    assert e.value.code == "IRN064" and "box_logits" in str(e.value)


# ---- SSD heads against OpenVINO ----------------------------------------------------------------------


def _ssd_head(ov, rng, clustered: bool, dynamic: bool):
    import openvino.opset1 as op1
    import openvino.opset8 as op8

    c_in, n_cls = 3, 4
    image = op8.parameter([1, c_in, -1, -1] if dynamic else [1, c_in, 64, 64], F, name="image")
    w0 = rng.normal(0, 0.3, (8, c_in, 3, 3)).astype(F)
    feat = op8.relu(op8.convolution(image, w0, [4, 4], [1, 1], [1, 1], [1, 1]))  # [1, 8, 16, 16]
    feat2 = op8.relu(op8.convolution(feat, rng.normal(0, 0.3, (8, 8, 3, 3)).astype(F), [2, 2], [1, 1], [1, 1],
                                     [1, 1]))  # [1, 8, 8, 8]
    locs, confs, priors = [], [], []
    for f, size in ((feat, 12.0), (feat2, 28.0)):
        if clustered:
            k = 3
            attrs = {"width": [size, size * 1.5, size * 0.7], "height": [size, size * 0.7, size * 1.5],
                     "offset": 0.5, "clip": False, "variance": [0.1, 0.1, 0.2, 0.2]}
        else:
            k = 4  # 1 + max + ratios 2 and 1/2
            attrs = {"min_size": [size], "max_size": [size * 1.8], "aspect_ratio": [2.0], "flip": True,
                     "clip": True, "offset": 0.5, "variance": [0.1, 0.1, 0.2, 0.2]}
        sl = lambda t: op8.strided_slice(op8.shape_of(t), [2], [4], [1], [0], [0])  # noqa: E731
        pb = (op1.prior_box_clustered if clustered else op8.prior_box)(sl(f), sl(image), attrs)
        priors.append(op8.reshape(pb, [2, -1], False))
        for outs, depth in ((locs, 4 * k), (confs, n_cls * k)):
            head = op8.convolution(f, rng.normal(0, 0.3, (depth, 8, 3, 3)).astype(F), [1, 1], [1, 1], [1, 1], [1, 1])
            outs.append(op8.reshape(op8.transpose(head, [0, 2, 3, 1]), [1, -1], False))
    loc = op8.concat(locs, 1)
    conf = op8.reshape(op8.softmax(op8.reshape(op8.concat(confs, 1), [0, -1, n_cls], True), 2), [1, -1], False)
    pri = op8.unsqueeze(op8.concat(priors, 1), [0])
    do = op8.detection_output(loc, conf, pri, {"keep_top_k": [50], "nms_threshold": 0.45, "top_k": 100,
                                               "confidence_threshold": 0.2, "background_label_id": 0,
                                               "code_type": "caffe.PriorBoxParameter.CENTER_SIZE",
                                               "share_location": True, "normalized": True, "clip_after_nms": True})
    do.get_output_tensor(0).set_names({"detections"})
    return ov.Model([do], [image], "ssd")


@requires_openvino
@pytest.mark.parametrize("clustered", [False, True], ids=["PriorBox", "PriorBoxClustered"])
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_ssd_head_matches_openvino(tmp_path, clustered, dynamic):
    import openvino as ov

    rng = np.random.default_rng(7)
    xml = save(_ssd_head(ov, rng, clustered, dynamic), tmp_path, "ssd")
    x = rng.uniform(0, 1, (1, 3, 64, 64)).astype(F)
    got = compare_with_openvino(xml, {"image": x})["detections"]
    n = int(np.argmax(got[0, 0, :, 0] == -1)) if (got[0, 0, :, 0] == -1).any() else got.shape[2]
    assert n > 3, "the head should detect something"
    m = irnorm.load(xml)
    pb = [nd for nd in m.graph.nodes if nd.op_type in ("PriorBox", "PriorBoxClustered")]
    assert pb and all((nd.outputs[0].value is not None) != dynamic for nd in pb), "static priors fold at load"
