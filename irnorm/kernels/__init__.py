"""Numba kernels (imported lazily: validate and --help never load Numba).

Kernels use ``cache=True``.  Numba caches next to this package (``__pycache__``) or, when that is
read-only, in the per-user cache (``$NUMBA_CACHE_DIR``, else ``~/.cache/numba``).  When neither is
writable (a read-only install with no writable home), Numba refuses to define cached functions at
all ("no locator available"), so irnorm points ``NUMBA_CACHE_DIR`` at a private directory under
the system temp dir instead.

Threading: Numba's parallel kernels need a threading layer.  irnorm depends on the ``tbb`` wheel
and preloads its ``libtbb`` so that Numba picks the TBB layer: it is safe to call from several
threads at once *and* after ``fork()`` (the GNU OpenMP layer, Numba's fallback, kills or hangs a
forked child that runs a parallel kernel -- the default ``multiprocessing`` start method on
Linux), and its work stealing lets the running thread finish a task whose thread was
descheduled.  Numba's tbbpool extension has no rpath to a venv's ``lib/`` directory, where the
wheel puts the library, hence the preload.  ``NUMBA_THREADING_LAYER`` set by the user still wins.
The price, measured in benchmarks/RESULTS.md: in a process that also runs OpenVINO, both share one
libtbb and Numba's per-call task arena competes with OpenVINO's for the worker threads.  On Linux x86-64
the loops themselves run on irnorm's worker pool instead (``workers.py``, installed by ``jit.py``); the
TBB layer still provides Numba's scheduling functions and runs the loops with ``IRNORM_THREAD_POOL=0``.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import tempfile
import threading
import types

from ..startup import process_ends_after_command

TBB_NAMES = {"linux": "libtbb.so.12", "darwin": "libtbb.12.dylib"}

# Below this many elements of work a kernel runs on one thread: waking the pool costs more.
PARALLEL_MIN = 1 << 15
# A memory-bound pass (an add, a Relu: a few cycles an element) stays on one thread up to this many
# elements.  Measured on the AVX2 EPYC (2 vCPUs), in place on [C, P] rows: a bias Add over 256K elements
# took 32 us on one thread and 56 on two, a residual Add + Relu over 512K 145 on both; from 1M the second
# thread pays.  Passes that cost an exp or a division per element keep PARALLEL_MIN (a Swish over 64K
# elements: 98 -> 61 us on two threads).
CHEAP_PARALLEL_MIN = 1 << 20


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


def _tbb_candidates():
    """Where the tbb wheel's library may be: the environment's lib/ (venv, system), else wherever
    the wheel's RECORD says (a --user install)."""
    name = TBB_NAMES.get(sys.platform)
    if name is None:
        return
    seen = set()
    for d in (os.path.join(sys.prefix, "lib"), os.path.join(sys.base_prefix, "lib")):
        if d not in seen:
            seen.add(d)
            yield os.path.join(d, name)
    try:
        from importlib import metadata

        files = metadata.files("tbb") or []
    except Exception:  # noqa: BLE001 - no tbb distribution or unreadable metadata: Numba's own choice
        return
    for f in files:
        if f.name == name:
            yield str(f.locate())


def _preload_tbb() -> str | None:
    """Load the tbb wheel's libtbb with RTLD_GLOBAL so Numba's tbbpool finds it; the path, or None."""
    if "numba.np.ufunc.tbbpool" in sys.modules:
        return None
    for path in _tbb_candidates():
        if os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            return path
    return None


# What Numba's import-time version check reads of SciPy: its version (numba/__init__.py,
# _ensure_critical_deps; nothing else of Numba imports scipy before compiling a BLAS call).
_SCIPY_VERSION_SEEN_BY_NUMBA = "1.0.0"


def import_numba() -> bool:
    """Import Numba.  In the ``irnorm`` command's own process, without the SciPy import its version check
    makes when SciPy is installed (10-12 ms of the command's start-up here, more than irnorm's own modules
    take; OpenVINO's process imports no SciPy): the check sees a module holding a version, which leaves
    sys.modules right after, so a later ``import scipy`` imports the real one.  Not in a library user's
    process, where another thread may import scipy meanwhile.  Called by kernels.jit before it imports
    Numba (not here: validate and --help never load Numba).  Whether the check was skipped."""
    if "numba" in sys.modules or "scipy" in sys.modules or not process_ends_after_command():
        import numba  # noqa: F401

        return False
    version_only = types.ModuleType("scipy", "stands in for SciPy during Numba's import-time version check")
    version_only.__version__ = _SCIPY_VERSION_SEEN_BY_NUMBA
    sys.modules["scipy"] = version_only
    try:
        import numba  # noqa: F401
    finally:
        if sys.modules.get("scipy") is version_only:
            del sys.modules["scipy"]
    return True


_ensure_cache_dir()
TBB_LIBRARY = _preload_tbb()


# ---- irnorm's worker pool (workers.py; started by jit.py before the first parallel loop) ---------------------


def pool_supported() -> bool:
    """irnorm's worker pool (kernels/workers.py) runs on Linux x86-64 (the futex call, the pause instruction)."""
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def pool_applies() -> bool:
    """Whether the pool runs Numba's parallel loops in this process (started before the first one)."""
    return os.environ.get("IRNORM_THREAD_POOL", "1") != "0" and pool_supported()


def command_thread_lock() -> None:
    """In the irnorm command's process, Numba's threading layer starts under a thread lock.  Numba guards the
    layer's start with a multiprocessing lock (a POSIX semaphore), held across a fork that another thread might
    make meanwhile; the command's process forks no child, and a thread lock does without importing
    multiprocessing (~5 ms of the sample's run).  Set before any kernel loads: Numba starts the layer itself
    before loading a parallel one."""
    from numba.np.ufunc import parallel

    if process_ends_after_command() and getattr(parallel, "_backend_init_process_lock", False) is None:
        parallel._backend_init_process_lock = threading.RLock()
