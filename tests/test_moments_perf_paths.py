"""Correctness of the moments engine's fast paths (irnorm/kernels/moments.py).

tests/test_moments.py covers normalize() layout by layout; this file pins what the speed work
added: the in-kernel f16/bf16 conversions (every f16 and bf16 bit pattern, ties and overflow on
the way out), the kernel entry points against each other (serial, one task per row, chunk-split
rows: same bits), the float64 redo of chunks whose float32 squares would overflow or underflow,
and each path against the float64 oracle in irnorm/reference.py.  No timing assertions.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from numba import njit
from threadutil import in_threads

from irnorm import reference as R
from irnorm.kernels import moments as M

BF16 = np.dtype(ml_dtypes.bfloat16)


@njit(cache=False)
def _widen(bits, out):
    for i in range(bits.shape[0]):
        out[i] = M.load(bits[i])


@njit(cache=False)
def _narrow(vals, out):
    for i in range(vals.shape[0]):
        M.store(out, i, vals[i])


def _same_or_both_nan(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint16 if got.itemsize == 2 else np.uint32),
                                  want[~nan].view(np.uint16 if want.itemsize == 2 else np.uint32))


ALL16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _f32_probes(kind: np.dtype) -> np.ndarray:
    """Every 16-bit value widened, the midpoints between neighbours (ties), one f32 ulp either side
    of each midpoint, and a million random float32 bit patterns."""
    vals = ALL16.view(kind).astype(np.float32)
    fin = np.sort(vals[np.isfinite(vals)].astype(np.float64))
    mids = ((fin[1:] + fin[:-1]) / 2).astype(np.float32)
    rnd = np.random.default_rng(0).integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([vals, mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf)),
                           rnd, np.array([65504, 65519.99, 65520, 65536, 1e9, -1e9, 3e-8, 6e-8], np.float32)])


def test_f16_widening_is_exact_for_every_bit_pattern() -> None:
    out = np.empty(ALL16.size, np.float32)
    _widen(ALL16, out)
    _same_or_both_nan(out, ALL16.view(np.float16).astype(np.float32))


def test_bf16_widening_is_exact_for_every_bit_pattern() -> None:
    out = np.empty(ALL16.size, np.float32)
    _widen(ALL16.view(np.int16), out)
    _same_or_both_nan(out, ALL16.view(BF16).astype(np.float32))


def test_f16_narrowing_rounds_like_numpy() -> None:
    """Round to nearest even, overflow to inf, subnormals, NaN stays NaN: same bits as numpy."""
    v = _f32_probes(np.dtype(np.float16))
    out = np.empty(v.size, np.uint16)
    _narrow(v, out)
    with np.errstate(over="ignore"):
        _same_or_both_nan(out.view(np.float16), v.astype(np.float16))


def test_bf16_narrowing_rounds_like_ml_dtypes() -> None:
    v = _f32_probes(BF16)
    out = np.empty(v.size, np.int16)
    _narrow(v, out)
    with np.errstate(over="ignore", invalid="ignore"):
        want = v.astype(BF16)
    _same_or_both_nan(out.view(BF16), want)


# ---------------------------------------------------------------------------------------------
# the kernel entry points give the same bits


def _kernel_args(x2: np.ndarray, seg_len: int, o_mod: int, t):
    n_aff = o_mod * (x2.shape[1] // seg_len)
    rng = np.random.default_rng(1)
    sc = rng.uniform(0.5, 1.5, n_aff).astype(t)
    bi = rng.uniform(-1, 1, n_aff).astype(t)
    return sc, bi


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16], ids=["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("center,mode", [(True, M.INSIDE_SQRT), (True, M.OUTSIDE_SQRT), (False, M.L2_ADD)],
                         ids=["inside", "outside", "l2"])
def test_row_kernels_agree_bit_for_bit(dtype, center, mode) -> None:
    """rows_serial, rows_parallel and rows_split are three schedules of one arithmetic."""
    outer, red, o_mod, seg = 4, 3 * M.CHUNK + 777, 2, 1
    x = (np.random.default_rng(2).standard_normal((outer, red)) * 3 + (4 if center else 0)).astype(dtype)
    xk = M._kernel_view(x)
    t = np.float64 if dtype == np.float64 else np.float32
    sc, bi = _kernel_args(x, seg, o_mod, t)  # the compute type travels as scale's dtype
    outs = []
    for kern in (M.rows_serial, M.rows_parallel, M.rows_split):
        y = np.empty_like(xk)
        s, m = np.zeros(outer), np.zeros(outer)
        kern(xk, y, center, mode, 1e-5, sc, bi, o_mod, seg, True, s, m, None)
        outs.append((y.tobytes(), s.tobytes(), m.tobytes()))
    assert outs[0] == outs[1] == outs[2]
    # and the values are right
    y = np.frombuffer(outs[0][0], xk.dtype).view(x.dtype).reshape(x.shape)
    k = (np.arange(outer)[:, None] % o_mod) * red + np.arange(red)[None, :]
    xd = x.astype(np.float64)
    mean = xd.mean(1, keepdims=True) if center else 0.0
    d = xd - mean
    q = (d * d).sum(1, keepdims=True)
    mult = 1 / np.sqrt(q / red + 1e-5) if mode == M.INSIDE_SQRT else (
        1 / (np.sqrt(q / red) + 1e-5) if mode == M.OUTSIDE_SQRT else 1 / np.sqrt(q + 1e-5))
    want = d * mult * sc.astype(np.float64)[k] + bi.astype(np.float64)[k]
    tol = {np.dtype(np.float64): 1e-12, np.dtype(np.float32): 2e-6}.get(np.dtype(dtype), 8e-3)
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16], ids=["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("red", [1, 5, 32, 2 * M.PROBE, 2 * M.PROBE + 1, 768, M.CHUNK, 2 * M.CHUNK + 1])
@pytest.mark.parametrize("center", [True, False], ids=["layernorm", "rmsnorm"])
def test_short_rows_path_serial_and_parallel(dtype, red, center) -> None:
    """Rows of at most one chunk with a per-element affine (a LayerNorm, or an RMSNorm without
    centering) take the short-row loop (indexing, no row views, blocks of rows) in rows_serial, and in
    rows_parallel up to 2 * PROBE (a task per row beyond): both give the same bits, the longer row (general
    path) too, and the values
    match float64 with zero-variance, huge-mean, inf and NaN rows each staying in their row (and a row
    whose provisional mean, from its first PROBE elements, is not kept)."""
    outer = 300
    x = (np.random.default_rng(red).standard_normal((outer, red)) * 3 + 2).astype(dtype)
    x[1] = 7  # zero variance
    x[2] = (np.random.default_rng(0).standard_normal(red) + 3e4).astype(dtype)  # huge mean
    x[3, 0] = np.inf
    x[4, -1] = np.nan
    x[5, :M.PROBE] += 40  # a probe far from the row's mean (rows longer than 2 * PROBE)
    b = M.SHORT_BLOCK  # rows are taken a block at a time: the nasty rows also at a block's edges
    x[b - 1] = -5  # zero variance, last of a block
    x[b, red // 2] = np.inf  # first of the next
    x[-1, 0] = np.nan  # last of the partial block at the end
    xk = M._kernel_view(x)
    t = np.float64 if dtype == np.float64 else np.float32
    sc, bi = _kernel_args(x, 1, 1, t)
    outs = []
    for kern in (M.rows_serial, M.rows_parallel):
        y = np.empty_like(xk)
        kern(xk, y, center, M.INSIDE_SQRT, 1e-5, sc, bi, 1, 1, False, M._NO_STATS[0], M._NO_STATS[0], None)
        outs.append(y)
    assert outs[0].tobytes() == outs[1].tobytes()
    for o in (0, 1, 2, 3, b - 1, b, b + 1, outer - 1):  # a row gives the same bits alone as in its block
        alone = np.empty_like(xk[o:o + 1])
        M.rows_serial(xk[o:o + 1], alone, center, M.INSIDE_SQRT, 1e-5, sc, bi, 1, 1, False, M._NO_STATS[0],
                      M._NO_STATS[0], None)
        assert alone.tobytes() == outs[0][o:o + 1].tobytes(), o
    y = outs[0].view(x.dtype).astype(np.float64)
    xd = x.astype(np.float64)
    assert np.isnan(y[4]).all()  # NaN: only its own row
    if center:
        assert np.isnan(y[3]).all()  # inf - mean(inf) = NaN
    else:  # x / sqrt(mean(x^2)): inf / inf = NaN at the inf, the others 0
        assert np.isnan(y[3, 0])
        np.testing.assert_allclose(y[3, 1:], bi.astype(np.float64)[1:], rtol=2e-2 if x.itemsize == 2 else 1e-6)
    ok = np.ones(outer, bool)
    ok[[3, 4, b, outer - 1]] = False
    assert np.isnan(y[outer - 1]).all()
    d = xd[ok] - xd[ok].mean(1, keepdims=True) if center else xd[ok]
    want = d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5) * sc.astype(np.float64) + bi.astype(np.float64)
    tol = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 5e-5}.get(np.dtype(dtype), 2e-2)
    np.testing.assert_allclose(y[ok], want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16], ids=["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("center", [True, False], ids=["layernorm", "rmsnorm"])
def test_row_blocks_give_the_chunk_paths_bits(dtype, center) -> None:
    """Rows of 2 * PROBE + 1 up to one chunk take the short-row blocks in rows_serial (their provisional mean
    from the first PROBE elements, as _chunk_stats takes it): the same bits as rows_parallel (a task per row
    there) and rows_split, which run _chunk_stats and _apply_span on row views -- a kept probe, a rejected one
    (redone), a huge mean, values whose float32 squares underflow (redone in float64), inf and NaN."""
    xk0 = M._kernel_view(np.zeros((1, 1), dtype))
    for red in (2 * M.PROBE + 1, 768, 1000, M._chunk_len(xk0)):
        rng = np.random.default_rng(red)
        x = (rng.standard_normal((3 * M.SHORT_BLOCK + 5, red)) * 3 + 2).astype(dtype)
        x[1, :M.PROBE] += 40
        x[2] = (rng.standard_normal(red) + 3e4).astype(dtype)
        x[3] = 7
        if np.dtype(dtype).itemsize >= 4 or dtype is BF16:
            x[4] *= 1e-30
        x[5, 9] = np.inf
        x[6, -1] = np.nan
        xk = M._kernel_view(x)
        assert M._short_rows_apply(xk, center, False, 1, 1)
        t = np.float64 if dtype == np.float64 else np.float32
        sc, bi = rng.random(red).astype(t), rng.random(red).astype(t)
        outs = []
        for kern in (M.rows_serial, M.rows_parallel, M.rows_split):
            y = np.empty_like(xk)
            kern(xk, y, center, M.INSIDE_SQRT, 1e-5, sc, bi, 1, 1, False, M._NO_STATS[0], M._NO_STATS[0], None)
            outs.append(y.tobytes())
        assert outs[0] == outs[1] == outs[2], red


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16], ids=["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("red", [1, 4, 64, 2 * M.PROBE, 2 * M.PROBE + 2, 1024, M.CHUNK])
@pytest.mark.parametrize("layout", ["row", "channel", "groups", "element_cycle"])
@pytest.mark.parametrize("center", [True, False], ids=["mvn", "rms"])
def test_short_rows_with_other_affine_layouts_give_the_view_paths_bits(dtype, red, layout, center) -> None:
    """Rows of up to SEGMENT_BLOCK_COLS with an affine that is not one value an element (_short_rows_segments):
    an MVN without an affine (one value a row), an instance norm's value per channel (rows cycling over o_mod),
    a GroupNorm's runs over small maps (seg_len < the row), a per-element one cycling over rows -- rows_serial
    and rows_parallel take the short-row blocks, rows_split the row views (as longer rows do everywhere): the
    same bits, with zero-variance, huge-mean, tiny (float64 redo), inf and NaN rows at a block's edges, and the
    values match float64."""
    o_mod, seg = {"row": (1, red), "channel": (3, red), "groups": (2, red // 2 if red % 2 == 0 else 1),
                  "element_cycle": (2, 1)}[layout]  # groups: a group of two maps a row
    outer = 2 * M.SHORT_BLOCK + 7
    rng = np.random.default_rng(red)
    x = (rng.standard_normal((outer, red)) * 3 + 2).astype(dtype)
    x[1] = 7
    x[2] = (rng.standard_normal(red) + 3e4).astype(dtype)
    if np.dtype(dtype).itemsize >= 4 or dtype is BF16:
        x[3] *= 1e-30
    x[M.SHORT_BLOCK - 1, red // 2] = np.inf
    x[M.SHORT_BLOCK, 0] = np.nan
    if red > M.PROBE:
        x[5, :M.PROBE] += 40
    xk = M._kernel_view(x)
    # the blocks up to SEGMENT_BLOCK_COLS (a per-element affine: the LayerNorm path), row by row beyond
    assert M._short_rows_segments(xk, False) == (red <= M.SEGMENT_BLOCK_COLS)
    t = np.float64 if dtype == np.float64 else np.float32
    sc, bi = _kernel_args(x, seg, o_mod, t)
    outs = []
    for kern in (M.rows_serial, M.rows_parallel, M.rows_split):
        y = np.empty_like(xk)
        kern(xk, y, center, M.INSIDE_SQRT, 1e-5, sc, bi, o_mod, seg, False, M._NO_STATS[0], M._NO_STATS[0], None)
        outs.append(y.tobytes())
    assert outs[0] == outs[1] == outs[2]
    y = np.frombuffer(outs[0], xk.dtype).view(x.dtype).reshape(x.shape).astype(np.float64)
    ok = np.ones(outer, bool)
    ok[[3, M.SHORT_BLOCK - 1, M.SHORT_BLOCK]] = False
    assert np.isnan(y[M.SHORT_BLOCK]).all()
    k = ((np.arange(outer)[:, None] % o_mod) * (red // seg) + np.arange(red)[None, :] // seg)[ok]
    xd = x.astype(np.float64)[ok]
    d = xd - xd.mean(1, keepdims=True) if center else xd
    want = d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5) * sc.astype(np.float64)[k] + bi.astype(np.float64)[k]
    tol = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 5e-5}.get(np.dtype(dtype), 2e-2)
    np.testing.assert_allclose(y[ok], want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_strided_kernels_agree_bit_for_bit(dtype) -> None:
    """Serial or parallel, any column-block width: a column's arithmetic is its own."""
    x = (np.random.default_rng(3).standard_normal((3, 37, 1000)) * 2 + 1).astype(dtype)
    xk = M._kernel_view(x)
    sc, bi = np.ones(3, np.float32), np.zeros(3, np.float32)
    outs = []
    for kern, block in ((M.strided_serial, 1000), (M.strided_parallel, 1000), (M.strided_parallel, 48),
                        (M.strided_serial, 333), (M.strided_parallel, M.strided_block(3, 37, 1000))):
        y = np.empty_like(xk)
        s, m = np.zeros((3, 1000)), np.zeros((3, 1000))
        kern(xk, y, True, M.INSIDE_SQRT, 1e-5, sc, bi, 1, 37, block, True, s, m)
        outs.append((y.tobytes(), s.tobytes(), m.tobytes()))
    assert all(o == outs[0] for o in outs[1:])
    want = R.mvn6(x.astype(np.float64), [1], True, 1e-5, "inside_sqrt")
    got = np.frombuffer(outs[0][0], xk.dtype).view(x.dtype).reshape(x.shape).astype(np.float64)
    tol = 2e-6 if dtype == np.float32 else 1e-3
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


# ---------------------------------------------------------------------------------------------
# float64 redo of chunks the float32 lane sums cannot hold; odd values


@pytest.mark.parametrize("scale", [1e20, 1e-20, 3e37], ids=["huge", "tiny", "near-max"])
@pytest.mark.parametrize("shape,axes", [((3, 5000), [1]), ((2, 3, 3000), [2])], ids=["rows", "rows-rank3"])
def test_centered_squares_beyond_float32_range(scale, shape, axes) -> None:
    """Spreads whose squares overflow / underflow float32 still normalize like float64 MVN."""
    x = (np.random.default_rng(4).standard_normal(shape) * scale).astype(np.float32)
    got = M.normalize(x, axes, M.INSIDE_SQRT, 0.0)
    want = R.mvn6(x.astype(np.float64), axes, True, 0.0, "inside_sqrt")
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-6, atol=2e-6 * np.abs(want).max())


def test_nan_and_inf_stay_in_their_row() -> None:
    x = np.random.default_rng(5).standard_normal((4, 5000)).astype(np.float32)
    x[1, 17] = np.nan
    x[2, 4000] = np.inf
    y = M.normalize(x, [1], M.INSIDE_SQRT, 1e-5)
    assert np.isnan(y[1]).all() and np.isnan(y[2]).all()
    want = R.mvn6(x[[0, 3]].astype(np.float64), [1], True, 1e-5, "inside_sqrt")
    np.testing.assert_allclose(y[[0, 3]], want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("loc,std", [(1e4, 1e-2), (-3e5, 1.0), (0.0, 1e-30)], ids=["1e4", "-3e5", "tiny-std"])
def test_large_offsets_across_chunks_and_schedules(loc, std) -> None:
    """Mean far from 0 with a small spread, rows spanning several chunks: f32 output within
    1e-3 of a standard deviation of the float64 oracle (the shift is applied as hi + lo parts)."""
    x = (np.random.default_rng(6).standard_normal((3, 2 * M.CHUNK + 5)) * std + loc).astype(np.float32)
    got = M.normalize(x, [1], M.INSIDE_SQRT, 0.0).astype(np.float64)
    want = R.mvn6(x.astype(np.float64), [1], True, 0.0, "inside_sqrt")
    assert np.abs(got - want).max() < 1e-3


# ---------------------------------------------------------------------------------------------
# group norm through each path, f16 in and out, against the oracle


@pytest.mark.parametrize("shape,groups", [((1, 32, 8, 8), 8), ((2, 8, 48, 48), 2), ((1, 4, 128, 128), 1),
                                          ((16, 32, 16, 16), 32), ((3, 6, 5000), 3)],
                         ids=["serial", "split", "split-one-row", "rows", "rank3"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16], ids=["f32", "f16", "bf16"])
def test_group_norm_paths(shape, groups, dtype) -> None:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
    c = shape[1]
    sc, bi = rng.uniform(0.5, 1.5, c).astype(dtype), rng.uniform(-1, 1, c).astype(dtype)
    n = shape[0]
    sp = x.size // (n * c)
    y = M.normalize(x.reshape(n * groups, -1), [1], M.INSIDE_SQRT, 1e-5, scale=sc, bias=bi, o_mod=groups,
                    seg_len=sp).reshape(shape)
    assert y.dtype == np.dtype(dtype)
    want = R.group_normalization(x.astype(np.float64), sc.astype(np.float64), bi.astype(np.float64), groups, 1e-5)
    tol = {np.dtype(np.float32): 2e-6, np.dtype(np.float16): 1e-3, BF16: 8e-3}[np.dtype(dtype)]
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("out", [np.float32, np.float64, np.float16, BF16], ids=["f32", "f64", "f16", "bf16"])
def test_f16_transposed_and_strided_any_out_dtype(out) -> None:
    x = (np.random.default_rng(8).standard_normal((4, 6, 50, 3)) * 2 - 1).astype(np.float16)
    for axes in ([0, 2], [1]):
        want = R.mvn6(x.astype(np.float64), axes, True, 1e-5, "inside_sqrt")
        y = M.normalize(x, axes, M.INSIDE_SQRT, 1e-5, out_dtype=out)
        assert y.dtype == np.dtype(out) and y.flags.c_contiguous and y.shape == x.shape
        tol = {np.dtype(np.float16): 1e-3, BF16: 8e-3}.get(np.dtype(out), 2e-6)
        np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol * np.abs(want).max())


# ---------------------------------------------------------------------------------------------
# recycled output buffers (irnorm/kernels/pool.py)


def test_held_outputs_are_never_overwritten() -> None:
    """Outputs >= 1 MiB come from the pool: one the caller still holds (directly or through a
    view) keeps its values through later calls; a released one is reused."""
    x1 = np.random.default_rng(9).standard_normal((64, 8192)).astype(np.float32)
    x2 = x1[::-1].copy()
    y1 = M.normalize(x1, [1], M.INSIDE_SQRT, 1e-5)
    keep = y1.copy()
    view = y1[3:]
    del y1
    y2 = M.normalize(x2, [1], M.INSIDE_SQRT, 1e-5)
    assert not np.shares_memory(view, y2)
    np.testing.assert_array_equal(view, keep[3:])
    addr = y2.ctypes.data
    del y2
    y3 = M.normalize(x2, [1], M.INSIDE_SQRT, 1e-5)
    assert y3.ctypes.data == addr  # released: recycled
    np.testing.assert_array_equal(view, keep[3:])


def test_recycler_alone() -> None:
    from irnorm.kernels.pool import Recycler

    r = Recycler(min_bytes=64, max_buffers=4)
    small = r.empty((4,), np.float32)  # below min_bytes: plain np.empty
    a = r.empty((8, 8), np.float32)
    b = r.empty((8, 8), np.float32)
    assert not np.shares_memory(a, b)
    pa = a.ctypes.data
    t = a.T
    del a
    assert r.empty((8, 8), np.float32).ctypes.data != pa  # a transpose view still holds it
    del t
    c = r.empty((64,), np.float32)  # same byte size, other shape: reused
    assert c.ctypes.data == pa and c.shape == (64,)
    assert small.shape == (4,)


def test_concurrent_calls_get_their_own_outputs() -> None:
    xs = [np.random.default_rng(10 + i).standard_normal((32, 9000)).astype(np.float32) for i in range(4)]
    want = [M.normalize(x, [1], M.INSIDE_SQRT, 1e-5).copy() for x in xs]

    def work(i: int) -> None:
        for _ in range(15):
            assert M.normalize(xs[i], [1], M.INSIDE_SQRT, 1e-5).tobytes() == want[i].tobytes()

    assert in_threads(work, 4) == []


def test_recycler_lets_go_of_released_memory_beyond_its_cap() -> None:
    from irnorm.kernels.pool import Recycler

    r = Recycler(min_bytes=64, max_buffers=8, max_free_bytes=1000)
    arrays = [r.empty((100,), np.float32) for _ in range(3)]  # 400 bytes each, all held
    assert len(r._bufs) == 3
    del arrays  # 1200 bytes released: over the 1000-byte cap
    r.empty((50,), np.float32)  # another size: a new buffer, and the oldest released one is dropped
    assert sum(b.nbytes for b in r._bufs) <= 1000 + 200
    r.clear()
    assert not r._bufs


def test_scratch_hands_out_the_same_buffer_per_slot_and_thread() -> None:
    """Scratch.get: the array handed out last for a slot again for the same shape and dtype; another shape of
    the slot a view of the same memory while it fits, a larger one a new buffer; slots and threads apart; below
    MIN_BYTES a fresh array every call."""
    import threading

    from irnorm.kernels.pool import Scratch

    s = Scratch()
    small = s.get(0, (4,), np.float32)
    assert s.get(0, (4,), np.float32) is not small  # malloc's: not kept
    s.MIN_BYTES = 0  # (an instance attribute: this Scratch only) every size kept from here on
    a = s.get(0, (4, 8), np.float32)
    assert a.shape == (4, 8) and a.dtype == np.float32 and a.flags.c_contiguous
    assert s.get(0, (4, 8), np.float32) is a
    b = s.get(0, (16,), np.float64)  # the same 128 bytes as float64
    assert b.shape == (16,) and b.dtype == np.float64 and np.shares_memory(a, b)
    c = s.get(1, (4, 8), np.float32)  # another slot: its own memory
    assert not np.shares_memory(a, c)
    big = s.get(0, (1000,), np.float32)  # grown: a new buffer
    assert big.shape == (1000,) and not np.shares_memory(big, a)
    assert s.get(0, (4, 8), np.float32) is not a and np.shares_memory(s.get(0, (4, 8), np.float32), big)
    huge = s.get(0, (Scratch.MAX_BYTES // 4 + 1,), np.float32)  # beyond MAX_BYTES: not kept
    assert not np.shares_memory(huge, big) and s.get(0, (1000,), np.float32).base is not None
    other: list = []
    t = threading.Thread(target=lambda: other.append(s.get(1, (4, 8), np.float32)))
    t.start()
    t.join()
    assert not np.shares_memory(other[0], c)  # per thread
    s.clear()
    assert not np.shares_memory(s.get(1, (4, 8), np.float32), c)


def test_scratch_getter_hands_out_what_get_does() -> None:
    """Scratch.getter(slot, shape, dtype)() is get(slot, shape, dtype): below MIN_BYTES a fresh array every call,
    from MIN_BYTES on the slot's kept buffer (the same array get hands out, per thread); a buffer of no
    elements is one array made once."""
    import threading

    from irnorm.kernels.pool import Scratch

    s = Scratch()
    small = s.getter(0, (4, 8), np.float32)
    a = small()
    assert a.shape == (4, 8) and a.dtype == np.float32 and a.flags.c_contiguous and small() is not a
    s.MIN_BYTES = 0  # (this Scratch only) kept from here on, by the same getter too
    kept = small()
    assert small() is kept and s.get(0, (4, 8), np.float32) is kept
    other: list = []
    t = threading.Thread(target=lambda: other.append(small()))
    t.start()
    t.join()
    assert other[0].shape == (4, 8) and not np.shares_memory(other[0], kept)  # per thread
    none = s.getter(1, (2, 0), np.float64)
    assert none().shape == (2, 0) and none().dtype == np.float64 and none() is none()
