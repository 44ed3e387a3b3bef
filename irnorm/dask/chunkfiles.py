"""Whole chunks of an uncompressed zarr array on a local disk, read and written as raw bytes.

For a 64 MiB chunk, zarr's own path reads the file into a new bytes object, decodes it into a new
array and copies that into the result, and on the way out encodes and writes through a temporary
file: three or four chunk-sized copies, each into freshly touched memory.  When a chunk file holds
exactly the array's bytes -- a ``LocalStore``, no compressor, filter or sharding, native byte order,
C order, a chunk spanning every axis but the first -- a task whose rows lie in one chunk file maps
that file (a private, copy-on-write mapping: the model reads the page cache itself, no copy; the
kernel maps 16 pages a fault, so a 64 MiB chunk already in the page cache is ready in ~3 ms against
~11 ms for a ``readinto``), rows across several files are read with one ``readinto`` each into a
buffer the thread reuses, and an output chunk is written with one ``write`` from the result (then an
atomic rename, as zarr does).  Everything else (and any surprise: a missing chunk, a file of the wrong
size) goes through zarr, so the direct path only ever changes how fast, never what is read or written.
"""

from __future__ import annotations

import functools
import mmap
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..fileio import atomic_write


@dataclass(frozen=True)
class ChunkFiles:
    """Where a zarr array's chunk files are and how many rows each holds."""

    root: str  # the array's directory
    key: Any  # chunk coordinates -> key relative to root (the array's chunk key encoding)
    chunk_rows: int
    shape: tuple[int, ...]
    dtype: np.dtype

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    def path(self, c: int) -> str:
        return os.path.join(self.root, self.key((c,) + (0,) * (len(self.shape) - 1)))

    def covers(self, lo: int, hi: int) -> bool:
        """Rows [lo, hi) are whole chunks (the last one may end at the array's end)."""
        return lo % self.chunk_rows == 0 and (hi % self.chunk_rows == 0 or hi == self.shape[0]) and lo < hi


def chunk_files(arr: Any) -> ChunkFiles | None:
    """The raw layout of `arr`'s chunks, or None when its chunk files are not plain array bytes."""
    try:
        from zarr.storage import LocalStore

        store, meta = arr.store, arr.metadata
        dt = np.dtype(arr.dtype)
        shape, chunks = tuple(arr.shape), tuple(arr.chunks)
        if not isinstance(store, LocalStore) or dt.kind not in "biufc" or not dt.isnative or len(shape) == 0:
            return None
        if chunks[1:] != shape[1:] or chunks[0] < 1:
            return None
        if meta.zarr_format == 3:
            from zarr.codecs import BytesCodec

            codecs = tuple(meta.codecs)
            if len(codecs) != 1 or not isinstance(codecs[0], BytesCodec):
                return None
            endian = codecs[0].endian
            if dt.itemsize > 1 and (endian is None or endian.value != sys.byteorder):
                return None
        elif meta.zarr_format == 2:
            if meta.compressor is not None or meta.filters or meta.order != "C":
                return None
        else:
            return None
        root = os.path.join(os.fspath(store.root), *[p for p in arr.path.split("/") if p])
        return ChunkFiles(root, meta.encode_chunk_key, int(chunks[0]), shape, dt)
    except Exception:  # noqa: BLE001 - an unfamiliar zarr version or layout: zarr's own path does it
        return None


_buffers = threading.local()  # one reusable input buffer per (thread, array): tasks on one thread run in turn


def read_rows(cf: ChunkFiles, lo: int, hi: int, slot: int) -> np.ndarray | None:
    """Rows [lo, hi) read straight from their chunk files into this thread's buffer number `slot`
    (valid until the thread's next call with that slot); None when zarr must do it."""
    if not cf.covers(lo, hi):
        return None
    rb, zr = cf.row_bytes, cf.chunk_rows
    if hi > lo and lo // zr == (hi - 1) // zr:
        return _mapped_rows(cf, lo, hi)
    bufs = getattr(_buffers, "by_slot", None)
    if bufs is None:
        bufs = _buffers.by_slot = {}
    want = (hi - lo,) + cf.shape[1:]
    buf = bufs.get(slot)
    if buf is None or buf.dtype != cf.dtype or buf.shape[1:] != want[1:] or buf.shape[0] < want[0]:
        buf = bufs[slot] = np.empty(want, cf.dtype)
    out = buf[:hi - lo]
    full = zr * rb
    for c in range(lo // zr, -(-hi // zr)):
        r0 = c * zr
        n = min(zr, hi - r0)
        view = memoryview(out[r0 - lo:r0 - lo + n]).cast("B")
        try:
            with open(cf.path(c), "rb", buffering=0) as f:
                if os.fstat(f.fileno()).st_size != full:
                    return None
                got = 0
                while got < len(view):
                    k = f.readinto(view[got:])
                    if not k:
                        return None
                    got += k
        except OSError:  # a missing chunk (the fill value), permissions: zarr decides
            return None
    return out


def _mapped_rows(cf: ChunkFiles, lo: int, hi: int) -> np.ndarray | None:
    """Rows [lo, hi) of one chunk file as an array over a private mapping of the file (writable, copy on
    write: the file never changes); None when zarr must read them."""
    rb, zr = cf.row_bytes, cf.chunk_rows
    full = zr * rb
    try:
        with open(cf.path(lo // zr), "rb", buffering=0) as f:
            if os.fstat(f.fileno()).st_size != full:
                return None
            mapping = mmap.mmap(f.fileno(), full, access=mmap.ACCESS_COPY)
    except (OSError, ValueError):  # a missing chunk (the fill value), permissions, no mmap: zarr decides
        return None
    r0 = lo % zr
    rows = np.frombuffer(mapping, np.uint8, (hi - lo) * rb, r0 * rb)  # the array keeps the mapping open
    return rows.view(cf.dtype).reshape((hi - lo,) + cf.shape[1:])


def write_rows(cf: ChunkFiles, lo: int, y: np.ndarray) -> bool:
    """y written as rows [lo, lo + len(y)) of whole chunk files (the edge chunk padded to full size,
    as zarr stores it); False when zarr must do it."""
    hi = lo + y.shape[0]
    if (not cf.covers(lo, hi) or y.dtype != cf.dtype or tuple(y.shape[1:]) != cf.shape[1:]
            or not y.flags.c_contiguous):
        return False
    rb, zr = cf.row_bytes, cf.chunk_rows
    for c in range(lo // zr, -(-hi // zr)):
        r0 = c * zr
        n = min(zr, hi - r0)
        path = cf.path(c)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        atomic_write(path, functools.partial(_write_chunk, y[r0 - lo:r0 - lo + n], zr * rb), suffix=".partial")
    return True


def _write_chunk(rows: np.ndarray, size: int, f: Any) -> None:
    """The rows' bytes, then zeros up to `size` (zarr's edge chunks are full-size; the padding is
    never read)."""
    view = memoryview(rows).cast("B")
    done = 0
    while done < len(view):
        done += f.write(view[done:])
    if len(view) < size:
        f.truncate(size)


def read_block(arr: Any, cf: ChunkFiles | None, lo: int, hi: int, slot: int) -> np.ndarray:
    """Rows [lo, hi) of the zarr array `arr`: straight from the chunk files when `cf` allows, else zarr."""
    block = read_rows(cf, lo, hi, slot) if cf is not None else None
    return np.asarray(arr[lo:hi]) if block is None else block


def write_block(arr: Any, cf: ChunkFiles | None, lo: int, y: np.ndarray) -> None:
    """y as rows [lo, lo + len(y)) of the zarr array `arr`: straight to the chunk files when `cf` allows."""
    if cf is None or not write_rows(cf, lo, y):
        arr[lo:lo + y.shape[0]] = y
