"""The one moments engine behind every mean/variance and L2 op.

Any reduction over a set of axes is first canonicalized to a contiguous
``(outer, reduce, inner)`` view (a transpose copy only when the axes cannot be
made contiguous).  For each (outer, inner) slice the kernel computes stable
moments (mean, then the sum of squared deviations about it: no
E[x^2]-E[x]^2 cancellation), turns them into ``shift`` and ``mult`` by the op's
finalize rule, and applies

    y = (x - shift) * mult * scale[k] + bias[k]

in the compute dtype (float32, or float64 for f64 data).  The affine index is
``k = (o % o_mod) * nseg + r // seg_len``: one value per run of ``seg_len``
reduced elements, which covers per-channel group norm, per-group and
per-instance scale, and elementwise (seg_len=1) layer-norm scale.

How the arithmetic is organized (and why):

* Rows (inner == 1) are cut into fixed chunks of ``CHUNK`` elements (``2 * CHUNK`` for f16/bf16
  data: the same 8 KiB, and half the per-chunk overhead per element).  A chunk
  gets a provisional mean m (pass 1: from its first ``PROBE`` elements, kept when
  within two standard deviations of the chunk's mean, else from all of them), then
  sum(x - m) and sum((x - m)^2) (pass 2), both as compute-type vector-lane sums of a few dozen terms
  each; float64 then corrects them exactly (mean = m + sum(d)/n, M2 = sum(d^2)
  - sum(d)^2/n) and merges chunks in order with Chan's formula.  Rounding is
  thus relative to the spread, not to the magnitude of x, and a chunk is read
  from memory once for the statistics and once for the output.  The strided
  path (inner > 1) does the same per column over chunks of ``RCHUNK`` rows.
* A chunk whose compute-type squares could have overflowed or lost bits to
  underflow (or that holds inf/NaN) is redone in float64.  Callers that ask for
  the statistics (``want_stats``) get plain float64 two-pass sums throughout.
* Every element's arithmetic is fixed by the data layout alone (chunk
  boundaries, merge order, lane structure of the compiled loops), never by the
  thread count or the work split: whole rows per task when there are enough
  rows, (row, chunk) tasks when there are few long rows, one serial call for
  tiny tensors (a parallel launch costs microseconds) -- same bits every way.
* Reassociation is allowed only for the in-chunk lane sums
  (``fastmath={"reassoc"}`` on those loops, with ``x - m`` computed outside
  the fastmath scope) so that LLVM vectorizes them with a fixed lane count.
* The float64 shift is applied as two compute-type parts (``(x - hi) - lo``),
  so a large mean with a small spread loses no low bits (mean 1e4, std 1e-2
  stays exact to the float32 rounding of the result).  Where the mean is within
  about one standard deviation of zero (|mean * mult| <= 1) a per-segment affine
  is one FMA instead, ``x * m + (bias - mean * m)``: its rounding is then as small.
* f16 data is converted inside the kernels (F16C ``vcvtph2ps``/``vcvtps2ph``,
  round to nearest even, via LLVM ``half``), bf16 by exact bit shifts (round
  to nearest even on the way out, like ml_dtypes), so no widened copies are made
  (``halfprec``: the conversions every kernel shares).
* An activation after the normalization (a planner fusion: GroupNorm + Swish) is an *epilogue*
  argument of the row kernels, ``epi``: None, or (code, p0, p1, constants) as kernels.activation
  takes them.  It runs on each chunk or block of rows right after the chunk is written, while it is
  in L1, instead of a second pass over the whole output: the same operations on the same stored
  values, so the same bits.  ``epi is None`` is decided when Numba compiles (a NoneType argument:
  the branch is pruned), so the plain kernels carry no trace of it.
* Division by zero follows numpy (error_model="numpy"): eps=0 on a constant
  slice gives NaN, never an exception.
* ``cache=True`` everywhere: compiled kernels persist across processes in
  ``__pycache__`` beside this file, or -- when that directory is not writable
  (a read-only install) -- in Numba's per-user cache directory
  (``$NUMBA_CACHE_DIR`` if set, else ``~/.cache/numba`` style locations).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import PARALLEL_MIN
from .halfprec import cast_like, is_normal, load, store
from .jit import c_array, entry, njit, prange
from .pool import OUTPUTS

PROVIDED = OUTPUTS.provided  # .arrays: the caller's out= arrays waiting in this thread (small calls read it)

# finalize rules: how (var or sum of squares, eps) becomes the multiplier
INSIDE_SQRT = 0  # 1 / sqrt(var + eps)           (MVN inside_sqrt, GroupNorm, LayerNorm, BatchNorm-like)
OUTSIDE_SQRT = 1  # 1 / (sqrt(var) + eps)        (MVN-6 outside_sqrt)
CENTER_ONLY = 2  # 1                              (MVN normalize_variance=false)
L2_ADD = 3  # 1 / sqrt(sum x^2 + eps)   (NormalizeL2 add, no centering)
L2_MAX = 4  # 1 / sqrt(max(sum x^2, eps))  (NormalizeL2 max, no centering)

CHUNK = 2048  # elements per statistics chunk: L1-resident for pass 2, a few dozen terms per vector lane
PROBE = 256  # elements a long chunk's provisional mean is first taken from (see _chunk_stats)
RCHUNK = 32  # rows per statistics chunk of the strided (inner > 1) path: terms per compute-type sum
_REDUCE_FM = {"reassoc", "contract"}  # reassociation (vectorized lane sums) and FMA contraction; nothing else

# ---- statistics ---------------------------------------------------------------------------------


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _finalize(m2: float, n: int, mode: int, eps: float) -> float:
    if mode == INSIDE_SQRT:
        return 1.0 / math.sqrt(m2 / n + eps)
    if mode == OUTSIDE_SQRT:
        return 1.0 / (math.sqrt(m2 / n) + eps)
    if mode == CENTER_ONLY:
        return 1.0
    if mode == L2_ADD:
        return 1.0 / math.sqrt(m2 + eps)
    return 1.0 / math.sqrt(max(m2, eps))


@njit(nogil=True, cache=True, error_model="numpy")
def _dev(v, m):
    """x - m, compiled WITHOUT fastmath so that reassociation in the callers can never move `m`
    into the running sums (LLVM keeps per-instruction flags when it inlines this)."""
    return v - m


@njit(nogil=True, cache=True, fastmath=_REDUCE_FM, error_model="numpy")
def _chunk_sum(xs, like):
    """Sum of one chunk in the compute type (vector lanes; a few dozen terms per lane)."""
    s = cast_like(0.0, like)
    for i in range(xs.shape[0]):
        s += load(xs[i])
    return s


@njit(nogil=True, cache=True, fastmath=_REDUCE_FM, error_model="numpy")
def _chunk_dev(xs, m):
    """(sum d, sum d^2) of d = x - m over one chunk, in the compute type."""
    s1 = m - m
    s2 = m - m
    for i in range(xs.shape[0]):
        d = _dev(load(xs[i]), m)
        s1 += d
        s2 += d * d
    return s1, s2


@njit(nogil=True, cache=True, fastmath=_REDUCE_FM, error_model="numpy")
def _chunk_sumsq(xs, like):
    s = cast_like(0.0, like)
    for i in range(xs.shape[0]):
        v = load(xs[i])
        s += v * v
    return s


@njit(nogil=True, cache=True, fastmath=_REDUCE_FM, error_model="numpy")
def _chunk_sum64(xs):
    s = 0.0
    for i in range(xs.shape[0]):
        s += np.float64(load(xs[i]))
    return s


@njit(nogil=True, cache=True, fastmath=_REDUCE_FM, error_model="numpy")
def _chunk_sqdev64(xs, m):
    s = 0.0
    for i in range(xs.shape[0]):
        d = _dev(np.float64(load(xs[i])), m)
        s += d * d
    return s


# A compute-type sum of squares inside this range had no term overflow and no term lose bits to
# underflow (f32: terms below 1.2e-38 are subnormal; a 4096-element chunk of them is < 1e-25 * 5e-10).
_SAFE_MIN = 1e-25
_SAFE_MAX = 1e37


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _chunk_stats(xs, center, like, exact):
    """(mean, M2) of one chunk in float64; without centering (0, sum x^2).

    Pass 1 gives a provisional mean m (compute type); pass 2 (from L1) sums d = x - m and d^2, and
    the float64 result is corrected exactly: mean = m + sum(d)/n, M2 = sum(d^2) - sum(d)^2/n.  Only
    the in-chunk lane sums run in the compute type, over CHUNK elements: their error is relative to
    the spread about m, not to the magnitude of x (no E[x^2]-E[x]^2 cancellation).  A chunk whose
    squares could have overflowed or underflowed (or that holds inf/NaN) is redone in float64.
    With `exact` (callers that return the statistics) both passes run in float64."""
    n = xs.shape[0]
    if exact:
        mean = _chunk_sum64(xs) / n if center else 0.0
        return mean, _chunk_sqdev64(xs, mean)
    if not center:
        q = np.float64(_chunk_sumsq(xs, like))
        if not (q >= _SAFE_MIN and q <= _SAFE_MAX):
            q = _chunk_sqdev64(xs, 0.0)
        return 0.0, q
    inv = 1.0 / n
    if n > 2 * PROBE:
        # A provisional mean from the chunk's first PROBE elements saves a pass over the rest.  Being
        # the mean of a subset, it is within std * sqrt(n / PROBE) of the chunk's mean anyway; it is
        # kept only within two standard deviations (n * delta^2 <= 4 * M2), so M2's rounding stays
        # within a few times the spread's.  Otherwise: the full pass, as for short chunks.
        m = cast_like(_chunk_sum(xs[:PROBE], like) * (1.0 / PROBE), like)
        s1, s2 = _chunk_dev(xs, m)
        q = np.float64(s2)
        d1 = np.float64(s1)
        m2 = q - d1 * d1 * inv
        if q >= _SAFE_MIN and q <= _SAFE_MAX and d1 * d1 * inv <= 4.0 * m2:
            return np.float64(m) + d1 * inv, m2
    m = cast_like(_chunk_sum(xs, like) * inv, like)
    s1, s2 = _chunk_dev(xs, m)
    q = np.float64(s2)
    if q >= _SAFE_MIN and q <= _SAFE_MAX:
        d1 = np.float64(s1)
        return np.float64(m) + d1 * inv, max(q - d1 * d1 * inv, 0.0)
    mean = _chunk_sum64(xs) / n
    return mean, _chunk_sqdev64(xs, mean)


@njit(nogil=True, cache=True, inline="always")
def _chunk_len(a):
    """Elements per row chunk for a's element type: CHUNK, or 2 * CHUNK for 2-byte f16/bf16 bits."""
    if a.itemsize == 2:
        return 2 * CHUNK
    return CHUNK


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _merge(cnt, mean, m2, nc, mc, m2c):
    """Chan et al.: fold a chunk's (nc, mc, m2c) into the running (cnt, mean, m2)."""
    tot = cnt + nc
    d = mc - mean
    f = nc / tot
    return tot, mean + d * f, m2 + m2c + d * d * (cnt * f)


@njit(nogil=True, cache=True, error_model="numpy")
def _row_stats(row, center, like, exact):
    n = row.shape[0]
    ch = _chunk_len(row)
    if n <= ch:
        return _chunk_stats(row, center, like, exact)
    cnt = 0
    mean = 0.0
    m2 = 0.0
    for c0 in range(0, n, ch):
        xs = row[c0:min(c0 + ch, n)]
        mc, m2c = _chunk_stats(xs, center, like, exact)
        cnt, mean, m2 = _merge(cnt, mean, m2, xs.shape[0], mc, m2c)
    return mean, m2


# ---- apply --------------------------------------------------------------------------------------


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _split(shift, like):
    """A float64 shift as two compute-type parts hi + lo (lo carries the bits hi rounds away)."""
    hi = cast_like(shift, like)
    return hi, cast_like(shift - np.float64(hi), like)


@njit(nogil=True, cache=True, fastmath={"contract"}, error_model="numpy")
def _apply_span(xs, ys, r0, hi, lo, mu, scale, bias, base, seg_len):
    """ys[j] = ((xs[j] - hi) - lo) * mu * scale[k] + bias[k] for reduced index r = r0 + j."""
    n = xs.shape[0]
    if seg_len == 1:
        sc = scale[base + r0: base + r0 + n]
        bi = bias[base + r0: base + r0 + n]
        for j in range(n):
            store(ys, j, ((load(xs[j]) - hi) - lo) * mu * sc[j] + bi[j])
        return
    # With the mean within about one standard deviation of zero (|mean * mu| <= 1), x * m + (b - mean * m)
    # -- one FMA an element -- rounds no worse than ((x - hi) - lo) * m + b: both errors are a few
    # ulps of the output's scale.  A far-off-zero mean keeps the exact two-part shift.
    shift = np.float64(hi) + np.float64(lo)
    near_zero = abs(shift * mu) <= 1.0
    j = 0
    while j < n:
        r = r0 + j
        k = r // seg_len
        e = min(n, (k + 1) * seg_len - r0)
        s = scale[base + k]
        m = mu * s
        b = bias[base + k]
        normal = is_normal(m, scale)
        c = cast_like(np.float64(b) - shift * np.float64(m), scale) if near_zero and normal else b
        form = 0 if near_zero and normal else (1 if normal or m == 0.0 and (mu == 0.0 or s == 0.0) else 2)
        if e - j >= SHORT_SEGMENT:  # a view from 0: the loop vectorizes
            _affine_run(xs[j:e], ys[j:e], 0, e - j, form, hi, lo, mu, s, m, c)
        elif form == 0:  # the row itself (SHORT_SEGMENT)
            for i in range(j, e):
                q = np.uintp(i)
                store(ys, q, load(xs[q]) * m + c)
        else:
            _affine_run(xs, ys, j, e, form, hi, lo, mu, s, m, c)
        j = e


# Segments (a per-channel affine's runs) shorter than this are written through the row with unsigned
# indices, not a view each: a view's reference counting cost more than a short segment's arithmetic
# (MobileViTv2's GroupNorms: [1, 64, 4, 1], 64 segments of 4, 2.6 -> 1.4 us; [1, 32, 4, 16] 2.0 -> 1.3);
# longer ones through a view indexed from 0, whose loop vectorizes best (through the row, [1, 320, 64, 64]'s
# runs of 4096 took 1.75x).  The exact forms (a mean far from zero) take _affine_run either way.
SHORT_SEGMENT = 256


@njit(nogil=True, cache=True, inline="always", fastmath={"contract"}, error_model="numpy")
def _affine_run(xs, ys, i0, i1, form, hi, lo, mu, s, m, c):  # pragma: no cover
    """ys[i] for i in i0..i1-1 by _apply_span's three forms: 0 x * m + c (c = bias - mean * m), 1 ((x - hi) -
    lo) * m + c (c = bias), 2 ((x - hi) - lo) * mu * s + c (mu * s overflowed or went subnormal)."""
    if form == 0:
        for i in range(i0, i1):
            store(ys, i, load(xs[i]) * m + c)
    elif form == 1:
        for i in range(i0, i1):
            store(ys, i, ((load(xs[i]) - hi) - lo) * m + c)
    else:
        for i in range(i0, i1):
            store(ys, i, ((load(xs[i]) - hi) - lo) * mu * s + c)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _finish_row(o, mean, m2, red, mode, eps, want, shift_out, mult_out, like):
    mult = _finalize(m2, red, mode, eps)
    if want:
        shift_out[o] = mean
        mult_out[o] = mult
    hi, lo = _split(mean, like)
    return hi, lo, cast_like(mult, like)


# kernels.activation's activate_in_place, bound by _activation() before the first kernel with an epilogue is
# made (an import of its own, ~11 ms: the sample's start-up needs no activation).  The plain kernels never read
# it: their `epi is not None` branch is pruned before typing.
activate_in_place: Any = None


def _activation() -> Any:
    """kernels.activation, imported now, its activate_in_place bound for _epilogue."""
    global activate_in_place
    from . import activation

    activate_in_place = activation.activate_in_place
    return activation


@njit(nogil=True, cache=True, inline="always")
def _epilogue(epi, ys):
    """The fused activation (see the module docstring) in place on ys, a C-contiguous 1-D span just
    written; nothing when epi is None (pruned at compile time)."""
    if epi is not None:
        activate_in_place(epi[0], ys, epi[1], epi[2], epi[3])


# ---- short rows (a transformer's LayerNorm or RMSNorm over 32-2048 features) ------------------------
# The same arithmetic as _chunk_stats + _apply_span for rows of at most one chunk (_chunk_len) with a
# per-element affine, indexing x[o, i] instead of slicing views (each view's reference counting cost
# more than the row's statistics: [256, 32] 20 -> 7 us), and a block of rows at a time, pass by pass:
# one row's chain (sum -> mean -> deviations -> sqrt -> apply) waits on itself, SHORT_BLOCK independent
# rows keep the core busy ([65, 64] 5.0 -> 2.3 us, [197, 64] 13.7 -> 5.6 us; the results do not change).
# Rows longer than 2 * PROBE take the provisional mean from their first PROBE elements, as _chunk_stats
# does; a block then holds as many rows as fit BLOCK_BYTES, so that its passes read from L1.

SHORT_BLOCK = 32  # rows per block at most (their per-row values: 5 small arrays)
BLOCK_BYTES = 32 * 1024  # a block's rows of more than 2 * PROBE elements: at most this many bytes


@njit(nogil=True, cache=True, inline="always")
def _block_rows(x):
    """Rows per block of _short_block for x's row length."""
    n = x.shape[1]
    if n <= 2 * PROBE:
        return SHORT_BLOCK
    return max(1, min(SHORT_BLOCK, BLOCK_BYTES // (n * x.itemsize)))


@njit(nogil=True, cache=True, fastmath=_REDUCE_FM, error_model="numpy")
def _block_sums(x, r0, r1, center, sums, cols):
    """sums[o - r0] = the compute-type sum of row o's first `cols` elements (center) or of its squares
    (not center)."""
    for o in range(r0, r1):
        s = cast_like(0.0, sums)
        if center:
            for i in range(cols):
                s += load(x[o, i])
        else:
            for i in range(cols):
                v = load(x[o, i])
                s += v * v
        sums[o - r0] = s


@njit(nogil=True, cache=True, fastmath=_REDUCE_FM, error_model="numpy")
def _block_devs(x, r0, r1, means, s1s, s2s):
    """(sum d, sum d^2) of d = x - means[o - r0] for each row o, in the compute type."""
    for o in range(r0, r1):
        m = means[o - r0]
        s1 = m - m
        s2 = m - m
        for i in range(x.shape[1]):
            d = _dev(load(x[o, i]), m)
            s1 += d
            s2 += d * d
        s1s[o - r0] = s1
        s2s[o - r0] = s2


@njit(nogil=True, cache=True, fastmath={"contract"}, error_model="numpy")
def _block_apply(x, out, r0, r1, his, los, mus, scale, bias):
    """_apply_span's per-element branch (seg_len 1) over rows r0..r1-1."""
    for o in range(r0, r1):
        hi, lo, mu = his[o - r0], los[o - r0], mus[o - r0]
        ys = out[o]
        for j in range(x.shape[1]):
            store(ys, j, ((load(x[o, j]) - hi) - lo) * mu * scale[j] + bias[j])


@njit(nogil=True, cache=True, fastmath={"contract"}, error_model="numpy")
def _block_apply_segments(x, out, r0, r1, his, los, mus, scale, bias, o_mod, seg_len):
    """_apply_span(x[o], out[o], 0, ...) for rows r0..r1-1 and any affine layout (a run of seg_len elements a
    value, row o's values from (o % o_mod) * (cols // seg_len)): the same arithmetic, element by element,
    reading x[o, i] rather than through row views."""
    n = x.shape[1]
    for o in range(r0, r1):
        hi, lo, mu = his[o - r0], los[o - r0], mus[o - r0]
        ys = out[o]
        base = 0
        if o_mod > 1:
            base = (o % o_mod) * (n // seg_len)
        if seg_len == 1:
            for j in range(n):
                store(ys, j, ((load(x[o, j]) - hi) - lo) * mu * scale[base + j] + bias[base + j])
            continue
        shift = np.float64(hi) + np.float64(lo)
        near_zero = abs(shift * mu) <= 1.0
        j = 0
        while j < n:
            k = j // seg_len
            e = min(n, (k + 1) * seg_len)
            s = scale[base + k]
            m = mu * s
            b = bias[base + k]
            normal = is_normal(m, scale)
            c = cast_like(np.float64(b) - shift * np.float64(m), scale) if near_zero and normal else b
            if near_zero and normal:
                for i in range(j, e):
                    store(ys, i, load(x[o, i]) * m + c)
            elif normal or m == 0.0 and (mu == 0.0 or s == 0.0):
                for i in range(j, e):
                    store(ys, i, ((load(x[o, i]) - hi) - lo) * m + c)
            else:
                for i in range(j, e):
                    store(ys, i, ((load(x[o, i]) - hi) - lo) * mu * s + c)
            j = e


@njit(nogil=True, cache=True, error_model="numpy")
def _short_block(x, out, r0, r1, center, mode, eps, scale, bias, work, o_mod=1, seg_len=1):
    """Rows r0..r1-1 (at most SHORT_BLOCK) normalized with their per-element affine; work: a
    [5, SHORT_BLOCK] compute-type scratch; another affine layout (o_mod, seg_len) as _apply_span takes it.
    Per row exactly _chunk_stats(x[o], center, exact=False):
    the provisional mean from the first PROBE elements for rows longer than 2 * PROBE (a row whose probe
    is not kept is redone by _chunk_stats itself), the float64 redo outside the safe range.  The
    fastmath loops stay in functions of their own: inlined here they would take this one's strict flags."""
    n = x.shape[1]
    inv = 1.0 / n
    probe = center and n > 2 * PROBE
    sums, s1s, s2s, los, mus = work[0], work[1], work[2], work[3], work[4]
    _block_sums(x, r0, r1, center, sums, PROBE if probe else n)
    if center:
        first = 1.0 / PROBE if probe else inv
        for k in range(r1 - r0):
            sums[k] = cast_like(sums[k] * first, scale)  # the row's provisional mean
        _block_devs(x, r0, r1, sums, s1s, s2s)
    for k in range(r1 - r0):
        if probe:
            q = np.float64(s2s[k])
            d1 = np.float64(s1s[k])
            m2 = q - d1 * d1 * inv
            if q >= _SAFE_MIN and q <= _SAFE_MAX and d1 * d1 * inv <= 4.0 * m2:
                mean = np.float64(sums[k]) + d1 * inv
            else:
                mean, m2 = _chunk_stats(x[r0 + k], True, scale, False)
        elif center:
            q = np.float64(s2s[k])
            if q >= _SAFE_MIN and q <= _SAFE_MAX:
                d1 = np.float64(s1s[k])
                mean, m2 = np.float64(sums[k]) + d1 * inv, max(q - d1 * d1 * inv, 0.0)
            else:
                row = x[r0 + k]
                mean = _chunk_sum64(row) / n
                m2 = _chunk_sqdev64(row, mean)
        else:
            mean, m2 = 0.0, np.float64(sums[k])
            if not (m2 >= _SAFE_MIN and m2 <= _SAFE_MAX):
                m2 = _chunk_sqdev64(x[r0 + k], 0.0)
        hi, lo = _split(mean, scale)
        sums[k], los[k] = hi, lo  # the mean's parts replace the sums, read above
        mus[k] = cast_like(_finalize(m2, n, mode, eps), scale)
    if seg_len == 1 and o_mod == 1:
        _block_apply(x, out, r0, r1, sums, los, mus, scale, bias)
    else:
        _block_apply_segments(x, out, r0, r1, sums, los, mus, scale, bias, o_mod, seg_len)


@njit(nogil=True, cache=True, inline="always")
def _short_rows_apply(x, center, want, seg_len, o_mod):
    """The short-row path applies: no statistics wanted, a per-element affine, rows of at most one chunk
    (_chunk_len); centered (LayerNorm) or not (RMSNorm)."""
    return not want and seg_len == 1 and o_mod == 1 and x.shape[1] <= _chunk_len(x)


# Rows of at most this many elements with another affine layout take the blocks of rows (_short_rows_segments).
# Row by row (_row_task: two row views and the statistics' calls a row) an MVN without an affine over [197, 64]
# took 36.2 us against a LayerNorm's 7.0, in blocks 12.9; an instance norm's [64, 64] 14.6 -> 5.4.  Longer
# rows keep _apply_span's vectorized views (one GroupNorm row of 2048 in runs of 64: 1.6 us that way, 2.5 in
# the blocks' element loops; 32 rows of 512: 9.5 against 12.3; Sapphire Rapids Xeon).
SEGMENT_BLOCK_COLS = 256


@njit(nogil=True, cache=True, inline="always")
def _short_rows_segments(x, want):
    """The short-row blocks apply with another affine layout (_block_apply_segments): no statistics wanted,
    rows of at most SEGMENT_BLOCK_COLS elements -- an MVN without an affine (one value a row), an instance
    norm's per-channel one, a GroupNorm's over small maps."""
    return not want and x.shape[1] <= SEGMENT_BLOCK_COLS


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _row_task(x, out, o, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out, mult_out, epi):
    red = x.shape[1]
    row = x[o]
    mean, m2 = _row_stats(row, center, scale, want)
    hi, lo, mu = _finish_row(o, mean, m2, red, mode, eps, want, shift_out, mult_out, scale)
    base = 0
    if o_mod > 1:  # skip two integer divisions per row in the common case
        base = (o % o_mod) * (red // seg_len)
    if epi is None:
        _apply_span(row, out[o], 0, hi, lo, mu, scale, bias, base, seg_len)
    else:  # chunk by chunk, each activated while in L1 (rows_split's spans: the same bits)
        ch = _chunk_len(x)
        for c0 in range(0, red, ch):
            c1 = min(c0 + ch, red)
            _apply_span(row[c0:c1], out[o, c0:c1], c0, hi, lo, mu, scale, bias, base, seg_len)
            _epilogue(epi, out[o, c0:c1])


@njit(nogil=True, parallel=True, cache=True, error_model="numpy")
def rows_parallel(x, out, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out, mult_out, epi):
    """inner == 1, one task per row (per block of rows of at most 2 * PROBE; x, out: (outer, reduce) C-contiguous).
    Longer rows keep a task each here: on large tensors (memory-bound) blocks of them measured slower (an
    exported LayerNorm on [64 * 197, 768]: 1.9 -> 2.5 ms), though the same bits; rows_serial takes them in
    blocks (small tensors, in cache)."""
    if _short_rows_apply(x, center, want, seg_len, o_mod) and x.shape[1] <= 2 * PROBE:  # outside the row loop
        rows = x.shape[0]
        rb = _block_rows(x)
        for b in prange((rows + rb - 1) // rb):
            r0 = b * rb
            r1 = min(rows, r0 + rb)
            _short_block(x, out, r0, r1, center, mode, eps, scale, bias, np.empty((5, SHORT_BLOCK), scale.dtype))
            _epilogue(epi, out[r0:r1].reshape(-1))
        return
    if _short_rows_segments(x, want):
        rows = x.shape[0]
        rb = _block_rows(x)
        for b in prange((rows + rb - 1) // rb):
            r0 = b * rb
            r1 = min(rows, r0 + rb)
            _short_block(x, out, r0, r1, center, mode, eps, scale, bias, np.empty((5, SHORT_BLOCK), scale.dtype),
                         o_mod, seg_len)
            _epilogue(epi, out[r0:r1].reshape(-1))
        return
    for o in prange(x.shape[0]):
        _row_task(x, out, o, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out, mult_out, epi)


@njit(nogil=True, cache=True, error_model="numpy")
def rows_serial(x, out, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out, mult_out, epi):
    """rows_parallel without the parallel launch, for tiny tensors (same arithmetic)."""
    if _short_rows_apply(x, center, want, seg_len, o_mod):
        rows = x.shape[0]
        rb = _block_rows(x)
        work = np.empty((5, SHORT_BLOCK), scale.dtype)
        for r0 in range(0, rows, rb):
            r1 = min(rows, r0 + rb)
            _short_block(x, out, r0, r1, center, mode, eps, scale, bias, work)
            _epilogue(epi, out[r0:r1].reshape(-1))
        return
    if _short_rows_segments(x, want):
        rows = x.shape[0]
        rb = _block_rows(x)
        work = np.empty((5, SHORT_BLOCK), scale.dtype)
        for r0 in range(0, rows, rb):
            r1 = min(rows, r0 + rb)
            _short_block(x, out, r0, r1, center, mode, eps, scale, bias, work, o_mod, seg_len)
            _epilogue(epi, out[r0:r1].reshape(-1))
        return
    for o in range(x.shape[0]):
        _row_task(x, out, o, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out, mult_out, epi)


@njit(nogil=True, cache=True, error_model="numpy")
def rows_serial_shaped(x, out, rows, cols, center, mode, eps, scale, bias, o_mod, seg_len, stats, epi):
    """rows_serial on C-contiguous x / out of any rank, viewed as [rows, cols] here rather than by two
    numpy reshapes per call (about 0.4 us of a transformer's [1, 8, 32] LayerNorm step)."""
    rows_serial(x.reshape((rows, cols)), out.reshape((rows, cols)), center, mode, eps, scale, bias, o_mod, seg_len,
                False, stats, stats, epi)


@njit(nogil=True, parallel=True, cache=True, error_model="numpy")
def rows_split(x, out, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out, mult_out, epi):
    """inner == 1 with few long rows: (row, chunk) tasks for the statistics and for the output,
    the chunk merge in between per row, in chunk order (so identical to rows_parallel)."""
    outer, red = x.shape
    ch = _chunk_len(x)
    nch = (red + ch - 1) // ch
    cm = np.empty(outer * nch, np.float64)
    cm2 = np.empty(outer * nch, np.float64)
    for task in prange(outer * nch):
        o = task // nch
        c0 = (task - o * nch) * ch
        mc, m2c = _chunk_stats(x[o, c0:min(c0 + ch, red)], center, scale, want)
        cm[task] = mc
        cm2[task] = m2c
    his = np.empty(outer, scale.dtype)
    los = np.empty(outer, scale.dtype)
    mus = np.empty(outer, scale.dtype)
    for o in range(outer):
        cnt = 0
        mean = 0.0
        m2 = 0.0
        for c in range(nch):
            c0 = c * ch
            cnt, mean, m2 = _merge(cnt, mean, m2, min(c0 + ch, red) - c0, cm[o * nch + c], cm2[o * nch + c])
        his[o], los[o], mus[o] = _finish_row(o, mean, m2, red, mode, eps, want, shift_out, mult_out, scale)
    nseg = red // seg_len
    for task in prange(outer * nch):
        o = task // nch
        c0 = (task - o * nch) * ch
        c1 = min(c0 + ch, red)
        _apply_span(x[o, c0:c1], out[o, c0:c1], c0, his[o], los[o], mus[o], scale, bias, (o % o_mod) * nseg,
                    seg_len)
        _epilogue(epi, out[o, c0:c1])


@njit(nogil=True, cache=True, error_model="numpy")
def _column_chunk64(xo, r0, r1, col, center):
    """float64 (mean, M2) of one column over rows [r0, r1): the redo for a column chunk whose
    compute-type sums left the safe range (and for inf/NaN)."""
    n = r1 - r0
    mean = 0.0
    if center:
        for r in range(r0, r1):
            mean += np.float64(load(xo[r, col]))
        mean /= n
    q = 0.0
    for r in range(r0, r1):
        d = np.float64(load(xo[r, col])) - mean
        q += d * d
    return mean, q


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _strided_task(x, out, task, nblk, block, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out,
                  mult_out):
    """Statistics per column of one (outer, column block) slab, then its output.

    Rows are taken in chunks of RCHUNK: per column a compute-type provisional mean m over the chunk,
    then sum(x - m) and sum((x - m)^2) in the compute type, corrected and Chan-merged in float64 in
    row order -- the column analogue of the row chunks.  The loops run across columns (no
    reassociation needed), so a column's arithmetic depends on nothing but its own values.  With
    `want` (the statistics are returned) the column sums run in float64 instead."""
    outer, red, inner = x.shape
    o = task // nblk
    b0 = (task - o * nblk) * block
    b1 = min(b0 + block, inner)
    w = b1 - b0
    xo = x[o]
    yo = out[o]
    z = cast_like(0.0, scale)
    acc1 = np.empty(w, scale.dtype)
    accq = np.empty(w, scale.dtype)
    m = np.zeros(w, scale.dtype)  # provisional chunk means (stay 0 without centering)
    mean = np.zeros(w, np.float64)
    m2 = np.zeros(w, np.float64)
    if want:  # the statistics are returned: plain float64 two-pass sums per column
        if center:
            for r in range(red):
                xr = xo[r][b0:b1]
                for i in range(w):
                    mean[i] += load(xr[i])
            for i in range(w):
                mean[i] /= red
        for r in range(red):
            xr = xo[r][b0:b1]
            for i in range(w):
                d = np.float64(load(xr[i])) - mean[i]
                m2[i] += d * d
    for r0 in range(0, red if not want else 0, RCHUNK):
        r1 = min(r0 + RCHUNK, red)
        n = r1 - r0
        acc1[:] = z
        accq[:] = z
        if center:
            for r in range(r0, r1):
                xr = xo[r][b0:b1]  # a contiguous 1-D slice: vector loads, no gathers
                for i in range(w):
                    acc1[i] += load(xr[i])
            for i in range(w):
                m[i] = cast_like(acc1[i] / n, scale)
            acc1[:] = z
            for r in range(r0, r1):
                xr = xo[r][b0:b1]
                for i in range(w):
                    d = load(xr[i]) - m[i]
                    acc1[i] += d
                    accq[i] += d * d
        else:
            for r in range(r0, r1):
                xr = xo[r][b0:b1]
                for i in range(w):
                    v = load(xr[i])
                    accq[i] += v * v
        cnt = r0
        for i in range(w):
            q = np.float64(accq[i])
            if q >= _SAFE_MIN and q <= _SAFE_MAX:
                if center:
                    d1 = np.float64(acc1[i])
                    mc = np.float64(m[i]) + d1 / n
                    qc = max(q - d1 * d1 / n, 0.0)
                else:
                    mc = 0.0
                    qc = q
            else:
                mc, qc = _column_chunk64(xo, r0, r1, b0 + i, center)
            _, mean[i], m2[i] = _merge(cnt, mean[i], m2[i], n, mc, qc)
    hi = np.empty(w, scale.dtype)
    lo = np.empty(w, scale.dtype)
    mu = np.empty(w, scale.dtype)
    for i in range(w):
        mlt = _finalize(m2[i], red, mode, eps)
        if want:
            shift_out[o, b0 + i] = mean[i]
            mult_out[o, b0 + i] = mlt
        hi[i], lo[i] = _split(mean[i], scale)
        mu[i] = cast_like(mlt, scale)
    base = (o % o_mod) * (red // seg_len)
    for r in range(red):
        k = base + r // seg_len
        s = scale[k]
        bb = bias[k]
        xr = xo[r][b0:b1]
        yr = yo[r][b0:b1]
        for i in range(w):
            store(yr, i, ((load(xr[i]) - hi[i]) - lo[i]) * mu[i] * s + bb)


@njit(nogil=True, parallel=True, cache=True, error_model="numpy")
def strided_parallel(x, out, center, mode, eps, scale, bias, o_mod, seg_len, block, want, shift_out, mult_out):
    """inner > 1: x and out are (outer, reduce, inner) C-contiguous; statistics per (outer, inner),
    one task per (outer, block of `block` inner positions); each column's sums run in r order."""
    nblk = (x.shape[2] + block - 1) // block
    for task in prange(x.shape[0] * nblk):
        _strided_task(x, out, task, nblk, block, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out,
                      mult_out)


@njit(nogil=True, cache=True, error_model="numpy")
def strided_serial(x, out, center, mode, eps, scale, bias, o_mod, seg_len, block, want, shift_out, mult_out):
    """strided_parallel without the parallel launch, for tiny tensors (same arithmetic)."""
    nblk = (x.shape[2] + block - 1) // block
    for task in range(x.shape[0] * nblk):
        _strided_task(x, out, task, nblk, block, center, mode, eps, scale, bias, o_mod, seg_len, want, shift_out,
                      mult_out)


# ---- Python side: canonicalization and dispatch -----------------------------------

COMPUTE_DTYPES = {np.dtype(np.float32), np.dtype(np.float64)}
# With an activation of an exp or a division an element in the epilogue (GroupNorm + Swish), tensors from this
# size run on several threads: the activation's arithmetic, not memory, then bounds the pass.  Fused over [1, 32,
# 32, 32] (4 groups), Swish: one thread 25.8 us, two 15.4; [1, 16, 32, 32] 12.6 -> 10.8; [1, 32, 16, 16] 7.3 ->
# 6.9 (Sapphire Rapids Xeon, 2 vCPUs).
EPILOGUE_PARALLEL_MIN = PARALLEL_MIN // 4
SPLIT_ROWS = 8  # fewer rows than this (and more than one chunk each): split rows into chunk tasks


def _is_bf16(dt: np.dtype) -> bool:
    """ml_dtypes' bfloat16, told by name: importing ml_dtypes to compare with costs ~0.5 s in its 0.7 release
    (ir/dtypes.py), and a model without bf16 never needs it."""
    return dt.name == "bfloat16" and dt.itemsize == 2


_F16 = np.dtype(np.float16)


def _kernel_view(a: np.ndarray) -> np.ndarray | None:
    """The array as the kernels take it: f32/f64 as is, f16 as uint16 bits, bf16 as int16 bits;
    None for any other dtype."""
    if a.dtype in COMPUTE_DTYPES:
        return a
    if a.dtype == _F16:
        return a.view(np.uint16)
    if _is_bf16(a.dtype):
        return a.view(np.int16)
    return None


def canonical_layout(shape: tuple[int, ...], axes: list[int]) -> tuple[list[int] | None, int, int, int]:
    """Return (perm, outer, reduce, inner).  perm is None when the reduced axes are
    contiguous once size-1 dims are ignored; otherwise the transpose that moves the
    reduced axes last (then inner == 1)."""
    perm, outer, red, inner = _layout(tuple(shape), tuple(axes))
    return (list(perm) if perm is not None else None), outer, red, inner


@functools.lru_cache(maxsize=512)
def _layout(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[tuple[int, ...] | None, int, int, int]:
    """canonical_layout, memoized (it runs on every call; shapes repeat)."""
    rank = len(shape)
    ax = sorted(set(axes))
    red = 1
    for a in ax:
        red *= shape[a]
    total = 1
    for d in shape:
        total *= d
    if not ax:
        return None, total, 1, 1
    lo, hi = ax[0], ax[-1]
    gaps = [a for a in range(lo, hi + 1) if a not in ax and shape[a] != 1]
    if not gaps:
        outer = 1
        for d in shape[:lo]:
            outer *= d
        inner = 1
        for d in shape[hi + 1:]:
            inner *= d
        return None, outer, red, inner
    keep = [a for a in range(rank) if a not in ax]
    return tuple(keep + ax), math.prod(shape[a] for a in keep), red, 1


def strided_block(outer: int, red: int, inner: int) -> int:
    """Columns per strided task.  Any width gives the same bits (each column's arithmetic is its
    own), so it is picked for speed only: long contiguous row segments for the prefetchers, and
    at least 4 tasks when the tensor is big enough to be worth splitting."""
    want_tasks = 4
    if outer >= want_tasks or inner <= 256:
        return inner
    per = -(-inner // -(-want_tasks // outer))
    return min(inner, max(256, per + (-per) % 16))


_CONST_VECTORS: dict[tuple, np.ndarray] = {}


def _const_vector(value: float, dtype: np.dtype, n: int) -> np.ndarray:
    """Cached read-only ones/zeros vectors for a missing scale/bias (saves two allocations per call)."""
    key = (dtype, n, value)
    v = _CONST_VECTORS.get(key)
    if v is None:
        v = np.full(n, value, dtype)
        v.flags.writeable = False
        if len(_CONST_VECTORS) < 64:
            _CONST_VECTORS[key] = v
    return v


def _vector(v: np.ndarray, cdt: np.dtype) -> np.ndarray:
    if type(v) is np.ndarray and v.dtype == cdt and v.ndim == 1 and v.flags.c_contiguous:
        return v
    return np.ascontiguousarray(v, dtype=cdt).reshape(-1)


_F64 = np.dtype(np.float64)
_F32 = np.dtype(np.float32)
_DIRECT = {_F32, _F64, _F16}  # dtypes the kernels write, and bfloat16 (_is_bf16)
_NO_STATS = np.zeros((1, 1), np.float64)  # passed when want_stats is false: never written


class _Plan(NamedTuple):
    """Everything about one normalize() call that depends only on shapes, dtypes and attributes
    (memoized: a model calls with the same ones every time)."""

    perm: tuple[int, ...] | None  # transpose making the reduced axes last, or None
    inv_perm: tuple[int, ...] | None
    outer: int
    red: int
    inner: int
    cdt: np.dtype  # compute dtype
    seg_len: int
    n_aff: int  # length of the scale/bias tables
    kshape: tuple[int, ...]  # (outer, red) or (outer, red, inner)
    y_dtype: np.dtype  # what the kernel writes
    kern: Any
    block: int  # strided path: columns per task (0 on the rows path)


@functools.lru_cache(maxsize=256)
def _plan(shape: tuple[int, ...], x_dtype: np.dtype, axes: tuple[int, ...], seg_len: int | None, o_mod: int,
          out_dtype: np.dtype, serial_max: int = PARALLEL_MIN) -> _Plan:
    cdt = _F64 if x_dtype == _F64 else _F32
    perm, outer, red, inner = _layout(shape, axes)
    seg_len = max(red if seg_len is None else seg_len, 1)
    n_aff = max(o_mod * (red // seg_len), 1)
    serial = math.prod(shape) <= serial_max
    block = 0
    if inner == 1:
        kshape = (outer, red)
        if serial:
            kern = rows_serial
        elif outer < SPLIT_ROWS and red > (2 * CHUNK if x_dtype.itemsize == 2 else CHUNK):  # _chunk_len's rule
            kern = rows_split
        else:
            kern = rows_parallel
    else:
        kshape = (outer, red, inner)
        kern = strided_serial if serial else strided_parallel
        block = strided_block(outer, red, inner)
    inv_perm = tuple(int(i) for i in np.argsort(perm)) if perm is not None else None
    return _Plan(perm, inv_perm, outer, red, inner, cdt, seg_len, n_aff, kshape,
                 out_dtype if out_dtype in _DIRECT or _is_bf16(out_dtype) else cdt, kern, block)


def normalize(
    x: np.ndarray,
    axes: list[int],
    mode: int,
    eps: float,
    *,
    center: bool = True,
    scale: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    o_mod: int = 1,
    seg_len: int | None = None,
    out_dtype: np.dtype | None = None,
    want_stats: bool = False,
):
    """Normalize `x` over `axes` (already non-negative).  `scale`/`bias` are 1-D in
    the affine layout described in the module docstring (``seg_len`` defaults to the
    whole reduced extent: one value per (o % o_mod)).

    Returns y (and, with want_stats, the (outer, inner) float64 shift and mult arrays).
    The result never shares memory with `x`.
    """
    if not want_stats:
        return normalizer(x.shape, x.dtype, axes, mode, eps, center=center, scale=scale, bias=bias, o_mod=o_mod,
                          seg_len=seg_len, out_dtype=out_dtype)(x)
    out_dtype = x.dtype if out_dtype is None else np.dtype(out_dtype)
    p = _plan(x.shape, x.dtype, tuple(axes), seg_len, o_mod, out_dtype)
    cdt = p.cdt
    scale = _const_vector(1.0, cdt, p.n_aff) if scale is None else _vector(scale, cdt)
    bias = _const_vector(0.0, cdt, p.n_aff) if bias is None else _vector(bias, cdt)
    shift_out = np.zeros((p.outer, p.inner), np.float64)
    mult_out = np.zeros((p.outer, p.inner), np.float64)
    if x.size == 0:
        return np.empty(x.shape, out_dtype), shift_out, mult_out
    xk, y, yk = _operands(x, p)
    if p.block == 0:
        p.kern(xk.reshape(p.kshape), yk.reshape(p.kshape), center, mode, eps, scale, bias, o_mod, p.seg_len,
               True, shift_out.reshape(-1), mult_out.reshape(-1), None)
    else:
        p.kern(xk.reshape(p.kshape), yk.reshape(p.kshape), center, mode, eps, scale, bias, o_mod, p.seg_len,
               p.block, True, shift_out, mult_out)
    return _result(y, p, out_dtype), shift_out, mult_out


def _operands(x: np.ndarray, p: _Plan) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x as the kernel reads it (reduced axes last when the plan transposes), the output array and
    its kernel view."""
    xc = x.transpose(p.perm) if p.perm is not None else x
    xk = _kernel_view(xc if xc.flags.c_contiguous else np.ascontiguousarray(xc))
    if xk is None:  # integer or other data: widen once
        xk = np.ascontiguousarray(xc, dtype=p.cdt)
    y = OUTPUTS.empty(xk.shape, p.y_dtype)  # recycled once released (or the caller's out= array)
    return xk, y, _kernel_view(y)


def _result(y: np.ndarray, p: _Plan, out_dtype: np.dtype) -> np.ndarray:
    if p.inv_perm is not None:
        y = y.transpose(p.inv_perm)
    if y.dtype != out_dtype or not y.flags.c_contiguous:
        y = np.ascontiguousarray(y).astype(out_dtype, copy=False)
    return y


def normalizer(shape: tuple[int, ...], x_dtype: np.dtype, axes: list[int], mode: int, eps: float, *,
               center: bool = True, scale: np.ndarray | None = None, bias: np.ndarray | None = None,
               o_mod: int = 1, seg_len: int | None = None, out_dtype: np.dtype | None = None,
               activation: tuple[int, float, float] | None = None,
               data_shape: tuple[int, ...] | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """``normalize`` (without statistics) for inputs of exactly this shape and dtype, with everything
    that depends only on them decided now: the function returned does the kernel call and little
    else.  A layer keeps one per input shape; on a small tensor the decisions cost more than the
    normalization.  `activation` (code, p0, p1; kernels.activation's codes, a float32/float64 result
    only): that activation of the normalized values, as the row kernels' epilogue (the same bits as
    activating the result afterwards).  `data_shape`: the shape the data arrives in and the result leaves in,
    of as many elements as `shape` (a GroupNorm's [N, C, H, W] for its [N * G, C / G * H * W] rows): the
    reshapes happen inside, none at all on the small calls, whose kernel views any shape as its rows."""
    if data_shape is not None and tuple(data_shape) != tuple(shape) and math.prod(data_shape) != math.prod(shape):
        raise ValueError(f"data shape {tuple(data_shape)} does not hold the {math.prod(shape)} elements of {shape}")
    io_shape = tuple(shape) if data_shape is None else tuple(data_shape)
    out_dtype = np.dtype(x_dtype if out_dtype is None else out_dtype)
    acts = None if activation is None else _activation()
    serial_max = PARALLEL_MIN if acts is None or acts.is_cheap(activation[0]) else EPILOGUE_PARALLEL_MIN
    p = _plan(tuple(shape), np.dtype(x_dtype), tuple(axes), seg_len, o_mod, out_dtype, serial_max)
    if acts is not None:
        if out_dtype not in COMPUTE_DTYPES:
            raise ValueError(f"a fused activation needs a float32 or float64 result, not {out_dtype}")
        if p.block != 0 or p.perm is not None or p.y_dtype != out_dtype:
            # not the row kernels (reduced axes not last): the activation as a pass over the result
            plain_norm = normalizer(shape, x_dtype, axes, mode, eps, center=center, scale=scale, bias=bias,
                                    o_mod=o_mod, seg_len=seg_len, out_dtype=out_dtype, data_shape=io_shape)
            code, a0, a1, k = acts.epilogue_args(*activation, out_dtype)

            def then_activate(x: np.ndarray) -> np.ndarray:
                y = plain_norm(x)
                acts.activate_in_place(code, y.reshape(-1), a0, a1, k)
                return y
            return then_activate
    epi = None if acts is None else acts.epilogue_args(*activation, out_dtype)
    cdt = p.cdt
    sv = _const_vector(1.0, cdt, p.n_aff) if scale is None else _vector(scale, cdt)
    bv = _const_vector(0.0, cdt, p.n_aff) if bias is None else _vector(bias, cdt)
    kern, kshape, seg, block = p.kern, p.kshape, p.seg_len, p.block
    plain = p.perm is None and p.y_dtype == out_dtype  # no transpose, no conversion of the result
    stats = _NO_STATS[0]

    if plain and block == 0 and p.y_dtype in COMPUTE_DTYPES and np.dtype(x_dtype) == p.y_dtype \
            and 0 < math.prod(shape) * p.y_dtype.itemsize < OUTPUTS.min_bytes:
        # The usual small call (a transformer's LayerNorm): f32/f64 rows, nothing to transpose or convert,
        # an output below the pool's size: allocate the result in the kernel's shape and reshape it once.
        shape, y_dtype = io_shape, p.y_dtype

        # [calls so far, the entry point (jit.entry) once bound]; threads may race on it: at worst a later
        # binding, never a call of anything but kern or the entry point
        bound: list = [0, None]
        # rows_serial taking x and y in their own shape (bound instead of kern when kern is rows_serial)
        shaped = kern is rows_serial and len(kshape) == 2
        rows, cols = kshape[0], kshape[-1]

        def small_rows(x: np.ndarray) -> np.ndarray:
            call = bound[1]
            if call is not None and x.shape == shape and x.flags.c_contiguous:  # what the entry point reads
                if shaped:
                    y = OUTPUTS.empty(shape, y_dtype) if PROVIDED.arrays else np.empty(shape, y_dtype)
                    call(x, y, rows, cols, center, mode, eps, sv, bv, o_mod, seg, stats, epi)
                    return y
                y = OUTPUTS.empty(kshape, y_dtype) if PROVIDED.arrays else np.empty(kshape, y_dtype)
                call(x.reshape(kshape), y, center, mode, eps, sv, bv, o_mod, seg, False, stats, stats, epi)
                return y.reshape(shape)
            y = OUTPUTS.empty(kshape, y_dtype) if PROVIDED.arrays else np.empty(kshape, y_dtype)
            xk = x.reshape(kshape)
            kern(xk, y, center, mode, eps, sv, bv, o_mod, seg, False, stats, stats, epi)
            if call is None and xk.flags.c_contiguous and x.shape == shape:
                bound[0] += 1
                if bound[0] >= 2:  # bound on the second call: normalize() makes a normalizer for one call
                    if shaped:
                        typed = c_array(len(shape), y_dtype)
                        bound[1] = entry(rows_serial_shaped, typed, typed, rows, cols, center, mode, eps, sv, bv, o_mod,
                                         seg, stats, epi)
                    else:
                        bound[1] = entry(kern, xk, y, center, mode, eps, sv, bv, o_mod, seg, False, stats, stats, epi)
            return y.reshape(shape)

        return small_rows

    # [kern, kern, kern's entry point (jit.entry)], one more each call: _operands always hands the kernel
    # C-contiguous arrays of one type
    calls: list = [kern]
    shape = tuple(shape)

    def run(x: np.ndarray) -> np.ndarray:
        if x.size == 0:
            return np.empty(x.shape, out_dtype)
        xk, y, yk = _operands(x, p)
        call = calls[-1]
        if block == 0:
            args = (xk.reshape(kshape), yk.reshape(kshape), center, mode, eps, sv, bv, o_mod, seg, False, stats, stats,
                    epi)
        else:
            args = (xk.reshape(kshape), yk.reshape(kshape), center, mode, eps, sv, bv, o_mod, seg, block, False,
                    _NO_STATS, _NO_STATS)
        call(*args)
        if len(calls) < 3:  # bound on the second call: normalize() makes a normalizer for one call only
            calls.append(kern if len(calls) < 2 else entry(kern, *args))
        return y if plain else _result(y, p, out_dtype)

    if io_shape == shape:
        return run

    def run_reshaped(x: np.ndarray) -> np.ndarray:
        return run(x.reshape(shape)).reshape(io_shape)
    return run_reshaped
