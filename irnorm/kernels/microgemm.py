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
Used where Numba compiles for AVX2 with FMA (``ENABLED``: 12 x 32 tiles with AVX-512, 6 x 16 with AVX2 alone);
without AVX2 products stay with OpenBLAS (below).

Each element of C is one chain of fused multiply-adds over k in order (k = 0, 1, ...), whatever the blocks:
the bits do not depend on how a product is cut into column blocks or threads.  The driver (``gemm``) packs
reads B's rows in place (packing them into a contiguous panel measured slower: [64, 147] x [147, 1024] 78 -> 99
us), takes a last panel of NR / 2 columns with kernels of that width and a narrower rest with masked loads and
stores (AVX-512's lane masks: no packing, nothing read past a row's last column), cuts the rows into ceil(M / MR) blocks
of nearly equal height (one kernel per height), and cuts K into blocks of KC (the first block stores, the
next ones add to C).
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import njit, types
from .rowvec import lane_mask, masked_ops

# CPU names LLVM knows, for a target given by name alone (NUMBA_CPU_NAME with NUMBA_CPU_FEATURES empty: the name
# sets the features).  Names not listed count as neither (the safe choice: OpenBLAS's products).
_AVX512_NAMES = frozenset({"skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client",
                           "icelake-server", "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids",
                           "graniterapids", "graniterapids-d", "diamondrapids", "znver4", "znver5", "x86-64-v4"})
_AVX2_NAMES = _AVX512_NAMES | {"haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake", "arrowlake",
                               "arrowlake-s", "lunarlake", "pantherlake", "gracemont", "sierraforest", "grandridge",
                               "clearwaterforest", "znver1", "znver2", "znver3", "x86-64-v3", "core-avx2"}


def _target_isa() -> tuple[bool, bool]:
    """(AVX-512, AVX2 with FMA) of the code Numba generates: the host's features, or those of the CPU Numba is
    told to compile for (NUMBA_CPU_NAME / NUMBA_CPU_FEATURES, e.g. a generic cache for many machines).  Numba
    compiles with the host's features when NUMBA_CPU_FEATURES is unset, whatever the name."""
    import numba

    features = numba.config.CPU_FEATURES
    if features is None:
        try:
            import llvmlite.binding as ll

            host = ll.get_host_cpu_features()
            return bool(host.get("avx512f", False)), bool(host.get("avx2", False) and host.get("fma", False))
        except Exception:  # noqa: BLE001 - unknown host: OpenBLAS's products are safe everywhere
            return False, False
    if not features:
        name = (numba.config.CPU_NAME or "").lower()
        return name in _AVX512_NAMES, name in _AVX2_NAMES
    enabled = {f[1:] for f in features.split(",") if f.startswith("+")}
    return "avx512f" in enabled, {"avx2", "fma"} <= enabled


AVX512, AVX2 = _target_isa()
# irnorm's kernels run the float32 products where Numba compiles for AVX2 with FMA (every AVX-512 CPU has both).
# The tile is MR x NR accumulators held in registers: 12 x 32 with AVX-512 (24 of its 32 zmm registers), 6 x 16
# with AVX2 (12 of its 16 ymm registers, BLIS's Haswell shape; LLVM splits each 16-value vector into two ymm).
# Alone, the AVX2 tiles were at best level with OpenBLAS's Haswell kernels on plain products (a stem's
# [64, 147] x [147, 1024] 221 against 165 us); inside networks the paths built on them (implicit-GEMM and
# pixel-row convolutions, the fused epilogues, no unfold) are what counts.  Measured with Numba compiling for
# Haswell (NUMBA_CPU_NAME=haswell, NUMBA_CPU_FEATURES=) on the Zen 4 EPYC, 2 threads, the smallest of 18 profiled
# runs a layer: SSD-VGG's backbone 8.23 -> 6.78 ms, every convolution faster (0.46-0.94); ResNet-18 484 -> 369 us
# (its 7x7 stem 201 -> 138).
ENABLED = AVX2
MR, NR = (12, 32) if AVX512 else (6, 16)
# Depth per block: a [KC, NR] panel of B (48 KiB with NR = 32) stays in L2 beside MR rows of A.
KC = 384
# Products this shallow or shallower (a 1x1 convolution of few channels) write C's tiles along its rows, a
# row block at a time, not down its columns panel by panel: a tile's few multiply-adds cannot hide its 12
# row stores, which down a column of a C whose rows are 4 KiB apart all land in the same L1 sets.  Measured
# (AVX-512 EPYC, one thread): [48, 8] x [8, 1024] 17.1 -> 5.0 us, [48, 16] x [16, 1024] 11.4 -> 8.4; level at
# depth 32, slower at [64, 24] x [24, 1024] (15.2 -> 16.4).
SHALLOW_K = 16


def _tile_kernel(mr: int, nr: int, accumulate: bool, offsets: bool = False, masked: bool = False):
    """C[0:mr, 0:nr] (=, or += with `accumulate`) A[0:mr, 0:k] @ B[0:k, 0:nr] with A, B, C given as
    addresses of float32 data and their row strides in elements (B's rows hold nr contiguous values).
    With `offsets`, `ldb` is instead the address of int64 element offsets, B's row kk at b + offsets[kk]:
    a convolution's taps read straight from its padded input (an implicit GEMM, no unfold).  With `masked`
    the kernel takes a last argument `cols` (< nr): only B's and C's first `cols` columns are read and
    written (masked vector loads and stores: a product's last columns, no packing)."""

    def codegen(context, builder, signature, args):  # pragma: no cover - compiled
        a_at, lda_, b_at, ldb_, c_at, ldc_, depth = args[:7]
        f32 = ir.FloatType()
        vt = ir.VectorType(f32, nr)
        fptr = f32.as_pointer()
        i32 = ir.IntType(32)
        fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [vt, vt, vt]),
                                             f"llvm.fma.v{nr}f32")
        if masked:
            mask = lane_mask(builder, args[7], nr)
            load_v, store_v = masked_ops(builder, vt)
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
            b_row = builder.bitcast(builder.gep(b_p, [row]), vt.as_pointer())
            bv = builder.call(load_v, [b_row, ir.Constant(i32, 4), mask, ir.Constant(vt, [0.0] * nr)]) \
                if masked else builder.load(b_row, align=4)
            for i in range(mr):
                av = builder.load(builder.gep(rows[i], [kk]))
                bc = builder.shuffle_vector(builder.insert_element(undef, av, ir.Constant(i32, 0)), undef,
                                            splat)
                builder.store(builder.call(fma, [bc, bv, builder.load(accs[i])]), accs[i])
        for i in range(mr):
            cp = builder.bitcast(builder.gep(c_p, [builder.mul(ir.Constant(ldc_.type, i), ldc_)]),
                                 vt.as_pointer())
            v = builder.load(accs[i])
            if masked:
                if accumulate:
                    v = builder.fadd(builder.call(load_v, [cp, ir.Constant(i32, 4), mask,
                                                           ir.Constant(vt, [0.0] * nr)]), v)
                builder.call(store_v, [v, cp, ir.Constant(i32, 4), mask])
                continue
            if accumulate:
                v = builder.fadd(builder.load(cp, align=4), v)
            builder.store(v, cp, align=4)
        return context.get_dummy_value()

    if masked:
        @intrinsic
        def tile_masked(typingctx, a, lda, b, ldb, c, ldc, k, cols):  # pragma: no cover - compiled
            return types.void(*([types.intp] * 8)), codegen
        return tile_masked

    @intrinsic
    def tile(typingctx, a, lda, b, ldb, c, ldc, k):  # pragma: no cover - compiled
        return types.void(*([types.intp] * 7)), codegen

    return tile


# Half-width panels (16 columns with AVX-512, 8 with AVX2) have kernels of their own: an attention head's
# 16 values, a 4x4 map's 16 pixels; a narrower rest takes masked ones of that width.
NH = NR // 2


def _make_panel_dispatch():
    """_panel(with_offs, width, rows, first, a, lda, b, ldb, c, ldc, k): the tile kernel for B's rows in place
    (or by offset, `with_offs`), a panel `width` columns wide (NR, NH, or fewer: masked) and `rows` rows (1..MR:
    the last rows of a product take the one for their count, no padding), by an if-chain Numba compiles (a
    tuple of intrinsics cannot be indexed at run time)."""
    lines = ["def _panel(with_offs, width, rows, first, a, lda, b, ldb, c, ldc, k):"]
    scope = {"NR": NR, "NH": NH}
    for offsets in (True, False):
        lines.append(f"    {'if with_offs' if offsets else 'else'}:")
        for w_test, width, masked in (("width == NR", NR, False), ("width == NH", NH, False), ("True", NH, True)):
            lines.append(f"        {'if' if width == NR else 'elif'} {w_test}:")
            call = "(a, lda, b, ldb, c, ldc, k, width)" if masked else "(a, lda, b, ldb, c, ldc, k)"
            for r in range(1, MR + 1):
                tag = f"{'o' if offsets else 'p'}{width}{'m' if masked else ''}_{r}"
                scope[f"_S{tag}"] = _tile_kernel(r, width, False, offsets, masked)
                scope[f"_A{tag}"] = _tile_kernel(r, width, True, offsets, masked)
                lines.append(f"            {'if' if r == 1 else 'elif'} rows == {r}:")
                lines.append(f"                if first:\n                    _S{tag}{call}")
                lines.append(f"                else:\n                    _A{tag}{call}")
    exec("\n".join(lines), scope)  # noqa: S102 - generated from the constants above only
    # inlined into gemm (cached with it): a function made by exec has no file for Numba's cache
    return njit(nogil=True, inline="always")(scope["_panel"])


_panel = _make_panel_dispatch()


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
    # the rows in ceil(m / MR) blocks of (nearly) equal height: 64 rows as 11+11+11+11+10+10, not
    # 5 x 12 + 4 (a 4-row tile costs about what a full one does)
    blocks = -(-m // MR)
    if k <= SHALLOW_K:  # one depth block; C's tiles row block by row block (below)
        for blk in range(blocks):
            i0 = blk * m // blocks
            jb = j0
            while jb < j1:
                left = j1 - jb
                width = NR if left >= NR else (NH if left >= NH else left)
                _panel(with_offs, width, (blk + 1) * m // blocks - i0, True, a + 4 * i0 * lda, lda,
                       b + 4 * jb, ldb, c + 4 * (i0 * ldc + jb), ldc, k)
                jb += width
        return
    jb = j0
    while jb < j1:
        left = j1 - jb
        width = NR if left >= NR else (NH if left >= NH else left)
        for k0 in range(0, k, kc):
            depth = min(kc, k - k0)
            # B's rows from k0 on: read in place (packing them measured slower)
            if with_offs:
                bp, bld = b + 4 * jb, ldb + 8 * k0
            else:
                bp, bld = b + 4 * (k0 * ldb + jb), ldb
            for blk in range(blocks):
                i0 = blk * m // blocks
                _panel(with_offs, width, (blk + 1) * m // blocks - i0, k0 == 0, a + 4 * (i0 * lda + k0), lda, bp,
                       bld, c + 4 * (i0 * ldc + jb), ldc, depth)
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


@njit(nogil=True, cache=True, inline="always")
def _zero(address, count):  # pragma: no cover - compiled
    v = _view(address, count)
    for j in range(count):
        v[j] = 0.0
