"""Planner rules that fuse what exports split.

Exporters write a LayerNorm as MVN + Multiply + Add, an f16 GroupNorm as Convert + GroupNormalization
+ Convert, a Scale as Multiply + Add + Power, a convolution's bias and activation as Add + Relu (or
Swish, HSwish, ...).  Run layer by layer, each of those is a full pass over memory (and a rounding of
its own); fused, it is one pass.  Others are one step instead of several, each running the layers' own
kernels back to back (bit-identical): an activation after a GroupNorm or after a residual Add, in place;
a squeeze-and-excitation block's eight small layers.  A rule looks at a layer and the layers
that consume it and, when the pattern holds, returns a :class:`Fusion`: the layers it covers, the
operands of the fused kernel and the kernel itself (built from the ops' own kernel entry points --
the kernels know nothing of fusion).

What every rule checks: each intermediate value it swallows has exactly one consumer and is not a
model output, and every other operand of the covered layers is a load-time constant (so the fused
step can run where the first layer ran).  Dynamic shapes are re-inferred layer by layer through the
covered layers (runtime/plan.py), so the shape errors are the unfused graph's.

Numerics: a fused step rounds once where the layers round after each op (f32: a few ulps; f16/bf16:
at most about one ulp of the output type).  ``tests/test_fusion.py`` checks every rule against the
unfused graph over random shapes and dtypes.  ``irnorm.load(..., fuse=False)`` / ``--no-fuse`` turn
fusion off; debugging runs (``capture=``, ``on_layer=``, hence ``compare`` and ``--dump-dir``) always
run the unfused plan, so every original layer is seen.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir.dtypes import ELEMENT_TYPES
from ..ir.graph import Graph, Node
from ..ir.tensor import TensorInfo
from ..ops.base import NodeContext, normalize_axes

Value = tuple[int, int]
Kernel = Callable[[Sequence[np.ndarray]], list[np.ndarray]]


@dataclass
class Fusion:
    nodes: list[Node]  # the covered layers in execution order; the last one's outputs are the step's
    args: list[Value]  # operands of the fused kernel
    kernel: Kernel
    label: str  # e.g. "MVN+Multiply+Add"
    # run where the last covered layer ran rather than the first: a fusion taking an operand that is
    # computed between its first and last layers (a residual Add's other branch)
    place_last: bool = False


class FuseContext:
    """What the rules may look at: the graph, who consumes each value, and which values must stay."""

    def __init__(self, graph: Graph, live: set[int], keep: set[Value]):
        self.graph = graph
        self.keep = keep
        self.taken: set[int] = set()  # layers already covered by a fusion (find_fusions fills it)
        self.consumers: dict[Value, list[tuple[int, int]]] = {}
        for n in graph.nodes:
            if n.index in live:
                for i, s in enumerate(n.sources):
                    if s is not None:
                        self.consumers.setdefault(tuple(s), []).append((n.index, i))

    def info(self, v: Value) -> TensorInfo:
        return self.graph.nodes[v[0]].outputs[v[1]]

    def const(self, v: Value | None) -> np.ndarray | None:
        return None if v is None else self.info(v).value

    def sole_consumer(self, node: Node, types: tuple[str, ...]) -> tuple[Node, int] | None:
        """The one layer (of one of `types`) consuming `node`'s only output, and at which input."""
        if len(node.outputs) != 1 or (node.index, 0) in self.keep:
            return None
        users = self.consumers.get((node.index, 0), [])
        if len(users) != 1:
            return None
        user = self.graph.nodes[users[0][0]]
        return (user, users[0][1]) if user.op_type in types else None

    def other_operand(self, node: Node, i: int) -> Value | None:
        return tuple(node.sources[1 - i]) if len(node.sources) == 2 and node.sources[1 - i] is not None else None


FusionRule = Callable[[FuseContext, Node], "Fusion | None"]


def _binary_numpy(node: Node) -> bool:
    return node.attrs.get("auto_broadcast") == "numpy"


def _keeps_shape(const: np.ndarray, shape: tuple[int, ...] | None) -> bool:
    """A constant that broadcasts against data of `shape` without growing it, whatever sizes the
    data's dynamic (-1) dims take: it may vary only along static dims."""
    if shape is None or const.ndim > len(shape):
        return False
    for c, d in zip(const.shape[::-1], shape[::-1], strict=False):
        if c != 1 and c != d:
            return False
    return True


# ---- MVN + Multiply + Add: one pass of the moments engine with the affine fused -------------------


def mvn_affine(fc: FuseContext, node: Node) -> Fusion | None:
    """MVN-6 (normalize_variance, eps inside the sqrt, constant axes) -> Multiply by a constant
    [-> Add a constant] [-> an activation, f32 data]: how every exported LayerNorm arrives, and an exported
    InstanceNorm + ReLU / LeakyReLU (style-transfer and GAN generators, nnU-Net).  The activation is the
    moments engine's epilogue (kernels/moments.py), applied to each chunk as it is written."""
    if node.op_type != "MVN" or node.op.version != 6 or not node.attrs.get("normalize_variance"):
        return None
    if node.attrs.get("eps_mode") != "inside_sqrt":
        return None
    x_src = node.sources[0]
    axes_v = fc.const(tuple(node.sources[1]))
    x_info = fc.info(tuple(x_src))
    if axes_v is None or x_info.shape is None or x_info.dtype not in ("f32", "f16", "bf16"):
        return None
    hit = fc.sole_consumer(node, ("Multiply",))
    if hit is None or not _binary_numpy(hit[0]):
        return None
    mul, i = hit
    scale = fc.const(fc.other_operand(mul, i))
    if scale is None or not _keeps_shape(scale, x_info.shape):
        return None
    nodes, bias = [node, mul], None
    hit = fc.sole_consumer(mul, ("Add",))
    if hit is not None and _binary_numpy(hit[0]):
        add, j = hit
        b = fc.const(fc.other_operand(add, j))
        if b is not None and _keeps_shape(b, x_info.shape):
            nodes.append(add)
            bias = b
    activation = None
    act = _activation_after(fc, nodes[-1]) if x_info.dtype == "f32" else None
    if act is not None:
        user, code, p0, p1 = act
        nodes.append(user)
        activation = (code, p0, p1)
    from ..ops.layer_norm import normalize_affine, pad_rank

    rank = len(x_info.shape)
    axes = sorted(set(normalize_axes([int(a) for a in axes_v.reshape(-1)], rank)))
    eps = float(np.float32(node.attrs["eps"]))
    dt = ELEMENT_TYPES[x_info.dtype]
    scale = pad_rank(np.asarray(scale, dt), rank)
    bias = None if bias is None else pad_rank(np.asarray(bias, dt), rank)

    memo: dict = {}  # affine tables by input shape
    # {input shape: the normalizer normalize_affine keeps in memo for it}: the step's dtype is the graph's,
    # so the shape alone picks it -- no key tuple, no call through normalize_affine on every run
    bound: dict[tuple[int, ...], Callable[[np.ndarray], np.ndarray]] = {}

    def run(ins: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = ins[0]
        call = bound.get(x.shape)
        if call is not None:
            return [call(x)]
        y = normalize_affine(x, axes, eps, scale, bias, memo=memo, activation=activation)
        call = memo.get((x.shape, x.dtype))
        if call is not None and len(bound) < 32:
            bound[x.shape] = call
        return [y]

    def static_call(x: np.ndarray) -> np.ndarray:
        # the straight-line runner's form on a static model (runtime/plan.py): no operand list, no list back
        # (~0.3 us of a transformer's ~1.5 us LayerNorm step)
        call = bound.get(x.shape)
        return call(x) if call is not None else run((x,))[0]
    run.static_call = static_call  # type: ignore[attr-defined]

    return Fusion(nodes, [tuple(x_src)], run, "+".join(n.op_type for n in nodes))


# ---- Convert -> normalization -> Convert: read and write f16/bf16 inside the kernel ---------------

# Ops whose kernels take f16/bf16 data, compute in float32 and round once to the data's type.
_HALF_NATIVE = {("GroupNormalization", 12), ("MVN", 1), ("MVN", 6), ("NormalizeL2", 1)}


def precision_converts(fc: FuseContext, node: Node) -> Fusion | None:
    """Convert(f16|bf16 -> f32) -> a normalization -> Convert(f32 -> the same type): the norm reads
    the half-precision data and writes it back directly."""
    if node.op_type != "Convert" or node.attrs.get("destination_type") != "f32":
        return None
    src = tuple(node.sources[0])
    half = fc.info(src).dtype
    if half not in ("f16", "bf16"):
        return None
    hit = fc.sole_consumer(node, tuple(t for t, _ in _HALF_NATIVE))
    if hit is None or hit[1] != 0 or (hit[0].op_type, hit[0].op.version) not in _HALF_NATIVE:
        return None
    norm = hit[0]
    if any(s is None or fc.const(tuple(s)) is None for s in norm.sources[1:]):
        return None
    back = fc.sole_consumer(norm, ("Convert",))
    if back is None or back[0].attrs.get("destination_type") != half:
        return None
    ins = [TensorInfo(fc.info(src).shape, half)] + [fc.info(tuple(s)) for s in norm.sources[1:]]
    kernel = norm.op.build(NodeContext(norm.layer, norm.attrs, ins, len(norm.layer.outputs)))
    consts = [fc.const(tuple(s)) for s in norm.sources[1:]]

    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return kernel([xs[0], *consts])

    return Fusion([node, norm, back[0]], [src], run, f"Convert+{norm.op_type}+Convert")


# ---- Multiply / Add / Power by constants: one pass of the Scale kernel ----------------------------


def _coefficient_axis(consts: list[np.ndarray], shape: tuple[int, ...]) -> int | None:
    """-1 when every constant is a single value; the one axis they vary along; None otherwise."""
    axes = set()
    for c in consts:
        pc = c.reshape((1,) * (len(shape) - c.ndim) + c.shape)
        axes |= {a for a, d in enumerate(pc.shape) if d != 1}
    if not axes:
        return -1
    return axes.pop() if len(axes) == 1 else None


def scale_chain(fc: FuseContext, node: Node) -> Fusion | None:
    """x * a [+ b] [** p], x + b [** p] or x ** p with constants a, b, p that are single values or vary
    along one axis: the Scale kernel ((x * a + b) ** p in float32, fast paths for p = 1 and 2)."""
    if node.op_type not in ("Multiply", "Add", "Power") or not _binary_numpy(node):
        return None
    # the data operand is the non-constant one (Power: its base)
    data_i = next((i for i, s in enumerate(node.sources) if s is not None and fc.const(tuple(s)) is None), None)
    if data_i is None or (node.op_type == "Power" and data_i != 0):
        return None
    x_src = tuple(node.sources[data_i])
    x_info = fc.info(x_src)
    if x_info.shape is None or x_info.dtype not in ("f32", "f16", "bf16") or len(x_info.shape) == 0:
        return None
    coeffs: dict[str, np.ndarray] = {}
    nodes: list[Node] = []
    cur: Node | None = node
    cur_i = data_i
    for kind in ("Multiply", "Add", "Power"):  # the order the Scale kernel applies them in
        if cur is None or cur.op_type != kind:
            continue
        c = fc.const(fc.other_operand(cur, cur_i))
        if not _binary_numpy(cur) or c is None or not _keeps_shape(c, x_info.shape) or (kind == "Power" and cur_i):
            break
        coeffs[kind] = c
        nodes.append(cur)
        hit = fc.sole_consumer(cur, ("Add", "Power"))
        cur, cur_i = hit if hit is not None else (None, 0)
    if not nodes or (len(nodes) == 1 and nodes[0].op_type != "Power"):
        return None  # a lone Multiply or Add is already one pass
    ca = _coefficient_axis(list(coeffs.values()), x_info.shape)
    if ca is None:
        return None
    k_count = 1 if ca == -1 else x_info.shape[ca]
    if k_count == -1:
        return None  # coefficients along a dynamic axis: leave the layers alone

    def vec(c: np.ndarray | None, default: float) -> np.ndarray:
        if c is None:
            return np.full(k_count, default, np.float32)
        v = np.asarray(c, np.float32).reshape(-1)
        return np.ascontiguousarray(np.broadcast_to(v, (k_count,)) if v.size == 1 else v)

    a, b, p = vec(coeffs.get("Multiply"), 1.0), vec(coeffs.get("Add"), 0.0), vec(coeffs.get("Power"), 1.0)
    out_dtype = ELEMENT_TYPES[x_info.dtype]
    from ..kernels import scale as kernel

    pmode = kernel.power_mode(p)

    def run(ins: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = ins[0]
        inner = 1
        for d in x.shape[ca + 1:] if ca >= 0 else x.shape:
            inner *= d
        return [kernel.scale(x, a, b, p, k_count, inner, out_dtype, pmode)]

    return Fusion(nodes, [x_src], run, "+".join(n.op_type for n in nodes) if len(nodes) > 1 else "Power")


# ---- RMSNorm and F.normalize decompositions: one normalization each ------------------------------


def _scalar(v: np.ndarray | None) -> float | None:
    return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None


def _same(a: Any, b: Any) -> bool:
    return a is not None and b is not None and tuple(a) == tuple(b)


def _trailing_scale(fc: FuseContext, node: Node, x_shape: tuple[int, ...]) -> tuple[Node, np.ndarray] | None:
    """An optional Multiply of `node`'s output by a constant that keeps the data's shape (a norm's weight)."""
    hit = fc.sole_consumer(node, ("Multiply",))
    if hit is None or not _binary_numpy(hit[0]):
        return None
    w = fc.const(fc.other_operand(hit[0], hit[1]))
    return (hit[0], w) if w is not None and _keeps_shape(w, x_shape) else None


def _normalize_kernel(x_dtype: str, rank: int, axes: list[int], mode_name: str, eps: float,
                      weight: np.ndarray | None) -> Kernel:
    """moments.normalize without centering (sum of squares), the weight fused when the engine's
    affine layout allows it, else applied after (in the compute type, rounding once)."""
    from ..ir.dtypes import compute_dtype
    from ..kernels import moments
    from ..ops.layer_norm import affine_tables, pad_rank

    mode = getattr(moments, mode_name)
    dt = ELEMENT_TYPES[x_dtype]
    w = None if weight is None else pad_rank(np.asarray(weight, dt), rank)
    plans: dict = {}  # affine tables by input shape: planning them costs more than a small tensor's norm
    bound: dict = {}  # the engine's call bound to an input shape (moments.normalizer)

    def run(ins: Sequence[np.ndarray]) -> list[np.ndarray]:
        x = ins[0]
        fn = bound.get(x.shape)
        if fn is not None:
            return [fn(x)]
        if w is None or x.size == 0:
            fn = moments.normalizer(x.shape, x.dtype, axes, mode, eps, center=False, out_dtype=x.dtype)
            if len(bound) < 32:
                bound[x.shape] = fn
            return [fn(x)]
        if x.shape in plans:
            plan = plans[x.shape]
        else:
            plan = affine_tables(x.shape, axes, [w])
            if len(plans) < 32:
                plans[x.shape] = plan
        if plan is not None:
            (tw,), o_mod, seg_len = plan
            fn = moments.normalizer(x.shape, x.dtype, axes, mode, eps, center=False, scale=tw, o_mod=o_mod,
                                    seg_len=seg_len, out_dtype=x.dtype)
            if len(bound) < 32:
                bound[x.shape] = fn
            return [fn(x)]
        cdt = compute_dtype(x.dtype)
        y = moments.normalize(x, axes, mode, eps, center=False, out_dtype=cdt)
        y *= w.astype(cdt)
        return [y.astype(x.dtype, copy=False)]

    def static_call(x: np.ndarray) -> np.ndarray:  # the straight-line runner's form (as mvn_affine's)
        fn = bound.get(x.shape)
        return fn(x) if fn is not None else run((x,))[0]
    run.static_call = static_call  # type: ignore[attr-defined]

    return run


def rms_norm(fc: FuseContext, node: Node) -> Fusion | None:
    """Power(x, 2) -> ReduceMean(keep_dims) -> Add eps -> Sqrt -> Divide(1, .) -> Multiply(x, .)
    (or Divide(x, .), or Power(., -0.5) -> Multiply(x, .)) [-> Multiply by a weight]: how an exported
    RMSNorm arrives; one pass of the moments engine without centering."""
    if node.op_type != "Power" or not _binary_numpy(node) or node.sources[0] is None:
        return None
    x_src = tuple(node.sources[0])
    x_info = fc.info(x_src)
    if _scalar(fc.const(fc.other_operand(node, 0))) != 2.0 or x_info.shape is None:
        return None
    if x_info.dtype not in ("f32", "f16", "bf16"):
        return None
    hit = fc.sole_consumer(node, ("ReduceMean",))
    if hit is None or hit[1] != 0 or not hit[0].attrs.get("keep_dims"):
        return None
    mean = hit[0]
    axes_v = fc.const(tuple(mean.sources[1]))
    hit = fc.sole_consumer(mean, ("Add",))
    if axes_v is None or hit is None or not _binary_numpy(hit[0]):
        return None
    add = hit[0]
    eps = _scalar(fc.const(fc.other_operand(add, hit[1])))
    nodes = [node, mean, add]
    hit = fc.sole_consumer(add, ("Sqrt", "Power"))
    if eps is None or eps < 0 or hit is None:
        return None
    root = hit[0]
    nodes.append(root)
    if root.op_type == "Power":  # rsqrt as Power(., -0.5), then Multiply(x, .)
        if hit[1] != 0 or _scalar(fc.const(fc.other_operand(root, 0))) != -0.5:
            return None
        last = fc.sole_consumer(root, ("Multiply",))
        if last is None or not _same(fc.other_operand(last[0], last[1]), x_src):
            return None
        nodes.append(last[0])
    else:
        hit = fc.sole_consumer(root, ("Divide",))
        if hit is None or hit[1] != 1:
            return None
        div = hit[0]
        nodes.append(div)
        if not _same(div.sources[0], x_src):  # Divide(1, sqrt) then Multiply(x, .)
            if _scalar(fc.const(tuple(div.sources[0]))) != 1.0:
                return None
            last = fc.sole_consumer(div, ("Multiply",))
            if last is None or not _same(fc.other_operand(last[0], last[1]), x_src):
                return None
            nodes.append(last[0])
    weight = _trailing_scale(fc, nodes[-1], x_info.shape)
    if weight is not None:
        nodes.append(weight[0])
    rank = len(x_info.shape)
    axes = sorted(set(normalize_axes([int(a) for a in axes_v.reshape(-1)], rank)))
    kernel = _normalize_kernel(x_info.dtype, rank, axes, "INSIDE_SQRT", eps, None if weight is None else weight[1])
    return Fusion(nodes, [x_src], kernel, "RMSNorm(" + "+".join(n.op_type for n in nodes) + ")")


def l2_normalize(fc: FuseContext, node: Node) -> Fusion | None:
    """ReduceL2(x, keep_dims) -> Maximum(., eps) -> Divide(x, .) [-> Multiply by a weight]: how
    F.normalize arrives.  x / max(||x||, eps) is NormalizeL2's max mode with eps squared."""
    if node.op_type != "ReduceL2" or not node.attrs.get("keep_dims") or node.sources[0] is None:
        return None
    x_src = tuple(node.sources[0])
    x_info = fc.info(x_src)
    axes_v = fc.const(tuple(node.sources[1]))
    if axes_v is None or x_info.shape is None or x_info.dtype not in ("f32", "f16", "bf16"):
        return None
    hit = fc.sole_consumer(node, ("Maximum",))
    if hit is None or not _binary_numpy(hit[0]):
        return None
    mx = hit[0]
    eps = _scalar(fc.const(fc.other_operand(mx, hit[1])))
    hit = fc.sole_consumer(mx, ("Divide",))
    if eps is None or eps < 0 or hit is None or hit[1] != 1 or not _same(hit[0].sources[0], x_src):
        return None
    nodes = [node, mx, hit[0]]
    weight = _trailing_scale(fc, hit[0], x_info.shape)
    if weight is not None:
        nodes.append(weight[0])
    rank = len(x_info.shape)
    axes = sorted(set(normalize_axes([int(a) for a in axes_v.reshape(-1)], rank)))
    if not axes:
        return None  # empty axes: ReduceL2 is |x| elementwise; leave it to the layers
    kernel = _normalize_kernel(x_info.dtype, rank, axes, "L2_MAX", eps * eps, None if weight is None else weight[1])
    return Fusion(nodes, [x_src], kernel, "L2Norm(" + "+".join(n.op_type for n in nodes) + ")")


# ---- Convolution -> Add a per-channel bias -> activation: one pass over the product ------------------

_BIASED = {("Convolution", 1), ("GroupConvolution", 1), ("ConvolutionBackpropData", 1),
           ("GroupConvolutionBackpropData", 1)}


def _axis_values(const: np.ndarray | None, shape: tuple[int, ...], axis: int) -> np.ndarray | None:
    """A constant that broadcasts to data of `shape` varying at most along `axis` (static there): its
    values along that axis (a single value repeated), else None."""
    if const is None or not _keeps_shape(const, shape) or shape[axis] == -1:
        return None
    axis %= len(shape)
    padded = const.reshape((1,) * (len(shape) - const.ndim) + const.shape)
    if any(d != 1 for a, d in enumerate(padded.shape) if a != axis):
        return None
    return np.ascontiguousarray(np.broadcast_to(padded.reshape(-1), (shape[axis],)))


def _bias_and_activation(fc: FuseContext, node: Node, axis: int) -> tuple[list[Node], Any, int, float, float]:
    """What follows a producer `node` of f32/f64 data: an Add of a constant varying only along `axis`
    (its values, in the data's type) and/or an activation with constant parameters (its kernel code and
    parameters); each swallowed value has this one consumer.  (covered layers, bias, code, p0, p1)."""
    y = node.outputs[0]
    nodes, bias = [node], None
    hit = fc.sole_consumer(node, ("Add",))
    if hit is not None and _binary_numpy(hit[0]):
        bias = _axis_values(fc.const(fc.other_operand(hit[0], hit[1])), y.shape, axis)
        if bias is not None:
            nodes.append(hit[0])
            bias = bias.astype(ELEMENT_TYPES[y.dtype])
    code, p0, p1 = -1, 0.0, 0.0
    act = _activation_after(fc, nodes[-1])
    if act is not None:
        user, code, p0, p1 = act
        nodes.append(user)
    return nodes, bias, code, p0, p1


def _activation_after(fc: FuseContext, node: Node) -> tuple[Node, int, float, float] | None:
    """The activation layer with constant parameters that is the sole consumer of `node`'s f32/f64 output
    (at its data input): (that layer, its kernel code, p0, p1)."""
    users = fc.consumers.get((node.index, 0), [])
    if len(node.outputs) != 1 or len(users) != 1 or users[0][1] != 0 or (node.index, 0) in fc.keep:
        return None
    user = fc.graph.nodes[users[0][0]]
    if user.op_type == "PRelu" and len(user.sources) == 2 and user.sources[1] is not None:
        # one slope for every element (how LeakyReLU exports): the layer itself runs activation "prelu_scalar"
        slope = fc.const(tuple(user.sources[1]))
        if slope is None or slope.size != 1 or not np.issubdtype(slope.dtype, np.floating):
            return None
        from ..kernels.activation import CODES

        return user, CODES["prelu_scalar"], float(slope.reshape(-1)[0]), 0.0
    if not hasattr(user.op, "fused_form"):  # not an activation (nor is its module imported for this model)
        return None
    from ..ops.activation import _Activation

    params = [fc.const(tuple(s)) if s is not None else None for s in user.sources[1:]]
    if not isinstance(user.op, _Activation) or any(p is None for p in params):
        return None
    ctx = NodeContext(user.layer, user.attrs, [fc.info(tuple(s)) for s in user.sources], 1)
    return (user, *user.op.fused_form(ctx, ELEMENT_TYPES[node.outputs[0].dtype], params))


def conv_bias_activation(fc: FuseContext, node: Node) -> Fusion | None:
    """A convolution with constant weights -> Add of a per-channel constant -> an activation (either
    may be missing, not both), on f32/f64 data: the bias and the activation run in place on the
    product, in one pass (how exports write every convolution with a bias and its ReLU/Swish/HSwish)."""
    if (node.op_type, node.op.version) not in _BIASED or any(s is None or fc.const(tuple(s)) is None
                                                              for s in node.sources[1:]):
        return None
    y = node.outputs[0]
    if y.dtype not in ("f32", "f64") or y.shape is None or len(y.shape) < 3:
        return None
    nodes, bias, code, p0, p1 = _bias_and_activation(fc, node, 1)
    residual = _residual_add(fc, nodes[-1]) if code < 0 else None
    if residual is not None:  # a residual block's end: the sum and its activation in the same pass
        nodes.append(residual[0])
        act = _activation_after(fc, residual[0])
        if act is not None:
            user, code, p0, p1 = act
            nodes.append(user)
    if len(nodes) == 1:
        return None
    ins = [fc.info(tuple(s)) for s in node.sources]
    ctx = NodeContext(node.layer, node.attrs, ins, len(node.layer.outputs))
    consts = [fc.const(tuple(s)) for s in node.sources[1:]]
    label = "+".join(n.op_type for n in nodes)
    if node.op_type in _EPILOGUE_IN_PLAN:  # the convolution's own plan applies it (in its call where it can)
        from ..kernels.conv import Epilogue

        inner = node.op.build(ctx, Epilogue(bias, code, p0, p1, residual is not None))
        operands = [tuple(node.sources[0])] + ([residual[1]] if residual is not None else [])
        return Fusion(nodes, operands, _filter_between(inner, consts), label, place_last=residual is not None)
    conv = node.op.build(ctx)
    if residual is not None:
        return Fusion(nodes, [tuple(node.sources[0]), residual[1]], _with_residual(conv, bias, code, p0, p1, consts),
                      label, place_last=True)
    return Fusion(nodes, [tuple(node.sources[0])], _with_epilogue(conv, bias, code, p0, p1, consts), label)


_EPILOGUE_IN_PLAN = ("Convolution", "GroupConvolution")


def _filter_between(kernel: Kernel, consts: Sequence[np.ndarray]) -> Kernel:
    """`kernel` on [data, *consts, *rest] as a step's kernel on [data, *rest] (and the kernel's static_call,
    which takes the runtime operands: the straight-line runner's form)."""
    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return kernel([xs[0], *consts, *xs[1:]])
    if hasattr(kernel, "static_call"):
        run.static_call = kernel.static_call  # type: ignore[attr-defined]
    return run


def _residual_add(fc: FuseContext, node: Node) -> tuple[Node, Value] | None:
    """`node`'s sole consumer an Add (not yet fused) of its output and another computed tensor of the
    same shape and type: (that Add, the other operand)."""
    hit = fc.sole_consumer(node, ("Add",))
    if hit is None or hit[0].index in fc.taken or not _binary_numpy(hit[0]):
        return None
    add, i = hit
    other = fc.other_operand(add, i)
    y = node.outputs[0]
    if other is None or fc.const(other) is not None or other[0] == node.index:
        return None
    info = fc.info(other)
    if info.dtype != y.dtype or info.shape != y.shape or add.outputs[0].shape != y.shape:
        return None
    return add, other


def _with_residual(kernel: Kernel, bias: np.ndarray | None, code: int, p0: float, p1: float,
                   consts: Sequence[np.ndarray]) -> Kernel:
    """`kernel` (a convolution whose one output is a fresh array of its own) on the step's first operand,
    then in place on its output: + bias, + the step's second operand (the residual), the activation --
    one pass, planned once per output shape.  A residual of another shape at run time (a dynamic model
    whose branches broadcast) takes the layers' own way: numpy's broadcasting Add between the two."""
    from ..kernels.activation import bias_activation_plan, bias_residual_plan

    plans: dict[tuple[int, ...], Callable[[np.ndarray, np.ndarray], np.ndarray]] = {}

    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        (out,) = kernel([xs[0], *consts])
        res = xs[1]
        if res.shape != out.shape or res.dtype != out.dtype:
            out = bias_activation_plan(out.shape, out.dtype, bias, -1)(out) + res
            return [bias_activation_plan(out.shape, out.dtype, None, code, p0, p1)(out)]
        epilogue = plans.get(out.shape)
        if epilogue is None:
            epilogue = bias_residual_plan(out.shape, out.dtype, bias, code, p0, p1)
            if len(plans) < 64:
                plans[out.shape] = epilogue
        return [epilogue(out, res)]

    return run


def norm_activation(fc: FuseContext, node: Node) -> Fusion | None:
    """GroupNormalization -> an activation (ReLU, Swish, Gelu, ...; an Add of a per-channel constant
    between them is taken too), on f32/f64 data, one step instead of two (pre-activation ResNets write
    GroupNorm + ReLU, diffusion UNets GroupNorm + Swish, wav2vec2's feature encoder GroupNorm + Gelu): the
    moments engine applies the activation to each chunk of the output as it writes it, while it is in L1;
    with an Add between them, the Add and the activation run in place on the normalized output."""
    if node.op_type != "GroupNormalization" or any(s is None for s in node.sources):
        return None
    y = node.outputs[0]
    if y.dtype not in ("f32", "f64") or y.shape is None or len(y.shape) < 2:
        return None
    nodes, bias, code, p0, p1 = _bias_and_activation(fc, node, 1)
    if code < 0:
        return None
    ctx = NodeContext(node.layer, node.attrs, [fc.info(tuple(s)) for s in node.sources], 1)
    label = "+".join(n.op_type for n in nodes)
    if bias is None:  # the moments engine activates each chunk as it writes it (no second pass)
        return Fusion(nodes, [tuple(s) for s in node.sources], node.op.build(ctx, (code, p0, p1)), label)
    return Fusion(nodes, [tuple(s) for s in node.sources], _with_epilogue(node.op.build(ctx), bias, code, p0, p1),
                  label)


def residual_activation(fc: FuseContext, node: Node) -> Fusion | None:
    """Add of two computed f32/f64 tensors of the output's shape -> an activation: the activation runs in
    place on the sum (a ResNet block's residual Add + ReLU), one step instead of two."""
    if node.op_type != "Add" or len(node.sources) != 2 or any(s is None for s in node.sources):
        return None
    y = node.outputs[0]
    if y.dtype not in ("f32", "f64") or y.shape is None or len(y.shape) < 2:
        return None
    if any(fc.const(tuple(s)) is not None or fc.info(tuple(s)).shape != y.shape for s in node.sources):
        return None  # a constant operand, or one the sum broadcasts: left to the bias rules
    act = _activation_after(fc, node)
    if act is None:
        return None
    user, code, p0, p1 = act
    add = node.op.build(NodeContext(node.layer, node.attrs, [fc.info(tuple(s)) for s in node.sources], 1))
    return Fusion([node, user], [tuple(s) for s in node.sources], _with_epilogue(add, None, code, p0, p1),
                  f"Add+{user.op_type}")


def _pointwise_conv(fc: FuseContext, node: Node | None, channels: int) -> tuple[list[Node], np.ndarray,
                                                                                 np.ndarray | None, int, float,
                                                                                 float] | None:
    """A 1x1 Convolution of `channels` input channels with constant weights, unit strides, no padding
    (squeeze-excite's), with what follows it as conv_bias_activation takes it: (its layers, the prepared
    weights [1, C_out, C_in], bias, activation code, p0, p1)."""
    if node is None or (node.op_type, node.op.version) != ("Convolution", 1) or node.sources[1] is None:
        return None
    w = fc.const(tuple(node.sources[1]))
    a = node.attrs
    explicit = a.get("auto_pad") in (None, "explicit", "notset")  # else the pads are derived: none for 1x1
    if (w is None or w.ndim < 3 or w.shape[1] != channels or any(k != 1 for k in w.shape[2:])
            or any(v != 1 for v in a.get("strides") or [])
            or (explicit and (any(a.get("pads_begin") or []) or any(a.get("pads_end") or [])))):
        return None
    nodes, bias, code, p0, p1 = _bias_and_activation(fc, node, 1)
    return nodes, np.ascontiguousarray(w.reshape(1, w.shape[0], -1), dtype=w.dtype), bias, code, p0, p1


def squeeze_excite(fc: FuseContext, node: Node) -> Fusion | None:
    """ReduceMean over the spatial axes (keep_dims) -> 1x1 Convolution (+ bias, activation) -> 1x1
    Convolution (+ bias) -> Sigmoid (or a gate activation such as HSigmoid) -> Multiply with the
    ReduceMean's own input: a squeeze-and-excitation block (EfficientNet, MobileNetV3, RegNetY) as one
    step.  Its eight layers on a [C, 1, 1] vector cost a step each; fused, the same kernels run back to
    back: the ReduceMean's and the Multiply's own, the convolutions' products as their 1x1 path makes
    them, the bias and activation epilogues (a Sigmoid gate in the second one, by the Sigmoid layer's
    own expression) -- bit-identical to the layers."""
    if node.op_type != "ReduceMean" or not node.attrs.get("keep_dims") or any(s is None for s in node.sources):
        return None
    x_src = tuple(node.sources[0])
    x = fc.info(x_src)
    axes_v = fc.const(tuple(node.sources[1]))
    if x.dtype not in ("f32", "f64") or x.shape is None or len(x.shape) < 3 or axes_v is None or x.shape[1] == -1:
        return None
    rank = len(x.shape)
    if sorted(set(normalize_axes([int(v) for v in axes_v.reshape(-1)], rank))) != list(range(2, rank)):
        return None
    channels = x.shape[1]
    hit = fc.sole_consumer(node, ("Convolution",))
    first = _pointwise_conv(fc, hit[0] if hit is not None and hit[1] == 0 else None, channels)
    if first is None:
        return None
    nodes1, w1, b1, code1, q0, q1 = first
    hit = fc.sole_consumer(nodes1[-1], ("Convolution",))
    second = _pointwise_conv(fc, hit[0] if hit is not None and hit[1] == 0 else None, w1.shape[1])
    if second is None or second[1].shape[1] != channels:
        return None
    nodes2, w2, b2, code2, r0, r1 = second
    gate = None
    if code2 < 0:  # the gate is a Sigmoid layer of its own
        hit = fc.sole_consumer(nodes2[-1], ("Sigmoid",))
        if hit is None:
            return None
        gate = hit[0]
    last = gate or nodes2[-1]
    hit = fc.sole_consumer(last, ("Multiply",))
    if hit is None or fc.other_operand(hit[0], hit[1]) != x_src or not _binary_numpy(hit[0]):
        return None
    mul = hit[0]

    def build(n: Node) -> Kernel:
        return n.op.build(NodeContext(n.layer, n.attrs, [fc.info(tuple(s)) for s in n.sources], 1))

    mean, multiply = build(node), build(mul)
    if gate is not None:  # the Sigmoid layer's expression runs in the second product's epilogue
        from ..kernels.activation import CODES

        code2 = CODES["sigmoid"]
    axes = fc.const(tuple(node.sources[1]))
    x_first = mul.sources[0] is not None and tuple(mul.sources[0]) == x_src
    from ..kernels.conv import Epilogue, forward_plan, squeeze_excite_plan

    plans: dict[tuple, tuple] = {}  # (x's shape, dtype) -> the block's plans at that shape
    one, zero = (1,) * (rank - 2), (0,) * (rank - 2)
    first, second = Epilogue(b1, code1, q0, q1, False), Epilogue(b2, code2, r0, r1, False)

    def run(ins: Sequence[np.ndarray]) -> list[np.ndarray]:
        xv = ins[0]
        key = (xv.shape, xv.dtype)
        plan = plans.get(key)
        if plan is None:
            n = xv.shape[0]
            plan = (squeeze_excite_plan(xv.shape, xv.dtype, w1, first, w2, second),
                    forward_plan((n, channels, *one), w1, one, one, one, zero, one, first),
                    forward_plan((n, w1.shape[1], *one), w2, one, one, one, zero, one, second))
            if len(plans) < 16:
                plans[key] = plan
        whole, conv1, conv2 = plan
        if whole is not None:  # one call (a small block)
            return [whole(xv)]
        (m,) = mean([xv, axes])
        g = conv2(conv1(m))  # the 1x1 convolutions with their epilogues, as their own steps' plans run them
        return multiply([xv, g] if x_first else [g, xv])

    covered = [node, *nodes1, *nodes2, *([gate] if gate is not None else []), mul]
    return Fusion(covered, [x_src], run, "SqueezeExcite(" + "+".join(n.op_type for n in covered) + ")")


def _with_epilogue(kernel: Kernel, bias: np.ndarray | None, code: int, p0: float, p1: float,
                   consts: Sequence[np.ndarray] = ()) -> Kernel:
    """`kernel` (whose one output is a fresh array of its own) followed by the bias and activation in
    place on that output, the epilogue planned once per output shape and dtype.  With `consts`, the
    fused step's one operand is the kernel's first and `consts` are the rest."""
    from ..kernels.activation import bias_activation_plan

    epilogues: dict[tuple, Callable[[np.ndarray], np.ndarray]] = {}

    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        (out,) = kernel([xs[0], *consts] if consts else xs)
        key = (out.shape, out.dtype)
        epilogue = epilogues.get(key)
        if epilogue is None:
            epilogue = bias_activation_plan(out.shape, out.dtype, bias, code, p0, p1)
            if len(epilogues) < 64:
                epilogues[key] = epilogue
        return [epilogue(out)]

    return run


def matmul_bias_activation(fc: FuseContext, node: Node) -> Fusion | None:
    """MatMul -> Add of a constant along the last axis -> an activation (either may be missing, not
    both), on f32/f64 data: the bias and the activation run in place on the product (how exports write
    every linear layer, and a transformer MLP's Gelu).  With no activation, an Add of another computed
    tensor of the product's shape after them is taken too (a transformer block's residual: `x + proj(h)`),
    the step's third operand."""
    if node.op_type != "MatMul" or any(s is None for s in node.sources):
        return None
    y = node.outputs[0]
    if y.dtype not in ("f32", "f64") or y.shape is None or len(y.shape) < 2:
        return None
    nodes, bias, code, p0, p1 = _bias_and_activation(fc, node, -1)
    reshaped = None
    if code < 0:  # GPT-2's Conv1D: view(-1, nx) -> addmm -> view(...) -> Gelu: the activation past a Reshape
        hit = _reshape_then_activation(fc, nodes[-1])
        if hit is not None:
            reshape, reshaped, (user, code, p0, p1) = hit
            nodes += [reshape, user]
    residual = _residual_add(fc, nodes[-1]) if code < 0 and reshaped is None else None
    if residual is not None:
        nodes.append(residual[0])
    if len(nodes) == 1:
        return None
    from ..kernels.activation import Epilogue

    # the MatMul's own kernel applies the bias and activation (and the residual): in its call for a small
    # product by a constant matrix (kernels/linear.py), else in place on the fresh product
    matmul = node.op.build(NodeContext(node.layer, node.attrs, [fc.info(tuple(s)) for s in node.sources], 1),
                           Epilogue(bias, code, p0, p1, residual is not None))

    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        (y,) = matmul(xs)
        return [y.reshape(reshaped) if reshaped is not None else y]

    if reshaped is None and hasattr(matmul, "static_call"):
        run.static_call = matmul.static_call  # type: ignore[attr-defined]  # the straight-line runner's form

    operands = [tuple(s) for s in node.sources] + ([residual[1]] if residual is not None else [])
    # with a residual the step runs where the Add did: its other operand may be computed after the MatMul
    return Fusion(nodes, operands, run, "+".join(n.op_type for n in nodes), place_last=residual is not None)


# ---- MatMul -> scale -> mask -> SoftMax -> MatMul: attention written out, as one attention step ----------


def _scalar_operand(fc: FuseContext, node: Node, i: int) -> float | None:
    """The constant single value `node` combines with its input i (numpy broadcast, of no higher rank), or None."""
    c = fc.const(fc.other_operand(node, i))
    rank = fc.info(tuple(node.sources[i])).rank
    if c is None or c.size != 1 or rank is None or c.ndim > rank or not _binary_numpy(node):
        return None
    return float(c.reshape(-1)[0])


def attention_written_out(fc: FuseContext, node: Node) -> Fusion | None:
    """MatMul(Q, K^T or K with transpose_b) -> [Multiply or Divide by a constant scalar] -> [Add of a mask of the
    scores' type that does not widen them] -> SoftMax over the last axis -> MatMul(P, V) on f32 data, static
    shapes: how exports without ScaledDotProductAttention write attention (DistilBERT, Swin's windows), run as
    one ScaledDotProductAttention step (ops/attention.py: small heads in one call, larger ones with a GEMM
    call per head and product, the softmax between them in place).  The scale multiplies the scores before the
    mask is added, as the layers do (a Divide becomes a multiply by the reciprocal: within an ulp)."""
    if (node.op_type != "MatMul" or node.attrs.get("transpose_a") or len(node.sources) != 2
            or any(s is None or fc.const(tuple(s)) is not None for s in node.sources)):
        return None
    scores = node.outputs[0]
    if scores.dtype != "f32" or not scores.is_static or len(scores.shape) < 2:
        return None
    nodes, last, scale = [node], node, 1.0
    hit = fc.sole_consumer(last, ("Multiply", "Divide"))
    if hit is not None and (hit[0].op_type == "Multiply" or hit[1] == 0):
        c = _scalar_operand(fc, hit[0], hit[1])
        if c is not None and c != 0.0:
            scale = c if hit[0].op_type == "Multiply" else 1.0 / c
            nodes.append(hit[0])
            last = hit[0]
    mask_src, mask = None, None
    hit = fc.sole_consumer(last, ("Add",))
    if hit is not None and _binary_numpy(hit[0]):
        other = fc.other_operand(hit[0], hit[1])
        info = None if other is None else fc.info(other)
        if (info is not None and info.dtype == "f32" and info.is_static
                and np.broadcast_shapes(info.shape, scores.shape) == tuple(scores.shape)):
            mask_src, mask = (other, None) if info.value is None else (None, info.value)
            nodes.append(hit[0])
            last = hit[0]
    hit = fc.sole_consumer(last, ("SoftMax",))
    if hit is None or hit[0].attrs.get("axis") not in (-1, len(scores.shape) - 1):
        return None
    nodes.append(hit[0])
    hit = fc.sole_consumer(hit[0], ("MatMul",))
    if hit is None or hit[1] != 0 or hit[0].attrs.get("transpose_a") or hit[0].attrs.get("transpose_b"):
        return None
    product = hit[0]
    v_src = fc.other_operand(product, 0)
    if v_src is None or fc.const(v_src) is not None or not fc.info(v_src).is_static:
        return None
    nodes.append(product)
    from ..ops import attention

    q_info, b_info, v_info = fc.info(tuple(node.sources[0])), fc.info(tuple(node.sources[1])), fc.info(v_src)
    if not (q_info.is_static and b_info.is_static) or not (q_info.shape[:-2] == b_info.shape[:-2] == v_info.shape[:-2]):
        return None
    # only heads the attention step runs in one attention_rows call (attention.small_plan's conditions): the
    # BLAS paths were slower than the layers' own steps, whose small batched products are one call each (Swin's
    # 32 windowed heads of 16 x 16 with a per-head bias: 23 us as layers, 31 as one step)
    mask_shape = fc.info(mask_src).shape if mask_src is not None else () if mask is None else mask.shape
    batch, (n_l, n_s), n_e, n_ev = scores.shape[:-2], scores.shape[-2:], q_info.shape[-1], v_info.shape[-1]
    mask_batch = ((1,) * len(scores.shape) + tuple(mask_shape))[-len(scores.shape):-2]
    if (len(batch) < 1 or math.prod(batch) * n_l * n_s * (n_e + n_ev) > attention.ATTENTION_ROWS_MAX
            or not (all(d == 1 for d in mask_batch) or mask_batch == batch)):
        return None
    keys_given = bool(node.attrs.get("transpose_b"))  # B is K itself, else K^T
    k_shape = b_info.shape if keys_given else b_info.shape[:-2] + (b_info.shape[-1], b_info.shape[-2])
    mask_value = np.zeros((), np.float32) if mask is None and mask_src is None else mask
    infos = [q_info, TensorInfo(tuple(k_shape), "f32"), v_info,
             TensorInfo(tuple(fc.info(mask_src).shape), "f32") if mask_src is not None
             else TensorInfo(mask_value.shape, "f32", mask_value),
             TensorInfo((), "f32", np.array(scale, np.float32))]
    attend = attention.ScaledDotProductAttention().build(NodeContext(product.layer, {"causal": False}, infos, 1))
    fixed = [] if mask_src is not None else [mask_value]
    scale_value = infos[4].value

    def keys(b: np.ndarray) -> np.ndarray:
        return b if keys_given else np.ascontiguousarray(np.swapaxes(b, -1, -2))

    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return attend([xs[0], keys(xs[1]), xs[2], *(xs[3:] or fixed), scale_value])

    fast = getattr(attend, "static_call", None)
    if fast is not None:
        def static_call(q: np.ndarray, b: np.ndarray, v: np.ndarray, m: np.ndarray | None = None) -> np.ndarray:
            return fast(q, keys(b), v) if m is None else fast(q, keys(b), v, m)
        run.static_call = static_call  # type: ignore[attr-defined]

    operands = [tuple(node.sources[0]), tuple(node.sources[1]), v_src] + ([mask_src] if mask_src is not None else [])
    # V (and a computed mask) may be computed after the first MatMul: the step runs where the last one ran
    return Fusion(nodes, operands, run, "+".join(n.op_type for n in nodes), place_last=True)


# ---- MobileViTv2's separable self-attention: VariadicSplit -> SoftMax / Multiply / ReduceSum / Relu / Multiply ----


def _only_user(fc: FuseContext, v: Value) -> tuple[Node, int] | None:
    """The one layer consuming value v (and at which input), when v is not kept as an output."""
    users = fc.consumers.get(v, [])
    if len(users) != 1 or v in fc.keep:
        return None
    return fc.graph.nodes[users[0][0]], users[0][1]


def separable_attention(fc: FuseContext, node: Node) -> Fusion | None:
    """MobileViTv2's separable self-attention as exports write it: a VariadicSplit of x [B, 1 + 2d, ..., N] along
    axis 1 into q [B, 1, ...], k and v [B, d, ...]; SoftMax(q) over the last axis; Multiply(k, that); ReduceSum over
    the last axis keeping it; Relu(v); Multiply(Relu(v), the sums).  Six steps of 1.3-2.8 us on its small maps,
    one Numba call here (kernels/softmax.py separable_attention: the same softmax rows; each product rounded,
    then summed in order).  f32 / f64 data, static shapes."""
    if node.op_type != "VariadicSplit" or len(node.outputs) != 3 or node.sources[0] is None:
        return None
    x = fc.info(tuple(node.sources[0]))
    if x.dtype not in ("f32", "f64") or not x.is_static or len(x.shape) < 3:
        return None
    axis, lengths = fc.const(tuple(node.sources[1])), fc.const(tuple(node.sources[2]))
    if axis is None or lengths is None or axis.size != 1 or int(axis.reshape(-1)[0]) % len(x.shape) != 1:
        return None
    last = len(x.shape) - 1
    sizes = [o.shape[1] if o.shape is not None else -1 for o in node.outputs]
    if sizes[0] != 1 or sizes[1] != sizes[2] or sizes[1] < 1:
        return None
    users = [_only_user(fc, (node.index, i)) for i in range(3)]
    if any(u is None for u in users):
        return None
    (softmax, _), (scale_k, k_port), (relu, _) = users
    if (softmax.op_type != "SoftMax" or softmax.attrs.get("axis") not in (-1, last) or relu.op_type != "Relu"
            or scale_k.op_type != "Multiply" or not _binary_numpy(scale_k)
            or fc.other_operand(scale_k, k_port) != (softmax.index, 0)):
        return None
    if _only_user(fc, (softmax.index, 0)) != (scale_k, 1 - k_port):
        return None
    hit = _only_user(fc, (scale_k.index, 0))
    if hit is None or hit[0].op_type != "ReduceSum" or not hit[0].attrs.get("keep_dims") or hit[1] != 0:
        return None
    reduce = hit[0]
    axes = fc.const(tuple(reduce.sources[1])) if len(reduce.sources) > 1 and reduce.sources[1] is not None else None
    if axes is None or axes.size != 1 or int(axes.reshape(-1)[0]) % len(x.shape) != last:
        return None
    hit = _only_user(fc, (reduce.index, 0))
    if hit is None or hit[0].op_type != "Multiply" or not _binary_numpy(hit[0]):
        return None
    product = hit[0]
    if fc.other_operand(product, hit[1]) != (relu.index, 0) or _only_user(fc, (relu.index, 0)) != (product,
                                                                                                  1 - hit[1]):
        return None
    from ..kernels.jit import entry
    from ..kernels.softmax import separable_attention as kernel

    d, dt = int(sizes[1]), ELEMENT_TYPES[x.dtype]
    x4 = (x.shape[0], x.shape[1], math.prod(x.shape[2:last]), x.shape[last])
    out_shape, out4 = tuple(product.outputs[0].shape), (x.shape[0], d, x4[2], x4[3])
    call = entry(kernel, np.empty(x4, dt), d, np.empty(out4, dt))

    def run(xs: Sequence[np.ndarray]) -> list[np.ndarray]:
        return [static_call(xs[0])]

    def static_call(a: np.ndarray) -> np.ndarray:
        out = np.empty(out_shape, dt)
        call(np.ascontiguousarray(a, dt).reshape(x4), d, out.reshape(out4))
        return out
    run.static_call = static_call  # type: ignore[attr-defined]  # the straight-line runner's form

    nodes = [node] + sorted((softmax, relu, scale_k, reduce), key=lambda n: n.index) + [product]
    return Fusion(nodes, [tuple(node.sources[0])], run, "VariadicSplit+SoftMax+Relu+Multiply+ReduceSum+Multiply")


def _reshape_then_activation(fc: FuseContext, node: Node) -> tuple[Node, tuple[int, ...], tuple] | None:
    """`node`'s sole consumer a Reshape / Squeeze / Unsqueeze with constant operands and a static output
    shape, whose sole consumer is an activation with constant parameters: (that layer, its output
    shape, _activation_after's answer).  An activation works element by element, so it may run before
    the reshape: on the product, in place."""
    users = fc.consumers.get((node.index, 0), [])
    if len(node.outputs) != 1 or len(users) != 1 or users[0][1] != 0 or (node.index, 0) in fc.keep:
        return None
    shaper = fc.graph.nodes[users[0][0]]
    if shaper.op_type not in ("Reshape", "Squeeze", "Unsqueeze") or len(shaper.outputs) != 1:
        return None
    if any(s is None or fc.const(tuple(s)) is None for s in shaper.sources[1:]):
        return None
    out = shaper.outputs[0]
    if out is None or out.shape is None or any(d < 0 for d in out.shape) or out.dtype != node.outputs[0].dtype:
        return None
    act = _activation_after(fc, shaper)
    return None if act is None else (shaper, tuple(out.shape), act)


RULES: tuple[FusionRule, ...] = (precision_converts, mvn_affine, rms_norm, l2_normalize, conv_bias_activation,
                                attention_written_out, matmul_bias_activation, norm_activation, residual_activation,
                                squeeze_excite, separable_attention, scale_chain)


def find_fusions(graph: Graph, live: set[int], keep: set[Value], order: list[Node]) -> dict[int, Fusion]:
    """{first covered node index: Fusion} for the live, unfolded layers in `order`; each layer is
    covered by at most one fusion."""
    fc = FuseContext(graph, live, keep)
    taken = fc.taken
    out: dict[int, Fusion] = {}
    for node in order:
        if node.index in taken:
            continue
        for rule in RULES:
            f = rule(fc, node)
            if f is not None and not any(n.index in taken for n in f.nodes):
                out[node.index] = f
                taken.update(n.index for n in f.nodes)
                break
    return out

