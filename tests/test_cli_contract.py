"""The command line's contract for scripts: --json on success and on failure, numbers as numbers,
one dtype vocabulary, one encoding of non-finite values, and options that say what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLES

from irnorm.cli import EXIT_FAIL, EXIT_USAGE, main
from irnorm.workbench.jsonout import dumps

IR = SAMPLES / "ir"


def invoke(capsys, *argv: object) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return int(e.value.code or 0), out, err


@pytest.mark.parametrize("command", ["run", "info", "bench", "compare", "graph"])
def test_json_failure_is_an_object_on_stdout(capsys, tmp_path, command):
    truncated = tmp_path / "truncated.xml"
    truncated.write_text((IR / "group_norm.xml").read_text()[:300])
    extra = ["-o", str(tmp_path / "g.dot")] if command == "graph" else []
    code, out, err = invoke(capsys, command, truncated, "--json", *extra)
    data = json.loads(out)
    assert code == EXIT_FAIL and data["ok"] is False and data["exit_code"] == EXIT_FAIL
    assert data["error"]["code"] == "IRN002" and data["diagnostics"][0]["code"] == "IRN002"
    assert "IRN002" in err  # people still read stderr


def test_json_usage_error_is_an_object_too(capsys):
    code, out, _ = invoke(capsys, "run", IR / "group_norm.xml", "--json", "--seed", "-5")
    data = json.loads(out)
    assert code == EXIT_USAGE and data == {"ok": False, "exit_code": EXIT_USAGE, "diagnostics": [],
                                           "error": {"code": "usage", "message": data["error"]["message"]}}
    assert "--seed" in data["error"]["message"]


def test_run_json_stats_are_numbers_and_dtypes_ir_names(capsys):
    code, out, _ = invoke(capsys, "run", IR / "group_norm_bf16_in.xml", "--json")
    data = json.loads(out)
    assert code == 0 and data["ok"] is True
    for o in data["outputs"] + data["inputs"]:
        assert o["dtype"] in ("f32", "f16", "bf16", "f64", "i64", "i32", "boolean")
    st = data["outputs"][0]["stats"]
    assert all(isinstance(st[k], float) for k in ("min", "max", "mean", "std"))
    assert st["nonfinite"] == 0 and st["size"] == int(np.prod(data["outputs"][0]["shape"]))
    assert any(i["dtype"] == "bf16" for i in data["inputs"])


def test_non_finite_numbers_have_one_spelling():
    text = dumps({"a": float("inf"), "b": [float("-inf"), float("nan")], "c": np.float32(np.inf), "d": 1.5})
    assert json.loads(text) == {"a": "inf", "b": ["-inf", "nan"], "c": "inf", "d": 1.5}


@pytest.mark.parametrize("command", ["run", "bench", "compare"])
def test_negative_seed_is_a_usage_error(capsys, command):
    code, _, err = invoke(capsys, command, IR / "group_norm.xml", "--seed", "-5")
    assert code == EXIT_USAGE and "--seed" in err and "internal error" not in err


@pytest.mark.parametrize("command", ["run", "bench"])
def test_shape_for_an_unknown_input_is_refused(capsys, command):
    code, _, err = invoke(capsys, command, IR / "group_norm_dynamic.xml", "--shape", "q=2,16,8,8")
    assert code == EXIT_USAGE and "no model input named 'q'" in err and "--shape" in err


def test_shape_with_given_inputs_is_refused_not_dropped(capsys, tmp_path: Path):
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 16, 4, 4), np.float32))
    code, _, err = invoke(capsys, "run", IR / "group_norm_dynamic.xml", "--inputs", tmp_path / "in.npz",
                          "--shape", "x=2,16,8,8")
    assert code == EXIT_USAGE and "--shape applies to random inputs only" in err


@pytest.mark.parametrize("bad", ["x", "x=1,a", "=2,3", "x=-1,2", "x=1.5"])
def test_malformed_shape_names_its_option(capsys, bad):
    code, _, err = invoke(capsys, "run", IR / "group_norm_dynamic.xml", "--shape", bad)
    assert code == EXIT_USAGE and "--shape" in err


def test_bench_refuses_dynamic_dims_without_shapes(capsys):
    """benchmark_app's "Provide data shapes!": timing a dynamic model at size-1 dims says nothing."""
    code, _, err = invoke(capsys, "bench", IR / "group_norm_dynamic.xml", "-n", "1")
    assert code == EXIT_USAGE and "--shape" in err and "x[?,16,?,?]" in err
    code, out, _ = invoke(capsys, "bench", IR / "group_norm_dynamic.xml", "-n", "1", "--shape", "x=1,16,4,4", "-q")
    assert code == 0 and "latency" in out


def test_run_json_says_how_random_inputs_were_made(capsys):
    code, out, _ = invoke(capsys, "run", IR / "group_norm_dynamic.xml", "--json")
    data = json.loads(out)
    assert code == 0 and "random inputs (seed 0)" in data["inputs_note"]
    assert "dynamic dims without --shape are 1" in data["inputs_note"]
    code, out, _ = invoke(capsys, "run", IR / "group_norm.xml", "--json", "--inputs", SAMPLES / "data" /
                          "group_norm.inputs.npz")
    assert json.loads(out)["inputs_note"] is None


def test_save_inputs_replays_the_random_inputs(capsys, tmp_path: Path):
    saved = tmp_path / "in.npz"
    code, out1, _ = invoke(capsys, "run", IR / "group_norm.xml", "--seed", "3", "--save-inputs", saved, "--json")
    assert code == 0 and saved.exists()
    code, out2, _ = invoke(capsys, "run", IR / "group_norm.xml", "--inputs", saved, "--json")
    assert code == 0 and json.loads(out1)["outputs"] == json.loads(out2)["outputs"]
    code, _, err = invoke(capsys, "bench", IR / "group_norm.xml", "-n", "1", "--save-inputs", tmp_path / "x.npy")
    assert code == EXIT_USAGE and "--save-inputs" in err and ".npz" in err


def test_compare_on_random_inputs_warns(capsys, tmp_path: Path):
    code, _, _ = invoke(capsys, "run", IR / "group_norm.xml", "-o", tmp_path / "out.npz")
    code, _, err = invoke(capsys, "run", IR / "group_norm.xml", "--compare", tmp_path / "out.npz")
    assert code == 0 and "warning: --compare" in err and "random inputs" in err
    code, _, err = invoke(capsys, "run", IR / "group_norm.xml", "--compare", tmp_path / "out.npz", "--inputs",
                          SAMPLES / "data" / "group_norm.inputs.npz")
    assert "warning: --compare" not in err


@pytest.mark.parametrize("name", ["out.npy", "out", "out.zip"])
def test_output_must_be_an_npz(capsys, tmp_path: Path, name):
    """np.savez writes a zip under any name: a file called .npy would not be one."""
    code, _, err = invoke(capsys, "run", IR / "group_norm.xml", "-o", tmp_path / name)
    assert code == EXIT_USAGE and ".npz" in err and not (tmp_path / name).exists()


def test_a_slow_first_run_says_kernels_are_compiling(monkeypatch, capsys):
    """On a terminal, a run still going after a second says so once (a cold start is silent for seconds)."""
    import time

    from irnorm.workbench import outputs

    monkeypatch.setattr(outputs, "_stderr_is_terminal", lambda: True)
    assert outputs.interruptible(lambda: (time.sleep(1.3), 7)[1], slow_note=True) == 7
    assert capsys.readouterr().err.count("compiling kernels") == 1
    assert outputs.interruptible(lambda: 8, slow_note=True) == 8
    assert capsys.readouterr().err == ""


def test_python_api_errors_are_irnorm_errors_with_codes():
    import irnorm

    m = irnorm.load(IR / "group_norm.xml")
    with pytest.raises(irnorm.IrnormError) as e:
        m.run(np.zeros((2, 8, 5, 5), np.float32), capture=["nosuch"])
    assert e.value.code == "IRN066"
    with pytest.raises(irnorm.ArgumentError) as e:
        irnorm.compare(m, against="x")
    assert e.value.code == "IRN067" and isinstance(e.value, ValueError)


def test_info_layers_lists_every_layer_even_in_a_broken_model(capsys, tmp_path: Path):
    code, out, _ = invoke(capsys, "info", "--layers", "--json", IR / "gn_l2_chain.xml")
    layers = json.loads(out)["layer_list"]
    assert code == 0 and [lay["type"] for lay in layers][:2] == ["Parameter", "Const"]
    gn = next(lay for lay in layers if lay["type"] == "GroupNormalization")
    assert gn["attributes"] == {"num_groups": 3, "epsilon": 1e-05} and gn["version"] == "opset12"
    assert gn["inputs"][0] == {"shape": [1, 12, 6, 6], "dtype": "f32"} and gn["outputs"][0]["dtype"] == "f32"
    xml = (IR / "group_norm.xml").read_text().replace('type="GroupNormalization"', 'type="FancyNorm"')
    (tmp_path / "m.xml").write_text(xml)
    (tmp_path / "m.bin").write_bytes((IR / "group_norm.bin").read_bytes())
    code, out, _ = invoke(capsys, "info", "--layers", tmp_path / "m.xml")
    assert code == EXIT_FAIL and "FancyNorm-opset12  UNSUPPORTED" in out


def test_graph_draws_a_broken_model_with_its_bad_layers_marked(capsys, tmp_path: Path):
    xml = (IR / "group_norm.xml").read_text().replace('type="GroupNormalization"', 'type="FancyNorm"')
    (tmp_path / "m.xml").write_text(xml)
    (tmp_path / "m.bin").write_bytes((IR / "group_norm.bin").read_bytes())
    code, _, err = invoke(capsys, "graph", tmp_path / "m.xml", "-o", tmp_path / "g.dot")
    dot = (tmp_path / "g.dot").read_text()
    assert code == EXIT_FAIL and "drawn in red" in err
    assert "FancyNorm" in dot and "#c00000" in dot and "IRN012" in dot


def test_bench_reports_like_benchmark_app(capsys):
    code, out, _ = invoke(capsys, "bench", IR / "layer_norm_mvn.xml", "-n", "6", "--profile", "--concurrency", "2",
                          "--json")
    data = json.loads(out)
    assert code == 0 and data["runs"] == 6 and data["concurrency"] == 2
    assert data["load_seconds"] > 0 and data["first_run_ms"] > 0
    env = data["environment"]
    assert {"irnorm", "numba", "numpy", "threading_layer", "cpu"} <= set(env) and "flags" in env["cpu"]
    assert data["profile"] and all(r["ms"] >= 0 for r in data["profile"])
    assert abs(sum(r["share"] for r in data["profile"]) - 1.0) < 1e-9
    code, out, _ = invoke(capsys, "bench", IR / "group_norm.xml", "-n", "3", "--profile")
    assert code == 0 and "first run" in out and "per-layer times, mean of 3" in out and "GroupNormalization" in out


@pytest.mark.parametrize("command", [[], ["run"], ["validate"], ["info"], ["compare"], ["bench"], ["graph"]])
def test_every_help_carries_an_example(capsys, command):
    code, out, _ = invoke(capsys, *command, "--help")
    assert code == 0 and "Example:  irnorm " in out


def test_packaging_public_names_version_and_typing():
    from importlib import metadata

    import irnorm

    assert irnorm.__version__ == metadata.version("irnorm")
    for name in ("Model", "TensorSpec", "RunResult", "LayerOutput", "LayerTime", "ArgumentError", "load"):
        assert name in irnorm.__all__ and hasattr(irnorm, name)
    assert irnorm.load.__annotations__["return"] in ("Model", irnorm.Model)
    root = Path(irnorm.__file__).parent
    assert (root / "py.typed").exists()
    repo = root.parent
    if (repo / "pyproject.toml").exists():  # a source checkout: the files the release carries
        text = (repo / "pyproject.toml").read_text()
        assert 'license = "Apache-2.0"' in text and "Apache License" in (repo / "LICENSE").read_text()
        assert (repo / "CHANGELOG.md").exists() and "openvino = [" in text
