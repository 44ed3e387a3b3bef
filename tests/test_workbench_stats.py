"""Error statistics and per-dtype default tolerances (irnorm/workbench/stats.py)."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest

from irnorm.workbench.stats import DEFAULT_TOLERANCES, EXACT, default_tolerance, error_stats


def test_identical_tensors_pass_with_zero_error():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    st = error_stats(x, x.copy())
    assert st.passed and st.mismatches == 0
    assert st.max_abs == st.mean_abs == st.p99_abs == st.max_rel == 0.0
    assert (st.rtol, st.atol) == DEFAULT_TOLERANCES["float32"]


def test_statistics_against_numpy_formulas():
    rng = np.random.default_rng(1)
    for _ in range(20):
        shape = tuple(rng.integers(1, 6, size=rng.integers(1, 4)))
        e = rng.standard_normal(shape)
        g = e + rng.standard_normal(shape) * 1e-3
        st = error_stats(g, e, rtol=1e-3, atol=1e-4)
        d = np.abs(g - e)
        rel = d / np.abs(e)
        assert st.max_abs == pytest.approx(d.max())
        assert st.mean_abs == pytest.approx(d.mean())
        assert st.max_rel == pytest.approx(rel.max())
        assert st.mean_rel == pytest.approx(rel.mean())
        k = max(0, int(np.ceil(0.99 * d.size)) - 1)
        assert st.p99_abs == pytest.approx(np.sort(d.reshape(-1))[k])
        bad = d > 1e-4 + 1e-3 * np.abs(e)
        assert st.mismatches == int(bad.sum())
        assert st.passed == (not bad.any())
        if bad.any():  # the worst index is the element furthest beyond its tolerance
            excess = np.where(bad, d - (1e-4 + 1e-3 * np.abs(e)), -np.inf)
            assert st.worst_index == tuple(int(i) for i in np.unravel_index(np.argmax(excess), e.shape))
        else:
            assert st.worst_index == tuple(int(i) for i in np.unravel_index(np.argmax(d), e.shape))
        assert st.worst_got == pytest.approx(g[st.worst_index])
        assert st.worst_expected == pytest.approx(e[st.worst_index])


def test_tolerance_rule_is_atol_plus_rtol_times_expected():
    e = np.array([1.0, 100.0, 0.0])
    g = np.array([1.0 + 1.9e-3, 100.0 + 0.11, 1.5e-3])
    st = error_stats(g, e, rtol=1e-3, atol=1e-3)
    # 1.9e-3 <= 1e-3 + 1e-3*1; 0.11 > 1e-3 + 0.1; 1.5e-3 > 1e-3 + 0
    assert st.mismatches == 2 and not st.passed
    assert st.worst_index == (1,)


def test_nan_and_inf_handling():
    e = np.array([np.nan, np.inf, -np.inf, 1.0, 2.0])
    same = error_stats(e.copy(), e, 0, 0)
    assert same.passed and same.mismatches == 0 and same.nan_mismatches == 0
    g = np.array([np.nan, np.inf, np.inf, np.nan, 2.0])  # -inf vs inf, NaN vs 1: two disagreements
    st = error_stats(g, e, 0, 0)
    assert not st.passed and st.nan_mismatches == 2 and st.mismatches == 2
    assert st.max_abs == np.inf and st.worst_index == (2,)
    d = st.to_dict()
    json.dumps(d)  # JSON has no inf: it is written as a string
    assert d["max_abs"] == "inf"


def test_zero_expected_gives_infinite_relative_error_but_atol_decides():
    st = error_stats(np.array([1e-6, 0.0]), np.array([0.0, 0.0]), rtol=1e-3, atol=1e-5)
    assert st.passed and st.max_rel == np.inf and st.p99_rel == np.inf


def test_shape_mismatch_fails_with_a_note():
    st = error_stats(np.zeros((2, 3)), np.zeros((3, 2)))
    assert not st.passed and "shape [2, 3] differs from expected [3, 2]" in st.summary()


def test_empty_tensors_pass():
    st = error_stats(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32))
    assert st.passed and st.size == 0 and st.worst_index is None


def test_bfloat16_and_void_stored_bfloat16():
    e = np.array([1.0, 2.0, 3.0], dtype=ml_dtypes.bfloat16)
    g = np.array([1.0, 2.0, 3.015625], dtype=ml_dtypes.bfloat16)  # one bf16 ulp at 3
    st = error_stats(g, e)
    assert (st.rtol, st.atol) == DEFAULT_TOLERANCES["bfloat16"] and st.passed
    st2 = error_stats(g.astype(np.float32), e.view(np.dtype("V2")), 0, 0)  # np.savez stores bf16 as V2
    assert st2.max_abs == pytest.approx(0.015625)


def test_default_tolerances_per_dtype_and_precision():
    assert default_tolerance(np.float32) == DEFAULT_TOLERANCES["float32"]
    assert default_tolerance(np.float16) == DEFAULT_TOLERANCES["float16"]
    assert default_tolerance(np.int64) == EXACT
    assert default_tolerance(np.bool_) == EXACT
    # computed by the other side in bf16: the looser bf16 tolerance applies to f32 tensors
    assert default_tolerance(np.float32, "bf16") == DEFAULT_TOLERANCES["bfloat16"]
    # f64 tensors computed in f32 (OpenVINO's CPU plugin) get the f32 tolerance
    assert default_tolerance(np.float64, "f32") == DEFAULT_TOLERANCES["float32"]
    # a tighter precision never tightens a looser dtype
    assert default_tolerance(np.float16, "f32") == DEFAULT_TOLERANCES["float16"]
    assert default_tolerance(np.int32, "bf16") == EXACT


def test_integer_tensors_compare_exactly():
    st = error_stats(np.array([1, 2, 3]), np.array([1, 2, 4]))
    assert not st.passed and st.mismatches == 1 and st.worst_index == (2,)
