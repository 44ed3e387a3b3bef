"""Stage 3: plan a checked graph -- what runs (folded constants never do), each step's kernel, when
each intermediate dies, and the memory a run needs at given input shapes (checked before anything
is allocated)."""

from __future__ import annotations

import itertools
import linecache
import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..check.types import ABSURD_BYTES
from ..errors import Diagnostic, InputError, IrnormError, ResourceLimitError, RuleError
from ..ir.dtypes import ELEMENT_TYPES
from ..ir.graph import Graph, Node
from ..ir.tensor import TensorInfo, fmt_shape
from ..ops.base import NodeContext

Value = tuple[int, int]  # (node index, output index)


def default_max_memory() -> int:
    """Three quarters of physical memory (the default for --max-memory)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def fmt_bytes(n: int) -> str:
    """1536 -> '1.5 KiB': sizes in messages stay readable from bytes to TiB."""
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):.1f} {unit}"
    return f"{n} bytes"


def nbytes(shape: Sequence[int] | None, dtype: str) -> int:
    """Bytes of a tensor; a shape that depends on run-time values (None, or -1 dims even with the
    inputs' shapes known: NonZero, axes given as inputs) counts as 0, since it cannot be known here."""
    if shape is None:
        return 0
    n = ELEMENT_TYPES[dtype].itemsize if dtype in ELEMENT_TYPES else 8
    for d in shape:
        n *= max(d, 0)
    return n


@dataclass
class Step:
    node: Node  # the layer whose outputs the step produces (the last one of a fused chain)
    kernel: Any
    args: list[Value]  # the operands
    frees: list[Value]  # values dead after this step
    covers: list[Node] | None = None  # a fused step: every layer it stands for, in order (runtime/fuse.py)
    label: str = ""  # a fused step: e.g. "MVN+Multiply+Add"
    # the flat form execute() runs (Plan.assign_slots): the operand list with constants already in
    # place, the (position, slot) of each runtime operand, the slots of the outputs, the slots to free
    argv: list[Any] | None = None
    arg_slots: tuple[tuple[int, int], ...] = ()
    out_slots: tuple[int, ...] = ()
    free_slots: tuple[int, ...] = ()

    @property
    def nodes(self) -> list[Node]:
        return self.covers or [self.node]


@dataclass
class Plan:
    """The steps in execution order, the folded constants they read, and the model's output values."""

    graph: Graph
    steps: list[Step]
    constants: dict[Value, np.ndarray]
    outputs: list[Value]
    slot_of: dict[Value, int] | None = None  # runtime value -> its slot in execute()'s value list
    # the steps as one generated Python function (plain_runner): execute()'s call without hooks or out=
    run_plain: Callable[[list, Callable], None] | None = None
    source: str = ""  # its source, for debugging (tracebacks show its lines)
    uses_blas: bool = False  # a step calls numpy's BLAS (execute() then sets its threads: kernels/blas.py)
    # dynamic models: the steps whose values depend on the input shapes alone (shape_steps), the runner's
    # forms that record them into / replay them from a cache, and that cache by tuple of input shapes
    shape_steps: frozenset[int] = frozenset()
    # the tensors whose shapes the shape steps start from (ShapeOf's inputs): a replay is only valid at input
    # shapes where the shape rules know all of theirs (not after a NonZero: Model._check_shapes decides)
    shape_roots: tuple[Value, ...] = ()
    replay_ok: dict[tuple, bool] = field(default_factory=dict)
    run_record: Callable[..., None] | None = None
    run_replay: Callable[..., None] | None = None
    shape_cache: dict[tuple, dict[int, Any]] = field(default_factory=dict)

    def assign_slots(self) -> None:
        """The flat plan: every runtime value (inputs, step outputs) gets a slot in one list, and each
        step knows where its operands come from -- no dict lookups or copies per call."""
        self.uses_blas = any(getattr(n.op, "uses_blas", False) for st in self.steps for n in st.nodes)
        slot_of: dict[Value, int] = {}
        for pi in self.graph.parameters:
            slot_of[(pi, 0)] = len(slot_of)
        for st in self.steps:
            for k in range(len(st.node.outputs)):
                slot_of[(st.node.index, k)] = len(slot_of)
        for st in self.steps:
            st.argv = [self.constants.get(a) for a in st.args]
            st.arg_slots = tuple((i, slot_of[a]) for i, a in enumerate(st.args) if a not in self.constants)
            st.out_slots = tuple(slot_of[(st.node.index, k)] for k in range(len(st.node.outputs)))
            st.free_slots = tuple(slot_of[a] for a in st.frees if a in slot_of)
        self.slot_of = slot_of
        self.run_plain, self.source = plain_runner(self)
        self.shape_steps = shape_steps(self)
        self.shape_roots = tuple(tuple(self.steps[j].args[0]) for j in sorted(self.shape_steps)
                                 if self.steps[j].node.op_type == "ShapeOf")
        self.shape_cache = {}
        self.replay_ok = {}
        if self.shape_steps:
            self.run_record, _ = plain_runner(self, "record")
            self.run_replay, _ = plain_runner(self, "replay")
        else:
            self.run_record = self.run_replay = None

    @property
    def parameters(self) -> list[int]:
        return self.graph.parameters

    def static_infos(self) -> dict[Value, TensorInfo]:
        """Every step's output infos as checked at load time (concrete on a static model)."""
        return {(st.node.index, k): o for st in self.steps for k, o in enumerate(st.node.outputs)}

    def reinfer(self, arrays: Sequence[np.ndarray], variables: Any = None) -> dict[Value, TensorInfo]:
        """Dynamic models: every shape rule again, with the inputs' concrete shapes (IRN064 when they
        do not fit together) and, for a stateful model, its variables' (`variables`: the Model's
        VariableStore, whose values a ReadValue's rule reads).  Returns every value's TensorInfo."""
        g = self.graph
        infos: dict[Value, TensorInfo] = {}
        for pi, arr in zip(g.parameters, arrays, strict=True):
            infos[(pi, 0)] = TensorInfo(tuple(arr.shape), g.nodes[pi].outputs[0].dtype)
        for key, v in self.constants.items():
            infos[key] = TensorInfo(tuple(v.shape), g.nodes[key[0]].outputs[key[1]].dtype, v)
        for st in self.steps:
            for node in st.nodes:  # a fused step: through every layer it covers, as unfused
                self._infer(node, [infos[tuple(s)] for s in node.sources], infos, variables)
        return infos

    def reinfer_reached(self, base: dict[Value, TensorInfo], variables: Any, reached: frozenset[int]
                        ) -> dict[Value, TensorInfo]:
        """reinfer() for a stateful model whose inputs' shapes have been seen with another state: `base`, the
        infos of that call, with the rules run again only for the layers in `reached` (those the variables
        reach: the others' infos do not depend on the state)."""
        infos = dict(base)
        for st in self.steps:
            for node in st.nodes:
                if node.index in reached:
                    self._infer(node, [infos[tuple(s)] for s in node.sources], infos, variables)
        return infos

    def _infer(self, node: Node, ins: list[TensorInfo], infos: dict[Value, TensorInfo], variables: Any = None
               ) -> None:
        ctx = NodeContext(node.layer, node.attrs, ins, len(node.layer.outputs), variables=variables)
        try:
            outs = node.op.infer(ctx)
        except RuleError as e:
            raise InputError(Diagnostic("IRN064", f"with these input shapes: {e.message}",
                                        **node.layer.where(self.graph.path))) from None
        except Exception as e:  # a rule that did not anticipate these shapes: still a diagnostic
            raise InputError(Diagnostic("IRN064", f"with these input shapes the operation's shape rule fails "
                                                  f"({type(e).__name__}: {e})",
                                        **node.layer.where(self.graph.path))) from None
        for k, o in enumerate(outs):
            infos[(node.index, k)] = o

    def peak_bytes(self, infos: dict[Value, TensorInfo], max_memory: int) -> int:
        """Peak bytes of inputs + live intermediates + constants at these shapes; IRN050 for an absurd
        tensor, IRN051 over `max_memory` -- before anything is allocated."""
        g = self.graph
        params = {pi: infos[(pi, 0)] for pi in g.parameters}
        cur = sum(v.nbytes for v in self.constants.values()) + sum(nbytes(i.shape, i.dtype) for i in params.values())
        peak = cur
        for st in self.steps:
            for k in range(len(st.node.outputs)):
                info = infos[(st.node.index, k)]
                b = nbytes(info.shape, info.dtype)
                if b > ABSURD_BYTES:
                    raise ResourceLimitError(Diagnostic(
                        "IRN050", f"output {k} would have shape {fmt_shape(info.shape)} ({b} bytes): absurd size",
                        **st.node.layer.where(g.path)))
                cur += b
            peak = max(peak, cur)
            for a in st.frees:
                info = infos.get(a) or params.get(a[0])
                if info is not None:
                    cur -= nbytes(info.shape, info.dtype)
        if peak > max_memory:
            raise ResourceLimitError(Diagnostic(
                "IRN051", f"running this model needs about {fmt_bytes(peak)}, over the limit of "
                          f"{fmt_bytes(max_memory)} (--max-memory / max_memory=)", file=g.path))
        return peak


def make_plan(graph: Graph, outputs: list[Value], fuse: bool = True,
              subgraph: Callable[[Graph], Callable[[list[np.ndarray]], list[np.ndarray]]] | None = None,
              variables: Any = None) -> Plan:
    """Steps for every layer an output or an Assign depends on, in execution order.  A layer whose outputs
    were all folded at load time is a constant (and what produced it, e.g. a ShapeOf, never runs).  With
    `fuse`, the planner rules of runtime/fuse.py turn chains of layers into single steps.  `subgraph`
    loads an If's checked body into a callable (``NodeContext.subgraph``; the Model supplies it);
    `variables` is the Model's VariableStore (runtime/state.py) for ReadValue / Assign."""
    g = graph
    live: set[int] = set()
    stack = [src[0] for src in outputs] + list(g.sinks)
    while stack:
        i = stack.pop()
        if i in live:
            continue
        live.add(i)
        if _folded(g.nodes[i]):
            continue
        stack.extend(s[0] for s in g.nodes[i].sources if s is not None)
    constants: dict[Value, np.ndarray] = {}
    runs: list[Node] = []
    for node in g.nodes:
        if node.index not in live or node.op is None or node.op_type in ("Parameter", "Result"):
            continue
        if _folded(node):
            for k in range(len(node.outputs)):
                constants[(node.index, k)] = None  # type: ignore[assignment]  # filled in after the steps are built
            continue
        runs.append(node)
    fusions = {}
    if fuse:
        from .fuse import find_fusions

        fusions = find_fusions(g, live, set(outputs), runs)
    covered = {n.index for f in fusions.values() for n in f.nodes}
    # Outputs nothing reads need not be computed; the unfused (debugging) plan computes every output,
    # so captures and comparisons still see them.
    read: dict[int, int] = {}
    if fuse:
        for v in list(outputs) + [s for i in live for s in g.nodes[i].sources if s is not None]:
            read[v[0]] = max(read.get(v[0], 0), v[1] + 1)
    # a fused step runs where its first layer did, or its last one (Fusion.place_last)
    placed = {(f.nodes[-1].index if f.place_last else first): f for first, f in fusions.items()}
    steps: list[Step] = []
    for node in runs:
        f = placed.get(node.index)
        if f is not None:
            steps.append(Step(f.nodes[-1], f.kernel, list(f.args), [], list(f.nodes), f.label))
        elif node.index not in covered:
            ctx = NodeContext(node.layer, node.attrs, [g.nodes[s[0]].outputs[s[1]] for s in node.sources],
                              len(node.layer.outputs), outputs_read=read.get(node.index) if fuse else None,
                              subgraph=subgraph, variables=variables)
            steps.append(Step(node, node.op.build(ctx), [tuple(s) for s in node.sources], []))
    # the values read now: a kernel may have put a constant in a layout of its own while it was built
    # (NodeContext.keep_constant_as), and holding every original until then would hold two of every weight
    for v in constants:
        constants[v] = g.nodes[v[0]].outputs[v[1]].value
    # last use of every runtime value -> free it right after
    last: dict[Value, int] = {}
    for k, st in enumerate(steps):
        for a in st.args:
            last[a] = k
    keep = set(outputs)
    for a, k in last.items():
        if a not in keep and a not in constants:
            steps[k].frees.append(a)
    plan = Plan(graph, steps, constants, list(outputs))
    plan.assign_slots()
    return plan


_RUNNERS = itertools.count()


def shape_steps(plan: Plan) -> frozenset[int]:
    """Steps of a dynamic model whose outputs depend on the inputs' shapes alone: ShapeOf, and every step
    whose runtime operands all come from such steps (the Gather / Concat / Range chains that build
    Reshape targets, masks and position tables).  Their values are the same at every run with the same
    input shapes -- where the shape rules know the shapes ShapeOf reads (Plan.replay_ok) -- so a run can
    take them from the last run at those shapes (Plan.shape_cache).  A model output is never one of them
    (the caller gets its own array)."""
    if all(d >= 0 for pi in plan.parameters for d in (plan.graph.nodes[pi].outputs[0].shape or (-1,))):
        return frozenset()  # static: such subgraphs were folded at load time
    outputs = set(plan.outputs)
    determined: set[Value] = set()
    steps = set()
    for j, st in enumerate(plan.steps):
        runtime = [tuple(a) for a in st.args if tuple(a) not in plan.constants]
        root = st.node.op_type == "ShapeOf" and not st.covers
        if root or (runtime and all(a in determined for a in runtime)):
            produced = [(st.node.index, k) for k in range(len(st.node.outputs))]
            if any(v in outputs for v in produced):
                continue
            determined.update(produced)
            steps.add(j)
    return frozenset(steps)


def plain_runner(plan: Plan, mode: str = "plain") -> tuple[Callable[..., None], str]:
    """The plan's steps as straight-line Python, one line per step: operands and results in local
    variables, constants and kernels bound by name, dead values dropped where the plan frees them.
    Against a loop that reads each step's slots from tables, this saves about 0.2 us a step (BERT-sized
    models have 50-140 steps of a few us each).  ``run(slots, locate)``: the inputs are read from
    `slots`, the model's outputs written back to it; an irnorm error raised by a step's kernel becomes
    ``locate(error, step)``.  Rebuilt by assign_slots whenever a step's kernel changes.
    `mode` "record" / "replay" (dynamic models with shape_steps): ``run(slots, locate, cache)`` also
    stores the shape steps' outputs in `cache` by slot, or takes them from it instead of running them."""
    names: dict[str, Any] = {"_errors": (RuleError, IrnormError), "_steps": plan.steps, "np": np}
    lines = ["def run(slots, locate, cache=None):", "    k = 0", "    try:", "        pass"]
    used = {s for st in plan.steps for _, s in st.arg_slots}
    for pi in plan.parameters:
        s = plan.slot_of[(pi, 0)]
        if s in used:
            lines.append(f"        v{s} = slots[{s}]")
    shapes = [plan.graph.nodes[pi].outputs[0].shape for pi in plan.parameters]
    static_model = all(shape is not None and all(d >= 0 for d in shape) for shape in shapes)  # 0-d inputs too
    cached = plan.shape_steps if mode != "plain" else frozenset()
    for j, st in enumerate(plan.steps):
        frees = [f"        v{s} = None" for s in st.free_slots]
        if j in cached and mode == "replay":  # the value this step gave at these input shapes
            lines += [f"        k = {j}; v{s} = cache[{s}]" for s in st.out_slots] + frees
            continue
        lines += _step_lines(plan, j, st, names, static_model)
        if j in cached:  # record
            lines += [f"        cache[{s}] = v{s}" for s in st.out_slots]
        lines += frees
    step_outputs = {s for st in plan.steps for s in st.out_slots}
    for o in plan.outputs:
        s = plan.slot_of.get(o)
        if s in step_outputs:
            lines.append(f"        slots[{s}] = v{s}")
    lines += ["    except _errors as e:", "        raise locate(e, _steps[k]) from None"]
    source = "\n".join(lines) + "\n"
    filename = f"<irnorm plan {next(_RUNNERS)}{'' if mode == 'plain' else ' ' + mode}>"
    exec(compile(source, filename, "exec"), names)
    run = names["run"]
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(run, linecache.cache.pop, filename, None)  # the lines live as long as the function
    return run, source


def _step_lines(plan: Plan, j: int, st: Step, names: dict[str, Any], static_model: bool) -> list[str]:
    """plain_runner's line(s) computing step j's outputs (kernels and constants bound in `names`)."""
    names[f"kernel{j}"] = st.kernel
    runtime = dict(st.arg_slots)
    inline = getattr(st.kernel, "static_expr", None)
    # how many outputs the expression gives: one, or a tuple of static_outputs (a Split's parts)
    inline_outputs = getattr(st.kernel, "static_outputs", 1)
    if static_model and inline is not None and len(st.out_slots) == inline_outputs and list(runtime) == [0]:
        # a data-movement step whose kernel says what it computes on a static model (Reshape & co.'s
        # copy + reshape, Transpose's permuted copy, a Slice, a Split): written here, without the call
        # (~1.5 us a step)
        targets = ", ".join(f"v{s}" for s in st.out_slots)
        return [f"        k = {j}; {targets} = " + inline.format(x=f"v{runtime[0]}")]
    fast = getattr(st.kernel, "static_call", None)
    if static_model and fast is not None and len(st.out_slots) == 1 and runtime and 0 in runtime:
        # a kernel with a form for its runtime operands on a static model (a MatMul by a constant B, a
        # convolution with constant filters and maybe a fused residual): called with those arrays in
        # order, the result returned as it is (no operand list, no list back)
        names[f"fast{j}"] = fast
        args = ", ".join(f"v{runtime[i]}" for i in sorted(runtime))
        return [f"        k = {j}; v{st.out_slots[0]} = fast{j}({args})"]
    operands = []
    for i, c in enumerate(st.argv or []):
        if i in runtime:
            operands.append(f"v{runtime[i]}")
        else:
            names[f"c{j}_{i}"] = c
            operands.append(f"c{j}_{i}")
    every = getattr(st.kernel, "static_all", None)
    if static_model and every is not None and len(st.out_slots) == 1:
        # a kernel with a form for all its operands on a static model (a small elementwise op: numpy's
        # ufunc itself): called with them in order, constants bound by name, the result as it is
        names[f"every{j}"] = every
        return [f"        k = {j}; v{st.out_slots[0]} = every{j}({', '.join(operands)})"]
    call = f"kernel{j}([{', '.join(operands)}])"
    if len(st.out_slots) == 1:
        return [f"        k = {j}; v{st.out_slots[0]} = {call}[0]"]
    # a kernel may return fewer outputs than the layer declares when the rest are never read
    return ([f"        k = {j}; outs = {call}"]
            + [f"        v{s} = outs[{q}] if len(outs) > {q} else None" for q, s in enumerate(st.out_slots)])


def _folded(node: Node) -> bool:
    return all(o is not None and o.value is not None for o in node.outputs)
