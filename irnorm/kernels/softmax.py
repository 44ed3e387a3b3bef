"""Softmax and log-softmax along the last axis of a 2-D row view, numerically stable (the row's
maximum subtracted first), in float32 (float64 for f64 data); float32 rows use kernels/vmath.py's
vectorized exp; one parallel task per block of rows when the data is large enough."""

from __future__ import annotations

import math

import numpy as np
from numba.core.extending import overload

from . import PARALLEL_MIN, microgemm
from .blas_blocks import NO_TRANS, ROW_MAJOR, TRANS, call_gemm
from .halfprec import cast_like
from .jit import entry, njit, prange, types
from .rowvec import VW, taps_rows_1x1
from .vmath import vexp


def bits_of(a):  # pragma: no cover - only the overload below is ever called (inside jitted code)
    """The float array's bits as a same-shape integer view (int32 for float32, int64 for float64)."""
    raise NotImplementedError


@overload(bits_of, inline="always")
def _bits_of_impl(a):
    if a.dtype == types.float32:
        return lambda a: a.view(np.int32)
    return lambda a: a.view(np.int64)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _row_max(x_bits, out_bits, out, r):
    """max(x[r]) (n >= 1), found on the bits (x_bits: bits_of(x)) as integers ordered like the floats
    (negative values' magnitude bits flipped): this LLVM vectorizes an integer max but never a float one
    (2.6x on rows of 65).  Where it differs from a float comparison the softmax does not change: a row
    with a NaN gives NaN (here the maximum may be that NaN, there exp(NaN - m) = NaN spreads through the
    sum), and -0.0 against +0.0 subtracts the same.  out[r, 0] carries the bits back (the row is
    written after).  The bit views are made once per call, not per row (a view's reference counting
    costs as much as a short row)."""
    width = x_bits.itemsize * 8 - 1
    flip = (1 << width) - 1  # the magnitude bits
    # cast_like keeps the lanes at the bits' width (Numba widens int32 arithmetic to int64)
    m = cast_like(x_bits[r, 0] ^ ((x_bits[r, 0] >> width) & flip), x_bits)
    for j in range(1, x_bits.shape[1]):
        v = x_bits[r, j]
        m = max(m, cast_like(v ^ ((v >> width) & flip), x_bits))
    out_bits[r, 0] = m ^ ((m >> width) & flip)
    return out[r, 0]


# float32 softmax has no subnormal results, as OpenVINO's CPU plugin (which runs with subnormals flushed) has none:
# an exponential of a difference below FLUSH_BELOW (e**-87 = 1.6e-38, a few times float32's smallest normal) is
# 0, and so is a probability below TINY32.  A subnormal operand costs the CPU a microcode assist per operation
# -- in the exponential, in the scaling, and in every product that reads the probabilities: Swin's shifted
# windows add -100 to the masked scores, and the product of their probabilities with V took 79-87 us against
# 4.7 for the unshifted block of the same shape (Xeon).  Their sums do not change: each row's sum is at least
# 1 (its maximum's e**0) and a float64 sum of 1 and terms below 2**-126 is 1.
FLUSH_BELOW = -87.0
TINY32 = float(np.finfo(np.float32).tiny)

# Rows are taken a block at a time, pass by pass (maxima, exponentials, sums, scaling): one row's chain
# max -> exp -> sum -> scale waits on itself, BLOCK independent rows keep the core busy (ViT's 260 rows
# of 65: 19.8 -> 14 us).  Each row's arithmetic is unchanged.
BLOCK = 32


@njit(nogil=True, cache=True, error_model="numpy")
def _exp_rows(x, out, r0, r1, ms, diff):
    """out[r] = exp(x[r] - ms[r - r0]) for rows r0..r1-1 of C-contiguous x and out: the differences
    first, into `diff` (scratch of at least (r1 - r0) * n elements), then exp from there into the block's
    rows of out as one flat run, in whole vectors (per row, a row of 65 left one element to a scalar exp).
    Out of place: the same exp in place over out ran 1.5x slower ([260, 65]: 17.4 against 11.6 us).
    No fastmath: reassociation would undo vexp's rounding step."""
    n = x.shape[1]
    q = 0
    for r in range(r0, r1):
        m = ms[r - r0]
        d = diff[q:q + n]  # indices from 0: no wraparound checks, the loop vectorizes
        xr = x[r]
        for j in range(n):
            d[j] = xr[j] - m
        q += n
    seg = out.reshape(-1)[r0 * n:r1 * n]
    src = diff[:q]
    if out.itemsize == 4:  # float32: no subnormal exponentials (FLUSH_BELOW)
        zero, low = cast_like(0.0, out), cast_like(FLUSH_BELOW, out)
        for i in range(q):
            d = src[i]
            e = vexp(low if d < low else d)
            seg[i] = zero if d < low else e
    else:
        for i in range(q):
            seg[i] = vexp(src[i])


@njit(nogil=True, cache=True, fastmath={"reassoc"}, error_model="numpy")
def _sum_rows(out, r0, r1, sums):
    """Each row's sum in float64, reassociated so that it vectorizes."""
    for r in range(r0, r1):
        s = 0.0
        for j in range(out.shape[1]):
            s += out[r, j]
        sums[r - r0] = s


@njit(nogil=True, cache=True, error_model="numpy")
def _block(x, out, x_bits, out_bits, r0, r1, log, ms, sums, diff):
    """Softmax (or log-softmax) of rows r0..r1-1 (at most BLOCK); ms, sums: BLOCK-long scratch, diff:
    scratch of BLOCK rows (or r1 - r0) of x's width."""
    n = x.shape[1]
    for r in range(r0, r1):
        m = _row_max(x_bits, out_bits, out, r)  # in x's type: float32 rows take the vectorized exp
        if m == -np.inf:  # all -inf (a fully masked row): let NaN arise as in the formula
            m = cast_like(0.0, x)
        ms[r - r0] = m
    _exp_rows(x, out, r0, r1, ms, diff)
    _sum_rows(out, r0, r1, sums)
    for r in range(r0, r1):
        s = sums[r - r0]
        if log:
            ls = math.log(s) + ms[r - r0]
            for j in range(n):
                out[r, j] = x[r, j] - ls
        elif out.itemsize == 4:
            inv = 1.0 / s
            zero, tiny = cast_like(0.0, out), cast_like(TINY32, out)
            for j in range(n):
                v = out[r, j] * inv
                out[r, j] = zero if v < tiny else v  # (NaN stays)
        else:
            inv = 1.0 / s
            for j in range(n):
                out[r, j] *= inv


@njit(nogil=True, cache=True, error_model="numpy")
def _rows_serial(x, out, log):
    x_bits, out_bits = bits_of(x), bits_of(out)
    ms, sums = np.empty(BLOCK, x.dtype), np.empty(BLOCK, np.float64)
    diff = np.empty(min(BLOCK, x.shape[0]) * x.shape[1], x.dtype)
    for r0 in range(0, x.shape[0], BLOCK):
        _block(x, out, x_bits, out_bits, r0, min(x.shape[0], r0 + BLOCK), log, ms, sums, diff)


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def _rows_parallel(x, out, log):
    x_bits, out_bits = bits_of(x), bits_of(out)
    rows = x.shape[0]
    for b in prange((rows + BLOCK - 1) // BLOCK):
        r0 = b * BLOCK
        _block(x, out, x_bits, out_bits, r0, min(rows, r0 + BLOCK), log, np.empty(BLOCK, x.dtype),
               np.empty(BLOCK, np.float64), np.empty(BLOCK * x.shape[1], x.dtype))


def softmax_rows(x: np.ndarray, log: bool = False) -> np.ndarray:
    """Softmax (or log-softmax) of each row of a 2-D float32/float64 array (a new C-contiguous array)."""
    x = x if x.flags.c_contiguous else np.ascontiguousarray(x)  # the kernels take a block's rows as one run
    out = np.empty(x.shape, x.dtype)
    if x.size:
        if x.size >= PARALLEL_MIN and x.shape[0] > 1:
            _rows_parallel(x, out, log)
        else:  # x and out are C-contiguous 2-D arrays of x's dtype here: one entry point per (dtype, log)
            rows = _SERIAL.get((x.dtype, log))
            if rows is None:
                rows = _SERIAL[(x.dtype, log)] = entry(_rows_serial, out, out, log)
            rows(x, out, log)
    return out


_SERIAL: dict = {}  # (dtype, log) -> _rows_serial's entry point (jit.entry)


def softmax(x: np.ndarray, axis: int, cdt: np.dtype, log: bool = False) -> np.ndarray:
    """Softmax along `axis` of any-rank data, computed in `cdt` (returns cdt)."""
    xc = np.asarray(x, dtype=cdt)
    last = axis == xc.ndim - 1
    moved = xc if last else np.moveaxis(xc, axis, -1)
    rows = np.ascontiguousarray(moved).reshape(-1, moved.shape[-1]) if moved.ndim else moved.reshape(1, 1)
    y = softmax_rows(rows, log).reshape(moved.shape)
    return y if last else np.moveaxis(y, -1, axis)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _masked(acc, above_diagonal, has_mask, mask, mb, mi, mj, bool_mask, zero, minus_inf):  # pragma: no cover
    """A scaled score with the causal mask (-inf above the diagonal) and then mask[mb, mi, mj] added: additive,
    or boolean (True keeps the score, +0 as the additive form; False masks it)."""
    if above_diagonal:
        acc += minus_inf
    if has_mask:
        mv = mask[mb, mi, mj]
        if bool_mask:
            acc += zero if mv else minus_inf
        else:
            acc += mv
    return acc


def weighted_rows(w, w0, src, s0, offs, taps, dst, d0, cols):  # pragma: no cover - only the overload below runs
    """dst[d0 + c] = 0 + w[w0] src[s0 + offs[0] + c] + ... + w[w0 + taps - 1] src[s0 + offs[taps - 1] + c] for c <
    cols, the terms in order, each a multiply then an add, on flat C-contiguous arrays of one float type: float32
    by rowvec's vector code (taps_rows_1x1, VW columns a call: rows this short leave Numba's loops scalar), other
    types by a loop."""
    raise NotImplementedError


@overload(weighted_rows, inline="always")
def _weighted_rows_impl(w, w0, src, s0, offs, taps, dst, d0, cols):
    if src.dtype == types.float32:
        def vectors(w, w0, src, s0, offs, taps, dst, d0, cols):
            for c0 in range(0, cols, VW):
                taps_rows_1x1(src.ctypes.data + (s0 + c0) * 4, 0, offs.ctypes.data, w.ctypes.data + w0 * 4, taps,
                              dst.ctypes.data + (d0 + c0) * 4, 0, min(VW, cols - c0))
        return vectors

    def loop(w, w0, src, s0, offs, taps, dst, d0, cols):
        for c in range(cols):
            dst[d0 + c] = 0
        for t in range(taps):
            wt, at = w[w0 + t], s0 + offs[t]
            for c in range(cols):
                dst[d0 + c] += wt * src[at + c]
    return loop


@njit(nogil=True, cache=True, error_model="numpy")
def mask_table(mask, bool_mask, causal, n_q, n_s, like):  # pragma: no cover
    """The causal mask (-inf above the diagonal) and `mask` [Bm, Lm, Sm] (Bm any, Lm in {1, L}, Sm in {1, S};
    Sm == 0: no mask; additive, or boolean when `bool_mask`: False masks) as one additive table [Bm, L * S] of
    like's type (0 + the causal term + the mask term, as _masked adds them to a score); [0, 0] when there is
    neither (nothing to add)."""
    has_mask = mask.shape[2] > 0
    if not (has_mask or causal):
        return np.empty((0, 0), like.dtype)
    per_key = mask.shape[2] > 1
    minus_inf, zero = cast_like(-np.inf, like), cast_like(0.0, like)
    n_tables = mask.shape[0] if has_mask else 1
    table = np.empty((n_tables, n_q * n_s), like.dtype)
    for mb in range(n_tables):
        for i in range(n_q):
            mi = i if mask.shape[1] > 1 else 0
            for j in range(n_s):
                table[mb, i * n_s + j] = _masked(zero, causal and j > i, has_mask, mask, mb, mi,
                                                 j if per_key else 0, bool_mask, zero, minus_inf)
    return table


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _scale_and_mask(flat_scores, scale, table, b):  # pragma: no cover
    """A head's scores (flat [L * S]) times scale, plus row b of the table (row 0 when it has one; none when it
    is empty), as one run."""
    if table.shape[0] == 0:
        for x in range(flat_scores.shape[0]):
            flat_scores[x] = flat_scores[x] * scale
        return
    add = table[b if table.shape[0] > 1 else 0]
    for x in range(flat_scores.shape[0]):
        flat_scores[x] = flat_scores[x] * scale + add[x]


@njit(nogil=True, cache=True, error_model="numpy")
def attention_rows(q, k, v, mask, bool_mask, scale, causal, out):
    """Scaled dot-product attention for small heads, one call for all of them: q [B, L, E], k [B, S, E],
    v [B, S, Ev] -> out [B, L, Ev] (all C-contiguous, one float type).  The causal mask (-inf above the
    diagonal) and `mask` [Bm, Lm, Sm] (Bm in {1, B}, Lm in {1, L}, Sm in {1, S}; Sm == 0: no mask; additive,
    or boolean when `bool_mask`: False masks) become one additive table [Bm, L, S] first.  Per head: K laid
    out as [E, S], each query row's scores q_i K^T (weighted_rows: E terms in order), scaled and the table
    added over the head's L x S scores as one run, the softmax of _block, then each output row P_i V
    (weighted_rows: S terms in order).  Row by row these short products ran at scalar speed in loops
    (LLaMA's 4 heads of [8, 8]: 9.5 -> 2.3 us)."""
    n_batch, n_q, n_e = q.shape
    n_s, n_ev = k.shape[1], v.shape[2]
    table = mask_table(mask, bool_mask, causal, n_q, n_s, q)
    scores = np.empty((n_q, n_s), q.dtype)
    probs = np.empty((n_q, n_s), q.dtype)
    flat_scores, flat_probs = scores.reshape(-1), probs.reshape(-1)
    key_t = np.empty(n_e * n_s, q.dtype)  # one head's K as [E, S]
    q_flat, v_flat, out_flat = q.reshape(-1), v.reshape(-1), out.reshape(-1)
    by_e, by_s = np.arange(n_e) * n_s, np.arange(n_s) * n_ev  # where weighted_rows finds its terms' rows
    scores_bits, probs_bits = bits_of(scores), bits_of(probs)
    ms, sums = np.empty(BLOCK, q.dtype), np.empty(BLOCK, np.float64)
    diff = np.empty(min(BLOCK, n_q) * n_s, q.dtype)
    for b in range(n_batch):
        for j in range(n_s):
            for e in range(n_e):
                key_t[e * n_s + j] = k[b, j, e]
        for i in range(n_q):
            weighted_rows(q_flat, (b * n_q + i) * n_e, key_t, 0, by_e, n_e, flat_scores, i * n_s, n_s)
        _scale_and_mask(flat_scores, scale, table, b)
        for r0 in range(0, n_q, BLOCK):
            _block(scores, probs, scores_bits, probs_bits, r0, min(n_q, r0 + BLOCK), False, ms, sums, diff)
        for i in range(n_q):
            weighted_rows(flat_probs, i * n_s, v_flat, b * n_s * n_ev, by_s, n_s, out_flat, (b * n_q + i) * n_ev,
                          n_ev)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _head_at(a, b):  # pragma: no cover
    """The address of head b's [rows, cols] matrix in a [B1, B2, rows, cols] (B = B1 * B2 heads)."""
    return a.ctypes.data + (b // a.shape[1]) * a.strides[0] + (b % a.shape[1]) * a.strides[1]


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _attend_heads(gemm_at, blas_int, q, k, v, table, scale, out, h0, h1):  # pragma: no cover
    """Heads h0..h1-1 of attention_gemm, on the calling thread, with scratch of their own (table: mask_table's)."""
    n_q, n_e = q.shape[2], q.shape[3]
    n_s, n_ev = k.shape[2], v.shape[3]
    item = q.itemsize
    ldq, ldk, ldv = q.strides[2] // item, k.strides[2] // item, v.strides[2] // item
    one, zero = cast_like(1.0, q), cast_like(0.0, q)
    scores = np.empty((n_q, n_s), q.dtype)
    probs = np.empty((n_q, n_s), q.dtype)
    scores_bits, probs_bits = bits_of(scores), bits_of(probs)
    ms, sums, diff = np.empty(BLOCK, q.dtype), np.empty(BLOCK, np.float64), np.empty(BLOCK * n_s, q.dtype)
    key_t = np.empty((n_e, n_s), q.dtype) if gemm_at == 0 else np.empty((0, 0), q.dtype)
    for b in range(h0, h1):
        if gemm_at == 0:  # irnorm's float32 GEMM kernels (kernels/microgemm.py): K laid out as [E, S] first
            kh = k[b // k.shape[1], b % k.shape[1]]
            for j in range(n_s):
                for e in range(n_e):
                    key_t[e, j] = kh[j, e]
            microgemm.gemm(np.int64(n_q), np.int64(n_s), np.int64(n_e), np.int64(_head_at(q, b)), np.int64(ldq),
                           np.int64(key_t.ctypes.data), np.int64(n_s), np.int64(scores.ctypes.data), np.int64(n_s),
                           np.int64(0), np.int64(n_s))
        else:
            call_gemm(gemm_at, blas_int, ROW_MAJOR, NO_TRANS, TRANS, n_q, n_s, n_e, one, _head_at(q, b), ldq,
                      _head_at(k, b), ldk, zero, scores.ctypes.data, n_s)
        _scale_and_mask(scores.reshape(-1), scale, table, b)
        for r0 in range(0, n_q, BLOCK):
            _block(scores, probs, scores_bits, probs_bits, r0, min(n_q, r0 + BLOCK), False, ms, sums, diff)
        if gemm_at == 0:
            microgemm.gemm(np.int64(n_q), np.int64(n_ev), np.int64(n_s), np.int64(probs.ctypes.data), np.int64(n_s),
                           np.int64(_head_at(v, b)), np.int64(ldv), np.int64(out.ctypes.data + b * n_q * n_ev * item),
                           np.int64(n_ev), np.int64(0), np.int64(n_ev))
        else:
            call_gemm(gemm_at, blas_int, ROW_MAJOR, NO_TRANS, NO_TRANS, n_q, n_ev, n_s, one, probs.ctypes.data, n_s,
                      _head_at(v, b), ldv, zero, out.ctypes.data + b * n_q * n_ev * item, n_ev)


@njit(nogil=True, cache=True, parallel=True, error_model="numpy")
def attention_gemm(gemm_at, blas_int, q, k, v, mask, bool_mask, scale, causal, out, tasks):  # pragma: no cover
    """Scaled dot-product attention, one call for all heads: q [B1, B2, L, E], k [B1, B2, S, E], v [B1, B2,
    S, Ev] (any strides with rows of unit stride: the heads of a fused QKV projection are views) -> out
    [B1 * B2, L, Ev] (C-contiguous; mask as attention_rows', over the B1 * B2 heads).  Per head: the scores
    q k^T, scaled and the mask table (mask_table) added as attention_rows does, the softmax of _block, then
    probs v into the output; the two products by cblas_?gemm at gemm_at, or by irnorm's float32 GEMM
    kernels (microgemm.gemm, K laid out as [E, S] first) when gemm_at is 0.  The heads in `tasks` groups
    over the threads (1: the calling thread only; the bits do not depend on it).  The operations of the
    BLAS path the op takes otherwise (matmul, scale, masks, softmax_rows, matmul) without a call, an
    allocation, a copy of the strided heads and a batch loop in numpy around each of them."""
    n_batch = q.shape[0] * q.shape[1]
    table = mask_table(mask, bool_mask, causal, q.shape[2], k.shape[2], q)
    if tasks == 1:
        _attend_heads(gemm_at, blas_int, q, k, v, table, scale, out, 0, n_batch)
        return
    for t in prange(tasks):
        _attend_heads(gemm_at, blas_int, q, k, v, table, scale, out, t * n_batch // tasks, (t + 1) * n_batch // tasks)


@njit(nogil=True, cache=True, error_model="numpy")
def separable_attention(x, d, out):  # pragma: no cover
    """MobileViTv2's separable self-attention on x [B, 1 + 2d, R, N] (C-contiguous) -> out [B, d, R, N]: with the
    query q = x[:, 0], keys k = x[:, 1:1 + d] and values v = x[:, 1 + d:], s = softmax(q) along N (_rows_serial:
    SoftMax's own rows), context[b, c, r] = sum over n of k[b, c, r, n] * s[b, r, n] (each product rounded, then
    added in order), out = relu(v) * context -- the layers VariadicSplit, SoftMax, Multiply, ReduceSum, Relu,
    Multiply in one call."""
    n_b, n_r, n_n = x.shape[0], x.shape[2], x.shape[3]
    zero = cast_like(0.0, x)
    s = np.empty((n_r, n_n), x.dtype)
    for b in range(n_b):
        _rows_serial(x[b, 0], s, False)
        for c in range(d):
            for r in range(n_r):
                acc = zero
                for n in range(n_n):
                    acc += x[b, 1 + c, r, n] * s[r, n]
                for n in range(n_n):
                    v = x[b, 1 + d + c, r, n]
                    out[b, c, r, n] = (zero if v < zero else v) * acc
