"""Stages 3 and 4: plan a checked graph (constant folding, kernel choice, memory
budget) and execute it.

A Model is safe to run from several threads at once: the plan is read-only after
loading, and every call allocates its own intermediates.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import Diagnostic, InputError, ResourceLimitError, ValidationError
from ..ir.dtypes import ELEMENT_TYPES
from ..ir.graph import Graph, Node
from ..ops.base import NodeContext, RuleError, TensorInfo, fmt_shape

# Tensors larger than this are absurd on any machine; refused before any arithmetic.
ABSURD_BYTES = 1 << 46


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
        return any(d == -1 for d in self.shape)

    def __repr__(self) -> str:
        return f"TensorSpec(name={self.name!r}, shape={fmt_shape(self.shape)}, dtype={self.element_type})"


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
        self._plan()
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
        if peak > self.max_memory:
            raise ResourceLimitError(Diagnostic(
                "IRN051", f"running this model needs about {peak / 2**20:.1f} MiB, over the limit of "
                          f"{self.max_memory / 2**20:.1f} MiB (--max-memory / max_memory=)", file=self.path))

    # ---- inputs ---------------------------------------------------------------------

    def _bind(self, inputs: Mapping[str, Any] | Sequence[Any] | None, cast: bool) -> list[np.ndarray]:
        if inputs is None:
            inputs = {}
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

    def _reinfer(self, arrays: list[np.ndarray]) -> None:
        """Dynamic models: re-run every shape rule with the concrete shapes, then check memory."""
        g = self.graph
        infos: dict[tuple[int, int], TensorInfo] = {}
        for pi, arr in zip(g.parameters, arrays, strict=True):
            infos[(pi, 0)] = TensorInfo(tuple(arr.shape), self.inputs[g.parameters.index(pi)].element_type)
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
            for k, o in enumerate(outs):
                infos[(node.index, k)] = o
        self._check_memory({pi: infos[(pi, 0)] for pi in g.parameters}, infos)

    def run(self, inputs: Mapping[str, Any] | Sequence[Any] | None = None, *, cast: bool = False
            ) -> dict[str, np.ndarray]:
        """Run the model.  `inputs` maps input names (or any of their tensor names) to
        arrays, or is a sequence in input order.  Returns {output name: array} in
        output order.  Arrays must have the declared dtype unless ``cast=True``."""
        arrays = self._bind(inputs, cast)
        if self._dynamic:
            self._reinfer(arrays)
        values: dict[tuple[int, int], np.ndarray] = dict(self._constants)
        for pi, arr in zip(self.graph.parameters, arrays, strict=True):
            values[(pi, 0)] = arr
        for st in self._steps:
            outs = st.kernel([values[a] for a in st.args])
            for k, o in enumerate(outs):
                values[(st.node.index, k)] = o
            for a in st.frees:
                values.pop(a, None)
        result: dict[str, np.ndarray] = {}
        for spec, src in zip(self.outputs, self._out_src, strict=True):
            v = values[src]
            if src in self._constants or src[0] in self.graph.parameters:
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


def raise_if_invalid(graph: Graph) -> None:
    if not graph.ok:
        raise ValidationError(graph.diagnostics)
