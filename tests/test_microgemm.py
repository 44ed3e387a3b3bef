"""kernels/microgemm.py: irnorm's float32 GEMM kernels against a float64 numpy product over random shapes
(every tail: rows below a block, half and narrower last panels, depths across several KC blocks), the
column cut not changing a bit, tiles of several shapes.  The driver is called directly, so it is checked on
any x86-64 with AVX2, with this CPU's tiles (12 x 32 with AVX-512, 6 x 16 with AVX2 alone; the AVX2 ones also in a
process compiling for Haswell: tests/test_avx2_target.py, as is a target without AVX2, where products stay
OpenBLAS's)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from irnorm.kernels import blas, microgemm
from irnorm.kernels.blas_blocks import micro_product


def _gemm(a: np.ndarray, b: np.ndarray, j0: int = 0, j1: int | None = None, c: np.ndarray | None = None
          ) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    c = np.full((m, n), np.nan, np.float32) if c is None else c
    microgemm.gemm(m, n, k, a.ctypes.data, a.strides[0] // 4, b.ctypes.data, b.strides[0] // 4, c.ctypes.data,
                   c.strides[0] // 4, j0, n if j1 is None else j1)
    return c


def _close(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    ref = a.astype(np.float64) @ b.astype(np.float64)
    # a float32 sum of k products: error bounded by ~k ulps of the sum of |terms|
    bound = (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) * (a.shape[1] + 1) * 2.0 ** -23
    assert np.all(np.abs(got - ref) <= bound + 1e-30), float(np.max(np.abs(got - ref) - bound))


def test_random_shapes_against_float64():
    rng = np.random.default_rng(7)
    shapes = [(1, 1, 1), (microgemm.MR, microgemm.NR, 5), (microgemm.MR + 1, microgemm.NR + 1, 3),
              (65, 192, 64), (64, 1024, 147), (3, 7, microgemm.KC * 2 + 5)]
    shapes += [tuple(int(v) for v in rng.integers(1, (80, 110, 900))) for _ in range(60)]
    for m, n, k in shapes:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        _close(_gemm(a, b), a, b)


def test_strided_rows_and_a_column_range_leave_the_rest_alone():
    rng = np.random.default_rng(1)
    big_a = rng.standard_normal((40, 300)).astype(np.float32)
    big_b = rng.standard_normal((300, 90)).astype(np.float32)
    a, b = big_a[3:33, 10:260], big_b[10:260, 5:85]  # row strides 300 and 90, not the widths
    c = np.full((30, 80), -7.0, np.float32)
    _gemm(a, b, 13, 61, c)
    _close(c[:, 13:61], a, b[:, 13:61])
    assert np.all(c[:, :13] == -7.0) and np.all(c[:, 61:] == -7.0)


@pytest.mark.parametrize("k", [777, microgemm.SHALLOW_K])  # two depth blocks; C's tiles along its rows
def test_the_column_cut_does_not_change_a_bit(k):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((29, k)).astype(np.float32)
    b = rng.standard_normal((k, 150)).astype(np.float32)
    whole = _gemm(a, b)
    parts = np.full_like(whole, np.nan)
    for lo, hi in ((0, 7), (7, 48), (48, 49), (49, 150)):
        _gemm(a, b, lo, hi, parts)
    np.testing.assert_array_equal(parts, whole)


def test_zero_depth_writes_zeros_and_nothing_else():
    c = np.full((5, 9), np.nan, np.float32)
    a, b = np.zeros((5, 0), np.float32), np.zeros((0, 9), np.float32)
    _gemm(a, b, 2, 6, c)
    assert np.all(c[:, 2:6] == 0) and np.isnan(c[:, :2]).all() and np.isnan(c[:, 6:]).all()


def test_nan_and_inf_propagate():
    a = np.ones((3, 4), np.float32)
    b = np.ones((4, 5), np.float32)
    b[2, 1], b[0, 3] = np.nan, np.inf
    c = _gemm(a, b)
    assert np.isnan(c[:, 1]).all() and np.isinf(c[:, 3]).all() and np.all(c[:, [0, 2, 4]] == 4)


@pytest.mark.parametrize("mr,nr", [(12, 32), (6, 16), (1, 32), (5, 16)])
@pytest.mark.parametrize("accumulate", [False, True])
def test_tiles_of_several_shapes(mr, nr, accumulate):
    """Tile kernels of several shapes (LLVM lowers either vector width on any AVX2 CPU), and the accumulating
    variant the depth blocks after the first use."""
    tile = microgemm._tile_kernel(mr, nr, accumulate)

    @njit
    def run(a, b, c, k):
        tile(a.ctypes.data, a.shape[1], b.ctypes.data, b.shape[1], c.ctypes.data, c.shape[1], k)

    rng = np.random.default_rng(mr * 100 + nr)
    k = 37
    a = rng.standard_normal((mr, k)).astype(np.float32)
    b = rng.standard_normal((k, nr)).astype(np.float32)
    c0 = rng.standard_normal((mr, nr)).astype(np.float32)
    c = c0.copy()
    run(a, b, c, k)
    _close(c - (c0 if accumulate else 0), a, b)


def test_batched_product_through_blas_product():
    """blas.product on float32 operands takes these kernels, batch dims and a broadcast side included,
    and float64 stays numpy's."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 17, 40)).astype(np.float32)
    b = rng.standard_normal((40, 50)).astype(np.float32)
    out = np.empty((3, 17, 50), np.float32)
    blas.product(a, b, out, None)
    for i in range(3):
        _close(out[i], a[i], b)
    a3, b3, o3 = a[:1], np.broadcast_to(b, (1, 40, 50)), np.empty((1, 17, 50), np.float32)
    micro_product(a3, np.ascontiguousarray(b3), o3)
    np.testing.assert_array_equal(o3[0], out[0])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    out64 = np.empty((3, 17, 50))
    blas.product(a64, b64, out64, None)
    np.testing.assert_array_equal(out64, np.matmul(a64, b64))


def test_enabled_follows_this_cpu():
    import llvmlite.binding as ll
    import numba

    if numba.config.CPU_NAME:
        pytest.skip("NUMBA_CPU_NAME set: the target is not this CPU")
    host = ll.get_host_cpu_features()
    assert microgemm.AVX512 == bool(host.get("avx512f", False))
    assert microgemm.ENABLED == bool(host.get("avx2", False) and host.get("fma", False))
    assert (microgemm.MR, microgemm.NR) == ((12, 32) if microgemm.AVX512 else (6, 16))


def test_rows_by_offset_are_the_gathered_product():
    """gemm_rows_at (B's row kk at b + offsets[kk]: a convolution's taps in its padded input) gives the bits
    of gemm on the same rows gathered into a matrix, for offsets in any order, repeated and overlapping,
    every panel width and a column range."""
    rng = np.random.default_rng(11)
    for m, n, k in [(5, 70, 9), (13, 33, 400), (1, 16, 1), (24, 100, 27)]:
        buf = rng.standard_normal(4096).astype(np.float32)
        offsets = rng.integers(0, 4096 - n, k).astype(np.int64)
        offsets[: k // 3] = offsets[0]  # repeated rows
        a = rng.standard_normal((m, k)).astype(np.float32)
        gathered = np.stack([buf[o:o + n] for o in offsets])
        want = _gemm(a, np.ascontiguousarray(gathered))
        got = np.full((m, n), np.nan, np.float32)
        microgemm.gemm_rows_at(m, n, k, a.ctypes.data, k, buf.ctypes.data, offsets.ctypes.data, got.ctypes.data, n,
                               0, n)
        np.testing.assert_array_equal(got, want)
        part = np.full((m, n), -1.0, np.float32)
        microgemm.gemm_rows_at(m, n, k, a.ctypes.data, k, buf.ctypes.data, offsets.ctypes.data, part.ctypes.data, n,
                               3, n - 2)
        np.testing.assert_array_equal(part[:, 3:n - 2], want[:, 3:n - 2])
        assert np.all(part[:, :3] == -1) and np.all(part[:, n - 2:] == -1)


@pytest.mark.parametrize("cols", [1, 5, microgemm.NH - 1])
def test_last_columns_read_and_write_only_their_lanes(cols):
    """The last columns of a product narrower than a half panel take masked tiles: B's rows ending at the end
    of a readable page (the next one is inaccessible: an over-read would crash the process) and C's columns
    beyond the product untouched, over two depth blocks (the second adds to C)."""
    import ctypes
    import mmap

    rng = np.random.default_rng(cols)
    m, k = 13, microgemm.KC + 9
    page = mmap.PAGESIZE
    size = -(-k * cols * 4 // page) * page
    region = mmap.mmap(-1, size + page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    libc = ctypes.CDLL(None)
    assert libc.mprotect(ctypes.c_void_p(base + size), ctypes.c_size_t(page), 0) == 0  # PROT_NONE guard page
    try:
        flat = np.frombuffer(region, np.float32, count=size // 4)
        b = flat[size // 4 - k * cols:].reshape(k, cols)  # B's last element is the page's last
        b[...] = rng.standard_normal((k, cols)).astype(np.float32)
        a = rng.standard_normal((m, k)).astype(np.float32)
        c = np.full((m, cols + 3), np.nan, np.float32)
        microgemm.gemm(m, cols, k, a.ctypes.data, k, b.ctypes.data, cols, c.ctypes.data, cols + 3, 0, cols)
        _close(c[:, :cols], a, b)
        assert np.isnan(c[:, cols:]).all()
        del b, flat
    finally:
        libc.mprotect(ctypes.c_void_p(base + size), ctypes.c_size_t(page), 3)
