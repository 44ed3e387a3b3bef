"""The loaded model: a checked graph, its plan, and ``run``.

A Model is safe to run from several threads at once: the plan is read-only after loading, and
every call allocates its own intermediates.
"""

from __future__ import annotations

import difflib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import Diagnostic, InputError
from ..ir.graph import Graph, Node
from ..ir.tensor import TensorInfo
from .bind import InputBinder, TensorSpec, bind_out, io_specs
from .execute import LayerHook, LayerOutput, LayerTime, RunResult, execute, layer_output
from .plan import Plan, default_max_memory, make_plan
from .state import VariableStore

__all__ = ["LayerHook", "LayerOutput", "LayerTime", "Model", "RunResult", "TensorSpec"]


# input shape combinations whose shape-rule results a dynamic model keeps (then it starts over)
SHAPES_KEPT = 64


class _ShapeOnly:
    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape


def _body_loader(fuse: bool, limit: Callable[[], int]
                 ) -> Callable[[Graph], Callable[[list[np.ndarray]], list[np.ndarray]]]:
    """What an op with sub-graphs (If, TensorIterator, Loop) gets to load a checked body (``NodeContext.subgraph``): a
    Model of its own, planned alike, called with the body's inputs in Parameter order; its outputs come back in
    Result order (the callable's ``memory_limit`` reads the limit). The body runs under the enclosing model's memory
    limit (`limit()`: read at every call, since a Model's max_memory may be changed after loading); its peak is
    counted on its own."""

    def load(body: Graph) -> Callable[[list[np.ndarray]], list[np.ndarray]]:
        model = Model(body, max_memory=limit(), fuse=fuse)
        n_out = len(body.results)

        def run(arrays: list[np.ndarray]) -> list[np.ndarray]:
            model.max_memory = limit()
            out = list(model.run(arrays).values())
            if len(out) != n_out:  # two Results under one name would collapse in the dict
                raise RuntimeError(f"a sub-graph gave {len(out)} outputs for {n_out} Results")
            return out

        run.memory_limit = limit  # type: ignore[attr-defined]  # (a Loop's growing outputs count against it)
        return run

    return load


def _reached_from(graph: Graph, op_type: str) -> frozenset[int]:
    """The nodes that depend, directly or not, on a node of `op_type` (those nodes included)."""
    consumers: dict[int, list[int]] = {}
    for n in graph.nodes:
        for s in n.sources:
            if s is not None:
                consumers.setdefault(s[0], []).append(n.index)
    stack = [n.index for n in graph.nodes if n.op_type == op_type]
    seen: set[int] = set()
    while stack:
        i = stack.pop()
        if i not in seen:
            seen.add(i)
            stack.extend(consumers.get(i, ()))
    return frozenset(seen)


class Model:
    """A loaded, validated, planned model.  Create it with :func:`irnorm.load`."""

    def __init__(self, graph: Graph, max_memory: int | None = None, fuse: bool = True):
        self.graph = graph
        self.path = graph.path
        self.max_memory = max_memory if max_memory is not None else default_max_memory()
        self.inputs, self.outputs, sources = io_specs(graph)
        self.diagnostics: list[Diagnostic] = list(graph.diagnostics)
        self._binder = InputBinder(self.inputs, self.path)
        self._sources = sources
        # a stateful model's variables (ReadValue / Assign): kept between runs, its runs one at a time
        self._variables = VariableStore()
        self._stateful = any(n.op_type in ("ReadValue", "Assign") for n in graph.nodes)
        # variables whose shape the file leaves open (a key/value cache): every run checks the shape rules with
        # the values it will read, as a dynamic model's runs do with their inputs'
        self._checks_shapes = self._binder.dynamic or any(
            n.op_type == "ReadValue" and (not n.outputs or n.outputs[0] is None or n.outputs[0].shape is None
                                          or -1 in n.outputs[0].shape) for n in graph.nodes)
        self._reached = _reached_from(graph, "ReadValue") if self._stateful else frozenset()
        # stateful models: (fused plan?, *input shapes) -> the infos of a call at those input shapes, whatever the
        # state was: a later call re-runs only the rules of the layers the variables reach (_check_shapes)
        self._shapes_base: dict[tuple, dict[tuple[int, int], TensorInfo]] = {}
        self._plan = make_plan(graph, sources, fuse, _body_loader(fuse, lambda: self.max_memory), self._variables)
        self._unfused: Plan | None = None if fuse else self._plan
        params = set(graph.parameters)
        # outputs that are a folded constant or an input: handed out as copies
        self._copy_out = [src in self._plan.constants or src[0] in params for src in sources]
        self._peak = 0  # planned peak bytes of the last checked shapes
        # dynamic models: (fused plan?, *input shapes) -> (every value's TensorInfo, peak bytes), see _check_shapes
        self._shapes_seen: dict[tuple, tuple[dict[tuple[int, int], TensorInfo], int]] = {}
        if not self._binder.dynamic:
            infos = self._plan.static_infos()
            infos.update({(p, 0): graph.nodes[p].outputs[0] for p in graph.parameters})
            self._peak = self._plan.peak_bytes(infos, self.max_memory)

    @property
    def layers_run(self) -> list[Node]:
        """The layers a run executes, in order (folded constants, Parameters and Results excluded);
        a fused step counts as the layers it covers."""
        return [n for st in self._plan.steps for n in st.nodes]

    @property
    def output_sources(self) -> list[tuple[int, int]]:
        """For each output, the (node index, output index) in ``graph.nodes`` that produces it."""
        return list(self._plan.outputs)

    @property
    def fused_steps(self) -> list[tuple[str, list[str]]]:
        """The planner's fusions: (label, names of the layers covered) for each fused step."""
        return [(st.label, [n.layer.name for n in st.covers]) for st in self._plan.steps if st.covers]

    def _debug_plan(self) -> Plan:
        """The unfused plan, for runs that watch every layer (capture=, on_layer=): built on first use."""
        if self._unfused is None:
            self._unfused = make_plan(self.graph, self._sources, fuse=False,
                                      subgraph=_body_loader(False, lambda: self.max_memory), variables=self._variables)
        return self._unfused

    def bind_inputs(self, inputs: Mapping[str, Any] | Sequence[Any] | np.ndarray | None, cast: bool = False
                    ) -> dict[str, np.ndarray]:
        """The arrays a run would use for `inputs`, by canonical input name: names resolved, dtypes,
        ranks and static dims checked (with ``cast=True`` converted).  Raises InputError (IRN06x)."""
        return dict(zip([s.name for s in self.inputs], self._binder.bind(inputs, cast), strict=True))

    def output_shapes(self, input_shapes: Sequence[Sequence[int]]) -> list[tuple[int, ...] | None]:
        """The output shapes a run with inputs of these shapes (in input order) would give, from the
        shape rules alone: nothing is computed or allocated.  InputError when they do not fit.  Where a
        size depends on input values (NonZero, axes given as an input) it is -1; None when the rank does."""
        if len(input_shapes) != len(self.inputs):
            raise InputError(Diagnostic("IRN060", f"the model takes {len(self.inputs)} inputs, got "
                                                  f"{len(input_shapes)} shapes", file=self.path))
        shapes = [tuple(int(d) for d in shape) for shape in input_shapes]
        for spec, shape in zip(self.inputs, shapes, strict=True):
            self._binder.check_shape(spec, shape)
        # the shape rules read only .shape: stand-ins that hold no data
        infos = self._plan.reinfer([_ShapeOnly(shape) for shape in shapes])
        shapes = [infos[src].shape if src in infos else self._plan.constants[src].shape for src in self._plan.outputs]
        return [None if s is None else tuple(s) for s in shapes]

    def _check_shapes(self, arrays: list[np.ndarray], plan: Plan | None = None) -> dict[tuple[int, int], TensorInfo]:
        """Dynamic models: re-run the shape rules at these shapes and check the memory they need.  The
        rules see the inputs' shapes only (their dtypes are the declared ones), so the result is kept per
        tuple of input shapes: a model called again at shapes it has seen skips the rules (every layer's,
        in Python: 1.5 ms of a 2.9 ms BERT-sized run).  The returned dict is shared: read it only."""
        plan = plan or self._plan
        key = base_key = (plan is self._plan,) + tuple(a.shape for a in arrays)
        if self._stateful:  # the variables' shapes too (runs hold the store's lock here)
            key += tuple(sorted(self._variables.shapes().items()))
        hit = self._shapes_seen.get(key)
        if hit is not None:
            infos, peak = hit
            if peak > self.max_memory:  # the limit may have been lowered since: the same IRN051
                plan.peak_bytes(infos, self.max_memory)
            self._peak = peak
            return infos
        base = self._shapes_base.get(base_key) if self._stateful else None
        if base is not None:  # a decode loop: same inputs' shapes, a longer cache -- only the layers it reaches
            infos = plan.reinfer_reached(base, self._variables, self._reached)
        else:
            infos = plan.reinfer(arrays, self._variables if self._stateful else None)
        peak = plan.peak_bytes(infos, self.max_memory)
        self._peak = peak
        if len(self._shapes_seen) >= SHAPES_KEPT:
            self._shapes_seen.clear()  # a model fed ever new shapes starts over (no iteration: thread-safe)
            self._shapes_base.clear()
            plan.replay_ok.clear()
        self._shapes_seen[key] = (infos, peak)
        if self._stateful:
            self._shapes_base.setdefault(base_key, infos)
        if plan.shape_roots:
            # the shape steps' values may be replayed at these shapes when every shape they read is known from
            # the input shapes alone (not a NonZero's output, whose shape the rules leave -1; never in a stateful
            # model: the replay is looked up by the input shapes, and the variables' may have changed)
            plan.replay_ok[key[1:]] = not self._stateful and all(
                infos[v].shape is not None and all(d >= 0 for d in infos[v].shape) for v in plan.shape_roots)
        return infos

    def run(self, inputs: Mapping[str, Any] | Sequence[Any] | None = None, *, cast: bool = False,
            out: Mapping[str, np.ndarray] | Sequence[np.ndarray | None] | None = None,
            capture: bool | Sequence[str | int] | None = None, profile: bool = False,
            on_layer: LayerHook | None = None) -> dict[str, np.ndarray]:
        """Run the model.  `inputs` maps input names (or any of their tensor names) to
        arrays, or is a sequence in input order.  Returns {output name: array} in
        output order.  Arrays must have the declared dtype unless ``cast=True``.

        Debugging (all optional; the default returns a plain dict):
        ``capture=True`` keeps a copy of every Parameter's and executed layer's outputs,
        ``capture=[names or ids]`` only those layers' (a folded Const may be named too);
        ``profile=True`` times every layer's kernel.  With either, the result is a
        :class:`RunResult` (still the same dict) carrying ``.captures`` / ``.profile``.
        ``on_layer(node, outputs, seconds)`` is called as each layer is produced (see LayerHook)."""
        if self._stateful:  # one run at a time: its shape check and its reads see the state it will run with
            with self._variables.lock:
                return self._run(inputs, cast, out, capture, profile, on_layer)
        return self._run(inputs, cast, out, capture, profile, on_layer)

    def _run(self, inputs: Any, cast: bool, out: Any, capture: Any, profile: bool, on_layer: LayerHook | None
             ) -> dict[str, np.ndarray]:
        if (capture is None or capture is False) and not profile and on_layer is None and out is None:
            arrays = self._binder.bind(inputs, cast)
            if self._checks_shapes:
                self._check_shapes(arrays)
            return self._execute(arrays, None)
        cap_nodes = None if capture is None or capture is False else self.find_layers(capture)
        # watching every layer needs every layer: those runs take the unfused plan
        plan = self._debug_plan() if cap_nodes is not None or on_layer is not None else self._plan
        arrays = self._binder.bind(inputs, cast)
        infos = self._check_shapes(arrays, plan) if self._checks_shapes else None
        dest = None if out is None else bind_out(self.outputs, self._plan.outputs, out, infos, self.path)
        captures: list[LayerOutput] = []
        times: list[LayerTime] = []
        hooks: list[LayerHook] = []
        if cap_nodes is not None:
            wanted = None if cap_nodes is True else {n.index for n in cap_nodes}
            for n in ([] if cap_nodes is True else cap_nodes):
                for k in range(len(n.outputs)):
                    if (n.index, k) in self._plan.constants:
                        captures.append(layer_output(n, k, self._plan.constants[(n.index, k)]))

            def cap(node: Node, outs: Sequence[np.ndarray], _s: float) -> None:
                if wanted is None or node.index in wanted:
                    captures.extend(layer_output(node, k, o) for k, o in enumerate(outs))

            hooks.append(cap)
        if profile:
            labels = {st.node.index: st.label for st in plan.steps if st.label}

            def prof(node: Node, _o: Sequence[np.ndarray], s: float) -> None:
                if node.op is not None and node.op.type != "Parameter":
                    lay = node.layer
                    label = labels.get(node.index)  # a fused step: its label, no single version
                    times.append(LayerTime(node.index, lay.id, lay.name, label or lay.type,
                                           "" if label else lay.version, s))

            hooks.append(prof)
        if on_layer is not None:
            hooks.append(on_layer)
        hook: LayerHook | None = None
        if len(hooks) == 1:
            hook = hooks[0]
        elif hooks:
            def hook(node: Node, outs: Sequence[np.ndarray], s: float) -> None:
                for h in hooks:
                    h(node, outs, s)
        t0 = time.perf_counter()
        result = self._execute(arrays, hook, dest, plan)
        if cap_nodes is not None or profile:
            return RunResult(result, captures, times, time.perf_counter() - t0)
        return result

    def find_layers(self, capture: bool | str | int | Sequence[str | int]) -> list[Node] | bool:
        """The layers named (by name or id) in ``capture=`` / ``--dump``, in execution order (True stays
        True: every layer).  A name that is unknown, not run, or a Result is InputError IRN066 with
        suggestions."""
        if capture is True:
            return True
        if isinstance(capture, (str, int)):
            capture = [capture]
        g = self.graph
        by_key: dict[str, list[Node]] = {}
        for n in g.nodes:
            by_key.setdefault(n.layer.name, []).append(n)
            by_key.setdefault(n.layer.id, []).append(n)
        run_nodes = ({n.index for st in self._plan.steps for n in st.nodes} | set(g.parameters)
                     | {k[0] for k in self._plan.constants})
        out: list[Node] = []
        for key in capture:
            nodes = by_key.get(str(key))
            if not nodes:
                close = difflib.get_close_matches(str(key), [n.layer.name for n in g.nodes], n=3)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                raise self._layer_error(f"no layer named (or with id) {key!r} in {os.path.basename(self.path)}{hint}")
            for n in nodes:
                if n.index in run_nodes:
                    out.append(n)
                elif n.op is not None and n.op.type == "Result":
                    src = g.nodes[n.sources[0][0]].layer.name if n.sources and n.sources[0] else "?"
                    raise self._layer_error(f"layer {key!r} is a Result and has no output; capture its producer "
                                            f"{src!r}")
                else:
                    raise self._layer_error(f"layer {key!r} is not run (no Result depends on it)")
        return sorted({n.index: n for n in out}.values(), key=lambda n: n.index)

    def _layer_error(self, message: str) -> InputError:
        return InputError(Diagnostic("IRN066", message, file=self.path))

    def _execute(self, arrays: list[np.ndarray], hook: LayerHook | None,
                 dest: list[np.ndarray | None] | None = None, plan: Plan | None = None) -> dict[str, np.ndarray]:
        if not self._stateful:
            return execute(plan or self._plan, self.outputs, self._copy_out, arrays, hook, dest,
                           self.max_memory - self._peak)
        with self._variables.lock:  # one run at a time: each reads the state the one before committed
            try:
                result = execute(plan or self._plan, self.outputs, self._copy_out, arrays, hook, dest,
                                 self.max_memory - self._peak)
            except BaseException:
                self._variables.discard()  # a failed run leaves the state as it was
                raise
            self._variables.commit()
            return result

    @property
    def variables(self) -> list[str]:
        """The ids of the model's variables (ReadValue layers, document order); empty for a stateless model."""
        seen: dict[str, None] = {}
        for n in self.graph.nodes:
            if n.op_type == "ReadValue":
                seen.setdefault(n.attrs["variable_id"], None)
        return list(seen)

    @property
    def state(self) -> dict[str, np.ndarray]:
        """{variable id: a copy of its value} for the variables runs have assigned so far (a variable not in it
        starts from its initial value at the next run), as OpenVINO's InferRequest.query_state()."""
        with self._variables.lock:
            return self._variables.snapshot()

    def reset_state(self) -> None:
        """Forget every variable's value: the next run starts from the initial values (InferRequest.reset_state)."""
        with self._variables.lock:
            self._variables.reset()

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        if args and kwargs:
            raise InputError(Diagnostic("IRN060", "pass inputs either positionally or by name, not both"))
        return self.run(list(args) if args else kwargs)

    def __repr__(self) -> str:
        return (f"Model({os.path.basename(self.path)!r}, inputs={self.inputs}, outputs={self.outputs}, "
                f"layers={len(self.graph.nodes)})")
