"""Numba kernels (imported lazily: validate and --help never load Numba).

Kernels use ``cache=True``.  Numba caches next to this package (``__pycache__``) or, when that is
read-only, in the per-user cache (``$NUMBA_CACHE_DIR``, else ``~/.cache/numba``).  When neither is
writable (a read-only install with no writable home), Numba refuses to define cached functions at
all ("no locator available"), so irnorm points ``NUMBA_CACHE_DIR`` at a private directory under
the system temp dir instead.
"""

from __future__ import annotations

import os
import sys
import tempfile


def _writable(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            return True
    except OSError:
        return False


def _ensure_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    if _writable(os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")):
        return
    from numba.misc.appdirs import AppDirs

    if _writable(AppDirs(appname="numba", appauthor=False).user_cache_dir):
        return
    uid = os.getuid() if hasattr(os, "getuid") else 0
    fallback = os.path.join(tempfile.gettempdir(), f"irnorm-numba-cache-{uid}")
    if not _writable(fallback):
        return  # nothing writable at all: Numba will say so
    os.environ["NUMBA_CACHE_DIR"] = fallback
    config = sys.modules.get("numba.core.config")
    if config is not None:  # Numba already imported: its config was read at import time
        config.CACHE_DIR = fallback


_ensure_cache_dir()
