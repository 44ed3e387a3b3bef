"""Error statistics between two tensors, and the per-dtype default tolerances.

An element passes when ``|got - expected| <= atol + rtol * |expected|`` (numpy's ``allclose``
rule, asymmetric: ``expected`` is the trusted side).  NaN matches NaN and an infinity matches the
same infinity; any other NaN/inf disagreement is a mismatch.  Everything is computed in float64.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

# (rtol, atol) per numpy dtype name: a few units in the last place of the type at magnitude 1,
# loose enough for a different summation order, tight enough to catch a wrong formula.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (5e-3, 5e-3),
    "bfloat16": (3e-2, 3e-2),
}
EXACT = (0.0, 0.0)  # integers and booleans must match exactly

# Precision names (OpenVINO's INFERENCE_PRECISION_HINT spelling and irnorm's element types) -> dtype name.
_PRECISION_DTYPE = {"f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16"}
_ORDER = ["float64", "float32", "float16", "bfloat16"]  # tighter -> looser


def default_tolerance(dtype: Any, precision: str | None = None) -> tuple[float, float]:
    """(rtol, atol) for comparing a tensor of `dtype`; with `precision` (e.g. "bf16", the precision
    the other side computed in), the looser of the two applies to floating-point tensors."""
    name = np.dtype(dtype).name
    if name not in DEFAULT_TOLERANCES:
        return EXACT
    if precision is not None:
        other = _PRECISION_DTYPE.get(precision.lower())
        if other is not None and _ORDER.index(other) > _ORDER.index(name):
            name = other
    return DEFAULT_TOLERANCES[name]


@dataclass
class ErrorStats:
    """How far `got` is from `expected`: absolute and relative error summaries, the worst element,
    how many elements exceed the tolerance, and whether the whole tensor passes."""

    passed: bool
    rtol: float
    atol: float
    size: int
    mismatches: int  # elements beyond tolerance (NaN/inf disagreements included)
    nan_mismatches: int  # of which: NaN or inf on one side only (or infinities of opposite sign)
    max_abs: float
    mean_abs: float
    p99_abs: float
    max_rel: float
    mean_rel: float
    p99_rel: float
    worst_index: tuple[int, ...] | None
    worst_got: float | None
    worst_expected: float | None
    shape_got: tuple[int, ...] = ()
    shape_expected: tuple[int, ...] = ()
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, float) and not np.isfinite(v):
                d[k] = None if np.isnan(v) else ("inf" if v > 0 else "-inf")  # JSON has no inf/nan
            elif isinstance(v, tuple):
                d[k] = list(v)
        return d

    def summary(self) -> str:
        """One line: max/mean/p99 absolute and relative error and the worst element."""
        if self.note and self.worst_index is None and not self.passed:
            return self.note
        s = (f"abs max {_g(self.max_abs)} mean {_g(self.mean_abs)} p99 {_g(self.p99_abs)}  "
             f"rel max {_g(self.max_rel)} mean {_g(self.mean_rel)} p99 {_g(self.p99_rel)}")
        if self.worst_index is not None:
            s += f"  worst at {list(self.worst_index)}: got {_g(self.worst_got)}, expected {_g(self.worst_expected)}"
        if self.mismatches:
            s += f"  ({self.mismatches}/{self.size} beyond tolerance"
            s += f", {self.nan_mismatches} NaN/inf)" if self.nan_mismatches else ")"
        return s


def _g(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def _as_bf16(a: np.ndarray) -> np.ndarray:
    """np.savez stores bfloat16 as raw 2-byte voids: view those back as bfloat16."""
    if a.dtype.kind == "V" and a.dtype.itemsize == 2 and a.dtype.name != "bfloat16":
        import ml_dtypes

        return a.view(ml_dtypes.bfloat16)
    return a


def _as_f64(a: np.ndarray) -> np.ndarray:
    return _as_bf16(np.asarray(a)).astype(np.float64)


def _p99(a: np.ndarray) -> float:
    """99th percentile by nearest rank (works with infinities, unlike np.percentile)."""
    k = max(0, int(np.ceil(0.99 * a.size)) - 1)
    return float(np.partition(a, k)[k])


def error_stats(got: np.ndarray, expected: np.ndarray, rtol: float | None = None, atol: float | None = None,
                precision: str | None = None) -> ErrorStats:
    """Compare `got` with `expected` (the trusted side).  rtol/atol default to the per-dtype
    defaults of `expected`'s dtype (and `precision`, see default_tolerance)."""
    got, expected = np.asarray(got), np.asarray(expected)
    d_rtol, d_atol = default_tolerance(_as_bf16(expected).dtype, precision)
    rtol = d_rtol if rtol is None else float(rtol)
    atol = d_atol if atol is None else float(atol)
    if got.shape != expected.shape:
        return ErrorStats(False, rtol, atol, int(expected.size), int(expected.size), 0, np.inf, np.inf, np.inf,
                          np.inf, np.inf, np.inf, None, None, None, tuple(got.shape), tuple(expected.shape),
                          note=f"shape {list(got.shape)} differs from expected {list(expected.shape)}")
    g, e = _as_f64(got), _as_f64(expected)
    n = int(e.size)
    if n == 0:
        return ErrorStats(True, rtol, atol, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None, None, None,
                          tuple(got.shape), tuple(expected.shape))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        same_special = (np.isnan(g) & np.isnan(e)) | (np.isinf(g) & (g == e))
        finite_pair = np.isfinite(g) & np.isfinite(e)
        special_bad = ~finite_pair & ~same_special
        diff = np.where(finite_pair, np.abs(g - e), 0.0)
        bound = atol + rtol * np.abs(np.where(finite_pair, e, 0.0))
        excess = diff - bound
        bad = (excess > 0) | special_bad
        abs_e = np.abs(e)
        rel = np.where(finite_pair & (abs_e > 0), diff / np.where(abs_e > 0, abs_e, 1.0), 0.0)
        rel = np.where(finite_pair & (abs_e == 0) & (diff > 0), np.inf, rel)
    nan_bad = int(special_bad.sum())
    mism = int(bad.sum())
    fin = diff[finite_pair]
    relf = rel[finite_pair]
    if fin.size:
        max_abs, mean_abs, p99_abs = float(fin.max()), float(fin.mean()), _p99(fin)
        max_rel, mean_rel, p99_rel = float(relf.max()), float(relf.mean()), _p99(relf)
    else:
        max_abs = mean_abs = p99_abs = max_rel = mean_rel = p99_rel = 0.0
    if nan_bad:  # a NaN/inf disagreement is infinitely wrong
        max_abs = max_rel = float("inf")
    if nan_bad:
        flat = int(np.flatnonzero(special_bad.reshape(-1))[0])
    elif mism:
        flat = int(np.argmax(np.where(bad, excess, -np.inf).reshape(-1)))
    else:
        flat = int(np.argmax(diff.reshape(-1)))
    idx = tuple(int(i) for i in np.unravel_index(flat, e.shape)) if e.ndim else ()
    return ErrorStats(mism == 0, rtol, atol, n, mism, nan_bad, max_abs, mean_abs, p99_abs, max_rel, mean_rel,
                      p99_rel, idx, float(g.reshape(-1)[flat]), float(e.reshape(-1)[flat]),
                      tuple(got.shape), tuple(expected.shape))
