"""The real-export suite: every IR under tests/exports/ (written by tools/make_exports.py from PyTorch modules and
ONNX models through openvino.convert_model + save_model) validates, runs in irnorm and matches the outputs
OpenVINO's CPU plugin stored next to it; with openvino installed it also matches a live OpenVINO run of the same
file, and every dynamic-shape export matches OpenVINO at two further input shapes (every dynamic dim grown by
one, and every dynamic dim set to 1).

Neither torch nor onnx is needed here: the files are checked in.  See tests/exports/README.md for what each
export contains and which layers OpenVINO wrote.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, load_npz
from ovutil import TOLERANCE, assert_close, compare_with_openvino, requires_openvino

import irnorm

EXPORTS = ROOT / "tests" / "exports"


def _names() -> list[str]:
    return sorted(p.stem for p in EXPORTS.glob("*.xml"))


NAMES = _names()
DYNAMIC = [n for n in NAMES if "_dynamic_" in n]


def _xml(name: str) -> Path:
    return EXPORTS / f"{name}.xml"


def _inputs(name: str) -> dict[str, np.ndarray]:
    return load_npz(EXPORTS / f"{name}.inputs.npz")


def test_suite_is_complete():
    """Each model comes as static/dynamic x f32w/f16w (no f16w twin only where nothing could be compressed),
    with both npz files, and the README table lists exactly the files present."""
    assert len(NAMES) >= 40
    pattern = re.compile(r"(torch|onnx)_\w+_(static|dynamic)_(f32w|f16w)")
    readme = (EXPORTS / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(\w+)` \|", readme, flags=re.M)
    assert sorted(listed) == NAMES
    for name in NAMES:
        assert pattern.fullmatch(name), name
        for suffix in (".bin", ".inputs.npz", ".expected.npz"):
            assert (EXPORTS / f"{name}{suffix}").is_file(), f"{name}{suffix} missing"
        base = name.rsplit("_", 2)[0]
        for shape in ("static", "dynamic"):
            assert f"{base}_{shape}_f32w" in NAMES, f"{base}_{shape}_f32w missing"
    assert sum(p.stat().st_size for p in EXPORTS.iterdir()) < 2 * 2**20


@pytest.mark.parametrize("name", NAMES)
def test_export_kind_matches_its_name(name):
    """Guards the generator: dynamic exports have -1 dims, static ones none; f32w ones carry no f16 Const, f16w
    ones carry f16 weights that a decompression Convert turns back into f32 (or, with no f32 weights at all,
    differ from their f32w twin only by the compression pass's rt_info marks)."""
    text = _xml(name).read_text(encoding="utf-8")
    params = re.findall(r'type="Parameter" version="opset1">\s*<data shape="([^"]*)"', text)
    assert params, "no Parameter found"
    dynamic_dims = any("?" in p for p in params)
    assert dynamic_dims == ("_dynamic_" in name), params
    has_f16_const = re.search(r'type="Const"[^>]*>\s*<data element_type="f16"', text) is not None
    if name.endswith("_f32w"):
        assert not has_f16_const
    elif has_f16_const:
        assert 'name="decompression"' in text
    else:  # nothing to compress, but the compression pass marked a precision-sensitive subgraph
        assert 'name="DisablePrecisionConversion"' in text


@pytest.mark.parametrize("name", NAMES)
def test_validates(name):
    diags = irnorm.validate(_xml(name))
    assert all(d.severity == "warning" for d in diags), [str(d) for d in diags]


@pytest.mark.parametrize("name", NAMES)
def test_matches_stored_openvino_outputs(name):
    m = irnorm.load(_xml(name))
    inputs = _inputs(name)
    assert [s.name for s in m.inputs] == list(inputs), "input names/order differ from OpenVINO's"
    expected = load_npz(EXPORTS / f"{name}.expected.npz")
    got = m.run(inputs)
    assert list(got) == list(expected), f"output names/order: irnorm {list(got)} vs OpenVINO {list(expected)}"
    assert [s.name for s in m.outputs] == list(expected)
    if "_static_" in name:
        assert [s.shape for s in m.outputs] == [e.shape for e in expected.values()]
    for k, exp in expected.items():
        assert exp.dtype.name in TOLERANCE, exp.dtype
        assert got[k].dtype == exp.dtype, f"{k}: dtype {got[k].dtype} vs OpenVINO {exp.dtype}"
        assert_close(got[k], exp, f"{name}:{k}")


def test_compressed_weights_change_the_numbers():
    """The f16w and f32w exports of a model with weights really differ (and only by fp16 rounding)."""
    name = "torch_layernorm_static"
    x = _inputs(f"{name}_f32w")
    a = irnorm.load(_xml(f"{name}_f32w")).run(x)
    b = irnorm.load(_xml(f"{name}_f16w")).run(x)
    for k in a:
        assert not np.array_equal(a[k], b[k])
        np.testing.assert_allclose(b[k], a[k], rtol=0, atol=5e-3 * np.abs(a[k]).max())


@requires_openvino
@pytest.mark.openvino
@pytest.mark.parametrize("name", NAMES)
def test_matches_live_openvino(name):
    compare_with_openvino(_xml(name), _inputs(name))


def _reshaped_inputs(name: str, how: str) -> dict[str, np.ndarray]:
    """Fresh random inputs whose dynamic dims (per irnorm's input specs) are grown by one or set to 1."""
    m = irnorm.load(_xml(name))
    stored = _inputs(name)
    rng = np.random.default_rng(sum(map(ord, name + how)))
    out = {}
    for spec in m.inputs:
        base = stored[spec.name].shape
        shape = tuple((d + 1 if how == "grow" else 1) if s == -1 else d for d, s in zip(base, spec.shape, strict=True))
        assert shape != base or how == "ones"
        out[spec.name] = (rng.standard_normal(shape) * 1.5 + 0.25).astype(spec.dtype)
    assert any(-1 in s.shape for s in m.inputs), "a dynamic export without dynamic input dims"
    return out


@requires_openvino
@pytest.mark.openvino
@pytest.mark.parametrize("how", ["grow", "ones"])
@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic_export_at_other_shapes(name, how):
    inputs = _reshaped_inputs(name, how)
    got = compare_with_openvino(_xml(name), inputs)
    m = irnorm.load(_xml(name))
    for spec in m.outputs:  # the declared dims that are static stay as declared
        shape = got[spec.name].shape
        assert all(s in (-1, d) for s, d in zip(spec.shape, shape, strict=True)), (spec, shape)
