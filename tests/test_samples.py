"""Every sample IR (written by OpenVINO, see tools/make_samples.py) validates and runs,
and its outputs match what OpenVINO's CPU plugin computed for the same inputs."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SAMPLES, load_npz, sample_names

import irnorm

# Tolerances per output dtype: OpenVINO CPU (f32 inference precision) vs irnorm.
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-9, 1e-9), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}


def _inputs(name: str, model: irnorm.api) -> dict:
    feeds = load_npz(SAMPLES / "data" / f"{name}.inputs.npz")
    for spec in model.inputs:
        if spec.element_type == "bf16" and spec.name in feeds and feeds[spec.name].dtype.kind in "uV":
            feeds[spec.name] = feeds[spec.name].view(spec.dtype)
    return feeds


@pytest.mark.parametrize("name", sample_names())
def test_sample_validates(name):
    diags = irnorm.validate(SAMPLES / "ir" / f"{name}.xml")
    assert all(d.severity == "warning" for d in diags)


@pytest.mark.parametrize("name", sample_names())
def test_sample_matches_openvino(name):
    m = irnorm.load(SAMPLES / "ir" / f"{name}.xml")
    expected = load_npz(SAMPLES / "data" / f"{name}.expected.npz")
    out = m.run(_inputs(name, m))
    assert list(out) == list(expected), "output names and order must match OpenVINO's"
    assert [s.name for s in m.outputs] == list(expected)
    for k, exp in expected.items():
        got = out[k]
        assert got.shape == exp.shape
        assert got.dtype == exp.dtype, (k, got.dtype, exp.dtype)
        rtol, atol = TOL[got.dtype.name]
        np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol)


def test_compressed_and_uncompressed_agree_within_fp16_weight_error():
    x = load_npz(SAMPLES / "data" / "group_norm.inputs.npz")
    a = irnorm.load(SAMPLES / "ir" / "group_norm.xml").run(x)["y"]
    b = irnorm.load(SAMPLES / "ir" / "group_norm_f32w.xml").run(x)["y"]
    assert not np.array_equal(a, b)  # the f16 weights really are different numbers
    np.testing.assert_allclose(a, b, rtol=0, atol=5e-3 * np.abs(b).max())


def test_the_generators_npz_writer_keeps_0d_arrays_and_is_reproducible(tmp_path):
    """tools/ writes .npz files with np.savez: a 0-d array stays 0-d (the hand-written writer it
    replaced turned it into shape (1,)), and the same arrays give the same bytes (a fixed timestamp)."""
    import time

    arrays = {"scalar": np.array(2.5, np.float32), "axes": np.array([], np.int64), "x": np.ones((2, 3), np.float16)}
    np.savez(tmp_path / "a.npz", **arrays)
    time.sleep(2.1)  # zip timestamps have a 2 s resolution
    np.savez(tmp_path / "b.npz", **arrays)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    back = load_npz(tmp_path / "a.npz")
    assert {k: (v.shape, v.dtype) for k, v in back.items()} == {k: (v.shape, v.dtype) for k, v in arrays.items()}
