"""DFT-7, IDFT-7, RDFT-9, IRDFT-9 and STFT-15 beyond the conformance rows: the graphs OpenVINO's PyTorch
frontend writes for torch.stft(...).abs() and torch.fft.rfft(x).abs() (built here with openvino.opset
builders: torch is no test dependency) against OpenVINO's CPU plugin and numpy; axes, signal_size and frame
sizes as constants and at run time; element types; the spec's edge cases where the CPU plugin departs
(docs/ir-format.md, "Fourier transforms"); shape inference; malformed layers and run-time values -> coded
errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import IRBuilder, expect_error, single_op_model
from ovutil import HAVE_OPENVINO, compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R
from irnorm.cli import main

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset3 as op3
    import openvino.opset7 as op7
    import openvino.opset8 as op8
    import openvino.opset9 as op9
    import openvino.opset12 as op12
    import openvino.opset15 as op15

BF16 = np.dtype(ml_dtypes.bfloat16)
ET = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", BF16: "bf16", np.dtype(np.float64): "f64"}


def _param(shape, dtype, name, dynamic=False):
    t = ov.Type.bf16 if np.dtype(dtype) == BF16 else np.dtype(dtype)
    return op1.parameter(ov.PartialShape([-1] * len(shape)) if dynamic else ov.PartialShape(list(shape)), t,
                         name=name)


def _ov_model(node, params, tmp_path, name, compress=False):
    node.output(0).get_tensor().set_names({"y"})
    return save(ov.Model([op1.result(node)], params, name), tmp_path, name, compress_to_fp16=compress)


def _cplx(a):
    a = np.asarray(a, np.float64)
    return a[..., 0] + 1j * a[..., 1]


def _pairs(c):
    return np.stack([c.real, c.imag], -1)


# ---- what OpenVINO's PyTorch frontend writes -------------------------------------------------------------


def _hann(n):  # torch.hann_window(n) (periodic)
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)).astype(np.float32)


def _abs_complex(node):
    """torch's .abs() of a complex tensor as the frontend writes it: Power 2, ReduceSum(-1), Sqrt."""
    sq = op1.power(node, op1.constant(np.full((1,) * len(node.get_output_partial_shape(0)), 2, np.float32)))
    return op1.sqrt(op1.reduce_sum(sq, op1.constant(np.array(-1, np.int32)), keep_dims=False))


def _torch_stft_graph(n_fft=16, hop=4):
    """torch.stft(x, n_fft, hop_length=hop, window=hann_window(n_fft), return_complex=True).abs() on x [?, ?]:
    reflect-pad n_fft // 2 on both sides of a [1, B, T] view, STFT-15 (transpose_frames true), |.|."""
    x = _param((2, 64), np.float32, "x", dynamic=True)
    shape = op3.shape_of(x, "i64")
    v = op1.reshape(x, op1.concat([op1.constant(np.array([1], np.int64)), shape], 0), False)
    pad = op12.pad(v, op1.constant(np.array([0, 0, n_fft // 2], np.int64)),
                   op1.constant(np.array([0, 0, n_fft // 2], np.int64)), "reflect")
    padded_shape = op8.gather(op3.shape_of(pad, "i64"), op1.constant(np.array([1, 2], np.int64)),
                              op1.constant(np.int64(0)))
    sig = op1.reshape(pad, padded_shape, False)
    st = op15.stft(sig, op1.constant(_hann(n_fft)), op1.constant(np.int64(n_fft)), op1.constant(np.int64(hop)),
                   True)
    return _abs_complex(st), [x]


def _torch_stft_numpy(x, n_fft=16, hop=4):
    p = np.pad(x.astype(np.float64), ((0, 0), (n_fft // 2, n_fft // 2)), mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(p, n_fft, axis=-1)[:, ::hop]
    window = _hann(n_fft).astype(np.float16)  # save_model's default compress_to_fp16 rounds the constant
    return np.abs(np.fft.rfft(frames * window, axis=-1)).transpose(0, 2, 1)


@requires_openvino
@pytest.mark.parametrize("shape", [(2, 64), (1, 16), (3, 101), (1, 9)])
def test_torch_stft_graph_matches_openvino_and_numpy(tmp_path, shape):
    node, params = _torch_stft_graph()
    xml = _ov_model(node, params, tmp_path, "stft", compress=True)  # as save_model writes an export
    m = irnorm.load(xml)
    assert m.outputs[0].shape == (-1, 9, -1)  # what OpenVINO infers for the export
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    got = compare_with_openvino(xml, {"x": x})["y"]
    np.testing.assert_allclose(got, _torch_stft_numpy(x), rtol=1e-5, atol=1e-5 * np.abs(got).max())


@requires_openvino
@pytest.mark.parametrize("shape", [(2, 64), (1, 1), (3, 7), (2, 0), (0, 5)])
def test_torch_rfft_graph_with_signal_size_from_shape_of(tmp_path, shape):
    """torch.fft.rfft(x).abs() on x [?, ?]: the frontend passes signal_size = Gather(ShapeOf(x), -1), a value
    known only at run time; OpenVINO infers [?, ?] and so does irnorm."""
    x_p = _param((2, 64), np.float32, "x", dynamic=True)
    size = op8.gather(op3.shape_of(x_p, "i32"), op1.constant(np.array([-1], np.int64)), op1.constant(np.int64(0)))
    node = _abs_complex(op9.rdft(x_p, op1.constant(np.array([-1], np.int32)), size))
    xml = _ov_model(node, [x_p], tmp_path, "rfft", compress=True)
    m = irnorm.load(xml)
    assert m.outputs[0].shape == (-1, -1)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    if x.size:
        got = compare_with_openvino(xml, {"x": x})["y"]
        np.testing.assert_allclose(got, np.abs(np.fft.rfft(x.astype(np.float64), axis=-1)), rtol=1e-5, atol=1e-5)
    else:  # empty: irnorm alone (the shape rule: n // 2 + 1 bins, 0 for n = 0)
        got = m.run({"x": x})["y"]
        assert got.shape == (shape[0], shape[1] // 2 + 1 if shape[1] else 0)


# ---- against OpenVINO: axes, signal sizes, types, run-time inputs ------------------------------------------


FFT = {"DFT": ("op7", "dft"), "IDFT": ("op7", "idft"), "RDFT": ("op9", "rdft"), "IRDFT": ("op9", "irdft")}


def _builder(kind):
    mod, name = FFT[kind]
    return getattr(globals()[mod], name)


def _expected(kind, x, axes, sizes):
    if kind in ("DFT", "IDFT"):
        return R.dft(x, axes, sizes, kind == "IDFT")
    return (R.rdft if kind == "RDFT" else R.irdft)(x, axes, sizes)


CASES = [  # (kind, data shape, axes, signal_size) -- cases OpenVINO's CPU plugin computes per the spec
    ("DFT", (3, 5, 6, 2), [1, 2], None),
    ("DFT", (3, 5, 6, 2), [-1, 0], [4, -1]),
    ("DFT", (2, 3, 4, 5, 2), [3, -4, 1], [7, 1, 2]),
    ("DFT", (7, 2), [0], [16]),
    ("IDFT", (3, 5, 6, 2), [-2, -1], None),
    ("IDFT", (3, 5, 6, 2), [2, 0], [9, 2]),
    ("IDFT", (1, 1, 2), [0, 1], [-1, 3]),
    ("RDFT", (3, 5, 6), [1, 2], None),
    ("RDFT", (3, 5, 7), [-1, 0], [5, 2]),
    ("RDFT", (4, 5), [0], None),
    ("RDFT", (9,), [-1], [8]),
    ("IRDFT", (3, 5, 6, 2), [1, 2], None),
    ("IRDFT", (3, 5, 6, 2), [2, 0], [5, 2]),
    ("IRDFT", (3, 5, 6, 2), [-1], None),
    ("IRDFT", (4, 5, 2), [1, 0], [4, 2]),
    ("IRDFT", (2, 3, 4, 6, 2), [2, 3], [4, 8]),
]


@requires_openvino
@pytest.mark.parametrize("kind,shape,axes,sizes", CASES)
@pytest.mark.parametrize("runtime", [False, True], ids=["const", "runtime"])
def test_fft_matches_openvino(tmp_path, kind, shape, axes, sizes, runtime):
    """Constant axes/signal_size on a static model, or both as model inputs (every dim dynamic: the CPU plugin
    refuses run-time sizes on a static model); i32 and i64 index types."""
    rng = np.random.default_rng(len(shape) * 7 + len(axes))
    x = rng.standard_normal(shape).astype(np.float32)
    xp = _param(shape, np.float32, "x", runtime)
    params, feeds = [xp], {"x": x}
    a = np.array(axes, np.int32 if runtime else np.int64)
    s = None if sizes is None else np.array(sizes, np.int64 if runtime else np.int32)
    if runtime:
        ap = _param(a.shape, a.dtype, "axes", True)
        params.append(ap)
        feeds["axes"] = a
        a_in = ap
        if s is not None:
            sp = _param(s.shape, s.dtype, "sizes", True)
            params.append(sp)
            feeds["sizes"] = s
            s_in = sp
    else:
        a_in, s_in = op1.constant(a), (None if s is None else op1.constant(s))
    f = _builder(kind)
    node = f(xp, a_in) if s is None else f(xp, a_in, s_in)
    xml = _ov_model(node, params, tmp_path, kind)
    if not runtime:
        assert irnorm.load(xml).outputs[0].shape == tuple(node.get_output_partial_shape(0).to_shape())
    got = compare_with_openvino(xml, feeds)["y"]
    exp = _expected(kind, x, axes, sizes)
    np.testing.assert_allclose(got, exp, rtol=1e-5, atol=2e-6 * max(np.abs(exp).max(), 1))


@requires_openvino
@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["f16", "bf16"])
@pytest.mark.parametrize("kind", ["DFT", "IDFT", "RDFT", "IRDFT", "STFT"])
def test_half_types_round_once_like_openvino(tmp_path, dtype, kind):
    """f16/bf16 data: OpenVINO computes in float32 and rounds once, irnorm in float64 and rounds once, so
    the results agree to an output ulp (checked element by element) and sit within an ulp of the exact
    transform of the rounded input."""
    rng = np.random.default_rng(11)
    shape = (3, 64) if kind == "STFT" else (3, 5, 8) if kind == "RDFT" else (3, 5, 8, 2)
    x = rng.standard_normal(shape).astype(dtype)
    xp = _param(shape, dtype, "x")
    if kind == "STFT":
        w = rng.uniform(0.1, 1, 12).astype(dtype)
        node = op15.stft(xp, _const(w), op1.constant(np.int64(16)), op1.constant(np.int64(5)), False)
        exp = R.stft(x, w, 16, 5, False)
    else:
        node = _builder(kind)(xp, op1.constant(np.array([2, 1], np.int64)))
        exp = _expected(kind, x, [2, 1], None)
    xml = _ov_model(node, [xp], tmp_path, kind)
    from ovutil import ov_run

    ref = ov_run(xml, {"x": x})["y"]
    got = irnorm.load(xml).run({"x": x})["y"]
    assert got.dtype == dtype and ref.dtype == dtype
    mant, tiny = (10, 2.0 ** -24) if dtype == np.float16 else (7, 2.0 ** -133)
    g, r = got.astype(np.float64), ref.astype(np.float64)
    big = np.maximum(np.abs(g), np.abs(r))
    ulp = np.maximum(2.0 ** (np.floor(np.log2(np.maximum(big, tiny))) - mant), tiny)
    # OpenVINO's float32 error (~1e-7 of the largest bin) may move a small bin across a rounding boundary
    tol = ulp + 1e-6 * np.abs(exp).max()
    assert (np.abs(g - r) <= tol).all(), f"irnorm vs OpenVINO: {np.max(np.abs(g - r) / tol)} of the tolerance"
    assert (np.abs(g - exp) <= 0.5 * ulp + 1e-9 * np.abs(exp).max()).all()  # one rounding of the exact value


def _const(v):
    if v.dtype == BF16:
        return ov.op.Constant(ov.Tensor(v.view(np.uint16), list(v.shape), ov.Type.bf16))
    return op1.constant(v)


@requires_openvino
def test_fft_types_openvino_refuses_f64_and_so_does_irnorm(tmp_path):
    with pytest.raises(Exception, match="f32, f16, or bf16"):
        op7.dft(_param((3, 2), np.float64, "x"), op1.constant(np.array([0])))
    b = single_op_model("DFT", [("param:x", ((3, 2), "f64")), ("axes", np.array([0], np.int64))],
                        [((3, 2), "f64")], None, version="opset7")
    expect_error(b, tmp_path, "IRN033", "f32, f16 or bf16")


@requires_openvino
@pytest.mark.parametrize("transpose", [False, True])
@pytest.mark.parametrize("shape,wl,fs,step", [((2, 64), 16, 16, 4), ((64,), 7, 11, 3), ((3, 40), 6, 11, 5),
                                              ((2, 10), 3, 10, 3), ((3, 9), 1, 1, 1), ((2, 10), 3, 4, 20)])
def test_stft_matches_openvino(tmp_path, shape, wl, fs, step, transpose):
    """1-D and 2-D signals, a window shorter than the frame (centred), frame_step larger than the signal;
    frame_size and frame_step as constants (static model) or model inputs (dynamic)."""
    rng = np.random.default_rng(wl * 31 + fs)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.uniform(0.1, 1, wl).astype(np.float32)
    for runtime in (False, True):
        xp, wp = _param(shape, np.float32, "x", runtime), _param((wl,), np.float32, "w", runtime)
        feeds = {"x": x, "w": w}
        if runtime:
            f_in, s_in = op1.parameter([], np.int32, name="fs"), op1.parameter([], np.int64, name="st")
            feeds |= {"fs": np.array(fs, np.int32), "st": np.array(step, np.int64)}
            params = [xp, wp, f_in, s_in]
        else:
            f_in, s_in, params = op1.constant(np.int64(fs)), op1.constant(np.int32(step)), [xp, wp]
        node = op15.stft(xp, wp, f_in, s_in, transpose)
        xml = _ov_model(node, params, tmp_path, f"stft{int(runtime)}")
        if not runtime:
            assert irnorm.load(xml).outputs[0].shape == tuple(node.get_output_partial_shape(0).to_shape())
        got = compare_with_openvino(xml, feeds)["y"]
        np.testing.assert_allclose(got, R.stft(x, w, fs, step, transpose), rtol=1e-5, atol=1e-5)


@requires_openvino
def test_stft_f64_computes_in_float64(tmp_path):
    """OpenVINO's CPU plugin accepts f64 STFT but computes in float32; irnorm keeps float64.  (The window is a
    model input: openvino.opset1.constant rounds float64 values to float32.)"""
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 300)), rng.uniform(0.1, 1, 64)
    xp, wp = _param(x.shape, np.float64, "x"), _param(w.shape, np.float64, "w")
    node = op15.stft(xp, wp, op1.constant(np.int64(64)), op1.constant(np.int64(17)), False)
    xml = _ov_model(node, [xp, wp], tmp_path, "stft64")
    got = compare_with_openvino(xml, {"x": x, "w": w}, tol=(1e-5, 1e-5))["y"]
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, R.stft(x, w, 64, 17, False), rtol=1e-12, atol=1e-12)


# ---- the spec where the CPU plugin departs, edge cases -------------------------------------------------------


def _model(kind, shape, axes, sizes, et="f32", out_rank=None, runtime=False, version=None, any_length=False):
    """One FFT layer; with `runtime` axes and sizes are model inputs (of any length with `any_length`)."""
    ins = [("param:x", (shape, et))]
    if runtime:
        ins.append(("param:axes", ((-1 if any_length else len(axes),), "i64")))
        if sizes is not None:
            ins.append(("param:sizes", ((-1 if any_length else len(sizes),), "i64")))
    else:
        ins.append(("axes", np.array(axes, np.int64)))
        if sizes is not None:
            ins.append(("sizes", np.array(sizes, np.int64)))
    rank = out_rank if out_rank is not None else len(shape) + {"RDFT": 1, "IRDFT": -1}.get(kind, 0)
    return single_op_model(kind, ins, [([-1] * rank, et)], None,
                           version=version or ("opset7" if kind in ("DFT", "IDFT") else "opset9"))


def _run(kind, x, axes, sizes, tmp_path, runtime=False, name="m"):
    b = _model(kind, x.shape, axes, sizes, ET[x.dtype], runtime=runtime)
    feeds = {"x": x}
    if runtime:
        feeds["axes"] = np.array(axes, np.int64)
        if sizes is not None:
            feeds["sizes"] = np.array(sizes, np.int64)
    return irnorm.load(b.save(tmp_path, name)).run(feeds)["y"]


SPEC_CASES = [  # where OpenVINO 2026.4's CPU plugin refuses or returns wrong values (docs/ir-format.md)
    ("RDFT", (3, 5, 6), [2, 0], [4, -1]),  # -1: the plugin fails ("cannot create std::vector larger ...")
    ("RDFT", (3, 5, 6), [1], [8]),  # padding: "Signal size greater than input size is not supported yet"
    ("IRDFT", (3, 5, 6, 2), [2], [-1]),  # -1: the plugin fails
    ("IRDFT", (3, 5, 6, 2), [2], [12]),  # the half spectrum needs padding: wrong values
    ("IRDFT", (3, 5, 6, 2), [1, 2], [7, 10]),  # an outer axis padded: uninitialised values
    ("IRDFT", (6, 4, 2, 2), [0, 1, 2], [6, 3, 2]),  # three axes, a cut: wrong values
    ("DFT", (0, 4, 2), [0], [3]),  # an empty dim padded: uninitialised values; the spec gives zeros
    ("IRDFT", (3, 0, 2), [1], [4]),
]


@pytest.mark.parametrize("kind,shape,axes,sizes", SPEC_CASES)
@pytest.mark.parametrize("runtime", [False, True], ids=["const", "runtime"])
def test_spec_cases_against_the_reference_and_numpy(tmp_path, kind, shape, axes, sizes, runtime):
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    got = _run(kind, x, axes, sizes, tmp_path, runtime)
    exp = _expected(kind, x, axes, sizes)
    assert got.shape == exp.shape
    np.testing.assert_allclose(got, exp, rtol=1e-5, atol=1e-5 * max(np.abs(exp).max(initial=0), 1))
    # and numpy's fftn family, which has the same semantics
    r = x.ndim - (0 if kind == "RDFT" else 1)
    ax = [a % r for a in axes]
    s = None
    if kind == "RDFT":
        s = [x.shape[a] if v == -1 else v for a, v in zip(ax, sizes, strict=True)]
        np.testing.assert_allclose(got, _pairs(np.fft.rfftn(x.astype(np.float64), s=s, axes=ax)), atol=1e-5)
    elif kind == "IRDFT" and x.size:
        c = _cplx(x)
        s = [c.shape[a] for a in ax]
        s[-1] = 2 * (s[-1] - 1)
        s = [d if v == -1 else v for d, v in zip(s, sizes, strict=True)]
        np.testing.assert_allclose(got, np.fft.irfftn(c, s=s, axes=ax), atol=1e-5)


def test_irdft_ignores_the_imaginary_part_of_dc_and_nyquist(tmp_path):
    """The output is the real part of the Hermitian-extended inverse: imaginary DC / Nyquist parts drop out."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 2)).astype(np.float32)
    y0 = _run("IRDFT", x, [1], None, tmp_path, name="a")
    x2 = x.copy()
    x2[:, 0, 1] += 3
    x2[:, 4, 1] -= 2
    y1 = _run("IRDFT", x2, [1], None, tmp_path, name="b")
    np.testing.assert_array_equal(y0, y1)
    np.testing.assert_allclose(y0, np.fft.irfft(_cplx(x), axis=-1), atol=1e-6)


def test_round_trips(tmp_path):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 10)).astype(np.float32)
    b = IRBuilder("rt")
    p = b.parameter("x", x.shape)
    ax = b.const(np.array([1, 2], np.int64), "axes")
    (f,) = b.layer("RDFT", [p, ax], [((3, 4, 6, 2), "f32")], None, version="opset9")
    sz = b.const(np.array([4, 10], np.int32), "sizes")
    (y,) = b.layer("IRDFT", [f, ax, sz], [((3, 4, 10), "f32")], None, version="opset9", names=["y"])
    (d,) = b.layer("DFT", [f, ax], [((3, 4, 6, 2), "f32")], None, version="opset7")
    (z,) = b.layer("IDFT", [d, ax], [((3, 4, 6, 2), "f32")], None, version="opset7", names=["z"])
    b.result(y)
    b.result(z)
    out = irnorm.load(b.save(tmp_path)).run({"x": x})
    np.testing.assert_allclose(out["y"], x, atol=1e-5)
    np.testing.assert_allclose(out["z"], R.rdft(x, [1, 2]), atol=1e-5)


def test_empty_and_size_one_axes(tmp_path):
    """Empty data, size-1 axes, signal_size 0, IRDFT of a last dim of 1 (2 (1 - 1) = 0 outputs; OpenVINO's
    CPU plugin crashes there), empty axes for DFT (the identity; the plugin returns uninitialised memory)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 1, 2)).astype(np.float32)
    np.testing.assert_array_equal(_run("DFT", x, [1], None, tmp_path, name="one"), x)
    assert _run("IRDFT", x, [1], None, tmp_path, name="ir1").shape == (3, 0)
    np.testing.assert_allclose(_run("IRDFT", x, [1], [1], tmp_path, name="ir1b"), x[..., :1, 0], atol=1e-7)
    assert _run("DFT", x, [0], [0], tmp_path, name="zero").shape == (0, 1, 2)
    assert _run("RDFT", np.zeros((3, 0), np.float32), [1], None, tmp_path, name="r0").shape == (3, 0, 2)
    assert _run("RDFT", np.ones((0, 4), np.float32), [1], None, tmp_path, name="r0b").shape == (0, 3, 2)
    assert _run("RDFT", np.ones((3, 4), np.float32), [1], [0], tmp_path, name="r0c").shape == (3, 0, 2)
    b = single_op_model("DFT", [("param:x", ((3, 4, 2), "f32")), ("axes", np.zeros(0, np.int64))],
                        [((3, 4, 2), "f32")], None, version="opset7")
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    np.testing.assert_array_equal(irnorm.load(b.save(tmp_path, "noaxes")).run({"x": x})["y"], x)


def test_nan_spreads_through_the_transformed_axes(tmp_path):
    """Every bin of a slice holding a NaN has a NaN part; other slices are untouched.  (Which part: pocketfft
    skips trivial twiddle products, OpenVINO multiplies in full and gives NaN in both; docs/ir-format.md.)"""
    x = np.zeros((2, 4, 2), np.float32)
    x[0, 1, 0] = np.nan
    y = _run("DFT", x, [1], None, tmp_path)
    assert np.isnan(y[0]).any(-1).all() and (y[1] == 0).all()


def test_large_transform_against_numpy(tmp_path):
    x = np.random.default_rng(9).standard_normal((4, 4099)).astype(np.float32)  # a prime-ish length
    y = _run("RDFT", x, [1], None, tmp_path)
    np.testing.assert_allclose(y, _pairs(np.fft.rfft(x.astype(np.float64))).astype(np.float32), rtol=0, atol=1e-4)


# ---- shape inference -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind,shape,axes,sizes,expected", [
    ("DFT", (-1, 5, 6, 2), [1], [3], [-1, 3, 6, 2]),
    ("DFT", (3, -1, 6, 2), [0, 1], [-1, -1], [3, -1, 6, 2]),
    ("RDFT", (3, -1, 7), [-1], None, [3, -1, 4, 2]),
    ("RDFT", (3, -1, 7), [2, 1], [-1, 4], [3, 3, 7, 2]),  # the last axis listed is 1
    ("RDFT", (3, 0), [1], None, [3, 0, 2]),
    ("IRDFT", (3, 5, -1, 2), [2, 1], None, [3, 8, -1]),
    ("IRDFT", (3, 5, 6, 2), [1, 2], [-1, 7], [3, 5, 7]),
    ("IRDFT", (3, 1, 2), [1], None, [3, 0]),
])
def test_declared_shapes(tmp_path, kind, shape, axes, sizes, expected):
    b = _model(kind, shape, axes, sizes)
    assert irnorm.load(b.save(tmp_path)).outputs[0].shape == tuple(expected)


@pytest.mark.parametrize("kind,rank,expected", [("DFT", 4, [-1, -1, -1, 2]), ("RDFT", 3, [-1, -1, -1, 2]),
                                                ("IRDFT", 4, [-1, -1, -1])])
def test_runtime_axes_or_sizes_make_dims_dynamic(tmp_path, kind, rank, expected):
    shape = (3, 5, 6, 2)[:rank] if kind != "RDFT" else (3, 5, 6)
    b = _model(kind, shape, [1, 2], [4, 4], runtime=True)
    m = irnorm.load(b.save(tmp_path))
    assert m.outputs[0].shape == tuple(expected)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y = m.run({"x": x, "axes": np.array([1, 2]), "sizes": np.array([4, 4])})["y"]
    np.testing.assert_allclose(y, _expected(kind, x, [1, 2], [4, 4]), atol=1e-5)


# ---- malformed layers -> coded errors --------------------------------------------------------------------------


@pytest.mark.parametrize("kind,shape,et,axes,sizes,code,fragment", [
    ("DFT", (3, 4, 3), "f32", [0], None, "IRN032", "last dim must be 2"),
    ("DFT", (2,), "f32", [0], None, "IRN032", "rank >= 2"),
    ("IDFT", (3, 4, 2), "i32", [0], None, "IRN033", "f32, f16 or bf16"),
    ("RDFT", (3, 4), "f64", [0], None, "IRN033", "f32, f16 or bf16"),
    ("DFT", (3, 4, 2), "f32", [2], None, "IRN032", "out of range [-2, 1]"),
    ("DFT", (3, 4, 2), "f32", [-3], None, "IRN032", "out of range"),
    ("RDFT", (3, 4), "f32", [2], None, "IRN032", "out of range [-2, 1]"),
    ("IRDFT", (3, 4, 2), "f32", [0, -2], None, "IRN032", "repeated"),
    ("DFT", (3, 4, 2), "f32", [0, 1, 0], None, "IRN032", "3 axes"),
    ("DFT", (3, 4, 2), "f32", [0], [2, 2], "IRN032", "2 values for 1 axes"),
    ("DFT", (3, 4, 2), "f32", [0], [-2], "IRN032", ">= -1"),
    ("RDFT", (3, 4), "f32", [], None, "IRN032", "at least one axis"),
    ("IRDFT", (3, 4, 2), "f32", [], None, "IRN032", "at least one axis"),
])
def test_malformed_fft_layers(tmp_path, kind, shape, et, axes, sizes, code, fragment):
    rank = len(shape) + {"RDFT": 1, "IRDFT": -1}.get(kind, 0)
    ins = [("param:x", (shape, et)), ("axes", np.array(axes, np.int64))]
    if sizes is not None:
        ins.append(("sizes", np.array(sizes, np.int64)))
    b = single_op_model(kind, ins, [([-1] * rank, et)], None, version="opset9")
    expect_error(b, tmp_path, code, fragment)


def test_malformed_index_inputs(tmp_path):
    def model(axes, sizes=None):
        ins = [("param:x", ((3, 4, 2), "f32")), ("axes", axes)] + ([] if sizes is None else [("sizes", sizes)])
        return single_op_model("DFT", ins, [([-1] * 3, "f32")], None, version="opset7")

    expect_error(model(np.array([0], np.int16)), tmp_path, "IRN033", "i32 or i64")
    expect_error(model(np.array([0.0], np.float32)), tmp_path, "IRN033", "i32 or i64")
    expect_error(model(np.array([0], np.int64), np.array([2], np.uint8)), tmp_path, "IRN033", "signal_size")
    expect_error(model(np.array([[0]], np.int64)), tmp_path, "IRN032", "1-D")
    expect_error(model(np.array(0, np.int64)), tmp_path, "IRN032", "1-D")
    expect_error(model(np.array([0], np.int64), np.array(2, np.int64)), tmp_path, "IRN032", "1-D")


@pytest.mark.parametrize("axes,sizes,fragment", [
    ([3], [2], "out of range"), ([0, 0], [2, 2], "repeated"), ([0], [-5], ">= -1"), ([0, 1], [2], "1 values for 2"),
    ([1], [1 << 50], "absurd size"),
])
def test_bad_runtime_axes_and_sizes(tmp_path, axes, sizes, fragment):
    m = irnorm.load(_model("DFT", (3, 4, 2), axes, sizes, runtime=True, any_length=True).save(tmp_path))
    with pytest.raises(irnorm.IrnormError) as e:
        m.run({"x": np.zeros((3, 4, 2), np.float32), "axes": np.array(axes), "sizes": np.array(sizes)})
    d = e.value.diagnostics[0]
    assert d.code == "IRN064" and fragment in d.message, d


def _stft_model(sig, win, fs, step, attrs=None, sig_et="f32", win_et=None, fs_dtype=np.int64):
    ins = [("param:x", (sig, sig_et)), ("param:w", (win, win_et or sig_et))]
    for name, v in (("fs", fs), ("st", step)):
        ins.append((f"param:{name}", ((), "i64")) if v is None else (name, np.asarray(v, fs_dtype)))
    return single_op_model("STFT", ins, [([-1] * (len(sig) + 2), sig_et)],
                           {"transpose_frames": False} if attrs is None else attrs, version="opset15")


@pytest.mark.parametrize("args,code,fragment", [
    (((1, 2, 32), (8,), 8, 2), "IRN032", "1-D [time] or 2-D"),
    (((2, 32), (1, 8), 8, 2), "IRN032", "window must be 1-D"),
    (((2, 32), (8,), [8], 2), "IRN032", "scalar"),
    (((2, 32), (8,), 33, 2), "IRN032", "frame_size 33 must be in [1, 32]"),
    (((2, 32), (8,), 0, 2), "IRN032", "frame_size 0"),
    (((2, 32), (8,), 8, 0), "IRN032", "frame_step 0"),
    (((2, 32), (9,), 8, 2), "IRN032", "window's length 9"),
    (((2, 32), (0,), 8, 2), "IRN032", "window's length 0"),
])
def test_malformed_stft(tmp_path, args, code, fragment):
    expect_error(_stft_model(*args), tmp_path, code, fragment)


def test_malformed_stft_types_and_attribute(tmp_path):
    expect_error(_stft_model((2, 32), (8,), 8, 2, sig_et="i32"), tmp_path, "IRN033", "floating-point")
    expect_error(_stft_model((2, 32), (8,), 8, 2, win_et="f16"), tmp_path, "IRN033", "window")
    expect_error(_stft_model((2, 32), (8,), 8, 2, fs_dtype=np.int16), tmp_path, "IRN033", "i32 or i64")
    expect_error(_stft_model((2, 32), (8,), 8, 2, attrs={}), tmp_path, "IRN020", "transpose_frames")
    expect_error(_stft_model((2, 32), (8,), 8, 2, attrs={"transpose_frames": "yes"}), tmp_path, "IRN021")


@pytest.mark.parametrize("fs,step,sig,win,fragment", [
    (40, 2, (2, 32), (8,), "frame_size 40 must be in [1, 32]"),
    (8, 0, (2, 32), (8,), "frame_step 0"),
    (8, -3, (2, 32), (8,), "frame_step -3"),
    (4, 2, (2, 32), (8,), "window's length 8"),
    (4, 2, (2, 0), (2,), "frame_size 4 must be in [1, 0]"),
])
def test_bad_runtime_stft_sizes(tmp_path, fs, step, sig, win, fragment):
    b = _stft_model((-1, -1), (-1,), None, None)
    m = irnorm.load(b.save(tmp_path))
    assert m.outputs[0].shape == (-1, -1, -1, 2)
    with pytest.raises(irnorm.IrnormError) as e:
        m.run({"x": np.zeros(sig, np.float32), "w": np.ones(win, np.float32), "fs": np.array(fs),
               "st": np.array(step)})
    d = e.value.diagnostics[0]
    assert d.code == "IRN064" and fragment in d.message, d


def test_stft_empty_batch_and_runtime_sizes(tmp_path):
    b = _stft_model((-1, -1), (-1,), None, None, attrs={"transpose_frames": True})
    m = irnorm.load(b.save(tmp_path))
    x = np.random.default_rng(0).standard_normal((2, 30)).astype(np.float32)
    w = np.hanning(7).astype(np.float32)
    y = m.run({"x": x, "w": w, "fs": np.array(10), "st": np.array(3)})["y"]
    np.testing.assert_allclose(y, R.stft(x, w, 10, 3, True), atol=1e-5)
    y = m.run({"x": np.zeros((0, 30), np.float32), "w": w, "fs": np.array(10), "st": np.array(3)})["y"]
    assert y.shape == (0, 6, 7, 2)


# ---- the command line on a file written by openvino.save_model ----------------------------------------------


@requires_openvino
def test_cli_validate_info_run(tmp_path, capsys):
    node, params = _torch_stft_graph()
    xml = _ov_model(node, params, tmp_path, "stft", compress=True)
    for argv in (["validate", xml], ["info", xml], ["run", xml, "-i", f"x={_npy(tmp_path)}"]):
        with pytest.raises(SystemExit) as e:
            main([str(a) for a in argv])
        out, err = capsys.readouterr()
        assert e.value.code == 0, (argv, out, err)
        assert "Traceback" not in out + err
        if argv[0] == "info":
            assert "STFT" in out


def _npy(tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.random.default_rng(0).standard_normal((2, 50)).astype(np.float32))
    return p
