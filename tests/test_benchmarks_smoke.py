"""Smoke test of the benchmark harness (benchmarks/run.py): tiny sizes, two rounds, in a
subprocess; it must print the markdown table with every workload.  No timing assertions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("openvino")


def test_quick_benchmark_prints_a_table(tmp_path) -> None:
    out_json = tmp_path / "bench.json"
    out_md = tmp_path / "bench.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--rounds", "2", "--only", "GN1,GN1h,L2b,LN1",
         "--json", str(out_json), "--markdown", str(out_md)],
        capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| workload | shape | irnorm ms")
    keys = [row.split("|")[1].split()[0] for row in table[1:]]
    assert keys == ["GN1", "GN1h", "LN1", "L2b"]
    assert out_md.read_text().strip() == proc.stdout.strip()
    data = json.loads(out_json.read_text())
    assert {r["key"] for r in data["results"]} == set(keys)
    for r in data["results"]:
        assert "WRONG" not in json.dumps(r["notes"]), r["notes"]  # every contender computed the same thing
        assert r["times"]["irnorm"]["median"] > 0 and r["times"]["copy"]["median"] > 0
        assert "ratio" in r


@pytest.mark.parametrize("codec", ["default", "none"])
def test_dask_throughput_quick_run_checks_outputs_and_prints_a_table(tmp_path, codec) -> None:
    """benchmarks/dask_throughput.py --quick: every contender's output checked (the same bytes as the plain
    loop's, and the plain loop's against a float64 reference) before the table is printed; zarr's default
    codec (both workloads) unless --codec none (the embeddings)."""
    pytest.importorskip("distributed")
    pytest.importorskip("zarr")
    out_md = tmp_path / "dask.md"
    args = [sys.executable, str(ROOT / "benchmarks" / "dask_throughput.py"), "--quick", "--dir", str(tmp_path / "data"),
            "--markdown", str(out_md)]
    if codec == "none":
        args += ["--codec", "none", "--workload", "emb"]
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out_md.read_text()
    assert ("default codec" in text) == (codec == "default") and ("uncompressed" in text) == (codec == "none")
    names = ["plain loop", "plain loop x2", "zarr loop", "dask threads", "dask 1 worker", "dask 2 workers"]
    for workload in ["emb"] + (["gn"] if codec == "default" else []):
        rows = [line.split("|")[2].strip() for line in text.splitlines() if line.startswith(f"| {workload} ")]
        assert rows == names, workload


def test_dask_throughput_output_checks_catch_a_wrong_output(tmp_path) -> None:
    """The benchmark's reference check refuses an output one element off, and accepts the right one."""
    pytest.importorskip("zarr")
    script = f"""
import importlib.util, sys
import numpy as np, zarr
spec = importlib.util.spec_from_file_location("bench", {str(ROOT / "benchmarks" / "dask_throughput.py")!r})
bench = importlib.util.module_from_spec(spec); spec.loader.exec_module(bench)
x = np.random.default_rng(0).standard_normal((64, 384)).astype(np.float32)
zarr.open_group({str(tmp_path / "in.zarr")!r}, mode="w").create_array("x", data=x)
y = x / np.linalg.norm(x, axis=1, keepdims=True)
out = zarr.open_group({str(tmp_path / "out.zarr")!r}, mode="w").create_array("y", data=y)
bench.check_against_reference("emb", {str(tmp_path / "in.zarr")!r}, {str(tmp_path / "out.zarr")!r})
out[3, 5] = out[3, 5] * 1.01
try:
    bench.check_against_reference("emb", {str(tmp_path / "in.zarr")!r}, {str(tmp_path / "out.zarr")!r})
except SystemExit as e:
    print("refused:", e)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "refused: emb: output differs from the float64 reference" in proc.stdout


def _networks_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import networks
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return networks


def test_norm_layers_are_compared_over_the_same_layers() -> None:
    """same_layers() sums each contender's time over the same IR layers, whatever each fused: irnorm's
    one LayerNorm step against OpenVINO's MVN node and the Subgraph holding its Multiply and Add, a
    GroupNorm OpenVINO fused with the following Swish against irnorm's GroupNorm and Swish steps; steps
    outside those layers (a convolution) are left out on both sides."""
    same_layers = _networks_module().same_layers
    ln = ["ln/MVN", "ln/Multiply", "ln/Add"]
    irnorm_times = {"groups": {"0": ["conv"], "1": ln, "2": ["gn"], "3": ["swish"]},
                    "norm": {"0": False, "1": True, "2": True, "3": False},
                    "runs": [{"0": 9.0, "1": 2.0, "2": 4.0, "3": 3.0}, {"0": 8.0, "1": 4.0, "2": 6.0, "3": 5.0}]}
    openvino_times = {"groups": {"conv": ["conv"], "mvn": ["ln/MVN"], "sub": ["ln/Multiply", "ln/Add"],
                                 "gn": ["gn", "swish"], "reorder": []},
                      "norm": {},
                      "runs": [{"conv": 1.0, "mvn": 1.0, "sub": 1.0, "gn": 3.0, "reorder": 5.0},
                               {"conv": 1.0, "mvn": 2.0, "sub": 1.0, "gn": 5.0, "reorder": 5.0}]}
    irnorm_ms, openvino_ms = same_layers(irnorm_times, openvino_times)
    assert irnorm_ms == 12.0  # the median of 2 + 4 + 3 and 4 + 6 + 5
    assert openvino_ms == 6.5  # the median of 1 + 1 + 3 and 2 + 1 + 5
    no_norm = {**irnorm_times, "norm": dict.fromkeys(irnorm_times["norm"], False)}
    assert same_layers(no_norm, openvino_times) == (0.0, 0.0)


def test_networks_lockstep_prints_the_same_layer_comparison() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "networks.py"), "--only", "bert", "--lockstep", "--rounds", "1",
         "--bursts", "2", "--burst", "2", "--markdown"],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONWARNINGS="ignore"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split("|")[1:-1] for line in proc.stdout.splitlines() if line.startswith("| bert ")]
    assert len(rows) == 1, proc.stdout
    name, irnorm_ms, openvino_ms, ratio, in_norm, same, outputs = (c.strip() for c in rows[0])
    assert float(irnorm_ms) > 0 and float(openvino_ms) > 0 and float(ratio) > 0
    assert outputs == "ok"
    # bert's five LayerNorms: both contenders spend time in them, and the ratio is printed beside
    openvino_norm, norm_ratio = same.split()
    assert float(openvino_norm) > 0 and float(norm_ratio.strip("()")) > 0
    assert float(in_norm.split()[0]) > 0
