"""Explicit-vector code for short rows (a few to a few dozen values): LLVM vector IR through Numba intrinsics,
a row's last values by masked loads and stores.

Why: on rows this short Numba's loops pay more for their set-up (run-time alias checks, a scalar remainder
loop, a vector loop entered once) than for the arithmetic, and a strided read does not vectorize at all -- a
3x3 / 2 depthwise convolution of [1, 48, 32, 32] ran at scalar speed (28 us) on an AVX-512 EPYC.  The vectors
are 16 float32 values (one zmm; LLVM splits them into ymm halves on an AVX2-only CPU)."""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils
from numba.extending import intrinsic

from .jit import types

VW = 16  # float32 values a vector


def masked_ops(builder: ir.IRBuilder, vt: ir.VectorType) -> tuple[ir.Function, ir.Function]:
    """llvm.masked.load / llvm.masked.store for float32 vectors of type vt (no lane outside the mask is
    touched, so a row's end may be the end of its buffer).  Named with the typed-pointer suffix: LLVM releases
    with opaque pointers re-mangle it when they read the module."""
    ptr = vt.as_pointer()
    mask_t = ir.VectorType(ir.IntType(1), vt.count)
    suffix = f"v{vt.count}f32.p0v{vt.count}f32"
    load = cgutils.get_or_insert_function(builder.module, ir.FunctionType(vt, [ptr, ir.IntType(32), mask_t, vt]),
                                          f"llvm.masked.load.{suffix}")
    store = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [vt, ptr, ir.IntType(32), mask_t]),
        f"llvm.masked.store.{suffix}")
    return load, store


def lane_mask(builder: ir.IRBuilder, count: ir.Value, lanes: int) -> ir.Value:
    """<lanes x i1> with lane j set where j < count."""
    i32 = ir.IntType(32)
    idx = ir.Constant(ir.VectorType(count.type, lanes), list(range(lanes)))
    splat = builder.insert_element(ir.Constant(idx.type, ir.Undefined), count, ir.Constant(i32, 0))
    splat = builder.shuffle_vector(splat, ir.Constant(idx.type, ir.Undefined),
                                   ir.Constant(ir.VectorType(i32, lanes), [0] * lanes))
    return builder.icmp_signed("<", idx, splat)


def _taps_rows_kernel(stride: int, rows: int, op: str = "mac"):
    """taps_rows for column stride `stride`, `rows` output rows a call and `op` "mac" (a weighted sum) or
    "max"."""

    @intrinsic
    def taps_rows(typingctx, src, src_ld, offs, weights, taps, dst, dst_ld, cols):  # pragma: no cover - compiled
        """For r < rows and j < cols <= VW, with X_t = src[r * src_ld + offs[t] + stride j]: "mac" dst[r * dst_ld +
        j] = 0 + w[0] X_0 + w[1] X_1 + ... over `taps` terms in order, each a multiply then an add (the rounding
        of the direct kernels' loops); "max" dst = X_0, then X_t where X_t > dst, t = 1, 2, ... (weights unused;
        the scalar max pool's rule: the first maximum wins, NaN only as the first tap).  float32 data at
        addresses src, weights, dst; int64 offsets (in values) at offs; row strides src_ld, dst_ld in values."""
        sig = types.void(*([types.intp] * 8))

        def codegen(context, builder, signature, args):
            s_at, s_ld, o_at, w_at, n_taps, d_at, d_ld, n_cols = args
            f32, i32 = ir.FloatType(), ir.IntType(32)
            lanes = VW * stride
            wide, vt = ir.VectorType(f32, lanes), ir.VectorType(f32, VW)
            load_wide, _ = masked_ops(builder, wide)
            _, store = masked_ops(builder, vt)
            # the lanes read: every stride-th of the first stride * cols
            mask = lane_mask(builder, builder.mul(n_cols, ir.Constant(n_cols.type, stride)), lanes)
            if stride > 1:
                mask = builder.and_(mask, ir.Constant(ir.VectorType(ir.IntType(1), lanes),
                                                      [i % stride == 0 for i in range(lanes)]))
            zero = ir.Constant(wide, [0.0] * lanes)
            four = ir.Constant(i32, 4)
            s_p = builder.inttoptr(s_at, f32.as_pointer())
            o_p = builder.inttoptr(o_at, ir.IntType(64).as_pointer())
            w_p = builder.inttoptr(w_at, f32.as_pointer())
            undef = ir.Constant(vt, ir.Undefined)
            splat0 = ir.Constant(ir.VectorType(i32, VW), [0] * VW)
            pick = ir.Constant(ir.VectorType(i32, VW), list(range(0, lanes, stride)))

            def tap(off, r):
                at = builder.gep(s_p, [builder.add(off, builder.mul(s_ld, ir.Constant(s_ld.type, r)))])
                x = builder.call(load_wide, [builder.bitcast(at, wide.as_pointer()), four, mask, zero])
                return builder.shuffle_vector(x, x, pick) if stride > 1 else x

            # one accumulator a row: `rows` independent chains (one chain is latency-bound)
            if op == "max":
                first = builder.load(o_p)
                accs = [cgutils.alloca_once_value(builder, tap(first, r)) for r in range(rows)]
            else:
                accs = [cgutils.alloca_once_value(builder, ir.Constant(vt, [0.0] * VW)) for _ in range(rows)]
            with cgutils.for_range(builder, n_taps, start=ir.Constant(n_taps.type, 1 if op == "max" else 0)) as loop:
                off = builder.load(builder.gep(o_p, [loop.index]))
                if op != "max":
                    weight = builder.load(builder.gep(w_p, [loop.index]))
                    wv = builder.shuffle_vector(builder.insert_element(undef, weight, ir.Constant(i32, 0)), undef,
                                                splat0)
                for r in range(rows):
                    x = tap(off, r)
                    best = builder.load(accs[r])
                    builder.store(builder.select(builder.fcmp_ordered(">", x, best), x, best) if op == "max"
                                  else builder.fadd(best, builder.fmul(wv, x)), accs[r])
            d_p = builder.inttoptr(d_at, f32.as_pointer())
            out_mask = lane_mask(builder, n_cols, VW)
            for r in range(rows):
                at = builder.gep(d_p, [builder.mul(d_ld, ir.Constant(d_ld.type, r))])
                builder.call(store, [builder.load(accs[r]), builder.bitcast(at, vt.as_pointer()), four, out_mask])
            return context.get_dummy_value()

        return sig, codegen

    return taps_rows


TAP_ROWS = 4  # output rows of taps_rows_2x4 / taps_rows_1x4
taps_rows_1x1 = _taps_rows_kernel(1, 1)
taps_rows_1x4 = _taps_rows_kernel(1, TAP_ROWS)
taps_rows_1x8 = _taps_rows_kernel(1, 8)
taps_rows_2x8 = _taps_rows_kernel(2, 8)
taps_rows_2x1 = _taps_rows_kernel(2, 1)
taps_rows_2x4 = _taps_rows_kernel(2, TAP_ROWS)
max_rows_2x1 = _taps_rows_kernel(2, 1, "max")  # (kernels/pooling.py's 3x3 / 2 max pool)
max_rows_2x4 = _taps_rows_kernel(2, TAP_ROWS, "max")


def _max3x3s2_kernel(left_pad: bool):
    """max3x3s2_rows4, or with `left_pad` its form for a block whose first output's window starts one column
    left of the input (the pool's left padding): that tap is not read, and the window's first tap inside the input
    takes its place (the row-major scan's first tap then, so the same value)."""

    @intrinsic
    def max3x3s2_rows4(typingctx, src, src_ld, dst, dst_ld, cols):  # pragma: no cover - compiled
        """A 3x3 / 2 max pool's four output rows of `cols` <= VW values, every tap inside the input (but the
        first column's left taps with left_pad): dst[i * dst_ld + j] = the first maximum of the window's taps in
        row-major order (NaN only as the first tap), the window's top-left tap at src[2 i src_ld + 2 j].
        max_rows_2x4's values by fewer operations: each of the nine input rows is read once (its 2 cols + 1
        values, two masked loads) and its three taps are shuffles of that read; its row maximum is shared by the
        two output rows whose windows hold it.  An output is first-max(h, g1, g2): h = first-max(tap 0, tap 1,
        tap 2) of its window's first row, g = first-max(-inf, tap 0, tap 1, tap 2) of the others (a NaN there
        never wins, as in the scan; -inf when the row is all NaN).  The same value as the row-major scan: both
        give the first tap in that order equal to the window's maximum, or NaN when the first tap is NaN.
        float32 at addresses src, dst; row strides in values.  A constant `cols` folds the masks."""
        sig = types.void(*([types.intp] * 5))

        def codegen(context, builder, signature, args):
            s_at, s_ld, d_at, d_ld, n_cols = args
            f32, i1 = ir.FloatType(), ir.IntType(1)
            lanes = 2 * VW
            wide, vt = ir.VectorType(f32, lanes), ir.VectorType(f32, VW)
            load_wide, _ = masked_ops(builder, wide)
            _, store = masked_ops(builder, vt)
            four = ir.Constant(ir.IntType(32), 4)
            span = builder.add(builder.mul(n_cols, ir.Constant(n_cols.type, 2)), ir.Constant(n_cols.type, 1))
            head_mask = lane_mask(builder, span, lanes)  # the row's first 2 cols + 1 values, at most 32 of them
            if left_pad:  # the padding column is not read
                skip = ir.Constant(ir.VectorType(i1, lanes), [i > 0 for i in range(lanes)])
                head_mask = builder.and_(head_mask, skip)
            tail_mask = lane_mask(builder, builder.sub(span, ir.Constant(n_cols.type, lanes)), lanes)  # the 33rd
            zero = ir.Constant(wide, [0.0] * lanes)
            s_p = builder.inttoptr(s_at, f32.as_pointer())
            picks = [ir.Constant(ir.VectorType(ir.IntType(32), VW), list(range(c, c + lanes, 2))) for c in range(3)]
            first_lane = ir.Constant(ir.VectorType(i1, VW), [j == 0 for j in range(VW)])

            def first_max(best, x):
                return builder.select(builder.fcmp_ordered(">", x, best), x, best)

            lowest = ir.Constant(vt, [float("-inf")] * VW)

            def row_max(r):  # (h, g) of input row r; h only for the rows that start a window (even r)
                at = builder.gep(s_p, [builder.mul(s_ld, ir.Constant(s_ld.type, r))])
                head = builder.call(load_wide, [builder.bitcast(at, wide.as_pointer()), four, head_mask, zero])
                past = builder.gep(at, [ir.Constant(ir.IntType(64), lanes)])
                tail = builder.call(load_wide, [builder.bitcast(past, wide.as_pointer()), four, tail_mask, zero])
                taps = [builder.shuffle_vector(head, tail, p) for p in picks]
                if left_pad:
                    taps[0] = builder.select(first_lane, taps[1], taps[0])
                h = first_max(first_max(taps[0], taps[1]), taps[2]) if r % 2 == 0 else None
                g = first_max(first_max(first_max(lowest, taps[0]), taps[1]), taps[2]) if r > 0 else None
                return h, g

            rows = [row_max(r) for r in range(2 * TAP_ROWS + 1)]
            d_p = builder.inttoptr(d_at, f32.as_pointer())
            out_mask = lane_mask(builder, n_cols, VW)
            for i in range(TAP_ROWS):
                best = first_max(first_max(rows[2 * i][0], rows[2 * i + 1][1]), rows[2 * i + 2][1])
                at = builder.gep(d_p, [builder.mul(d_ld, ir.Constant(d_ld.type, i))])
                builder.call(store, [best, builder.bitcast(at, vt.as_pointer()), four, out_mask])
            return context.get_dummy_value()

        return sig, codegen

    return max3x3s2_rows4


max3x3s2_rows4 = _max3x3s2_kernel(False)  # (kernels/pooling.py's 3x3 / 2 max pool)
max3x3s2_rows4_left = _max3x3s2_kernel(True)
