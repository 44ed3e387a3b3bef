"""Small linear layers (a MatMul by a constant [K, N] matrix, its bias along the last axis and an
activation, as exports write every Linear) as one Numba call: one cblas_?gemm over all rows of A writing
the output, then the bias and the activation on it while it is in cache.  As separate calls -- np.dot, then
the epilogue kernel or numpy's add -- each cost 1-3 us of Python around 1-5 us of arithmetic in the tiny
transformer configurations (BERT's [8, 32] x [32, 32] + bias: ~7 us a layer)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from . import PARALLEL_MIN, blas, microgemm
from .activation import (
    _ACT_CHUNK,
    _K32,
    _K64,
    SHORT_ROW_MAX,
    Epilogue,
    _add_activate,
    _bias_act_cols,
    _bias_act_short_rows,
)
from .blas_blocks import NO_TRANS, ROW_MAJOR, TRANS, call_gemm, gemm_nn
from .jit import c_array, entry, njit, prange

# Products with at most this many output elements take the one call (above, the epilogue runs on the pool).
LINEAR_ONE_CALL_MAX = PARALLEL_MIN

# Products of at least this many floating-point operations (2 * rows * K * N; below blas's column blocks) run
# with their epilogue as row ranges on Numba's threads (linear_parallel), ranges of at least LINEAR_TASK_ROWS
# rows.  Swin's MLP and projection products ([256, 32] x [32, 128] + Gelu, [256, 128] x [128, 32] + residual,
# 2 MFLOP each): 31 -> 20 us a Gelu step, the network 466-488 -> 428-436 us; ViT's 1 MFLOP ones of 65 rows
# were 5% slower so (the threads' wake-up costs about what half the product saves), hence 2M, not 1M.
LINEAR_PARALLEL_FLOPS = 2 << 20
LINEAR_TASK_ROWS = 16
LINEAR_MAX_TASKS = 8

# A product of at most this many rows of A (a classifier head on one image, a decoder's next token) is
# computed as dot products of A's rows with the weight's [N, K] rows (narrow_linear), not by cblas_?gemm:
# OpenBLAS's sgemm packs all of B for it, so the product costs as much as one with a hundred rows
# ([1, 576] x [576, 1024], MobileNetV3's head: 169 us by sgemm, 42 as dot products; [2, 512] x [512, 1000]
# 157 against 65; AVX2 EPYC, one thread).
NARROW_ROWS = 4
# Multiply-adds (rows * K * N) from which a narrow product's columns are split over Numba's threads (the
# weight streams from L3 at about one core's bandwidth: [1, 1024] x [1024, 1000] 70 -> 41 us on two,
# [1, 256] x [256, 512] gains nothing).  High, because a classifier head follows serial steps: waking
# Numba's sleeping workers cost ~40 us inside a network here (ViT's first parallel linear layer: 58 ->
# 100 us where its twin after a parallel step gained 6 us).
NARROW_PARALLEL_MIN = 1 << 21


@njit(nogil=True, cache=True, fastmath={"reassoc"}, inline="always", error_model="numpy")
def dot_lanes(a, b, zero):  # pragma: no cover
    """a . b over a's length, the sum reassociated so that it runs in vector lanes (as BLAS reassociates its
    sums: the lanes' order follows the CPU's vector width)."""
    s = zero
    for j in range(a.shape[0]):
        s += a[j] * b[j]
    return s


@njit(nogil=True, cache=True, fastmath={"reassoc"}, error_model="numpy")
def _narrow_dots(a, wt, out, n0, n1, zero):  # pragma: no cover
    """out[r, n] = a[r] . wt[n] for columns n0..n1-1: each a dot product of two contiguous rows, the sum
    reassociated so that it runs in vector lanes (as BLAS reassociates its sums: the lanes' order follows
    the CPU's vector width).  A column's value does not depend on which columns share its call."""
    rows, depth = a.shape
    for n in range(n0, n1):
        w = wt[n]
        r = 0
        while r + 1 < rows:  # two rows per pass over w: half the loads of w
            a0, a1 = a[r], a[r + 1]
            s0 = s1 = zero
            for j in range(depth):
                v = w[j]
                s0 += a0[j] * v
                s1 += a1[j] * v
            out[r, n] = s0
            out[r + 1, n] = s1
            r += 2
        if r < rows:
            out[r, n] = dot_lanes(a[r], w, zero)


@njit(nogil=True, cache=True, error_model="numpy")
def _narrow_part(a, wt, out, res, bias, code, p0, p1, k, n0, n1):  # pragma: no cover
    """Columns n0..n1-1 of narrow_linear: the dot products, then linear()'s epilogue on them -- the same
    operations per element in the same order (+ bias, + residual, the activation)."""
    _narrow_dots(a, wt, out, n0, n1, k[0])
    has_bias = bias.shape[0] > 0
    part = bias[n0:n1] if has_bias else bias
    buf = np.empty(min(_ACT_CHUNK, max(1, n1 - n0)), out.dtype)
    for r in range(a.shape[0]):
        o = out[r, n0:n1]
        if res.shape[0] > 0:
            other = res[r, n0:n1]
            if has_bias:
                for j in range(o.shape[0]):
                    o[j] = (o[j] + part[j]) + other[j]
            else:
                for j in range(o.shape[0]):
                    o[j] = o[j] + other[j]
        elif code >= 0 or has_bias:
            _add_activate(code, o, part, k[0], has_bias, buf, p0, p1, k)


@njit(nogil=True, cache=True, error_model="numpy")
def narrow_linear(a, wt, out, res, bias, code, p0, p1, k):  # pragma: no cover
    """out [M, N] = a [M, K] @ wt [N, K]^T, then + bias[n], + res [M, N] (when it has rows), the activation
    `code` (linear()'s epilogue), for a product of a few rows (NARROW_ROWS), on the calling thread."""
    _narrow_part(a, wt, out, res, bias, code, p0, p1, k, 0, wt.shape[0])


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def narrow_linear_parallel(a, wt, out, res, bias, code, p0, p1, k, tasks):  # pragma: no cover
    """narrow_linear with the columns cut into `tasks` ranges run on Numba's threads: the same values."""
    n = wt.shape[0]
    for t in prange(tasks):
        _narrow_part(a, wt, out, res, bias, code, p0, p1, k, t * n // tasks, (t + 1) * n // tasks)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _linear_rows(gemm_at, blas_int, a, b, trans_b, ldb, out, res, bias, code, p0, p1, k, one, zero, r0,
                 r1):  # pragma: no cover
    """linear() on rows r0..r1-1 of a and out only (a thread's share: a row's values do not depend on the cut)."""
    depth = a.shape[1]
    n = out.shape[1]
    item = out.itemsize
    pa = a.ctypes.data + r0 * depth * item
    po = out.ctypes.data + r0 * n * item
    if trans_b:
        call_gemm(gemm_at, blas_int, ROW_MAJOR, NO_TRANS, TRANS, r1 - r0, n, depth, one, pa, depth, b.ctypes.data,
                  ldb, zero, po, n)
    else:
        gemm_nn(gemm_at, blas_int, r1 - r0, n, depth, one, pa, depth, b.ctypes.data, ldb, zero, po, n)
    _epilogue_rows(out, res, bias, code, p0, p1, k, r0, r1)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _epilogue_rows(out, res, bias, code, p0, p1, k, r0, r1):  # pragma: no cover
    """linear()'s epilogue on rows r0..r1-1 of the product out [M, N]: + bias[n] and + res [M, N] (when it has
    rows), else + bias[n] and the activation `code` (none when negative)."""
    n = out.shape[1]
    if res.shape[0] > 0:
        has_bias = bias.shape[0] > 0
        for r in range(r0, r1):
            o = out[r]
            other = res[r]
            if has_bias:
                for j in range(n):
                    o[j] = (o[j] + bias[j]) + other[j]
            else:
                for j in range(n):
                    o[j] = o[j] + other[j]
    elif code >= 0:
        if n <= SHORT_ROW_MAX:
            _bias_act_short_rows(code, out, bias, 1, True, r0, r1, p0, p1, k)
        else:
            _bias_act_cols(code, out, bias, r0, r1, p0, p1, k)
    elif bias.shape[0] > 0:
        for r in range(r0, r1):
            for j in range(n):
                out[r, j] += bias[j]


@njit(nogil=True, cache=True, error_model="numpy")
def linear(gemm_at, blas_int, a, b, trans_b, ldb, out, res, bias, code, p0, p1, k, one, zero):  # pragma: no cover
    """out [M, N] = a [M, K] @ B, B = b ([K, N]; its transpose when trans_b: b is then [N, K]), then + bias[n]
    (when bias is not empty) and activation `code` (none when negative): the Add and activation layers'
    operations per element (bias_activation_last's).  When res [M, N] has rows (a residual; never with an
    activation): (out + bias[n]) + res, the two Add layers' operations in their order."""
    _linear_rows(gemm_at, blas_int, a, b, trans_b, ldb, out, res, bias, code, p0, p1, k, one, zero, 0, a.shape[0])


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def linear_parallel(gemm_at, blas_int, a, b, trans_b, ldb, out, res, bias, code, p0, p1, k, one, zero,
                    tasks):  # pragma: no cover
    """linear() with A's rows cut into `tasks` ranges run on Numba's threads, each its product and its
    epilogue while the rows are in that core's cache: the same values."""
    rows = a.shape[0]
    for t in prange(tasks):
        _linear_rows(gemm_at, blas_int, a, b, trans_b, ldb, out, res, bias, code, p0, p1, k, one, zero,
                     t * rows // tasks, (t + 1) * rows // tasks)


# ---- large weights read in place: out^T = W @ A^T ------------------------------------------------------------
# A linear layer's weight as exports write it, W [N, K] (transpose_b), is the GEMM's left operand here: out^T [N, M]
# = W @ A^T by irnorm's GEMM kernels, W's rows read in place in chunks of WEIGHT_ROWS_CHUNK (a kernel's 12 rows are
# 12 sequential streams; a chunk stays in L2 while A^T's column panels pass over it), A^T [K, M] laid out per call,
# out written back transposed, then the epilogue.  The other way round -- out = A @ W^T with W^T laid out once as
# [K, N], linear_plan and blas.product below -- a 32-column panel's rows are N floats apart (12 KiB for BERT's
# [768, 3072]): a depth block of 384 rows touches 384 pages, and at batch 1 the weight comes from memory on every
# call (BERT-base holds 340 MB of them), which the prefetchers do not follow.  Measured on an AMD EPYC (Zen 4,
# AVX-512 on 256-bit units), 2 threads, weights not in cache, ms against the [K, N] layout: [128, 768] x [768, 3072]
# 3.24 / 3.81, [128, 3072] x [3072, 768] 3.68 / 3.90, [128, 768] x [768, 768] 0.76 / 0.91, [32, 768] x [768, 3072]
# 0.95 / 1.33, [8, 768] x [768, 3072] 0.50 / 1.06, [197, 768] x [768, 3072] 4.90 / 5.17; from 256 rows the [K, N]
# layout is level or ahead (its weight reuse grows with the rows, these transposes with them: [1024, 768] x [768,
# 768] 8.0 / 5.6), and up to NARROW_ROWS rows the dot products on W's rows are (0.26 against 0.48).  Whole calls,
# one process holding the model twice, calls alternating (median of the pairs' ratios): BERT-base at 128 tokens
# 0.83-0.95 of the [K, N] layout's time over six runs, GPT-2 0.92, SmolLM-sized LLaMA 0.92, Swin-T 0.96; ViT-B/16's
# 197 rows were level to 12% slower inside the network (hence WEIGHT_ROWS_MAX_ROWS 160).  The weight needs no copy:
# the model holds the exported [N, K] array (a dynamic-shape export's large weights too, which the [K, N] path left
# to OpenBLAS).  Each value of out is the same fused multiply-adds in the same order as the [K, N] path's (irnorm's
# GEMM kernels: one chain over k in KC blocks, whichever operand is which), and the epilogue's operations are
# linear()'s: the two paths agree bit for bit.  Float32 where irnorm's GEMM kernels run (AVX2 + FMA), weights of at
# least WEIGHT_ROWS_MIN_WEIGHT elements (beyond L2), A of WEIGHT_ROWS_MIN_ROWS to WEIGHT_ROWS_MAX_ROWS rows.
WEIGHT_ROWS_MIN_WEIGHT = 1 << 19
WEIGHT_ROWS_MIN_ROWS = NARROW_ROWS + 1
WEIGHT_ROWS_MAX_ROWS = 160
WEIGHT_ROWS_CHUNK = 96  # 48-192 within 3% of each other at K = 768; 96-192 ahead at K = 3072
_TILE = 16  # the transposes' square tiles


@njit(nogil=True, cache=True, inline="always")
def _transpose_cols(x, y, c0, c1):  # pragma: no cover
    """y[c, r] = x[r, c] for columns c0..c1-1 of x [R, C] (y [C, R]), in square tiles."""
    rows = x.shape[0]
    for i0 in range(0, rows, _TILE):
        i1 = min(i0 + _TILE, rows)
        for j0 in range(c0, c1, _TILE):
            j1 = min(j0 + _TILE, c1)
            for j in range(j0, j1):
                for i in range(i0, i1):
                    y[np.uintp(j), np.uintp(i)] = x[np.uintp(i), np.uintp(j)]


# fusion off: Numba fuses consecutive prange loops of one range when it sees no array flowing between them, and it
# does not see A^T and out^T read through their addresses -- fused, a thread's products read A^T before the other
# thread had written it (wrong columns on a first call: measured).  Every operand is passed by address, so the
# kernel has one compiled form whatever the flags of the caller's arrays: with a read-only weight (a model's
# constant) compiled first, a second form for writable ones computed garbage (measured; not understood, avoided).
@njit(nogil=True, cache=True, parallel={"fusion": False}, error_model="numpy")
def weight_rows_linear(a_at, w_at, out_at, at_at, outt_at, res_at, m, n, depth, bias, code, p0, p1, k,
                       tasks):  # pragma: no cover
    """out [m, n] = a [m, depth] @ w [n, depth]^T, then linear()'s epilogue (+ bias[n], + res [m, n] when res_at is
    not 0, or the activation `code`), float32, by irnorm's GEMM kernels with w as the left operand (see above);
    every array C-contiguous float32 at the address given, scratch at [depth, m] and outt [n, m].  Each stage's
    work is cut into `tasks` ranges on Numba's threads."""
    a = microgemm._view(a_at, m * depth).reshape((m, depth))
    at = microgemm._view(at_at, depth * m).reshape((depth, m))
    outt = microgemm._view(outt_at, n * m).reshape((n, m))
    out = microgemm._view(out_at, m * n).reshape((m, n))
    res = microgemm._view(res_at, m * n).reshape((m, n)) if res_at != 0 else np.zeros((0, 1), np.float32)
    for t in prange(tasks):
        _transpose_cols(a, at, t * depth // tasks, (t + 1) * depth // tasks)
    chunks = (n + WEIGHT_ROWS_CHUNK - 1) // WEIGHT_ROWS_CHUNK
    for t in prange(tasks):
        for q in range(t * chunks // tasks, (t + 1) * chunks // tasks):
            r0 = q * WEIGHT_ROWS_CHUNK
            microgemm.gemm(np.int64(min(WEIGHT_ROWS_CHUNK, n - r0)), np.int64(m), np.int64(depth),
                           np.int64(w_at + 4 * r0 * depth), np.int64(depth), np.int64(at_at), np.int64(m),
                           np.int64(outt_at + 4 * r0 * m), np.int64(m), np.int64(0), np.int64(m))
    for t in prange(tasks):
        r0, r1 = t * m // tasks, (t + 1) * m // tasks
        _transpose_cols(outt, out, r0, r1)
        _epilogue_rows(out, res, bias, code, p0, p1, k, r0, r1)


def weight_rows_fits(rows: int, n: int, depth: int, dtype: np.dtype) -> bool:
    """A product of [rows, depth] by a constant weight [n, depth]^T takes weight_rows_linear (see above)."""
    return (microgemm.ENABLED and dtype == np.float32 and WEIGHT_ROWS_MIN_ROWS <= rows <= WEIGHT_ROWS_MAX_ROWS
            and n * depth >= WEIGHT_ROWS_MIN_WEIGHT)


def weight_rows_plan(rows: int, w: np.ndarray, epilogue: Epilogue | None) -> Callable[..., None] | None:
    """For A of `rows` rows and the constant weight w [N, K] (C-contiguous float32): ``run(a_rows, out_rows[,
    res_rows])`` doing weight_rows_linear into the caller's out [rows, N]; None where weight_rows_fits does not
    hold, w is not laid out so, or the epilogue is not one it takes (a bias of another length, a residual followed
    by an activation)."""
    if w.ndim != 2 or not w.flags.c_contiguous or not weight_rows_fits(rows, w.shape[0], w.shape[1], w.dtype):
        return None
    if epilogue is not None and epilogue.residual and epilogue.code >= 0:
        return None
    n, depth = w.shape
    tail = _epilogue_args(w.dtype, n, epilogue)
    if tail is None:
        return None
    import numba

    from .pool import SCRATCH

    tasks = max(1, numba.config.NUMBA_NUM_THREADS)
    bias, code, p0, p1, k = tail
    bias = np.array(bias, copy=True)  # the kernel's own (writable) array: one compiled form (above)
    w_at = w.ctypes.data
    call = entry(weight_rows_linear, w_at, w_at, w_at, w_at, w_at, w_at, rows, n, depth, bias, code, p0, p1, k, tasks)

    def run(a_rows: np.ndarray, out_rows: np.ndarray, res_rows: np.ndarray | None = None) -> None:
        # the caller's arrays: C-contiguous float32 of these shapes (MatMul's rows path checks them)
        at = SCRATCH.get(3, (depth, rows), w.dtype)
        outt = SCRATCH.get(4, (n, rows), w.dtype)
        res_at = 0 if res_rows is None or res_rows.shape[0] == 0 else res_rows.ctypes.data
        call(a_rows.ctypes.data, w_at, out_rows.ctypes.data, at.ctypes.data, outt.ctypes.data, res_at, rows, n,
             depth, bias, code, p0, p1, k, tasks)
    return run


def linear_plan(rows: int, b: np.ndarray, epilogue: Epilogue | None,
                b_rows: Callable[[], np.ndarray] | None = None) -> Callable[..., None] | None:
    """For A of `rows` rows and the constant B [K, N] (f32/f64; C-contiguous, or the transposed view of a
    C-contiguous [N, K] weight): ``run(a_rows, out_rows[, res_rows])`` doing linear() into the caller's out
    [rows, N] (with an epilogue's residual: res_rows, C-contiguous [rows, N] of B's dtype); None where it
    does not apply (no driven BLAS, a product large enough for several threads, an output for the pool, a
    residual followed by an activation).  A product of at most NARROW_ROWS rows runs as narrow_linear on
    B's transpose [N, K]: ``b_rows()`` when given (the caller's copy, made once), else B's own memory
    when B is the transposed view of one, else a copy made here (of a C-contiguous B)."""
    dtype = b.dtype
    if dtype not in (np.float32, np.float64) or b.ndim != 2 or 0 in b.shape or rows == 0:
        return None
    if epilogue is not None and epilogue.residual and epilogue.code >= 0:
        return None
    if rows <= NARROW_ROWS:
        return _narrow_plan(rows, b, epilogue, b_rows)
    depth, n = b.shape
    if blas.column_blocks(rows, n, depth) is not None:
        return None
    tasks = linear_tasks(rows, n, depth)
    if tasks == 1 and rows * n >= LINEAR_ONE_CALL_MAX:
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
    epilogue_args = _epilogue_args(dtype, n, epilogue)
    if epilogue_args is None:
        return None
    args = (base, trans, ldb)
    tail = (*epilogue_args, dtype.type(1), dtype.type(0))
    no_res = np.zeros((0, 1), dtype)
    if tasks > 1:
        call_parallel = entry(linear_parallel, gemm_at, blas_int, c_array(2, dtype), *args, c_array(2, dtype), no_res,
                              *tail, tasks)

        def run_parallel(a_rows: np.ndarray, out_rows: np.ndarray, res_rows: np.ndarray = no_res) -> None:
            call_parallel(gemm_at, blas_int, a_rows, *args, out_rows, res_rows, *tail, tasks)
        return run_parallel
    call = entry(linear, gemm_at, blas_int, c_array(2, dtype), *args, c_array(2, dtype), no_res, *tail)

    def run(a_rows: np.ndarray, out_rows: np.ndarray, res_rows: np.ndarray = no_res) -> None:
        call(gemm_at, blas_int, a_rows, *args, out_rows, res_rows, *tail)
    return run


def linear_tasks(rows: int, n: int, depth: int) -> int:
    """Row ranges a product of [rows, depth] x [depth, n] (below blas's column blocks) is cut into on Numba's
    threads with its epilogue (linear_parallel), 1 for one call on the calling thread: from
    LINEAR_PARALLEL_FLOPS on, one range per LINEAR_PARALLEL_FLOPS (at least 2, at most LINEAR_MAX_TASKS) of at
    least LINEAR_TASK_ROWS rows.  From the sizes alone, never the thread count: OpenBLAS's sums (the float64
    and transposed-weight products) depend on the rows a call has, so the cut fixes the bits."""
    flops = 2 * rows * n * depth
    if flops < LINEAR_PARALLEL_FLOPS or rows < 2 * LINEAR_TASK_ROWS:
        return 1
    return min(rows // LINEAR_TASK_ROWS, LINEAR_MAX_TASKS, max(2, flops // LINEAR_PARALLEL_FLOPS))


def _epilogue_args(dtype: np.dtype, n: int, epilogue: Epilogue | None) -> tuple | None:
    """(bias [N or 0], code, p0, p1, constants) as the kernels take them, or None for a bias of another length."""
    bias, code, p0, p1 = (epilogue.bias, epilogue.code, epilogue.p0, epilogue.p1) if epilogue else (None, -1, 0, 0)
    bias_v = np.zeros(0, dtype) if bias is None else np.ascontiguousarray(np.asarray(bias, dtype).reshape(-1))
    if bias_v.shape[0] not in (0, n):
        return None
    ftype = dtype.type
    return bias_v, code, ftype(p0), ftype(p1), (_K64 if dtype == np.float64 else _K32)


def _narrow_plan(rows: int, b: np.ndarray, epilogue: Epilogue | None,
                 b_rows: Callable[[], np.ndarray] | None) -> Callable[..., None] | None:
    """linear_plan's run for a product of at most NARROW_ROWS rows: narrow_linear (on several threads
    from NARROW_PARALLEL_MIN multiply-adds)."""
    depth, n = b.shape
    tail = _epilogue_args(b.dtype, n, epilogue)
    if tail is None:
        return None
    if b_rows is None and not b.flags.c_contiguous and not b.T.flags.c_contiguous:
        return None  # as for the GEMM: B must be one C block (or the caller's b_rows given)
    wt = b_rows() if b_rows is not None else np.ascontiguousarray(b.T)
    if wt.shape != (n, depth) or wt.dtype != b.dtype or not wt.flags.c_contiguous:
        return None
    no_res = np.zeros((0, 1), b.dtype)
    tasks = 1
    if rows * depth * n >= NARROW_PARALLEL_MIN and n >= 32:
        import numba

        # one range per thread: equal shares (the split does not change a value; a third range on two
        # threads left one of them a second share to run alone)
        tasks = min(n // 16, max(2, numba.get_num_threads()))
    if tasks > 1:
        call = entry(narrow_linear_parallel, c_array(2, b.dtype), wt, c_array(2, b.dtype), no_res, *tail, tasks)

        def run_parallel(a_rows: np.ndarray, out_rows: np.ndarray, res_rows: np.ndarray = no_res) -> None:
            call(a_rows, wt, out_rows, res_rows, *tail, tasks)
        return run_parallel
    call = entry(narrow_linear, c_array(2, b.dtype), wt, c_array(2, b.dtype), no_res, *tail)

    def run(a_rows: np.ndarray, out_rows: np.ndarray, res_rows: np.ndarray = no_res) -> None:
        call(a_rows, wt, out_rows, res_rows, *tail)
    return run
