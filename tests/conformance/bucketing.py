"""Rows for Bucketize-3, SearchSorted-15 and Inverse-14.

Bucketing values and boundaries are drawn on a coarse lattice (quarters), so ties between a value and a
boundary are frequent -- they are where ``with_right_bound`` / ``right_mode`` matter -- and every value is
exact in every type drawn (OpenVINO's CPU plugin compares in float32).  Inverse draws well-conditioned
matrices (random plus a dominant diagonal); singular ones are tests/test_ops_bucketing.py's business."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np

from irnorm import reference as R

from . import Case, Row

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = (np.float32, np.float16, np.float64, BF16)
NUMERIC = FLOATS + (np.int32, np.int64, np.int8, np.uint8)


def shape(rng, rank, lo=1, hi=5):
    # (not the package's `shape`: importing tests/conformance/shape.py rebinds that name to the module)
    return tuple(int(d) for d in rng.integers(lo, hi + 1, size=rank))


def _mod(name):
    return importlib.import_module(f"openvino.{name}")


def _dyn(rng):
    return bool(rng.integers(2))


def _pick(rng, types):
    return np.dtype(types[int(rng.integers(len(types)))])


def _lattice(rng, dims, dt):
    """Values in [-3, 3] in quarters (integers in [-12, 12] for integer types, [0, 24] unsigned)."""
    k = np.asarray(rng.integers(-12, 13, dims))
    if dt.kind == "u":
        return (k + 12).astype(dt)
    return np.asarray(k.astype(dt) if dt.kind == "i" else (k / 4).astype(dt))


def _sorted(rng, dims, dt):
    return np.sort(_lattice(rng, dims, dt).astype(np.float64), axis=-1).astype(dt)


# ---- Bucketize-3 ---------------------------------------------------------------------------------------


def _bucketize(rng):
    dt = _pick(rng, NUMERIC)
    bt = dt if rng.integers(2) else _pick(rng, NUMERIC)
    x = _lattice(rng, shape(rng, int(rng.integers(0, 4))), dt)
    b = _sorted(rng, (int(rng.integers(0, 7)),), bt)
    attrs = {"output_type": str(rng.choice(["i64", "i32"])), "with_right_bound": bool(rng.integers(2))}
    return Case((x, b), attrs, params=(0,) if rng.integers(2) else (0, 1), dynamic=_dyn(rng),
                label=f"{x.dtype} {x.shape} buckets {b.dtype} {b.shape} {attrs}")


def _bucketize_ref(c: Case):
    return [R.bucketize(*c.inputs, c.attrs["with_right_bound"]).astype(c.attrs["output_type"].replace("i", "int"))]


# ---- SearchSorted-15 -----------------------------------------------------------------------------------


def _search_sorted(rng):
    dt = _pick(rng, NUMERIC)
    lead = shape(rng, int(rng.integers(0, 3)), 1, 4)
    one_d = not lead or rng.integers(3) == 0
    m = int(rng.integers(1, 7))
    seq = _sorted(rng, (m,) if one_d else lead + (m,), dt)
    vdims = shape(rng, int(rng.integers(0, 4))) if one_d else lead + (int(rng.integers(1, 6)),)
    v = _lattice(rng, vdims, dt)
    attrs = {"right_mode": bool(rng.integers(2))}
    return Case((seq, v), attrs, params=(1,) if rng.integers(2) else (0, 1), dynamic=_dyn(rng),
                label=f"{dt} sequence {seq.shape} values {v.shape} {attrs}")


def _search_sorted_ref(c: Case):
    return [R.search_sorted(*c.inputs, c.attrs["right_mode"])]


# ---- Inverse-14 ----------------------------------------------------------------------------------------


def _inverse(rng):
    dt = _pick(rng, FLOATS)
    n = int(rng.integers(1, 6))
    batch = shape(rng, int(rng.integers(0, 3)), 1, 3)
    a = rng.standard_normal(batch + (n, n)) + np.eye(n) * n * rng.choice([-1.0, 1.0], batch + (1, 1))
    x = a.astype(dt)
    attrs = {"adjoint": bool(rng.integers(2))}
    return Case((x,), attrs, dynamic=_dyn(rng), label=f"{dt} {x.shape} {attrs}")


ROWS = [
    Row("Bucketize-3", "opset3", _bucketize, _bucketize_ref,
        lambda n, c: _mod("opset3").bucketize(n[0], n[1], c.attrs["output_type"], c.attrs["with_right_bound"]),
        cases=24),
    Row("SearchSorted-15", "opset15", _search_sorted, _search_sorted_ref,
        lambda n, c: _mod("opset15").search_sorted(n[0], n[1], c.attrs["right_mode"]), cases=24),
    Row("Inverse-14", "opset14", _inverse, lambda c: [R.inverse(c.inputs[0], c.attrs["adjoint"])],
        lambda n, c: _mod("opset14").inverse(n[0], c.attrs["adjoint"]), cases=16),
]
