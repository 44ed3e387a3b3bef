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
