"""Inverse-14: the inverse of each square matrix in the last two dims of ``[..., N, N]``.

* Input of a floating-point type (f32, f16, bf16, f64); the output has its shape and type.
* ``adjoint`` (default false): give the adjoint -- for real matrices the transpose of the inverse,
  ``(A^-1)^T`` -- as the spec says and OpenVINO 2026.4's CPU plugin computes (an older OpenVINO
  reference multiplied the inverse by det(A) instead; docs/ir-format.md section 12).
* Kernel: ``numpy.linalg.inv`` (LAPACK ``getrf`` + ``getri``: LU with partial pivoting, as the spec's
  algorithm) over the whole batch, in float64 for every input type, rounded once to the input's
  type.  OpenVINO's CPU plugin runs its own LU in float32 (f64 is computed as f32), so on
  well-conditioned matrices the two agree to float32 rounding (f16 and bf16: to one rounding of the
  output), and irnorm is the closer to the exact inverse.
* A matrix without an inverse: the spec leaves the result undefined ("may raise an exception or
  return an undefined result"), the CPU plugin returns a mix of inf and NaN for it and finite values
  for the other matrices of the batch.  irnorm gives **NaN for every element of a singular matrix**
  (one LAPACK finds an exactly zero pivot in, in float64) and computes the others; a matrix that is
  singular only to working precision gives large finite values, as in any LU.  A matrix holding a
  NaN or an infinity gives all NaN: the CPU plugin does so for a NaN, and for an infinity gives NaN,
  inf or a finite limit depending on where it sits ([[inf, 1], [0, 1]] -> [[0, 0], [0, 1]]).
* N = 1 is the reciprocal (1 / 0 is a singular matrix: NaN); an empty batch or N = 0 gives an
  empty output.
"""

from __future__ import annotations

import numpy as np

from ..ir.attrs import AttrSchema, optional, parse_bool
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, cast
from .base import Kernel, NodeContext, Op, TensorInfo, fail, fmt_shape, merge_dim, register, runtime_error, same_dim


def inverse(x: np.ndarray, adjoint: bool) -> np.ndarray:
    """float64 inverses of the matrices in the last two dims of `x` (any float type); NaN matrices for
    singular or non-finite ones; transposed when `adjoint`."""
    a = np.asarray(x).astype(np.float64)
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    flat = a.reshape(-1, n, n)
    bad = ~np.isfinite(flat).all(axis=(1, 2))
    if bad.any():  # LAPACK is not asked about NaN/inf (its result there is partly NaN, partly finite)
        flat = np.where(bad[:, None, None], np.eye(n), flat)
    try:
        out = np.linalg.inv(flat)
    except np.linalg.LinAlgError:  # some matrix has an exactly zero pivot: find which, invert the rest
        singular = np.linalg.slogdet(flat)[0] == 0  # the same LU (getrf) as inv's
        out = np.empty_like(flat)
        try:
            out[~singular] = np.linalg.inv(flat[~singular])
        except np.linalg.LinAlgError:  # pragma: no cover - slogdet and inv disagree: one matrix at a time
            for k in np.flatnonzero(~singular):
                try:
                    out[k] = np.linalg.inv(flat[k])
                except np.linalg.LinAlgError:
                    singular[k] = True
        bad |= singular
    if bad.any():
        out[bad] = np.nan
    if adjoint:
        out = out.transpose(0, 2, 1)
    return np.ascontiguousarray(out).reshape(a.shape)


@register
class Inverse(Op):
    type = "Inverse"
    version = 14
    opsets = (14, None)
    schema = AttrSchema([optional("adjoint", parse_bool, False)])
    uses_blas = True
    doc = ("inverse of each square matrix [..., N, N] (LU via LAPACK, in float64); adjoint gives its transpose; "
           "a singular or non-finite matrix gives NaN.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        if x.dtype not in FLOAT_TYPES:
            raise fail("IRN033", f"input must be a floating-point tensor, got {x.dtype}")
        if x.shape is None:
            return [TensorInfo(None, x.dtype)]
        if len(x.shape) < 2:
            raise fail("IRN032", f"input must be at least 2-D [..., N, N], got {fmt_shape(x.shape)}")
        r, c = x.shape[-2:]
        if not same_dim(r, c):
            raise fail("IRN032", f"input must hold square matrices in its last two dims, got {fmt_shape(x.shape)}")
        n = merge_dim(r, c)
        return [TensorInfo(tuple(x.shape[:-2]) + (n, n), x.dtype)]

    def build(self, ctx: NodeContext) -> Kernel:
        layer = ctx.layer
        adjoint = ctx.attrs["adjoint"]
        dt = ELEMENT_TYPES[ctx.inputs[0].dtype]

        def run(ins):
            x = ins[0]
            if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
                raise runtime_error(layer, f"input must hold square matrices [..., N, N], got {fmt_shape(x.shape)}")
            with np.errstate(all="ignore"):
                y = inverse(x, adjoint)
            return [y if y.dtype == dt else cast(y, dt)]

        return run
