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
