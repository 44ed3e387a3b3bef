"""``irnorm.dask.run``: a model over Dask arrays chunked along axis 0, lazily."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import Diagnostic, InputError
from .plan import check_chunks, check_input, check_rows, output_shapes, plan_model, resolve_names
from .worker import run_chunk

if TYPE_CHECKING:
    import dask.array as da

    from ..runtime.model import Model


def run(model: str | os.PathLike | Model, inputs: Mapping[str, Any], *, weights: str | os.PathLike | None = None,
        kernel_threads: int | None = 1, max_memory: int | None = None) -> dict[str, da.Array]:
    """Run `model` (a path to an IR, or a loaded :class:`irnorm.runtime.model.Model`) on Dask arrays.

    `inputs` maps input names (any name an input answers to) to Dask arrays (NumPy arrays are
    wrapped as one chunk) with the model's dtypes, chunked along axis 0; chunks along other axes
    are merged, and every input is rechunked to the first input's row chunks.  Returns one lazy
    Dask array per model output, by output name, chunked like the inputs along axis 0, with its
    shape and dtype known now.  Nothing runs until the arrays are computed (any scheduler, or a
    ``distributed.Client``).

    Each task carries the model's paths and SHA-256, not the model: a worker process loads it once
    and reuses it (see :mod:`irnorm.dask.worker`).  Each task's kernels use `kernel_threads` Numba
    threads (default 1: Dask runs chunks in parallel; None leaves Numba's setting alone).

    Raises, before building anything: ValidationError IRN070 if the model mixes rows (naming the
    layer), InputError IRN060-IRN062 for missing, unknown, mistyped or misshapen inputs, IRN061 for
    unknown chunk sizes or a static batch dim the chunks do not match, IRN064 for shapes the model's
    rules reject."""
    import dask
    import dask.array as da
    from dask.base import tokenize

    plan = plan_model(model, weights, max_memory)
    m = plan.model
    if not isinstance(inputs, Mapping):
        raise InputError(Diagnostic("IRN060", f"inputs must be a dict of input name -> dask array, got "
                                              f"{type(inputs).__name__}", file=m.path))
    names = resolve_names(m, list(inputs), "the inputs")
    arrays = []
    diags = []
    for spec in m.inputs:
        x = inputs[names[spec.name]]
        if not isinstance(x, da.Array):
            x = da.from_array(np.asarray(x), chunks=-1)
        diags += check_input(spec, x.shape, x.dtype, f"input {names[spec.name]!r}", m.path)
        arrays.append(x)
    if diags:
        raise InputError(diags)
    if any(x.ndim == 0 for x in arrays):
        raise InputError(Diagnostic("IRN061", "inputs need a batch axis (axis 0)", file=m.path))
    if any(np.isnan(c) for x in arrays for cs in x.chunks for c in cs):
        raise InputError(Diagnostic("IRN061", "an input has unknown chunk sizes (call compute_chunk_sizes() first)",
                                    file=m.path))
    check_rows(plan, {s.name: x.shape for s, x in zip(m.inputs, arrays, strict=True)}, "the inputs")
    chunks0 = arrays[0].chunks[0]
    check_chunks(plan, chunks0)
    arrays = [x if x.chunks[0] == chunks0 and all(len(c) == 1 for c in x.chunks[1:])
              else x.rechunk((chunks0,) + tuple(-1 for _ in x.shape[1:])) for x in arrays]

    names_in_order = [s.name for s in m.inputs]
    token = tokenize(plan.key, names_in_order, [x.name for x in arrays], kernel_threads)
    blocks = [x.to_delayed(optimize_graph=False).reshape(-1) for x in arrays]
    task = dask.delayed(run_chunk, pure=True, nout=len(m.outputs))
    shapes_by_rows: dict[int, list[tuple[int, ...]]] = {}
    pieces: list[list[da.Array]] = [[] for _ in m.outputs]
    for i, n in enumerate(chunks0):
        if n not in shapes_by_rows:
            shapes_by_rows[n] = output_shapes(plan, [(n,) + tuple(x.shape[1:]) for x in arrays])
        res = task(plan.key, names_in_order, kernel_threads, *[b[i] for b in blocks],
                   dask_key_name=f"irnorm-run-{token}-{i}")
        for k, spec in enumerate(m.outputs):
            pieces[k].append(da.from_delayed(res[k], shape=shapes_by_rows[n][k], dtype=spec.dtype,
                                             meta=np.empty((0,) * len(shapes_by_rows[n][k]), spec.dtype),
                                             name=f"irnorm-out{k}-{token}-{i}"))
    if not chunks0:  # zero rows in zero chunks: empty outputs of the right shape
        shp = output_shapes(plan, [(0,) + tuple(x.shape[1:]) for x in arrays])
        return {s.name: da.zeros(shp[k], dtype=s.dtype) for k, s in enumerate(m.outputs)}
    return {spec.name: da.concatenate(pieces[k], axis=0) for k, spec in enumerate(m.outputs)}
