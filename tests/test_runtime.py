"""Planning and execution details: folded shape subgraphs never run; data-dependent runtime
errors name the file and layer."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ROOT
from irbuilder import IRBuilder

import irnorm

EXPORTS = ROOT / "tests" / "exports"


def test_folded_shape_subgraph_is_not_executed():
    """ONNX GroupNormalization-18's dynamic export computes its scale shape with ShapeOf/Gather/...;
    all of it folds at load time, so only the GroupNormalization runs."""
    m = irnorm.load(EXPORTS / "onnx_groupnorm18_dynamic_f32w.xml")
    assert [s.node.layer.type for s in m._steps] == ["GroupNormalization"]


def test_runtime_error_names_file_and_layer(tmp_path):
    b = IRBuilder("div")
    a = b.parameter("a", (3,), "i32")
    d = b.parameter("d", (3,), "i32")
    (q,) = b.layer("Divide", [a, d], [((3,), "i32")], {"auto_broadcast": "numpy", "m_pythondiv": True},
                   version="opset1", names=["q"])
    b.result(q)
    xml = b.save(tmp_path)
    m = irnorm.load(xml)
    ok = m.run({"a": np.array([7, -7, 6], np.int32), "d": np.array([2, 2, 3], np.int32)})["q"]
    np.testing.assert_array_equal(ok, [3, -4, 2])  # python division floors, as OpenVINO's reference
    with pytest.raises(irnorm.InputError) as ei:
        m.run({"a": np.array([1, 2, 3], np.int32), "d": np.array([1, 0, 1], np.int32)})
    d0 = ei.value.diagnostics[0]
    assert d0.code == "IRN064" and d0.file == str(xml) and d0.layer_type == "Divide"
