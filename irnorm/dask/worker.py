"""What runs inside a Dask worker: the per-process model cache and the per-chunk run.

A task carries a :class:`ModelKey` (paths and a SHA-256 of the XML and weights bytes, a few hundred
bytes), never the model.  The first task in a process that needs a key hashes the files, checks the
hash against the key (a model file changed since the run was planned is refused, IRN001) and loads
the model; every later task in that process reuses the loaded model and its compiled kernels.
Nothing here imports Dask: the functions are plain Python, run by whatever scheduler calls them.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import Diagnostic, ModelFileError, ValidationError

if TYPE_CHECKING:
    from ..runtime.model import Model

CACHE_SIZE = 4  # models kept per process (least recently used dropped first)
_HASH_BLOCK = 1 << 22


@dataclass(frozen=True)
class ModelKey:
    """Identifies a model file by content: where to read it and what its bytes hash to."""

    xml: str  # absolute path
    weights: str | None  # absolute path, None: beside the XML
    sha256: str  # of the XML's bytes, then the weights' bytes (if the file exists)
    max_memory: int | None = None


def file_digest(xml: str, weights: str | None) -> str:
    """SHA-256 over the XML's length and bytes, then the weights' bytes (a missing weights file
    hashes as empty: a model without Consts needs none)."""
    from ..ir.weights import default_weights_path

    h = hashlib.sha256()
    wpath = weights if weights is not None else default_weights_path(xml)
    try:
        with open(xml, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ModelFileError(Diagnostic("IRN001", f"cannot read the model: {e.strerror or e}", file=xml)) from None
    h.update(len(data).to_bytes(8, "little"))
    h.update(data)
    try:
        with open(wpath, "rb") as f:
            while block := f.read(_HASH_BLOCK):
                h.update(block)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise ModelFileError(Diagnostic("IRN040", f"cannot read the weights: {e.strerror or e}", file=wpath)) from None
    return h.hexdigest()


def model_key(xml: str | os.PathLike, weights: str | os.PathLike | None = None,
              max_memory: int | None = None) -> ModelKey:
    x = os.path.abspath(os.fspath(xml))
    w = None if weights is None else os.path.abspath(os.fspath(weights))
    return ModelKey(x, w, file_digest(x, w), max_memory)


_cache: OrderedDict[ModelKey, Model] = OrderedDict()
_lock = threading.Lock()
loads: Counter[ModelKey] = Counter()  # loads per model in this process (a worker loads a model once)


def remember(key: ModelKey, model: Model) -> None:
    """Seed this process's cache with an already loaded model (the threaded scheduler then never
    reloads the model the caller passed)."""
    with _lock:
        _cache[key] = model
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)


def get_model(key: ModelKey) -> Model:
    """The model for `key`, loaded at most once per process."""
    m = _cache.get(key)
    if m is not None:
        return m
    with _lock:  # one load per key even when several threads of a worker start at once
        m = _cache.get(key)
        if m is not None:
            _cache.move_to_end(key)
            return m
        digest = file_digest(key.xml, key.weights)
        if digest != key.sha256:
            raise ModelFileError(Diagnostic("IRN001", "the model's files changed since this run was planned "
                                                      f"(SHA-256 {digest[:12]}..., expected {key.sha256[:12]}...)",
                                            file=key.xml))
        from ..api import load

        m = load(key.xml, key.weights, max_memory=key.max_memory)
        loads[key] += 1
    remember(key, m)
    return m


_malloc_tuned = False
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def keep_large_blocks(limit: int = 1 << 30) -> bool:
    """glibc only, once per process: serve allocations up to `limit` bytes from the heap and keep freed
    memory for reuse, instead of mapping and unmapping every block over 32 MiB.  A zarr run allocates
    several chunk-sized buffers per chunk (the bytes read, the decoded array, the output, the encoded
    bytes); fresh mappings cost a page fault and a zeroed page every 4 KiB, which was most of a 64 MiB
    chunk's time.  The heap then holds about one chunk's working set between chunks.  Turned off by
    ``IRNORM_DASK_MALLOC=default``.  Returns whether the setting was applied."""
    global _malloc_tuned
    if _malloc_tuned:
        return True
    if os.environ.get("IRNORM_DASK_MALLOC", "") == "default" or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        ok = bool(libc.mallopt(M_MMAP_THRESHOLD, int(limit))) and bool(libc.mallopt(M_TRIM_THRESHOLD, int(limit)))
    except (OSError, AttributeError):  # not glibc
        return False
    _malloc_tuned = ok
    return ok


def set_kernel_threads(n: int | None) -> None:
    """Numba threads for this thread's kernels: Dask provides the parallelism across chunks, so a
    task's kernels run on `n` threads (1 by default) instead of every core."""
    if n is None:
        return
    import numba

    numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))


def run_chunk(key: ModelKey, names: Sequence[str], threads: int | None, *blocks: np.ndarray,
              out: Sequence[np.ndarray | None] | None = None) -> tuple[np.ndarray, ...]:
    """Run the model on one chunk of rows; the outputs in the model's output order (written into
    `out`'s arrays where given: see Model.run)."""
    model = get_model(key)
    set_kernel_threads(threads)
    out = model.run(dict(zip(names, blocks, strict=True)), out=out)
    rows = blocks[0].shape[0] if blocks else 0
    result = tuple(out.values())
    for spec, y in zip(model.outputs, result, strict=True):
        if y.ndim == 0 or y.shape[0] != rows:  # the plan-time analysis said this cannot happen
            raise ValidationError(Diagnostic(
                "IRN070", f"output '{spec.name}' has shape {list(y.shape)} for a chunk of {rows} rows: the model "
                          f"does not keep the batch axis first", file=key.xml))
    return result


def warm_up(key: ModelKey, threads: int | None = 1) -> None:
    """Load the model into this process's cache and run it once on one row of zeros, so that the
    first chunk does not pay for loading the model or Numba's compiled kernels.  On a cluster:
    ``client.run(warm_up, key)`` (``key = irnorm.dask.worker.model_key(path)``)."""
    model = get_model(key)
    set_kernel_threads(threads)
    model.run({s.name: np.zeros(tuple(1 if d < 0 else d for d in s.shape), s.dtype) for s in model.inputs})
