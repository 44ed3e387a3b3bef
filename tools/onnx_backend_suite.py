"""irnorm against a peer project's test suite: the ONNX backend node tests, converted to IR by OpenVINO.

For every node test the installed onnx package defines (onnx.backend.test.case.node.collect_testcases:
a model and its first data set of inputs and expected outputs) the model is converted with
``openvino.convert_model`` and written with ``openvino.save_model`` (cached under --cache, keyed by
the onnx and openvino versions), run in OpenVINO's CPU plugin (f32 inference precision) and in irnorm
(``irnorm.load(xml).run``, in a worker process with a time limit), and both are compared with the
ONNX expected outputs (onnx's backend tolerances: rtol 1e-3, atol 1e-7; NaNs equal; integers and
booleans exact).  The report: how many tests convert, how many OpenVINO passes, how many of those
irnorm passes, the ops irnorm lacks ranked by how many OpenVINO-passing tests they block, and every
mismatch or crash.

    python tools/onnx_backend_suite.py [--filter REGEX] [--jobs 2] [--report out.md] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import sys
import traceback
from collections import Counter
from pathlib import Path

import numpy as np


def _tests(pattern: str | None) -> list:
    import warnings

    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():  # the generators compute their expected values with numpy
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return [c for c in sorted(cases, key=lambda c: c.name) if c.data_sets and (not pattern or
                                                                              re.search(pattern, c.name))]


def _data(case) -> tuple[list[np.ndarray], list[np.ndarray]]:
    ins, outs = case.data_sets[0]
    return [np.asarray(a) for a in ins], [np.asarray(a) for a in outs]


def _close(got: list, want: list) -> tuple[bool, str]:
    if len(got) != len(want):
        return False, f"{len(got)} outputs, expected {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return False, f"output {k}: shape {g.shape} != {w.shape}"
        if w.dtype.kind in "biu" or w.dtype == object:
            if not np.array_equal(g.astype(w.dtype) if w.dtype != object else g, w):
                return False, f"output {k}: values differ"
            continue
        try:
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-3, atol=1e-7,
                                       equal_nan=True)
        except AssertionError:
            err = float(np.nanmax(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if g.size else 0.0
            return False, f"output {k}: max abs error {err:.3g}"
    return True, ""


class _without_telemetry:  # noqa: N801 - used as a context manager
    """OpenVINO's converter sends usage telemetry after every conversion unless it sees CI=true (its own
    check, openvino_telemetry's _run_in_ci); without a network each conversion then waits for it (0.15-0.35 s
    against 0.02 s measured here), some 1900 times in this suite.  CI=true for the call, then as before."""

    def __enter__(self) -> None:
        self.saved = os.environ.get("CI")
        os.environ["CI"] = "true"

    def __exit__(self, *exc: object) -> None:
        if self.saved is None:
            os.environ.pop("CI", None)
        else:
            os.environ["CI"] = self.saved


def _convert(test, cache: Path) -> Path | None:
    """The test's model as IR in the cache (converted on first use), or None when OpenVINO cannot
    convert it.  A conversion is written into a scratch directory and renamed into place whole, so a
    run interrupted part way leaves no half-written entry for the next run to trust."""
    entry = cache / test.name
    xml = entry / "model.xml"
    if xml.exists():
        return xml
    if (entry / "FAILED").exists():
        return None
    import shutil
    import tempfile

    import onnx
    import openvino as ov

    cache.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{test.name}.", dir=cache))
    try:
        try:
            onnx.save(test.model, str(scratch / "model.onnx"))
            with _without_telemetry():
                model = ov.convert_model(str(scratch / "model.onnx"))
            ov.save_model(model, str(scratch / "model.xml"), compress_to_fp16=False)
        except Exception as e:  # noqa: BLE001 - a model OpenVINO cannot convert is not in the count
            (scratch / "FAILED").write_text(str(e)[-2000:])
        if entry.exists():  # a stale or partial entry from before this scheme
            shutil.rmtree(entry, ignore_errors=True)
        try:
            scratch.rename(entry)
        except OSError:  # another process put the entry there first: theirs is as good
            pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return xml if xml.exists() else None


def _run_openvino(xml: Path, ins: list[np.ndarray]) -> list[np.ndarray]:
    import openvino as ov

    core = ov.Core()
    c = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    r = c.create_infer_request()
    r.infer({i: a for i, a in enumerate(ins)})
    return [np.array(r.get_output_tensor(i).data, copy=True) for i in range(len(c.outputs))]


def _run_irnorm(args: tuple[str, list]) -> tuple[str, object]:
    xml, ins = args
    import irnorm

    try:
        m = irnorm.load(xml)
    except irnorm.IrnormError as e:
        missing = sorted({f"{d.layer_type}-{d.layer_version}" for d in e.diagnostics if d.code == "IRN012"})
        return ("unsupported" if missing else "load_error", missing or f"{e.code}: {e.diagnostics[0].message}")
    try:
        return "ran", list(m.run([np.asarray(a) for a in ins], cast=True).values())
    except irnorm.IrnormError as e:
        return "run_error", f"{e.code}: {e.diagnostics[0].message[:200]}"
    except Exception:  # noqa: BLE001 - a crash is an irnorm bug: recorded with its last lines
        return "crash", "".join(traceback.format_exc().splitlines(True)[-3:])


def default_cache_root() -> Path:
    """Where conversions are kept unless told: $IRNORM_ONNX_CACHE, else the user's cache directory
    ($XDG_CACHE_HOME or ~/.cache, under irnorm/onnx-backend), so every clone on a machine shares one set
    (a conversion depends only on the onnx and OpenVINO versions, which name its subdirectory); the
    clone's own .cache/onnx-backend when that is not writable."""
    env = os.environ.get("IRNORM_ONNX_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    root = Path(base) / "irnorm" / "onnx-backend"
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
        return root
    except OSError:
        return Path(__file__).resolve().parents[1] / ".cache" / "onnx-backend"


def cache_dir(root: str | Path | None = None) -> Path:
    """The conversion cache for the installed onnx and OpenVINO versions under `root` (default:
    default_cache_root())."""
    import onnx
    import openvino as ov

    root = default_cache_root() if root is None else Path(root)
    return root / f"onnx{onnx.__version__}-ov{ov.get_version().split('-')[0]}"


def run_suite(pattern: str | None, cache: Path, jobs: int = 2, timeout: float = 60.0, log=None) -> list[dict]:
    """One row per node test: converted?, OpenVINO's verdict, irnorm's ('pass', 'mismatch', 'unsupported',
    'load_error', 'run_error', 'crash', 'timeout' or None when OpenVINO failed) and a detail."""
    rows = []
    pool = mp.get_context("spawn").Pool(jobs, maxtasksperchild=50)
    try:
        for test in _tests(pattern):
            row = {"test": test.name, "converted": False, "openvino": None, "irnorm": None, "detail": ""}
            rows.append(row)
            xml = _convert(test, cache)
            if xml is None:
                continue
            row["converted"] = True
            ins, want = _data(test)
            try:
                ok, why = _close(_run_openvino(xml, ins), want)
            except Exception as e:  # noqa: BLE001
                msg = [ln for ln in str(e).splitlines() if ln.strip()]
                ok, why = False, f"OpenVINO fails: {msg[-1][:120] if msg else type(e).__name__}"
            row["openvino"] = ok
            if not ok:
                row["detail"] = why
                continue
            try:
                kind, val = pool.apply_async(_run_irnorm, ((str(xml), ins),)).get(timeout)
            except mp.TimeoutError:
                kind, val = "timeout", f"no answer in {timeout:.0f} s"
                pool.terminate()
                pool = mp.get_context("spawn").Pool(jobs, maxtasksperchild=50)
            if kind == "ran":
                ok, why = _close(val, want)
                row["irnorm"] = "pass" if ok else "mismatch"
                row["detail"] = why
            else:
                row["irnorm"] = kind
                row["detail"] = val
            if log is not None:
                print(f"{test.name}: {row['irnorm']} {row['detail'] if row['irnorm'] != 'pass' else ''}", file=log)
    finally:
        pool.terminate()
    return rows


def report(rows: list[dict]) -> str:
    import onnx
    import openvino as ov

    ov_pass = [r for r in rows if r["openvino"]]
    passed = [r for r in ov_pass if r["irnorm"] == "pass"]
    blockers = Counter(op for r in ov_pass if r["irnorm"] == "unsupported" for op in r["detail"])
    lines = [f"# ONNX backend node tests through OpenVINO's converter (onnx {onnx.__version__}, OpenVINO "
             f"{ov.get_version().split('-')[0]})", "",
             f"- tests: {len(rows)}; converted by OpenVINO: {sum(r['converted'] for r in rows)}; "
             f"OpenVINO passes: {len(ov_pass)}",
             f"- irnorm passes {len(passed)} of the {len(ov_pass)} OpenVINO passes "
             f"({100 * len(passed) / max(len(ov_pass), 1):.1f}%)", "",
             "## Ops irnorm lacks, by OpenVINO-passing tests they block", ""]
    lines += [f"- {op}: {n}" for op, n in blockers.most_common()]
    lines += ["", "## Mismatches, errors and crashes among OpenVINO-passing tests", ""]
    lines += [f"- {r['test']}: {r['irnorm']}: {r['detail']}" for r in ov_pass
              if r["irnorm"] not in ("pass", "unsupported")]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--filter", default=None)
    ap.add_argument("--cache", default=None, help="conversion cache root (default: $IRNORM_ONNX_CACHE, else "
                                                  "~/.cache/irnorm/onnx-backend)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--report", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = run_suite(args.filter, cache_dir(args.cache), args.jobs, args.timeout, log=sys.stderr)
    text = report(rows)
    print(text)
    if args.report:
        Path(args.report).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
