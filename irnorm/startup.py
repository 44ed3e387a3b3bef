"""How the ``irnorm`` command's own process starts fast (a library user's process is theirs to tune).

* **Deferred modules.**  Numba imports some modules at its own import for what a command rarely does:
  importlib.metadata for its extensions' entry points (with email, socket, ...; irnorm's kernels initialize
  extensions only when they compile: kernels/jit.py, "Extensions"), yaml for a ``.numba_config.yaml`` in the
  working directory.  ~25 ms of a fresh ``irnorm run`` on the sample.  A deferred module is in
  ``sys.modules`` and on its parent package, so importing it does not run its code; the first look-up of a
  name it defines does.
* **The cyclic garbage collector paused during start-up.**  Importing Numba and loading kernels makes a few
  hundred thousand objects that live to the end of the process, and the collector walked them again and
  again (generation-2 passes): ~30 ms of the same run, 10%.  ``irnorm run`` pauses it for its one model run
  (not for a zarr run's many chunks); a kernel compile resumes it (a compile's garbage is cyclic: the
  sample's cold run peaked 62 MB higher with the collector off).  In the ``irnorm`` command's own process
  (``ending_after_command``) the block leaves it paused: resuming it made the next allocation collect once over
  everything the run had made (generation 0 held it all), ~10 ms at the end of the sample's run, for objects
  ``os._exit`` frees right after.  The command's process (``python -m irnorm``, the installed script) also
  imports irnorm with the collector paused (``pause_if_command``): ~50 collections, ~6 ms, walked the
  imports' objects; ``console_main`` freezes them (``command_started``: never walked again) and runs it.
* **SciPy is not imported for Numba's version check** in the command's process (kernels.import_numba).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import types
from collections.abc import Iterator
from typing import Any

__all__ = ["DEFERRED_MODULES", "collector_paused", "command_started", "defer_imports", "ending_after_command",
           "is_command_start", "pause_collector", "pause_if_command", "process_ends_after_command", "resume_collector"]

DEFERRED_MODULES = ("importlib.metadata", "yaml")
_LOCK = threading.RLock()


class _DeferredModule(types.ModuleType):
    """A source module whose code runs at the first look-up of a name it defines.  Another thread looking a name
    up meanwhile waits for the code to finish, as it would for an import; code that fails leaves the module
    out of sys.modules, as a failed import does."""

    def __getattr__(self, name: str) -> Any:  # called only for names not set yet
        module = self.__name__
        with _MODULE_LOCKS[module]:
            if type(self) is _DeferredModule:
                if module in _RUNNING:  # its own code, in this thread, asked for a name it has not set yet
                    raise AttributeError(f"partially initialized module {module!r} has no attribute {name!r}")
                _RUNNING.add(module)
                try:
                    self.__spec__.loader.exec_module(self)
                except BaseException:
                    _forget(module, self)
                    raise
                finally:
                    _RUNNING.discard(module)
                self.__class__ = types.ModuleType  # an ordinary module from now on
        return getattr(self, name)


_MODULE_LOCKS: dict[str, threading.RLock] = {}
_RUNNING: set[str] = set()


def _forget(name: str, module: types.ModuleType) -> None:
    if sys.modules.get(name) is module:
        del sys.modules[name]
    parent, _, child = name.rpartition(".")
    if parent and getattr(sys.modules.get(parent), child, None) is module:
        delattr(sys.modules[parent], child)


def defer_imports(names: tuple[str, ...] = DEFERRED_MODULES) -> list[str]:
    """Make each module of `names` that is not imported yet, and loads from Python source, deferred; the
    names made so.  A module already imported, absent, or not from source (an extension) is left alone."""
    import importlib.machinery
    import importlib.util

    done = []
    with _LOCK:
        for name in names:
            parent, _, child = name.rpartition(".")
            if name in sys.modules or (parent and parent not in sys.modules):
                continue
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                continue
            if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
                continue
            module = importlib.util.module_from_spec(spec)
            _MODULE_LOCKS.setdefault(name, threading.RLock())
            module.__class__ = _DeferredModule
            sys.modules[name] = module
            if parent:
                setattr(sys.modules[parent], child, module)
            done.append(name)
    return done


_paused = False
_process_ends = False  # set by ending_after_command(): collector_paused() leaves the collector paused


def ending_after_command() -> None:
    """The process ends when the current command returns (the ``irnorm`` command's console_main): a
    collector_paused() block then leaves the collector paused (a compile still resumes it)."""
    global _process_ends
    _process_ends = True


def process_ends_after_command() -> bool:
    """Whether ending_after_command() was called: this is the ``irnorm`` command's own process."""
    return _process_ends


def pause_collector() -> bool:
    """Stop the cyclic garbage collector until resume_collector(); False if it was off already (then
    resume_collector leaves it off)."""
    global _paused
    with _LOCK:
        if _paused or not gc.isenabled():
            return False
        gc.disable()
        _paused = True
        return True


def resume_collector() -> None:
    """Start the collector again if pause_collector() stopped it (cheap otherwise: kernels call it before
    every compile)."""
    global _paused
    if _paused:
        with _LOCK:
            if _paused:
                _paused = False
                gc.enable()


# What pip writes into the irnorm console script (the [project.scripts] entry point).
_SCRIPT_IMPORT = b"from irnorm.cli import console_main"


def is_command_start() -> bool:
    """Whether this process is the irnorm command starting: ``python -m irnorm ...``, or the installed
    ``irnorm`` script (a file named irnorm that imports irnorm.cli's console_main) as the main program."""
    argv = getattr(sys, "orig_argv", [])
    if argv[1:3] == ["-m", "irnorm"]:
        return True
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if not path or os.path.basename(path) != "irnorm":
        return False
    try:
        with open(path, "rb") as f:
            return _SCRIPT_IMPORT in f.read(4096)
    except OSError:
        return False


def pause_if_command() -> bool:
    """Pause the collector if this process is the irnorm command starting (is_command_start): importing irnorm
    (numpy, lxml, Numba, the op tables) makes objects that live as long as the process, and the collector
    walked them ~50 times meanwhile (~6 ms of the command's start-up) to free nothing.  The command's
    console_main takes it from there (command_started).  A library user's process is left alone: pausing
    and resuming there made one collection over everything imported, slower than the many small ones."""
    if not is_command_start():
        return False
    return pause_collector()


def command_started() -> None:
    """The irnorm command's console_main, before the command runs: every object made so far (the imports) is
    frozen -- the collector never walks it again, and this process ends with the command -- and a collector
    pause_if_command paused runs again.  ``irnorm run`` pauses it again for its run (collector_paused)."""
    gc.freeze()
    resume_collector()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The collector paused for the block (unless a compile resumed it), as it was after -- unless the
    process ends after the command (ending_after_command)."""
    paused = pause_collector()
    try:
        yield
    finally:
        if paused and not _process_ends:
            resume_collector()
