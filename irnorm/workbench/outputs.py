"""What `irnorm run` does with a run's outputs: summary statistics, the --output archive (written
atomically), and running the model so that Ctrl-C ends the process promptly."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click
import numpy as np

from ..fileio import atomic_write

EXIT_INTERRUPT = 130


def stats(arr: np.ndarray) -> dict[str, float | int | None]:
    """min, max, mean and std of the finite values (None when there are none), how many values
    there are and how many are not finite."""
    a = arr.astype(np.float64)
    finite = np.isfinite(a)
    f = a[finite]
    out: dict[str, float | int | None] = {"size": int(a.size), "nonfinite": int(a.size - f.size)}
    for key, fn in (("min", np.min), ("max", np.max), ("mean", np.mean), ("std", np.std)):
        out[key] = float(fn(f)) if f.size else None
    return out


def stats_text(arr: np.ndarray) -> str:
    """stats() as one line for people."""
    s = stats(arr)
    if s["size"] == 0:
        return "empty"
    parts = []
    if s["min"] is not None:
        parts.append(f"min {s['min']:.6g}  max {s['max']:.6g}  mean {s['mean']:.6g}  std {s['std']:.6g}")
    if s["nonfinite"]:
        parts.append(f"non-finite {s['nonfinite']}")
    return "  ".join(parts)


def check_output_path(path: str, option: str = "-o/--output") -> None:
    """Refuse an .npz output whose name or directory will not do before any work is done: the file is
    one .npz archive (np.savez would write a zip under any name, e.g. a '.npy' that is no .npy)."""
    if not path.lower().endswith(".npz"):
        raise click.BadParameter(f"{path!r}: the file is an .npz archive of named arrays; give a name ending "
                                 "in .npz", param_hint=option)
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise click.BadParameter(f"directory {d} does not exist", param_hint=option)
    if not os.access(d, os.W_OK | os.X_OK):
        raise click.BadParameter(f"directory {d} is not writable", param_hint=option)


SLOW_START_NOTE = "irnorm: compiling kernels (first run only; they are cached for the next ones)..."


def interruptible(fn: Any, *args: Any, slow_note: bool = False, **kwargs: Any) -> Any:
    """Run `fn` in a worker thread so that Ctrl-C ends the process promptly even while a long
    kernel runs (the kernels release the GIL).  On Ctrl-C: wait for any dump being swapped into
    place, remove uncommitted temporary dump directories, exit 130.  Nothing half-written is left
    where a good file stood: outputs are written after the run, to a temporary name.

    With `slow_note`, a run still going after a second says on stderr, once and only on a terminal,
    that kernels are compiling (a cold start sits silent for several seconds otherwise)."""
    import shutil
    import threading

    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # re-raised in the main thread
            box["error"] = e

    t = threading.Thread(target=work, name="irnorm-run", daemon=True)
    t.start()
    t0 = time.monotonic()
    try:
        while t.is_alive():
            t.join(0.05)
            if slow_note and time.monotonic() - t0 > 1.0:
                slow_note = False
                if _stderr_is_terminal():
                    click.echo(SLOW_START_NOTE, err=True)
    except KeyboardInterrupt:
        from . import trace

        with trace.COMMIT_LOCK:
            for d in list(trace.LIVE_TEMP_DIRS):
                shutil.rmtree(d, ignore_errors=True)
            click.echo("irnorm: interrupted", err=True)
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPT)
    if "error" in box:
        raise box["error"]
    return box["value"]


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def save_npz(path: str, arrays: dict[str, Any]) -> None:
    atomic_write(path, lambda f: np.savez(f, **arrays), suffix=".npz.tmp")
