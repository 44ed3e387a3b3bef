"""The peer suite in CI: every ONNX backend node test the installed onnx package defines, converted to
IR by OpenVINO (cached in the user's cache directory, ~/.cache/irnorm/onnx-backend or $IRNORM_ONNX_CACHE,
generated at test time, never committed; see tools/onnx_backend_suite.py), run in
OpenVINO's CPU plugin and in irnorm, both compared with ONNX's expected outputs
(tools/onnx_backend_suite.py; docs/onnx-backend.md has the latest report).

OpenVINO's verdict only picks the denominator (the tests OpenVINO itself passes on this machine);
irnorm is judged against ONNX's expected outputs.  The test fails when irnorm passes under 95% of
those, or when it fails one that is not in KNOWN_FAILURES below (each with the reason it fails)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("openvino")

ROOT = Path(__file__).resolve().parents[1]

# irnorm's known failures among the tests OpenVINO passes, and why.
KNOWN_FAILURES = {
    "test_div_int32_trunc": "OpenVINO's converter writes m_pythondiv=true (floor) for ONNX's truncating integer Div; "
                            "its CPU plugin truncates anyway, irnorm follows the IR (docs/ir-format.md)",
    "test_reduce_min_empty_set": "the CPU plugin gives +inf for an empty ReduceMin with run-time axes, OpenVINO's "
                                 "reference (and irnorm) the type's highest finite value (docs/ir-format.md §12)",
    "test_attention_4d_causal_fp16_expanded": "f16 rounding of the decomposed attention: 4.9e-4 off, over onnx's "
                                              "1e-7 absolute tolerance",
    # operations irnorm does not implement yet (README, "Operators"): the sub-graph ops
    **{t: "Loop-5 (a sub-graph op) is not supported" for t in (
        "test_loop11", "test_range_float16_type_positive_delta_expanded",
        "test_range_float_type_positive_delta_expanded",
        "test_range_int32_type_negative_delta_expanded")},
    **{t: "TensorIterator-1 (a sub-graph op) is not supported" for t in (
        "test_scan9_multi_state", "test_scan9_scalar", "test_scan9_sum", "test_scan_sum")},
}


def _suite():
    # importable by name: the suite's worker processes (spawned) unpickle its functions from the module
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    return importlib.import_module("onnx_backend_suite")


def test_onnx_backend_node_tests():
    suite = _suite()
    rows = suite.run_suite(None, suite.cache_dir(), jobs=2, timeout=120.0)
    ov_pass = [r for r in rows if r["openvino"]]
    assert len(ov_pass) > 1000, f"only {len(ov_pass)} node tests converted and passed in OpenVINO"
    failed = {r["test"]: f"{r['irnorm']}: {r['detail']}" for r in ov_pass if r["irnorm"] != "pass"}
    share = 1 - len(failed) / len(ov_pass)
    unexpected = {k: v for k, v in failed.items() if k not in KNOWN_FAILURES}
    assert not unexpected, f"irnorm fails {len(unexpected)} ONNX node tests OpenVINO passes: {unexpected}"
    assert share >= 0.95, f"irnorm passes {share:.1%} of the {len(ov_pass)} tests OpenVINO passes (target 95%)"


def test_conversion_cache_location(tmp_path, monkeypatch):
    suite = _suite()
    monkeypatch.setenv("IRNORM_ONNX_CACHE", str(tmp_path / "mine"))
    assert suite.default_cache_root() == tmp_path / "mine"
    monkeypatch.delenv("IRNORM_ONNX_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert suite.default_cache_root() == tmp_path / "xdg" / "irnorm" / "onnx-backend"
    assert (tmp_path / "xdg" / "irnorm" / "onnx-backend").is_dir()
    blocker = tmp_path / "file"
    blocker.write_text("")  # a cache "directory" that cannot be made
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert suite.default_cache_root() == ROOT / ".cache" / "onnx-backend"
    root = suite.cache_dir(tmp_path / "given")
    assert root.parent == tmp_path / "given" and root.name.startswith("onnx") and "-ov" in root.name
