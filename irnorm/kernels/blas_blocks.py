"""The column blocks of a large product (kernels/blas.py) run on Numba's threads: a parallel loop over
(batch item, block) pairs, each one cblas_?gemm call through a function pointer to numpy's OpenBLAS
(single-threaded while a model runs).  A Numba loop rather than Python threads: Numba's workers are
the ones its kernels just used, still spinning; a Python helper thread had to wait for them to yield
its core (ResNet-18's stem product, two blocks: 0.5 -> 0.78 ms in the network)."""

from __future__ import annotations

import numpy as np

from .jit import njit, prange

ROW_MAJOR, NO_TRANS = 101, 111  # CBLAS_ORDER / CBLAS_TRANSPOSE


def block_bounds(blocks: tuple[tuple[int, int], ...]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([lo for lo, _ in blocks], np.int64), np.array([hi for _, hi in blocks], np.int64))


@njit(parallel=True, cache=True)
def blocked_gemm(gemm, a, b, out, starts, ends, one, zero):  # pragma: no cover - compiled
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
        gemm(ROW_MAJOR, NO_TRANS, NO_TRANS, m, hi - lo, k, one, pa, lda, pb, ldb, zero, po, ldc)
