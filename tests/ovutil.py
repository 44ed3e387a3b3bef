"""OpenVINO as the outside oracle: build a model with its Python API, write it with
`openvino.save_model`, run the written file in OpenVINO's CPU plugin and in irnorm,
and compare.

Use `ov = pytest.importorskip("openvino")` in a test module (or `requires_openvino`)
before calling these helpers.  OpenVINO is a test dependency only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import irnorm

try:  # pragma: no cover - depends on the environment
    import openvino as _ov

    HAVE_OPENVINO = True
except ImportError:  # pragma: no cover
    _ov = None
    HAVE_OPENVINO = False

requires_openvino = pytest.mark.skipif(not HAVE_OPENVINO, reason="openvino (test dependency) is not installed")

# f32 inference precision: the CPU plugin's default on bf16-capable CPUs is bf16.
OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": "2"}

# (rtol, atol) for irnorm vs OpenVINO-f32 per output dtype name.
TOLERANCE = {
    "float64": (1e-6, 1e-6),  # OpenVINO's CPU plugin computes f64 models in f32
    "float32": (2e-5, 2e-5),
    "float16": (4e-3, 4e-3),
    "bfloat16": (2e-2, 2e-2),
}

_core = None


def core():
    global _core
    if _core is None:
        _core = _ov.Core()
    return _core


def save(model, directory: Path, name: str, compress_to_fp16: bool = False) -> Path:
    """Write `model` (an ov.Model) as directory/name.xml + .bin and return the xml path."""
    xml = Path(directory) / f"{name}.xml"
    _ov.save_model(model, str(xml), compress_to_fp16=compress_to_fp16)
    return xml


def _to_ov(arr: np.ndarray):
    if arr.dtype.name == "bfloat16":
        return _ov.Tensor(arr.view(np.uint16), list(arr.shape), _ov.Type.bf16)
    return arr


def ov_run(xml: Path, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Read the written file back and run it on OpenVINO CPU; outputs keyed by get_any_name()."""
    compiled = core().compile_model(core().read_model(str(xml)), "CPU", OV_CONFIG)
    req = compiled.create_infer_request()
    feeds = {}
    for port in compiled.inputs:
        key = next((n for n in port.get_names() if n in inputs), None)
        assert key is not None, f"no input given for {port.get_names()}"
        feeds[port] = _to_ov(inputs[key])
    req.infer(feeds)
    out = {}
    for i, port in enumerate(compiled.outputs):
        t = req.get_output_tensor(i)
        if t.element_type == _ov.Type.bf16:
            import ml_dtypes

            val = np.array(t.data, copy=True).view(np.uint16).view(ml_dtypes.bfloat16).reshape(list(t.shape))
        else:
            val = np.array(t.data, copy=True)
        out[port.get_any_name()] = val
    return out


def assert_close(got: np.ndarray, exp: np.ndarray, what: str = "", tol: tuple[float, float] | None = None,
                 scale_atol: bool = True) -> None:
    """Compare in float64 with per-dtype tolerances; atol is relative to max|exp| when scale_atol."""
    assert got.shape == exp.shape, f"{what}: shape {got.shape} != {exp.shape}"
    rtol, atol = tol or TOLERANCE.get(exp.dtype.name, (0.0, 0.0))  # integers and bools: exact
    g, e = got.astype(np.float64), exp.astype(np.float64)
    ref = float(np.max(np.abs(e[np.isfinite(e)]))) if e.size and np.isfinite(e).any() else 1.0  # inf: no scale
    if scale_atol:
        atol = atol * max(ref, 1.0)
    np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def compare_with_openvino(xml: Path, inputs: dict[str, np.ndarray], tol: tuple[float, float] | None = None
                          ) -> dict[str, np.ndarray]:
    """Run the IR file in irnorm and OpenVINO; assert names, order, dtypes and values agree.
    Returns irnorm's outputs."""
    expected = ov_run(xml, inputs)
    m = irnorm.load(xml)
    got = m.run(inputs)
    assert list(got) == list(expected), f"output names/order: irnorm {list(got)} vs OpenVINO {list(expected)}"
    for k, exp in expected.items():
        assert got[k].dtype == exp.dtype, f"{k}: dtype {got[k].dtype} vs OpenVINO {exp.dtype}"
        assert_close(got[k], exp, f"{xml.name}:{k}", tol)
    return got
