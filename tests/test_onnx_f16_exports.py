"""Half-precision ONNX normalizations, converted and written by OpenVINO at test time.

An ONNX model with f16 input and f16 weights goes through ``openvino.convert_model`` and
``openvino.save_model`` (with and without fp16 compression); OpenVINO writes LayerNormalization-17
as Convert -> MVN -> ConvertLike -> Multiply -> Add, InstanceNormalization as MVN -> Multiply -> Add
in f16, and GroupNormalization-21 as Convert -> GroupNormalization -> Convert.  irnorm must run every
one of these files, stay within about two f16 ulps of the float64 formula, and agree with OpenVINO's
CPU plugin (f32 inference precision) as closely, including a constant slice and a large mean.
onnxruntime on the original ONNX model agrees too, except that its f16 GroupNormalization-21 loses
~0.03 on the large-mean sample (its statistics are not accumulated in f32): there irnorm must be at
least as close to the float64 formula."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import irnorm

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
ov = pytest.importorskip("openvino")
from onnx import TensorProto, numpy_helper  # noqa: E402
from onnx import helper as oh  # noqa: E402

# name -> (ONNX op, data shape, attributes, opset, weight shape, layer types OpenVINO is expected to write)
CASES = {
    "layernorm17": ("LayerNormalization", (2, 5, 16), {"axis": -1, "epsilon": 1e-5}, 17, (16,),
                    {"MVN", "ConvertLike", "Multiply", "Add"}),
    "groupnorm21": ("GroupNormalization", (2, 6, 3, 4), {"num_groups": 3, "epsilon": 1e-5}, 21, (6,),
                    {"GroupNormalization"}),
    "instancenorm": ("InstanceNormalization", (2, 4, 3, 5), {"epsilon": 1e-5}, 17, (4,), {"MVN", "Multiply", "Add"}),
}


def _onnx_model(op: str, shape: tuple[int, ...], attrs: dict, opset: int, wshape: tuple[int, ...]):
    dims = ["n", *shape[1:]]  # a dynamic batch, as exporters write it
    rng = np.random.default_rng(len(op))
    inits = [numpy_helper.from_array((1 + 0.5 * rng.standard_normal(wshape)).astype(np.float16), "scale"),
             numpy_helper.from_array((0.5 * rng.standard_normal(wshape)).astype(np.float16), "bias")]
    graph = oh.make_graph([oh.make_node(op, ["x", "scale", "bias"], ["y"], **attrs)], "g",
                          [oh.make_tensor_value_info("x", TensorProto.FLOAT16, dims)],
                          [oh.make_tensor_value_info("y", TensorProto.FLOAT16, dims)], inits)
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", opset)], producer_name="irnorm-tests")
    model.ir_version = 10
    onnx.checker.check_model(model)
    return model


def _inputs(shape: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    plain = (rng.standard_normal(shape) * 3 + 2).astype(np.float16)
    nasty = plain.copy()
    nasty[0] = 1.5  # a constant first sample: zero variance everywhere in it
    nasty[1] = (rng.standard_normal(shape[1:]) + 1000).astype(np.float16)  # a large mean, f16 spacing 0.5
    return [plain, nasty]


def _formula(name: str, x: np.ndarray, scale: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The ONNX operator's definition in float64 (epsilon 1e-5 for every case)."""
    xd = x.astype(np.float64)
    if name == "layernorm17":
        v = xd.reshape(-1, x.shape[-1])
    elif name == "groupnorm21":
        v = xd.reshape(x.shape[0] * CASES[name][2]["num_groups"], -1)
    else:  # instancenorm
        v = xd.reshape(x.shape[0] * x.shape[1], -1)
    z = ((v - v.mean(1, keepdims=True)) / np.sqrt(v.var(1, keepdims=True) + 1e-5)).reshape(x.shape)
    if name == "layernorm17":
        return z * scale + bias
    return z * scale.reshape(1, -1, 1, 1) + bias.reshape(1, -1, 1, 1)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict[tuple[str, bool], tuple[Path, Path]]:
    d = tmp_path_factory.mktemp("onnx_f16")
    out = {}
    for name, (op, shape, attrs, opset, wshape, _) in CASES.items():
        onnx_path = d / f"{name}.onnx"
        onnx.save(_onnx_model(op, shape, attrs, opset, wshape), str(onnx_path))
        converted = ov.convert_model(str(onnx_path))
        for compress in (False, True):
            xml = d / f"{name}_{'f16w' if compress else 'f32w'}.xml"
            ov.save_model(converted, str(xml), compress_to_fp16=compress)
            out[(name, compress)] = (onnx_path, xml)
    return out


@pytest.mark.parametrize("compress", [False, True], ids=["f32w", "f16w"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_f16_onnx_export_matches_openvino_and_onnxruntime(exported, name: str, compress: bool) -> None:
    onnx_path, xml = exported[(name, compress)]
    written = set(re.findall(r'type="(\w+)"', xml.read_text()))
    assert CASES[name][5] <= written, f"OpenVINO wrote {sorted(written)}"
    m = irnorm.load(xml)
    assert m.inputs[0].dtype == np.float16 and m.outputs[0].dtype == np.float16
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(str(onnx_path)).graph.initializer}
    tol = {"rtol": 2**-10, "atol": 2**-8}  # one to two f16 ulps for outputs of magnitude 1-8
    for k, x in enumerate(_inputs(CASES[name][1])):  # k=1: constant sample + large mean
        y = m.run([x])[m.outputs[0].name]
        assert y.dtype == np.float16 and y.shape == x.shape
        assert np.isfinite(y).all()
        want = _formula(name, x, weights["scale"], weights["bias"])
        np.testing.assert_allclose(y.astype(np.float64), want, **tol)
        y_ov = np.asarray(compiled([x])[0]).astype(np.float64)
        np.testing.assert_allclose(y.astype(np.float64), y_ov, **tol)
        y_ort = session.run(None, {"x": x})[0].astype(np.float64)
        if name == "groupnorm21" and k == 1 and np.abs(y_ort - want).max() > 1e-2:
            # onnxruntime's own f16 deviation (see the docstring): irnorm must be the closer one
            assert np.abs(y - want).max() <= np.abs(y_ort - want).max()
        else:
            np.testing.assert_allclose(y.astype(np.float64), y_ort, **tol)
