"""TensorIterator-1 and Loop-5: run one sub-graph (``<body>``) again and again.

The layer holds ``<body>`` (a network of its own), ``<port_map>`` and ``<back_edges>``.  Port map entries:

* ``<input external_port_id=P internal_layer_id=L [axis start end stride part_size]/>``: the layer's input port
  P feeds the body's Parameter L -- sliced along `axis` (one part per iteration) when `axis` is given, else
  whole: a *merged* input when a back edge ends at L (the first iteration reads P, each later one the value the
  back edge's Result had), otherwise an *invariant* one (every iteration reads P).
* ``<output external_port_id=P internal_layer_id=L [axis start end stride part_size]/>``: output port P is the
  body's Result L -- its value at the last iteration, or, with `axis`, every iteration's value concatenated
  along `axis` (in iteration order, reversed when `stride` < 0).
* Loop only, ``external_port_id="-1"``: ``purpose="current_iteration"`` on an input (the Parameter reads the
  iteration's index, from 0) and ``purpose="execution_condition"`` on an output (the Result, boolean, decides
  whether another iteration runs).  Loop's inputs 0 (trip_count: i32/i64, one element, -1 = no limit) and 1
  (execution_condition: boolean, one element, checked before the first iteration) are never mapped.
* ``<back_edges><edge from-layer=R to-layer=L/></back_edges>``: Result R feeds Parameter L on the next
  iteration.

``irnorm.check.check_bodies`` checks the body as a document (same weights file) and attaches it as ``__body``,
its port map as ``__port_map`` and its back edges as ``__back_edges``; the kernel runs the body through the
runtime's own loader (``NodeContext.subgraph``), which re-checks the body's shape rules at every new input
shape (a merged value may change shape between iterations only in the dims its Parameter declares dynamic).

Slicing, as far as OpenVINO's spec and its CPU plugin agree (elsewhere irnorm refuses the file, IRN023): each
part is `part_size` elements along `axis` and `part_size` must equal |`stride`| (the CPU plugin cuts |stride|
elements, the shape rule part_size); `start` / `end` count from the end when negative, -1 being the last
element, both ends included; a forward slice (stride > 0) starts at 0 and ends at a negative `end` (-1: the
whole axis, -2: all but the last element, ...); a reversed one (stride < 0) starts at -1 (the last part first)
and ends at a non-negative `end`.  (The CPU plugin ignores `start` when cutting: it always begins at the
axis's first, or reversed last, element.)  A concatenated output covers every iteration: start 0 / end -1, or
reversed start -1 / end 0; each iteration's value must be `part_size` long on `axis` (a scalar value becomes
one element, axis 0).

Bounds: a TensorIterator runs as many iterations as its sliced inputs have parts (it needs one: without, its
count comes from nowhere irnorm trusts); a Loop runs until trip_count, its condition or its sliced inputs end
(running past a sliced input is an error, as on OpenVINO's CPU plugin), and at most ``IRNORM_MAX_LOOP_ITERATIONS``
iterations (default 1,000,000): a Loop whose file says "no limit" and whose condition never turns false stops
with IRN064 rather than hang.  Concatenated outputs count against the model's memory limit (IRN051) as they
grow.  A Loop that runs no iteration (trip_count 0, condition false) gives each merged value's initial value,
empty concatenations (when the body's value has a static shape) and refuses other outputs (IRN064; OpenVINO's
CPU plugin returns whatever its buffer held).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import ArgumentError, Diagnostic, IrnormError, ResourceLimitError
from ..ir.dtypes import ELEMENT_TYPES
from ..ir.tensor import TensorInfo
from .base import Kernel, NodeContext, Op, fail, fmt_shape, register, runtime_error
from .control import _in_body, check_port_map_complete, port_lookups, result_info

ITERATIONS_ENV = "IRNORM_MAX_LOOP_ITERATIONS"
DEFAULT_MAX_ITERATIONS = 1_000_000
_INT_RE = re.compile(r"^[+-]?[0-9]{1,18}$")
_SLICE_KEYS = ("axis", "start", "end", "stride", "part_size")
_SLICE_DEFAULTS = {"start": 0, "end": -1, "stride": 1, "part_size": 1}


def max_iterations() -> int:
    """The most iterations a Loop may run: ``IRNORM_MAX_LOOP_ITERATIONS`` (read at every run), else 1,000,000."""
    text = os.environ.get(ITERATIONS_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_ITERATIONS
    if not _INT_RE.match(text) or int(text) < 1:
        raise ArgumentError(f"{ITERATIONS_ENV}={text[:40]!r} must be a positive integer")
    return int(text)


@dataclasses.dataclass(frozen=True)
class Slicing:
    """A sliced input's or a concatenated output's port map attributes."""

    axis: int
    start: int
    end: int
    stride: int
    part_size: int

    def parts(self, dim: int) -> tuple[int, int] | None:
        """(first element, number of parts) along an axis of `dim` elements; None when the range is empty or
        the parts do not tile it."""
        hi = self.end + dim if self.end < 0 else self.end
        lo = self.start + dim if self.start < 0 else self.start
        if self.stride < 0:
            lo, hi = hi, lo
        n, rem = divmod(hi - lo + 1, self.part_size)
        if lo < 0 or hi >= dim or n < 1 or rem:
            return None
        return lo, n

    def take(self, x: np.ndarray, first: int, n: int, k: int) -> np.ndarray:
        """Part `k` (in iteration order) of `x`."""
        idx = k if self.stride > 0 else n - 1 - k
        at = first + idx * self.part_size
        index = [slice(None)] * x.ndim
        index[self.axis] = slice(at, at + self.part_size)
        return np.ascontiguousarray(x[tuple(index)])


@dataclasses.dataclass
class Spec:
    """A TensorIterator's or Loop's port map, resolved against its body."""

    body: Any  # the checked body Graph
    # for each body Parameter in order: (kind, operand index), kind one of "sliced", "merged", "invariant",
    # "iteration" (Loop's current_iteration: operand -1)
    feeds: list[tuple[str, int]]
    slicing: dict[int, Slicing]  # body Parameter position -> its slicing
    back: dict[int, int]  # body Parameter position -> the body Result position that feeds it back
    outs: list[tuple[int, Slicing | None]]  # for each output: (body Result position, concatenation or None)
    cond: int | None  # Loop: the body Result position of the condition


def _slicing(e: Any, pm: str) -> Slicing | None:
    if "axis" not in e.extra:
        for k in _SLICE_KEYS[1:]:
            if k in e.extra:
                raise fail("IRN020", f"<{pm}> line {e.line}: '{k}' without 'axis'")
        return None
    vals = {}
    for k in _SLICE_KEYS:
        text = e.extra.get(k)
        if text is None:
            vals[k] = _SLICE_DEFAULTS[k]
            continue
        if not _INT_RE.match(text.strip()):
            raise fail("IRN021", f"<{pm}> line {e.line}: {k}={text[:40]!r} is not an integer")
        vals[k] = int(text)
    s = Slicing(**vals)
    where = f"<{pm}> line {e.line}"
    if s.axis < 0:
        raise fail("IRN023", f"{where}: axis {s.axis} must not be negative")
    if s.stride == 0:
        raise fail("IRN023", f"{where}: stride 0 never advances")
    if s.part_size < 1:
        raise fail("IRN023", f"{where}: part_size {s.part_size} must be at least 1")
    if s.part_size != abs(s.stride):
        raise fail("IRN023", f"{where}: part_size {s.part_size} with stride {s.stride}: irnorm needs part_size = "
                             "|stride| (OpenVINO's CPU plugin cuts |stride| elements, its shape rule part_size)")
    return s


def _check_range(s: Slicing, where: str, output: bool) -> None:
    if output:
        ok = (s.start, s.end) == ((0, -1) if s.stride > 0 else (-1, 0))
        want = "start 0, end -1 (reversed: start -1, end 0)"
    else:
        ok = (s.start == 0 and s.end < 0) if s.stride > 0 else (s.start == -1 and s.end >= 0)
        want = "start 0 and a negative end (reversed: start -1 and an end >= 0)"
    if not ok:
        raise fail("IRN023", f"{where}: start {s.start}, end {s.end}, stride {s.stride}: irnorm supports {want}, "
                             "where OpenVINO's spec and its CPU plugin agree")


def spec_of(layer: Any, attrs: dict[str, Any], loop: bool) -> Spec:
    """The layer's port map and back edges resolved against its body; IRN013 / IRN020-023 for those that do
    not fit the layer or the body."""
    body = attrs["__body"]
    entries = attrs["__port_map"]
    edges = attrs.get("__back_edges") or []
    in_index, out_index, by_id, param_pos, result_pos = port_lookups(layer, body)
    feeds: list[tuple[str, int] | None] = [None] * len(body.parameters)
    slicing: dict[int, Slicing] = {}
    outs: list[tuple[int, Slicing | None] | None] = [None] * len(layer.outputs)
    cond = None
    first_data = 2 if loop else 0
    pm = "port_map"
    for e in entries:
        where = f"<{pm}> line {e.line}"
        if e.internal_layer_id not in by_id:
            raise fail("IRN013", f"{where}: the body has no layer {e.internal_layer_id}")
        purpose = e.extra.get("purpose")
        if purpose is not None and (not loop or purpose not in ("current_iteration", "execution_condition")):
            raise fail("IRN013", f"{where}: purpose={purpose!r} is not one a {layer.type} knows")
        if e.kind == "input":
            k = param_pos.get(e.internal_layer_id)
            if k is None:
                raise fail("IRN013", f"{where}: layer {e.internal_layer_id} of the body is not a Parameter")
            if feeds[k] is not None:
                raise fail("IRN013", f"<{pm}>: Parameter {e.internal_layer_id} of the body is mapped twice")
            if purpose == "current_iteration":
                feeds[k] = ("iteration", -1)
                continue
            if purpose is not None:
                raise fail("IRN013", f"{where}: purpose={purpose!r} belongs on an <output>")
            if e.external_port_id not in in_index or in_index[e.external_port_id] < first_data:
                extra = " (ports 0 and 1, trip_count and execution_condition, are never mapped)" if loop else ""
                raise fail("IRN013", f"{where}: input port {e.external_port_id} is not a data input of the "
                                     f"{layer.type}{extra}")
            s = _slicing(e, pm)
            if s is not None:
                _check_range(s, where, output=False)
                slicing[k] = s
            feeds[k] = ("sliced" if s is not None else "invariant", in_index[e.external_port_id])
        else:
            k = result_pos.get(e.internal_layer_id)
            if k is None:
                raise fail("IRN013", f"{where}: layer {e.internal_layer_id} of the body is not a Result")
            if purpose == "execution_condition":
                if cond is not None:
                    raise fail("IRN013", f"<{pm}>: two execution_condition outputs")
                cond = k
                continue
            if purpose is not None:
                raise fail("IRN013", f"{where}: purpose={purpose!r} belongs on an <input>")
            if e.external_port_id not in out_index:
                raise fail("IRN013", f"{where}: the {layer.type} has no output port {e.external_port_id}")
            if outs[out_index[e.external_port_id]] is not None:
                raise fail("IRN013", f"<{pm}>: output port {e.external_port_id} is mapped twice")
            s = _slicing(e, pm)
            if s is not None:
                _check_range(s, where, output=True)
            outs[out_index[e.external_port_id]] = (k, s)
    back: dict[int, int] = {}
    for be in edges:
        where = f"<back_edges> line {be.line}"
        for lid in (be.from_layer, be.to_layer):
            if lid not in by_id:
                raise fail("IRN013", f"{where}: the body has no layer {lid}")
        r = result_pos.get(be.from_layer)
        if r is None:
            raise fail("IRN013", f"{where}: from-layer {be.from_layer} of the body is not a Result")
        p = param_pos.get(be.to_layer)
        if p is None:
            raise fail("IRN013", f"{where}: to-layer {be.to_layer} of the body is not a Parameter")
        if p in back:
            raise fail("IRN013", f"{where}: Parameter {be.to_layer} of the body is the end of two back edges")
        f = feeds[p]
        if f is None or f[0] != "invariant":
            what = {None: "no input of the layer gives it a first value", "sliced": "it is a sliced input",
                    "iteration": "it is the current_iteration input"}[None if f is None else f[0]]
            raise fail("IRN013", f"{where}: Parameter {be.to_layer} cannot be fed back: {what}")
        feeds[p] = ("merged", f[1])
        back[p] = r
    check_port_map_complete(layer, body, feeds, outs, owner=layer.type, tag="body", pm=pm)
    return Spec(body, feeds, slicing, back, outs, cond)  # type: ignore[arg-type]


def _param_info(body: Any, k: int) -> tuple[Any, TensorInfo]:
    node = body.nodes[body.parameters[k]]
    return node, node.outputs[0]


def _fits(given: tuple[int, ...] | None, declared: tuple[int, ...] | None) -> bool:
    """Same rank and no static dim that differs (a dynamic dim on either side fits)."""
    if given is None or declared is None:
        return True
    return len(given) == len(declared) and all(g == d or g < 0 or d < 0 for g, d in zip(given, declared,
                                                                                         strict=True))


def _one_element(info: TensorInfo, what: str, dtypes: tuple[str, ...]) -> None:
    if info.dtype not in dtypes:
        raise fail("IRN033", f"{what} must be {' or '.join(dtypes)}, got {info.dtype}")
    s = info.shape
    if s is not None and (len(s) > 1 or (len(s) == 1 and s[0] not in (1, -1))):
        raise fail("IRN032", f"{what} must be a scalar or hold one element, got {fmt_shape(s)}")


def _infer(ctx: NodeContext, loop: bool) -> list[TensorInfo]:
    spec = spec_of(ctx.layer, ctx.attrs, loop)
    body = spec.body
    counts: set[int] = set()
    for k, (kind, operand) in enumerate(spec.feeds):
        param, declared = _param_info(body, k)
        pname = f"Parameter {param.layer.id} '{param.layer.name}' of the body"
        if kind == "iteration":
            _one_element(declared, f"the current_iteration {pname}", ("i32", "i64"))
            continue
        given = ctx.inputs[operand]
        if given.dtype != declared.dtype:
            raise fail("IRN031", f"input {operand} is {given.dtype} but feeds {pname}, declared {declared.dtype}")
        shape = given.shape
        if kind == "sliced":
            s = spec.slicing[k]
            if shape is not None:
                if s.axis >= len(shape):
                    raise fail("IRN023", f"input {operand} {fmt_shape(shape)} is sliced on axis {s.axis}, out of "
                                         "range")
                if shape[s.axis] >= 0:
                    got = s.parts(shape[s.axis])
                    if got is None:
                        raise fail("IRN032", f"input {operand}: axis {s.axis} of {fmt_shape(shape)} does not hold "
                                             f"whole parts of {s.part_size} from {s.start} to {s.end}")
                    counts.add(got[1])
                shape = shape[:s.axis] + (s.part_size,) + shape[s.axis + 1:]
        if not _fits(shape, declared.shape):
            raise fail("IRN030", f"input {operand} gives {pname} {fmt_shape(shape)}, declared "
                                 f"{fmt_shape(declared.shape)}")
    for p, r in spec.back.items():
        param, declared = _param_info(body, p)
        res = result_info(body, r)
        pname = f"Parameter {param.layer.id} '{param.layer.name}'"
        if res.dtype != declared.dtype:
            raise fail("IRN031", f"the back edge to {pname} carries {res.dtype}, the Parameter is "
                                 f"{declared.dtype}")
        if not _fits(res.shape, declared.shape):
            raise fail("IRN030", f"the back edge to {pname} carries {fmt_shape(res.shape)}, the Parameter is "
                                 f"declared {fmt_shape(declared.shape)} (a merged value may change shape only in "
                                 "the dims its Parameter declares dynamic)")
    if len(counts) > 1:
        raise fail("IRN032", f"the sliced inputs give different numbers of iterations: {sorted(counts)}")
    n: int | None = next(iter(counts)) if counts else None
    if loop:
        trip, first = ctx.inputs[0], ctx.inputs[1]
        _one_element(trip, "trip_count (input 0)", ("i32", "i64"))
        _one_element(first, "execution_condition (input 1)", ("boolean",))
        if spec.cond is not None:
            _one_element(result_info(body, spec.cond), "the body's execution_condition Result", ("boolean",))
        n = _loop_count(trip, first, None if spec.cond is None else result_info(body, spec.cond), n)
    elif not spec.slicing:
        raise fail("IRN032", "a TensorIterator needs a sliced input (its number of iterations comes from it)")
    outs = []
    for k, (r, s) in enumerate(spec.outs):
        res = result_info(body, r)
        if s is None:
            outs.append(TensorInfo(res.shape, res.dtype))
            continue
        shape = res.shape
        if shape is not None:
            if len(shape) == 0:
                shape = (1,)
            if s.axis >= len(shape):
                raise fail("IRN023", f"output {k}: axis {s.axis} is out of range for the body's "
                                     f"{fmt_shape(res.shape)}")
            if shape[s.axis] >= 0 and shape[s.axis] != s.part_size:
                raise fail("IRN032", f"output {k}: the body's value {fmt_shape(res.shape)} is {shape[s.axis]} long "
                                     f"on axis {s.axis}, the concatenation takes parts of {s.part_size}")
            shape = shape[:s.axis] + (n * s.part_size if n is not None else -1,) + shape[s.axis + 1:]
        outs.append(TensorInfo(shape, res.dtype))
    return outs


def _loop_count(trip: TensorInfo, first: TensorInfo, cond: TensorInfo | None, slices: int | None) -> int | None:
    """A Loop's number of iterations when it is known at load time, else None."""
    if first.value is not None and not bool(np.asarray(first.value).reshape(-1)[0]):
        return 0
    if trip.value is None or first.value is None:
        return None
    t = int(np.asarray(trip.value).reshape(-1)[0])
    if t == 0:
        return 0
    if cond is not None and (cond.value is None or not bool(np.asarray(cond.value).reshape(-1)[0])):
        return None if cond.value is None else 1
    if t < 0 or (slices is not None and t > slices):
        return None  # no limit (or past the slices): the run decides (and fails)
    return t


def iterate(spec: Spec, ins: Sequence[np.ndarray], run_body: Callable[[list[np.ndarray]], list[np.ndarray]],
            layer: Any, loop: bool, memory_limit: Callable[[], int] | None = None) -> list[np.ndarray]:
    """Run the iterations (the kernel with the runtime's body, the float64 reference with its own)."""
    body = spec.body
    sliced = {}
    for k, s in spec.slicing.items():
        x = ins[spec.feeds[k][1]]
        got = s.parts(x.shape[s.axis]) if s.axis < x.ndim else None
        if got is None:
            raise runtime_error(layer, f"input {spec.feeds[k][1]} {list(x.shape)} does not hold whole parts of "
                                       f"{s.part_size} on axis {s.axis} from {s.start} to {s.end}")
        sliced[k] = (s, x, *got)
    parts = {v[3] for v in sliced.values()}
    if len(parts) > 1:
        raise runtime_error(layer, f"the sliced inputs give different numbers of iterations: {sorted(parts)}")
    n_slices = next(iter(parts)) if parts else None
    if loop:
        for i, what in ((0, "trip_count"), (1, "execution_condition")):
            if ins[i].size != 1:
                raise runtime_error(layer, f"{what} (input {i}) must hold one element, got shape {list(ins[i].shape)}")
        trip = int(ins[0].reshape(-1)[0])
        go = bool(ins[1].reshape(-1)[0])
        ceiling = max_iterations()
    else:
        trip, go, ceiling = n_slices or 0, True, None
    state: list[np.ndarray | None] = [None if kind in ("sliced", "iteration") else ins[op] for kind, op in spec.feeds]
    collected: list[list[np.ndarray]] = [[] for _ in spec.outs]
    held = 0
    last: list[np.ndarray] | None = None
    i = 0
    while go and (trip < 0 or i < trip):
        if ceiling is not None and i >= ceiling:
            raise runtime_error(layer, f"the Loop reached {ceiling} iterations without its condition turning false "
                                       f"(trip_count {trip}); raise {ITERATIONS_ENV} to let it run longer")
        if n_slices is not None and i >= n_slices:
            raise runtime_error(layer, f"the Loop runs past its sliced inputs' {n_slices} parts (trip_count {trip})")
        args = []
        for k, (kind, _) in enumerate(spec.feeds):
            if kind == "sliced":
                s, x, first, n = sliced[k]
                args.append(s.take(x, first, n, i))
            elif kind == "iteration":
                declared = _param_info(body, k)[1]
                args.append(np.full(() if declared.shape == () else (1,), i,
                                    ELEMENT_TYPES[declared.dtype]))
            else:
                args.append(state[k])
        outs = run_body(args)
        for j, (r, s) in enumerate(spec.outs):
            if s is None:
                continue
            v = outs[r].reshape(1) if outs[r].ndim == 0 else outs[r]
            if s.axis >= v.ndim or v.shape[s.axis] != s.part_size:
                raise runtime_error(layer, f"output {j}: iteration {i} gives {list(outs[r].shape)}, the "
                                           f"concatenation takes parts of {s.part_size} on axis {s.axis}")
            if collected[j] and v.shape != collected[j][0].shape:
                raise runtime_error(layer, f"output {j}: iteration {i} gives {list(v.shape)}, iteration 0 gave "
                                           f"{list(collected[j][0].shape)} (the parts must concatenate)")
            held += v.nbytes
            collected[j].append(v)
        if memory_limit is not None and held > memory_limit():
            raise ResourceLimitError(Diagnostic(
                "IRN051", f"the {layer.type}'s concatenated outputs need more than the memory limit "
                          f"({memory_limit()} bytes) after {i + 1} iterations", **layer.where(None)))
        if spec.cond is not None:
            c = outs[spec.cond]
            if c.size != 1:
                raise runtime_error(layer, f"the body's condition must hold one element, got {list(c.shape)}")
            go = bool(c.reshape(-1)[0])
        for p, r in spec.back.items():
            state[p] = outs[r]
        last = outs
        i += 1
    results = []
    back_of = {r: p for p, r in spec.back.items()}
    for j, (r, s) in enumerate(spec.outs):
        if s is not None and collected[j]:
            parts_ = collected[j] if s.stride > 0 else collected[j][::-1]
            results.append(np.concatenate(parts_, axis=s.axis))
        elif s is not None:
            info = result_info(body, r)
            shape = (1,) if info.shape == () else info.shape
            if shape is None or any(d < 0 for d in shape):
                raise runtime_error(layer, f"output {j}: the {layer.type} ran no iteration and the body's value "
                                           f"has no static shape ({fmt_shape(info.shape)})")
            shape = shape[:s.axis] + (0,) + shape[s.axis + 1:]
            results.append(np.zeros(shape, ELEMENT_TYPES[info.dtype]))
        elif last is not None:
            results.append(last[r])
        elif r in back_of:
            results.append(np.array(ins[spec.feeds[back_of[r]][1]], copy=True))
        else:
            raise runtime_error(layer, f"output {j}: the {layer.type} ran no iteration, and the body's Result "
                                       "has no value (it is not fed back to a merged input)")
    return results


class _Iterating(Op):
    bodies: ClassVar[tuple[str, ...]] = ("body",)
    back_edges: ClassVar[bool] = True
    foldable = False  # a body runs through the runtime's loader, which a check does not have
    loop: ClassVar[bool] = False

    def infer(self, ctx: NodeContext) -> list[TensorInfo]:
        return _infer(ctx, self.loop)

    def build(self, ctx: NodeContext) -> Kernel:
        if ctx.subgraph is None:
            raise RuntimeError(f"{self.type} needs the runtime's sub-graph loader (NodeContext.subgraph)")
        layer = ctx.layer
        spec = spec_of(layer, ctx.attrs, self.loop)
        try:
            body = ctx.subgraph(spec.body)
        except IrnormError as e:  # e.g. the body's plan over the memory limit (IRN051)
            raise _in_body(e, layer, "body") from None
        limit = getattr(body, "memory_limit", None)
        loop = self.loop

        def run_body(arrays: list[np.ndarray]) -> list[np.ndarray]:
            try:
                return body(arrays)
            except IrnormError as e:
                raise _in_body(e, layer, "body") from None

        def run(ins):
            return iterate(spec, ins, run_body, layer, loop, limit)

        return run


@register
class TensorIterator1(_Iterating):
    type = "TensorIterator"
    version = 1
    opsets = (1, None)
    inputs = (1, 1 << 10)
    outputs = (1, 1 << 10)
    doc = ("data inputs: runs <body> once per part of its sliced inputs; <port_map> maps inputs to body "
           "Parameters (sliced along an axis, merged through <back_edges>, or invariant) and body Results to "
           "outputs (the last iteration's value, or every iteration's concatenated).")


@register
class Loop5(_Iterating):
    type = "Loop"
    version = 5
    opsets = (5, None)
    inputs = (2, 1 << 10)
    outputs = (1, 1 << 10)
    loop = True
    doc = ("trip_count (i32/i64, -1: no limit), execution_condition (boolean), data inputs: runs <body> while "
           "the condition holds, at most trip_count times and at most IRNORM_MAX_LOOP_ITERATIONS (default "
           "1,000,000); port map as TensorIterator's, plus the body's current_iteration Parameter and "
           "execution_condition Result.")
