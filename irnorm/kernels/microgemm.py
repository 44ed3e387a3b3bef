"""float32 products of irnorm's small and mid-sized GEMMs in register-blocked vector code of its own.

Why not OpenBLAS for these: its sgemm packs both operands into its own panels on every call, which for the
products real exports have at their sizes (ViT's [65, 64] x [64, 192], a stem's [64, 147] x [147, 1024], a
3x3 convolution's [64, 576] x [576, 256]) costs as much as the arithmetic, and its kernels are chosen by
OpenBLAS at load time (``OPENBLAS_CORETYPE``) rather than by the CPU the products run on.  Measured on one
thread of an AVX-512 EPYC (Zen 5) with OpenBLAS 0.3.31 running its Haswell kernels: those three products
13.3 -> 6.1 us, 152 -> 76 us, 148 -> 69 us (55-60 GMAC/s -> 120-130).

The micro-kernel (``_tile_kernel``) is LLVM vector IR written through a Numba intrinsic: MR rows of C as
MR x NR/W vector accumulators held in registers for the whole depth, each step one load of NR columns of B
and MR broadcasts of A -- the register blocking Numba's loops do not get from LLVM (a loop nest keeps the
accumulators in memory: ~45 GMAC/s).  MR x NR = 12 x 32: 24 of AVX-512's 32 zmm registers hold the tile.
Used only where Numba compiles for AVX-512 (``ENABLED``); elsewhere products stay with OpenBLAS (below).

Each element of C is one chain of fused multiply-adds over k in order (k = 0, 1, ...), whatever the blocks:
the bits do not depend on how a product is cut into column blocks or threads.  The driver (``gemm``) packs
reads B's rows in place (packing them into a contiguous panel measured slower: [64, 147] x [147, 1024] 78 -> 99
us), takes a last panel of NR / 2 columns with kernels of that width and zero-pads only a narrower rest into a
scratch panel, cuts the rows into ceil(M / MR) blocks
of nearly equal height (one kernel per height), and cuts K into blocks of KC (the first block stores, the
next ones add to C).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import njit, types


def _target_has_avx512() -> bool:
    """Whether the code Numba generates may use AVX-512: the host's features, or those of the CPU Numba
    is told to compile for (NUMBA_CPU_NAME / NUMBA_CPU_FEATURES, e.g. a generic cache for many machines)."""
    import numba

    if numba.config.CPU_NAME:
        return "+avx512f" in (numba.config.CPU_FEATURES or "")
    try:
        import llvmlite.binding as ll

        return bool(ll.get_host_cpu_features().get("avx512f", False))
    except Exception:  # noqa: BLE001 - unknown host: the AVX2 shape is safe everywhere
        return False


AVX512 = _target_has_avx512()
# irnorm's kernels run the float32 products only where Numba compiles for AVX-512.  With AVX2 the same
# driver with 6 x 16 tiles (BLIS's Haswell shape) was at best level with OpenBLAS's Haswell kernels and
# slower on a stem's [64, 147] x [147, 1024] (221 against 165 us) and on deep products (measured with Numba
# compiling for Haswell on the AVX-512 EPYC: NUMBA_CPU_NAME=haswell), so there products stay OpenBLAS's.
ENABLED = AVX512
MR, NR = 12, 32  # 24 of the 32 zmm registers hold C's tile
# Depth per block: a [KC, NR] panel of B (48 KiB with NR = 32) stays in L2 beside MR rows of A.
KC = 384


def _tile_kernel(mr: int, nr: int, accumulate: bool, offsets: bool = False):
    """C[0:mr, 0:nr] (=, or += with `accumulate`) A[0:mr, 0:k] @ B[0:k, 0:nr] with A, B, C given as
    addresses of float32 data and their row strides in elements (B's rows hold nr contiguous values).
    With `offsets`, `ldb` is instead the address of int64 element offsets, B's row kk at b + offsets[kk]:
    a convolution's taps read straight from its padded input (an implicit GEMM, no unfold)."""

    @intrinsic
    def tile(typingctx, a, lda, b, ldb, c, ldc, k):  # pragma: no cover - compiled
        sig = types.void(types.intp, types.intp, types.intp, types.intp, types.intp, types.intp, types.intp)

        def codegen(context, builder, signature, args):
            a_at, lda_, b_at, ldb_, c_at, ldc_, depth = args
            f32 = ir.FloatType()
            vt = ir.VectorType(f32, nr)
            fptr = f32.as_pointer()
            i32 = ir.IntType(32)
            fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]),
                                                 f"llvm.fma.v{nr}f32")
            a_p = builder.inttoptr(a_at, fptr)
            b_p = builder.inttoptr(b_at, fptr)
            c_p = builder.inttoptr(c_at, fptr)
            accs = [cgutils.alloca_once(builder, vt) for _ in range(mr)]
            for acc in accs:
                builder.store(ir.Constant(vt, [0.0] * nr), acc)
            splat = ir.Constant(ir.VectorType(i32, nr), [0] * nr)
            undef = ir.Constant(vt, ir.Undefined)
            rows = [builder.gep(a_p, [builder.mul(ir.Constant(lda_.type, i), lda_)]) for i in range(mr)]
            offs_p = builder.inttoptr(ldb_, ir.IntType(64).as_pointer()) if offsets else None
            with cgutils.for_range(builder, depth) as loop:
                kk = loop.index
                row = builder.load(builder.gep(offs_p, [kk])) if offsets else builder.mul(kk, ldb_)
                bv = builder.load(builder.bitcast(builder.gep(b_p, [row]), vt.as_pointer()), align=4)
                for i in range(mr):
                    av = builder.load(builder.gep(rows[i], [kk]))
                    bc = builder.shuffle_vector(builder.insert_element(undef, av, ir.Constant(i32, 0)), undef,
                                                splat)
                    builder.store(builder.call(fma, [bc, bv, builder.load(accs[i])]), accs[i])
            for i in range(mr):
                cp = builder.bitcast(builder.gep(c_p, [builder.mul(ir.Constant(ldc_.type, i), ldc_)]),
                                     vt.as_pointer())
                v = builder.load(accs[i])
                if accumulate:
                    v = builder.fadd(builder.load(cp, align=4), v)
                builder.store(v, cp, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return tile


# Half-width panels (16 columns with AVX-512, 8 with AVX2) have kernels of their own: an attention head's
# 16 values, a 4x4 map's 16 pixels; a narrower rest is zero-padded into a panel of that width.
NH = NR // 2


def _make_rows_dispatch(width: int, offsets: bool = False):
    """_rows_tile(rows, first, ...) for panels `width` columns wide: the tile kernel for `rows` rows (1..MR:
    the last rows of a product take the one for their count, no padding), by an if-chain Numba compiles (a
    tuple of intrinsics cannot be indexed at run time)."""
    lines = ["def _rows_tile(rows, first, a, lda, b, ldb, c, ldc, k):"]
    scope = {}
    for r in range(1, MR + 1):
        scope[f"_S{r}"] = _tile_kernel(r, width, False, offsets)
        scope[f"_A{r}"] = _tile_kernel(r, width, True, offsets)
        lines.append(f"    {'if' if r == 1 else 'elif'} rows == {r}:")
        lines.append(f"        if first:\n            _S{r}(a, lda, b, ldb, c, ldc, k)")
        lines.append(f"        else:\n            _A{r}(a, lda, b, ldb, c, ldc, k)")
    exec("\n".join(lines), scope)  # noqa: S102 - generated from the constants above only
    # inlined into gemm (cached with it): a function made by exec has no file for Numba's cache
    return njit(nogil=True, inline="always")(scope["_rows_tile"])


_rows_tile = _make_rows_dispatch(NR)
_rows_tile_half = _make_rows_dispatch(NH)
_rows_tile_offs = _make_rows_dispatch(NR, True)
_rows_tile_half_offs = _make_rows_dispatch(NH, True)


@njit(nogil=True, cache=True, inline="always")
def _panel(with_offs, half, rows, first, a, lda, b, ldb, c, ldc, k):  # pragma: no cover - compiled
    if with_offs:
        if half:
            _rows_tile_half_offs(rows, first, a, lda, b, ldb, c, ldc, k)
        else:
            _rows_tile_offs(rows, first, a, lda, b, ldb, c, ldc, k)
    elif half:
        _rows_tile_half(rows, first, a, lda, b, ldb, c, ldc, k)
    else:
        _rows_tile(rows, first, a, lda, b, ldb, c, ldc, k)


@njit(nogil=True, cache=True, error_model="numpy")
def gemm(m, n, k, a, lda, b, ldb, c, ldc, j0, j1):  # pragma: no cover - compiled
    """C[:, j0:j1] = A @ B[:, j0:j1] for row-major float32 A [m, k], B [k, n], C [m, n] given as addresses
    with row strides lda, ldb, ldc (elements).  Columns j0..j1-1 only, so callers can share a product's
    columns out over threads; a column's values do not depend on the cut."""
    _gemm(m, n, k, a, lda, b, ldb, c, ldc, j0, j1, False)


@njit(nogil=True, cache=True, error_model="numpy")
def gemm_rows_at(m, n, k, a, lda, b, offsets, c, ldc, j0, j1):  # pragma: no cover - compiled
    """gemm with B's row kk at b + offsets[kk] elements (offsets: the address of k int64 values), e.g. a
    convolution's tap (channel, ky, kx) in its zero-padded input, each row read over n contiguous values."""
    _gemm(m, n, k, a, lda, b, offsets, c, ldc, j0, j1, True)


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def _gemm(m, n, k, a, lda, b, ldb, c, ldc, j0, j1, with_offs):  # pragma: no cover - compiled
    if m <= 0 or j1 <= j0:
        return
    if k <= 0:
        for i in range(m):
            _zero(c + 4 * (i * ldc + j0), j1 - j0)
        return
    kc = min(k, KC)
    rest = (j1 - j0) % NR % NH  # columns left after the full and half panels: zero-padded to NH
    panel = np.empty(kc * NH if rest else 0, np.float32)
    tail_c = np.empty(MR * NH if rest else 0, np.float32)
    pan, tc = panel.ctypes.data, tail_c.ctypes.data
    # the rows in ceil(m / MR) blocks of (nearly) equal height: 64 rows as 11+11+11+11+10+10, not
    # 5 x 12 + 4 (a 4-row tile costs about what a full one does)
    blocks = -(-m // MR)
    jb = j0
    while jb < j1:
        left = j1 - jb
        width = NR if left >= NR else (NH if left >= NH else left)
        half = width < NR
        for k0 in range(0, k, kc):
            depth = min(kc, k - k0)
            first = k0 == 0
            # B's rows from k0 on: read in place (packing them measured slower)
            if with_offs:
                bp, bld = b + 4 * jb, ldb + 8 * k0
            else:
                bp, bld = b + 4 * (k0 * ldb + jb), ldb
            if width == NR or width == NH:
                for blk in range(blocks):
                    i0 = blk * m // blocks
                    _panel(with_offs, half, (blk + 1) * m // blocks - i0, first, a + 4 * (i0 * lda + k0), lda, bp,
                           bld, c + 4 * (i0 * ldc + jb), ldc, depth)
            else:  # the last columns: B's zero-padded, each tile into scratch, its first `width` columns out
                _pack(panel, bp, bld, depth, width, with_offs)
                for blk in range(blocks):
                    i0 = blk * m // blocks
                    rows = (blk + 1) * m // blocks - i0
                    if not first:
                        _gather(tail_c, c + 4 * (i0 * ldc + jb), ldc, rows, width)
                    _rows_tile_half(rows, first, a + 4 * (i0 * lda + k0), lda, pan, NH, tc, NH, depth)
                    _scatter(tail_c, c + 4 * (i0 * ldc + jb), ldc, rows, width)
        jb += width


@njit(nogil=True, cache=True, inline="always")
def _view(address, count):  # pragma: no cover - compiled
    return _carray(address, count)


def _array_at(element: types.Type, itemsize: int):
    """An intrinsic (address, count) -> a 1-d C array of `element` over memory the caller owns."""

    @intrinsic
    def view(typingctx, address, count):  # pragma: no cover - compiled
        arr_t = types.Array(element, 1, "C")
        sig = arr_t(types.intp, types.intp)

        def codegen(context, builder, signature, args):
            at, cnt = args
            ary = context.make_array(arr_t)(context, builder)
            ptr = builder.inttoptr(at, context.get_value_type(element).as_pointer())
            size = context.get_constant(types.intp, itemsize)
            context.populate_array(ary, data=ptr, shape=[cnt], strides=[size], itemsize=size, meminfo=None)
            return ary._getvalue()

        return sig, codegen

    return view


_carray = _array_at(types.float32, 4)
_offsets_view = _array_at(types.int64, 8)


@njit(nogil=True, cache=True, inline="always")
def _zero(address, count):  # pragma: no cover - compiled
    v = _view(address, count)
    for j in range(count):
        v[j] = 0.0


@njit(nogil=True, cache=True, inline="always")
def _pack(panel, b, ldb, depth, width, with_offs):  # pragma: no cover - compiled
    """B's rows [depth, width] at address b (row kk at b + kk * ldb, or b + offsets[kk] with `with_offs`:
    ldb the offsets' address) into panel [depth, NH], zero beyond `width`."""
    offs = _offsets_view(ldb if with_offs else 0, depth if with_offs else 0)
    for kk in range(depth):
        src = _view(b + 4 * (offs[kk] if with_offs else kk * ldb), width)
        base = kk * NH
        for j in range(width):
            panel[base + j] = src[j]
        for j in range(width, NH):
            panel[base + j] = 0.0


@njit(nogil=True, cache=True, inline="always")
def _scatter(tile, c, ldc, rows, width):  # pragma: no cover - compiled
    for i in range(rows):
        dst = _view(c + 4 * i * ldc, width)
        for j in range(width):
            dst[j] = tile[i * NH + j]


@njit(nogil=True, cache=True, inline="always")
def _gather(tile, c, ldc, rows, width):  # pragma: no cover - compiled
    for i in range(rows):
        src = _view(c + 4 * i * ldc, width)
        for j in range(width):
            tile[i * NH + j] = src[j]
