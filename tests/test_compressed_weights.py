"""Compressed weights: Consts of OpenVINO's storage types (u1, u2, u3, u4, u6, i4, nf4, f4e2m1, f8e4m3, f8e5m2,
f8e8m0), as NNCF / OpenVINO weight compression writes them for INT4 / NF4 / FP8 / MXFP4 models, read from the
.bin as OpenVINO packs them and decompressed by their Convert at load -- every code of every type against
OpenVINO's CPU plugin (each file written by openvino.save_model), the group-wise INT4 MatMul pattern of
compressed LLMs, and the files irnorm refuses: a wrong size, a storage-type tensor read by anything but a
Convert, a storage-type model input."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ovutil import HAVE_OPENVINO, OV_CONFIG, assert_close, compare_with_openvino, core, requires_openvino, save

import irnorm
from irnorm.errors import IrnormError
from irnorm.ir.dtypes import NF4_TABLE, STORAGE_TYPES, storage_bytes, unpack_storage

if HAVE_OPENVINO:
    import openvino as ov
    import openvino.opset13 as op

# every code of each type, as the values OpenVINO's Constant is built from (it encodes them back to the codes)
_F8 = {"f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2, "f8e8m0": ml_dtypes.float8_e8m0fnu,
       "f4e2m1": ml_dtypes.float4_e2m1fn}


def _all_codes(t: str) -> list[float]:
    bits = STORAGE_TYPES[t][0]
    if t == "i4":
        return list(range(-8, 8))
    if t == "nf4":
        return [float(v) for v in NF4_TABLE]
    if t in _F8:
        codes = np.arange(1 << bits, dtype=np.uint8)
        return [float(v) for v in codes.view(_F8[t])]
    return list(range(1 << bits))


def _decompress_model(t: str, values: list[float], dst: str, shape: list[int]):
    c = ov.op.Constant(getattr(ov.Type, t), ov.Shape(shape), values)
    p = op.parameter(shape, getattr(ov.Type, dst), name="x")
    y = op.add(op.convert(c, dst), p)
    y.output(0).get_tensor().set_names({"y"})
    return ov.Model([op.result(y)], [p], f"{t}_{dst}")


@requires_openvino
@pytest.mark.parametrize("t", sorted(STORAGE_TYPES))
@pytest.mark.parametrize("dst", ["f32", "f16"])
def test_every_code_decompresses_as_openvino(tmp_path, t, dst):
    """Every code of the type, in a shuffled order and an odd count (a partly filled last byte / group),
    through Convert to f32 and f16: bit for bit OpenVINO's values (NaN and inf codes included)."""
    rng = np.random.default_rng(len(t))
    codes = _all_codes(t)
    values = [codes[i] for i in rng.permutation(len(codes))] + codes[: 3]  # odd length: a partial last group
    xml = save(_decompress_model(t, values, dst, [len(values)]), tmp_path, f"{t}_{dst}")
    x = np.zeros(len(values), np.float32 if dst == "f32" else np.float16)
    got = compare_with_openvino(xml, {"x": x}, tol=(0.0, 0.0))["y"]
    assert np.isnan(got).sum() == sum(1 for v in values if np.isnan(v))  # NaN codes stay NaN (equal_nan above)


@requires_openvino
@pytest.mark.parametrize("t", ["u4", "i4", "nf4", "f8e4m3"])
def test_packed_bytes_are_openvinos(tmp_path, t):
    """The bytes OpenVINO's writer put in the .bin unpack to the codes irnorm decodes: the Const's value is
    read from those bytes only (size as the writer gives it)."""
    values = _all_codes(t)[:13]
    xml = save(_decompress_model(t, values, "f32", [13]), tmp_path, t)
    raw = np.fromfile(xml.with_suffix(".bin"), np.uint8)
    assert raw.size == storage_bytes(t, 13)
    decoded = unpack_storage(t, raw, 13).astype(np.float32)
    np.testing.assert_array_equal(decoded, np.asarray(values, np.float32).astype(STORAGE_TYPES[t][1])
                                  .astype(np.float32) if t in _F8 else np.asarray(values, np.float32))


@requires_openvino
@pytest.mark.parametrize("t,sym", [("u4", False), ("i4", True), ("u8", False), ("nf4", True), ("f8e4m3", True)])
@pytest.mark.parametrize("dynamic", [False, True])
def test_groupwise_compressed_matmul(tmp_path, t, sym, dynamic):
    """The pattern of a weight-compressed LLM's linear layer (NNCF group-wise): W [O, G, gs] in the storage type
    -> Convert f16 (- zero point Convert f16) * scale f16 [O, G, 1] -> Reshape [O, G * gs] -> Convert f32 ->
    MatMul(x, W, transpose_b).  Against OpenVINO (its CPU plugin runs such a model with its own
    weight-compressed kernels; f32 tolerance), static and dynamic tokens."""
    rng = np.random.default_rng(7)
    o, g, gs, k_tokens = 24, 4, 16, 5
    codes = np.asarray(_all_codes(t) if t != "u8" else range(256), np.float64)
    w_codes = codes[rng.integers(0, len(codes), (o, g, gs))]
    if t.startswith("f8"):
        w_codes = np.where(np.isfinite(w_codes), w_codes, 1.0)  # no NaN weights
    w = ov.op.Constant(getattr(ov.Type, t), ov.Shape([o, g, gs]), [float(v) for v in w_codes.reshape(-1)])
    dq = op.convert(w, "f16")
    if not sym:
        zp_codes = rng.integers(0, 16, (o, g, 1))
        zp = ov.op.Constant(getattr(ov.Type, t), ov.Shape([o, g, 1]), [int(v) for v in zp_codes.reshape(-1)])
        dq = op.subtract(dq, op.convert(zp, "f16"))
    scale = op.constant((rng.uniform(0.5, 2.0, (o, g, 1)) / 16).astype(np.float16))
    dq = op.multiply(dq, scale)
    dq = op.reshape(dq, op.constant(np.array([o, g * gs], np.int64)), False)
    dq = op.convert(dq, "f32")
    p = op.parameter([-1 if dynamic else k_tokens, g * gs], np.float32, name="x")
    y = op.matmul(p, dq, False, True)
    y.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([op.result(y)], [p], "wc"), tmp_path, f"wc_{t}")
    x = rng.standard_normal((k_tokens, g * gs)).astype(np.float32)
    got = irnorm.load(xml).run({"x": x})["y"]
    # OpenVINO's CPU plugin, without its default dynamic quantization of the activations of weight-compressed
    # MatMuls (int8 activations: ~1e-3 relative error, an approximation of the model, not its semantics)
    compiled = core().compile_model(str(xml), "CPU", OV_CONFIG | {"DYNAMIC_QUANTIZATION_GROUP_SIZE": "0"})
    expected = next(iter(compiled({"x": x}).values()))
    assert got.dtype == expected.dtype == np.float32
    assert_close(got, expected, "wc", (1e-5, 1e-6))
    # and the float64 oracle: the decompression without rounding to f16 (as the plugin computes it)
    wd = (w_codes if sym else w_codes - zp_codes) * np.asarray(scale.get_data(), np.float64)
    ref = x.astype(np.float64) @ wd.reshape(o, g * gs).T
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())
    # not the f16-rounded products the graph's f16 Subtract / Multiply would give (~1e-3 away): what is tested
    rounded = x.astype(np.float64) @ (wd.astype(np.float16).astype(np.float64).reshape(o, g * gs).T)
    assert np.abs(rounded - ref).max() > 1e2 * np.abs(got - ref).max()


@requires_openvino
def test_wrong_size_is_refused(tmp_path):
    """A u4 Const whose size is not what its shape packs into: IRN042, naming the bytes needed."""
    xml = save(_decompress_model("u4", list(range(13)), "f32", [13]), tmp_path, "u4")
    text = xml.read_text()
    assert 'size="7"' in text
    xml.write_text(text.replace('size="7"', 'size="6"'))
    with pytest.raises(IrnormError) as e:
        irnorm.load(xml)
    d = e.value.diagnostics[0]
    assert d.code == "IRN042" and "needs 7 bytes" in d.message


@requires_openvino
def test_storage_type_read_by_another_op_is_refused(tmp_path):
    """A u4 Const read by anything but a Convert (here a Reshape before the Convert): IRN043 at that layer, naming
    the rule -- irnorm computes with no storage type; a u4 model input: IRN043 too."""
    c = ov.op.Constant(ov.Type.u4, ov.Shape([4]), [1, 2, 3, 4])
    p = op.parameter([2, 2], np.float32, name="x")
    y = op.add(op.convert(op.reshape(c, op.constant(np.array([2, 2], np.int64)), False), "f32"), p)
    y.output(0).get_tensor().set_names({"y"})
    xml = save(ov.Model([op.result(y)], [p], "bad"), tmp_path, "bad")
    with pytest.raises(IrnormError) as e:
        irnorm.load(xml)
    d = e.value.diagnostics[0]
    assert (d.code, d.layer_type) == ("IRN043", "Reshape") and "u4 only as constant weights that a Convert" in d.message
    q = op.parameter([4], ov.Type.u4, name="q")
    z = op.convert(q, "f32")
    z.output(0).get_tensor().set_names({"z"})
    xml = save(ov.Model([op.result(z)], [q], "bad_input"), tmp_path, "bad_input")
    with pytest.raises(IrnormError) as e:
        irnorm.load(xml)
    assert [(d.code, d.layer_type) for d in e.value.diagnostics] == [("IRN043", "Parameter")]


def test_unpack_matches_the_documented_packing():
    """docs/ir-format.md section 8's examples, byte for byte."""
    np.testing.assert_array_equal(unpack_storage("u1", np.array([0xb1, 0xc0], np.uint8), 10),
                                  [1, 0, 1, 1, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(unpack_storage("u4", np.array([0x21, 0xf3, 0x07], np.uint8), 5), [1, 2, 3, 15, 7])
    assert unpack_storage("i4", np.array([0x08], np.uint8), 1)[0] == -8
    assert unpack_storage("nf4", np.array([0xf7], np.uint8), 2).tolist() == [0.0, 1.0]
    # u3: bytes 0-1 the low 2 bits MSB-first, byte 2 the third bit; u6: low nibbles high-first, top bits in byte 2
    np.testing.assert_array_equal(unpack_storage("u3", np.array([0x09, 0x92, 0xb9], np.uint8), 6), [4, 0, 6, 5, 6, 1])
    np.testing.assert_array_equal(unpack_storage("u6", np.array([0xdf, 0x3e, 0x7f], np.uint8), 4), [29, 63, 51, 62])
    assert storage_bytes("u3", 13) == 6 and storage_bytes("u6", 13) == 12 and storage_bytes("u4", 13) == 7
