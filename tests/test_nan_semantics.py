"""NaN through Maximum, Minimum, Relu, ReduceMax and ReduceMin: irnorm propagates it (numpy's, PyTorch's and
ONNX's rule: a NaN operand gives NaN), where OpenVINO 2026.4's CPU plugin computes x86's max / min (the second
operand when the first is NaN) and drops NaN from reductions in an order-dependent way -- the README's
"Semantics notes" rows, pinned on both sides so that a change in either shows up here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from ovutil import HAVE_OPENVINO, ov_run, save

import irnorm

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset13 as op

NAN = np.nan
A = np.array([NAN, 1, NAN, -3], np.float32)
B = np.array([0, NAN, NAN, -5], np.float32)
M = np.array([[1, NAN, 3], [NAN, 2, 1]], np.float32)

# op -> (feeds, irnorm's values, the CPU plugin's values)
CASES = {
    "Maximum": ({"x": A, "y": B}, [NAN, NAN, NAN, -3], [0, NAN, NAN, -3]),
    "Minimum": ({"x": A, "y": B}, [NAN, NAN, NAN, -5], [0, NAN, NAN, -5]),
    "Relu": ({"x": A}, [NAN, 1, NAN, 0], [0, 1, 0, 0]),
    "ReduceMax": ({"x": M}, [NAN, NAN], [3, 2]),
    "ReduceMin": ({"x": M}, [NAN, NAN], [3, 1]),
}


def _model(name: str, tmp_path: Path) -> Path:
    if name in ("Maximum", "Minimum"):
        x, y = op.parameter([4], np.float32, name="x"), op.parameter([4], np.float32, name="y")
        node, params = (op.maximum if name == "Maximum" else op.minimum)(x, y), [x, y]
    elif name == "Relu":
        x = op.parameter([4], np.float32, name="x")
        node, params = op.relu(x), [x]
    else:
        x = op.parameter([2, 3], np.float32, name="x")
        reduce = op.reduce_max if name == "ReduceMax" else op.reduce_min
        node, params = reduce(x, op.constant(np.array([1], np.int64)), False), [x]
    node.output(0).get_tensor().set_names({"out"})
    return save(ov.Model([op.result(node)], params, name), tmp_path, name)


@pytest.mark.skipif(not HAVE_OPENVINO, reason="the models are written by openvino.save_model")
@pytest.mark.parametrize("name", sorted(CASES))
def test_nan_propagates_in_irnorm_and_not_in_the_cpu_plugin(tmp_path, name):
    feeds, ours, plugin = CASES[name]
    xml = _model(name, tmp_path)
    np.testing.assert_array_equal(irnorm.load(xml).run(feeds)["out"], np.array(ours, np.float32))
    np.testing.assert_array_equal(ov_run(xml, feeds)["out"], np.array(plugin, np.float32))
