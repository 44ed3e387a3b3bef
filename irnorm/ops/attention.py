"""ScaledDotProductAttention-13: softmax(Q K^T * scale + mask) V over the last two dims, batch dims
broadcast (numpy rule).

Inputs: query [..., L, E], key [..., S, E], value [..., S, Ev], optional attention_mask (boolean:
true = attend, false adds -inf; or the query's float type, added; broadcast to [..., L, S]) and
optional scale (a scalar; default 1 / sqrt(E)).  ``causal=true`` ignores the mask and lets query i
attend to keys 0..i only.  A row with nothing to attend to gives NaN, as the formula does.
Arithmetic in float32 (float64 for f64), all heads in one Numba call where the operands allow
(kernels/softmax.py: attention_gemm with irnorm's float32 GEMM kernels where they run; else attention_rows for
small heads and attention_gemm with a cblas GEMM per head and product), otherwise numpy's matmul around the
softmax kernel.
"""

from __future__ import annotations

import math

import numpy as np

from ..ir.attrs import AttrSchema, optional, parse_bool
from ..ir.dtypes import ELEMENT_TYPES, FLOAT_TYPES, cast, compute_dtype
from .base import Kernel, NodeContext, Op, TensorInfo, broadcast_shape, fail, fmt_shape, register, runtime_error

# Heads up to this many multiply-adds in all (batch x L x S x (E + Ev)) run in one attention_rows call
# instead of two BLAS products and the softmax between them (AVX-512 EPYC with cblas_sgemm, the whole step:
# wav2vec2's [2, 2, 19, 16] 14.5 -> 13.8 us; level at [1, 4, 32, 16] and [16, 2, 16, 16]; from ViT's [1, 4, 65,
# 16], 0.5M, BLAS wins).  Where irnorm's float32 GEMM kernels run, attention_gemm takes float32 heads of every
# size with them: 0.3-0.9 us ahead of attention_rows from [1, 4, 8, 8] on, 12 us at ViT's.
ATTENTION_ROWS_MAX = 1 << 16
# Larger heads whose scores fit in this many elements a head run in one attention_gemm call (the two
# products per head as cblas_?gemm calls, the heads over the threads) where numpy's BLAS is an OpenBLAS
# irnorm drives; beyond, or with broadcasting batch dims, numpy's matmul and softmax_rows.
ATTENTION_GEMM_MAX = 1 << 20
ATTENTION_PARALLEL_MIN = 1 << 22  # multiply-adds in all from which attention_gemm shares the heads out
# attention_gemm's BLAS arguments that select irnorm's own float32 GEMM kernels (kernels/microgemm.py, where they
# run) instead of cblas_sgemm, which packs both operands of products this small on every call: ViT's 4 heads of
# [65, 16] with 65 keys
IRNORM_GEMM = (0, np.int64(0))


def _unit_rows(*arrays: np.ndarray) -> bool:
    """Each array's rows (last dim) have unit stride: BLAS takes them with a leading dimension."""
    return all(a.shape[-1] == 1 or a.strides[-1] == a.itemsize for a in arrays)


def _batch(shape: tuple[int, ...] | None) -> tuple[int, ...] | None:
    return None if shape is None else tuple(shape[:-2])


@register
class ScaledDotProductAttention(Op):
    uses_blas = True
    type = "ScaledDotProductAttention"
    version = 13
    opsets = (13, None)
    inputs = (3, 5)
    schema = AttrSchema([optional("causal", parse_bool, False, doc="attend to keys up to the query's position")])
    doc = ("softmax(Q K^T * scale + mask) V; boolean (true = attend) or float masks; default scale 1/sqrt(E); "
           "causal ignores the mask; all heads in one Numba call (float32 on irnorm's GEMM kernels where they "
           "run; else small heads in one kernel, larger ones with a BLAS GEMM per head and product).")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        q, k, v = ctx.inputs[:3]
        t = q.dtype
        if t not in FLOAT_TYPES:
            raise fail("IRN033", f"query must be a floating-point tensor, got {t}")
        for i, what in ((1, "key"), (2, "value")):
            if ctx.inputs[i].dtype != t:
                raise fail("IRN033", f"{what} has element type {ctx.inputs[i].dtype}, expected {t} (as the query)")
        for info, what in ((q, "query"), (k, "key"), (v, "value")):
            if info.shape is not None and len(info.shape) < 2:
                raise fail("IRN032", f"{what} must have rank >= 2, got {fmt_shape(info.shape)}")
        if len(ctx.inputs) > 3 and ctx.inputs[3].dtype not in ("boolean", t):
            raise fail("IRN033", f"attention_mask must be boolean or {t}, got {ctx.inputs[3].dtype}")
        if len(ctx.inputs) > 4:
            sc = ctx.inputs[4]
            if sc.dtype != t:
                raise fail("IRN033", f"scale has element type {sc.dtype}, expected {t}")
            if sc.shape is not None and any(d not in (1, -1) for d in sc.shape):
                raise fail("IRN032", f"scale must hold one value, got {fmt_shape(sc.shape)}")
        if q.shape is None or k.shape is None or v.shape is None:
            return [TensorInfo(None, t)]
        e_q, e_k = q.shape[-1], k.shape[-1]
        if e_q != -1 and e_k != -1 and e_q != e_k:
            raise fail("IRN032", f"query {fmt_shape(q.shape)} and key {fmt_shape(k.shape)} differ in the last dim")
        s_k, s_v = k.shape[-2], v.shape[-2]
        if s_k != -1 and s_v != -1 and s_k != s_v:
            raise fail("IRN032", f"key {fmt_shape(k.shape)} and value {fmt_shape(v.shape)} differ in the sequence dim")
        batch = broadcast_shape(broadcast_shape(_batch(q.shape), _batch(k.shape), "numpy", ("query", "key")),
                                _batch(v.shape), "numpy", ("query/key", "value"))
        return [TensorInfo(tuple(batch) + (q.shape[-2], v.shape[-1]), t)]

    def build(self, ctx: NodeContext) -> Kernel:
        from ..kernels import blas, microgemm
        from ..kernels.jit import entry  # lazy: validate never imports numba
        from ..kernels.softmax import attention_gemm, attention_rows, softmax_rows

        causal = bool(ctx.attrs["causal"])
        layer = ctx.layer
        causal_masks: dict = {}  # (L, S, dtype) -> the additive causal mask, built once per shape

        def causal_mask(L: int, S: int, cdt: np.dtype) -> np.ndarray:
            key = (L, S, cdt)
            m = causal_masks.get(key)
            if m is None:
                m = np.where(np.tril(np.ones((L, S), bool)), cdt.type(0), cdt.type(-np.inf))
                if len(causal_masks) < 16:
                    causal_masks[key] = m
            return m

        dt = ELEMENT_TYPES[ctx.inputs[0].dtype]
        cdt = compute_dtype(dt)
        zero, minus_inf = cdt.type(0), cdt.type(-np.inf)
        # a constant scale (what exports write) is read once
        sc = ctx.inputs[4].value if len(ctx.inputs) > 4 else None
        fixed_scale = cdt.type(float(np.asarray(sc).reshape(-1)[0])) if sc is not None else None

        fits: dict[tuple, bool] = {}  # (mask shape, scores shape) -> the mask broadcasts into the scores
        # (q, k, v, mask shapes and mask dtype) -> (the rows kernel's q, k, v, out and mask shapes), or None:
        # the BLAS path below
        small: dict[tuple, tuple | None] = {}
        no_mask = np.zeros((1, 1, 0), cdt)
        rows_calls: dict = {}  # the mask's dtype -> attention_rows' entry point (kernels/jit.py entry)

        def small_plan(q: np.ndarray, k: np.ndarray, v: np.ndarray, m: np.ndarray | None) -> tuple | None:
            """Heads small enough for attention_rows (one call, no BLAS): q, k, v with the same batch dims,
            a mask that is [..., L or 1, S] with batch dims all 1 or q's."""
            if q.ndim < 3 or not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]) or k.shape[-1] != q.shape[-1]:
                return None
            n_b, n_l, n_e, n_s, n_ev = math.prod(q.shape[:-2]), q.shape[-2], q.shape[-1], k.shape[-2], v.shape[-1]
            if 0 in (n_b, n_l, n_s):
                return None
            gemm = None
            fits_gemm = n_l * n_s <= ATTENTION_GEMM_MAX and min(n_e, n_ev) > 0 and q.ndim in (3, 4)
            if fits_gemm and cdt == np.float32 and microgemm.ENABLED:  # irnorm's GEMM kernels, any size
                gemm = IRNORM_GEMM
            elif n_b * n_l * n_s * (n_e + n_ev) > ATTENTION_ROWS_MAX:  # the heads' products by BLAS, one call
                gemm = blas.gemm_address(cdt) if fits_gemm else None
                if gemm is None:
                    return None
            m_shape = (1, 1, 0)
            if m is not None:
                if m.ndim > q.ndim:
                    return None
                ms = (1,) * (q.ndim - m.ndim) + m.shape
                if ms[-2] not in (1, n_l) or ms[-1] not in (1, n_s):
                    return None
                if all(d == 1 for d in ms[:-2]):
                    n_mb = 1
                elif ms[:-2] == q.shape[:-2]:
                    n_mb = n_b
                else:
                    return None
                m_shape = (n_mb, ms[-2], ms[-1])
            return (n_b, n_l, n_e), (n_b, n_s, n_e), (n_b, n_s, n_ev), q.shape[:-1] + (n_ev,), m_shape, gemm

        infos = ctx.inputs
        runtime = [i for i, info in enumerate(infos) if info.value is None]
        static = all(info.shape is not None and all(d >= 0 for d in info.shape) for info in infos)
        # (entry point, attention_gemm's BLAS arguments (None: attention_rows), the kernel's q / k / v shapes,
        # the output's shape and the kernel's, run()'s key, the kernel's mask shape, the constant mask as
        # passed (None: a runtime one), the flags and scale, tasks) of the first one-call run on a static model
        bound: list = []
        mask_runtime = 3 in runtime
        watch = static and dt == cdt and runtime[:3] == [0, 1, 2] and runtime[3:] in ([], [3]) and not (
            mask_runtime and causal)
        def run(ins):
            q, k, v = ins[0], ins[1], ins[2]
            if dt != cdt:
                q, k, v = q.astype(cdt), k.astype(cdt), v.astype(cdt)
            if fixed_scale is not None:
                scale = fixed_scale
            elif len(ins) > 4:
                scale = cdt.type(float(np.asarray(ins[4]).reshape(-1)[0]))
            else:
                scale = cdt.type(1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0)
            m = ins[3] if len(ins) > 3 and not causal else None
            key = (q.shape, k.shape, v.shape, None if m is None else (m.shape, m.dtype.num))
            plan = small.get(key, False)
            if plan is False:
                plan = small_plan(q, k, v, m)
                if len(small) < 64:
                    small[key] = plan
            if plan is not None and (_unit_rows(q, k, v) if plan[5] is not None else
                                     q.flags.c_contiguous and k.flags.c_contiguous and v.flags.c_contiguous):
                q3, k3, v3, out_shape, m_shape, gemm = plan
                # a task a head (Numba shares them out) only for heads worth the threads' wake-up: in a
                # network the pool is cold after the serial steps around (ViT's [4, 65, 16] heads on two
                # threads ran slower there than on one)
                gemm_tasks = q3[0] if q3[0] * q3[1] * k3[1] * (q3[2] + v3[2]) >= ATTENTION_PARALLEL_MIN else 1
                if m is None:
                    add = no_mask
                else:
                    add = np.ascontiguousarray(m if m.dtype == np.bool_ or m.dtype == cdt else m.astype(cdt))
                    add = add.reshape(m_shape)
                out = np.empty(out_shape, cdt)
                if gemm is None:
                    args = (q.reshape(q3), k.reshape(k3), v.reshape(v3), add, add.dtype == np.bool_, scale, causal,
                            out.reshape(q3[:2] + (v3[2],)))
                    rows = rows_calls.get(add.dtype)
                    if rows is None:  # every array C-contiguous and of cdt (the mask bool or cdt): one signature
                        rows = rows_calls[add.dtype] = entry(attention_rows, *args)
                else:  # [B1, B2, rows, cols] views of the heads, any strides (rows of unit stride)
                    args = (*gemm, q if q.ndim == 4 else q[None], k if k.ndim == 4 else k[None],
                            v if v.ndim == 4 else v[None], add, add.dtype == np.bool_, scale, causal,
                            out.reshape(q3[:2] + (v3[2],)), gemm_tasks)
                    rows = rows_calls.get((add.dtype, "gemm"))
                    if rows is None:  # typed with strided heads: one entry point for every layout
                        heads = np.empty((1, 1, 2, 2), cdt)[..., :1]  # not contiguous: typed layout A
                        rows = rows_calls[(add.dtype, "gemm")] = entry(attention_gemm, *args[:2], heads, heads, heads,
                                                                       *args[5:])
                rows(*args)
                if watch and not bound:  # what static_call repeats on a static model: its one shape
                    bound.append((rows, gemm, q3, k3, v3, out_shape, q3[:2] + (v3[2],), key, m_shape,
                                  None if mask_runtime else add, args[-4:-1] if gemm is None else args[-5:-2],
                                  gemm_tasks))
                return [out if out.dtype == dt else cast(out, dt)]
            try:
                scores = np.matmul(q, k.swapaxes(-1, -2))  # a fresh C-contiguous array
                scores *= scale
                L, S = scores.shape[-2:]
                if causal:
                    scores += causal_mask(L, S, cdt)
                elif len(ins) > 3:
                    m = ins[3]
                    add = np.where(m, zero, minus_inf) if m.dtype == np.bool_ else m.astype(cdt, copy=False)
                    key = (add.shape, scores.shape)
                    inside = fits.get(key)
                    if inside is None:
                        inside = np.broadcast_shapes(add.shape, scores.shape) == scores.shape
                        if len(fits) < 64:
                            fits[key] = inside
                    if inside:
                        scores += add
                    else:  # the mask's batch dims widen the scores
                        scores = scores + add
                probs = softmax_rows(scores.reshape(-1, S), False).reshape(scores.shape)
                out = np.matmul(probs, v)
            except ValueError as e:  # batch dims or a mask that do not broadcast at these shapes
                raise runtime_error(layer, f"shapes do not fit: {e}") from None
            return [out if out.dtype == dt else cast(out, dt)]

        if watch:
            consts = [info.value for info in infos[3:]]

            def static_call(q: np.ndarray, k: np.ndarray, v: np.ndarray, m: np.ndarray | None = None) -> np.ndarray:
                # the straight-line runner's form on a static model (runtime/plan.py): the runtime operands
                # q, k, v (and a runtime mask) into the first call's kernel with the first call's shapes and
                # constants -- no key, plan lookup or mask handling of run() (~1.5 us a step)
                if bound:
                    rows, gemm, q3, k3, v3, out_shape, o3, key, m_shape, add, flags, tasks = bound[0]
                    if (q.shape == key[0] and k.shape == key[1] and v.shape == key[2] and q.flags.c_contiguous
                            and k.flags.c_contiguous and v.flags.c_contiguous
                            and (m is None or ((m.shape, m.dtype.num) == key[3] and m.flags.c_contiguous
                                               and (m.dtype == np.bool_ or m.dtype == cdt)))):
                        out = np.empty(out_shape, cdt)
                        mask = add if m is None else m.reshape(m_shape)
                        if gemm is not None:  # the heads as [B1, B2, rows, cols]
                            rows(*gemm, q if q.ndim == 4 else q[None], k if k.ndim == 4 else k[None],
                                 v if v.ndim == 4 else v[None], mask, *flags, out.reshape(o3), tasks)
                        else:
                            rows(q.reshape(q3), k.reshape(k3), v.reshape(v3), mask, *flags, out.reshape(o3))
                        return out
                ins = [q, k, v] + ([m] if m is not None else []) + consts[1 if m is not None else 0:]
                return run(ins)[0]
            run.static_call = static_call  # type: ignore[attr-defined]
        return run
