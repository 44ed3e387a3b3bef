"""A zarr group of inputs to a zarr group of outputs, on Dask, resumable: what
``irnorm run model.xml --inputs data.zarr -o out.zarr`` does.

* Everything is checked before any worker starts: the model splits along axis 0 (IRN070), the
  input group is readable (IRN063) and has one array per model input (named by any of the input's
  names; IRN060) with the model's dtype (IRN062), rank and static dims (IRN061) and the same number
  of rows; every output's shape is known (IRN064).
* The rows are cut into chunks of ``chunk_rows`` (default: about 64 MiB of inputs, a multiple of the
  first input's zarr chunk rows).  One task per chunk reads its rows from the input arrays, runs the
  model (loaded once per worker process), writes the outputs' rows -- each output array is chunked
  exactly like the tasks (stored in the input group's zarr format, with the first input array's
  compressors), so no two tasks touch one zarr chunk -- and then sets the chunk's marker
  in the output group's ``irnorm_done`` array (uint8, uncompressed, one zarr chunk per marker, so
  markers are written without read-modify-write races).  Nothing but a chunk index goes back to the
  client.  Uncompressed chunks on a local disk are read and written as raw bytes, one copy each way
  (``chunkfiles``; ``IRNORM_ZARR_DIRECT=0`` sends everything through zarr's own API).
* The output group's ``irnorm_run`` attribute records what is being computed (the model's SHA-256,
  the input arrays' paths, shapes and dtypes, the chunk rows, the outputs).  Running again with the
  same model, inputs and chunking computes only the chunks without a marker (a chunk cut short by
  an interruption has none, and is redone whole); the chunks already written are not touched.  An
  output group written by a different run is refused (IRN065) rather than mixed.
* Schedulers: a ``distributed.LocalCluster`` of `workers` processes (one thread each), or the
  scheduler at `scheduler` (an address, or a ``distributed.Client``; its workers must see the same
  paths), else the process's default ``distributed.Client`` if there is one, else in-process threads.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import dask  # this module is the zarr path: importing it without the [dask] extra is an ImportError
import numpy as np
import zarr

from ..errors import Diagnostic, InputError
from .chunkfiles import ChunkFiles, chunk_files, read_block, write_block
from .plan import check_chunks, check_input, check_rows, output_shapes, plan_model
from .worker import ModelKey, keep_large_blocks, run_chunk

DONE = "irnorm_done"  # per-chunk markers in the output group
RUN_ATTR = "irnorm_run"  # what the output group holds (checked when resuming)
TARGET_CHUNK_BYTES = 64 << 20
_ONE = np.ones(1, np.uint8)  # a chunk's marker
_spare = threading.local()  # per thread: {run token: the last chunk's output arrays, free for reuse}


@dataclass
class ZarrRun:
    """What a run did."""

    rows: int
    chunk_rows: int
    chunks: int
    already_done: int
    computed: list[int] = field(default_factory=list)  # chunk indices computed by this run
    outputs: dict[str, tuple[tuple[int, ...], str]] = field(default_factory=dict)  # name -> (shape, dtype)
    seconds: float = 0.0

    def counts(self) -> dict[str, int]:
        """What ``irnorm run`` reports: rows, chunk rows, chunks, computed and skipped (already done)."""
        return {"rows": self.rows, "chunk_rows": self.chunk_rows, "chunks": self.chunks,
                "computed": len(self.computed), "skipped": self.already_done}


def is_zarr_path(path: str | os.PathLike | None) -> bool:
    """A path the CLI hands to irnorm.dask: ends in .zarr, or is a directory holding zarr metadata."""
    if path is None:
        return False
    p = os.fspath(path).rstrip("/\\")
    if p.lower().endswith(".zarr"):
        return True
    return os.path.isdir(p) and any(os.path.exists(os.path.join(p, f)) for f in ("zarr.json", ".zgroup"))


def _read_error(path: str, e: BaseException) -> InputError:
    return InputError(Diagnostic("IRN063", f"cannot read the zarr group {path}: {type(e).__name__}: {e}", file=path))


def _out_error(path: str, msg: str) -> InputError:
    return InputError(Diagnostic("IRN065", msg, file=path))


def default_chunk_rows(row_bytes: int, zarr_rows: int, target: int = TARGET_CHUNK_BYTES) -> int:
    """About `target` bytes of inputs per chunk, a multiple of the inputs' zarr chunk rows."""
    zarr_rows = max(1, zarr_rows)
    n = max(1, target // max(1, row_bytes))
    return max(zarr_rows, n // zarr_rows * zarr_rows)


# ---- worker side ------------------------------------------------------------------------

_arrays: dict[tuple[str, str, str], tuple[Any, ChunkFiles | None]] = {}


def _open(store: str, path: str, token: str, mode: str) -> tuple[Any, ChunkFiles | None]:
    """A zarr array and its raw chunk layout (None: zarr reads and writes it), opened once per
    process and run (the token names the run)."""
    k = (store, path, token)
    a = _arrays.get(k)
    if a is None:
        arr = zarr.open_array(store=store, path=path, mode=mode)
        a = _arrays[k] = (arr, None if os.environ.get("IRNORM_ZARR_DIRECT") == "0" else chunk_files(arr))
        if len(_arrays) > 256:
            _arrays.clear()
            _arrays[k] = a
    return a




def process_chunk(key: ModelKey, threads: int | None, token: str, in_store: str, in_paths: Sequence[str],
                  names: Sequence[str], out_store: str, out_paths: Sequence[str], i: int, chunk_rows: int,
                  rows: int) -> int:
    """One chunk: read rows [i*R, (i+1)*R) of every input, run, write every output, then the marker."""
    keep_large_blocks()
    lo, hi = i * chunk_rows, min(rows, (i + 1) * chunk_rows)
    blocks = [read_block(*_open(in_store, p, token, "r"), lo, hi, k) for k, p in enumerate(in_paths)]
    # The outputs go into the arrays this thread's previous chunk of the run produced (written to disk
    # by now): a chunk-sized allocation on a thread other than the main one is a fresh mapping from
    # glibc (its thread arenas cannot hold 64 MiB), a page fault every 4 KiB.
    spare = getattr(_spare, "outputs", {}).get(token)
    dest = None if spare is None else [a[:hi - lo] if a.shape[0] >= hi - lo else None for a in spare]
    outs = run_chunk(key, names, threads, *blocks, out=dest)
    for p, y in zip(out_paths, outs, strict=True):
        write_block(*_open(out_store, p, token, "r+"), lo, y)
    keep = list(outs) if spare is None else [s if d is not None else y for s, d, y in zip(spare, dest, outs,
                                                                                           strict=True)]
    if any(np.may_share_memory(a, b) for j, a in enumerate(keep) for b in keep[:j]):
        keep = None  # two outputs are one array (out= arrays must not overlap): nothing to reuse
    _spare.outputs = {} if keep is None else {token: keep}
    write_block(*_open(out_store, DONE, token, "r+"), i, _ONE)
    return i


# ---- client side ------------------------------------------------------------------------


def _find_inputs(plan: Any, group: Any, path: str) -> list[tuple[str, Any]]:
    """(array name in the group, zarr array) per model input, in model order."""
    m = plan.model
    found, diags = [], []
    try:
        available = sorted(group.array_keys())
    except Exception as e:  # noqa: BLE001 - any store failure is an unreadable input
        raise _read_error(path, e) from None
    for spec in m.inputs:
        hits = [n for n in dict.fromkeys(spec.names) if n in available]
        if not hits:
            hits = []
            for n in dict.fromkeys(spec.names):  # nested paths ("a/b") are not in array_keys()
                try:
                    group[n]
                    hits.append(n)
                except (KeyError, ValueError, TypeError):
                    pass
        if not hits:
            diags.append(Diagnostic("IRN060", f"no array for the model's input {spec.name!r} in {path} (it has "
                                              f"{available or 'no arrays'}; the input answers to "
                                              f"{list(spec.names)})", file=path))
            continue
        if len(hits) > 1:
            diags.append(Diagnostic("IRN060", f"{path} has arrays {hits}, all names of the input {spec.name!r}: "
                                              f"which one is meant is ambiguous", file=path))
            continue
        try:
            arr = group[hits[0]]
            shape, dtype = tuple(arr.shape), np.dtype(arr.dtype)
        except Exception as e:  # noqa: BLE001 - unreadable metadata, a group where an array should be
            diags.append(Diagnostic("IRN063", f"{path}/{hits[0]} is not a readable array ({type(e).__name__}: {e})",
                                    file=path))
            continue
        d = check_input(spec, shape, dtype, f"zarr array {hits[0]!r} {list(shape)} {dtype}", path)
        if not d and len(shape) == 0:
            d = [Diagnostic("IRN061", f"zarr array {hits[0]!r} is a scalar: it needs rows (axis 0)", file=path)]
        diags += d
        found.append((hits[0], arr))
    if diags:
        raise InputError(diags)
    return found


def _prepare_output(path: str, record: dict, shapes: dict[str, tuple[int, ...]], dtypes: dict[str, np.dtype],
                    chunk_rows: int, nchunks: int, zarr_format: int, compressors: Any) -> Any:
    if DONE in shapes:
        raise _out_error(path, f"the model has an output named {DONE!r}, the name irnorm keeps for its chunk markers")
    exists = os.path.exists(path)
    try:
        g = zarr.open_group(path, mode="r+" if exists else "w-", zarr_format=None if exists else zarr_format)
    except Exception as e:  # noqa: BLE001 - a file where the group should be, unreadable metadata
        raise _out_error(path, f"cannot open {path} as a zarr group for the outputs "
                               f"({type(e).__name__}: {e})") from None
    have = g.attrs.get(RUN_ATTR)
    if have is None:
        members = list(g.keys())
        if members:
            raise _out_error(path, f"{path} already holds {members[:5]} and was not written by an irnorm run: "
                                   f"choose another output or remove it")
        g.attrs[RUN_ATTR] = record  # claim the group before writing anything else
    elif have != record:
        diff = sorted(k for k in set(have) | set(record) if have.get(k) != record.get(k))
        raise _out_error(path, f"{path} holds the outputs of a different run (differs in {', '.join(diff)}): remove "
                               f"it, or choose another output, to start afresh")
    members = set(g.array_keys())
    for name, shape in shapes.items():
        if name not in members:
            g.create_array(name, shape=shape, chunks=(chunk_rows,) + shape[1:], dtype=dtypes[name], fill_value=0,
                           compressors=compressors)
    if DONE not in members:
        g.create_array(DONE, shape=(nchunks,), chunks=(1,), dtype="uint8", fill_value=0, compressors=None)
    return g


def run_zarr(model: str | os.PathLike | Any, inputs: str | os.PathLike, output: str | os.PathLike, *,
             weights: str | os.PathLike | None = None, chunk_rows: int | None = None, workers: int | None = None,
             scheduler: str | Any | None = None, kernel_threads: int | None = 1, max_memory: int | None = None,
             progress: bool = False, on_plan: Callable[[ZarrRun], None] | None = None) -> ZarrRun:
    """Run `model` over the zarr group `inputs` into the zarr group `output` (see the module notes).
    `on_plan(run)` is called once the checks pass, before any chunk is computed."""
    t0 = time.perf_counter()
    in_path, out_path = os.path.abspath(os.fspath(inputs)), os.path.abspath(os.fspath(output))
    plan = plan_model(model, weights, max_memory)
    m = plan.model
    try:
        group = zarr.open_group(in_path, mode="r")
    except Exception as e:  # noqa: BLE001 - missing, not a group, corrupt metadata
        raise _read_error(in_path, e) from None
    found = _find_inputs(plan, group, in_path)
    rows = check_rows(plan, {s.name: a.shape for s, (_, a) in zip(m.inputs, found, strict=True)}, in_path)
    row_bytes = sum(int(np.prod(a.shape[1:], dtype=np.int64)) * np.dtype(a.dtype).itemsize for _, a in found)
    static = [s.shape[0] for s in m.inputs if s.shape and s.shape[0] >= 0]
    if chunk_rows is None:
        chunk_rows = static[0] if static else default_chunk_rows(row_bytes, int(found[0][1].chunks[0]))
    if chunk_rows < 1:
        raise InputError(Diagnostic("IRN061", f"chunk rows must be at least 1, got {chunk_rows}", file=in_path))
    nchunks = -(-rows // chunk_rows)
    sizes = [min(chunk_rows, rows - i * chunk_rows) for i in range(nchunks)]
    check_chunks(plan, sizes)
    inner = [tuple(a.shape[1:]) for _, a in found]
    shapes: dict[str, tuple[int, ...]] = {}
    for n in sorted(set(sizes)) or [0]:
        for spec, shp in zip(m.outputs, output_shapes(plan, [(n,) + s for s in inner]), strict=True):
            shapes[spec.name] = (rows,) + shp[1:]
    dtypes = {s.name: s.dtype for s in m.outputs}
    record = {
        "format": 1,
        "model_sha256": plan.key.sha256,
        "inputs": {s.name: {"group": in_path, "array": n, "shape": list(a.shape), "dtype": str(np.dtype(a.dtype))}
                   for s, (n, a) in zip(m.inputs, found, strict=True)},
        "rows": rows,
        "chunk_rows": chunk_rows,
        "outputs": {k: {"shape": list(v), "dtype": str(dtypes[k])} for k, v in shapes.items()},
    }
    # the outputs are stored like the inputs: same zarr format, the first input's compressors
    g = _prepare_output(out_path, record, shapes, dtypes, chunk_rows, nchunks, group.metadata.zarr_format,
                        found[0][1].compressors)
    done = np.asarray(g[DONE][:]) if nchunks else np.zeros(0, np.uint8)
    todo = [i for i in range(nchunks) if not done[i]]
    result = ZarrRun(rows, chunk_rows, nchunks, nchunks - len(todo),
                     outputs={k: (v, str(dtypes[k])) for k, v in shapes.items()})
    if on_plan is not None:
        on_plan(result)
    if todo:
        result.computed = _compute(plan.key, kernel_threads, in_path, [n for n, _ in found], [s.name for s in m.inputs],
                                   out_path, list(shapes), todo, chunk_rows, rows, workers, scheduler, progress)
    result.seconds = time.perf_counter() - t0
    return result


def _compute(key: ModelKey, threads: int | None, in_path: str, in_arrays: list[str], names: list[str], out_path: str,
             out_arrays: list[str], todo: list[int], chunk_rows: int, rows: int, workers: int | None,
             scheduler: str | Any | None, progress: bool) -> list[int]:
    from dask.base import tokenize

    token = tokenize(key, in_path, in_arrays, out_path, out_arrays, chunk_rows, rows, time.time_ns())
    task = dask.delayed(process_chunk, pure=False)
    tasks = [task(key, threads, token, in_path, in_arrays, names, out_path, out_arrays, i, chunk_rows, rows,
                  dask_key_name=f"irnorm-chunk-{token}-{i}") for i in todo]
    if workers is None and scheduler is None:
        scheduler = _default_client()
        if scheduler is None:
            if progress:
                from dask.diagnostics import ProgressBar

                with ProgressBar(out=sys.stderr):
                    return list(dask.compute(*tasks, scheduler="threads"))
            return list(dask.compute(*tasks, scheduler="threads"))
    from distributed import Client, LocalCluster
    from distributed.diagnostics.progressbar import TextProgressBar

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=logging.ERROR)
    own = cluster is not None or isinstance(scheduler, str)
    client = Client(cluster if cluster is not None else scheduler, set_as_default=False) if own else scheduler
    futures = []
    try:
        futures = client.compute(tasks)
        if progress:  # a text bar on the terminal, until every chunk is done
            TextProgressBar(futures, scheduler=client.scheduler.address, complete=True)
        return list(client.gather(futures))
    except BaseException:
        client.cancel(futures)
        raise
    finally:
        if own:
            client.close()
        if cluster is not None:
            cluster.close()


def _default_client() -> Any:
    """The process's default distributed.Client, if there is one (Dask's own convention)."""
    if "distributed" not in sys.modules:  # no client without it; importing it costs 0.3 s
        return None
    try:
        from distributed import default_client

        return default_client()
    except (ImportError, ValueError):
        return None
