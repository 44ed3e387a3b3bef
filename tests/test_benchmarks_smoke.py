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
