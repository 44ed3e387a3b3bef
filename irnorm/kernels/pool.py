"""Large output buffers, recycled once nothing references them any more.

A fresh multi-megabyte ``np.empty`` costs page faults and kernel page zeroing on its first write,
which for a normalization (one read, one write per element) can double the time of a call.  The
pool keeps a few recently returned buffers and hands one out again only when the caller -- and
every view of it -- has let go of it (CPython reference count back to the pool's own reference),
so an array the caller still holds is never overwritten.  At most MAX_BUFFERS buffers are
tracked and at most MAX_FREE_BYTES of released ones are kept waiting for reuse.  Concurrent calls are safe: a buffer in
use by another call is referenced and therefore not free; the check-and-take happens under a lock.

``trim(allowance)`` lets go of released buffers until everything the pool tracks fits in
`allowance` bytes: a Model calls it before each run with its memory limit minus the run's
planned peak, so --max-memory / max_memory= bounds the pool's idle buffers too.

``provide(arr)`` is the ``run(..., out=...)`` opt-in: while it is active (in this thread only), the
first ``empty`` request of arr's dtype and element count gets the caller's own array (reshaped)
instead of a pool buffer, so the kernel writes the result straight into it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from math import prod

import numpy as np

MIN_BYTES = 1 << 20  # smaller arrays come from malloc's free lists cheaply
MAX_BUFFERS = 4  # buffers tracked; an untracked buffer is simply freed when its last user drops it
MAX_FREE_BYTES = 512 << 20  # released buffers kept for reuse beyond this are let go (oldest first)


_ITEMSIZE: dict = {}  # dtype (or scalar type) as kernels pass it -> its item size


class _Provided(threading.local):
    arrays: list[np.ndarray] | None = None  # a class default: no AttributeError raised per lookup


class Recycler:
    """``empty(shape, dtype)`` like ``np.empty``, reusing an unreferenced buffer of the same size."""

    def __init__(self, min_bytes: int = MIN_BYTES, max_buffers: int = MAX_BUFFERS,
                 max_free_bytes: int = MAX_FREE_BYTES):
        self.min_bytes = min_bytes
        self.max_buffers = max_buffers
        self.max_free_bytes = max_free_bytes
        self._bufs: list[np.ndarray] = []  # 1-D uint8 owners; handed-out arrays are views of them
        self._lock = threading.Lock()
        self._free_refs = self._probe()
        # .arrays: caller-owned destinations for this thread (None or empty when there are none); a hot path may
        # read it rather than call providing()
        self.provided = _Provided()

    def _probe(self) -> int:
        """The reference count an unreferenced pooled buffer shows inside _take (interpreter detail)."""
        self._bufs.append(np.empty(1, np.uint8))
        try:
            return self._count(0)
        finally:
            self._bufs.clear()

    def _count(self, i: int) -> int:
        b = self._bufs[i]
        return sys.getrefcount(b)

    @contextmanager
    def provide(self, arrays: list[np.ndarray]) -> Iterator[None]:
        """Within the block (this thread only) hand these C-contiguous arrays out, each once, to the
        first ``empty`` request with the same dtype and element count (reshaped to the request)."""
        prev = self.provided.arrays
        self.provided.arrays = list(arrays)
        try:
            yield
        finally:
            self.provided.arrays = prev

    def providing(self) -> bool:
        """Caller-owned destinations are waiting in this thread (a kernel must then allocate through
        ``empty`` rather than let numpy allocate its result)."""
        return bool(self.provided.arrays)

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        itemsize = _ITEMSIZE.get(dtype)
        if itemsize is None:  # np.dtype() costs more than numpy's whole allocation of a small array
            itemsize = _ITEMSIZE[dtype] = np.dtype(dtype).itemsize
        provided = self.provided.arrays
        n = itemsize * prod(shape)
        if not provided and n < self.min_bytes:  # the common small case, first (every layer of a small model)
            return np.empty(shape, dtype)
        if provided:
            for i, a in enumerate(provided):
                if a.dtype == dtype and a.nbytes == n:
                    return provided.pop(i).reshape(shape)
        if n < self.min_bytes:
            return np.empty(shape, dtype)
        with self._lock:
            for i in range(len(self._bufs)):
                if self._bufs[i].nbytes == n and self._count(i) == self._free_refs:
                    b = self._bufs.pop(i)
                    self._bufs.append(b)  # most recently used last
                    return b.view(dtype).reshape(shape)
            free = [i for i in range(len(self._bufs)) if self._count(i) == self._free_refs]
            if len(self._bufs) >= self.max_buffers:
                del self._bufs[free.pop(0) if free else 0]
                free = [i for i in range(len(self._bufs)) if self._count(i) == self._free_refs]
            # released buffers nobody asked for again: keep at most max_free_bytes of them
            kept = sum(self._bufs[i].nbytes for i in free)
            while free and kept > self.max_free_bytes:
                i = free.pop(0)
                kept -= self._bufs[i].nbytes
                del self._bufs[i]
                free = [j - 1 if j > i else j for j in free]
            b = np.empty(n, np.uint8)
            self._bufs.append(b)
            return b.view(dtype).reshape(shape)

    def tracked_bytes(self) -> int:
        return sum(b.nbytes for b in self._bufs)

    def trim(self, allowance: int) -> None:
        """Drop released buffers (oldest first) until the tracked ones total at most `allowance`
        bytes (buffers still referenced by someone are not the pool's to free)."""
        if self.tracked_bytes() <= allowance:  # the usual case, every run: no lock, nothing to drop
            return
        with self._lock:
            total = self.tracked_bytes()
            i = 0
            while total > allowance and i < len(self._bufs):
                if self._count(i) == self._free_refs:
                    total -= self._bufs[i].nbytes
                    del self._bufs[i]
                else:
                    i += 1

    def clear(self) -> None:
        """Forget every tracked buffer (memory is freed as soon as nothing else holds it)."""
        with self._lock:
            self._bufs.clear()


OUTPUTS = Recycler()


class Scratch(threading.local):
    """Per-thread work buffers a kernel uses within one call (a padded input copy, an unfolded matrix),
    kept for the next call: on this VM-class hardware a fresh multi-megabyte buffer costs a page fault
    per 4 KiB on its first write, more than the kernel's own work on it.  ``get(slot, shape, dtype)`` is
    an uninitialized array; each slot is one buffer per thread, grown as needed, so two buffers a kernel
    needs at once use two slots.  Buffers over MAX_BYTES are not kept, nor under MIN_BYTES (malloc's free lists
    hand those out warm in cache; a kept small buffer was measured colder inside a network: wav2vec2's small
    convolutions 0.5-1 us slower a step).  The array handed out last per slot is handed out again for the same
    shape and dtype (making the view cost ~0.4-0.8 us a call)."""

    MIN_BYTES = 64 << 10  # malloc's threshold for fresh mappings starts at 128 KiB
    MAX_BYTES = 64 << 20

    def __init__(self) -> None:
        self.bufs: dict[int, np.ndarray] = {}
        self.last: dict[int, tuple] = {}  # slot -> (shape, dtype, the array handed out)

    def get(self, slot: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        last = self.last.get(slot)
        if last is not None and last[0] == shape and last[1] == dtype:
            return last[2]
        itemsize = _ITEMSIZE.get(dtype)
        if itemsize is None:  # np.dtype() costs more than a small call's whole work (as in Recycler.empty)
            itemsize = _ITEMSIZE[dtype] = np.dtype(dtype).itemsize
        n = itemsize * prod(shape)
        if n < self.MIN_BYTES or n > self.MAX_BYTES:
            return np.empty(shape, dtype)
        b = self.bufs.get(slot)
        if b is None or b.nbytes < n:
            b = self.bufs[slot] = np.empty(n, np.uint8)
        view = b[:n].view(dtype).reshape(shape)
        self.last[slot] = (tuple(shape), dtype, view)
        return view

    def getter(self, slot: int, shape: tuple[int, ...], dtype: np.dtype) -> Callable[[], np.ndarray]:
        """``get(slot, shape, dtype)`` as a call of no arguments, for a plan that asks for the same buffer on every
        call: one under MIN_BYTES (malloc's, fresh each call) straight from np.empty, without get's lookups
        (~0.5 -> ~0.3 us a call; a small convolution asks for two), and one of no elements made once (nothing
        is ever written to it)."""
        shape = tuple(int(d) for d in shape)
        n = np.dtype(dtype).itemsize * prod(shape)
        if n == 0:
            empty = np.empty(shape, dtype)
            return lambda: empty

        def get() -> np.ndarray:
            if n < self.MIN_BYTES:
                return np.empty(shape, dtype)
            return self.get(slot, shape, dtype)
        return get

    def clear(self) -> None:
        self.bufs.clear()
        self.last.clear()


SCRATCH = Scratch()
