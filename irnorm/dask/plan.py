"""Planning a chunked run, before any worker starts: the model and its content key, the batch-axis
analysis (IRN070), the inputs' names, dtypes and shapes (IRN060-IRN062), and every output's shape
for a chunk of a given number of rows (IRN064 when the shape rules do not fit).  No Dask here."""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import Diagnostic, InputError
from ..ir.tensor import fmt_shape
from .batch import BatchPlan, analyze
from .worker import ModelKey, model_key, remember

if TYPE_CHECKING:
    from ..runtime.bind import TensorSpec
    from ..runtime.model import Model


@dataclass
class ChunkPlan:
    model: Model
    key: ModelKey
    batch: BatchPlan


def plan_model(model: str | os.PathLike | Model, weights: str | os.PathLike | None = None,
               max_memory: int | None = None) -> ChunkPlan:
    """Load (or take) the model, key it by content and check that it splits along axis 0."""
    from ..runtime.model import Model

    if isinstance(model, Model):
        m = model
        w = m.graph.weights.path if m.graph.weights is not None else None
        key = model_key(m.path, w, m.max_memory)
    else:
        from ..api import load

        m = load(model, weights, max_memory=max_memory)
        key = model_key(model, weights, max_memory)
    batch = analyze(m.graph)
    if not m.inputs:
        raise InputError(Diagnostic("IRN060", "the model has no inputs: there are no rows to split", file=m.path))
    remember(key, m)  # tasks run by this process (the threaded scheduler) reuse it
    return ChunkPlan(m, key, batch)


def resolve_names(model: Model, given: Iterable[str], where: str) -> dict[str, str]:
    """Canonical input name -> the key the caller used; IRN060 for an unknown or repeated name or a
    missing input."""
    by_alias = {n: s.name for s in model.inputs for n in s.names}
    found: dict[str, str] = {}
    diags = []
    for key in given:
        canon = by_alias.get(key)
        if canon is None:
            close = difflib.get_close_matches(key, list(by_alias), n=3)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            diags.append(Diagnostic("IRN060", f"unknown input {key!r} in {where}; the model's inputs are "
                                              f"{[s.name for s in model.inputs]}{hint}", file=model.path))
        elif canon in found:
            diags.append(Diagnostic("IRN060", f"input {canon!r} is given twice in {where} (as {found[canon]!r} and "
                                              f"{key!r})", file=model.path))
        else:
            found[canon] = key
    for s in model.inputs:
        if s.name not in found and not diags:
            diags.append(Diagnostic("IRN060", f"input {s.name!r} is missing from {where}", file=model.path))
    if diags:
        raise InputError(diags)
    return found


def check_input(spec: TensorSpec, shape: Sequence[int], dtype: Any, what: str, path: str) -> list[Diagnostic]:
    """An input's dtype (no casts), rank and static dims against the model's."""
    diags = []
    dt = np.dtype(dtype)
    if dt != spec.dtype:
        diags.append(Diagnostic("IRN062", f"{what} has dtype {dt}, but the model's input {spec.name!r} is "
                                          f"{spec.element_type} ({spec.dtype})", file=path))
    if spec.shape is not None:
        if len(shape) != len(spec.shape):
            diags.append(Diagnostic("IRN061", f"{what} has shape {list(shape)} (rank {len(shape)}), but the model's "
                                              f"input {spec.name!r} is {fmt_shape(spec.shape)} (rank "
                                              f"{len(spec.shape)})", file=path))
        else:
            bad = [i for i, (d, m) in enumerate(zip(shape, spec.shape, strict=True)) if m >= 0 and d != m and i > 0]
            if bad:
                diags.append(Diagnostic("IRN061", f"{what} has shape {list(shape)}, but the model's input "
                                                  f"{spec.name!r} is {fmt_shape(spec.shape)} (dim {bad[0]})",
                                        file=path))
    return diags


def check_rows(plan: ChunkPlan, shapes: Mapping[str, Sequence[int]], where: str) -> int:
    """All inputs must have the same number of rows; returns it."""
    rows = {n: int(s[0]) for n, s in shapes.items()}
    if len(set(rows.values())) > 1:
        raise InputError(Diagnostic("IRN061", f"the inputs in {where} have different numbers of rows (axis 0): "
                                              f"{rows}", file=plan.model.path))
    return next(iter(rows.values()))


def check_chunks(plan: ChunkPlan, chunks: Sequence[int]) -> None:
    """A model with a static batch dim runs only on chunks of exactly that many rows."""
    for spec in plan.model.inputs:
        d = spec.shape[0] if spec.shape else -1
        if d >= 0 and any(c != d for c in chunks):
            raise InputError(Diagnostic("IRN061", f"the model's input {spec.name!r} has a static batch dim of {d}: "
                                                  f"every chunk must have {d} rows (got chunks {list(chunks)[:8]}"
                                                  f"{'...' if len(chunks) > 8 else ''})", file=plan.model.path))


def output_shapes(plan: ChunkPlan, input_shapes: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Every output's shape for one chunk (inputs in model order), from the model's shape rules
    (IRN064 when they do not fit together, or when a shape depends on input values)."""
    m = plan.model
    shapes = m.output_shapes([tuple(int(d) for d in s) for s in input_shapes])
    for spec, shape in zip(m.outputs, shapes, strict=True):
        if shape is None or any(d < 0 for d in shape):
            raise InputError(Diagnostic("IRN064", f"the shape of output {spec.name!r} cannot be known before running "
                                                  f"(it depends on input values)", file=m.path))
    return [tuple(int(d) for d in s) for s in shapes]
