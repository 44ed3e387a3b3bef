"""MatMul-1 (opset1+).

A [..., M, K] x B [..., K, N] -> [..., M, N] with numpy-style broadcasting of the batch dims.
`transpose_a` / `transpose_b` swap the last two dims of a rank >= 2 operand and are ignored for
a 1-D one; a 1-D A is read as [1, K] and a 1-D B as [K, 1], and the added dim is removed from the
result.  Float products go through numpy's BLAS (sgemm/dgemm; f16 and bf16 in float32, rounded
once); integer products use numpy's integer matmul in the element type (wrapping, as C++ does).

A constant B (a Linear layer's weight, often stored f16 behind a decompression Convert that folds
at load time) is prepared once when the kernel is built: f16/bf16 converted to float32 in the [K, N]
layout; an f32/f64 weight stored transposed ([N, K] with transpose_b, how exports write linear layers)
copied once into the [K, N] layout that irnorm's GEMM kernels and OpenBLAS read fastest, and the model
then keeps the weight only in that copy (``NodeContext.keep_constant_as``: the copy's transposed view
takes the constant's place, so the [N, K] original is freed where nothing else holds it).  Except a
large one (from 512K elements) by an A of 5-160 rows, where irnorm's GEMM kernels run (AVX2 + FMA): its
product reads the exported [N, K] rows in place as out^T = W @ A^T (kernels/linear.py's
weight_rows_linear: the weight streams from memory every call at these sizes, and its rows stream
where the [K, N] layout's do not) -- no copy; so does a dynamic A's product of 5-160 rows by a weight
kept as it is (above DYNAMIC_LAYOUT_MAX, below).  A product
of a few rows known at load time (NARROW_ROWS: a classifier head) keeps B as it is: its dot products
read B's [N, K] rows.  So does a weight above DYNAMIC_LAYOUT_MAX elements when A's shape is dynamic:
a few-row call (a decoder's next token) would need the [N, K] rows again, and the model would hold
the weight twice.  A 2-D B against a contiguous batched A is one GEMM over all the batch rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ir.attrs import AttrSchema, optional, parse_bool
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, INT_TYPES, cast, compute_dtype
from .base import NodeContext, Op, TensorInfo, broadcast_shape, fail, fmt_shape, register


def _matrix_shape(shape: tuple[int, ...], transpose: bool, first: bool) -> tuple[int, ...]:
    """The operand as a rank >= 2 matrix stack after the 1-D rule and the transpose."""
    if len(shape) == 1:
        return (1, shape[0]) if first else (shape[0], 1)
    if transpose:
        return tuple(shape[:-2]) + (shape[-1], shape[-2])
    return tuple(shape)


def matmul_shape(a: tuple[int, ...] | None, b: tuple[int, ...] | None, ta: bool, tb: bool
                 ) -> tuple[int, ...] | None:
    """MatMul's output shape (-1 dims tolerated); IRN032 when the operands do not fit."""
    for what, s in (("A (input 0)", a), ("B (input 1)", b)):
        if s is not None and len(s) == 0:
            raise fail("IRN032", f"{what} must be at least 1-D, got a scalar")
    if a is None or b is None:
        return None
    ma, mb = _matrix_shape(a, ta, True), _matrix_shape(b, tb, False)
    ka, kb = ma[-1], mb[-2]
    if ka != -1 and kb != -1 and ka != kb:
        raise fail("IRN032", f"MatMul inner dims differ: A {fmt_shape(a)}{' transposed' if ta and len(a) > 1 else ''} "
                             f"has K={ka}, B {fmt_shape(b)}{' transposed' if tb and len(b) > 1 else ''} has K={kb}")
    batch = broadcast_shape(ma[:-2], mb[:-2], "numpy", ("A's batch dims", "B's batch dims"))
    out = tuple(batch)
    if len(a) > 1:
        out += (ma[-2],)
    if len(b) > 1:
        out += (mb[-1],)
    return out


# Elements of a transposed constant weight laid out as [K, N] when A's shape is not known at load time (4 MiB f32)
DYNAMIC_LAYOUT_MAX = 1 << 20

# Multiply-adds below which a product by a constant B stays one np.dot call: going through blas.product to
# irnorm's GEMM kernels costs ~1 us more in Python than the product saves there.
MICRO_MIN = 1 << 16


@register
class MatMul(Op):
    uses_blas = True
    type = "MatMul"
    version = 1
    opsets = (1, None)
    schema = AttrSchema([
        optional("transpose_a", parse_bool, False, doc="swap A's last two dims (ignored for 1-D A)"),
        optional("transpose_b", parse_bool, False, doc="swap B's last two dims (ignored for 1-D B)"),
    ])
    inputs = (2, 2)
    doc = ("A [..., M, K] x B [..., K, N], batch dims broadcast (numpy rule), 1-D operands as in the spec; "
           "floats through numpy's BLAS (f16/bf16 in float32; with AVX2 + FMA float32 products by a constant B of at "
           "least 64K multiply-adds by irnorm's register-blocked GEMM kernels), integers in their own type; a "
           "constant B is "
           "laid out once at load time, except a large transposed weight by an A of 5-160 rows, read in place "
           "(AVX2 + FMA); a product of at most 4 rows by a constant B (a classifier head, one "
           "token) as dot products in Numba against B's [N, K] rows, its columns split over the threads when large.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        a, b = ctx.inputs
        for i, info in enumerate((a, b)):
            if info.dtype not in FLOAT_TYPES + INT_TYPES:
                raise fail("IRN033", f"input {i} must be a numeric tensor, got {info.dtype}")
        if a.dtype != b.dtype:
            raise fail("IRN033", f"B (input 1) has element type {b.dtype}, expected {a.dtype} (same as A)")
        shape = matmul_shape(a.shape, b.shape, ctx.attrs["transpose_a"], ctx.attrs["transpose_b"])
        return [TensorInfo(shape, a.dtype)]

    def build(self, ctx: NodeContext, epilogue: Any = None):
        """The kernel on [A, B].  With an `epilogue` (kernels.activation.Epilogue: a bias along the last axis,
        a residual, an activation; f32/f64 data), the kernel of a fused step (the runtime's
        matmul_bias_activation rule) that applies it to the product: in the same call where the product is
        a small one by a constant B (kernels/linear.py), else as a pass of its own.  With a residual the
        kernel is on [A, B, R]: (A @ B + bias) + R, then the activation."""
        from ..kernels import blas  # lazy: validate and --help never import the kernels
        from ..kernels.linear import NARROW_ROWS, linear_plan, weight_rows_fits, weight_rows_plan

        ta, tb = ctx.attrs["transpose_a"], ctx.attrs["transpose_b"]
        dtype = ELEMENT_TYPES[ctx.inputs[0].dtype]
        is_float = ctx.inputs[0].dtype in FLOAT_TYPES
        work = compute_dtype(dtype) if is_float else dtype

        def prep_b(b: np.ndarray) -> np.ndarray:
            """B as [..., K, N] in the compute type.  f32/f64 stay where they are (a transposed view is
            a BLAS operand as it is: no copy of a large weight); f16/bf16 are converted once into the
            [K, N] layout."""
            if b.ndim == 1:
                return b.astype(work).reshape(-1, 1)
            if b.dtype == work:
                return np.swapaxes(b, -1, -2) if tb else b
            return np.ascontiguousarray(np.swapaxes(b, -1, -2) if tb else b, dtype=work)

        const_b = ctx.inputs[1].value
        b_ready = prep_b(np.asarray(const_b)) if const_b is not None else None
        a_shape = ctx.inputs[0].shape
        static_a = a_shape is not None and len(a_shape) >= 2 and all(d >= 0 for d in a_shape)
        narrow = static_a and math.prod(a_shape[:-1]) <= NARROW_ROWS
        # A large exported weight [N, K] that a static A's product reads in place (kernels/linear.py's
        # weight_rows_linear): no layout, no copy
        in_place = (static_a and b_ready is not None and b_ready.ndim == 2 and b_ready.T.flags.c_contiguous
                    and weight_rows_fits(math.prod(a_shape[:-1]), b_ready.shape[1], b_ready.shape[0], b_ready.dtype))
        # An A of dynamic shape may come with a few rows (a decoder's one token), whose products read B's [N, K]
        # rows: a large weight laid out would then be held twice, so it stays as it is (module doc)
        if (b_ready is not None and b_ready.ndim == 2 and not b_ready.flags.c_contiguous and not narrow
                and not in_place and (static_a or b_ready.size <= DYNAMIC_LAYOUT_MAX)):
            # transpose_b weights ([N, K], as exports write linear layers) laid out once as [K, N]: irnorm's GEMM
            # kernels read B's rows in place (a transposed B went to OpenBLAS: BERT-base's [128, 768] x [768, 3072]
            # 2x slower), and OpenBLAS packs a row-major B faster too ([65, 64] x [64, 64]: 8.3 -> 5.4 us)
            b_ready = np.ascontiguousarray(b_ready)
            same_type = np.asarray(const_b).dtype == b_ready.dtype
            const_b = np.swapaxes(b_ready, -1, -2) if tb else b_ready  # B's values, in the copy's memory
            if same_type:  # the model keeps B in this copy alone (module doc)
                ctx.keep_constant_as(1, const_b)

        weight_rows: list[np.ndarray] = []

        def b_rows() -> np.ndarray:
            """B's transpose [N, K], C-contiguous, for products of a few rows (kernels/linear.py's
            narrow_linear): an exported weight [N, K] (transpose_b) as it is, another B copied once."""
            if not weight_rows:
                weight_rows.append(np.ascontiguousarray(np.swapaxes(np.asarray(const_b), -1, -2) if not tb
                                                        else const_b, dtype=work))
            return weight_rows[0]

        # constant B [K, N], A [..., M, K] in the compute type: (A's shape) -> (result shape, A's rows
        # shape, whether the product may get more BLAS threads), for the one-GEMM path below
        rows_plans: dict[tuple, tuple] = {}
        small_plans: dict[tuple, bool] = {}  # (A's shape, B's shape) -> one np.matmul does it
        rows_ok = b_ready is not None and np.ndim(const_b) == 2 and dtype == work and not ta

        residual = epilogue is not None and epilogue.residual
        finish = _epilogue_pass(epilogue)

        def run(ins):
            y, done = product(ins)
            if done:
                return [y]
            return [finish(y, ins[2]) if residual else finish(y)]

        def fits(res: np.ndarray, shape: tuple[int, ...]) -> bool:
            """The residual is what the one-call path reads: the product's shape and type, C-contiguous."""
            return res.shape == shape and res.dtype == dtype and res.flags.c_contiguous

        def product(ins):
            a, b = ins[0], ins[1]
            if rows_ok and a.ndim >= 2 and a.dtype == dtype and a.flags.c_contiguous:
                plan = rows_plans.get(a.shape)
                if plan is None:
                    rows = math.prod(a.shape[:-1])
                    # the exported weight [N, K] read in place where it is held so (a large one: above)
                    one = weight_rows_plan(rows, b_ready.T, epilogue) if b_ready.T.flags.c_contiguous else None
                    blocks = None if one is not None else blas.column_blocks(rows, b_ready.shape[-1], a.shape[-1])
                    if one is None and blocks is None:
                        one = linear_plan(rows, b_ready, epilogue, b_rows)
                    plan = (a.shape[:-1] + (b_ready.shape[-1],), (rows, a.shape[-1]), (rows, b_ready.shape[-1]),
                            blocks, one)
                    if len(rows_plans) < 64:
                        rows_plans[a.shape] = plan
                y_shape, a_rows, y_rows, blocks, one_call = plan
                y = np.empty(y_shape, dtype)
                if one_call is not None:  # the product and the epilogue in one call
                    if not residual:
                        one_call(a.reshape(a_rows), y.reshape(y_rows))
                        return y, True
                    if fits(ins[2], y_shape):
                        one_call(a.reshape(a_rows), y.reshape(y_rows), ins[2].reshape(y_rows))
                        return y, True
                if blocks is None and y.size * a.shape[-1] < MICRO_MIN:
                    # np.dot: the same GEMM as np.matmul on 2-D operands, without the ufunc machinery (~0.4 us)
                    np.dot(a.reshape(a_rows), b_ready, out=y.reshape(y_rows))
                else:  # one call (float32: irnorm's GEMM kernels), or column blocks on several threads
                    blas.product(a.reshape(a_rows), b_ready, y.reshape(y_rows), blocks)
                return y, False
            if a.dtype == dtype and b.dtype == dtype and dtype == work and a.ndim > 1 and b.ndim > 1:
                # batched products of computed operands (attention's Q @ K^T and P @ V): whether the general
                # path below comes down to one np.matmul is decided once per shape pair
                key = (a.shape, b.shape)
                small = small_plans.get(key)
                if small is None:
                    b_shape = b.shape if b_ready is None else b_ready.shape
                    small = _one_matmul(a.shape, b_shape, ta, tb and b_ready is None)
                    # 2: one call of irnorm's GEMM kernels when the operands come C-contiguous (decided here
                    # once: the checks cost as much as a tiny product)
                    if small and not ta and not (tb and b_ready is None) and blas.batched_fits(a.shape, b_shape,
                                                                                                dtype):
                        small = 2
                    if len(small_plans) < 64:
                        small_plans[key] = small
                if small:  # what the general path does then; the result is new and C-contiguous
                    am = np.swapaxes(a, -1, -2) if ta else a
                    bm = b_ready if b_ready is not None else (np.swapaxes(b, -1, -2) if tb else b)
                    if small == 2 and am.flags.c_contiguous and bm.flags.c_contiguous:
                        return blas.batched_micro(am, bm), False
                    return np.matmul(am, bm), False
            bm = b_ready if b_ready is not None else prep_b(b)
            a_vec, b_vec = a.ndim == 1, b.ndim == 1
            am = a.astype(work, copy=False)
            if a_vec:
                am = am.reshape(1, -1)
            elif ta:
                am = np.swapaxes(am, -1, -2)
            y_type = np.result_type(am.dtype, bm.dtype)
            if bm.ndim == 2 and am.ndim > 2 and am.flags.c_contiguous:
                # [..., M, K] x [K, N]: one GEMM over all batch rows, written into the result's own memory
                y = np.empty(am.shape[:-1] + (bm.shape[-1],), y_type)
                rows = math.prod(am.shape[:-1])
                blas.product(am.reshape(rows, am.shape[-1]), bm, y.reshape(rows, bm.shape[-1]),
                             blas.column_blocks(rows, bm.shape[-1], am.shape[-1]))
            else:
                # large products are cut into column blocks on several threads (kernels/blas.py)
                blocks = blas.column_blocks(am.shape[-2], bm.shape[-1], am.shape[-1],
                                            max(math.prod(am.shape[:-2]), math.prod(bm.shape[:-2])))
                if blocks is None:
                    y = np.matmul(am, bm)
                else:
                    y = np.empty(np.broadcast_shapes(am.shape[:-2], bm.shape[:-2]) + (am.shape[-2], bm.shape[-1]),
                                 y_type)
                    blas.product(am, bm, y, blocks)
            if a_vec:
                y = y[..., 0, :]
            if b_vec:
                y = y[..., 0]
            if y.dtype != dtype:
                return cast(y, dtype), False
            return (y.copy() if y.base is not None or not y.flags.c_contiguous else y), False

        a_info = ctx.inputs[0]
        if rows_ok and a_info.shape is not None and len(a_info.shape) >= 2 and all(d >= 0 for d in a_info.shape):
            # A static A by the constant B: the plan's straight-line runner calls this with A alone (runtime/
            # plan.py) -- the one-call product without the list, the checks and the tuple of the general
            # kernel (~1 us of a 5 us step; T5-like exports have 30 such steps)
            def static_call(a: np.ndarray) -> np.ndarray:
                plan = rows_plans.get(a.shape) if a.flags.c_contiguous and a.dtype == dtype else None
                if plan is None or plan[4] is None:  # not planned yet, or not the one-call path: as run() does
                    return run([a, const_b])[0]
                y = np.empty(plan[0], dtype)
                plan[4](a.reshape(plan[1]), y.reshape(plan[2]))
                return y

            def static_call_residual(a: np.ndarray, res: np.ndarray) -> np.ndarray:
                plan = rows_plans.get(a.shape) if a.flags.c_contiguous and a.dtype == dtype else None
                if plan is None or plan[4] is None or not fits(res, plan[0]):
                    return run([a, const_b, res])[0]
                y = np.empty(plan[0], dtype)
                plan[4](a.reshape(plan[1]), y.reshape(plan[2]), res.reshape(plan[2]))
                return y
            run.static_call = static_call_residual if residual else static_call
        return run


def _epilogue_pass(epilogue: Any) -> Any:
    """MatMul.build's last step for a product its epilogue did not run in: the product as it is (no
    epilogue), or with the epilogue applied in place as a pass of its own (bias_activation_last; a small
    product's bias with no activation as numpy's same-shape add of the bias laid out once at its shape)."""
    if epilogue is None:
        return lambda y: y
    from ..kernels.activation import bias_activation_last

    bias, code, p0, p1 = epilogue.bias, epilogue.code, epilogue.p0, epilogue.p1
    if epilogue.residual:  # bias, then the residual, then the activation: the layers' order
        add_bias = _epilogue_pass(epilogue._replace(code=-1, residual=False))

        def finish_residual(y: np.ndarray, res: np.ndarray) -> np.ndarray:
            y = add_bias(y)
            if res.shape == y.shape and res.dtype == y.dtype:
                np.add(y, res, out=y)
            else:  # a dynamic model's residual that broadcasts: the Add layer's numpy broadcasting
                y = np.add(y, res)
            return y if code < 0 else bias_activation_last(y, None, code, p0, p1)
        return finish_residual
    tiles: dict[tuple[int, ...], np.ndarray] = {}

    def finish(y: np.ndarray) -> np.ndarray:
        if code < 0 and bias is not None and y.size <= _TILE_MAX:
            # the bias laid out at the product's shape once: numpy's same-shape loop (~0.4 us) instead of a
            # broadcast (~1 us); the same additions
            tile = tiles.get(y.shape)
            if tile is None:
                tile = np.ascontiguousarray(np.broadcast_to(bias, y.shape))
                if len(tiles) < 16:
                    tiles[y.shape] = tile
            np.add(y, tile, out=y)
            return y
        return bias_activation_last(y, bias, code, p0, p1)
    return finish


_TILE_MAX = 4096  # elements of a product whose bias is laid out at its shape (16 KiB in f32)


def _one_matmul(a_shape: tuple[int, ...], b_shape: tuple[int, ...], ta: bool, tb: bool) -> bool:
    """MatMul.build's general path on >= 2-D operands of the compute type comes down to one np.matmul:
    B is not a 2-D matrix for an N-D A (that goes to the one-GEMM-over-all-rows branch) and the product
    is too small to be cut into column blocks.  b_shape: B as stored (tb: its last two dims swapped)."""
    from ..kernels import blas

    if len(b_shape) == 2 and len(a_shape) > 2:
        return False
    m, k = (a_shape[-1], a_shape[-2]) if ta else (a_shape[-2], a_shape[-1])
    n = b_shape[-2] if tb else b_shape[-1]
    batch = max(math.prod(a_shape[:-2]), math.prod(b_shape[:-2]))
    return blas.column_blocks(m, n, k, batch) is None
