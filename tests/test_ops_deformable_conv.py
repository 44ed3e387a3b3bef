"""DeformableConvolution-1/8 against OpenVINO's CPU plugin (skipped without OpenVINO) and the float64
reference: random shapes and attributes (groups, deformable groups, strides, dilations, padding, auto_pad,
masks, both bilinear_interpolation_pad modes), offsets pushing samples outside the image and onto its
borders, NaN/inf, f16/bf16/f64, dynamic dims, the tiled and parallel paths of the Numba kernel, and
malformed layers or inputs -> coded errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import expect_error, single_op_model
from ovutil import HAVE_OPENVINO, compare_with_openvino, requires_openvino, save

import irnorm
from irnorm import reference as R
from irnorm.errors import InputError

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset8 as op8

BF16 = np.dtype(ml_dtypes.bfloat16)


def _out_hw(hw, k, s, d, pb, pe):
    return tuple((hw[i] + pb[i] + pe[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))


def _draw(rng, *, mask=None, dtype=np.float32, spread=2.0):
    """One random case: (inputs dict, attrs)."""
    g, dg = int(rng.integers(1, 3)), int(rng.integers(1, 4))
    c = int(np.lcm(g, dg)) * int(rng.integers(1, 3))  # divisible by both
    og = int(rng.integers(1, 4))
    kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    s = [int(v) for v in rng.integers(1, 3, 2)]
    d = [int(v) for v in rng.integers(1, 3, 2)]
    pb = [int(v) for v in rng.integers(0, 3, 2)]
    pe = [int(v) for v in rng.integers(0, 3, 2)]
    hw = [int(rng.integers(d[0] * (kh - 1) + 1, d[0] * (kh - 1) + 7)), int(rng.integers(d[1] * (kw - 1) + 1,
                                                                                        d[1] * (kw - 1) + 7))]
    auto_pad = str(rng.choice(["explicit", "explicit", "valid", "same_upper", "same_lower"]))
    if auto_pad in ("same_upper", "same_lower"):
        oh, ow = -(-hw[0] // s[0]), -(-hw[1] // s[1])
    elif auto_pad == "valid":
        oh, ow = _out_hw(hw, (kh, kw), s, d, (0, 0), (0, 0))
    else:
        oh, ow = _out_hw(hw, (kh, kw), s, d, pb, pe)
    n = int(rng.integers(1, 3))
    x = (rng.standard_normal((n, c) + tuple(hw))).astype(dtype)
    off = (rng.standard_normal((n, 2 * dg * kh * kw, oh, ow)) * spread).astype(dtype)
    w = rng.standard_normal((g * og, c // g, kh, kw)).astype(dtype)
    use_mask = bool(rng.integers(2)) if mask is None else mask
    ins = {"x": x, "off": off, "w": w}
    if use_mask:
        ins["mask"] = rng.uniform(0, 1, (n, dg * kh * kw, oh, ow)).astype(dtype)
    attrs = dict(strides=s, pads_begin=pb, pads_end=pe, dilations=d, auto_pad=auto_pad, group=g,
                 deformable_group=dg, bilinear_interpolation_pad=bool(rng.integers(2)))
    return ins, attrs


def _reference(ins, a, version=8):
    return R.deformable_convolution(ins["x"], ins["off"], ins["w"], ins.get("mask"), a["strides"], a["pads_begin"],
                                    a["pads_end"], a["dilations"], a["auto_pad"], a["group"], a["deformable_group"],
                                    version == 8 and a["bilinear_interpolation_pad"], a["group"] == 1)


def _ov_model(ins, a, tmp_path, name, *, dynamic=False, const_w=True, version=8):
    def param(key):
        arr = ins[key]
        et = ov.Type.bf16 if arr.dtype == BF16 else arr.dtype
        shape = ov.PartialShape([-1] * 4) if dynamic else ov.PartialShape(list(arr.shape))
        return op1.parameter(shape, et, name=key)

    x, off = param("x"), param("off")
    params = [x, off]
    if const_w:
        w = op1.constant(ins["w"].view(np.uint16), ov.Type.bf16) if ins["w"].dtype == BF16 else op1.constant(ins["w"])
    else:
        w = param("w")
        params.append(w)
    args = (a["strides"], a["pads_begin"], a["pads_end"], a["dilations"])
    if version == 1:
        node = op1.deformable_convolution(x, off, w, *args, a["auto_pad"], a["group"], a["deformable_group"])
    else:
        m = None
        if "mask" in ins:
            m = param("mask")
            params.append(m)
        node = op8.deformable_convolution(x, off, w, *args, m, a["auto_pad"], a["group"], a["deformable_group"],
                                          a["bilinear_interpolation_pad"])
    node.output(0).get_tensor().set_names({"y"})
    return save(ov.Model([op1.result(node)], params, name), tmp_path, name)


def _feeds(ins, const_w=True):
    return {k: v for k, v in ins.items() if not (const_w and k == "w")}


# ---- against OpenVINO ------------------------------------------------------------------------------------


@requires_openvino
@pytest.mark.parametrize("seed", range(16))
def test_matches_openvino(tmp_path, seed):
    rng = np.random.default_rng(seed)
    ins, a = _draw(rng, spread=float(rng.choice([0.5, 2.0, 5.0])))
    dynamic = seed % 3 == 1
    const_w = seed % 4 != 3
    xml = _ov_model(ins, a, tmp_path, f"dc{seed}", dynamic=dynamic, const_w=const_w)
    got = compare_with_openvino(xml, _feeds(ins, const_w))
    np.testing.assert_allclose(got["y"], _reference(ins, a), rtol=2e-5, atol=2e-5 * max(1, np.abs(got["y"]).max()))


@requires_openvino
@pytest.mark.parametrize("seed", range(4))
def test_version1_matches_openvino(tmp_path, seed):
    rng = np.random.default_rng(100 + seed)
    ins, a = _draw(rng, mask=False)
    xml = _ov_model(ins, a, tmp_path, f"dc1_{seed}", version=1, dynamic=seed % 2 == 1)
    got = compare_with_openvino(xml, _feeds(ins))
    np.testing.assert_allclose(got["y"], _reference(ins, a, version=1), rtol=2e-5,
                               atol=2e-5 * max(1, np.abs(got["y"]).max()))


@requires_openvino
@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float64])
def test_other_float_types_match_openvino(tmp_path, dtype):
    rng = np.random.default_rng(7)
    for k in range(2):
        ins, a = _draw(rng, dtype=dtype, mask=bool(k))
        got = compare_with_openvino(_ov_model(ins, a, tmp_path, f"t{k}"), _feeds(ins))
        assert got["y"].dtype == dtype


@requires_openvino
@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("group", [1, 2])
def test_border_positions_match_openvino(tmp_path, pad, group):
    """Samples exactly on, just inside and just outside every border, and between the last row/column and
    the edge (held there without the pad flag, blended with zeros with it); the (y, x) channel order."""
    rng = np.random.default_rng(3 + group)
    h, w = 4, 5
    x = rng.standard_normal((1, 2 * group, h, w)).astype(np.float32)
    vals = np.array([-1.5, -1.0, -0.999, -0.5, -1e-7, 0.0, 0.5, 2.0, 3.0, 3.25, 3.999, 4.0, 4.5, 5.0, 5.5],
                    np.float32)
    off = np.zeros((1, 2, h, w), np.float32)  # 1x1 kernel: the position is the pixel plus the offset
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    off[0, 0] = rng.choice(vals, (h, w)) - yy
    off[0, 1] = rng.choice(vals, (h, w)) - xx
    ins = {"x": x, "off": off, "w": rng.standard_normal((2 * group, 2, 1, 1)).astype(np.float32)}
    a = dict(strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], auto_pad="explicit", group=group,
             deformable_group=1, bilinear_interpolation_pad=pad)
    got = compare_with_openvino(_ov_model(ins, a, tmp_path, "border"), _feeds(ins))
    np.testing.assert_allclose(got["y"], _reference(ins, a), rtol=1e-6, atol=1e-6)
    # swapping the offsets' channels changes the result: the order is (y, x)
    swapped = dict(ins, off=np.ascontiguousarray(off[:, ::-1]))
    assert not np.allclose(_reference(swapped, a), got["y"])


def _nan_case(rng, group, pad):
    x = rng.standard_normal((1, 2 * group, 5, 5)).astype(np.float32)
    x[0, :, 1, 2] = np.nan
    off = np.round(rng.standard_normal((1, 18, 5, 5)) * 2).astype(np.float32)
    off[0, 1::2, :, 3:] += 0.5  # some fractional columns
    off[0, 0, 2, 2] = np.nan  # a NaN row offset
    off[0, 1, 2, 2] = 0.25  # ... whose column lies inside
    off[0, 2, 3, 1] = np.nan
    off[0, 3, 3, 1] = 50.0  # ... whose column lies outside: skipped by both rules
    off[0, 5, 0, 0] = np.inf
    off[0, 6, 4, 4] = -np.inf
    mask = rng.uniform(0, 1, (1, 9, 5, 5)).astype(np.float32)
    mask[0, 7, 1, 1] = np.nan
    ins = {"x": x, "off": off, "w": rng.standard_normal((2 * group, 2, 3, 3)).astype(np.float32), "mask": mask}
    a = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], auto_pad="explicit", group=group,
             deformable_group=1, bilinear_interpolation_pad=pad)
    return ins, a


@requires_openvino
@pytest.mark.parametrize("pad", [False, True])
@pytest.mark.parametrize("group", [1, 2])
def test_nan_and_inf_match_openvino(tmp_path, pad, group):
    """NaN data at corners of zero weight (integer positions) is not read; NaN data elsewhere, a NaN mask
    and inf offsets as the plugin computes them; NaN offsets with the pad flag (not sampled).  (Without the
    pad flag the CPU plugin samples a NaN position at an index computed from INT_MIN: a NaN result or a
    crash, so NaN offsets are not fed to it there; test_nan_offsets_without_pad_flag.)"""
    ins, a = _nan_case(np.random.default_rng(11 + group + 2 * pad), group, pad)
    if not pad:
        ins["off"] = np.where(np.isnan(ins["off"]), np.float32(0.75), ins["off"])
    got = compare_with_openvino(_ov_model(ins, a, tmp_path, "nan"), _feeds(ins))
    ref = _reference(ins, a)
    assert np.array_equal(np.isnan(got["y"]), np.isnan(ref)) and np.isnan(ref).any()
    np.testing.assert_allclose(got["y"], ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pad", [False, True])
def test_nan_offsets_without_pad_flag(tmp_path, pad):
    """A NaN row offset whose column lies inside: NaN at that output pixel without the pad flag (what the
    CPU plugin computes when it does not crash), no contribution with it; with the column outside: none."""
    ins, a = _nan_case(np.random.default_rng(4), 1, pad)
    ins["x"] = np.nan_to_num(ins["x"])
    ins["mask"] = np.nan_to_num(ins["mask"])
    got = _ir(ins, a, tmp_path).run({k: v for k, v in ins.items() if k != "w"})["y"]
    ref = _reference(ins, a)
    assert np.isnan(got[0, :, 2, 2]).all() != pad and np.isnan(got).sum() == (0 if pad else got.shape[1])
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@requires_openvino
@pytest.mark.parametrize("group", [1, 2])
def test_negative_zero_weights_match_openvino(tmp_path, group):
    """A negative mask makes the weights of a position's unused corners -0.0: the plugin's JIT path (one
    group) reads them (inf data there gives NaN), its reference path (groups) does not."""
    x = np.ones((1, 2 * group, 3, 3), np.float32)
    x[0, :, 2, :] = np.inf
    ins = {"x": x, "off": np.zeros((1, 2, 3, 3), np.float32), "w": np.ones((2 * group, 2, 1, 1), np.float32),
           "mask": -np.ones((1, 1, 3, 3), np.float32)}
    a = dict(strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], auto_pad="explicit", group=group,
             deformable_group=1, bilinear_interpolation_pad=False)
    got = compare_with_openvino(_ov_model(ins, a, tmp_path, "negzero"), _feeds(ins))
    row = got["y"][0, 0, 2]  # the inf row: its -0.0-weighted second corner is the same row
    assert np.isnan(row).all() if group == 1 else (row == -np.inf).all()
    assert (got["y"][0, :, :2] == -2).all()


# ---- against the float64 reference -----------------------------------------------------------------------


def _ir(ins, a, tmp_path, name="m", *, dynamic=False, version=8):
    """The layer written by irbuilder (model inputs x, off and mask; the filters a Const)."""
    et = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16", np.dtype(np.float64): "f64", BF16: "bf16",
          np.dtype(np.int32): "i32"}
    t = et[ins["x"].dtype]
    src = [("param:x", ((-1,) * 4 if dynamic else ins["x"].shape, t)),
           ("param:off", ((-1,) * 4 if dynamic else ins["off"].shape, t)), ("w", ins["w"])]
    if "mask" in ins:
        src.append(("param:mask", ((-1,) * 4 if dynamic else ins["mask"].shape, et[ins["mask"].dtype])))
    attrs = dict(a)
    if version == 1:
        attrs.pop("bilinear_interpolation_pad")
    ref_shape = _reference(ins, a, version).shape
    out = (-1, ins["w"].shape[0], -1, -1) if dynamic else ref_shape
    b = single_op_model("DeformableConvolution", src, [(out, t)], attrs, version=f"opset{version}")
    return irnorm.load(b.save(tmp_path, name))


@pytest.mark.parametrize("seed", range(12))
def test_matches_reference(tmp_path, seed):
    rng = np.random.default_rng(1000 + seed)
    ins, a = _draw(rng, spread=float(rng.choice([1.0, 4.0, 20.0])), dtype=(np.float32, np.float64)[seed % 2])
    got = _ir(ins, a, tmp_path, dynamic=seed % 3 == 0).run({k: v for k, v in ins.items() if k != "w"})["y"]
    tol = 1e-5 if seed % 2 == 0 else 1e-11
    ref = _reference(ins, a)
    np.testing.assert_allclose(got, ref, rtol=tol, atol=tol * max(1, np.abs(ref).max()))


def test_large_case_uses_threads_and_tiles(tmp_path, monkeypatch):
    """An image larger than the column budget (tiles of pixels), the parallel sampling pass and a GEMM large
    enough for column blocks: the same as the reference."""
    from irnorm.kernels import deformable

    monkeypatch.setattr(deformable, "COL_BUDGET", 1 << 12)
    rng = np.random.default_rng(5)
    ins = {"x": rng.standard_normal((2, 8, 20, 23)).astype(np.float32),
           "off": (rng.standard_normal((2, 2 * 2 * 9, 20, 23)) * 3).astype(np.float32),
           "w": rng.standard_normal((16, 8, 3, 3)).astype(np.float32),
           "mask": rng.uniform(-0.5, 1.5, (2, 2 * 9, 20, 23)).astype(np.float32)}
    a = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1], auto_pad="explicit", group=1,
             deformable_group=2, bilinear_interpolation_pad=True)
    got = _ir(ins, a, tmp_path).run({k: v for k, v in ins.items() if k != "w"})["y"]
    ref = _reference(ins, a)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


def test_integer_mask_and_empty_data(tmp_path):
    """A mask of an integer type (OpenVINO takes any numeric one); data with no rows, padded to an output
    whose every sample lies outside: zeros."""
    rng = np.random.default_rng(9)
    ins = {"x": rng.standard_normal((1, 2, 4, 4)).astype(np.float32),
           "off": rng.standard_normal((1, 8, 3, 3)).astype(np.float32),
           "w": rng.standard_normal((3, 2, 2, 2)).astype(np.float32),
           "mask": rng.integers(-1, 3, (1, 4, 3, 3)).astype(np.int32)}
    a = dict(strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1], auto_pad="explicit", group=1,
             deformable_group=1, bilinear_interpolation_pad=False)
    got = _ir(ins, a, tmp_path, "intmask").run({k: v for k, v in ins.items() if k != "w"})["y"]
    np.testing.assert_allclose(got, _reference(ins, a), rtol=1e-5, atol=1e-5)
    empty = {"x": np.zeros((1, 2, 0, 3), np.float32), "off": np.ones((1, 2, 2, 3), np.float32),
             "w": np.ones((2, 2, 1, 1), np.float32)}
    a0 = dict(a, pads_begin=[1, 0], pads_end=[1, 0])
    got = _ir(empty, a0, tmp_path, "empty").run({k: v for k, v in empty.items() if k != "w"})["y"]
    assert got.shape == (1, 2, 2, 3) and not got.any()


def test_version1_has_no_mask_or_pad_attribute(tmp_path):
    rng = np.random.default_rng(2)
    ins, a = _draw(rng, mask=False)
    got = _ir(ins, a, tmp_path, "v1", version=1).run({k: v for k, v in ins.items() if k != "w"})["y"]
    np.testing.assert_allclose(got, _reference(ins, a, 1), rtol=1e-5, atol=1e-5 * max(1, np.abs(got).max()))
    src = [("param:x", ((1, 2, 4, 4), "f32")), ("param:off", ((1, 2, 4, 4), "f32")), ("w", np.ones((2, 2, 1, 1))),
           ("param:mask", ((1, 1, 4, 4), "f32"))]
    attrs = dict(strides=[1, 1], pads_begin=[0, 0], pads_end=[0, 0], dilations=[1, 1])
    b = single_op_model("DeformableConvolution", src, [((1, 2, 4, 4), "f32")], attrs, version="opset1")
    expect_error(b, tmp_path, "IRN017")


# ---- malformed layers and inputs ----------------------------------------------------------------------------


def _layer(xs=(1, 4, 5, 5), offs=(1, 18, 5, 5), ws=(4, 4, 3, 3), ms=None, attrs=None, ets=("f32",) * 4,
           version="opset8"):
    a = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1])
    a.update(attrs or {})
    src = [("param:x", (xs, ets[0])), ("param:off", (offs, ets[1])), ("param:w", (ws, ets[2]))]
    if ms is not None:
        src.append(("param:mask", (ms, ets[3])))
    return single_op_model("DeformableConvolution", src, [((1, 4, 5, 5), ets[0])], a, version=version)


MALFORMED = [
    (dict(xs=(1, 4, 5)), "IRN032", "data (input 0) must be 4-D"),
    (dict(offs=(1, 18, 5, 5, 1)), "IRN032", "offsets (input 1) must be 4-D"),
    (dict(ws=(4, 4, 3)), "IRN032", "filters (input 2) must be 4-D"),
    (dict(ms=(1, 9, 5)), "IRN032", "mask (input 3) must be 4-D"),
    (dict(xs=(1, 3, 5, 5), ws=(4, 3, 3, 3), attrs={"group": 2}), "IRN032", "not divisible by group=2"),
    (dict(ws=(3, 2, 3, 3), attrs={"group": 2}), "IRN032", "C_out=3 channels, not divisible by group=2"),
    (dict(ws=(4, 3, 3, 3)), "IRN032", "expect 3*1 = 3"),
    (dict(xs=(1, 3, 5, 5), ws=(4, 3, 3, 3), offs=(1, 36, 5, 5), attrs={"deformable_group": 2}), "IRN032",
     "not divisible by deformable_group=2"),
    (dict(offs=(1, 16, 5, 5)), "IRN032", "expected 2*deformable_group*kh*kw = 2*1*3*3 = 18"),
    (dict(offs=(1, 18, 5, 5), attrs={"deformable_group": 2}), "IRN032", "= 36"),
    (dict(ms=(1, 18, 5, 5)), "IRN032", "expected deformable_group*kh*kw = 1*3*3 = 9"),
    (dict(offs=(2, 18, 5, 5)), "IRN032", "disagree on the batch"),
    (dict(ms=(2, 9, 5, 5)), "IRN032", "disagree on the batch"),
    (dict(offs=(1, 18, 4, 5)), "IRN032", "offsets [1,18,4,5] has spatial dims"),
    (dict(ms=(1, 9, 5, 6)), "IRN032", "mask [1,9,5,6] has spatial dims"),
    (dict(ws=(4, 4, 9, 9), offs=(1, 162, 5, 5)), "IRN032", "larger than the padded input"),
    (dict(attrs={"strides": [1, 1, 1]}), "IRN032", "strides has 3 values"),
    (dict(attrs={"strides": [0, 1]}), "IRN023", "strides"),
    (dict(attrs={"group": 0}), "IRN023", "group"),
    (dict(attrs={"deformable_group": -1}), "IRN023", "deformable_group"),
    (dict(attrs={"bilinear_interpolation_pad": "maybe"}), "IRN021", "bool"),
    (dict(ets=("i32", "i32", "i32", "i32")), "IRN033", "floating-point"),
    (dict(ets=("f32", "f16", "f32", "f32")), "IRN033", "offsets (input 1)"),
    (dict(ets=("f32", "f32", "f64", "f32")), "IRN033", "filters (input 2)"),
    (dict(ms=(1, 9, 5, 5), ets=("f32", "f32", "f32", "boolean")), "IRN033", "mask (input 3)"),
]


@pytest.mark.parametrize("kw,code,fragment", MALFORMED)
def test_malformed_layer(tmp_path, kw, code, fragment):
    expect_error(_layer(**kw), tmp_path, code, fragment)


@pytest.mark.parametrize("feeds,fragment", [
    (dict(x=(1, 4, 5, 5), off=(1, 18, 4, 5), mask=(1, 9, 5, 5)), "offsets [1,18,4,5] has spatial dims"),
    (dict(x=(1, 4, 5, 5), off=(1, 16, 5, 5), mask=(1, 9, 5, 5)), "2*deformable_group*kh*kw"),
    (dict(x=(2, 4, 5, 5), off=(1, 18, 5, 5), mask=(2, 9, 5, 5)), "disagree on the batch"),
    (dict(x=(1, 3, 5, 5), off=(1, 18, 5, 5), mask=(1, 9, 5, 5)), "expect 4*1 = 4"),
    (dict(x=(1, 4, 5, 5), off=(1, 18, 5, 5), mask=(1, 9, 6, 5)), "mask [1,9,6,5]"),
    (dict(x=(1, 4, 1, 1), off=(1, 18, 5, 5), mask=(1, 9, 5, 5)), "spatial dims"),
])
def test_runtime_shape_mismatch_is_coded(tmp_path, feeds, fragment):
    src = [("param:x", ((-1,) * 4, "f32")), ("param:off", ((-1,) * 4, "f32")), ("w", np.ones((4, 4, 3, 3), np.float32)),
           ("param:mask", ((-1,) * 4, "f32"))]
    attrs = dict(strides=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], dilations=[1, 1])
    b = single_op_model("DeformableConvolution", src, [((-1, 4, -1, -1), "f32")], attrs, version="opset8")
    m = irnorm.load(b.save(tmp_path, "dyn"))
    with pytest.raises(InputError) as e:
        m.run({k: np.zeros(s, np.float32) for k, s in feeds.items()})
    assert e.value.code == "IRN064" and fragment in str(e.value)
