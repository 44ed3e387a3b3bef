"""Atomic file writes shared by the CLI (--output) and the workbench (graph files)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import BinaryIO


def atomic_write(path: str, write: Callable[[BinaryIO], object], suffix: str = ".tmp") -> None:
    """Call `write(f)` on a temporary file beside `path`, then rename it into place, so an
    interrupted or failing write never leaves a truncated file where a good one stood.  The file
    gets the old file's mode, or the mode an ordinary open() would give (mkstemp creates 0600)."""
    d = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".irnorm-", suffix=suffix, dir=d)
    try:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except OSError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
