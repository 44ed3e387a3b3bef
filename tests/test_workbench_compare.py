"""irnorm.compare / `irnorm compare`: find the first layer whose output diverges from OpenVINO's CPU
plugin or from the float64 reference, on real divergences of OpenVINO 2026.4's CPU plugin:

* NormalizeL2 with empty axes: the spec's rule (0 for zeros, 1 elsewhere) holds on CPU at ranks
  2-4; at ranks 1 and 5 the plugin computes x / sqrt(x^2 + eps), about sign(x);
* LRN-1 over axes [1, 2, 3]: the plugin computes the axes [2, 3] result.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import ROOT, SAMPLES, load_npz

import irnorm
from irnorm.cli import cli
from irnorm.workbench import refeval
from irnorm.workbench.compare import CompareReport, OpenVINOUnavailable, run_openvino
from irnorm.workbench.stats import DEFAULT_TOLERANCES

ov = pytest.importorskip("openvino")
ops = pytest.importorskip("openvino.opset13")

def _save(model, path):
    ov.save_model(model, str(path), compress_to_fp16=False)
    return path


def _line_of(xml, name):
    for i, line in enumerate(xml.read_text().splitlines(), 1):
        if f'name="{name}"' in line and "<layer " in line:
            return i
    raise AssertionError(name)


def l2_chain(tmp_path, rank=5, name="chain"):
    """x -> GroupNormalization 'gn' -> NormalizeL2 'l2_empty' (axes []) -> NormalizeL2 'l2_c' (axes [1])."""
    shape = [2, 4, 2, 3, 2, 2][:rank] if rank >= 2 else [7]
    x = ops.parameter(shape, np.float32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    src = x
    if rank >= 2:
        c = shape[1]
        src = ops.group_normalization(x, ops.constant(np.linspace(0.5, 1.5, c).astype(np.float32)),
                                      ops.constant(np.zeros(c, np.float32)), 2, 1e-5)
        src.set_friendly_name("gn")
    n = ops.normalize_l2(src, ops.constant(np.array([], np.int64)), 1e-6, "add")
    n.set_friendly_name("l2_empty")
    last = n
    if rank >= 2:
        last = ops.normalize_l2(n, ops.constant(np.array([1], np.int64)), 1e-6, "add")
        last.set_friendly_name("l2_c")
    last.output(0).get_tensor().set_names({"y"})
    return _save(ov.Model([ops.result(last)], [x], name), tmp_path / f"{name}.xml")


def lrn_model(tmp_path, axes, name="lrn"):
    x = ops.parameter([1, 5, 4, 4], np.float32, name="x")
    y = ops.lrn(x, ops.constant(np.array(axes, np.int64)), 0.5, 0.75, 1.0, 3)
    y.set_friendly_name("lrn")
    z = ops.normalize_l2(y, ops.constant(np.array([1], np.int64)), 1e-6, "add")
    z.set_friendly_name("after")
    return _save(ov.Model([ops.result(z)], [x], name), tmp_path / f"{name}.xml")


def clean_model(tmp_path, compress=False, name="clean"):
    x = ops.parameter([2, 6, 5, 5], np.float32, name="x")
    rng = np.random.default_rng(7)
    gn = ops.group_normalization(x, ops.constant(rng.uniform(0.5, 1.5, 6).astype(np.float32)),
                                 ops.constant(rng.standard_normal(6).astype(np.float32)), 3, 1e-5)
    gn.set_friendly_name("gn")
    l2 = ops.normalize_l2(gn, ops.constant(np.array([1, 2], np.int64)), 1e-6, "add")
    l2.set_friendly_name("l2")
    path = tmp_path / f"{name}.xml"
    ov.save_model(ov.Model([ops.result(l2)], [x], name), str(path), compress_to_fp16=compress)
    return path


# ---- the Python API -----------------------------------------------------------------------


def test_empty_axes_normalize_l2_at_rank_5_is_found_and_named(tmp_path):
    xml = l2_chain(tmp_path)
    report = irnorm.compare(xml, against="openvino")
    assert isinstance(report, CompareReport) and not report.ok
    fd = report.first_divergence
    assert (fd.name, fd.type, fd.version, fd.layer_id) == ("l2_empty", "NormalizeL2", "opset1", "5")
    assert fd.line == _line_of(xml, "l2_empty")
    assert [(r.name, r.status) for r in report.layers] == [("gn", "ok"), ("l2_empty", "diverged"),
                                                           ("l2_c", "diverged")]
    # irnorm follows the spec (1 for every nonzero x); the CPU plugin gives ~sign(x): -1 for x < 0
    s = fd.stats
    assert s.worst_got == 1.0 and s.worst_expected == pytest.approx(-1.0, abs=1e-3)
    assert s.max_abs == pytest.approx(2.0, abs=1e-3) and 0 < s.mismatches < s.size
    assert (s.rtol, s.atol) == DEFAULT_TOLERANCES["float32"]
    assert report.layers[-1].output == "y"
    d = json.loads(report.to_json())
    assert d["first_divergence"]["name"] == "l2_empty" and d["diverged"] == 2 and d["ok"] is False
    assert "first divergence: layer 5 'l2_empty' (NormalizeL2-opset1)" in report.summary()
    assert f"{xml}:{fd.line}" in report.summary()


def test_the_same_model_agrees_with_the_reference(tmp_path):
    report = irnorm.compare(l2_chain(tmp_path), against="reference")
    assert report.ok and report.first_divergence is None and report.skipped == []
    assert [r.status for r in report.layers] == ["ok", "ok", "ok"]
    assert "no divergence: 3 layer output(s) agree with irnorm's float64 reference" in report.summary()


@pytest.mark.parametrize("rank", [1, 2, 3, 4, 5])
def test_empty_axes_cpu_deviation_is_exactly_ranks_1_and_5(tmp_path, rank):
    report = irnorm.compare(l2_chain(tmp_path, rank), "openvino")
    row = next(r for r in report.layers if r.name == "l2_empty")
    assert (row.status == "diverged") == (rank in (1, 5)), row.stats.summary()
    if rank in (1, 5):
        assert report.first_divergence.name == "l2_empty"
    else:
        assert report.ok


@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_lrn_over_axes_1_2_3_diverges_and_axes_2_3_does_not(tmp_path, precision):
    bad = irnorm.compare(lrn_model(tmp_path, [1, 2, 3], "lrn123"), "openvino", openvino_precision=precision)
    assert bad.first_divergence is not None and bad.first_divergence.name == "lrn"
    assert bad.first_divergence.type == "LRN"
    good = irnorm.compare(lrn_model(tmp_path, [2, 3], "lrn23"), "openvino", openvino_precision=precision)
    assert good.ok, good.summary()
    # the CPU's [1,2,3] result is the [2,3] one: irnorm's [2,3] output matches OpenVINO's [1,2,3] output
    assert irnorm.compare(lrn_model(tmp_path, [1, 2, 3], "lrn123r"), "reference").ok


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("precision", ["f32", "bf16"])
def test_a_clean_model_reports_no_divergence(tmp_path, compress, precision):
    xml = clean_model(tmp_path, compress)
    report = irnorm.compare(xml, "openvino", openvino_precision=precision, seed=3)
    assert report.ok, report.summary()
    assert [r.name for r in report.layers] == ["gn", "l2"]
    assert report.openvino_precision == precision
    want = DEFAULT_TOLERANCES["bfloat16" if precision == "bf16" else "float32"]
    assert all((r.stats.rtol, r.stats.atol) == want for r in report.layers)
    assert irnorm.compare(xml, "reference").ok


def test_given_inputs_explicit_tolerances_and_a_loaded_model(tmp_path):
    m = irnorm.load(l2_chain(tmp_path))
    x = np.abs(np.random.default_rng(0).standard_normal([2, 4, 2, 3, 2])).astype(np.float32) + 0.1
    # positive inputs: GroupNorm outputs still have both signs, so l2_empty still diverges
    report = irnorm.compare(m, "openvino", {"x": x}, rtol=0.0, atol=1e-3)
    assert report.inputs == [{"name": "x", "shape": [2, 4, 2, 3, 2], "dtype": "f32", "source": "given"}]
    assert report.first_divergence.name == "l2_empty"
    assert all((r.stats.rtol, r.stats.atol) == (0.0, 1e-3) for r in report.layers)
    huge = irnorm.compare(m, "openvino", {"x": x}, atol=10.0)
    assert huge.ok  # a tolerance that covers |1 - (-1)| hides it: tolerances are honoured


def test_a_divergence_against_the_reference_is_named(tmp_path, monkeypatch):
    """A wrong kernel shows up as the first diverging layer: simulate one by skewing the oracle."""
    xml = l2_chain(tmp_path)
    real = refeval._BY_LOWER["groupnormalization"]
    monkeypatch.setitem(refeval._BY_LOWER, "groupnormalization", lambda c: [real(c)[0] * 1.001])
    report = irnorm.compare(xml, "reference")
    assert report.first_divergence.name == "gn"
    assert report.first_divergence.stats.max_rel == pytest.approx(1e-3, rel=1e-2)


def test_a_layer_without_reference_is_reported_not_fatal(tmp_path, monkeypatch):
    monkeypatch.delitem(refeval._BY_LOWER, "groupnormalization")
    report = irnorm.compare(l2_chain(tmp_path), "reference")
    gn = report.layers[0]
    assert gn.status == "skipped"
    assert gn.note == "no reference for GroupNormalization-12 (irnorm's output used downstream)"
    assert [r.status for r in report.layers[1:]] == ["ok", "ok"]  # checked from irnorm's GN output
    assert report.ok and "1 layer output(s) not compared" in report.summary()
    assert "skipped: no reference for GroupNormalization-12" in report.table()


def test_a_failing_reference_is_reported_not_fatal(tmp_path, monkeypatch):
    def boom(c):
        raise ValueError("cannot do this")

    monkeypatch.setitem(refeval._BY_LOWER, "normalizel2", boom)
    report = irnorm.compare(l2_chain(tmp_path), "reference")
    notes = [r.note for r in report.layers]
    assert notes[1] == "reference failed: ValueError: cannot do this (irnorm's output used downstream)"
    assert [r.status for r in report.layers] == ["ok", "skipped", "skipped"]


def test_openvino_missing_gives_a_clear_error(tmp_path, monkeypatch):
    xml = l2_chain(tmp_path)
    monkeypatch.setitem(sys.modules, "openvino", None)  # `import openvino` now raises ImportError
    with pytest.raises(OpenVINOUnavailable, match=r"openvino package is not installed.*pip install openvino"):
        irnorm.compare(xml, "openvino")
    assert irnorm.compare(xml, "reference").ok  # the reference needs no OpenVINO
    res = CliRunner().invoke(cli, ["compare", str(xml), "--against", "openvino"])
    assert res.exit_code == 1
    assert "openvino package is not installed" in res.output and "Traceback" not in res.output


def test_bad_arguments():
    with pytest.raises(ValueError, match="against must be one of openvino, reference"):
        irnorm.compare(SAMPLES / "ir" / "gn_l2_chain.xml", "onnxruntime")
    with pytest.raises(ValueError, match="openvino_precision must be one of f32, bf16, f16"):
        irnorm.compare(SAMPLES / "ir" / "gn_l2_chain.xml", openvino_precision="f64")


def test_openvino_failure_is_reported(tmp_path):
    """irnorm's extension layers are not OpenVINO ops: OpenVINO cannot read them, said plainly."""
    res = CliRunner().invoke(cli, ["compare", str(SAMPLES / "ir" / "layer_norm_ext.xml")])
    assert res.exit_code == 1 and "OpenVINO cannot read" in res.output
    res = CliRunner().invoke(cli, ["compare", str(SAMPLES / "ir" / "layer_norm_ext.xml"), "--json"])
    d = json.loads(res.stdout)
    assert res.exit_code == 1 and d["ok"] is False and d["exit_code"] == 1 and d["error"]["code"] == "openvino"
    assert d["error"]["message"].startswith("OpenVINO cannot read ") and "OpenVINO cannot read" in res.stderr


def test_samples_agree_with_openvino_layer_by_layer():
    for name in ("gn_l2_chain", "group_norm_f16", "normalize_l2_max", "layer_norm_mvn"):
        xml = SAMPLES / "ir" / f"{name}.xml"
        m = irnorm.load(xml)
        report = irnorm.compare(m, "openvino", load_npz(SAMPLES / "data" / f"{name}.inputs.npz"))
        assert report.ok and report.skipped == [], (name, report.summary())


# ---- the command ---------------------------------------------------------------------------


def test_cli_compare_names_the_layer_and_exits_1(tmp_path):
    xml = l2_chain(tmp_path)
    res = CliRunner().invoke(cli, ["compare", str(xml), "--against", "openvino"])
    assert res.exit_code == 1, res.output
    out = res.output
    assert "against OpenVINO CPU (inference precision f32)" in out
    assert f"first divergence: layer 5 'l2_empty' (NormalizeL2-opset1), output 0 at {xml}:" in out
    table = out[out.index("#  id"):]
    assert re.search(r"^3 +3 +GroupNormalization +gn .* OK$", table, re.M)
    assert re.search(r"^5 +5 +NormalizeL2 +l2_empty .* DIVERGED$", table, re.M)
    assert "\x1b[" not in out  # not a terminal: no colour


def test_cli_compare_json_quiet_reference_and_precision(tmp_path):
    xml = l2_chain(tmp_path)
    res = CliRunner().invoke(cli, ["compare", str(xml), "--json", "--openvino-precision", "bf16"])
    assert res.exit_code == 1
    d = json.loads(res.stdout)
    assert d["first_divergence"]["name"] == "l2_empty" and d["openvino_precision"] == "bf16"
    assert [r["status"] for r in d["layers"]] == ["ok", "diverged", "diverged"]
    res = CliRunner().invoke(cli, ["compare", str(xml), "--against", "reference", "-q"])
    assert res.exit_code == 0 and res.output.strip().startswith("no divergence")
    assert len(res.output.strip().splitlines()) == 1
    res = CliRunner().invoke(cli, ["compare", str(xml), "--rtol", "0", "--atol", "3"])
    assert res.exit_code == 0, res.output


def test_cli_compare_usage_errors_exit_2(tmp_path):
    xml = str(l2_chain(tmp_path))
    for args in (["--against", "tensorrt"], ["--openvino-precision", "f64"], ["--atol", "-1"],
                 ["--value-range", "x=3,1"], ["--value-range", "nope=0,1"]):
        res = CliRunner().invoke(cli, ["compare", xml, *args])
        assert res.exit_code == 2, (args, res.output)


def test_cli_value_range_and_seed_reach_the_inputs(tmp_path):
    xml = l2_chain(tmp_path)
    res = CliRunner().invoke(cli, ["compare", str(xml), "--json", "--value-range", "x=0.5,2", "--seed", "4",
                                   "--against", "reference"])
    d = json.loads(res.stdout)
    assert d["inputs"][0]["source"] == "random (seed 4)" and res.exit_code == 0


def test_subprocess_python_m_irnorm_compare(tmp_path):
    xml = l2_chain(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "irnorm", "compare", str(xml), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1, proc.stderr
    d = json.loads(proc.stdout)
    assert d["first_divergence"]["type"] == "NormalizeL2" and d["first_divergence"]["name"] == "l2_empty"
    proc = subprocess.run([sys.executable, "-m", "irnorm", "compare", str(xml), "--against", "reference"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0 and "no divergence" in proc.stdout


def test_layers_with_a_shared_name_are_reported_not_guessed(tmp_path):
    x = ops.parameter([2, 6, 3], np.float32, name="x")
    a = ops.normalize_l2(x, ops.constant(np.array([1], np.int64)), 1e-6, "add")
    b = ops.normalize_l2(a, ops.constant(np.array([2], np.int64)), 1e-6, "add")
    c = ops.normalize_l2(b, ops.constant(np.array([], np.int64)), 1e-6, "add")
    for n, name in ((a, "twin"), (b, "twin"), (c, "last")):
        n.set_friendly_name(name)
    xml = _save(ov.Model([ops.result(c)], [x], "twins"), tmp_path / "twins.xml")
    report = irnorm.compare(xml, "openvino")
    assert [(r.name, r.status, r.note) for r in report.layers] == [
        ("twin", "skipped", "layer name is not unique in the IR"),
        ("twin", "skipped", "layer name is not unique in the IR"),
        ("last", "ok", "")]  # rank 3: the CPU applies the empty-axes rule here


def test_per_layer_tolerances(tmp_path, monkeypatch):
    """layer_rtol/layer_atol (CLI: --rtol LAYER=R, --atol LAYER=A) loosen one layer, by name, id or
    model-output name, and leave every other layer at the default; an unknown key is an error that
    suggests the close names."""
    xml = l2_chain(tmp_path)
    real = refeval._BY_LOWER["groupnormalization"]
    monkeypatch.setitem(refeval._BY_LOWER, "groupnormalization", lambda c: [real(c)[0] * 1.001])
    m = irnorm.load(xml)
    gn = next(n for n in m.graph.nodes if n.layer.name == "gn")
    assert not irnorm.compare(m, "reference").ok
    for key in ("gn", gn.layer.id, int(gn.layer.id)):
        report = irnorm.compare(m, "reference", layer_rtol={key: 0.01})
        assert report.ok, report.table()
        row = next(r for r in report.layers if r.name == "gn")
        assert row.stats.rtol == 0.01
        others = [r for r in report.layers if r.name != "gn" and r.stats is not None]
        assert others and all(r.stats.rtol != 0.01 for r in others)
    with pytest.raises(ValueError, match=r"no layer or output named 'gnn'.*did you mean 'gn'"):
        irnorm.compare(m, "reference", layer_rtol={"gnn": 0.01})
    res = CliRunner().invoke(cli, ["compare", str(xml), "--against", "reference", "--rtol", "gn=0.01", "-q"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(cli, ["compare", str(xml), "--against", "reference", "--rtol", "gnn=0.01"])
    assert res.exit_code == 2 and "did you mean 'gn'" in res.output, res.output
    res = CliRunner().invoke(cli, ["compare", str(xml), "--against", "reference", "--rtol", "gn=-1"])
    assert res.exit_code == 2, res.output


# ---- OpenVINO cannot expose every layer output: outputs added in batches ----------------------
#
# Seen on real exports (torchvision GoogLeNet and ViT, timm mixer_small, HF MobileViT): OpenVINO's
# CPU plugin compiles and runs the model, but not with all of its layer outputs added.  No small
# model built with OpenVINO's opset API reproduced that on OpenVINO 2026.4.1 (inception blocks with
# MaxPool 3x3/1/1 and Conv+bias+ReLU at GoogLeNet's widths, ViT with a class token, position
# embedding, MHA or ScaledDotProductAttention and a class-token Gather at static and dynamic
# shapes, MLP-Mixer's transposes, MobileViT's unfold/fold reshapes, f16-compressed and int8
# weights, every network in tests/networks, and ~3500 random graphs of those layers, static and
# dynamic, each at f32 and bf16, some also with oneDNN capped to AVX2 or SSE4.1 (ONEDNN_MAX_CPU_ISA):
# the plugin exposed every output wherever it ran the model at all).  So the failure is injected at
# the OpenVINO API boundary: `_flaky_core` is the real ov.Core and the real CPU plugin, except that
# compiling (or running) a model with a Result on one of the named layers raises, standing in for
# the plugin's failure on those exports.  Every value that is compared comes from a real
# OpenVINO run of the real model.  The batching itself is tested on its own below.


_REAL_CORE = ov.Core


class _RunFails:
    """A real CompiledModel whose infer requests raise `message` (OpenVINO failing at run time)."""

    def __init__(self, compiled, message):
        self._compiled, self._message = compiled, message

    def __getattr__(self, name):
        return getattr(self._compiled, name)

    def create_infer_request(self):
        message = self._message

        class Request:
            def infer(self, *args, **kwargs):
                raise RuntimeError(f"Exception from src/plugins/intel_cpu/src/graph.cpp:1:\n{message}")

        return Request()


def _flaky_core(monkeypatch, compile_fails=(), run_fails=()):
    """Make `openvino.Core` the real Core whose compile_model raises for a model with a Result on a
    layer named in `compile_fails`, and whose compiled model raises on infer for one with a Result
    on a layer in `run_fails`; the error's last line names the first such layer.  Returns the list
    of the layer names each compile_model call had Results on."""
    calls = []

    class FlakyCore(_REAL_CORE):
        def compile_model(self, model, *args, **kwargs):
            on = {r.input_value(0).get_node().get_friendly_name() for r in model.get_results()}
            calls.append(on)
            bad = sorted(on & set(compile_fails))
            if bad:
                raise RuntimeError("Exception from src/inference/src/cpp/core.cpp:1:\n"
                                   f"[CPU] injected by the test: cannot compile with {bad[0]} as an output")
            compiled = super().compile_model(model, *args, **kwargs)
            bad = sorted(on & set(run_fails))
            return _RunFails(compiled, f"[CPU] injected by the test: cannot run with {bad[0]} as an output") \
                if bad else compiled

    monkeypatch.setattr(ov, "Core", FlakyCore)
    return calls


def inception_model(tmp_path, name="inception"):
    """A GoogLeNet inception block: 1x1, 1x1 -> 3x3, 1x1 -> 3x3 and MaxPool 3x3/1/1 -> 1x1 branches
    of Conv + bias + ReLU, concatenated, then a 1x1 head.  Every node has a friendly name."""
    rng = np.random.default_rng(11)

    def conv(x, cin, cout, k, nm):
        c = ops.convolution(x, ops.constant((rng.standard_normal((cout, cin, k, k)) * 0.2).astype(np.float32)),
                            [1, 1], [k // 2] * 2, [k // 2] * 2, [1, 1])
        c.set_friendly_name(f"{nm}_conv")
        b = ops.add(c, ops.constant(rng.standard_normal((1, cout, 1, 1)).astype(np.float32) * 0.1))
        b.set_friendly_name(f"{nm}_bias")
        r = ops.relu(b)
        r.set_friendly_name(f"{nm}_relu")
        return r

    x = ops.parameter([1, 8, 6, 6], np.float32, name="x")
    x.output(0).get_tensor().set_names({"x"})
    b1 = conv(x, 8, 4, 1, "b1")
    b2 = conv(conv(x, 8, 6, 1, "b2a"), 6, 8, 3, "b2b")
    b3 = conv(conv(x, 8, 2, 1, "b3a"), 2, 4, 3, "b3b")
    pool = ops.max_pool(x, [1, 1], [1, 1], [1, 1], [1, 1], [3, 3], "ceil", "explicit")
    pool.set_friendly_name("b4_pool")
    b4 = conv(pool.output(0), 8, 4, 1, "b4")
    cat = ops.concat([b1, b2, b3, b4], 1)
    cat.set_friendly_name("cat")
    head = conv(cat, 20, 5, 1, "head")
    head.output(0).get_tensor().set_names({"y"})
    return _save(ov.Model([ops.result(head)], [x], name), tmp_path / f"{name}.xml")


def _feeds():
    return {"x": np.random.default_rng(3).standard_normal((1, 8, 6, 6)).astype(np.float32)}


def test_outputs_openvino_cannot_expose_are_named_and_the_rest_compared(tmp_path, monkeypatch):
    xml = inception_model(tmp_path)
    clean = irnorm.compare(xml, "openvino", _feeds())
    assert clean.ok and clean.skipped == [] and clean.openvino_runs == 1 and len(clean.notes) == 1
    names = [r.name for r in clean.layers]
    assert {"b2a_relu", "cat", "b4_pool", "head_relu"} <= set(names)

    calls = _flaky_core(monkeypatch, compile_fails=["b2a_relu"], run_fails=["cat"])
    told = []
    report = irnorm.compare(xml, "openvino", _feeds(), progress=told.append)
    assert told == [f"OpenVINO cannot compile the model with all {len(names)} layer outputs added ([CPU] injected by "
                    "the test: cannot compile with b2a_relu as an output); adding them in batches, at most 62 more "
                    "OpenVINO runs..."]
    assert [r.name for r in report.layers] == names
    bad = {r.name: r.note for r in report.skipped}
    assert bad == {
        "b2a_relu": "OpenVINO cannot expose this output: "
                    "[CPU] injected by the test: cannot compile with b2a_relu as an output",
        "cat": "OpenVINO cannot expose this output: [CPU] injected by the test: cannot run with cat as an output",
    }
    # every other layer output is compared with real OpenVINO values (a batch may fuse layers the
    # run with all outputs does not, so they match that run's to rounding, not necessarily bit for bit)
    for r, c in zip(report.layers, clean.layers, strict=True):
        if r.name in bad:
            continue
        assert r.status == "ok" and r.stats is not None and r.stats.size == int(np.prod(r.shape)) > 0, r
        assert r.stats.max_abs == pytest.approx(c.stats.max_abs, abs=1e-6), (r, c)
    assert report.ok and report.first_divergence is None
    # 1 run with all outputs, 1 of the model alone, then batches; the model's own output in every run
    assert report.openvino_runs == len(calls) > 2
    assert calls[0] >= set(names) and calls[1] == {"head_relu"}
    assert all("head_relu" in on for on in calls)
    assert len(calls) <= 2 + 2 * len(bad) * int(np.ceil(np.log2(len(names))))
    note = report.notes[-1]
    assert note.startswith(f"OpenVINO could not compile the model with all {len(names)} layer output(s) added "
                           "([CPU] injected by the test: cannot compile with b2a_relu as an output)")
    assert f"{len(calls)} OpenVINO runs in all" in note and "2 that OpenVINO cannot expose" in note
    d = json.loads(report.to_json())
    assert d["openvino_runs"] == len(calls) and d["skipped"] == 2 and d["compared"] == len(names) - 2
    assert d["ok"] is True and {r["name"]: r["status"] for r in d["layers"]}["cat"] == "skipped"
    # the same through run_openvino: each exposed output as one run with all outputs gives it
    m = irnorm.load(xml)
    batched, _ = run_openvino(m, _feeds())
    monkeypatch.setattr(ov, "Core", _REAL_CORE)
    whole, _ = run_openvino(m, _feeds())
    assert batched.keys() == whole.keys()
    for key, arr in whole.items():
        if key[0] in bad:
            assert batched[key] == bad[key[0]]
        else:
            np.testing.assert_allclose(batched[key], arr, rtol=1e-6, atol=1e-6, err_msg=str(key))


def test_a_model_openvino_cannot_run_even_alone_keeps_the_error(tmp_path, monkeypatch):
    """The model's own output fails: no batching, the error as before."""
    xml = inception_model(tmp_path)
    calls = _flaky_core(monkeypatch, compile_fails=["head_relu"])
    with pytest.raises(irnorm.workbench.compare.OpenVINOFailure,
                       match=rf"^OpenVINO cannot compile {re.escape(str(xml))}: \[CPU\] injected by the test: "
                             "cannot compile with head_relu as an output$"):
        irnorm.compare(xml, "openvino", _feeds())
    assert len(calls) == 2  # all outputs, then the model alone
    _flaky_core(monkeypatch, run_fails=["head_relu"])
    with pytest.raises(irnorm.workbench.compare.OpenVINOFailure, match="^OpenVINO failed to run "):
        irnorm.compare(xml, "openvino", _feeds())
    res = CliRunner().invoke(cli, ["compare", str(xml)])
    assert res.exit_code == 1 and "irnorm: OpenVINO failed to run" in res.output and "Traceback" not in res.output
    res = CliRunner().invoke(cli, ["compare", str(xml), "--json"])  # the --json contract holds here too
    assert res.exit_code == 1 and json.loads(res.stdout) == {
        "ok": False, "exit_code": 1, "diagnostics": [],
        "error": {"code": "openvino", "message": f"OpenVINO failed to run {xml}: "
                                                  "[CPU] injected by the test: cannot run with head_relu as an output"}}


def test_the_number_of_openvino_runs_is_capped(tmp_path, monkeypatch):
    xml = inception_model(tmp_path)
    everything = [(r.name, r.port) for r in irnorm.compare(xml, "openvino", _feeds()).layers]
    calls = _flaky_core(monkeypatch, compile_fails=["b2a_relu", "b4_relu"])
    report = irnorm.compare(xml, "openvino", _feeds(), max_openvino_runs=5)
    assert report.openvino_runs == len(calls) == 5
    assert [(r.name, r.port) for r in report.layers] == everything
    limit = [(r.name, r.port) for r in report.layers if r.note.startswith("not isolated within the limit of 5 ")]
    # the budget goes to the earliest layers first: what is left is the tail
    assert 0 < everything.index(limit[0]) < everything.index(("b2a_relu", 0))
    assert limit == everything[everything.index(limit[0]):] and ("b4_relu", 0) in limit
    assert all(r.note.startswith("not isolated within the limit of 5 OpenVINO runs (a batch with it failed: [CPU] ")
               for r in report.layers if (r.name, r.port) in limit)
    assert all(r.status == "ok" for r in report.layers if (r.name, r.port) not in limit)
    assert report.notes[-1].endswith(f", {len(limit)} not compared (limit of 5 runs reached; raise it with "
                                     "--max-openvino-runs, or max_openvino_runs= in Python)")
    with pytest.raises(ValueError, match="max_openvino_runs must be at least 2"):
        irnorm.compare(xml, "openvino", _feeds(), max_openvino_runs=1)


def test_cli_compare_reports_outputs_openvino_cannot_expose(tmp_path, monkeypatch):
    xml = inception_model(tmp_path)
    np.savez(tmp_path / "in.npz", **_feeds())
    calls = _flaky_core(monkeypatch, compile_fails=["b3b_conv"])
    monkeypatch.setattr("irnorm.workbench.commands._stderr_tty", lambda: True)  # the progress lines too
    res = CliRunner().invoke(cli, ["compare", str(xml), "--inputs", str(tmp_path / "in.npz")])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines() == [
        "irnorm: compiling the model in OpenVINO and running both (every layer is compared)...",
        "irnorm: OpenVINO cannot compile the model with all 24 layer outputs added ([CPU] injected by the test: "
        "cannot compile with b3b_conv as an output); adding them in batches, at most 62 more OpenVINO runs..."]
    out = res.stdout
    assert re.search(r"^\d+ +\d+ +Convolution +b3b_conv .* skipped: OpenVINO cannot expose this output: "
                     r"\[CPU\] injected by the test: cannot compile with b3b_conv as an output$", out, re.M), out
    assert re.search(r"^\d+ +\d+ +ReLU +b3b_relu .* OK$", out, re.M)
    assert out.count(" OK\n") == len(re.findall(r"^\d+ ", out, re.M)) - 1
    assert "no divergence:" in out and "1 layer output(s) not compared (see the table)" in out
    assert "note: OpenVINO could not compile the model with all" in out and f"{len(calls)} OpenVINO runs" in out
    res = CliRunner().invoke(cli, ["compare", str(xml), "--inputs", str(tmp_path / "in.npz"), "--json",
                                   "--max-openvino-runs", "3"])
    d = json.loads(res.stdout)
    assert res.exit_code == 0 and d["openvino_runs"] == 3 and d["skipped"] >= 1
    res = CliRunner().invoke(cli, ["compare", str(xml), "--max-openvino-runs", "1"])
    assert res.exit_code == 2 and "--max-openvino-runs" in res.output


# ---- the batching on its own ------------------------------------------------------------------


def _attempt(fails_with, calls):
    """attempt(batch) for bisect_outputs: fails (naming the batch's first culprit) when
    fails_with(batch) gives one, else returns {key: key * 10}."""
    from irnorm.workbench.compare import AttemptFailed

    def attempt(batch):
        calls.append(list(batch))
        culprit = fails_with(batch)
        if culprit is not None:
            raise AttemptFailed("compile", f"refused {culprit}")
        return {k: k * 10 for k in batch}

    return attempt


@pytest.mark.parametrize("n, bad", [(40, {3, 17, 18, 39}), (1, {0}), (2, set()), (7, {0, 1, 2, 3, 4, 5, 6}),
                                    (300, {150})])
def test_bisect_isolates_each_output_that_fails_alone(n, bad):
    from irnorm.workbench.compare import bisect_outputs

    calls = []
    keys = list(range(n))
    values, failed, unresolved, runs = bisect_outputs(
        keys, _attempt(lambda b: min(bad & set(b), default=None), calls), 1000, "all")
    assert failed == {k: f"refused {k}" for k in bad} and unresolved == {}
    assert values == {k: k * 10 for k in keys if k not in bad}
    assert runs == len(calls) <= 2 * max(1, len(bad)) * max(1, int(np.ceil(np.log2(n))))
    # batches are runs of consecutive keys, tried in order; each key succeeds in one batch at most
    assert all(b == list(range(b[0], b[0] + len(b))) for b in calls)
    done = [k for b in calls if not bad & set(b) for k in b]
    assert sorted(done) == sorted(set(done))


def test_bisect_splits_a_pair_that_fails_only_together():
    from irnorm.workbench.compare import bisect_outputs

    calls = []
    values, failed, unresolved, runs = bisect_outputs(
        list(range(10)), _attempt(lambda b: 2 if {2, 7} <= set(b) else None, calls), 50)
    assert failed == {} and unresolved == {} and values == {k: k * 10 for k in range(10)} and runs == 2


def test_bisect_stops_at_the_budget_earliest_outputs_first():
    from irnorm.workbench.compare import bisect_outputs

    calls = []
    values, failed, unresolved, runs = bisect_outputs(
        list(range(16)), _attempt(lambda b: 5 if 5 in b else (12 if 12 in b else None), calls), 4, "all 16")
    # [0..7] fails, [0..3] ok, [4..5] fails, [4] ok; budget spent: 5, 6-7 and 8-15 are left
    assert calls == [list(range(8)), [0, 1, 2, 3], [4, 5, 6, 7], [4, 5]] and runs == 4
    assert values == {k: k * 10 for k in range(4)} and failed == {}
    assert unresolved == {4: "refused 5", 5: "refused 5", 6: "refused 5", 7: "refused 5",
                          **{k: "all 16" for k in range(8, 16)}}


def _index_model(tmp_path, kind, axis):
    """x [2, 3, 6, 6] -> MaxPool-14 2x2/2 (values and indices over the dims from `axis`) or TopK-11 (k=3 of
    the last axis, sorted by value); both outputs are model outputs."""
    o14 = pytest.importorskip("openvino.opset14")
    x = ops.parameter([2, 3, 6, 6], np.float32, name="x")
    if kind == "maxpool":
        node = o14.max_pool(x, [2, 2], [1, 1], [0, 0], [0, 0], [2, 2], "floor", "explicit", "i64", axis)
    else:
        node = o14.topk(x, ops.constant(np.int64(3)), -1, "max", "value", "i64", True)
    node.set_friendly_name("pick")
    return _save(ov.Model([ops.result(node.output(0)), ops.result(node.output(1))], [x]), tmp_path / f"{kind}.xml")


def _tied_input():
    """Random data in which (0, 0, 0, 0) and (0, 0, 0, 1) hold the same maximum: the first 2x2 window's and
    the first row's top value, tied."""
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 6)).astype(np.float32)
    x[0, 0, 0, :2] = 9.0
    return x


@pytest.mark.parametrize("kind, axis", [("maxpool", 0), ("maxpool", 1), ("maxpool", 2), ("topk", 0)])
def test_index_outputs_that_differ_only_on_ties_are_ok_with_a_note(tmp_path, monkeypatch, kind, axis):
    """The other side picks a different one of two tied maxima (as last-bit differences upstream make
    OpenVINO do on GoogLeNet's MaxPool): the index output is 'ok', its note says how many indices differ;
    picking a smaller value instead, or an index outside the data, is a divergence. Simulated by editing the
    reference's indices (OpenVINO breaks exact ties as irnorm does)."""
    xml = _index_model(tmp_path, kind, axis)
    feeds = {"x": _tied_input()}
    real = refeval._BY_LOWER[kind]
    m = irnorm.load(xml)
    irn = m.run(feeds)
    idx = irn[m.outputs[1].name]
    assert idx.reshape(-1)[0] == 0  # irnorm took the first of the tied maxima

    def edited(shift):
        def ref(c):
            vals, ind = real(c)
            ind = ind.copy()
            ind.reshape(-1)[0] += shift
            return [vals, ind]
        return ref

    monkeypatch.setitem(refeval._BY_LOWER, kind, edited(1))  # the other 9.0
    report = irnorm.compare(m, "reference", feeds)
    assert report.ok, report.table()
    row = next(r for r in report.layers if r.type in ("MaxPool", "TopK") and r.port == 1)
    assert row.status == "ok" and row.stats.mismatches == 1
    assert f"1 of {idx.size} indices differ" in row.note and "ties" in row.note, row.note
    for shift in (6 if kind == "maxpool" else 2, 10 ** 6, -1):  # a smaller value; outside the data (both ends)
        monkeypatch.setitem(refeval._BY_LOWER, kind, edited(shift))
        report = irnorm.compare(m, "reference", feeds)
        assert report.first_divergence is not None and report.first_divergence.port == 1, (shift, report.table())
        assert "ties" not in report.first_divergence.note
    # the same check on OpenVINO's side: its index output edited to the other tied maximum
    from irnorm.workbench import compare as wb_compare

    real_ov = wb_compare.openvino_layer_outputs

    def ov_edited(*args, **kwargs):
        run = real_ov(*args, **kwargs)
        ind = np.array(run.values[("pick", 1)], copy=True)
        ind.reshape(-1)[0] += 1
        run.values[("pick", 1)] = ind
        return run

    monkeypatch.setattr(wb_compare, "openvino_layer_outputs", ov_edited)
    report = irnorm.compare(m, "openvino", feeds)
    assert report.ok, report.table()
    row = next(r for r in report.layers if r.name == "pick" and r.port == 1)
    assert "1 of" in row.note and "ties" in row.note, row.note


@pytest.mark.parametrize("kind, axis", [("maxpool", 0), ("maxpool", 1), ("maxpool", 2), ("topk", 0)])
def test_pointed_values_read_what_the_indices_point_at(tmp_path, kind, axis):
    """Op.pointed_values on irnorm's own indices gives back its values output; out-of-range indices give
    NaN rather than a read outside the data; other outputs have none."""
    m = irnorm.load(_index_model(tmp_path, kind, axis))
    x = _tied_input()
    out = m.run({"x": x})
    vals, idx = (out[s.name] for s in m.outputs)
    node = next(n for n in m.graph.nodes if n.layer.name == "pick")
    np.testing.assert_array_equal(node.op.pointed_values(node.attrs, x, 1, idx), vals.astype(np.float64))
    bad = idx.copy()
    bad.reshape(-1)[:2] = [-1, x.size]
    got = node.op.pointed_values(node.attrs, x, 1, bad)
    assert np.isnan(got.reshape(-1)[:2]).all() and not np.isnan(got.reshape(-1)[2:]).any()
    assert node.op.pointed_values(node.attrs, x, 0, vals) is None
