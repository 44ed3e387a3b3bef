"""The `.bin` weights file: memory-mapped, read only by offset/size with bounds checks."""

from __future__ import annotations

import mmap
import os
import stat

import numpy as np

from ..errors import Diagnostic, ModelFileError, fail
from .dtypes import ELEMENT_TYPES, MAX_RANK, STORAGE_TYPES, storage_bytes, unpack_storage


def default_weights_path(xml_path: str) -> str:
    """OpenVINO's rule: the XML path with its last extension replaced by `.bin`."""
    root, _ = os.path.splitext(xml_path)
    return root + ".bin"


class Weights:
    """Lazily memory-mapped weights.  Only the path the user gave (or the one beside
    the XML) is ever opened; nothing in the XML can name another file."""

    def __init__(self, path: str):
        self.path = path
        self._buf: mmap.mmap | bytes | None = None
        self.bytes_read = 0

    def _open(self) -> mmap.mmap | bytes:
        if self._buf is None:
            try:
                # O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read.
                fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
                try:
                    st = os.fstat(fd)
                    if not stat.S_ISREG(st.st_mode):
                        raise ModelFileError(Diagnostic("IRN040", f"weights file {self.path} is not a regular file",
                                                        file=self.path))
                    self._buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if st.st_size else b""
                finally:
                    os.close(fd)
            except (OSError, ValueError) as e:
                msg = getattr(e, "strerror", None) or str(e)
                raise ModelFileError(Diagnostic("IRN040", f"cannot read weights file {self.path}: {msg}",
                                                file=self.path)) from None
        return self._buf

    @property
    def size(self) -> int:
        return len(self._open())

    def read(self, element_type: str, shape: tuple[int, ...], offset: int, size: int) -> np.ndarray:
        if len(shape) > MAX_RANK:
            raise fail("IRN043", f"shape of rank {len(shape)} is over irnorm's limit of {MAX_RANK} dims")
        count = 1
        for d in shape:
            count *= d
        packed = element_type in STORAGE_TYPES  # compressed weights: unpacked below into their carrier type
        dtype = np.dtype(np.uint8) if packed else ELEMENT_TYPES[element_type]
        need = storage_bytes(element_type, count) if packed else count * dtype.itemsize
        # OpenVINO's writer stores a 0-element Const (e.g. empty axes) as one byte, size="1".
        if size != need and not (need == 0 and size <= 1):
            raise fail("IRN042", f"size={size} but shape {list(shape)} of {element_type} needs {need} bytes")
        buf = self._open()
        if offset + size > len(buf):
            raise fail("IRN041", f"offset={offset} size={size} reaches byte {offset + size}, "
                                 f"past the end of the weights file ({len(buf)} bytes)")
        # Copy into an aligned, writeable-safe array: offsets in a .bin carry no alignment.
        if packed:
            raw = np.frombuffer(buf, dtype=np.uint8, count=need, offset=offset)
            arr = np.array(unpack_storage(element_type, raw, count).reshape(shape))
        else:
            arr = np.frombuffer(buf, dtype=dtype, count=count, offset=offset).reshape(shape).copy()
        arr.flags.writeable = False
        self.bytes_read += size
        return arr

    def close(self) -> None:
        if isinstance(self._buf, mmap.mmap):
            self._buf.close()
        self._buf = None
