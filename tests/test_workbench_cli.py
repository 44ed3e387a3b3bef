"""`irnorm run --compare/--dump-dir/--profile/--value-range`, `irnorm bench`, `irnorm graph`, colour and
shell completion: through click's runner and as real subprocesses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import ROOT, SAMPLES, load_npz

import irnorm
from irnorm.cli import cli
from irnorm.workbench import commands, dot, trace

CHAIN = str(SAMPLES / "ir" / "gn_l2_chain.xml")
CHAIN_IN = str(SAMPLES / "data" / "gn_l2_chain.inputs.npz")
CHAIN_EXP = str(SAMPLES / "data" / "gn_l2_chain.expected.npz")
IRNORM = os.path.join(os.path.dirname(sys.executable), "irnorm")


def invoke(*args, env=None):
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


# ---- run --compare ---------------------------------------------------------------------------


def test_run_compare_pass():
    res = invoke("run", CHAIN, "--inputs", CHAIN_IN, "--compare", CHAIN_EXP)
    assert res.exit_code == 0, res.output
    assert re.search(r"^PASS l2_out: abs max \S+ mean \S+ p99 \S+  rel max .* worst at \[", res.output, re.M)
    assert re.search(r"^PASS gn_out: .*\[rtol 0.0001, atol 1e-05\]$", res.output, re.M)
    assert "compare: 2/2 output(s) pass (PASS)" in res.output


def test_run_compare_fail_exits_1_and_per_output_tolerances(tmp_path):
    res = invoke("run", CHAIN, "--seed", "5", "--compare", CHAIN_EXP)  # random inputs: other outputs
    assert res.exit_code == 1
    assert re.search(r"^FAIL l2_out: .*beyond tolerance", res.output, re.M)
    assert "compare: 0/2 output(s) pass (FAIL)" in res.output
    # loose enough for one output only
    res = invoke("run", CHAIN, "--seed", "5", "--compare", CHAIN_EXP, "--atol", "l2_out=10")
    assert res.exit_code == 1
    assert re.search(r"^PASS l2_out: .*\[rtol 0.0001, atol 10\]$", res.output, re.M)
    assert re.search(r"^FAIL gn_out:", res.output, re.M)
    res = invoke("run", CHAIN, "--seed", "5", "--compare", CHAIN_EXP, "--atol", "100", "--rtol", "gn_out=0.5")
    assert res.exit_code == 0, res.output
    assert re.search(r"^PASS gn_out: .*\[rtol 0.5, atol 100\]$", res.output, re.M)


def test_run_compare_json_missing_output_and_quiet(tmp_path):
    exp = load_npz(SAMPLES / "data" / "gn_l2_chain.expected.npz")
    partial = tmp_path / "partial.npz"
    np.savez(partial, gn_out=exp["gn_out"], extra=np.zeros(3))
    res = invoke("run", CHAIN, "--inputs", CHAIN_IN, "--compare", partial, "--json")
    assert res.exit_code == 1
    d = json.loads(res.stdout)
    c = d["compare"]
    assert c["passed"] is False
    assert [(o["name"], o["passed"]) for o in c["outputs"]] == [("l2_out", False), ("gn_out", True)]
    assert c["outputs"][0]["note"] == "missing from the expected file"
    assert c["outputs"][1]["stats"]["max_abs"] < 1e-5 and c["outputs"][1]["stats"]["rtol"] == 1e-4
    assert c["notes"] == ["expected file has arrays that are not model outputs: extra"]
    res = invoke("run", CHAIN, "--inputs", CHAIN_IN, "--compare", partial, "-q")
    assert res.exit_code == 1 and res.output.strip().startswith("FAIL l2_out: missing from the expected file")
    assert "gn_out" not in res.output  # quiet: only failures


def test_run_compare_usage_errors():
    assert invoke("run", CHAIN, "--atol", "1e-3").exit_code == 2  # tolerance without --compare
    assert invoke("run", CHAIN, "--compare", CHAIN_EXP, "--atol", "abc").exit_code == 2
    assert invoke("run", CHAIN, "--compare", CHAIN_EXP, "--rtol", "x=-1").exit_code == 2
    res = invoke("run", CHAIN, "--compare", CHAIN_IN.replace("inputs", "nope"))  # main() prints it; runner raises
    assert res.exit_code == 1 and "no such file [IRN063]" in str(res.exception)


# ---- run --dump-dir ---------------------------------------------------------------------------


def test_dump_dir_writes_every_layer_and_an_index(tmp_path):
    out = tmp_path / "dump"
    res = invoke("run", CHAIN, "--inputs", CHAIN_IN, "--dump-dir", out)
    assert res.exit_code == 0, res.output
    assert "dumped 3 layer output(s) to" in res.output
    index = json.loads((out / "index.json").read_text())
    assert index["model"] == CHAIN
    layers = index["layers"]
    assert [(e["layer_id"], e["name"], e["type"], e["port"]) for e in layers] == [
        ("0", "input_image", "Parameter", 0), ("5", "group_norm", "GroupNormalization", 0),
        ("7", "normalize_l2", "NormalizeL2", 0)]
    exp = load_npz(SAMPLES / "data" / "gn_l2_chain.expected.npz")
    for e in layers:
        arr = np.load(out / e["file"])
        assert list(arr.shape) == e["shape"] == [1, 12, 6, 6] and e["dtype"] == arr.dtype.name == "float32"
        assert e["line"] > 0 and e["version"].startswith("opset")
    np.testing.assert_allclose(np.load(out / layers[1]["file"]), exp["gn_out"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.load(out / layers[2]["file"]), exp["l2_out"], rtol=1e-4, atol=1e-5)
    assert sorted(os.listdir(out)) == sorted([e["file"] for e in layers] + ["index.json"])
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".irnorm")]


def test_dump_named_layers_replaces_an_earlier_dump(tmp_path):
    out = tmp_path / "dump"
    assert invoke("run", CHAIN, "--dump-dir", out).exit_code == 0
    res = invoke("run", CHAIN, "--dump-dir", out, "--dump", "normalize_l2", "--dump", "5", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert [e["name"] for e in d["dump"]["layers"]] == ["group_norm", "normalize_l2"]
    index = json.loads((out / "index.json").read_text())
    assert [e["name"] for e in index["layers"]] == ["group_norm", "normalize_l2"]
    assert len(os.listdir(out)) == 3  # the earlier dump's files are gone
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".irnorm")]


def test_dump_refuses_to_replace_a_foreign_directory(tmp_path):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.tex").write_text("do not delete")
    res = invoke("run", CHAIN, "--dump-dir", out)
    assert res.exit_code == 1 and "is not an irnorm dump directory" in res.output
    assert os.listdir(out) == ["thesis.tex"]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".irnorm")]


def test_dump_is_atomic_when_the_run_fails(tmp_path, monkeypatch):
    out = tmp_path / "dump"
    assert invoke("run", CHAIN, "--dump-dir", out).exit_code == 0
    before = {p: (out / p).read_bytes() for p in os.listdir(out)}
    calls = []
    real = trace.DumpWriter.__call__

    def failing(self, node, outs, s):
        calls.append(node.layer.name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(self, node, outs, s)

    monkeypatch.setattr(trace.DumpWriter, "__call__", failing)
    res = invoke("run", CHAIN, "--dump-dir", out, "--seed", "9")
    assert res.exit_code != 0
    assert {p: (out / p).read_bytes() for p in os.listdir(out)} == before  # the old dump is untouched
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".irnorm")]  # no half-written temp dir


def test_dump_usage_errors(tmp_path):
    assert invoke("run", CHAIN, "--dump", "group_norm").exit_code == 2  # --dump needs --dump-dir
    res = invoke("run", CHAIN, "--dump-dir", tmp_path / "d", "--dump", "group_nrom")
    assert res.exit_code == 2 and "did you mean 'group_norm'" in res.output
    assert not (tmp_path / "d").exists()


# ---- run --profile, --value-range ------------------------------------------------------------


def test_profile_table_is_sorted_with_shares():
    res = invoke("run", CHAIN, "--profile")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    i = lines.index("profile of a second run (the first one compiled the kernels):")
    # the time column is right-aligned to its widest value: a step of 1 s or more on a loaded machine widens it
    assert re.match(r"^ *time ms +share +id +type +name$", lines[i + 1])
    rows = [re.match(r"^ *([\d.]+) +([\d.]+)% +(\d+) +(\S+) +(\S+)$", ln) for ln in lines[i + 2:i + 4]]
    assert all(rows), lines[i + 2:i + 4]
    assert {r.group(5) for r in rows} == {"group_norm", "normalize_l2"}
    ms = [float(r.group(1)) for r in rows]
    assert ms == sorted(ms, reverse=True)
    assert sum(float(r.group(2)) for r in rows) == pytest.approx(100, abs=0.2)
    assert re.match(r"^total [\d.]+ ms in 2 layer\(s\); whole run [\d.]+ ms$", lines[i + 4])


def test_profile_json():
    res = invoke("run", CHAIN, "--profile", "--json")
    d = json.loads(res.stdout)
    layers = d["profile"]["layers"]
    assert [set(r) for r in layers] == [{"layer_id", "name", "type", "version", "ms", "share"}] * 2
    assert sum(r["share"] for r in layers) == pytest.approx(1.0)
    assert d["profile"]["wall_ms"] >= sum(r["ms"] for r in layers)


def test_value_range_draws_inputs_in_range(tmp_path):
    res = invoke("run", CHAIN, "--value-range", "input_image=2,3", "-o", tmp_path / "o.npz")
    assert res.exit_code == 0, res.output
    assert "using random inputs (seed 0): input_image[1, 12, 6, 6] in [2, 3]" in res.output
    res = invoke("run", CHAIN, "--value-range", "input_image=2,3", "--dump-dir", tmp_path / "d", "--dump",
                 "input_image", "-q")
    x = np.load(tmp_path / "d" / json.loads((tmp_path / "d" / "index.json").read_text())["layers"][0]["file"])
    assert x.min() >= 2 and x.max() <= 3 and x.std() > 0.1
    for bad in ("input_image=3,2", "input_image=a,b", "input_image", "nope=0,1"):
        assert invoke("run", CHAIN, "--value-range", bad).exit_code == 2, bad


# ---- bench -------------------------------------------------------------------------------------


def test_bench_json_fields():
    res = invoke("bench", CHAIN, "-n", "7", "--warmup", "1", "--json")
    assert res.exit_code == 0, res.output
    d = json.loads(res.stdout)
    assert d["runs"] == 7 and d["warmup_runs"] == 1 and d["model"] == CHAIN
    assert d["inputs"] == {"input_image": [1, 12, 6, 6]}
    for k in ("min_ms", "median_ms", "mean_ms", "p90_ms", "p99_ms", "max_ms", "throughput", "total_seconds"):
        assert d[k] > 0, k
    assert d["min_ms"] <= d["median_ms"] <= d["p90_ms"] <= d["p99_ms"] <= d["max_ms"]
    assert d["threads"] >= 1
    assert "\r" not in res.output  # no progress bar when stderr is not a terminal


def test_bench_for_a_duration_and_threads():
    res = invoke("bench", CHAIN, "-t", "0.2", "--threads", "1", "--json")
    d = json.loads(res.stdout)
    assert d["total_seconds"] >= 0.2 and d["runs"] >= 1 and d["threads"] == 1
    res = invoke("bench", CHAIN, "-n", "3")
    assert res.exit_code == 0
    assert re.search(r"^latency ms: min [\d.]+  median [\d.]+  p90 [\d.]+  p99 [\d.]+  max [\d.]+   "
                     r"throughput [\d.]+ runs/s$", res.output, re.M)
    assert invoke("bench", CHAIN, "-n", "3", "-t", "1").exit_code == 2
    assert invoke("bench", CHAIN, "-n", "0").exit_code == 2
    res = invoke("bench", CHAIN, "-n", "1", "--threads", "999")
    assert res.exit_code == 2 and "NUMBA_NUM_THREADS" in res.output


def test_bench_progress_bar_only_on_a_terminal(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr(commands, "_stderr_tty", lambda: True)
    monkeypatch.setattr(commands._Progress, "__call__", lambda self, d, r, e: seen.append(d))
    res = invoke("bench", CHAIN, "-n", "4")
    assert res.exit_code == 0 and seen == [1, 2, 3, 4]
    seen.clear()
    invoke("bench", CHAIN, "-n", "4", "--json")
    assert seen == []


# ---- graph ------------------------------------------------------------------------------------


def _parse_dot(text):
    """Minimal DOT well-formedness: balanced braces outside strings, one digraph, every edge
    endpoint declared as a node; returns (nodes, edges)."""
    assert text.startswith("digraph ")
    depth, in_str, esc = 0, False, False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            assert depth >= 0
    assert depth == 0 and not in_str
    nodes = dict(re.findall(r'^  (n\d+) \[label="((?:[^"\\]|\\.)*)"', text, re.M))
    edges = re.findall(r'^  (n\d+) -> (n\d+) \[label="((?:[^"\\]|\\.)*)"\];$', text, re.M)
    for a, b, _ in edges:
        assert a in nodes and b in nodes
    return nodes, edges


def test_graph_dot_is_well_formed_and_labelled(tmp_path):
    out = tmp_path / "g.dot"
    res = invoke("graph", CHAIN, "-o", out)
    assert res.exit_code == 0 and "wrote" in res.output
    nodes, edges = _parse_dot(out.read_text())
    assert len(nodes) == 10 and len(edges) == 9
    labels = list(nodes.values())
    assert any(lb.startswith("GroupNormalization-opset12\\ngroup_norm\\nnum_groups=3\\nepsilon=") for lb in labels)
    assert any(lb.startswith("NormalizeL2-opset1\\nnormalize_l2\\neps=") and "eps_mode=add" in lb for lb in labels)
    assert any("Convert-opset1\\ngn_scale" in lb and "(folded at load time)" in lb for lb in labels)
    assert "Const-opset1\\nl2_axes\\n[2] i64\\n[2,3]" in labels  # small constants show their values
    assert ("[1,12,6,6] f32" in [e[2] for e in edges])
    assert any(e[2] == "[2] i64 (input 1)" for e in edges)


def test_dot_escapes_awkward_names(tmp_model):
    xml = (SAMPLES / "ir" / "gn_l2_chain.xml").read_text().replace('name="group_norm"', 'name="g\\&quot;n{1}"')
    path = tmp_model(xml, (SAMPLES / "ir" / "gn_l2_chain.bin").read_bytes())
    text = dot.to_dot(__import__("irnorm").load(path))
    nodes, _ = _parse_dot(text)
    assert any('g\\\\\\"n{1}' in lb for lb in nodes.values())


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
@pytest.mark.parametrize("ext", ["svg", "png", "html"])
def test_graph_rendered_with_graphviz(tmp_path, ext):
    out = tmp_path / f"g.{ext}"
    res = invoke("graph", CHAIN, "-o", out, "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["rendered_by_graphviz"] is True
    data = out.read_bytes()
    if ext == "svg":
        root = ET.fromstring(data)
        assert root.tag.endswith("svg")
        assert b"GroupNormalization&#45;opset12" in data and b"[1,12,6,6] f32" in data
    elif ext == "png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
    else:
        text = data.decode()
        assert text.startswith("<!DOCTYPE html>") and "<svg" in text
        ET.fromstring(text[text.index("<svg"):text.index("</svg>") + 6])


def test_graph_without_graphviz_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(dot.shutil, "which", lambda name: None)
    for ext in ("svg", "png"):
        out = tmp_path / f"g.{ext}"
        res = invoke("graph", CHAIN, "-o", out)
        assert res.exit_code == 1
        assert "Graphviz's `dot` program is not on PATH" in res.output and "apt-get install graphviz" in res.output
        assert not out.exists()
    out = tmp_path / "g.html"
    res = invoke("graph", CHAIN, "-o", out, "--json")
    assert res.exit_code == 0 and json.loads(res.stdout)["rendered_by_graphviz"] is False
    text = out.read_text()
    # the page draws the graph itself (irnorm's own layout, inline SVG), the DOT text below it
    svg = ET.fromstring(text[text.index("<svg"):text.index("</svg>") + 6])
    labels = [t.text for t in svg.iter() if t.tag.endswith("text")]
    assert "GroupNormalization-opset12" in labels and "NormalizeL2-opset1" in labels and "[1,12,6,6] f32" in labels
    assert len([e for e in svg.iter() if e.tag.endswith("rect")]) == len(irnorm.load(CHAIN).graph.nodes)
    assert "<pre>digraph" in text
    assert invoke("graph", CHAIN, "-o", tmp_path / "g.dot").exit_code == 0  # DOT always works


def test_compare_graph_marks_the_diverging_layers(tmp_path, monkeypatch):
    monkeypatch.setattr(dot.shutil, "which", lambda name: None)
    out = tmp_path / "g.html"
    res = invoke("compare", CHAIN, "--against", "reference", "--rtol", "1e-12", "--atol", "0", "--graph", out, "-q")
    assert res.exit_code == 1
    text = out.read_text()
    assert text.count("DIVERGED:") >= 1 and "#c00000" in text
    res = invoke("compare", CHAIN, "--against", "reference", "--graph", tmp_path / "ok.html", "-q")
    assert res.exit_code == 0 and "DIVERGED" not in (tmp_path / "ok.html").read_text()


def test_graph_usage_errors(tmp_path):
    assert invoke("graph", CHAIN, "-o", tmp_path / "g.jpeg").exit_code == 2
    assert invoke("graph", CHAIN).exit_code == 2


def test_graph_subprocess_without_graphviz_on_path(tmp_path):
    env = {**os.environ, "PATH": os.path.dirname(sys.executable)}  # the venv only: no `dot`
    proc = subprocess.run([IRNORM, "graph", CHAIN, "-o", str(tmp_path / "g.svg")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 1 and "apt-get install graphviz" in proc.stderr
    proc = subprocess.run([IRNORM, "graph", CHAIN, "-o", str(tmp_path / "g.dot")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    _parse_dot((tmp_path / "g.dot").read_text())


# ---- subprocesses, colour, completion ------------------------------------------------------


def test_subprocess_run_with_extras_and_bench(tmp_path):
    proc = subprocess.run([IRNORM, "run", CHAIN, "--inputs", CHAIN_IN, "--compare", CHAIN_EXP, "--profile",
                           "--dump-dir", str(tmp_path / "d")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "compare: 2/2 output(s) pass (PASS)" in proc.stdout and "share" in proc.stdout
    assert "\x1b[" not in proc.stdout  # a pipe is not a terminal
    assert (tmp_path / "d" / "index.json").exists()
    proc = subprocess.run([sys.executable, "-m", "irnorm", "bench", CHAIN, "-n", "3", "--json"], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0 and json.loads(proc.stdout)["runs"] == 3
    assert proc.stderr == ""  # no progress bar on a pipe


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    class Tty:
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdout", Tty())
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert commands.color_enabled()
    assert commands.verdict(True) == "\x1b[32m\x1b[1mPASS\x1b[0m"
    monkeypatch.setenv("NO_COLOR", "1")
    assert not commands.color_enabled() and commands.verdict(False) == "FAIL"
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: only a non-empty value disables colour
    assert commands.color_enabled()
    monkeypatch.setattr(sys, "stdout", object())
    assert not commands.color_enabled()


def test_shell_completion_is_clicks_builtin():
    env = {**os.environ, "_IRNORM_COMPLETE": "bash_source"}
    proc = subprocess.run([IRNORM], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and "_irnorm_completion()" in proc.stdout
    env = {**os.environ, "_IRNORM_COMPLETE": "bash_complete", "COMP_WORDS": "irnorm com", "COMP_CWORD": "1"}
    proc = subprocess.run([IRNORM], capture_output=True, text=True, env=env, timeout=120)
    assert "plain,compare" in proc.stdout
