"""What `irnorm run` adds for debugging: dump layer outputs to a directory as they are produced,
the per-layer profile table, and checking outputs against an expected .npz."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .stats import ErrorStats, default_tolerance, error_stats

INDEX = "index.json"


class DumpError(RuntimeError):
    """The dump directory cannot be written (e.g. it exists and is not an irnorm dump)."""


def _safe(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "layer"
    return s[:80]


# Ctrl-C support (irnorm.cli): temporary dump directories not yet committed, and a lock held while
# a dump is swapped into place, so an interrupted process never exits halfway through the swap.
LIVE_TEMP_DIRS: set[str] = set()
COMMIT_LOCK = threading.Lock()


class DumpWriter:
    """A Model.run on_layer hook writing each wanted layer output as .npy into a temporary
    directory beside `target` as soon as it is produced; `commit()` writes index.json and renames
    the directory into place (replacing an earlier irnorm dump), `abort()` removes it.  bfloat16
    is stored widened to float32 (exact); the index records both dtypes."""

    def __init__(self, target: str, wanted: Sequence[Any] | None = None, model_path: str | None = None):
        self.target = os.path.abspath(target)
        if os.path.exists(self.target) and not _replaceable(self.target):
            raise DumpError(f"{target} exists and is not an irnorm dump directory (no {INDEX}); "
                            f"refusing to replace it")
        parent = os.path.dirname(self.target) or "."
        os.makedirs(parent, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix=".irnorm-dump-", dir=parent)
        LIVE_TEMP_DIRS.add(self.tmp)
        self.wanted = None if wanted is None else {n.index for n in wanted}
        self.model_path = model_path
        self.entries: list[dict[str, Any]] = []

    def __call__(self, node: Any, outs: Sequence[np.ndarray], _seconds: float) -> None:
        if self.wanted is not None and node.index not in self.wanted:
            return
        lay = node.layer
        for k, arr in enumerate(outs):
            arr = np.asarray(arr)
            stored = arr.astype(np.float32) if arr.dtype.name == "bfloat16" else arr
            fname = f"{len(self.entries):04d}_{_safe(lay.name)}_{k}.npy"
            np.save(os.path.join(self.tmp, fname), stored, allow_pickle=False)
            self.entries.append({
                "layer_id": lay.id, "name": lay.name, "type": lay.type, "version": lay.version,
                "port": k, "port_id": lay.outputs[k].id if k < len(lay.outputs) else k, "line": lay.line,
                "shape": list(arr.shape), "dtype": arr.dtype.name, "stored_dtype": stored.dtype.name,
                "file": fname,
            })

    def commit(self) -> str:
        with COMMIT_LOCK:
            target = self._commit()
            LIVE_TEMP_DIRS.discard(self.tmp)
            return target

    def _commit(self) -> str:
        with open(os.path.join(self.tmp, INDEX), "w") as f:
            json.dump({"model": self.model_path, "layers": self.entries}, f, indent=2)
        os.chmod(self.tmp, 0o777 & ~_umask())
        old = None
        if os.path.exists(self.target):
            old = tempfile.mkdtemp(prefix=".irnorm-old-", dir=os.path.dirname(self.target))
            os.rmdir(old)
            os.rename(self.target, old)
        try:
            os.rename(self.tmp, self.target)
        except BaseException:
            if old is not None:
                os.rename(old, self.target)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return self.target

    def abort(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        LIVE_TEMP_DIRS.discard(self.tmp)


def _umask() -> int:
    u = os.umask(0)
    os.umask(u)
    return u


def _replaceable(path: str) -> bool:
    if not os.path.isdir(path) or os.path.islink(path):
        return False
    entries = os.listdir(path)
    return not entries or INDEX in entries


def profile_rows(profile: Sequence[Any]) -> list[dict[str, Any]]:
    """Per-layer times sorted slowest first, with each layer's share of the summed layer time."""
    total = sum(p.seconds for p in profile) or 1.0
    rows = [{"layer_id": p.layer_id, "name": p.name, "type": p.type, "version": p.version,
             "ms": p.seconds * 1e3, "share": p.seconds / total} for p in profile]
    return sorted(rows, key=lambda r: -r["ms"])


def profile_table(profile: Sequence[Any], wall_seconds: float | None = None) -> str:
    """The profile as a text table, like benchmark_app's per-layer counters."""
    return profile_rows_table(profile_rows(profile), wall_seconds)


def profile_rows_table(rows: Sequence[dict[str, Any]], wall_seconds: float | None = None) -> str:
    """profile_rows() (or bench's averaged rows) as a text table."""
    head = ("time ms", "share", "id", "type", "name")
    body = [(f"{r['ms']:.3f}", f"{r['share'] * 100:.1f}%", r["layer_id"],
             f"{r['type']}-{r['version']}" if r["version"] else r["type"], r["name"]) for r in rows]
    widths = [max([len(head[i])] + [len(b[i]) for b in body]) for i in range(4)]
    lines = ["  ".join([head[0].rjust(widths[0]), head[1].rjust(widths[1]), head[2].ljust(widths[2]),
                        head[3].ljust(widths[3]), head[4]])]
    for b in body:
        lines.append("  ".join([b[0].rjust(widths[0]), b[1].rjust(widths[1]), b[2].ljust(widths[2]),
                                b[3].ljust(widths[3]), b[4]]))
    total = sum(r["ms"] for r in rows)
    tail = f"total {total:.3f} ms in {len(rows)} layer(s)"
    if wall_seconds is not None:
        tail += f"; whole run {wall_seconds * 1e3:.3f} ms"
    lines.append(tail)
    return "\n".join(lines)


@dataclass
class OutputCheck:
    """One model output compared with its expected value."""

    name: str
    passed: bool
    stats: ErrorStats | None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "note": self.note,
                "stats": self.stats.to_dict() if self.stats else None}


def parse_tolerances(items: Sequence[str], what: str) -> tuple[float | None, dict[str, float]]:
    """--rtol/--atol values: a plain number sets the default, NAME=number one output's.
    Raises ValueError on malformed items."""
    default: float | None = None
    per: dict[str, float] = {}
    for item in items:
        name, sep, val = item.rpartition("=")
        try:
            v = float(val)
        except ValueError:
            raise ValueError(f"{what} {item!r} is not a number or NAME=number") from None
        if not np.isfinite(v) or v < 0:
            raise ValueError(f"{what} {item!r} must be a finite non-negative number")
        if sep:
            if not name:
                raise ValueError(f"{what} {item!r} has an empty output name")
            per[name] = v
        else:
            default = v
    return default, per


def check_outputs(model: Any, outputs: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray],
                  rtol: float | None = None, atol: float | None = None,
                  rtol_per: Mapping[str, float] | None = None, atol_per: Mapping[str, float] | None = None,
                  ) -> tuple[list[OutputCheck], list[str]]:
    """Compare each model output with `expected` (keyed by any of the output's names).  Tolerances:
    per-output, else the given default, else the per-dtype default of irnorm's output.  Returns
    (checks in output order, notes such as unused expected keys)."""
    rtol_per, atol_per = dict(rtol_per or {}), dict(atol_per or {})
    all_names = {n for s in model.outputs for n in s.names}
    notes = [f"--rtol/--atol given for {k!r}, which is not a model output" for k in {*rtol_per, *atol_per}
             if k not in all_names]
    used: set[str] = set()
    checks = []
    for spec in model.outputs:
        got = outputs[spec.name]
        key = next((n for n in spec.names if n in expected), None)
        if key is None:
            checks.append(OutputCheck(spec.name, False, None, "missing from the expected file"))
            continue
        used.add(key)
        d_rtol, d_atol = default_tolerance(got.dtype)
        r = next((rtol_per[n] for n in spec.names if n in rtol_per), rtol if rtol is not None else d_rtol)
        a = next((atol_per[n] for n in spec.names if n in atol_per), atol if atol is not None else d_atol)
        st = error_stats(got, expected[key], r, a)
        checks.append(OutputCheck(spec.name, st.passed, st, st.note))
    extra = [k for k in expected if k not in used]
    if extra:
        notes.append(f"expected file has arrays that are not model outputs: {', '.join(extra)}")
    return checks, notes
