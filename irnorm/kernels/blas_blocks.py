"""The column blocks of a large product (kernels/blas.py) run on Numba's threads: a parallel loop over
(batch item, block) pairs, each one cblas_?gemm call through a function pointer to numpy's OpenBLAS
(single-threaded while a model runs; call_gemm).  A Numba loop rather than Python threads: Numba's workers are
the ones its kernels just used, still spinning; a Python helper thread had to wait for them to yield
its core (ResNet-18's stem product, two blocks: 0.5 -> 0.78 ms in the network)."""

from __future__ import annotations

import numpy as np
from numba.core import cgutils
from numba.extending import intrinsic, overload

from . import microgemm
from .jit import njit, prange, types

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112  # CBLAS_ORDER / CBLAS_TRANSPOSE


@intrinsic
def call_gemm(typingctx, address, blas_int, order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc):  # pragma: no cover - compiled
    """cblas_?gemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) through its
    address (an integer: kernels/blas.py's gemm_address), a, b and c given as addresses too; `blas_int`'s
    type (int32, or int64 for an ILP64 OpenBLAS) is the width of the library's integers, alpha's type
    the real type.  Passing a ctypes function pointer to a kernel instead costs ~1.5 us a call to unbox,
    as much as a small product's arithmetic."""
    if not isinstance(blas_int, types.Integer) or not isinstance(alpha, types.Float):
        return None
    sig = types.void(address, blas_int, order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)

    def codegen(context, builder, signature, args):
        from llvmlite import ir

        i32, nint = ir.IntType(32), ir.IntType(blas_int.bitwidth)
        real, ptr = context.get_value_type(alpha), cgutils.voidptr_t
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, nint, nint, nint, real, ptr, nint, ptr, nint, real,
                                               ptr, nint])
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        ty = signature.args

        def integer(i, width):
            return context.cast(builder, args[i], ty[i], types.int64 if width == 64 else types.int32)

        def pointer(i):
            return builder.inttoptr(context.cast(builder, args[i], ty[i], types.intp), ptr)

        w = nint.width
        builder.call(fn, [integer(2, 32), integer(3, 32), integer(4, 32), integer(5, w), integer(6, w), integer(7, w),
                          context.cast(builder, args[8], ty[8], alpha), pointer(9), integer(10, w), pointer(11),
                          integer(12, w), context.cast(builder, args[13], ty[13], alpha), pointer(14),
                          integer(15, w)])
        return context.get_dummy_value()

    return sig, codegen


def gemm_nn(gemm_at, blas_int, m, n, k, one, a, lda, b, ldb, zero, c, ldc):  # pragma: no cover - compiled
    """C [m, n] = A [m, k] @ B [k, n], row-major, all given as addresses with row strides in elements: float32
    by irnorm's register-blocked kernels where they are enabled (kernels/microgemm.py, AVX2 + FMA; with AVX-512
    1.6-2x numpy's OpenBLAS on the products networks have), else and for float64 by cblas_?gemm.  Called from compiled
    kernels only (the overload below)."""
    raise NotImplementedError


@overload(gemm_nn, jit_options={"cache": True})
def _gemm_nn(gemm_at, blas_int, m, n, k, one, a, lda, b, ldb, zero, c, ldc):  # pragma: no cover - compiled
    if microgemm.ENABLED and isinstance(one, types.Float) and one.bitwidth == 32:
        def micro(gemm_at, blas_int, m, n, k, one, a, lda, b, ldb, zero, c, ldc):
            microgemm.gemm(np.int64(m), np.int64(n), np.int64(k), np.int64(a), np.int64(lda), np.int64(b),
                           np.int64(ldb), np.int64(c), np.int64(ldc), np.int64(0), np.int64(n))
        return micro

    def blas(gemm_at, blas_int, m, n, k, one, a, lda, b, ldb, zero, c, ldc):
        call_gemm(gemm_at, blas_int, ROW_MAJOR, NO_TRANS, NO_TRANS, m, n, k, one, a, lda, b, ldb, zero, c, ldc)
    return blas


def block_bounds(blocks: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([lo for lo, _ in blocks], np.int64), np.array([hi for _, hi in blocks], np.int64))


@njit(parallel=True, cache=True)
def blocked_gemm(gemm_at, blas_int, a, b, out, starts, ends, one, zero):  # pragma: no cover - compiled
    """out[i][:, lo:hi] = a[i or 0] @ b[i or 0][:, lo:hi] for every batch item i and block [lo, hi):
    a [Ba, M, K], b [Bb, K, N], out [B, M, N] with Ba and Bb 1 or B, rows of unit stride."""
    nb = out.shape[0]
    nblk = starts.shape[0]
    item = out.itemsize
    m, k = a.shape[1], a.shape[2]
    lda, ldb, ldc = a.strides[1] // item, b.strides[1] // item, out.strides[1] // item
    for j in prange(nb * nblk):
        bi = j // nblk
        lo = starts[j - bi * nblk]
        hi = ends[j - bi * nblk]
        pa = a.ctypes.data + (0 if a.shape[0] == 1 else bi) * a.strides[0]
        pb = b.ctypes.data + (0 if b.shape[0] == 1 else bi) * b.strides[0] + lo * item
        po = out.ctypes.data + bi * out.strides[0] + lo * item
        gemm_nn(gemm_at, blas_int, m, hi - lo, k, one, pa, lda, pb, ldb, zero, po, ldc)


@njit(nogil=True, cache=True)
def micro_product(a, b, out):  # pragma: no cover - compiled
    """out[i] = a[i or 0] @ b[i or 0] in float32 by gemm_nn's kernels on the calling thread, for every batch
    item i: a [Ba, M, K], b [Bb, K, N], out [B, M, N] with Ba and Bb 1 or B, rows of unit stride."""
    m, k, n = a.shape[1], a.shape[2], b.shape[2]
    lda, ldb, ldc = a.strides[1] // 4, b.strides[1] // 4, out.strides[1] // 4
    for bi in range(out.shape[0]):
        pa = a.ctypes.data + (0 if a.shape[0] == 1 else bi) * a.strides[0]
        pb = b.ctypes.data + (0 if b.shape[0] == 1 else bi) * b.strides[0]
        microgemm.gemm(np.int64(m), np.int64(n), np.int64(k), np.int64(pa), np.int64(lda), np.int64(pb),
                       np.int64(ldb), np.int64(out.ctypes.data + bi * out.strides[0]), np.int64(ldc), np.int64(0),
                       np.int64(n))
