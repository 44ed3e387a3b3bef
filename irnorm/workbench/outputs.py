"""What `irnorm run` does with a run's outputs: summary statistics, the --output archive (written
atomically), and running the model so that Ctrl-C ends the process promptly."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
import numpy as np

from ..fileio import atomic_write

EXIT_INTERRUPT = 130


def stats(arr: np.ndarray) -> str:
    """min, max, mean and std of the finite values, and how many are not finite."""
    if arr.size == 0:
        return "empty"
    a = arr.astype(np.float64)
    finite = np.isfinite(a)
    parts = []
    if finite.any():
        f = a[finite]
        parts.append(f"min {f.min():.6g}  max {f.max():.6g}  mean {f.mean():.6g}  std {f.std():.6g}")
    bad = a.size - int(finite.sum())
    if bad:
        parts.append(f"non-finite {bad}")
    return "  ".join(parts)


def check_output_path(path: str) -> None:
    """Refuse an --output whose directory is missing or read-only before any work is done."""
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise click.BadParameter(f"directory {d} does not exist", param_hint="-o/--output")
    if not os.access(d, os.W_OK | os.X_OK):
        raise click.BadParameter(f"directory {d} is not writable", param_hint="-o/--output")


def interruptible(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run `fn` in a worker thread so that Ctrl-C ends the process promptly even while a long
    kernel runs (the kernels release the GIL).  On Ctrl-C: wait for any dump being swapped into
    place, remove uncommitted temporary dump directories, exit 130.  Nothing half-written is left
    where a good file stood: outputs are written after the run, to a temporary name."""
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
    try:
        while t.is_alive():
            t.join(0.05)
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


def save_npz(path: str, arrays: dict[str, Any]) -> None:
    atomic_write(path, lambda f: np.savez(f, **arrays), suffix=".npz.tmp")
