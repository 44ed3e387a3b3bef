"""Runtime inputs, through Model.run and through the CLI: names (with suggestions),
rank, dims, dtype (no silent casts; cast=True / --cast converts), odd memory layouts,
NaN/Inf, and input files that are corrupt, of the wrong kind, or pickles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from conftest import SAMPLES

import irnorm
from irnorm.cli import main

IR = SAMPLES / "ir"
CHAIN = IR / "gn_l2_chain.xml"  # one input: layer 'input_image', tensor names 'input_image', 'pixels'
GN = IR / "group_norm_f32w.xml"  # one input x[2,8,5,5] f32
DYN = IR / "group_norm_dynamic.xml"  # x[?,16,?,?]


def chain_x(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 12, 6, 6)).astype(np.float32)


@pytest.fixture(scope="module")
def chain():
    return irnorm.load(CHAIN)


def err(call, code: str) -> irnorm.InputError:
    with pytest.raises(irnorm.InputError) as e:
        call()
    assert e.value.code == code, str(e.value)
    assert isinstance(e.value, irnorm.IrnormError)
    return e.value


def invoke(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the real entry point (irnorm.cli.main) with argv; return (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, errs = capsys.readouterr()
    assert "Traceback" not in errs
    return e.value.code, out, errs


# ---- names -------------------------------------------------------------------------


def test_missing_input(chain):
    e = err(lambda: chain.run({}), "IRN060")
    assert "missing input 'input_image' ([1,12,6,6] f32)" in str(e)


def test_misspelled_input_gets_a_suggestion(chain):
    e = err(lambda: chain.run({"input_imag": chain_x()}), "IRN060")
    assert "unknown input 'input_imag'" in str(e) and "did you mean 'input_image'" in str(e)
    e = err(lambda: chain.run({"pixel": chain_x()}), "IRN060")
    assert "did you mean 'pixels'" in str(e)


def test_extra_input_is_refused(chain):
    e = err(lambda: chain.run({"input_image": chain_x(), "zzz": chain_x()}), "IRN060")
    assert [d.message.split(";")[0] for d in e.diagnostics] == ["unknown input 'zzz'"]
    assert "did you mean" not in str(e)  # nothing close


def test_input_given_twice_under_two_names(chain):
    e = err(lambda: chain.run({"input_image": chain_x(), "pixels": chain_x()}), "IRN060")
    assert "given twice (also as 'pixels')" in str(e)


def test_every_name_of_an_input_is_accepted(tmp_path):
    # rename the Parameter layer so its friendly name differs from both tensor names
    xml = CHAIN.read_text().replace('name="input_image" type="Parameter"', 'name="param_0" type="Parameter"')
    (tmp_path / "m.xml").write_text(xml)
    shutil.copy(CHAIN.with_suffix(".bin"), tmp_path / "m.bin")
    m = irnorm.load(tmp_path / "m.xml")
    assert m.inputs[0].name == "input_image"  # what OpenVINO reports: the first tensor name
    assert set(m.inputs[0].names) == {"input_image", "pixels", "param_0"}
    x = chain_x()
    ref = m.run({"input_image": x})
    for name in ("pixels", "param_0"):
        out = m.run({name: x})
        assert list(out) == list(ref)
        for k in ref:
            np.testing.assert_array_equal(out[k], ref[k])


def test_positional_call(chain):
    x = chain_x()
    ref = chain.run({"input_image": x})
    for out in (chain(x), chain.run([x]), chain.run((x,)), chain.run(x), chain(pixels=x)):
        assert list(out) == ["l2_out", "gn_out"]
        for k in ref:
            np.testing.assert_array_equal(out[k], ref[k])
    e = err(lambda: chain(x, x), "IRN060")
    assert "takes 1 inputs (input_image), got 2" in str(e)
    err(lambda: chain(x, pixels=x), "IRN060")
    e = err(lambda: chain.run("input_image"), "IRN060")
    assert "got str" in str(e)


def test_positional_order_is_input_order(tmp_path):
    """Three Parameters (x, s, b): positional arguments follow the model's input order."""
    xml = GN.read_text()
    start, end = xml.index('\t\t<layer id="1" name="gn_scale"'), xml.index('\t\t<layer id="3"')
    params = "".join(
        f'\t\t<layer id="{i}" name="{n}" type="Parameter" version="opset1">\n\t\t\t<data shape="8" '
        f'element_type="f32" />\n\t\t\t<output>\n\t\t\t\t<port id="0" precision="FP32" names="{n}">\n'
        f'\t\t\t\t\t<dim>8</dim>\n\t\t\t\t</port>\n\t\t\t</output>\n\t\t</layer>\n'
        for i, n in ((1, "s"), (2, "b")))
    (tmp_path / "m.xml").write_text(xml[:start] + params + xml[end:])
    m = irnorm.load(tmp_path / "m.xml")
    assert [s.name for s in m.inputs] == ["x", "s", "b"]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 8, 5, 5)).astype(np.float32)
    s, b = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    by_name = m.run({"b": b, "x": x, "s": s})["y"]
    np.testing.assert_array_equal(m(x, s, b)["y"], by_name)
    assert not np.array_equal(m(x, b, s)["y"], by_name)
    e = err(lambda: m.run({"x": x}), "IRN060")
    assert [d.message for d in e.diagnostics] == ["missing input 's' ([8] f32)", "missing input 'b' ([8] f32)"]


# ---- rank, dims, dtype -------------------------------------------------------------


def test_wrong_rank(chain):
    e = err(lambda: chain.run({"pixels": chain_x()[0]}), "IRN061")
    assert "has rank 3 [12, 6, 6], the model expects rank 4 [1,12,6,6]" in str(e)


def test_wrong_dims(chain):
    e = err(lambda: chain.run({"pixels": chain_x()[:, :6]}), "IRN061")
    assert "has shape [1, 6, 6, 6], the model expects [1,12,6,6] (dim 1 must be 12)" in str(e)


def test_dynamic_dims_accept_any_size():
    m = irnorm.load(DYN)
    assert m.inputs[0].shape == (-1, 16, -1, -1) and m.inputs[0].is_dynamic
    for shape in [(1, 16, 1, 1), (3, 16, 2, 7), (2, 16, 9, 1), (0, 16, 3, 3)]:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        assert m.run({"x": x})["y"].shape == shape
    e = err(lambda: m.run({"x": np.zeros((3, 4, 2, 7), np.float32)}), "IRN061")
    assert "the model expects [?,16,?,?] (dim 1 must be 16)" in str(e)


def test_wrong_dtype_names_both(chain):
    e = err(lambda: chain.run({"pixels": chain_x().astype(np.float64)}), "IRN062")
    assert "has dtype float64, the model expects float32 (f32)" in str(e) and "cast=True" in str(e)
    for dt in (np.float16, np.int32, np.int64, np.bool_):
        e = err(lambda dt=dt: chain.run({"pixels": chain_x().astype(dt)}), "IRN062")
        assert f"has dtype {np.dtype(dt)}" in str(e)


def test_bf16_input_refuses_float32_and_accepts_bf16():
    m = irnorm.load(IR / "group_norm_bf16_in.xml")
    spec = m.inputs[0]
    assert spec.dtype == np.dtype(ml_dtypes.bfloat16)
    x = np.random.default_rng(0).standard_normal(spec.shape).astype(np.float32)
    e = err(lambda: m.run({spec.name: x}), "IRN062")
    assert "float32" in str(e) and "bfloat16" in str(e)
    a = m.run({spec.name: x.astype(ml_dtypes.bfloat16)})
    b = m.run({spec.name: x}, cast=True)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_cast_converts(chain):
    x = chain_x()
    ref = chain.run({"pixels": x})
    out = chain.run({"pixels": x.astype(np.float64)}, cast=True)
    for k in ref:
        assert out[k].dtype == np.float32
        np.testing.assert_array_equal(out[k], ref[k])  # f32 -> f64 -> f32 is exact
    xi = np.arange(432).reshape(1, 12, 6, 6) % 7
    out = chain.run({"pixels": xi}, cast=True)
    np.testing.assert_array_equal(out["gn_out"], chain.run({"pixels": xi.astype(np.float32)})["gn_out"])
    out = chain.run({"pixels": xi.tolist()}, cast=True)  # nested lists too, with cast
    np.testing.assert_array_equal(out["gn_out"], chain.run({"pixels": xi.astype(np.float32)})["gn_out"])


def test_non_array_values(chain):
    err(lambda: chain.run({"pixels": "abc"}), "IRN062")
    err(lambda: chain.run({"pixels": {"a": 1}}), "IRN062")
    err(lambda: chain.run({"pixels": chain_x().astype(object)}), "IRN062")
    e = err(lambda: chain.run({"pixels": object()}, cast=True), "IRN062")
    assert "input 'input_image'" in str(e)


def test_several_problems_are_all_reported(chain):
    with pytest.raises(irnorm.InputError) as e:
        chain.run({"pixels": chain_x().astype(np.float64), "bogus": 1})
    assert sorted(d.code for d in e.value.diagnostics) == ["IRN060", "IRN062"]


# ---- memory layouts, values --------------------------------------------------------


def test_non_contiguous_and_read_only_inputs_work(chain):
    x = chain_x()
    ref = chain.run({"pixels": x})
    big = np.zeros((2, 12, 12, 12), np.float32)
    big[0, :, ::2, 1::2] = x[0]
    views = {
        "fortran": np.asfortranarray(x),
        "strided": big[:1, :, ::2, 1::2],
        "negative strides": np.ascontiguousarray(x[:, ::-1])[:, ::-1],
        "transposed back": np.ascontiguousarray(x.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
    }
    ro = x.copy()
    ro.flags.writeable = False
    views["read-only"] = ro
    ro_view = np.broadcast_to(x, x.shape)  # read-only, not owning
    views["broadcast view"] = ro_view
    for label, v in views.items():
        np.testing.assert_array_equal(v, x)
        out = chain.run({"pixels": v})
        for k in ref:
            np.testing.assert_array_equal(out[k], ref[k], err_msg=label)


def test_inputs_are_not_modified_and_outputs_are_fresh(chain):
    x = chain_x()
    keep = x.copy()
    out = chain.run({"pixels": x})
    np.testing.assert_array_equal(x, keep)
    for v in out.values():
        assert not np.shares_memory(v, x)
        assert v.flags.writeable


def test_nan_and_inf_propagate_without_crashing(chain):
    x = chain_x()
    x[0, 0, 0, 0] = np.nan  # group 0 of GroupNorm (channels 0-3)
    x[0, 5, 1, 1] = np.inf  # group 1 (channels 4-7)
    out = chain.run({"pixels": x})
    gn = out["gn_out"]
    assert np.isnan(gn[0, 0:8]).all()  # a NaN or Inf in a group poisons its mean/variance
    assert np.isfinite(gn[0, 8:12]).all()  # group 2 is untouched
    l2 = out["l2_out"]
    assert not np.isfinite(l2).all() and l2.shape == x.shape
    allnan = chain.run({"pixels": np.full_like(x, np.nan)})
    assert all(np.isnan(v).all() for v in allnan.values())
    ninf = chain.run({"pixels": np.full_like(x, -np.inf)})
    assert all(v.shape == x.shape for v in ninf.values())


# ---- through the CLI ----------------------------------------------------------------


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    x = chain_x()
    f = {
        "npy": tmp_path / "x.npy", "npz": tmp_path / "in.npz", "f64": tmp_path / "x64.npy",
        "corrupt": tmp_path / "corrupt.npz", "obj_npy": tmp_path / "obj.npy", "obj_npz": tmp_path / "obj.npz",
        "pickle": tmp_path / "x.pkl", "text": tmp_path / "x.txt", "empty": tmp_path / "empty.npy",
        "trunc_npy": tmp_path / "trunc.npy",
    }
    np.save(f["npy"], x)
    np.savez(f["npz"], pixels=x)
    np.save(f["f64"], x.astype(np.float64))
    f["corrupt"].write_bytes(f["npz"].read_bytes()[:200])
    np.save(f["obj_npy"], np.array([{"a": 1}], dtype=object), allow_pickle=True)
    np.savez(f["obj_npz"], pixels=np.array([{"a": 1}], dtype=object))
    import pickle

    f["pickle"].write_bytes(pickle.dumps(x))
    f["text"].write_text("1 2 3\n")
    f["empty"].write_bytes(b"")
    f["trunc_npy"].write_bytes(f["npy"].read_bytes()[:300])
    return f


def test_cli_inputs_by_file(capsys, files):
    code, out, errs = invoke(capsys, "run", CHAIN, "-i", f"pixels={files['npy']}")
    assert code == 0 and errs == ""
    code2, out2, _ = invoke(capsys, "run", CHAIN, "--inputs", files["npz"])
    assert code2 == 0 and out2 == out
    code3, out3, _ = invoke(capsys, "run", CHAIN, "-i", f"input_image={files['npy']}")
    assert code3 == 0 and out3 == out


@pytest.mark.parametrize(("args", "words"), [
    (["--inputs", "{corrupt}"], "corrupt.npz"),
    (["--inputs", "{obj_npz}"], "cannot read member 'pixels'"),
    (["-i", "pixels={obj_npy}"], "allow_pickle=False"),
    (["-i", "pixels={pickle}"], "cannot read as .npy/.npz"),
    (["-i", "pixels={text}"], "cannot read as .npy/.npz"),
    (["-i", "pixels={empty}"], "cannot read as .npy/.npz"),
    (["-i", "pixels={trunc_npy}"], "trunc.npy"),
    (["-i", "pixels={npz}"], "expected a single array (.npy), got an archive"),
    (["--inputs", "{npy}"], "--inputs expects an .npz archive"),
    (["-i", "pixels=/nonexistent/x.npy"], "no such file"),
    (["--inputs", "/nonexistent/in.npz"], "no such file"),
])
def test_cli_bad_input_files(capsys, files, args, words):
    args = [a.format(**{k: str(v) for k, v in files.items()}) for a in args]
    code, out, errs = invoke(capsys, "run", CHAIN, *args)
    assert code == 1 and out == ""
    assert "IRN063" in errs and words in errs, errs


def test_cli_input_name_dtype_and_shape_errors(capsys, files, tmp_path):
    code, _, errs = invoke(capsys, "run", CHAIN, "-i", f"pixel={files['npy']}")
    assert code == 1 and "unknown input 'pixel'" in errs and "did you mean 'pixels'" in errs
    code, _, errs = invoke(capsys, "run", CHAIN, "-i", f"pixels={files['f64']}")
    assert code == 1 and "IRN062" in errs and "float64" in errs and "float32" in errs and "--cast" in errs
    code, out, _ = invoke(capsys, "run", CHAIN, "-i", f"pixels={files['f64']}", "--cast")
    assert code == 0 and "gn_out" in out
    np.save(tmp_path / "small.npy", np.zeros((1, 6, 6, 6), np.float32))
    code, _, errs = invoke(capsys, "run", CHAIN, "-i", f"pixels={tmp_path / 'small.npy'}")
    assert code == 1 and "IRN061" in errs and "dim 1 must be 12" in errs
    code, _, errs = invoke(capsys, "run", CHAIN, "-i", f"pixels={files['npy']}", "-i", f"input_image={files['npy']}")
    assert code == 1 and "given twice" in errs


def test_cli_dynamic_input_any_size(capsys, tmp_path):
    np.save(tmp_path / "x.npy", np.ones((3, 16, 2, 5), np.float32))
    code, out, _ = invoke(capsys, "run", DYN, "-i", f"x={tmp_path / 'x.npy'}")
    assert code == 0 and "y: shape [3, 16, 2, 5] f32" in out


def test_cli_nan_inputs_are_reported_not_fatal(capsys, tmp_path):
    x = chain_x()
    x[0, 0, 0, 0] = np.nan
    np.save(tmp_path / "x.npy", x)
    code, out, _ = invoke(capsys, "run", CHAIN, "-i", f"pixels={tmp_path / 'x.npy'}")
    assert code == 0 and "non-finite" in out


def test_cli_bf16_input_file_round_trip(capsys, tmp_path):
    """np.save stores bfloat16 as 2-byte voids; the CLI views them back as bfloat16."""
    m = irnorm.load(IR / "group_norm_bf16_in.xml")
    spec = m.inputs[0]
    x = np.random.default_rng(0).standard_normal(spec.shape).astype(ml_dtypes.bfloat16)
    np.savez(tmp_path / "in.npz", **{spec.name: x})
    out_npz = tmp_path / "out.npz"
    code, _, errs = invoke(capsys, "run", IR / "group_norm_bf16_in.xml", "--inputs", tmp_path / "in.npz",
                           "-o", out_npz)
    assert code == 0, errs
    ref = m.run({spec.name: x})
    with np.load(out_npz) as z:
        for k, v in ref.items():
            np.testing.assert_array_equal(z[k], v.astype(np.float32))


def test_cli_npz_bomb_is_refused_before_inflating(capsys, tmp_path):
    """A member whose header claims 4 TiB (or more than --max-memory) is refused from its header."""
    import io
    import time
    import zipfile

    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(hdr, {"descr": "<f4", "fortran_order": False, "shape": (1, 12, 6, 2**36)})
    with zipfile.ZipFile(tmp_path / "bomb.npz", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pixels.npy", hdr.getvalue() + bytes(10_000))
    t = time.perf_counter()
    code, out, errs = invoke(capsys, "run", CHAIN, "--inputs", tmp_path / "bomb.npz")
    assert time.perf_counter() - t < 2
    assert code == 1 and "IRN051" in errs and "claims shape [1, 12, 6, 68719476736]" in errs
    np.savez_compressed(tmp_path / "zeros.npz", pixels=np.zeros((1, 12, 6, 6 * 4096), np.float32))
    code, out, errs = invoke(capsys, "run", CHAIN, "--inputs", tmp_path / "zeros.npz", "--max-memory", "1M")
    assert code == 1 and "IRN051" in errs and "over the memory limit" in errs


def test_big_endian_input_is_the_same_type(chain):
    x = chain_x()
    ref = chain.run({"pixels": x})
    out = chain.run({"pixels": x.astype(">f4")})
    for k in ref:
        np.testing.assert_array_equal(out[k], ref[k])


def test_bounded_dims_are_kept_and_enforced_as_openvino_does(tmp_path):
    """A Parameter dim written 2..4 is reported as such (TensorSpec.bounds, .dims, info) and a size
    outside it is refused (IRN061) -- except 0, an empty tensor, which OpenVINO accepts too."""
    from click.testing import CliRunner

    from irnorm.cli import cli

    xml = (IR / "group_norm_dynamic.xml").read_text()
    assert 'shape="?,16,?,?"' in xml
    path = tmp_path / "b.xml"
    path.write_text(xml.replace('shape="?,16,?,?"', 'shape="2..4,16,?,?"'))
    (tmp_path / "b.bin").write_bytes((IR / "group_norm_dynamic.bin").read_bytes())
    m = irnorm.load(path)
    spec = m.inputs[0]
    assert spec.shape == (-1, 16, -1, -1) and spec.bounds == ((2, 4), (16, 16), (0, None), (0, None))
    assert spec.dims == "[2..4,16,?,?]" and "2..4" in repr(spec)
    for n in (2, 4, 0):
        m.run({"x": np.zeros((n, 16, 3, 3), np.float32)})
    for n in (1, 5, 8):
        with pytest.raises(irnorm.InputError, match=r"dim 0 must be within 2\.\.4") as e:
            m.run({"x": np.zeros((n, 16, 3, 3), np.float32)})
        assert e.value.code == "IRN061"
    r = CliRunner().invoke(cli, ["info", "--json", str(path)])
    info = json.loads(r.stdout)
    assert info["inputs"][0]["dims"] == "[2..4,16,?,?]" and info["inputs"][0]["bounds"][0] == [2, 4]
