"""Can a model be split along axis 0?  The batch-axis analysis, at plan time (no Dask needed).

Running a model on chunks of rows and stacking the results equals running it on all rows only
when no layer lets one row's values reach another row's outputs.  This module proves that, or
refuses the model with IRN070 naming the first layer that mixes rows.

Every value in the checked graph gets a *state*:

* ``Batch(k)``: the tensor carries the batch axis at position ``k`` -- slicing the inputs' rows
  ``S`` slices this tensor's axis ``k`` to ``S`` as well, and nothing else in it changes;
* ``CONST``: does not depend on the inputs at all (a Const, a folded subgraph);
* ``Shape(elems)``: depends on the inputs' *shapes* only (a ShapeOf subgraph left unfolded because
  the batch dim is dynamic): its value changes with the chunk's row count, so it may steer a Reshape
  but never be mixed into data.  Where it can, the analysis follows its elements symbolically
  (``N`` for the chunk's row count, an int, or unknown) through Gather, Concat, Squeeze/Unsqueeze/
  Reshape and Convert, so the exporters' ``Reshape(x, Concat(Gather(ShapeOf(x), 0), -1))`` is seen
  to keep the rows;
* ``Mixed(reason)``: an output that mixes rows (MaxPool-8's flat indices); refused if used.

States start at the Parameters (``Batch(0)``) and flow in execution order through one rule per
operation type.  The rules are conservative: an operation without a rule refuses (IRN070, "irnorm.dask
does not know how X treats the batch axis"), and so does any rule that cannot prove its case from
the load-time shapes (a dynamic rank, a reshape whose inner dims are dynamic, ...).  A Result must
see ``Batch(0)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import Diagnostic, ValidationError
from ..ir.graph import Graph, Node
from ..ir.tensor import TensorInfo, fmt_shape

CODE = "IRN070"


@dataclass(frozen=True)
class Batch:
    axis: int


@dataclass(frozen=True)
class _Kind:
    name: str

    def __repr__(self) -> str:
        return self.name


CONST = _Kind("CONST")

N = "N"  # a Shape element equal to the chunk's number of rows
Elem = int | str | None  # known int, N, or unknown


@dataclass(frozen=True)
class Shape:
    elems: tuple[Elem, ...] | None = None  # a 0-D/1-D integer tensor's elements, if followed

    def __repr__(self) -> str:
        return f"SHAPE{list(self.elems) if self.elems is not None else ''}"


@dataclass(frozen=True)
class Mixed:
    reason: str


State = Batch | _Kind | Shape | Mixed


class Refuse(Exception):
    """Raised by a rule: this layer mixes rows (or the rule cannot prove that it does not)."""


@dataclass
class BatchPlan:
    """The outcome of a successful analysis: every value's state and the inputs' static batch dims."""

    states: dict[tuple[int, int], State] = field(default_factory=dict)
    static_rows: dict[str, int] = field(default_factory=dict)  # input name -> its static dim 0 (if any)


# ---- helpers the rules share --------------------------------------------------------------


def _rank(info: TensorInfo | None, what: str) -> int:
    if info is None or info.shape is None:
        raise Refuse(f"the rank of {what} is not known at load time")
    return len(info.shape)


def _const(info: TensorInfo, what: str) -> np.ndarray:
    if info.value is None:
        raise Refuse(f"{what} is not a constant")
    return np.asarray(info.value)


def _axes(info: TensorInfo, rank: int, what: str = "axes") -> set[int]:
    vals = [int(a) for a in _const(info, what).reshape(-1)]
    return {a % rank for a in vals} if rank else set()


def _prod(dims: Sequence[int]) -> int | None:
    n = 1
    for d in dims:
        if d < 0:
            return None
        n *= d
    return n


def _one_batch(states: Sequence[State], data: Sequence[int]) -> int:
    """The batch axis of the data operand(s); every other operand must be CONST."""
    ks = []
    for i, s in enumerate(states):
        if i in data:
            if not isinstance(s, Batch):
                raise Refuse(f"input {i} does not carry the batch axis ({s})")
            ks.append(s.axis)
        elif s is not CONST:
            raise Refuse(f"input {i} is not a constant; it would differ from chunk to chunk")
    if len(set(ks)) != 1:
        raise Refuse(f"the data inputs carry the batch axis at different positions {ks}")
    return ks[0]


def _at_front(k: int, what: str) -> None:
    if k != 0:
        raise Refuse(f"{what} treats axis 0 as the batch, but the batch axis is at position {k} here")


# ---- rules: node, input states, input infos -> output states ------------------------------

Rule = Callable[[Node, list[State], list[TensorInfo]], list[State]]


def _elementwise(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """numpy broadcasting: the batch inputs' axes align at one output position; every other input is
    a constant with size 1 (or no dim) there.  ``auto_broadcast=pdpd`` (an axis attribute) refuses."""
    mode = str(node.attrs.get("auto_broadcast", "numpy")).lower()
    if mode not in ("numpy", "none", "explicit"):
        raise Refuse(f"auto_broadcast={mode} is not supported")
    out_rank = _rank(node.outputs[0], "the output")
    pos = set()
    for i, s in enumerate(states):
        if isinstance(s, Batch):
            pos.add(s.axis + out_rank - _rank(infos[i], f"input {i}"))
    if len(pos) != 1:
        raise Refuse(f"its inputs carry the batch axis at different output positions {sorted(pos)}")
    p = pos.pop()
    for i, s in enumerate(states):
        if isinstance(s, Batch):
            continue
        if s is not CONST:
            raise Refuse(f"input {i} depends on the chunk's shape ({s}), so its values would differ by chunk")
        r = _rank(infos[i], f"input {i}")
        j = p - (out_rank - r)
        if 0 <= j < r and infos[i].shape[j] != 1:
            raise Refuse(f"constant input {i} {fmt_shape(infos[i].shape)} varies along the batch axis: row i "
                         f"would get element i of it, which depends on where the chunk starts")
    return [Batch(p)] * len(node.outputs)


def _first_data(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """Convert / ConvertLike: the data is input 0; ConvertLike's input 1 only gives a type."""
    s = states[0]
    if not isinstance(s, Batch):
        raise Refuse("input 0 does not carry the batch axis")
    return [s]


def _reduces(axes_of: Callable[[Node, list[TensorInfo], int], set[int]], *, keep_rank: bool = True,
             data_only: bool = True) -> Rule:
    """An operation computing over `axes` (statistics, windows, softmax): refused when they hold the
    batch axis; its other inputs must be constants (scale, bias, axes)."""

    def rule(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
        k = _one_batch(states, [0])
        r = _rank(infos[0], "the data")
        axes = axes_of(node, infos, r)
        if k in axes:
            raise Refuse(f"it computes over axes {sorted(axes)}, which include the batch axis {k}")
        if keep_rank:
            return [Batch(k)] * len(node.outputs)
        keep = bool(node.attrs.get("keep_dims", False))
        return [Batch(k if keep else k - sum(1 for a in axes if a < k))] * len(node.outputs)

    return rule


def _per_sample(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """Operations defined per sample of an [N, C, ...] input (GroupNormalization, BatchNormInference,
    pooling, convolution): the batch axis must be axis 0; the other inputs must be constants.  (The
    data is whichever input carries the batch axis: BatchNormInference-1 takes it third.)"""
    data = [i for i, st in enumerate(states) if isinstance(st, Batch)]
    if len(data) != 1:
        raise Refuse(f"inputs {data} all carry the batch axis; only the data may")
    k = _one_batch(states, data)
    _at_front(k, node.layer.type)
    return [Batch(0)] * len(node.outputs)


def _maxpool(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """MaxPool-8/14's second output holds flat indices, counted from axis `axis` (default 0): with
    axis 0 they count from the first row of the tensor, so they depend on where a chunk starts."""
    out = _per_sample(node, states, infos)
    if len(out) > 1:
        r = _rank(infos[0], "the data")
        if int(node.attrs.get("axis", 0)) % r == 0:
            out[1] = Mixed("its indices output counts elements from the first row of the whole batch "
                           "(axis=0); use axis=1")
    return out


def _mvn1_axes(node: Node, infos: list[TensorInfo], r: int) -> set[int]:
    given = node.attrs.get("reduction_axes") or ()
    if given:
        return {int(a) % r for a in given}
    return set(range(1 if node.attrs.get("across_channels") else 2, r))


def _input_axes(index: int) -> Callable[[Node, list[TensorInfo], int], set[int]]:
    return lambda node, infos, r: _axes(infos[index], r)


def _attr_axis(node: Node, infos: list[TensorInfo], r: int) -> set[int]:
    return {int(node.attrs["axis"]) % r}


def _layer_norm_axes(node: Node, infos: list[TensorInfo], r: int) -> set[int]:
    return set(range(int(node.attrs.get("axis", -1)) % r, r))


def _trt_norm_axes(node: Node, infos: list[TensorInfo], r: int) -> set[int]:
    mask = int(node.attrs["axes"])
    axes = {i for i in range(r) if mask >> i & 1}
    if int(node.attrs.get("num_groups", 1)) > 1:
        axes.add(1)  # the group statistics run over channels
    return axes


def _scale_axes(node: Node, infos: list[TensorInfo], r: int) -> set[int]:
    """Scale's coefficients index the axes from channel_axis on (channel / elementwise mode): those
    must not include the batch axis, or row i would get coefficient i."""
    mode = str(node.attrs.get("mode", "")).lower()
    if mode == "uniform":
        return set()
    ca = int(node.attrs.get("channel_axis", 1)) % r
    return {ca} if mode == "channel" else set(range(ca, r))


def _reshape(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """Reshape / Squeeze / Unsqueeze move elements in C order.  The batch axis k of the input keeps
    its rows at output position j when the dims before k and before j hold the same (static) number
    of elements, and so do the dims after them: then element (a, row, c) stays (a, row, c)."""
    s = states[0]
    if not isinstance(s, Batch):
        raise Refuse("input 0 does not carry the batch axis")
    for i in range(1, len(states)):
        if isinstance(states[i], Batch | Mixed):
            raise Refuse(f"input {i} (the target shape or axes) is computed from the data")
    k = s.axis
    src = infos[0].shape
    dst = node.outputs[0].shape if node.outputs[0] is not None else None
    if src is None or dst is None:
        raise Refuse("the rank of its input or output is not known at load time")
    before, after = _prod(src[:k]), _prod(src[k + 1:])
    if before is None or after is None:
        raise Refuse(f"it reshapes {fmt_shape(src)} -> {fmt_shape(dst)}: with dynamic dims besides the batch "
                     f"dim, irnorm.dask cannot prove the rows stay apart")
    for j in range(len(dst)):
        if _prod(dst[:j]) == before and _prod(dst[j + 1:]) == after and dst[j] == src[k]:
            return [Batch(j)]  # equal element counts around j, so dst[j] holds the rows
    if node.layer.type == "Reshape":
        j = _reshape_target(node, states[1], infos[1], src, k, before, after)
        if j is not None:
            return [Batch(j)]
    raise Refuse(f"it reshapes {fmt_shape(src)} -> {fmt_shape(dst)}, merging or splitting the batch axis {k}")


def _reshape_target(node: Node, state: State, info: TensorInfo, src: tuple[int, ...], k: int, before: int,
                    after: int) -> int | None:
    """A dynamic Reshape whose target's elements are followed: the target holds N (the chunk's rows,
    or a 0 copying the batch dim under special_zero) once, static dims before it holding `before`
    elements, and after it static dims (and at most one -1) holding `after`."""
    tgt = _elems(state, info)
    if tgt is None:
        return None
    zero = bool(node.attrs.get("special_zero", False))
    dims: list[Elem] = []
    for i, e in enumerate(tgt):
        if e == 0 and zero:
            e = N if i == k else (src[i] if i < len(src) and src[i] >= 0 else None)
        dims.append(e)
    js = [i for i, e in enumerate(dims) if e == N]
    if len(js) != 1:
        return None
    j = js[0]
    pre, post = dims[:j], dims[j + 1:]
    if not all(isinstance(e, int) and e >= 0 for e in pre) or _prod(pre) != before:
        return None
    known = [e for e in post if isinstance(e, int) and e >= 0]
    rest = [e for e in post if not (isinstance(e, int) and e >= 0)]
    p = _prod(known)
    if not rest and p == after:
        return j
    if rest == [-1] and p and after % p == 0:
        return j
    return None


def _transpose(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """Transpose moves the batch axis without mixing rows; Results must still see it at axis 0."""
    k = _one_batch(states, [0])
    r = _rank(infos[0], "the data")
    order = [int(a) for a in _const(infos[1], "the order").reshape(-1)] or list(range(r - 1, -1, -1))
    return [Batch([a % r for a in order].index(k))]


def _concat(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    k = _one_batch(states, list(range(len(states))))  # every input must carry the batch axis
    r = _rank(infos[0], "input 0")
    if int(node.attrs["axis"]) % r == k:
        raise Refuse("it concatenates along the batch axis")
    return [Batch(k)]


def _split(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """Split / VariadicSplit along another axis than the batch axis: every part keeps it."""
    k = _one_batch(states, [0])  # the axis and the lengths must be constants
    r = _rank(infos[0], "the data")
    if int(_const(infos[1], "the axis").reshape(-1)[0]) % r == k:
        raise Refuse("it splits along the batch axis")
    return [Batch(k)] * len(node.outputs)


def _pad(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """Pad with no padding on the batch axis keeps it (the pads and the value must be constants)."""
    k = _one_batch(states, [0])
    for i, what in ((1, "pads_begin"), (2, "pads_end")):
        pads = _const(infos[i], what).reshape(-1)
        if k < pads.size and int(pads[k]) != 0:
            raise Refuse(f"it pads the batch axis ({what}[{k}] = {int(pads[k])})")
    return [Batch(k)]


def _gather(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    if states[0] is CONST and isinstance(states[1], Batch):
        # a lookup into a constant table by row-carried indices (embeddings): out = data[:axis] + idx + data[axis+1:]
        k = _one_batch(states, [1])
        r = _rank(infos[0], "the data")
        axis = int(_const(infos[2], "the axis").reshape(-1)[0]) % r
        if int(node.attrs.get("batch_dims", 0)) != 0:
            raise Refuse("batch_dims != 0 is not supported")
        return [Batch(axis + k)]
    k = _one_batch(states, [0])  # indices and axis must be constants
    r = _rank(infos[0], "the data")
    axis = int(_const(infos[2], "the axis").reshape(-1)[0]) % r
    if axis == k:
        raise Refuse("it gathers along the batch axis")
    if axis < k:
        raise Refuse("it gathers along an axis before the batch axis")
    if int(node.attrs.get("batch_dims", 0)) != 0:
        raise Refuse("batch_dims != 0 is not supported")
    return [Batch(k)]


def _broadcast(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """Broadcast keeps the rows when the target shape (a constant) has 1 at the batch position
    (bidirectional mode: the output keeps the data's dim there)."""
    k = _one_batch(states, [0])
    mode = str(node.attrs.get("mode", "numpy")).lower()
    if mode != "bidirectional":
        raise Refuse(f"mode={mode} sets the batch dim from the target shape")
    target = [int(v) for v in _const(infos[1], "the target shape").reshape(-1)]
    r_in = _rank(infos[0], "the data")
    out_rank = max(r_in, len(target))
    p = k + out_rank - r_in
    j = p - (out_rank - len(target))
    if 0 <= j < len(target) and target[j] != 1:
        raise Refuse(f"the target shape {target} has {target[j]} at the batch position")
    return [Batch(p)]


def _matmul(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    """A [.., N, K] @ B [.., K, M] with B constant: the rows of A are independent (the batch axis may
    also be one of A's leading dims, if B has 1 or nothing there).  A batch axis in B, or on A's
    contracted dim, refuses."""
    k = _one_batch(states, [0])
    ra = _rank(infos[0], "input A")
    rb = _rank(infos[1], "input B")
    out_rank = _rank(node.outputs[0], "the output")
    if ra < 2:
        raise Refuse("input A is 1-D: the batch axis is contracted")
    ta = bool(node.attrs.get("transpose_a", False))
    contracted = ra - 2 if ta else ra - 1
    row = ra - 1 if ta else ra - 2
    if k == contracted:
        raise Refuse("it contracts the batch axis")
    if k == row:
        return [Batch(out_rank - 2)]
    p = k + out_rank - ra
    j = p - (out_rank - rb)
    if 0 <= j < rb - 2 and infos[1].shape[j] != 1:
        raise Refuse("input B varies along the batch axis")
    return [Batch(p)]


def _shape_of(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    k = states[0].axis
    shape = infos[0].shape
    if shape is None:
        return [Shape()]
    return [Shape(tuple(N if i == k else (int(d) if d >= 0 else None) for i, d in enumerate(shape)))]


def _elems(state: State, info: TensorInfo) -> tuple[Elem, ...] | None:
    if isinstance(state, Shape):
        return state.elems
    if info.value is not None and np.asarray(info.value).ndim <= 1 and np.asarray(info.value).dtype.kind in "iu":
        return tuple(int(v) for v in np.asarray(info.value).reshape(-1))
    return None


def _follow_shape(node: Node, states: list[State], infos: list[TensorInfo]) -> Shape:
    """A shape-only value's elements through the ops exporters use to build target shapes."""
    t = node.layer.type
    ins = [_elems(s, i) for s, i in zip(states, infos, strict=True)]
    out = node.outputs[0]
    try:
        if t in ("Convert", "Squeeze", "Unsqueeze", "Reshape") and ins[0] is not None:
            if out is not None and out.shape is not None and len(out.shape) <= 1:
                return Shape(ins[0])
        if t == "Gather" and ins[0] is not None and ins[1] is not None and ins[2] == (0,) \
                and int(node.attrs.get("batch_dims", 0)) == 0:
            n = len(ins[0])
            return Shape(tuple(ins[0][i % n] for i in ins[1]))
        if t == "Concat" and all(e is not None for e in ins) and int(node.attrs["axis"]) in (0, -1):
            return Shape(tuple(e for es in ins for e in es))
    except (TypeError, IndexError, ValueError, KeyError):
        pass
    return Shape()


UNARY = ("Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "BitwiseNot", "Ceiling", "Clamp", "Cos",
         "Cosh", "Elu", "Erf", "Exp", "Floor", "Gelu", "HSigmoid", "HSwish", "HardSigmoid", "IsFinite", "IsInf",
         "IsNaN", "Log", "LogicalNot", "Mish", "Negative", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin",
         "Sinh", "SoftPlus", "SoftSign", "Sqrt", "Swish", "Tan", "Tanh")
BINARY = ("Add", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Divide", "Equal", "FloorMod", "Greater", "GreaterEqual",
          "Less", "LessEqual", "LogicalAnd", "LogicalOr", "LogicalXor", "Maximum", "Minimum", "Mod", "Multiply",
          "NotEqual", "Power", "SquaredDifference", "Subtract", "Select", "FakeQuantize")

RULES: dict[str, Rule] = {
    **{t: _elementwise for t in UNARY + BINARY},
    "Convert": _first_data,
    "ConvertLike": _first_data,
    "MVN": lambda n, s, i: _reduces(_mvn1_axes if n.op.version == 1 else _input_axes(1))(n, s, i),
    "NormalizeL2": _reduces(_input_axes(1)),
    "LRN": _reduces(_input_axes(1)),
    "LayerNormalization": _reduces(_layer_norm_axes),
    "Normalization": _reduces(_trt_norm_axes),
    "Scale": _reduces(_scale_axes),
    "Softmax": _reduces(_attr_axis),
    "SoftMax": _reduces(_attr_axis),  # Softmax-1's spelling
    "LogSoftmax": _reduces(_attr_axis),
    "ReduceMean": _reduces(_input_axes(1), keep_rank=False),
    "ReduceSum": _reduces(_input_axes(1), keep_rank=False),
    "ReduceMax": _reduces(_input_axes(1), keep_rank=False),
    "ReduceMin": _reduces(_input_axes(1), keep_rank=False),
    "ReduceProd": _reduces(_input_axes(1), keep_rank=False),
    "ReduceL1": _reduces(_input_axes(1), keep_rank=False),
    "ReduceL2": _reduces(_input_axes(1), keep_rank=False),
    "ReduceLogicalAnd": _reduces(_input_axes(1), keep_rank=False),
    "ReduceLogicalOr": _reduces(_input_axes(1), keep_rank=False),
    "GroupNormalization": _per_sample,
    "BatchNormInference": _per_sample,
    "AvgPool": _per_sample,
    "MaxPool": _maxpool,
    "AdaptiveAvgPool": _per_sample,
    "AdaptiveMaxPool": _per_sample,  # its indices count within each plane
    "Convolution": _per_sample,
    "GroupConvolution": _per_sample,
    "Reshape": _reshape,
    "Squeeze": _reshape,
    "Unsqueeze": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "Gather": _gather,
    "Split": _split,
    "VariadicSplit": _split,
    "Pad": _pad,
    "Broadcast": _broadcast,
    "MatMul": _matmul,
    "ShapeOf": _shape_of,
}
# Op types are case-insensitive (OpenVINO writes "ReLU" for the op its specs call Relu, "SoftMax" for Softmax-1)
_RULES_BY_LOWER = {t.lower(): r for t, r in RULES.items()}


# ---- the pass ----------------------------------------------------------------------------


def _refusal(graph: Graph, node: Node, reason: str) -> Diagnostic:
    return Diagnostic(CODE, f"cannot split this model along the batch axis (axis 0): {reason}",
                      **node.layer.where(graph.path))


def _node_states(node: Node, states: list[State], infos: list[TensorInfo]) -> list[State]:
    if all(o is not None and o.value is not None for o in node.outputs):
        return [CONST] * len(node.outputs)  # folded at load time
    for i, s in enumerate(states):
        if isinstance(s, Mixed):
            raise Refuse(f"input {i} mixes rows: {s.reason}")
    if not any(isinstance(s, Batch) for s in states):
        # no row data flows in: the value depends on constants (CONST) or on shapes only (Shape)
        if not any(isinstance(s, Shape) for s in states):
            return [CONST] * len(node.outputs)
        return [_follow_shape(node, states, infos)] * len(node.outputs)
    rule = _RULES_BY_LOWER.get(node.layer.type.lower())
    if rule is None:
        raise Refuse(f"irnorm.dask does not know how {node.layer.type} treats the batch axis")
    try:
        out = rule(node, states, infos)
    except Refuse:
        raise
    except (KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, AttributeError) as e:
        raise Refuse(f"irnorm.dask cannot tell how this {node.layer.type} treats the batch axis "
                     f"({type(e).__name__}: {e})") from None
    if len(out) != len(node.outputs):
        out = [out[0]] * len(node.outputs)
    return out


def analyze(graph: Graph) -> BatchPlan:
    """Every value's state; raises ValidationError IRN070 (one diagnostic per layer that mixes rows,
    in execution order) when the model cannot be split along axis 0."""
    plan = BatchPlan()
    st = plan.states
    diags: list[Diagnostic] = []
    poisoned: set[int] = set()
    params = set(graph.parameters)
    live: set[int] = set()  # what the outputs depend on: a dangling layer never runs
    stack = list(graph.results)
    while stack:
        i = stack.pop()
        if i not in live:
            live.add(i)
            stack.extend(s[0] for s in graph.nodes[i].sources if s is not None)
    for node in graph.nodes:
        if node.op is None or (node.index not in live and node.index not in params):
            continue
        srcs = [s for s in node.sources if s is not None]
        infos = [graph.nodes[s[0]].outputs[s[1]] for s in srcs]
        if node.index in params:
            info = node.outputs[0]
            if info.shape is None or len(info.shape) == 0:
                diags.append(_refusal(graph, node, f"input '{node.layer.name}' has shape {fmt_shape(info.shape)}: "
                                                   f"it needs a leading batch axis"))
                poisoned.add(node.index)
                continue
            st[(node.index, 0)] = Batch(0)
            if info.shape[0] >= 0:
                plan.static_rows[node.layer.name] = info.shape[0]
            continue
        if any(s[0] in poisoned for s in srcs):
            poisoned.add(node.index)  # refused upstream: say it once
            continue
        if node.op_type == "ReadValue":
            var = node.attrs.get("variable_id")
            diags.append(_refusal(graph, node, f"variable {var!r} carries values from one call to the next: chunks "
                                               "run as separate calls would read each other's state"))
            poisoned.add(node.index)
            continue
        states = [st[s] for s in srcs]
        if node.op_type == "Result":
            s = states[0]
            if s != Batch(0):
                why = (f"the output carries the batch axis at position {s.axis}, not 0" if isinstance(s, Batch)
                       else s.reason if isinstance(s, Mixed) else "the output does not depend on the input rows")
                diags.append(_refusal(graph, node, why))
            continue
        try:
            outs = _node_states(node, states, infos)
        except Refuse as e:
            diags.append(_refusal(graph, node, str(e)))
            poisoned.add(node.index)
            continue
        for k, s in enumerate(outs):
            st[(node.index, k)] = s
    if diags:
        raise ValidationError(diags)
    return plan
