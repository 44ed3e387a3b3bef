"""`irnorm run model.xml --inputs data.zarr -o out.zarr`: a model over a zarr group, chunk by chunk.

The input group holds one array per model input (named by any of the input's names), all with the
same number of rows (axis 0).  The output group gets one array per model output, chunked by rows.
Each task reads its rows from the inputs, runs the model (loaded once per worker process), writes
whole chunks of every output, then sets its flag in the output group's ``irnorm_done`` array (one
zarr chunk per flag, written after the data): a run that was interrupted and started again skips the
chunks whose flag is set, so nothing written is computed twice or lost, and deleting the output
group deletes the flags with it.  Everything the inputs must satisfy (names, dtypes, dims, row counts) is
checked before any worker starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import Diagnostic, InputError
from . import batch_plan, cached_model, load, model_key

DONE = "irnorm_done"


def _open_inputs(m: Any, path: str) -> dict[str, Any]:
    import zarr

    try:
        group = zarr.open_group(path, mode="r")
    except Exception as e:  # noqa: BLE001 - not a zarr group, unreadable
        raise InputError(Diagnostic("IRN063", f"cannot open the zarr group: {e}", file=path)) from None
    arrays: dict[str, Any] = {}
    problems: list[Diagnostic] = []
    names = set(group.array_keys())
    rows = set()
    for spec in m.inputs:
        key = next((n for n in spec.names if n in names), None)
        if key is None:
            problems.append(Diagnostic("IRN060", f"the group has no array for input {spec.name!r} (it has "
                                                 f"{', '.join(sorted(names)) or 'none'})", file=path))
            continue
        a = group[key]
        if np.dtype(a.dtype) != spec.dtype:
            problems.append(Diagnostic("IRN062", f"array {key!r} has dtype {a.dtype}, input {spec.name!r} expects "
                                                 f"{spec.dtype} ({spec.element_type})", file=path))
            continue
        rows.add(a.shape[0] if a.ndim else None)
        arrays[spec.name] = a
    if len(rows) > 1:
        problems.append(Diagnostic("IRN061", f"the input arrays have different row counts {sorted(rows)}", file=path))
    if problems:
        raise InputError(problems)
    m.output_shapes([tuple(arrays[s.name].shape) for s in m.inputs])  # ranks, dims, bounds: IRN061
    return arrays


def _chunk_task(key: tuple, in_path: str, names: list[str], out_path: str, outs: list[str], i: int, rows: int,
                total: int) -> int:
    import zarr

    lo, hi = i * rows, min((i + 1) * rows, total)
    src = zarr.open_group(in_path, mode="r")
    m = cached_model(key)
    values = m.run([np.asarray(src[n][lo:hi]) for n in names])
    dst = zarr.open_group(out_path, mode="r+")
    for name, v in zip(outs, values.values(), strict=True):
        dst[name][lo:hi] = v
    dst[DONE][i] = 1  # written last: the chunk is complete
    return hi - lo


def run_zarr(model: str, in_path: str, out_path: str, *, weights: str | None = None, workers: int | None = None,
             scheduler: str | None = None, chunk_rows: int | None = None, progress: bool = False
             ) -> dict[str, int]:
    """Run `model` over the zarr group `in_path` into the group `out_path`.  Returns counts:
    chunks in all, chunks already done (skipped), chunks computed now, rows."""
    import dask
    import zarr

    m = load(model, weights)
    batch_plan(m)
    arrays = _open_inputs(m, in_path)
    names = [spec.name for spec in m.inputs]
    first = arrays[names[0]]
    total = int(first.shape[0])
    rows = int(chunk_rows or (first.chunks[0] if first.chunks else total) or 1)
    shapes = m.output_shapes([(total,) + tuple(arrays[n].shape[1:]) for n in names])
    out = zarr.open_group(out_path, mode="a")
    for spec, shape in zip(m.outputs, shapes, strict=True):
        if spec.name in out.array_keys():
            a = out[spec.name]
            if tuple(a.shape) != tuple(shape) or np.dtype(a.dtype) != spec.dtype:
                raise InputError(Diagnostic("IRN061", f"the output group already holds {spec.name!r} with shape "
                                                      f"{list(a.shape)} {a.dtype}, not {list(shape)} {spec.dtype}: "
                                                      "write to a new group", file=out_path))
            continue
        out.create_array(spec.name, shape=shape, dtype=spec.dtype, chunks=(rows,) + tuple(shape[1:]) or (1,))
    n_chunks = -(-total // rows) if total else 0
    if DONE in out.array_keys() and out[DONE].shape != (n_chunks,):
        raise InputError(Diagnostic("IRN061", f"the output group was written in chunks of another size "
                                              f"({out[DONE].shape[0]} flags, now {n_chunks}): use the same --chunk "
                                              "or a new group", file=out_path))
    if DONE not in out.array_keys():
        out.create_array(DONE, shape=(n_chunks,), dtype=np.uint8, chunks=(1,), fill_value=0)
    done = {int(i) for i in np.flatnonzero(out[DONE][:])}
    todo = [i for i in range(n_chunks) if i not in done]
    key = model_key(m.path, m.graph.weights.path if m.graph.weights is not None else weights)
    outs = [spec.name for spec in m.outputs]
    tasks = [dask.delayed(_chunk_task, pure=False)(key, in_path, names, out_path, outs, i, rows, total) for i in todo]
    if tasks:
        _compute(tasks, workers, scheduler, progress)
    return {"chunks": n_chunks, "skipped": len(done & set(range(n_chunks))), "computed": len(todo), "rows": total}


def _compute(tasks: list, workers: int | None, scheduler: str | None, progress: bool) -> None:
    import dask

    if scheduler or workers:
        import distributed

        if scheduler:
            client = distributed.Client(scheduler)
            cluster = None
        else:
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=":0")
            client = distributed.Client(cluster)
        try:
            futures = client.compute(tasks)
            if progress:
                distributed.progress(futures)
            client.gather(futures)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
        return
    if progress:
        from dask.diagnostics import ProgressBar

        with ProgressBar():
            dask.compute(*tasks, scheduler="threads")
    else:
        dask.compute(*tasks, scheduler="threads")
