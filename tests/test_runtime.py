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
    assert [n.layer.type for n in m.layers_run] == ["GroupNormalization"]


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


def test_ctrl_c_during_a_long_kernel_exits_promptly(tmp_path):
    """SIGINT while a Numba kernel runs: the kernels release the GIL and `irnorm run` executes the
    model in a worker thread, so the process ends with 130 within a second, leaving no output file."""
    import signal
    import subprocess
    import sys
    import time

    b = IRBuilder("slow")
    x = b.parameter("x", (8, 1024, 1024), "f32")
    axes = b.const(np.array([1, 2], np.int64), "axes")
    (y,) = b.layer("LRN", [x, axes], [((8, 1024, 1024), "f32")],
                   {"alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": 61}, version="opset1", names=["y"])
    b.result(y)
    xml = b.save(tmp_path)
    out = tmp_path / "out.npz"
    proc = subprocess.Popen([sys.executable, "-m", "irnorm", "run", str(xml), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # printed right before the run starts
        assert "random inputs" in line, line
        time.sleep(1.0)
        assert proc.poll() is None, "the run finished before it could be interrupted"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        waited = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    assert waited < 2.0, f"took {waited:.2f} s to stop"
    assert not out.exists() and not list(tmp_path.glob(".irnorm-*"))
