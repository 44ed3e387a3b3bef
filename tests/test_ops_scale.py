"""Scale (irnorm1 extension, TensorRT IScaleLayer): the spec's two worked examples exactly, random
modes/axes/dtypes/coefficients against the float64 reference, int8 rounding and saturation, and
every rule as a malformed-IR test."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from irbuilder import expect_error, run_model, single_op_model

import irnorm
from irnorm import reference as R

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16, "i8": np.dtype(np.int8)}
EMPTY = np.zeros(0, np.float32)


def scale_model(x_shape, et, coeffs, attrs, coeff_params=False):
    ins = [("param:x", (x_shape, et))]
    for name, c in zip(("scale", "shift", "power"), coeffs, strict=True):
        ins.append((f"param:{name}", (c.shape, {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16",
                                                BF16: "bf16"}[c.dtype])) if coeff_params else (name, c))
    return single_op_model("Scale", ins, [(x_shape, et)], attrs)


def run_scale(tmp_path, x, coeffs, attrs, name="m", coeff_params=False):
    et = {v: k for k, v in DTYPES.items()}[x.dtype]
    feeds = {"x": x}
    if coeff_params:
        feeds.update(zip(("scale", "shift", "power"), coeffs, strict=True))
    return run_model(scale_model(x.shape, et, coeffs, attrs, coeff_params), tmp_path, feeds, name=name)["y"]


def test_spec_example_uniform(tmp_path):
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 1, 3, 3)
    c = [np.array([2], np.float32), np.array([1], np.float32), np.array([2], np.float32)]
    y = run_scale(tmp_path, x, c, {"mode": "UNIFORM"})
    expected = np.array([[[[9.0, 25.0, 49.0], [81.0, 121.0, 169.0], [225.0, 289.0, 361.0]]]], np.float32)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, expected)


def test_spec_example_channel_5d(tmp_path):
    plane = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3)
    x = np.stack([plane, plane])[None]  # (1, 2, 1, 3, 3)
    c = [np.array([1, 2], np.float32), np.array([0, 1], np.float32), np.array([1, 2], np.float32)]
    y = run_scale(tmp_path, x, c, {"mode": "CHANNEL", "channel_axis": 1})
    expected = np.array([[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]],
                          [[[9.0, 25.0, 49.0], [81.0, 121.0, 169.0], [225.0, 289.0, 361.0]]]]], np.float32)
    assert y.shape == (1, 2, 1, 3, 3)
    np.testing.assert_array_equal(y, expected)


def _coeff_count(shape, mode, ca):
    if mode == "uniform":
        return 1
    ca %= len(shape)
    return shape[ca] if mode == "channel" else int(np.prod(shape[ca:]))


@pytest.mark.parametrize("et", ["f32", "f16", "bf16"])
def test_matches_reference_random(tmp_path, et):
    rng = np.random.default_rng({"f32": 1, "f16": 2, "bf16": 3}[et])
    dt = DTYPES[et]
    for case in range(15):
        r = int(rng.integers(1, 6))
        shape = tuple(int(d) for d in rng.integers(1, 5, r))
        mode = ["uniform", "channel", "elementwise"][case % 3]
        ca = int(rng.integers(-r, r))
        n = _coeff_count(shape, mode, ca)
        x = (rng.standard_normal(shape) * 2).astype(dt)
        s = rng.standard_normal(n).astype(np.float32) if case % 5 else EMPTY
        sh = rng.standard_normal(n).astype(np.float32) if case % 4 else EMPTY
        pw_kind = case % 4
        if pw_kind == 0:
            pw = EMPTY
        elif pw_kind == 1:
            pw = np.full(n, 2.0, np.float32)
        elif pw_kind == 2:  # integer powers, negative bases fine
            pw = rng.choice([1.0, 2.0, 3.0, -1.0, 0.0], n).astype(np.float32)
        else:  # fractional powers: negative bases give NaN (as C's pow), matched by the reference
            pw = rng.choice([0.5, 1.5, 1.0, 2.0], n).astype(np.float32)
        attrs = {"mode": mode.upper() if case % 2 else mode, "channel_axis": ca}
        y = run_scale(tmp_path, x, [s, sh, pw], attrs, name=f"s{case}")
        ref = R.scale(x, mode, s, sh, pw, ca)
        assert y.dtype == dt and y.shape == shape
        tol = {"f32": 2e-6, "f16": 1e-3, "bf16": 8e-3}[et]
        with np.errstate(invalid="ignore", divide="ignore"):
            np.testing.assert_allclose(y.astype(np.float64), ref, rtol=tol * 4, atol=tol,
                                       err_msg=f"{mode} ca={ca} {shape} pw={pw}")


def test_large_tensors_cross_chunk_boundaries(tmp_path):
    """Coefficient indexing stays right across the kernel's fixed chunks and threads."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 7, 37, 41)).astype(np.float32)  # 31857 elements: not a chunk multiple
    for mode, ca in [("channel", 1), ("channel", 3), ("channel", -2), ("elementwise", 1), ("elementwise", 0),
                     ("uniform", 1)]:
        n = _coeff_count(x.shape, mode, ca)
        c = [rng.standard_normal(n).astype(np.float32) for _ in range(2)] + [rng.choice([1.0, 2.0, 3.0], n)
                                                                               .astype(np.float32)]
        y = run_scale(tmp_path, x, c, {"mode": mode, "channel_axis": ca}, name=f"big_{mode}{ca}")
        np.testing.assert_allclose(y, R.scale(x, mode, *c, ca), rtol=1e-5, atol=1e-5)


def test_power_fast_paths_agree_with_general_path(tmp_path):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    s, sh = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    base = (x * s.reshape(1, 3, 1, 1) + sh.reshape(1, 3, 1, 1)).astype(np.float32)
    y1 = run_scale(tmp_path, x, [s, sh, EMPTY], {"mode": "channel"}, name="p1")
    y1b = run_scale(tmp_path, x, [s, sh, np.ones(3, np.float32)], {"mode": "channel"}, name="p1b")
    y2 = run_scale(tmp_path, x, [s, sh, np.full(3, 2.0, np.float32)], {"mode": "channel"}, name="p2")
    ymix = run_scale(tmp_path, x, [s, sh, np.array([1.0, 2.0, 3.0], np.float32)], {"mode": "channel"}, name="pm")
    np.testing.assert_array_equal(y1, base)
    np.testing.assert_array_equal(y1b, base)
    np.testing.assert_array_equal(y2, base * base)
    np.testing.assert_array_equal(ymix[:, :2], np.stack([base[:, 0], base[:, 1] ** 2], axis=1))
    np.testing.assert_allclose(ymix[:, 2], base[:, 2].astype(np.float64) ** 3, rtol=1e-6, atol=1e-6)


def test_int8_rounds_half_to_even_and_saturates(tmp_path):
    x = np.array([[-128, -7, -5, -3, -1, 0, 1, 3, 5, 7, 100, 127]], np.int8).reshape(1, 1, 3, 4)
    c = [np.array([0.5], np.float32), EMPTY, EMPTY]
    y = run_scale(tmp_path, x, c, {"mode": "uniform"})
    assert y.dtype == np.int8
    # x/2: -64, -3.5->-4, -2.5->-2, -1.5->-2, -0.5->-0, 0, 0.5->0, 1.5->2, 2.5->2, 3.5->4, 50, 63.5->64
    np.testing.assert_array_equal(y.reshape(-1), [-64, -4, -2, -2, 0, 0, 0, 2, 2, 4, 50, 64])
    np.testing.assert_array_equal(y, R.scale_int8_output(R.scale(x, "uniform", *c, 1)))
    y = run_scale(tmp_path, x, [np.array([3.0], np.float32), np.array([0.5], np.float32), EMPTY], {"mode": "uniform"},
                  name="sat")
    np.testing.assert_array_equal(y, R.scale_int8_output(R.scale(x, "uniform", [3.0], [0.5], EMPTY, 1)))
    assert y.min() == -128 and y.max() == 127


def test_int8_random_channel_and_elementwise(tmp_path):
    """Dyadic coefficients keep every f32 intermediate exact, so irnorm (f32) and the float64
    reference must agree bit for bit, ties included."""
    rng = np.random.default_rng(8)
    for k, (mode, ca) in enumerate([("channel", 1), ("channel", -1), ("elementwise", 2), ("uniform", 0)]):
        x = rng.integers(-128, 128, (2, 3, 4, 5)).astype(np.int8)
        n = _coeff_count(x.shape, mode, ca)
        s = rng.choice([0.25, 0.5, 1.5, -2.0, 4.0], n).astype(np.float32)
        sh = rng.choice([-0.5, 0.0, 0.25, 3.0], n).astype(np.float32)
        pw = rng.choice([1.0, 2.0], n).astype(np.float32)
        y = run_scale(tmp_path, x, [s, sh, pw], {"mode": mode, "channel_axis": ca}, name=f"i8{k}")
        np.testing.assert_array_equal(y, R.scale_int8_output(R.scale(x, mode, s, sh, pw, ca)))


def test_int8_nan_becomes_zero(tmp_path):
    x = np.array([-4, 4, 9, -1], np.int8).reshape(1, 1, 2, 2)
    y = run_scale(tmp_path, x, [EMPTY, EMPTY, np.array([0.5], np.float32)], {"mode": "uniform"})
    np.testing.assert_array_equal(y.reshape(-1), [0, 2, 3, 0])


def test_f16_coefficients_and_coefficients_as_inputs(tmp_path):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 4, 3)).astype(np.float16)
    c = [rng.standard_normal(4).astype(np.float16), rng.standard_normal(4).astype(BF16), EMPTY]
    y = run_scale(tmp_path, x, c, {"mode": "channel"})
    np.testing.assert_allclose(y.astype(np.float64), R.scale(x, "channel", *c, 1), rtol=2e-3, atol=2e-3)
    y2 = run_scale(tmp_path, x, c, {"mode": "channel"}, name="inputs", coeff_params=True)
    np.testing.assert_array_equal(y, y2)


def test_dynamic_dims(tmp_path):
    rng = np.random.default_rng(10)
    c = [rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32), EMPTY]
    m = irnorm.load(scale_model((-1, 3, -1), "f32", c, {"mode": "channel"}).save(tmp_path))
    for shape in [(1, 3, 1), (4, 3, 9), (0, 3, 2)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(m.run({"x": x})["y"], R.scale(x, "channel", *c, 1), rtol=1e-6, atol=1e-6)
    m = irnorm.load(scale_model((2, -1), "f32", [np.ones(6, np.float32), EMPTY, EMPTY], {"mode": "elementwise",
                                                                                         "channel_axis": 0})
                    .save(tmp_path, "dyn2"))
    np.testing.assert_array_equal(m.run({"x": np.ones((2, 3), np.float32)})["y"], np.ones((2, 3)))
    with pytest.raises(irnorm.InputError) as e:
        m.run({"x": np.ones((2, 4), np.float32)})
    assert e.value.code == "IRN064" and "elementwise mode needs 8 values" in str(e.value)


def test_scalar_and_low_rank_data(tmp_path):
    """Rank >= 4 (TensorRT) is not enforced: the math is the same at any rank."""
    y = run_scale(tmp_path, np.array(3.0, np.float32), [np.array([2.0], np.float32), EMPTY, EMPTY],
                  {"mode": "uniform"})
    assert y.shape == () and y == 6.0
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    c = [np.array([1.0, 2.0, 3.0], np.float32), EMPTY, EMPTY]
    np.testing.assert_array_equal(run_scale(tmp_path, x, c, {"mode": "channel", "channel_axis": -1}, name="r2"),
                                  x * c[0])


# ---- malformed IR -------------------------------------------------------------------------------------


def _bad(tmp_path, code, *fragments, x_shape=(2, 3, 4, 5), et="f32", coeffs=None, attrs=None):
    coeffs = coeffs if coeffs is not None else [EMPTY, EMPTY, EMPTY]
    return expect_error(scale_model(x_shape, et, coeffs, attrs if attrs is not None else {"mode": "channel"}),
                        tmp_path, code, *fragments)


def test_rule_mode(tmp_path):
    _bad(tmp_path, "IRN021", 'mode="per_tensor"', "is not one of uniform, channel, elementwise",
         attrs={"mode": "per_tensor"})
    _bad(tmp_path, "IRN020", "required attribute 'mode' is missing", attrs={})
    _bad(tmp_path, "IRN022", "unknown attribute 'axis'", attrs={"mode": "channel", "axis": 1})


def test_rule_channel_axis(tmp_path):
    _bad(tmp_path, "IRN023", "channel_axis=4 is out of range [-4, 3] for data [2,3,4,5] (rank 4) in channel mode",
         attrs={"mode": "channel", "channel_axis": 4})
    _bad(tmp_path, "IRN023", "channel_axis=-5 is out of range", attrs={"mode": "elementwise", "channel_axis": -5})
    _bad(tmp_path, "IRN021", 'channel_axis="one"', attrs={"mode": "channel", "channel_axis": "one"})


def test_rule_coefficient_counts(tmp_path):
    f = np.float32
    _bad(tmp_path, "IRN032", "uniform mode needs 1 value for scale", "got 3 ([3])",
         coeffs=[np.ones(3, f), EMPTY, EMPTY], attrs={"mode": "uniform"})
    _bad(tmp_path, "IRN032", "channel mode needs 3 values (data dim 1) for shift", "default 0; got 4",
         coeffs=[np.ones(3, f), np.ones(4, f), EMPTY])
    _bad(tmp_path, "IRN032", "channel mode needs 5 values (data dim 3) for power", "got 3",
         coeffs=[EMPTY, EMPTY, np.ones(3, f)], attrs={"mode": "channel", "channel_axis": -1})
    _bad(tmp_path, "IRN032", "elementwise mode needs 60 values (data dims 1..3 of [2,3,4,5]) for scale", "got 3",
         coeffs=[np.ones(3, f), EMPTY, EMPTY], attrs={"mode": "elementwise"})


def test_rule_types_and_ports(tmp_path):
    _bad(tmp_path, "IRN033", "data must be f32, f16, bf16 or i8", et="f64")
    _bad(tmp_path, "IRN033", "power (input 3) must be f32, f16 or bf16, got i32",
         coeffs=[EMPTY, EMPTY, np.zeros(0, np.int32)])
    b = single_op_model("Scale", [("param:x", ((2, 3), "f32")), ("s", np.ones(3, np.float32)), ("sh", EMPTY)],
                        [((2, 3), "f32")], {"mode": "channel"})
    expect_error(b, tmp_path, "IRN017", "has 3 input ports", "takes 4")
