"""Stages 3 and 4: plan a checked graph (constant folding, kernel choice, memory
budget) and execute it.

A Model is safe to run from several threads at once: the plan is read-only after
loading, and every call allocates its own intermediates.
"""

from __future__ import annotations

import difflib
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..check.types import ABSURD_BYTES
from ..errors import Diagnostic, InputError, IrnormError, ResourceLimitError, RuleError
from ..ir.dtypes import ELEMENT_TYPES
from ..ir.graph import Graph, Node
from ..ir.tensor import TensorInfo, fmt_shape
from ..ops.base import NodeContext


def default_max_memory() -> int:
    """Three quarters of physical memory (the default for --max-memory)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return 8 << 30


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: its name (as OpenVINO reports it), every name it
    answers to, its shape (-1 marks a dynamic dim) and numpy dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    element_type: str
    names: tuple[str, ...] = ()

    @property
    def is_dynamic(self) -> bool:
        return self.shape is None or any(d == -1 for d in self.shape)

    def __repr__(self) -> str:
        return f"TensorSpec(name={self.name!r}, shape={fmt_shape(self.shape)}, dtype={self.element_type})"


def fmt_bytes(n: int) -> str:
    """1536 -> '1.5 KiB': sizes in messages stay readable from bytes to TiB."""
    for unit, k in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k:
            return f"{n / (1 << k):.1f} {unit}"
    return f"{n} bytes"


def nbytes(shape: Sequence[int], dtype: str) -> int:
    n = ELEMENT_TYPES[dtype].itemsize if dtype in ELEMENT_TYPES else 8
    for d in shape:
        n *= max(d, 0)
    return n


def _io_names(graph: Graph) -> tuple[list[TensorSpec], list[TensorSpec], list[tuple[int, int]]]:
    v10 = graph.doc.ir_version == 10
    inputs: list[TensorSpec] = []
    for pi in graph.parameters:
        node = graph.nodes[pi]
        port = node.layer.outputs[0] if node.layer.outputs else None
        names = list(port.names) if port else []
        if v10 and node.layer.name not in names:
            names.append(node.layer.name)  # what OpenVINO's v10 reader adds
        canonical = min(names) if names else node.layer.name
        info = node.outputs[0]
        all_names = tuple(dict.fromkeys([canonical, *sorted(names), node.layer.name]))
        inputs.append(TensorSpec(canonical, info.shape, ELEMENT_TYPES[info.dtype], info.dtype, all_names))
    outputs: list[TensorSpec] = []
    sources: list[tuple[int, int]] = []
    taken: set[str] = set()
    for ri in graph.results:
        node = graph.nodes[ri]
        src = node.sources[0]
        prod = graph.nodes[src[0]]
        port = prod.layer.outputs[src[1]]
        names = list(port.names)
        if v10:
            names.append(prod.layer.name if src[1] == 0 else f"{prod.layer.name}.{src[1]}")
        if not names and node.layer.output_names:
            names = list(node.layer.output_names)
        canonical = min(names) if names else node.layer.name
        if canonical in taken:  # two Results of one tensor: keep names unique
            canonical = node.layer.name
        taken.add(canonical)
        info = prod.outputs[src[1]]
        outputs.append(TensorSpec(canonical, info.shape, ELEMENT_TYPES[info.dtype], info.dtype,
                                  tuple(dict.fromkeys([canonical, *sorted(names)]))))
        sources.append(src)
    return inputs, outputs, sources


@dataclass
class Step:
    node: Node
    kernel: Any
    args: list[tuple[int, int]]  # (node index, output index) of each operand
    frees: list[tuple[int, int]]  # values dead after this step


# Called with (node, its output arrays, seconds its kernel took) for every Parameter (first, 0.0 s)
# and every executed layer, in execution order, right after the layer ran.  The arrays must not be
# modified; copy what you want to keep.
LayerHook = Callable[[Node, Sequence[np.ndarray], float], None]


@dataclass(frozen=True)
class LayerOutput:
    """One captured layer output (a copy): which layer and output port produced it."""

    index: int  # position in execution order
    layer_id: str
    name: str
    type: str
    version: str
    port: int  # output operand index (0-based)
    port_id: int  # the <port id=...> in the XML
    line: int  # XML line of the <layer>
    array: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype


@dataclass(frozen=True)
class LayerTime:
    """Wall time of one executed layer's kernel in one run."""

    index: int
    layer_id: str
    name: str
    type: str
    version: str
    seconds: float


class RunResult(dict):
    """What ``run(..., capture=..., profile=True)`` returns: the usual {output name: array} dict,
    plus ``captures`` (list of LayerOutput, execution order), ``profile`` (list of LayerTime,
    execution order) and ``seconds`` (wall time of the whole run)."""

    def __init__(self, outputs: dict[str, np.ndarray], captures: list[LayerOutput], profile: list[LayerTime],
                 seconds: float):
        super().__init__(outputs)
        self.captures = captures
        self.profile = profile
        self.seconds = seconds


def _layer_output(node: Node, k: int, arr: np.ndarray) -> LayerOutput:
    lay = node.layer
    port_id = lay.outputs[k].id if k < len(lay.outputs) else k
    return LayerOutput(node.index, lay.id, lay.name, lay.type, lay.version, k, port_id, lay.line,
                       np.array(arr, copy=True))


class Model:
    """A loaded, validated, planned model.  Create it with :func:`irnorm.load`."""

    def __init__(self, graph: Graph, max_memory: int | None = None):
        self.graph = graph
        self.path = graph.path
        self.max_memory = max_memory if max_memory is not None else default_max_memory()
        self.inputs, self.outputs, self._out_src = _io_names(graph)
        self.diagnostics: list[Diagnostic] = list(graph.diagnostics)
        self._name_to_input: dict[str, int] = {}
        for i, spec in enumerate(self.inputs):
            for n in spec.names:
                self._name_to_input.setdefault(n, i)
        self._dynamic = any(s.is_dynamic for s in self.inputs)
        # per input: its exact shape when static (the per-call fast path in _bind), else None
        self._static_shapes = [None if s.is_dynamic else tuple(s.shape) for s in self.inputs]
        self._peak = 0  # planned peak bytes of the last checked shapes (see _check_memory)
        self._plan()
        params = set(graph.parameters)
        # outputs that are a folded constant or an input: handed out as copies
        self._out_copies = [src in self._constants or src[0] in params for src in self._out_src]
        if not self._dynamic:
            self._check_memory({pi: n.outputs[0] for pi, n in ((p, graph.nodes[p]) for p in graph.parameters)},
                               self._static_infos())

    # ---- planning -----------------------------------------------------------------

    def _plan(self) -> None:
        g = self.graph
        live: set[int] = set()
        stack = [src[0] for src in self._out_src]
        while stack:
            i = stack.pop()
            if i in live:
                continue
            live.add(i)
            if all(o is not None and o.value is not None for o in g.nodes[i].outputs):
                continue  # folded: what produced it (e.g. a ShapeOf) never runs
            stack.extend(s[0] for s in g.nodes[i].sources if s is not None)
        self._constants: dict[tuple[int, int], np.ndarray] = {}
        steps: list[Step] = []
        for node in g.nodes:
            if node.index not in live or node.op is None:
                continue
            if node.op.type in ("Parameter", "Result"):
                continue
            if all(o is not None and o.value is not None for o in node.outputs):
                for k, o in enumerate(node.outputs):
                    self._constants[(node.index, k)] = o.value
                continue
            ctx = NodeContext(node.layer, node.attrs, [g.nodes[s[0]].outputs[s[1]] for s in node.sources],
                              len(node.layer.outputs))
            steps.append(Step(node, node.op.build(ctx), [tuple(s) for s in node.sources], []))
        # last use of every runtime value -> free it right after
        last: dict[tuple[int, int], int] = {}
        for k, st in enumerate(steps):
            for a in st.args:
                last[a] = k
        keep = set(self._out_src)
        for a, k in last.items():
            if a not in keep and a not in self._constants:
                steps[k].frees.append(a)
        self._steps = steps

    def _static_infos(self) -> dict[tuple[int, int], TensorInfo]:
        return {(st.node.index, k): o for st in self._steps for k, o in enumerate(st.node.outputs)}

    def _check_memory(self, params: dict[int, TensorInfo], infos: dict[tuple[int, int], TensorInfo]) -> None:
        """Peak bytes of inputs + live intermediates + constants, before anything is allocated."""
        const_bytes = sum(v.nbytes for v in self._constants.values())
        cur = const_bytes + sum(nbytes(i.shape, i.dtype) for i in params.values())
        peak = cur
        for st in self._steps:
            for k in range(len(st.node.outputs)):
                info = infos[(st.node.index, k)]
                b = nbytes(info.shape, info.dtype)
                if b > ABSURD_BYTES:
                    raise ResourceLimitError(Diagnostic(
                        "IRN050", f"output {k} would have shape {fmt_shape(info.shape)} ({b} bytes): absurd size",
                        **st.node.layer.where(self.path)))
                cur += b
            peak = max(peak, cur)
            for a in st.frees:
                info = infos.get(a) or params.get(a[0])
                if info is not None:
                    cur -= nbytes(info.shape, info.dtype)
        self._peak = peak
        if peak > self.max_memory:
            raise ResourceLimitError(Diagnostic(
                "IRN051", f"running this model needs about {fmt_bytes(peak)}, over the limit of "
                          f"{fmt_bytes(self.max_memory)} (--max-memory / max_memory=)", file=self.path))

    # ---- inputs ---------------------------------------------------------------------

    def _fast_bind(self, values: Iterable[Any]) -> list[np.ndarray] | None:
        """The common call: C-contiguous arrays of exactly the declared dtype and static shape,
        one per input, in input order.  None when anything needs the full checks."""
        out = []
        for v, spec, shape in zip(values, self.inputs, self._static_shapes, strict=False):
            if (type(v) is not np.ndarray or v.dtype != spec.dtype or v.shape != shape
                    or not v.flags.c_contiguous):
                return None
            out.append(v)
        return out if len(out) == len(self.inputs) else None

    def _bind(self, inputs: Mapping[str, Any] | Sequence[Any] | None, cast: bool) -> list[np.ndarray]:
        if not self._dynamic:
            if type(inputs) is dict and len(inputs) == len(self.inputs):
                fast = self._fast_bind(inputs.get(s.name) for s in self.inputs)
                if fast is not None:
                    return fast
            elif type(inputs) in (list, tuple) and len(inputs) == len(self.inputs):
                fast = self._fast_bind(inputs)
                if fast is not None:
                    return fast
            elif type(inputs) is np.ndarray and len(self.inputs) == 1:
                fast = self._fast_bind([inputs])
                if fast is not None:
                    return fast
        if inputs is None:
            inputs = {}
        if isinstance(inputs, np.ndarray):  # m.run(x): one array, not a sequence of its rows
            inputs = [inputs]
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, (Mapping, Sequence)):
            raise InputError(Diagnostic("IRN060", f"inputs must be a dict of name -> array or a sequence of arrays "
                                                  f"in input order, got {type(inputs).__name__}", file=self.path))
        if not isinstance(inputs, Mapping):
            seq = list(inputs)
            if len(seq) != len(self.inputs):
                raise InputError(Diagnostic("IRN060", f"the model takes {len(self.inputs)} inputs "
                                                      f"({', '.join(s.name for s in self.inputs)}), got {len(seq)}",
                                            file=self.path))
            inputs = {s.name: a for s, a in zip(self.inputs, seq, strict=True)}
        bound: list[np.ndarray | None] = [None] * len(self.inputs)
        diags: list[Diagnostic] = []
        for key, value in inputs.items():
            idx = self._name_to_input.get(key)
            if idx is None:
                close = difflib.get_close_matches(str(key), list(self._name_to_input), n=3)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                diags.append(Diagnostic("IRN060", f"unknown input {key!r}; the model's inputs are "
                                                  f"{', '.join(repr(s.name) for s in self.inputs)}{hint}",
                                        file=self.path))
                continue
            if bound[idx] is not None:
                diags.append(Diagnostic("IRN060", f"input {self.inputs[idx].name!r} is given twice "
                                                  f"(also as {key!r})", file=self.path))
                continue
            try:
                bound[idx] = self._check_input(self.inputs[idx], value, cast)
            except InputError as e:
                diags.extend(e.diagnostics)
                bound[idx] = np.empty(0)
        for i, b in enumerate(bound):
            if b is None:
                diags.append(Diagnostic("IRN060", f"missing input {self.inputs[i].name!r} "
                                                  f"({fmt_shape(self.inputs[i].shape)} {self.inputs[i].element_type})",
                                        file=self.path))
        if diags:
            raise InputError(diags)
        return bound  # type: ignore[return-value]

    def _check_input(self, spec: TensorSpec, value: Any, cast: bool) -> np.ndarray:
        arr = value if isinstance(value, np.ndarray) else None
        if arr is None:
            if not cast and not np.isscalar(value) and not isinstance(value, (list, tuple)):
                raise InputError(Diagnostic("IRN062", f"input {spec.name!r}: expected a numpy array, got "
                                                      f"{type(value).__name__}", file=self.path))
            try:
                arr = np.asarray(value, dtype=spec.dtype if cast else None)
            except (ValueError, TypeError) as e:
                raise InputError(Diagnostic("IRN062", f"input {spec.name!r}: not convertible to an array: {e}",
                                            file=self.path)) from None
        if arr.dtype != spec.dtype and arr.dtype.newbyteorder("=") == spec.dtype:
            arr = arr.astype(spec.dtype)  # same type, other byte order (e.g. '>f4' from a file): lossless
        if arr.dtype != spec.dtype:
            if not cast:
                raise InputError(Diagnostic(
                    "IRN062", f"input {spec.name!r} has dtype {arr.dtype}, the model expects {spec.dtype} "
                              f"({spec.element_type}); convert it, or pass cast=True / --cast", file=self.path))
            with np.errstate(invalid="ignore", over="ignore"):
                arr = arr.astype(spec.dtype)
        if arr.ndim != len(spec.shape):
            raise InputError(Diagnostic(
                "IRN061", f"input {spec.name!r} has rank {arr.ndim} {list(arr.shape)}, the model expects rank "
                          f"{len(spec.shape)} {fmt_shape(spec.shape)}", file=self.path))
        bad = [i for i, (d, e) in enumerate(zip(arr.shape, spec.shape, strict=True)) if e != -1 and d != e]
        if bad:
            raise InputError(Diagnostic(
                "IRN061", f"input {spec.name!r} has shape {list(arr.shape)}, the model expects "
                          f"{fmt_shape(spec.shape)} (dim {bad[0]} must be {spec.shape[bad[0]]})", file=self.path))
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        return arr

    # ---- running --------------------------------------------------------------------

    def _reinfer(self, arrays: list[np.ndarray]) -> dict[tuple[int, int], TensorInfo]:
        """Dynamic models: re-run every shape rule with the concrete shapes, then check memory.
        Returns every value's concrete TensorInfo."""
        g = self.graph
        infos: dict[tuple[int, int], TensorInfo] = {}
        for spec, pi, arr in zip(self.inputs, g.parameters, arrays, strict=True):
            infos[(pi, 0)] = TensorInfo(tuple(arr.shape), spec.element_type)
        for key, v in self._constants.items():
            infos[key] = TensorInfo(tuple(v.shape), g.nodes[key[0]].outputs[key[1]].dtype, v)
        for st in self._steps:
            node = st.node
            ctx = NodeContext(node.layer, node.attrs, [infos[a] for a in st.args], len(node.layer.outputs))
            try:
                outs = node.op.infer(ctx)
            except RuleError as e:
                raise InputError(Diagnostic("IRN064", f"with these input shapes: {e.message}",
                                            **node.layer.where(self.path))) from None
            except Exception as e:  # a rule that did not anticipate these shapes: still a diagnostic
                raise InputError(Diagnostic("IRN064", f"with these input shapes the operation's shape rule fails "
                                                      f"({type(e).__name__}: {e})",
                                            **node.layer.where(self.path))) from None
            for k, o in enumerate(outs):
                infos[(node.index, k)] = o
        self._check_memory({pi: infos[(pi, 0)] for pi in g.parameters}, infos)
        return infos

    def _bind_out(self, out: Mapping[str, Any] | Sequence[Any],
                  infos: dict[tuple[int, int], TensorInfo] | None) -> list[np.ndarray | None]:
        """Check ``out=`` (output name -> array, or a sequence in output order with None to skip):
        each array must be a writeable numpy array of exactly the output's shape and dtype, and
        no two may overlap.  Returns one destination (or None) per output."""
        if isinstance(out, np.ndarray):
            out = [out]
        if isinstance(out, (str, bytes)) or not isinstance(out, (Mapping, Sequence)):
            raise InputError(Diagnostic("IRN065", f"out= must be a dict of output name -> array or a sequence in "
                                                  f"output order, got {type(out).__name__}", file=self.path))
        dest: list[np.ndarray | None] = [None] * len(self.outputs)
        diags: list[Diagnostic] = []
        if isinstance(out, Mapping):
            by_name = {n: i for i, spec in enumerate(self.outputs) for n in spec.names}
            items = []
            for key, value in out.items():
                idx = by_name.get(key)
                if idx is None:
                    close = difflib.get_close_matches(str(key), list(by_name), n=3)
                    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                    diags.append(Diagnostic("IRN065", f"out=: unknown output {key!r}; the model's outputs are "
                                                      f"{', '.join(repr(o.name) for o in self.outputs)}{hint}",
                                            file=self.path))
                    continue
                items.append((idx, value))
        else:
            seq = list(out)
            if len(seq) > len(self.outputs):
                raise InputError(Diagnostic("IRN065", f"out= has {len(seq)} arrays, the model has "
                                                      f"{len(self.outputs)} outputs", file=self.path))
            items = [(i, v) for i, v in enumerate(seq) if v is not None]
        for idx, value in items:
            spec = self.outputs[idx]
            shape = spec.shape if infos is None else infos[self._out_src[idx]].shape
            what = f"out= array for output {spec.name!r}"
            if dest[idx] is not None:
                diags.append(Diagnostic("IRN065", f"{what} is given twice", file=self.path))
            elif not isinstance(value, np.ndarray):
                diags.append(Diagnostic("IRN065", f"{what} must be a numpy array, got {type(value).__name__}",
                                        file=self.path))
            elif value.dtype != spec.dtype:
                diags.append(Diagnostic("IRN065", f"{what} has dtype {value.dtype}, the output is {spec.dtype} "
                                                  f"({spec.element_type})", file=self.path))
            elif tuple(value.shape) != tuple(shape):
                diags.append(Diagnostic("IRN065", f"{what} has shape {list(value.shape)}, the output has "
                                                  f"{fmt_shape(shape)}", file=self.path))
            elif not value.flags.writeable:
                diags.append(Diagnostic("IRN065", f"{what} is read-only", file=self.path))
            else:
                for j, other in enumerate(dest):
                    if other is not None and np.may_share_memory(value, other):
                        diags.append(Diagnostic("IRN065", f"{what} overlaps the one for output "
                                                          f"{self.outputs[j].name!r}", file=self.path))
                        break
                else:
                    dest[idx] = value
        if diags:
            raise InputError(diags)
        return dest

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
        if (capture is None or capture is False) and not profile and on_layer is None and out is None:
            arrays = self._bind(inputs, cast)
            if self._dynamic:
                self._reinfer(arrays)
            return self._execute(arrays, None)
        cap_nodes = None if capture is None or capture is False else self._capture_nodes(capture)
        arrays = self._bind(inputs, cast)
        infos = self._reinfer(arrays) if self._dynamic else None
        dest = None if out is None else self._bind_out(out, infos)
        captures: list[LayerOutput] = []
        times: list[LayerTime] = []
        hooks: list[LayerHook] = []
        if cap_nodes is not None:
            wanted = None if cap_nodes is True else {n.index for n in cap_nodes}
            for n in ([] if cap_nodes is True else cap_nodes):
                for k in range(len(n.outputs)):
                    if (n.index, k) in self._constants:
                        captures.append(_layer_output(n, k, self._constants[(n.index, k)]))

            def cap(node: Node, outs: Sequence[np.ndarray], _s: float) -> None:
                if wanted is None or node.index in wanted:
                    captures.extend(_layer_output(node, k, o) for k, o in enumerate(outs))

            hooks.append(cap)
        if profile:
            def prof(node: Node, _o: Sequence[np.ndarray], s: float) -> None:
                if node.op is not None and node.op.type != "Parameter":
                    lay = node.layer
                    times.append(LayerTime(node.index, lay.id, lay.name, lay.type, lay.version, s))

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
        result = self._execute(arrays, hook, dest)
        if cap_nodes is not None or profile:
            return RunResult(result, captures, times, time.perf_counter() - t0)
        return result

    def _capture_nodes(self, capture: bool | Sequence[str | int]) -> list[Node] | bool:
        """Resolve capture=... to nodes; unknown names raise ValueError with suggestions."""
        if capture is True:
            return True
        if isinstance(capture, (str, int)):
            capture = [capture]
        g = self.graph
        by_key: dict[str, list[Node]] = {}
        for n in g.nodes:
            by_key.setdefault(n.layer.name, []).append(n)
            by_key.setdefault(n.layer.id, []).append(n)
        run_nodes = {st.node.index for st in self._steps} | set(g.parameters) | {k[0] for k in self._constants}
        out: list[Node] = []
        for key in capture:
            nodes = by_key.get(str(key))
            if not nodes:
                close = difflib.get_close_matches(str(key), [n.layer.name for n in g.nodes], n=3)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                raise ValueError(f"no layer named (or with id) {key!r} in {os.path.basename(self.path)}{hint}")
            for n in nodes:
                if n.index in run_nodes:
                    out.append(n)
                elif n.op is not None and n.op.type == "Result":
                    src = g.nodes[n.sources[0][0]].layer.name if n.sources and n.sources[0] else "?"
                    raise ValueError(f"layer {key!r} is a Result and has no output; capture its producer {src!r}")
                else:
                    raise ValueError(f"layer {key!r} is not run (no Result depends on it)")
        return sorted({n.index: n for n in out}.values(), key=lambda n: n.index)

    def _execute(self, arrays: list[np.ndarray], hook: LayerHook | None,
                 dest: list[np.ndarray | None] | None = None) -> dict[str, np.ndarray]:
        """The one execution loop: feed inputs, run every step, free dead values, collect outputs.
        ``dest``: the caller's out= arrays per output (see run)."""
        pool = sys.modules.get("irnorm.kernels.pool")  # imported once a kernel has been built
        if pool is not None:
            pool.OUTPUTS.trim(self.max_memory - self._peak)  # idle pooled buffers count against the limit
        direct: dict[tuple[int, int], np.ndarray] = {}  # value -> caller array its kernel may write into
        if dest is not None:
            from ..kernels.pool import OUTPUTS  # only here: planning and validation never import kernels

            for d, src in zip(dest, self._out_src, strict=True):
                # An out array that overlaps an input is filled only after everything has run (a later
                # layer may still read that input); a non-contiguous one is filled by a copy.
                if (d is not None and src not in direct and d.flags.c_contiguous
                        and not any(np.may_share_memory(d, a) for a in arrays)):
                    direct[src] = d
        values: dict[tuple[int, int], np.ndarray] = dict(self._constants)
        for pi, arr in zip(self.graph.parameters, arrays, strict=True):
            values[(pi, 0)] = arr
            if hook is not None:
                hook(self.graph.nodes[pi], [arr], 0.0)
        for st in self._steps:
            ins = [values[a] for a in st.args]
            targets = [direct[(st.node.index, k)] for k in range(len(st.node.outputs))
                       if (st.node.index, k) in direct] if direct else None
            try:
                if targets:
                    with OUTPUTS.provide(targets):
                        outs = _call(st, ins, hook)
                else:
                    outs = _call(st, ins, hook)
            except RuleError as e:  # a data-dependent rule (e.g. integer division by zero)
                raise InputError(Diagnostic(e.code if e.code.startswith("IRN06") else "IRN064", e.message,
                                            **st.node.layer.where(self.path))) from None
            except IrnormError as e:
                for d in e.diagnostics:
                    d.file = d.file or self.path
                raise
            for k, o in enumerate(outs):
                values[(st.node.index, k)] = o
            for a in st.frees:
                values.pop(a, None)
        result: dict[str, np.ndarray] = {}
        for i, (spec, src) in enumerate(zip(self.outputs, self._out_src, strict=True)):
            v = values[src]
            d = dest[i] if dest is not None else None
            if d is not None:
                if not _same_memory(v, d):  # the kernel wrote elsewhere (or this is a copy-in case)
                    np.copyto(d, v.reshape(d.shape))
                v = d
            elif self._out_copies[i]:
                v = np.array(v, copy=True)  # never hand out a constant or the caller's own input
            result[spec.name] = v
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, np.ndarray]:
        if args and kwargs:
            raise InputError(Diagnostic("IRN060", "pass inputs either positionally or by name, not both"))
        return self.run(list(args) if args else kwargs)

    def __repr__(self) -> str:
        return (f"Model({os.path.basename(self.path)!r}, inputs={self.inputs}, outputs={self.outputs}, "
                f"layers={len(self.graph.nodes)})")


def _call(st: Step, ins: list[np.ndarray], hook: LayerHook | None) -> Sequence[np.ndarray]:
    """One step's kernel, timed and reported to the hook when there is one."""
    if hook is None:
        return st.kernel(ins)
    t0 = time.perf_counter()
    outs = st.kernel(ins)
    hook(st.node, outs, time.perf_counter() - t0)
    return outs


def _same_memory(v: np.ndarray, d: np.ndarray) -> bool:
    """v is d's own memory in d's element order (the kernel wrote into the out= array)."""
    return (v.dtype == d.dtype and v.size == d.size and v.flags.c_contiguous and d.flags.c_contiguous
            and v.__array_interface__["data"][0] == d.__array_interface__["data"][0])
