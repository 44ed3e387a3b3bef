"""The `irnorm` command: run / validate / info, exit codes, output files written
atomically, and no traceback on any error path.

`irnorm.cli.cli` (the click group) is driven through click's CliRunner; the real
entry point `irnorm.cli.main` (which turns every error into a message and an exit
code) is called with argv in-process, and once as a real subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import ROOT, SAMPLES, load_npz, sample_names

import irnorm
from irnorm.cli import EXIT_FAIL, EXIT_INTERNAL, EXIT_INTERRUPT, EXIT_USAGE, cli, main

IR = SAMPLES / "ir"
CHAIN = IR / "gn_l2_chain.xml"  # outputs l2_out, gn_out (in that order); input input_image / pixels
GN = IR / "group_norm.xml"


def invoke(capsys, *argv: object) -> tuple[int, str, str]:
    """irnorm.cli.main(argv) in-process: (exit code, stdout, stderr); never a traceback."""
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return e.value.code, out, err


def runner_invoke(*argv: object):
    r = CliRunner().invoke(cli, [str(a) for a in argv])
    assert "Traceback" not in r.output
    return r


def broken(tmp_path: Path, name: str = "bad") -> Path:
    """group_norm_f32w with two independent errors (bad num_groups, unknown attribute on the Result)."""
    xml = (IR / "group_norm_f32w.xml").read_text()
    xml = xml.replace('num_groups="4"', 'num_groups="2.7"')
    xml = xml.replace('type="Result" version="opset1" output_names="y">',
                      'type="Result" version="opset1" output_names="y">\n\t\t\t<data bogus="1" />')
    p = tmp_path / f"{name}.xml"
    p.write_text(xml)
    shutil.copy(IR / "group_norm_f32w.bin", tmp_path / f"{name}.bin")
    return p


# ---- run ---------------------------------------------------------------------------


def test_run_prints_every_output_with_stats(capsys):
    code, out, err = invoke(capsys, "run", CHAIN)
    assert code == 0
    lines = out.strip().splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["l2_out", "gn_out"]  # output order
    for ln in lines:
        assert "shape [1, 12, 6, 6] f32" in ln
        for stat in ("min", "max", "mean", "std"):
            assert stat in ln
    assert "no inputs given; using random inputs (seed 0): input_image[1, 12, 6, 6]" in err


def test_run_stats_are_right(capsys, tmp_path):
    x = np.random.default_rng(1).standard_normal((1, 12, 6, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code, out, _ = invoke(capsys, "run", CHAIN, "-i", f"pixels={tmp_path / 'x.npy'}")
    y = irnorm.load(CHAIN).run({"pixels": x})["gn_out"].astype(np.float64)
    gn_line = next(ln for ln in out.splitlines() if ln.startswith("gn_out"))
    assert f"min {y.min():.6g}" in gn_line and f"max {y.max():.6g}" in gn_line and f"std {y.std():.6g}" in gn_line


def test_seed_determinism(capsys, tmp_path):
    runs = []
    for seed, name in ((5, "a"), (5, "b"), (6, "c")):
        code, out, err = invoke(capsys, "run", CHAIN, "--seed", seed, "-o", tmp_path / f"{name}.npz")
        assert code == 0 and f"(seed {seed})" in err
        runs.append((out.replace(str(tmp_path / name), "X"), load_npz(tmp_path / f"{name}.npz")))
    assert runs[0][0] == runs[1][0] and runs[0][0] != runs[2][0]
    for k in runs[0][1]:
        np.testing.assert_array_equal(runs[0][1][k], runs[1][1][k])  # bit-identical
        assert not np.array_equal(runs[0][1][k], runs[2][1][k])


def test_default_seed_is_zero(capsys):
    assert invoke(capsys, "run", CHAIN)[1] == invoke(capsys, "run", CHAIN, "--seed", 0)[1]


def test_run_with_inputs_npz_and_output(capsys, tmp_path):
    inputs = SAMPLES / "data" / "gn_l2_chain.inputs.npz"
    out_npz = tmp_path / "out.npz"
    code, out, err = invoke(capsys, "run", CHAIN, "--inputs", inputs, "--output", out_npz)
    assert code == 0 and err == "" and f"saved 2 output(s) to {out_npz}" in out
    with np.load(out_npz) as z:
        assert z.files == ["l2_out", "gn_out"]  # keyed by output name, in output order
        got = {k: z[k] for k in z.files}
    expected = irnorm.load(CHAIN).run(load_npz(inputs))
    for k, v in expected.items():
        np.testing.assert_array_equal(got[k], v)
    assert [p.name for p in tmp_path.iterdir()] == ["out.npz"]  # no temporary left behind
    assert (out_npz.stat().st_mode & 0o777) == (0o666 & ~_umask())


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_run_with_input_npy(capsys, tmp_path):
    x = load_npz(SAMPLES / "data" / "group_norm.inputs.npz")["x"]
    np.save(tmp_path / "x.npy", x)
    code, _, _ = invoke(capsys, "run", GN, "-i", f"x={tmp_path / 'x.npy'}", "-o", tmp_path / "o.npz")
    assert code == 0
    np.testing.assert_allclose(load_npz(tmp_path / "o.npz")["y"], load_npz(SAMPLES / "data" / "group_norm.expected.npz")
                               ["y"], rtol=1e-5, atol=1e-5)


def test_run_npz_plus_i_override(capsys, tmp_path):
    inputs = SAMPLES / "data" / "gn_l2_chain.inputs.npz"
    x = np.zeros((1, 12, 6, 6), np.float32)
    np.save(tmp_path / "zeros.npy", x)
    # the same input once from the archive and once by -i under another of its names: refused, not guessed
    code, _, err = invoke(capsys, "run", CHAIN, "--inputs", inputs, "-i", f"pixels={tmp_path / 'zeros.npy'}")
    assert code == EXIT_FAIL and "given twice" in err


def test_output_is_atomic_on_failure(capsys, tmp_path, monkeypatch):
    out_npz = tmp_path / "out.npz"
    out_npz.write_bytes(b"precious results")
    # 1: the run fails (bad input) -> the old file is untouched
    np.save(tmp_path / "bad.npy", np.zeros((2, 2), np.float32))
    code, _, err = invoke(capsys, "run", CHAIN, "-i", f"pixels={tmp_path / 'bad.npy'}", "-o", out_npz)
    assert code == EXIT_FAIL and "IRN061" in err
    assert out_npz.read_bytes() == b"precious results"
    # 2: writing fails half way (disk full) -> the old file is untouched, no temporary is left
    real_savez = np.savez

    def half_then_fail(f, **arrays):
        f.write(b"PK\x03\x04partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", half_then_fail)
    code, _, err = invoke(capsys, "run", CHAIN, "-o", out_npz)
    assert code == EXIT_FAIL and "No space left on device" in err and "internal error" not in err
    assert out_npz.read_bytes() == b"precious results"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.npy", "out.npz"]
    monkeypatch.setattr(np, "savez", real_savez)
    # 3: success replaces it, keeping its permissions
    out_npz.chmod(0o640)
    assert invoke(capsys, "run", CHAIN, "-o", out_npz)[0] == 0
    assert load_npz(out_npz).keys() == {"l2_out", "gn_out"} and (out_npz.stat().st_mode & 0o777) == 0o640


def test_output_into_missing_directory_is_refused_before_running(capsys, tmp_path, monkeypatch):
    called = []
    monkeypatch.setattr(irnorm.api, "load", lambda *a, **k: called.append(1))
    code, _, err = invoke(capsys, "run", CHAIN, "-o", tmp_path / "nope" / "out.npz")
    assert code == EXIT_USAGE and "does not exist" in err and not called


def test_run_json(capsys):
    code, out, _ = invoke(capsys, "run", CHAIN, "--json")
    data = json.loads(out)
    assert [o["name"] for o in data["outputs"]] == ["l2_out", "gn_out"]
    assert data["outputs"][0]["shape"] == [1, 12, 6, 6] and data["outputs"][0]["dtype"] == "f32"


def test_run_quiet(capsys):
    assert invoke(capsys, "run", CHAIN, "-q") == (0, "", "")


def test_run_dynamic_with_shape(capsys):
    code, out, err = invoke(capsys, "run", IR / "group_norm_dynamic.xml", "--shape", "x=2,16,3,4")
    assert code == 0 and "y: shape [2, 16, 3, 4]" in out and "x[2, 16, 3, 4]" in err


@pytest.mark.parametrize("name", sample_names())
def test_run_and_validate_every_sample(capsys, name):
    p = IR / f"{name}.xml"
    if irnorm.check(p) and any(d.severity == "error" and d.code == "IRN012" for d in irnorm.check(p)):
        pytest.skip(f"{name} uses an operation not registered yet")
    assert invoke(capsys, "validate", p)[0] == 0
    inputs = SAMPLES / "data" / f"{name}.inputs.npz"
    code, out, err = invoke(capsys, "run", p, "--inputs", inputs)
    assert code == 0, err
    assert [ln.split(":")[0] for ln in out.splitlines()] == list(load_npz(SAMPLES / "data" /
                                                                          f"{name}.expected.npz"))


# ---- validate ----------------------------------------------------------------------


def test_validate_ok_files(capsys):
    code, out, err = invoke(capsys, "validate", IR / "group_norm_f32w.xml", IR / "normalize_l2.xml")
    assert code == 0 and err == ""
    assert out.splitlines() == [f"{IR / 'group_norm_f32w.xml'}: OK", f"{IR / 'normalize_l2.xml'}: OK"]


def test_validate_ok_with_warning(capsys):
    code, out, _ = invoke(capsys, "validate", CHAIN)
    assert code == 0 and out.splitlines()[-1] == f"{CHAIN}: OK (1 warning)" and "IRN091" in out
    code, out, _ = invoke(capsys, "validate", "-q", CHAIN)
    assert code == 0 and out == ""


def test_validate_reports_every_problem_of_every_file(capsys, tmp_path):
    bad = broken(tmp_path)
    bad2 = broken(tmp_path, "bad2")
    code, out, err = invoke(capsys, "validate", IR / "normalize_l2.xml", bad, bad2)
    assert code == EXIT_FAIL
    assert f"{IR / 'normalize_l2.xml'}: OK" in out
    lines = err.strip().splitlines()
    assert len(lines) == 4  # two problems in each broken file
    for p in (bad, bad2):
        mine = [ln for ln in lines if ln.startswith(f"{p}:")]
        assert len(mine) == 2
        assert mine[0].endswith("[IRN021]") and "layer 3 'group_norm' (GroupNormalization-opset12)" in mine[0]
        assert mine[1].endswith("[IRN022]") and "layer 4 'y/result' (Result-opset1)" in mine[1]
        assert "error:" in mine[0] and ":32: " in mine[0]


def test_validate_json(capsys, tmp_path):
    bad = broken(tmp_path)
    code, out, err = invoke(capsys, "validate", "--json", CHAIN, bad)
    assert code == EXIT_FAIL and err == ""
    data = json.loads(out)
    assert [(f["file"], f["ok"]) for f in data] == [(str(CHAIN), True), (str(bad), False)]
    assert [d["code"] for d in data[0]["diagnostics"]] == ["IRN091"]
    assert [(d["code"], d["severity"], d["line"], d["layer_id"]) for d in data[1]["diagnostics"]] == [
        ("IRN021", "error", 32, "3"), ("IRN022", "error", 57, "4")]


def test_validate_file_level_errors(capsys, tmp_path):
    (tmp_path / "empty.xml").write_text("")
    code, out, err = invoke(capsys, "validate", tmp_path / "empty.xml", tmp_path / "missing.xml")
    assert code == EXIT_FAIL
    assert "empty.xml:1: error: XML is not well-formed" in err and "[IRN002]" in err
    assert "missing.xml: error: cannot read model" in err and "[IRN001]" in err


def test_validate_with_weights(capsys, tmp_path):
    shutil.copy(IR / "group_norm_f32w.xml", tmp_path / "m.xml")
    code, _, err = invoke(capsys, "validate", tmp_path / "m.xml")
    assert code == EXIT_FAIL and "IRN040" in err
    code, out, _ = invoke(capsys, "validate", tmp_path / "m.xml", "--weights", IR / "group_norm_f32w.bin")
    assert code == 0 and out.strip().endswith(": OK")
    code, _, err = invoke(capsys, "validate", tmp_path / "m.xml", CHAIN, "--weights", IR / "group_norm_f32w.bin")
    assert code == EXIT_USAGE and "--weights can only be used with a single model" in err


def test_validate_through_click_runner(tmp_path):
    r = runner_invoke("validate", CHAIN)
    assert r.exit_code == 0 and r.stdout.strip().endswith("OK (1 warning)")
    r = runner_invoke("validate", broken(tmp_path))
    assert r.exit_code == EXIT_FAIL and r.stderr.count("error:") == 2


# ---- info --------------------------------------------------------------------------


def test_info(capsys):
    code, out, _ = invoke(capsys, "info", CHAIN)
    assert code == 0
    assert "IR v11" in out and "10 layers" in out
    assert "input_image" in out and "[1,12,6,6]" in out and "(also: pixels)" in out
    assert out.index("l2_out") < out.index("gn_out")
    assert "GroupNormalization-opset12" in out and "Const-opset1                     3" in out
    assert "weights 64 bytes" in out and "fp16-compressed" in out


def test_info_json_and_dynamic(capsys):
    code, out, _ = invoke(capsys, "info", "--json", IR / "group_norm_dynamic.xml")
    data = json.loads(out)
    assert data["inputs"] == [{"name": "x", "names": ["x"], "shape": [-1, 16, -1, -1], "dims": "[?,16,?,?]",
                               "dtype": "f32", "bounds": None}]
    assert data["layers"]["GroupNormalization-opset12"] == 1
    code, out, _ = invoke(capsys, "info", IR / "group_norm_dynamic.xml")
    assert "[?,16,?,?]" in out


def test_info_on_a_broken_model_shows_its_structure(capsys, tmp_path):
    """A broken file is what a user debugs: info shows what parses, lists the errors, and exits 1."""
    code, out, err = invoke(capsys, "info", broken(tmp_path))
    assert code == EXIT_FAIL and err.count("error:") == 2 and "2 error(s)" in err
    assert "inputs" in out and "layers" in out and "GroupNormalization-opset12" in out
    code, out, _ = invoke(capsys, "info", "--json", broken(tmp_path))
    summary = json.loads(out)
    assert code == EXIT_FAIL and summary["ok"] is False and summary["errors"] == 2


# ---- usage, version, help, error paths ---------------------------------------------


def test_version_and_help(capsys):
    code, out, _ = invoke(capsys, "--version")
    assert code == 0 and out.strip() == f"irnorm, version {irnorm.__version__}"
    for argv in (["--help"], ["-h"], ["run", "--help"], ["validate", "--help"], ["info", "--help"]):
        code, out, _ = invoke(capsys, *argv)
        assert code == 0 and "Usage: irnorm" in out
    assert "--inputs" in invoke(capsys, "run", "--help")[1]


@pytest.mark.parametrize("argv", [
    [],
    ["bogus"],
    ["run"],
    ["validate"],
    ["run", str(CHAIN), "--seed", "x"],
    ["run", str(CHAIN), "-i", "noequals"],
    ["run", str(CHAIN), "--max-memory", "lots"],
    ["run", str(CHAIN), "--max-memory", "-1G"],
    ["run", str(CHAIN), "--shape", "x=1,a"],
    ["run", str(CHAIN), "--no-such-option"],
    ["run", str(SAMPLES / "ir")],  # a directory
])
def test_usage_errors_exit_2(capsys, argv):
    code, out, err = invoke(capsys, *argv)
    assert code == EXIT_USAGE, (out, err)
    assert "Usage:" in err or "Usage:" in out


@pytest.mark.parametrize("argv", [
    ["run", "/nonexistent.xml"],
    ["info", "/nonexistent.xml"],
    ["validate", "/nonexistent.xml"],
    ["run", str(CHAIN), "--weights", "/nonexistent.bin"],
    ["run", str(CHAIN), "--inputs", "/nonexistent.npz"],
    ["run", str(CHAIN), "--max-memory", "1K"],
    ["run", str(CHAIN), "-i", "nope=/nonexistent.npy"],
])
def test_error_paths_exit_1_without_traceback(capsys, argv):
    code, out, err = invoke(capsys, *argv)
    assert code == EXIT_FAIL and err.strip() and "[IRN0" in err


def test_ctrl_c_exits_130(capsys, monkeypatch):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(irnorm.api, "load", interrupted)
    code, _, err = invoke(capsys, "run", CHAIN)
    assert code == EXIT_INTERRUPT and "interrupted" in err


def test_internal_error_exit_3_without_traceback(capsys, monkeypatch):
    def bug(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(irnorm.api, "load", bug)
    code, _, err = invoke(capsys, "run", CHAIN)
    assert code == EXIT_INTERNAL and "internal error: RuntimeError: boom" in err


def test_click_runner_surfaces_library_errors():
    r = runner_invoke("run", "/nonexistent.xml")
    assert r.exit_code != 0 and isinstance(r.exception, irnorm.ModelFileError)


# ---- real processes ----------------------------------------------------------------


def _py(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


def test_subprocess_python_m_irnorm_cli_run():
    r = _py("-m", "irnorm.cli", "run", "samples/ir/group_norm.xml")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("y: shape [2, 8, 5, 5] f32  min ")
    assert "using random inputs (seed 0)" in r.stderr and "Traceback" not in r.stderr


def test_subprocess_python_m_irnorm_and_errors(tmp_path):
    r = _py("-m", "irnorm", "validate", "samples/ir/normalize_l2.xml", str(broken(tmp_path)))
    assert r.returncode == EXIT_FAIL and "samples/ir/normalize_l2.xml: OK" in r.stdout
    assert r.stderr.count("error:") == 2 and "Traceback" not in r.stderr
    r = _py("-m", "irnorm", "--version")
    assert r.returncode == 0 and irnorm.__version__ in r.stdout
    r = _py("-m", "irnorm", "run", "samples/ir/group_norm.xml", "--bogus")
    assert r.returncode == EXIT_USAGE and "Traceback" not in r.stderr


def test_console_script_if_installed():
    exe = Path(sys.executable).with_name("irnorm")
    if not exe.exists():
        pytest.skip("irnorm console script not installed next to this python")
    r = subprocess.run([str(exe), "info", str(GN)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "GroupNormalization-opset12" in r.stdout


def test_real_ctrl_c_exits_130_without_traceback(tmp_path):
    """SIGINT to a real `irnorm run` while it is reading its inputs (from a FIFO we hold open)."""
    import errno
    import signal
    import time

    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    # the child starts with SIGINT's default action even when this process runs with it ignored (a job
    # started in the background by a shell inherits SIG_IGN, and Python then keeps it ignored)
    proc = subprocess.Popen([sys.executable, "-m", "irnorm", "run", str(CHAIN), "--inputs", str(fifo)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    fd = None
    try:
        deadline = time.monotonic() + 120
        while fd is None:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds once irnorm opened it to read
            except OSError as e:
                assert e.errno == errno.ENXIO
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.05)
        time.sleep(0.3)  # irnorm is now blocked reading the archive
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if fd is not None:
            os.close(fd)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_INTERRUPT, err
    assert "interrupted" in err and "Traceback" not in err and out == ""
