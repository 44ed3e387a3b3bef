"""Small linear layers (a MatMul by a constant [K, N] matrix, its bias along the last axis and an
activation, as exports write every Linear) as one Numba call: one cblas_?gemm over all rows of A writing
the output, then the bias and the activation on it while it is in cache.  As separate calls -- np.dot, then
the epilogue kernel or numpy's add -- each cost 1-3 us of Python around 1-5 us of arithmetic in the tiny
transformer configurations (BERT's [8, 32] x [32, 32] + bias: ~7 us a layer)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import PARALLEL_MIN, blas
from .activation import _ACT_CHUNK, _K32, _K64, Epilogue, _bias_act_cols, _bias_act_short_rows
from .blas_blocks import NO_TRANS, ROW_MAJOR, TRANS, call_gemm
from .jit import c_array, entry, njit

# Products with at most this many output elements take the one call (above, the epilogue runs on the pool).
LINEAR_ONE_CALL_MAX = PARALLEL_MIN


@njit(nogil=True, cache=True, error_model="numpy")
def linear(gemm_at, blas_int, a, b, trans_b, ldb, out, res, bias, code, p0, p1, k, one, zero):  # pragma: no cover
    """out [M, N] = a [M, K] @ B, B = b ([K, N]; its transpose when trans_b: b is then [N, K]), then + bias[n]
    (when bias is not empty) and activation `code` (none when negative): the Add and activation layers'
    operations per element (bias_activation_last's).  When res [M, N] has rows (a residual; never with an
    activation): (out + bias[n]) + res, the two Add layers' operations in their order."""
    rows, depth = a.shape
    n = out.shape[1]
    call_gemm(gemm_at, blas_int, ROW_MAJOR, NO_TRANS, TRANS if trans_b else NO_TRANS, rows, n, depth, one,
              a.ctypes.data, depth, b.ctypes.data, ldb, zero, out.ctypes.data, n)
    if res.shape[0] > 0:
        has_bias = bias.shape[0] > 0
        for r in range(rows):
            o = out[r]
            other = res[r]
            if has_bias:
                for j in range(n):
                    o[j] = (o[j] + bias[j]) + other[j]
            else:
                for j in range(n):
                    o[j] = o[j] + other[j]
    elif code >= 0:
        if n < _ACT_CHUNK // 4:
            _bias_act_short_rows(code, out, bias, 1, True, 0, rows, p0, p1, k)
        else:
            _bias_act_cols(code, out, bias, 0, rows, p0, p1, k)
    elif bias.shape[0] > 0:
        for r in range(rows):
            for j in range(n):
                out[r, j] += bias[j]


def linear_plan(rows: int, b: np.ndarray, epilogue: Epilogue | None) -> Callable[..., None] | None:
    """For A of `rows` rows and the constant B [K, N] (f32/f64; C-contiguous, or the transposed view of a
    C-contiguous [N, K] weight): ``run(a_rows, out_rows[, res_rows])`` doing linear() into the caller's out
    [rows, N] (with an epilogue's residual: res_rows, C-contiguous [rows, N] of B's dtype); None where it
    does not apply (no driven BLAS, a product large enough for several threads, an output for the pool, a
    residual followed by an activation)."""
    dtype = b.dtype
    if dtype not in (np.float32, np.float64) or b.ndim != 2 or 0 in b.shape or rows == 0:
        return None
    if epilogue is not None and epilogue.residual and epilogue.code >= 0:
        return None
    depth, n = b.shape
    if rows * n >= LINEAR_ONE_CALL_MAX or blas.column_blocks(rows, n, depth) is not None:
        return None
    if b.flags.c_contiguous:
        base, trans, ldb = b, False, n
    elif b.T.flags.c_contiguous:
        base, trans, ldb = b.T, True, depth
    else:
        return None
    address = blas.gemm_address(dtype)
    if address is None:
        return None
    gemm_at, blas_int = address
    bias, code, p0, p1 = (epilogue.bias, epilogue.code, epilogue.p0, epilogue.p1) if epilogue else (None, -1, 0, 0)
    bias_v = np.zeros(0, dtype) if bias is None else np.ascontiguousarray(np.asarray(bias, dtype).reshape(-1))
    if bias_v.shape[0] not in (0, n):
        return None
    ftype = dtype.type
    k = _K64 if dtype == np.float64 else _K32
    args = (base, trans, ldb)
    tail = (bias_v, code, ftype(p0), ftype(p1), k, ftype(1), ftype(0))
    no_res = np.zeros((0, 1), dtype)
    call = entry(linear, gemm_at, blas_int, c_array(2, dtype), *args, c_array(2, dtype), no_res, *tail)

    def run(a_rows: np.ndarray, out_rows: np.ndarray, res_rows: np.ndarray = no_res) -> None:
        call(gemm_at, blas_int, a_rows, *args, out_rows, res_rows, *tail)
    return run
