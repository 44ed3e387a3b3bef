"""Unit tests of the shared moments engine (irnorm/kernels/moments.py).

canonical_layout is checked on a table of layouts; normalize() against a plain float64 numpy
formula for every finalize mode, affine layout, dtype and kernel path (rows, few long rows split
into chunks, strided with inner > 1, transposed non-contiguous axes, tiny serial tensors), and
for bit-identical results whatever the thread count or the work split.
"""

from __future__ import annotations

import ml_dtypes
import numba
import numpy as np
import pytest

from irnorm.kernels import moments as M

BF16 = np.dtype(ml_dtypes.bfloat16)

# (rtol, atol) of normalize() against the float64 formula on the same (rounded) inputs.
#  f64: float64 throughout, only summation order differs -> 1e-12.
#  f32: statistics in float64 (or float32 lane sums corrected in float64), (x - mean) * mult *
#       scale + bias in float32: a few roundings of 6e-8 on O(1) values -> 2e-6.
#  f16 / bf16 outputs: one final rounding, half an ulp = 4.9e-4 / 2e-3 relative -> 1e-3 / 4e-3.
TOL = {"float64": (1e-12, 1e-12), "float32": (2e-6, 2e-6), "float16": (1e-3, 1e-3), "bfloat16": (4e-3, 4e-3)}


def np_normalize(x, axes, mode, eps, center=True, scale=None, bias=None):
    """Textbook float64 formula; scale/bias already broadcast to x's shape (or None)."""
    x = np.asarray(x, np.float64)
    ax = tuple(sorted(set(axes)))
    mean = np.mean(x, axis=ax, keepdims=True) if center else np.zeros((1,) * x.ndim)
    d = x - mean
    m2 = np.sum(d * d, axis=ax, keepdims=True)
    n = int(np.prod([x.shape[a] for a in ax])) if ax else 1
    with np.errstate(divide="ignore", invalid="ignore"):
        mult = {
            M.INSIDE_SQRT: lambda: 1 / np.sqrt(m2 / n + eps),
            M.OUTSIDE_SQRT: lambda: 1 / (np.sqrt(m2 / n) + eps),
            M.CENTER_ONLY: lambda: np.ones_like(m2),
            M.L2_ADD: lambda: 1 / np.sqrt(m2 + eps),
            M.L2_MAX: lambda: 1 / np.sqrt(np.maximum(m2, eps)),
        }[mode]()
    y = d * mult
    if scale is not None:
        y = y * scale
    if bias is not None:
        y = y + bias
    return y


def check(got, want, what=""):
    rtol, atol = TOL[got.dtype.name]
    w = np.asarray(want, np.float64)
    np.testing.assert_allclose(got.astype(np.float64), w, rtol=rtol, atol=atol * max(1.0, np.abs(w).max(initial=0)),
                               err_msg=what)


def rand(shape, dtype=np.float32, seed=0, loc=0.0, std=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * std + loc).astype(dtype)


# ---------------------------------------------------------------------------------------------
# canonical_layout


@pytest.mark.parametrize("shape,axes,expected", [
    ((2, 3, 4, 5), [1, 2], (None, 2, 12, 5)),  # contiguous middle
    ((2, 3, 4, 5), [3], (None, 24, 5, 1)),  # last axis: rows
    ((2, 3, 4, 5), [0], (None, 1, 2, 60)),  # first axis: outer 1, strided
    ((2, 3, 4, 5), [0, 1, 2, 3], (None, 1, 120, 1)),  # all axes
    ((2, 3, 4, 5), [2, 1], (None, 2, 12, 5)),  # unsorted
    ((2, 3, 4, 5), [1, 1, 2], (None, 2, 12, 5)),  # duplicates act as a set
    ((2, 1, 3, 4), [0, 2], (None, 1, 6, 4)),  # size-1 gap: still contiguous
    ((5, 1, 1, 3), [0, 3], (None, 1, 15, 1)),  # several size-1 gaps
    ((2, 3, 4), [0, 2], ([1, 0, 2], 3, 8, 1)),  # real gap: transpose the reduced axes last
    ((2, 3, 4, 5), [3, 1], ([0, 2, 1, 3], 8, 15, 1)),  # unsorted non-contiguous
    ((2, 3, 4, 5, 6), [0, 2, 4], ([1, 3, 0, 2, 4], 15, 48, 1)),
    ((2, 3, 4), [], (None, 24, 1, 1)),  # empty axes: every element its own slice
    ((), [], (None, 1, 1, 1)),  # scalar
    ((0, 3), [1], (None, 0, 3, 1)),  # zero-size outer
    ((3, 0, 4), [1], (None, 3, 0, 4)),  # zero-size reduced
    ((3, 4, 0), [0], (None, 1, 3, 0)),  # zero-size inner
])
def test_canonical_layout(shape, axes, expected) -> None:
    assert M.canonical_layout(shape, axes) == expected


def test_canonical_layout_zero_size_kept_dims() -> None:
    """A 0-extent reduced axis with non-empty kept dims: outer must be the product of the kept dims
    (4), so that want_stats arrays get the right shape."""
    perm, outer, red, inner = M.canonical_layout((3, 4, 0), [0, 2])
    assert list(perm) == [1, 0, 2] and red == 0 and inner == 1
    assert outer == 4


@pytest.mark.parametrize("seed", range(12))
def test_canonical_layout_describes_the_reduction(seed: int) -> None:
    """For random shapes and axes, the (perm, outer, reduce, inner) view groups exactly the
    elements of each reduction slice."""
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 6))
    shape = tuple(int(d) for d in rng.integers(1, 4, rank))
    axes = [int(a) for a in rng.choice(rank, int(rng.integers(0, rank + 1)), replace=False)]
    x = rng.standard_normal(shape)
    perm, outer, red, inner = M.canonical_layout(shape, axes)
    xc = x.transpose(perm) if perm is not None else x
    v = np.ascontiguousarray(xc).reshape(outer, red, inner)
    # slice sums in (outer, inner) order == numpy's reduction with the kept dims in order
    np.testing.assert_allclose(v.sum(axis=1).ravel(), np.sum(x, axis=tuple(axes)).ravel(), rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# normalize: modes, paths, dtypes


MODES = [M.INSIDE_SQRT, M.OUTSIDE_SQRT, M.CENTER_ONLY, M.L2_ADD, M.L2_MAX]
MODE_IDS = ["inside", "outside", "center", "l2add", "l2max"]

# shape, axes: each layout the dispatcher distinguishes; sizes straddle the serial threshold
LAYOUTS = [
    ((6, 40), [1], "rows-small"),
    ((64, 1500), [1], "rows-parallel"),
    ((3, 20000), [1], "rows-few-long"),
    ((1, 70000), [1], "one-long-row"),
    ((4, 7, 9), [1], "strided-small"),
    ((1, 9, 5000), [1], "strided-outer1-many-blocks"),
    ((3, 40, 700), [1], "strided-partial-block"),
    ((5, 6, 7, 8), [0, 2], "transposed"),
    ((3, 5, 7), [], "empty-axes"),
]


@pytest.mark.parametrize("mode", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("shape,axes,label", LAYOUTS, ids=[t[2] for t in LAYOUTS])
def test_modes_and_paths(shape, axes, label, mode) -> None:
    center = mode not in (M.L2_ADD, M.L2_MAX)
    x = rand(shape, seed=len(label), loc=0.7 if center else 0.0, std=1.3)
    eps = 1e-5 if mode != M.L2_MAX else 2.0  # max: eps bites on short slices
    got = M.normalize(x, axes, mode, eps, center=center)
    assert got.shape == x.shape and got.dtype == np.float32
    check(got, np_normalize(x, axes, mode, eps, center=center), f"{label}/{mode}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, BF16], ids=["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("shape,axes,label", LAYOUTS[:8], ids=[t[2] for t in LAYOUTS[:8]])
def test_dtypes(shape, axes, label, dtype) -> None:
    """f64 stays f64 end to end; f16/bf16 come back in their own type, computed in float32."""
    x = rand(shape, dtype, seed=3, loc=-0.4, std=2.0)
    got = M.normalize(x, axes, M.INSIDE_SQRT, 1e-6)
    assert got.dtype == np.dtype(dtype) and got.shape == x.shape
    check(got, np_normalize(x, axes, M.INSIDE_SQRT, 1e-6), label)


def test_out_dtype() -> None:
    x = rand((4, 300), np.float16, seed=4)
    got = M.normalize(x, [1], M.INSIDE_SQRT, 1e-5, out_dtype=np.float32)
    assert got.dtype == np.float32
    check(got, np_normalize(x, [1], M.INSIDE_SQRT, 1e-5))


@pytest.mark.parametrize("shape,axes", [((300, 2000), [1]), ((2, 30, 3000), [1])], ids=["rows", "strided"])
def test_f64_path_is_float64(shape, axes) -> None:
    """f64 data: statistics and output in float64; mean 1e6 with std 1e-3 keeps ~1e-7 relative accuracy."""
    x = rand(shape, np.float64, seed=5, loc=1e6, std=1e-3)
    y, shift, mult = M.normalize(x, axes, M.INSIDE_SQRT, 1e-12, want_stats=True)
    assert y.dtype == shift.dtype == mult.dtype == np.float64
    want = np_normalize(x, axes, M.INSIDE_SQRT, 1e-12)
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("shape,axes", [((8, 512), [1]), ((2, 20000), [1]), ((1, 64, 2000), [1]),
                                        ((3, 16, 5, 8), [1, 3])],
                         ids=["rows", "split", "strided", "transposed"])
def test_large_mean_small_std_is_stable(shape, axes) -> None:
    """mean 1e4, std 1e-2 in f32 (one f32 ulp of 1e4 is 1e-3 = 0.1 std): the result must match the
    float64 formula on the same f32 inputs to 1e-3 of a standard deviation (no lost low bits of
    the mean, no E[x^2]-E[x]^2 cancellation)."""
    x = rand(shape, seed=6, loc=1e4, std=1e-2)
    got = M.normalize(x, axes, M.INSIDE_SQRT, 1e-12)
    err = np.abs(got.astype(np.float64) - np_normalize(x, axes, M.INSIDE_SQRT, 1e-12)).max()
    assert err < 1e-3, err


@pytest.mark.parametrize("offset", [0.0, 1.9, 2.1, 50.0, 1e4], ids=["none", "accepted", "refused", "far", "huge"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["f32", "f16"])
def test_provisional_mean_from_the_chunk_head(offset: float, dtype) -> None:
    """A chunk's provisional mean comes from its first PROBE elements and is kept only within two
    standard deviations of the chunk's mean (else a full pass).  Heads shifted by up to 1e4 standard
    deviations over a large mean with a small spread (f32: mean 1e3, std 1e-1): both paths must match
    the float64 formula on the same inputs, and the chunk statistics the float64 two-pass ones."""
    n = 4 * M.CHUNK * (2 if dtype == np.float16 else 1)  # several full chunks per row
    x = rand((3, n), np.float64, seed=9, loc=1e3 if dtype == np.float32 else 10.0, std=1e-1)
    ch = M.CHUNK * (2 if dtype == np.float16 else 1)
    for c0 in range(0, n, ch):  # every chunk's head shifted by `offset` standard deviations of the chunk
        x[:, c0:c0 + M.PROBE] += offset * x[:, c0:c0 + ch].std(axis=1, keepdims=True)
    x = x.astype(dtype)
    got = M.normalize(x, [1], M.INSIDE_SQRT, 1e-9)
    want = np_normalize(x, [1], M.INSIDE_SQRT, 1e-9)
    check(got, want)
    if dtype == np.float32:  # to 1e-4 of a standard deviation: no cancellation beyond the bound
        assert np.abs(got.astype(np.float64) - want).max() < 1e-4
    like = np.ones(1, np.float32)
    for c0 in range(0, n, ch):
        xs = x[0, c0:c0 + ch]
        mean, m2 = M._chunk_stats(M._kernel_view(xs), True, like, False)
        x64 = xs.astype(np.float64)
        assert abs(mean - x64.mean()) <= 1e-6 * x64.std() and m2 == pytest.approx(((x64 - x64.mean()) ** 2).sum(),
                                                                                rel=1e-5)


@pytest.mark.parametrize("shape,axes", [((4, 3000), [1]), ((2, 5, 600), [1])], ids=["rows", "strided"])
def test_l2_sum_of_squares_does_not_overflow_or_underflow(shape, axes) -> None:
    """The issue asks for float64 accumulation: |x| ~ 1e20 (x^2 > float32 max) and |x| ~ 1e-20
    (x^2 below float32's normal range) still give unit vectors."""
    x = rand(shape, seed=7).astype(np.float64)
    x[0] *= 1e20
    x[1] *= 1e-20
    x = x.astype(np.float32)
    got = M.normalize(x, axes, M.L2_ADD, 1e-45, center=False)
    check(got, np_normalize(x, axes, M.L2_ADD, 1e-45, center=False))


def test_zero_variance_gives_bias_exactly() -> None:
    levels = np.array([1e4, -3.25, 0.0, 7e-3, 123.456], np.float32)
    x = np.repeat(levels[:, None], 5000, axis=1)
    bias = np.arange(5, dtype=np.float32)
    y = M.normalize(x, [1], M.INSIDE_SQRT, 1e-9, scale=np.full(5, 3.0, np.float32), bias=bias, o_mod=5)
    np.testing.assert_array_equal(y, np.repeat(bias[:, None], 5000, axis=1))


def test_all_zero_l2_slice_gives_zero() -> None:
    x = rand((3, 40), seed=8)
    x[1] = 0
    for mode in (M.L2_ADD, M.L2_MAX):
        y = M.normalize(x, [1], mode, 1e-6, center=False)
        assert not np.any(y[1]) and np.all(np.isfinite(y))


def test_empty_axes_semantics() -> None:
    """Empty axes: each element is its own slice (mean == x): centered modes give 0, L2 gives
    x / sqrt(x^2 + eps) (the NormalizeL2 op applies the spec's special case on top)."""
    x = rand((3, 4), seed=9)
    assert not np.any(M.normalize(x, [], M.INSIDE_SQRT, 1e-5))
    check(M.normalize(x, [], M.L2_ADD, 1e-5, center=False), x / np.sqrt(x.astype(np.float64) ** 2 + 1e-5))


# ---------------------------------------------------------------------------------------------
# affine layouts


def test_group_norm_affine_per_channel() -> None:
    """(N*G, C/G*S) rows, scale/bias [C] with o_mod=G, seg_len=S: per-channel affine of GroupNorm."""
    n, c, g, s = 3, 12, 4, 50
    x = rand((n, c, s), seed=10, loc=2.0)
    sc, bi = rand(c, seed=11), rand(c, seed=12)
    y = M.normalize(x.reshape(n * g, -1), [1], M.INSIDE_SQRT, 1e-5, scale=sc, bias=bi, o_mod=g, seg_len=s)
    from irnorm import reference

    check(y.reshape(x.shape), reference.group_normalization(x, sc, bi, g, 1e-5))


def test_elementwise_affine_rows() -> None:
    """seg_len=1: one scale/bias per reduced element (LayerNorm)."""
    x = rand((7, 33), seed=13, loc=1.0)
    sc, bi = rand(33, seed=14), rand(33, seed=15)
    y = M.normalize(x, [1], M.INSIDE_SQRT, 1e-5, scale=sc, bias=bi, seg_len=1)
    check(y, np_normalize(x, [1], M.INSIDE_SQRT, 1e-5, scale=sc, bias=bi))


@pytest.mark.parametrize("inner", [5, 1300], ids=["small", "many-blocks"])
def test_strided_affine_with_o_mod(inner: int) -> None:
    """inner > 1: k = (o % o_mod) * nseg + r // seg_len indexes scale/bias."""
    outer, red, o_mod, seg = 4, 6, 2, 3
    x = rand((outer, red, inner), seed=16, loc=-1.0)
    nseg = red // seg
    sc, bi = rand(o_mod * nseg, seed=17), rand(o_mod * nseg, seed=18)
    y = M.normalize(x, [1], M.INSIDE_SQRT, 1e-5, scale=sc, bias=bi, o_mod=o_mod, seg_len=seg)
    k = (np.arange(outer)[:, None] % o_mod) * nseg + np.arange(red)[None, :] // seg
    want = np_normalize(x, [1], M.INSIDE_SQRT, 1e-5, scale=sc[k][:, :, None], bias=bi[k][:, :, None])
    check(y, want)


def test_want_stats() -> None:
    x = rand((2, 5, 7), np.float32, seed=19, loc=3.0)
    y, shift, mult = M.normalize(x, [1], M.INSIDE_SQRT, 1e-5, want_stats=True)
    xd = x.astype(np.float64)
    assert shift.shape == mult.shape == (2, 7)
    np.testing.assert_allclose(shift, xd.mean(axis=1), rtol=1e-12)
    np.testing.assert_allclose(mult, 1 / np.sqrt(xd.var(axis=1) + 1e-5), rtol=1e-9)


# ---------------------------------------------------------------------------------------------
# zero-size tensors, aliasing


@pytest.mark.parametrize("shape,axes", [((0, 5), [1]), ((3, 0), [1]), ((3, 0, 4), [1]), ((2, 3, 0), [0]),
                                        ((0, 3, 4), [0, 2]), ((0,), [])])
def test_zero_size(shape, axes) -> None:
    x = np.zeros(shape, np.float16)
    y, shift, mult = M.normalize(x, axes, M.INSIDE_SQRT, 1e-5, want_stats=True)
    assert y.shape == shape and y.dtype == np.float16
    _, outer, _, inner = M.canonical_layout(shape, axes)
    assert shift.shape == mult.shape == (outer, inner)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_input_untouched_and_output_fresh(dtype) -> None:
    x = rand((16, 3000), dtype, seed=20)
    x.flags.writeable = False  # any write into the input would raise
    keep = x.copy()
    for axes in ([1], [0], []):
        y = M.normalize(x, axes, M.INSIDE_SQRT, 1e-5)
        assert not np.shares_memory(x, y)
    np.testing.assert_array_equal(x, keep)


# ---------------------------------------------------------------------------------------------
# determinism: same bits whatever the thread count or the way the work is split


DETERMINISM_CASES = [
    ((64, 3000), [1], M.INSIDE_SQRT, "rows"),
    ((3, 40000), [1], M.INSIDE_SQRT, "few-long-rows"),
    ((1, 16, 9000), [1], M.INSIDE_SQRT, "strided-outer1"),
    ((6, 30, 40, 9), [0, 2], M.OUTSIDE_SQRT, "transposed"),
    ((2, 8, 4000), [2], M.L2_ADD, "l2-rows"),
    ((2, 80, 500), [1], M.L2_MAX, "l2-strided"),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16], ids=["f32", "f64", "bf16"])
@pytest.mark.parametrize("shape,axes,mode,label", DETERMINISM_CASES, ids=[c[3] for c in DETERMINISM_CASES])
def test_bit_identical_across_thread_counts(shape, axes, mode, label, dtype) -> None:
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs at least 2 numba threads")
    center = mode not in (M.L2_ADD, M.L2_MAX)
    x = rand(shape, dtype, seed=21, loc=5.0 if center else 0.0, std=3.0)
    sc = rand(1, seed=22)
    before = numba.get_num_threads()
    try:
        outs = []
        for threads in (1, 2, 1):
            numba.set_num_threads(threads)
            outs.append(M.normalize(x, axes, mode, 1e-3, center=center, scale=sc, want_stats=True))
    finally:
        numba.set_num_threads(before)
    for other in outs[1:]:
        for a, b in zip(outs[0], other, strict=True):
            assert a.tobytes() == b.tobytes(), label


def test_bit_identical_whatever_the_split() -> None:
    """A row gives the same bits whether it is normalized alone (serial path for a tiny tensor),
    among few long rows (chunk-split tasks) or among many rows (one task per row)."""
    x = rand((40, 9000), seed=23, loc=2.0, std=0.5)
    many = M.normalize(x, [1], M.INSIDE_SQRT, 1e-5)
    few = M.normalize(x[:3], [1], M.INSIDE_SQRT, 1e-5)
    one = M.normalize(x[:1], [1], M.INSIDE_SQRT, 1e-5)
    assert few.tobytes() == many[:3].tobytes()
    assert one.tobytes() == many[:1].tobytes()
    small = rand((5, 200), seed=24)
    big = np.concatenate([small, rand((400, 200), seed=25)])
    assert M.normalize(small, [1], M.INSIDE_SQRT, 1e-5).tobytes() == \
        M.normalize(big, [1], M.INSIDE_SQRT, 1e-5)[:5].tobytes()


@pytest.mark.parametrize("spread, scale0, bias0", [(0.01, 3e38, 1.0), (0.01, -3e38, 0.5), (1e10, 1e-30, 0.0)])
def test_affine_with_extreme_weights_matches_the_unfused_formula(spread: float, scale0: float, bias0: float) -> None:
    """y = (x - mean) * mult * scale + bias: the per-segment multiplier mult * scale may overflow
    (or go subnormal) in float32 where (x - mean) * mult * scale does not; the kernel then falls back
    to the unfused product, so finite results stay finite (x == mean gives the bias, not NaN) and
    tiny ones keep their precision."""
    base = np.array([-1.0, -0.5, 0.25, 0.5, 1.0, -1.0, 0.5, -0.25, 0.0, 0.0, 0.1, -0.1])
    x = (base * spread).astype(np.float32)
    x[8:10] = x.astype(np.float64).mean()  # exactly the (float32) mean: d == 0 in the extreme segment
    sc = np.array([scale0, 2.0, scale0], np.float32)
    bi = np.array([bias0, -1.0, bias0], np.float32)
    y = M.normalize(x[None], [1], M.INSIDE_SQRT, 0.0, scale=sc, bias=bi, seg_len=4)[0]
    xd = x.astype(np.float64)
    mult = 1.0 / np.sqrt(xd.var())
    with np.errstate(over="ignore"):
        assert not np.isfinite(np.float32(mult) * np.float32(scale0)) or abs(np.float32(mult) * np.float32(scale0)) \
            < np.finfo(np.float32).tiny, "the case must make the fused multiplier overflow or go subnormal"
        want = ((xd - xd.mean()) * mult * np.repeat(sc.astype(np.float64), 4)
                + np.repeat(bi.astype(np.float64), 4)).astype(np.float32)
    finite = np.isfinite(want)
    assert finite[:4].any() and np.array_equal(np.isfinite(y), finite), (y, want)
    np.testing.assert_allclose(y[finite], want[finite], rtol=1e-5, atol=0)
    assert np.all(np.sign(y[~finite]) == np.sign(want[~finite]))


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64], ids=["f32", "f16", "f64"])
@pytest.mark.parametrize("shape,axes,label", LAYOUTS[:8], ids=[t[2] for t in LAYOUTS[:8]])
def test_bound_normalizer_is_normalize(shape, axes, label, dtype) -> None:
    """A normalizer bound to a shape (what layers keep per input shape) gives normalize's bits, call after
    call on new data, with an affine and with a widened output type."""
    run = M.normalizer(shape, np.dtype(dtype), axes, M.INSIDE_SQRT, 1e-5)
    widened = M.normalizer(shape, np.dtype(dtype), axes, M.INSIDE_SQRT, 1e-5, out_dtype=np.float64)
    for seed in (1, 2):
        x = rand(shape, dtype, seed=seed, loc=0.3, std=1.7)
        got = run(x)
        assert got.dtype == np.dtype(dtype) and got.flags.c_contiguous
        np.testing.assert_array_equal(got, M.normalize(x, axes, M.INSIDE_SQRT, 1e-5))
        np.testing.assert_array_equal(widened(x), M.normalize(x, axes, M.INSIDE_SQRT, 1e-5, out_dtype=np.float64))
    # rows layouts with a per-element affine (how a LayerNorm's scale and bias reach the engine)
    if len(axes) == 1 and axes[0] == len(shape) - 1:
        n = shape[-1]
        rng = np.random.default_rng(0)
        scale, bias = rng.standard_normal(n), rng.standard_normal(n)
        bound = M.normalizer(shape, np.dtype(dtype), axes, M.INSIDE_SQRT, 1e-5, scale=scale, bias=bias, seg_len=1)
        x = rand(shape, dtype, seed=7)
        np.testing.assert_array_equal(bound(x), M.normalize(x, axes, M.INSIDE_SQRT, 1e-5, scale=scale, bias=bias,
                                                            seg_len=1))


@pytest.mark.parametrize("data_shape,groups,activation,dtype", [
    *[(shape, g, None, dt) for shape, g in (((1, 48, 4, 4), 1),  # MobileViTv2's: the small calls read it as it is
                                           ((2, 64, 4, 1), 4),
                                           ((1, 32, 40, 40), 8))  # above the small calls' size: reshaped around
      for dt in (np.float32, np.float16, np.float64)],
    ((1, 16, 4, 4), 4, "swish", np.float32),  # a fused activation (a float32 / float64 result only)
    ((1, 32, 40, 40), 8, "swish", np.float64),
], ids=lambda v: v if isinstance(v, str) else None)
def test_normalizer_takes_data_in_its_own_shape(data_shape, groups, activation, dtype) -> None:
    """normalizer(..., data_shape=...) (a GroupNorm's [N, C, H, W] for its [N * G, C / G * H * W] rows) gives
    the bits of reshaping the data to the rows and the result back, call after call, in the data's shape."""
    from irnorm.kernels import activation as A

    n, c = data_shape[:2]
    spatial = int(np.prod(data_shape[2:]))
    rows = (n * groups, c // groups * spatial)
    rng = np.random.default_rng(3)
    scale, bias = rng.standard_normal(c), rng.standard_normal(c)
    kw = dict(scale=scale, bias=bias, o_mod=groups, seg_len=spatial, out_dtype=np.dtype(dtype),
              activation=None if activation is None else (A.SWISH, 1.0, 0.0))
    in_rows = M.normalizer(rows, np.dtype(dtype), [1], M.INSIDE_SQRT, 1e-5, **kw)
    in_place = M.normalizer(rows, np.dtype(dtype), [1], M.INSIDE_SQRT, 1e-5, data_shape=data_shape, **kw)
    for seed in (1, 2, 3):  # the small calls bind their entry point on the second call
        x = rand(data_shape, dtype, seed=seed, loc=0.2, std=1.3)
        got = in_place(x)
        assert got.shape == data_shape and got.dtype == np.dtype(dtype) and got.flags.c_contiguous
        np.testing.assert_array_equal(got, in_rows(x.reshape(rows)).reshape(data_shape))
    with pytest.raises(ValueError, match="does not hold"):
        M.normalizer(rows, np.dtype(dtype), [1], M.INSIDE_SQRT, 1e-5, data_shape=(n, c, 3), **kw)
