"""LayerNormalization (ONNX LayerNormalization-17 semantics) as the irnorm extension layer
``type="LayerNormalization" version="irnorm1"``.

Ports (by position):

* inputs: 0 ``X`` (T, rank r >= 1), 1 ``Scale`` (T), 2 ``B`` (T, optional: 2 or 3 input ports);
  Scale and B must be *unidirectionally* broadcastable to X (rank <= r, each right-aligned dim 1
  or equal to X's), so e.g. a [3, 1] Scale with axis=1 is fine, and so is one that varies along
  non-normalized axes.
* outputs: 0 ``Y`` (T, X's shape); 1 ``Mean`` and 2 ``InvStdDev`` (stash type U, shape
  ``X.shape[:axis] + [1] * (r - axis)``) exist when the layer declares 2 or 3 output ports.

Attributes (``<data>``): ``axis`` int, default -1, in [-r, r) (first normalized axis; the
normalized axes are [axis, r)); ``epsilon`` float >= 0, default 1e-5 (0 is allowed: a constant
row then gives NaN); ``stash_type`` int, default 1: the ONNX TensorProto code of U, 1 = float32,
16 = bfloat16 (the two types ONNX allows), 11 = float64 (irnorm extension).

Types: T in {f32, f16, bf16, f64}; Scale and B have X's type.

Numerics: Mean = mean(X), Var = mean((X - Mean)^2) (biased, two-pass), InvStdDev =
1 / sqrt(Var + epsilon), Y = (X - Mean) * InvStdDev * Scale + B.  The moments are accumulated in
float64 by the shared moments engine whatever T and stash_type are (so the precision is never
lower than stash_type asks for); stash_type only picks U.  The normalize-and-affine stage runs in
float32 (float64 for f64 X) and rounds once to T.  ONNX's function body instead rounds the
normalized value to T before multiplying by Scale and adding B in T; onnxruntime's CPU kernel,
like irnorm, keeps the affine in float32 and rounds once (checked: on f16 data irnorm and ORT
agree to 1 ulp, the staged rounding differs by up to 8 ulps).  ``onnx.reference`` computes in f16
and returns Mean/InvStdDev in T; irnorm returns them in U, as ORT does.

A zero-size normalized extent (some X dim >= axis is 0) gives an empty Y and NaN Mean/InvStdDev.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..ir.attrs import AttrError, AttrSchema, non_negative, optional, parse_float, parse_int
from ..ir.dtypes import ELEMENT_TYPES, compute_dtype
from .base import NodeContext, Op, TensorInfo, fail, fmt_shape, register, require_float, require_same_type

# stash_type (ONNX TensorProto.DataType code) -> element type of Mean / InvStdDev
STASH_TYPES = {1: "f32", 16: "bf16", 11: "f64"}


def _stash_type(text: str) -> int:
    v = parse_int(text)
    if v not in STASH_TYPES:
        raise AttrError(f"must be 1 (float32), 16 (bfloat16) or 11 (float64, irnorm extension), got {v}",
                        code="IRN023")
    return v


_stash_type.__name__ = "stash type code (1 f32|16 bf16|11 f64)"


def check_unidirectional(x_shape: Sequence[int], p_shape: Sequence[int] | None, what: str, x_what: str = "X") -> None:
    """Fail with IRN032 unless `p_shape` broadcasts to `x_shape` without changing it (-1 = dynamic)."""
    if p_shape is None:
        return
    r = len(x_shape)
    if len(p_shape) > r:
        raise fail("IRN032", f"{what} {fmt_shape(p_shape)} has rank {len(p_shape)}, more than {x_what} "
                             f"{fmt_shape(x_shape)} (rank {r}); it must be unidirectionally broadcastable to {x_what}")
    for i in range(1, len(p_shape) + 1):
        pd, xd = p_shape[-i], x_shape[-i]
        if pd in (1, -1) or xd == -1 or pd == xd:
            continue
        raise fail("IRN032", f"{what} {fmt_shape(p_shape)} is not unidirectionally broadcastable to {x_what} "
                             f"{fmt_shape(x_shape)}: its dim {len(p_shape) - i} is {pd}, {x_what} has {xd} there "
                             f"(must be 1 or {xd})")


# ---- fused normalize + broadcast affine on the shared moments engine ------------------------------


def _affine_layout(shape: tuple[int, ...], axes: list[int]):
    """How moments.normalize lays out `shape` for `axes`: (outer axes, reduce axes, inner axes) in the
    order their flat indices run, plus (outer, red, inner) sizes."""
    from ..kernels import moments

    perm, outer, red, inner = moments.canonical_layout(shape, axes)
    r = len(shape)
    ax = sorted(set(axes))
    if not ax:
        return list(range(r)), [], [], (outer, red, inner)
    if perm is None:
        lo, hi = ax[0], ax[-1]
        return list(range(lo)), list(range(lo, hi + 1)), list(range(hi + 1, r)), (outer, red, inner)
    keep = [a for a in range(r) if a not in ax]
    return keep, ax, [], (outer, red, inner)


def affine_tables(shape: tuple[int, ...], axes: list[int], params: Sequence[np.ndarray | None]):
    """Turn scale/bias arrays (numpy-broadcastable to `shape`, same rank) into moments' 1-D affine
    layout: returns (tables, o_mod, seg_len), or None when a parameter varies along an axis that
    moments keeps as "inner" (then the affine has to be applied separately).

    Index k = (o % o_mod) * nseg + r // seg_len: o_mod covers the trailing outer axes the
    parameters vary along, seg_len the trailing reduced axes they are constant along.
    """
    outer_axes, red_axes, inner_axes, (_, red, _) = _affine_layout(shape, axes)
    present = [p for p in params if p is not None]

    def varies(a: int) -> bool:
        return any(p.shape[a] != 1 for p in present)

    if any(varies(a) for a in inner_axes):
        return None
    j = next((i for i, a in enumerate(outer_axes) if varies(a)), len(outer_axes))
    m = max((i + 1 for i, a in enumerate(red_axes) if varies(a)), default=0)
    o_mod = int(np.prod([shape[a] for a in outer_axes[j:]], dtype=np.int64))
    seg_len = int(np.prod([shape[a] for a in red_axes[m:]], dtype=np.int64))
    order = outer_axes + red_axes + inner_axes
    index = tuple([0] * j + [slice(None)] * (len(outer_axes) - j + m) + [0] * (len(red_axes) - m + len(inner_axes)))
    tables = []
    for p in params:
        if p is None:
            tables.append(None)
            continue
        t = np.broadcast_to(p, shape).transpose(order)[index]
        tables.append(np.ascontiguousarray(t).reshape(-1))
    return tables, max(o_mod, 1), max(seg_len, 1)


_TABLES = "tables"  # memo key suffix of a shape's affine tables (the bare (shape, dtype) key: its bound normalizer)
_NO_PLAN = object()


def normalize_affine(x: np.ndarray, axes: list[int], eps: float, scale: np.ndarray | None, bias: np.ndarray | None,
                     *, want_stats: bool = False, memo: dict | None = None,
                     activation: tuple[int, float, float] | None = None):
    """(x - mean) / sqrt(var + eps) * scale + bias over `axes`, with scale/bias numpy-broadcastable to x
    at x's rank.  Uses the fused affine of moments.normalize whenever the parameters do not vary along
    moments' "inner" axes; otherwise normalizes first and applies the affine with numpy broadcasting
    (in the compute dtype, rounding once to x's dtype).  `memo`: a dict the caller keeps for constant
    scale/bias, caching the affine tables by x's shape (planning them costs more than normalizing a
    small tensor).  `activation` (code, p0, p1: kernels.activation's; float32 data, with a memo, without
    statistics): that activation of the result, the moments engine's epilogue where it applies the affine."""
    key = (x.shape, x.dtype)
    if memo is not None and not want_stats:
        bound = memo.get(key)  # the kernel call bound to this shape (below)
        if bound is not None:
            return bound(x)
    from ..kernels import moments

    if x.size == 0:
        return moments.normalize(x, axes, moments.INSIDE_SQRT, eps, want_stats=want_stats)
    if activation is not None:  # the epilogue lives in the bound normalizer: planned (and kept) now
        if memo is None or want_stats:
            raise ValueError("a fused activation needs a memo and no statistics")
        plan = memo.get(key + (_TABLES,), _NO_PLAN)
        if plan is _NO_PLAN:
            plan = affine_tables(x.shape, axes, [scale, bias])
            if len(memo) < 32:
                memo[key + (_TABLES,)] = plan
        if plan is None:  # the affine is not the engine's: the layers' way, then the activation on the result
            from ..kernels.activation import unary

            y = normalize_affine(x, axes, eps, scale, bias, memo=memo)
            return unary(activation[0], y, activation[1], activation[2])
        (ts, tb), o_mod, seg_len = plan
        norm = moments.normalizer(x.shape, x.dtype, axes, moments.INSIDE_SQRT, eps, scale=ts, bias=tb, o_mod=o_mod,
                                  seg_len=seg_len, out_dtype=x.dtype, activation=activation)
        if len(memo) < 32:
            memo[key] = norm
        return norm(x)
    cdt = compute_dtype(x.dtype)
    plan = _NO_PLAN if memo is None else memo.get(key + (_TABLES,), _NO_PLAN)
    if plan is _NO_PLAN:
        plan = affine_tables(x.shape, axes, [scale, bias])
        if memo is not None and len(memo) < 32:
            memo[key + (_TABLES,)] = plan
            if plan is not None:
                (ts, tb), o_mod, seg_len = plan
                memo[key] = moments.normalizer(x.shape, x.dtype, axes, moments.INSIDE_SQRT, eps, scale=ts, bias=tb,
                                               o_mod=o_mod, seg_len=seg_len, out_dtype=x.dtype)
                if not want_stats:  # the kept normalizer from its first call: it binds its entry point on its second
                    return memo[key](x)
    if plan is not None:
        (ts, tb), o_mod, seg_len = plan
        return moments.normalize(x, axes, moments.INSIDE_SQRT, eps, scale=ts, bias=tb, o_mod=o_mod,
                                 seg_len=seg_len, out_dtype=x.dtype, want_stats=want_stats)
    res = moments.normalize(x, axes, moments.INSIDE_SQRT, eps, out_dtype=cdt, want_stats=want_stats)
    y = res[0] if want_stats else res
    if scale is not None:
        y *= np.asarray(scale, dtype=cdt)
    if bias is not None:
        y += np.asarray(bias, dtype=cdt)
    y = y.astype(x.dtype, copy=False)
    return (y, res[1], res[2]) if want_stats else y


def pad_rank(p: np.ndarray, rank: int) -> np.ndarray:
    """View `p` with leading 1-dims up to `rank` (numpy broadcasting's left padding)."""
    return p.reshape((1,) * (rank - p.ndim) + p.shape)


@register
class LayerNormalization(Op):
    type = "LayerNormalization"
    version = 1
    opsets = "irnorm1"
    schema = AttrSchema([
        optional("axis", parse_int, -1, doc="first normalized axis, in [-r, r)"),
        optional("epsilon", parse_float, 1e-5, check=non_negative, doc="added to the variance"),
        optional("stash_type", _stash_type, 1, doc="type of Mean/InvStdDev: 1 f32, 16 bf16, 11 f64"),
    ])
    inputs = (2, 3)
    outputs = (1, 3)
    doc = ("ONNX LayerNormalization-17. Inputs X (T, rank >= 1), Scale (T), optional B (T); Scale and B "
           "unidirectionally broadcastable to X. Outputs Y (T, X's shape) and, when declared, Mean and "
           "InvStdDev (U by stash_type, shape X.shape[:axis] + [1]*(r-axis)). Normalizes over axes [axis, r): "
           "moments in float64, affine in float32 (float64 for f64) rounded once to T, like onnxruntime. "
           "T in f32, f16, bf16, f64.")

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        x = ctx.inputs[0]
        t = require_float(ctx, 0, "X")
        require_same_type(ctx, 0, 1, "Scale")
        if len(ctx.inputs) > 2:
            require_same_type(ctx, 0, 2, "B")
        u = STASH_TYPES[ctx.attrs["stash_type"]]
        if x.shape is None:
            return [TensorInfo(None, t), TensorInfo(None, u), TensorInfo(None, u)][: max(ctx.num_outputs, 1)]
        r = len(x.shape)
        axis = ctx.attrs["axis"]
        if r == 0:
            raise fail("IRN032", "X must have rank >= 1, got a scalar")
        if not -r <= axis < r:
            raise fail("IRN023", f"axis={axis} is out of range [{-r}, {r - 1}] for X {fmt_shape(x.shape)} "
                                 f"(rank {r})")
        axis %= r
        check_unidirectional(x.shape, ctx.inputs[1].shape, "Scale")
        if len(ctx.inputs) > 2:
            check_unidirectional(x.shape, ctx.inputs[2].shape, "B")
        stats = tuple(x.shape[:axis]) + (1,) * (r - axis)
        return [TensorInfo(tuple(x.shape), t), TensorInfo(stats, u), TensorInfo(stats, u)][: max(ctx.num_outputs, 1)]

    def build(self, ctx: NodeContext):
        eps = float(ctx.attrs["epsilon"])
        u = ELEMENT_TYPES[STASH_TYPES[ctx.attrs["stash_type"]]]
        axis_attr = ctx.attrs["axis"]
        n_out = max(ctx.num_outputs, 1)
        has_bias = len(ctx.inputs) > 2
        constant = all(i.value is not None for i in ctx.inputs[1:])
        memo: dict | None = {} if constant else None  # affine tables by input shape, for constant Scale/B

        def run(ins):
            x = ins[0]
            r = x.ndim
            axis = axis_attr % r
            scale = pad_rank(np.asarray(ins[1]), r)
            bias = pad_rank(np.asarray(ins[2]), r) if has_bias else None
            axes = list(range(axis, r))
            if n_out == 1:
                return [normalize_affine(x, axes, eps, scale, bias, memo=memo)]
            y, mean, mult = normalize_affine(x, axes, eps, scale, bias, want_stats=True, memo=memo)
            stats_shape = x.shape[:axis] + (1,) * (r - axis)
            mean = mean.reshape(stats_shape)
            inv = mult.reshape(stats_shape)
            red = int(np.prod(x.shape[axis:], dtype=np.int64))
            if red == 0:  # mean of nothing
                mean = np.full(stats_shape, np.nan)
                inv = np.full(stats_shape, np.nan)
            return [y, mean.astype(u), inv.astype(u)][:n_out]

        return run
