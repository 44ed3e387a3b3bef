"""Stage 4a: the model's inputs and outputs (names and specs as OpenVINO reports them), and binding a
caller's arrays to them: names, dtypes, ranks and static dims checked, with coded errors (IRN06x)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import Diagnostic, InputError
from ..ir.attrs import AttrError, parse_dim_bounds
from ..ir.dtypes import ELEMENT_TYPES
from ..ir.graph import Graph
from ..ir.tensor import TensorInfo, fmt_dims, fmt_shape

Value = tuple[int, int]  # (node index, output index)


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output: its name (as OpenVINO reports it), every name it
    answers to, its shape (-1 marks a dynamic dim) and numpy dtype."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    element_type: str
    names: tuple[str, ...] = ()
    # per dim (lower, upper or None): a model input's bounds as the IR declares them ("1..4" -> (1, 4));
    # None when nothing bounds the dynamic dims (outputs)
    bounds: tuple[tuple[int, int | None], ...] | None = None

    @property
    def is_dynamic(self) -> bool:
        return self.shape is None or any(d == -1 for d in self.shape)

    @property
    def dims(self) -> str:
        """The shape as OpenVINO writes it: [1..4,16,?]."""
        return fmt_dims(self.shape, self.bounds)

    def __repr__(self) -> str:
        return f"TensorSpec(name={self.name!r}, shape={self.dims}, dtype={self.element_type})"


def io_specs(graph: Graph) -> tuple[list[TensorSpec], list[TensorSpec], list[tuple[int, int]]]:
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
        inputs.append(TensorSpec(canonical, info.shape, ELEMENT_TYPES[info.dtype], info.dtype, all_names,
                                 _bounds(node.layer.data.get("shape", ""), info.shape)))
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


def _bounds(text: str, shape: tuple[int, ...]) -> tuple[tuple[int, int | None], ...] | None:
    """The declared bounds, or None when no dynamic dim is bounded (the common case: nothing to check)."""
    try:
        b = parse_dim_bounds(text)
    except AttrError:
        return None
    if b is None or len(b) != len(shape) or all(d != -1 or bd == (0, None) for d, bd in zip(shape, b, strict=True)):
        return None
    return b


class InputBinder:
    """Checks a call's inputs against the model's input specs."""

    def __init__(self, specs: list[TensorSpec], path: str):
        self.inputs = specs
        self.path = path
        self._name_to_input: dict[str, int] = {}
        for i, spec in enumerate(specs):
            for n in spec.names:
                self._name_to_input.setdefault(n, i)
        self.dynamic = any(s.is_dynamic for s in specs)
        # per input: its exact shape when static (the per-call fast path), else None
        self._static_shapes = [None if s.is_dynamic else tuple(s.shape) for s in specs]

    def fast(self, values: Iterable[Any]) -> list[np.ndarray] | None:
        """The common call: C-contiguous arrays of exactly the declared dtype and static shape,
        one per input, in input order.  None when anything needs the full checks."""
        out = []
        for v, spec, shape in zip(values, self.inputs, self._static_shapes, strict=False):
            if (type(v) is not np.ndarray or v.dtype != spec.dtype or v.shape != shape
                    or not v.flags.c_contiguous):
                return None
            out.append(v)
        return out if len(out) == len(self.inputs) else None

    def bind(self, inputs: Mapping[str, Any] | Sequence[Any] | None, cast: bool) -> list[np.ndarray]:
        if not self.dynamic:
            if type(inputs) is dict and len(inputs) == len(self.inputs):
                fast = self.fast(inputs.get(s.name) for s in self.inputs)
                if fast is not None:
                    return fast
            elif type(inputs) in (list, tuple) and len(inputs) == len(self.inputs):
                fast = self.fast(inputs)
                if fast is not None:
                    return fast
            elif type(inputs) is np.ndarray and len(self.inputs) == 1:
                fast = self.fast([inputs])
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

    def check_shape(self, spec: TensorSpec, shape: tuple[int, ...]) -> None:
        """Rank, static dims and declared bounds of one input (IRN061)."""
        if len(shape) != len(spec.shape):
            raise InputError(Diagnostic(
                "IRN061", f"input {spec.name!r} has rank {len(shape)} {list(shape)}, the model expects rank "
                          f"{len(spec.shape)} {fmt_shape(spec.shape)}", file=self.path))
        bad = [i for i, (d, e) in enumerate(zip(shape, spec.shape, strict=True)) if e != -1 and d != e]
        if bad:
            raise InputError(Diagnostic(
                "IRN061", f"input {spec.name!r} has shape {list(shape)}, the model expects "
                          f"{spec.dims} (dim {bad[0]} must be {spec.shape[bad[0]]})", file=self.path))
        if spec.bounds is not None:
            # as OpenVINO: outside the bounds is refused, except a 0-sized dim (an empty tensor)
            out = [i for i, (d, (lo, hi)) in enumerate(zip(shape, spec.bounds, strict=True))
                   if d and (d < lo or (hi is not None and d > hi))]
            if out:
                lo, hi = spec.bounds[out[0]]
                raise InputError(Diagnostic(
                    "IRN061", f"input {spec.name!r} has shape {list(shape)}, the model expects {spec.dims} "
                              f"(dim {out[0]} must be within {lo}..{'' if hi is None else hi})", file=self.path))

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
        self.check_shape(spec, arr.shape)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        return arr


def bind_out(outputs: list[TensorSpec], sources: list[Value], out: Mapping[str, Any] | Sequence[Any],
             infos: dict[Value, TensorInfo] | None, path: str) -> list[np.ndarray | None]:
    """Check ``out=`` (output name -> array, or a sequence in output order with None to skip):
    each array must be a writeable numpy array of exactly the output's shape and dtype, and
    no two may overlap.  Returns one destination (or None) per output."""
    if isinstance(out, np.ndarray):
        out = [out]
    if isinstance(out, (str, bytes)) or not isinstance(out, (Mapping, Sequence)):
        raise InputError(Diagnostic("IRN065", f"out= must be a dict of output name -> array or a sequence in "
                                              f"output order, got {type(out).__name__}", file=path))
    dest: list[np.ndarray | None] = [None] * len(outputs)
    diags: list[Diagnostic] = []
    if isinstance(out, Mapping):
        by_name = {n: i for i, spec in enumerate(outputs) for n in spec.names}
        items = []
        for key, value in out.items():
            idx = by_name.get(key)
            if idx is None:
                close = difflib.get_close_matches(str(key), list(by_name), n=3)
                hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                diags.append(Diagnostic("IRN065", f"out=: unknown output {key!r}; the model's outputs are "
                                                  f"{', '.join(repr(o.name) for o in outputs)}{hint}",
                                        file=path))
                continue
            items.append((idx, value))
    else:
        seq = list(out)
        if len(seq) > len(outputs):
            raise InputError(Diagnostic("IRN065", f"out= has {len(seq)} arrays, the model has "
                                                  f"{len(outputs)} outputs", file=path))
        items = [(i, v) for i, v in enumerate(seq) if v is not None]
    for idx, value in items:
        spec = outputs[idx]
        shape = spec.shape if infos is None else infos[sources[idx]].shape
        what = f"out= array for output {spec.name!r}"
        if dest[idx] is not None:
            diags.append(Diagnostic("IRN065", f"{what} is given twice", file=path))
        elif not isinstance(value, np.ndarray):
            diags.append(Diagnostic("IRN065", f"{what} must be a numpy array, got {type(value).__name__}",
                                    file=path))
        elif value.dtype != spec.dtype:
            diags.append(Diagnostic("IRN065", f"{what} has dtype {value.dtype}, the output is {spec.dtype} "
                                              f"({spec.element_type})", file=path))
        elif tuple(value.shape) != tuple(shape):
            diags.append(Diagnostic("IRN065", f"{what} has shape {list(value.shape)}, the output has "
                                              f"{fmt_shape(shape)}", file=path))
        elif not value.flags.writeable:
            diags.append(Diagnostic("IRN065", f"{what} is read-only", file=path))
        else:
            for j, other in enumerate(dest):
                if other is not None and np.may_share_memory(value, other):
                    diags.append(Diagnostic("IRN065", f"{what} overlaps the one for output "
                                                      f"{outputs[j].name!r}", file=path))
                    break
            else:
                dest[idx] = value
    if diags:
        raise InputError(diags)
    return dest
