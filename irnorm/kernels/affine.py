"""Per-channel affine kernel: ``y = (x - shift[k]) * mult[k] + add[k]``.

``x`` is viewed as ``(outer, K, inner)``: the coefficients are indexed by the
flattened dims ``x.shape[axis : axis + ndims]`` and broadcast over everything
before (outer) and after (inner) them.  This covers

* BatchNormInference: ``axis=1, ndims=1`` with shift = mean, mult =
  gamma / sqrt(var + eps), add = beta (precomputed in float64 once);
* a per-channel scale/shift (TensorRT Scale ``channel`` mode): ``shift=None``,
  ``axis=channel_axis, ndims=1``;
* per-element coefficients over the trailing dims (Scale ``elementwise``):
  ``ndims = rank - axis``; and a single coefficient (``uniform``): ``ndims=0``.

Subtracting ``shift`` before multiplying (instead of folding it into ``add``)
keeps BatchNorm accurate when the mean is large and the variance small: the
CPU plugin's folded ``x*a + b`` loses about 2% at mean 1e4, variance 1e-4.

Arithmetic runs in float32 (float64 for f64 data); f16/bf16 data is converted
on the way in and out.  Work is split by (outer, k) rows, so results do not
depend on the thread count.
"""

from __future__ import annotations

import numpy as np

from ..ir.dtypes import compute_dtype
from .jit import njit, prange
from .pool import OUTPUTS


@njit(nogil=True, parallel=True, cache=True)
def affine_rows(x, out, shift, mult, add):
    """x, out: (outer, K, inner) C-contiguous; shift/mult/add: (K,) in x's dtype."""
    outer, k_count, inner = x.shape
    for task in prange(outer * k_count):
        o = task // k_count
        k = task % k_count
        s = shift[k]
        m = mult[k]
        a = add[k]
        xr = x[o, k]
        yr = out[o, k]
        for i in range(inner):
            yr[i] = (xr[i] - s) * m + a


def channel_affine(
    x: np.ndarray,
    mult: np.ndarray,
    add: np.ndarray,
    *,
    shift: np.ndarray | None = None,
    axis: int = 1,
    ndims: int = 1,
    out_dtype: np.dtype | None = None,
) -> np.ndarray:
    """Return a fresh array ``(x - shift[k]) * mult[k] + add[k]`` (see the module docstring).

    ``mult``/``add``/``shift`` hold ``prod(x.shape[axis:axis+ndims])`` values (any shape;
    flattened in C order); ``shift=None`` means 0.  ``axis`` must be non-negative.
    The result has ``out_dtype`` (default: x's dtype).
    """
    out_dtype = np.dtype(out_dtype or x.dtype)
    cdt = compute_dtype(x.dtype)
    shape = x.shape
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    k_count = int(np.prod(shape[axis:axis + ndims], dtype=np.int64))
    inner = int(np.prod(shape[axis + ndims:], dtype=np.int64))
    mult = np.ascontiguousarray(mult, dtype=cdt).reshape(-1)
    add = np.ascontiguousarray(add, dtype=cdt).reshape(-1)
    shift = np.zeros(k_count, cdt) if shift is None else np.ascontiguousarray(shift, dtype=cdt).reshape(-1)
    for name, v in (("mult", mult), ("add", add), ("shift", shift)):
        if v.shape[0] != k_count:
            raise ValueError(f"channel_affine: {name} has {v.shape[0]} values, x has {k_count} along "
                             f"dims {axis}..{axis + ndims - 1} of {shape}")
    if x.size == 0:
        return np.empty(shape, out_dtype)
    xc = np.ascontiguousarray(x, dtype=cdt)
    y = OUTPUTS.empty(shape, cdt)
    affine_rows(xc.reshape(outer, k_count, inner), y.reshape(outer, k_count, inner), shift, mult, add)
    return y if y.dtype == out_dtype else y.astype(out_dtype)
