"""Side-by-side timing of irnorm against the textbook numpy formula, OpenVINO CPU and torch CPU.

    python benchmarks/run.py [--quick] [--rounds N] [--only GN1,LN2] [--json out.json] [--markdown out.md]

Each workload is an IR file on disk (written by ``openvino.save_model``, or hand-built for irnorm's
extension layers; see workloads.py).  All contenders run in ONE process, interleaved round-robin
for many rounds (the order rotates every round), with a short sleep between contenders because
OpenVINO's worker threads keep spinning after a call and would slow a following Numba parallel
call.  One sample of a contender repeats its call back to back for at least --sample-ms (10 ms),
so a sample measures steady-state speed rather than waking a thread pool after the gap.
Reported: median and p10-p90 per contender, irnorm/OpenVINO median ratio against the
issue's target, and effective bandwidth (input read once + output written once) against
``np.copyto`` of the same number of bytes measured in the same rounds.

irnorm runs through its whole public path, ``irnorm.load(xml).run({...})``.  OpenVINO runs with
{INFERENCE_PRECISION_HINT: f32, INFERENCE_NUM_THREADS: 2, PERFORMANCE_HINT: LATENCY}, the input
set once as a shared tensor and the output read without a copy.  Everything uses 2 threads.
"""

from __future__ import annotations

import os

THREADS = "2"
os.environ.setdefault("NUMBA_NUM_THREADS", THREADS)
os.environ.setdefault("OMP_NUM_THREADS", THREADS)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import irnorm  # noqa: E402, F401
except ImportError:  # not installed: run from a checkout
    sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from workloads import (  # noqa: E402
    WORKLOADS,
    Workload,
    make_input,
    numpy_fn,
    torch_fn,
    write_irnorm_ir,
    write_openvino_ir,
)

OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": THREADS, "PERFORMANCE_HINT": "LATENCY"}
CONTENDERS = ("irnorm", "numpy", "openvino", "torch", "copy")


def loadavg() -> float | None:
    """The 1-minute load average, or None where the OS has none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def machine() -> dict:
    """CPU model, cores and package versions, for the report header."""
    cpu = platform.processor() or "?"
    flags: list[str] = []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and cpu in ("?", "", "x86_64"):
                    cpu = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = line.split(":", 1)[1].split()
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(), "threads": int(THREADS),
            "simd": " ".join(f for f in ("avx2", "avx512f", "f16c", "avx512_bf16") if f in flags),
            "python": platform.python_version(), "numpy": np.__version__}
    for mod in ("numba", "openvino", "torch", "irnorm"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            info[mod] = None
    info["loadavg_start"] = loadavg()
    try:
        info["commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        cwd=os.path.dirname(os.path.abspath(__file__)), timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["commit"] = None
    return info


# ---- contenders -------------------------------------------------------------------------------


def irnorm_call(xml: str, x: np.ndarray) -> Callable[[], object]:
    import irnorm

    m = irnorm.load(xml)
    feed = {m.inputs[0].name: x}
    return lambda: m.run(feed)


def openvino_call(xml: str, x: np.ndarray) -> Callable[[], object]:
    import openvino as ov

    core = ov.Core()
    compiled = core.compile_model(core.read_model(xml), "CPU", OV_CONFIG)
    req = compiled.create_infer_request()
    req.set_input_tensor(ov.Tensor(x, shared_memory=True))

    def call():
        req.infer(share_outputs=True)
        return req.get_output_tensor(0).data  # a view of OpenVINO's buffer, no copy

    return call


def copy_call(x: np.ndarray) -> Callable[[], object]:
    dst = np.empty_like(x)
    return lambda: np.copyto(dst, x)


def _stats(samples: list[float]) -> dict:
    a = np.sort(np.asarray(samples))
    return {"median": float(np.median(a)), "p10": float(np.percentile(a, 10)), "p90": float(np.percentile(a, 90)),
            "q1": float(np.percentile(a, 25)), "q3": float(np.percentile(a, 75)), "n": len(a)}


def _check(name: str, got: np.ndarray, want: np.ndarray, dtype: str) -> str | None:
    """Sanity check that every contender computes the same thing (loose: this is not the test suite)."""
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if g.shape != w.shape:
        return f"{name}: shape {g.shape} != {w.shape}"
    tol = 2e-2 if dtype == "f16" else 1e-3
    err = float(np.max(np.abs(g - w) / (1.0 + np.abs(w)))) if g.size else 0.0
    return None if err <= tol else f"{name}: max rel error {err:.3g} vs numpy"


def wait_gap(seconds: float, mode: str) -> None:
    """The pause between contenders.  "sleep" idles the CPU; "busy" spins this thread instead, which
    keeps a VM's virtual CPU from halting (see the README: on a guest with the cpuidle-haltpoll
    governor a long halt shrinks the poll window, and the next contender's thread wake-ups are
    slow until it has grown back).  Either way other contenders' spinning threads get the time to stop."""
    if mode == "sleep":
        time.sleep(seconds)
        return
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def bench_workload(w: Workload, quick: bool, rounds: int, gap: float, min_sample: float, tmp: str,
                   gap_mode: str = "sleep") -> dict:
    shape = w.quick_shape if quick else w.shape
    x = make_input(w, shape)
    ov_xml = write_openvino_ir(w, shape, os.path.join(tmp, f"{w.key}.ov.xml"))
    calls: dict[str, Callable[[], object]] = {}
    notes: dict[str, str] = {}
    ref = numpy_fn(w, shape)
    calls["numpy"] = lambda: ref(x)
    try:
        calls["irnorm"] = irnorm_call(write_irnorm_ir(w, shape, ov_xml, os.path.join(tmp, f"{w.key}.irn.xml")), x)
    except Exception as e:  # the op may not exist yet: report n/a, not a crash
        notes["irnorm"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    try:
        calls["openvino"] = openvino_call(ov_xml, x)
    except Exception as e:
        notes["openvino"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    tf = torch_fn(w, shape)
    if tf is not None:
        import torch

        xt = torch.from_numpy(x)
        calls["torch"] = lambda: tf(xt)
    else:
        notes["torch"] = "torch not importable"
    calls["copy"] = copy_call(x)

    want = ref(x)
    for name in list(calls):
        try:
            for _ in range(3):  # warm-up: compilation, caches, page mapping
                out = calls[name]()
        except Exception as e:
            notes[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            del calls[name]
            continue
        if name == "copy":
            continue
        if isinstance(out, dict):
            out = next(iter(out.values()))
        if hasattr(out, "numpy"):
            out = out.numpy()
        problem = _check(name, out, want, w.dtype)
        if problem:
            notes[name] = "WRONG RESULT: " + problem

    # calls per sample: enough that one sample lasts >= min_sample (tiny workloads), at least one
    reps: dict[str, int] = {}
    for name, f in calls.items():
        t = []
        for _ in range(3):
            t0 = time.perf_counter()
            f()
            t.append(time.perf_counter() - t0)
        reps[name] = max(1, min(5000, math.ceil(min_sample / max(min(t), 1e-7))))

    samples: dict[str, list[float]] = {n: [] for n in calls}
    names = list(calls)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            f, k = calls[name], reps[name]
            wait_gap(gap, gap_mode)
            t0 = time.perf_counter()
            for _ in range(k):
                f()
            samples[name].append((time.perf_counter() - t0) / k)

    nbytes = 2 * x.nbytes  # input read once + output written once (same dtype and size)
    res = {"key": w.key, "desc": w.desc, "shape": list(shape), "dtype": w.dtype, "target": w.target,
           "bytes_moved": nbytes, "reps": reps, "notes": notes, "times": {}}
    for name, s in samples.items():
        st = _stats(s)
        st["gbps"] = nbytes / st["median"] / 1e9
        res["times"][name] = st
    t = res["times"]
    if "irnorm" in t and "openvino" in t:
        res["ratio"] = t["irnorm"]["median"] / t["openvino"]["median"]
        res["ratio_p10"] = t["irnorm"]["p10"] / t["openvino"]["p10"]  # fast-end ratio: less hurt by other load
        res["met"] = res["ratio"] <= w.target
    if "irnorm" in t and "copy" in t:
        res["copy_fraction"] = t["copy"]["median"] / t["irnorm"]["median"]
    return res


# ---- report -------------------------------------------------------------------------------------


def _ms(res: dict, name: str) -> str:
    t = res["times"].get(name)
    if t is None:
        return "n/a"
    m, lo, hi = t["median"] * 1e3, t["p10"] * 1e3, t["p90"] * 1e3
    digits = 3 if m < 1 else 2 if m < 10 else 1
    return f"{m:.{digits}f} ({lo:.{digits}f}–{hi:.{digits}f})"


def _load(v: float | None) -> str:
    return "?" if v is None else f"{v:.2f}"


def markdown(results: list[dict], info: dict, quick: bool, rounds: int) -> str:
    lines = [
        f"Machine: {info['cpu']}, {info['cores']} cores ({info['simd']}), {info['threads']} threads for every "
        f"contender; Python {info['python']}, numpy {info['numpy']}, numba {info['numba']}, "
        f"OpenVINO {info['openvino']}, torch {info['torch'] or 'not installed'}, irnorm {info['irnorm']}"
        + (f" (commit {info['commit']})" if info.get("commit") else "") + ".",
        "",
        f"Load average (1 min) at start / end: {_load(info.get('loadavg_start'))} / {_load(info.get('loadavg_end'))}"
        " (other processes on a 2-core machine distort parallel timings: read ratios, not absolute times).",
        "",
        f"Times in ms: median (p10–p90) of {rounds} interleaved rounds{' (--quick sizes)' if quick else ''}, "
        f"{info.get('gap', '?')} between contenders; Numba threading layer: {info.get('numba_layer', '?')}. "
        "ratio = irnorm / OpenVINO medians (the target), (p10s) = the same for the 10th percentiles; "
        "GB/s = (input + output bytes) / irnorm median; "
        "copy % = np.copyto of the same bytes in the same run / irnorm.",
        "",
        "| workload | shape | irnorm ms | numpy ms | OpenVINO ms | torch ms | irnorm/OV | (p10s) | target | met? "
        "| irnorm GB/s | % of copy |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        shape = "[" + ",".join(map(str, r["shape"])) + "]" + (" f16" if r["dtype"] == "f16" else "")
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else "n/a"
        ratio10 = f"{r['ratio_p10']:.2f}" if "ratio_p10" in r else "n/a"
        met = ("yes" if r["met"] else "**no**") if "met" in r else "n/a"
        ti = r["times"].get("irnorm")
        gbps = f"{ti['gbps']:.1f}" if ti else "n/a"
        frac = f"{100 * r['copy_fraction']:.0f}%" if "copy_fraction" in r else "n/a"
        lines.append(f"| {r['key']} {r['desc']} | {shape} | {_ms(r, 'irnorm')} | {_ms(r, 'numpy')} | "
                     f"{_ms(r, 'openvino')} | {_ms(r, 'torch')} | {ratio} | {ratio10} | <= {r['target']} | {met} | "
                     f"{gbps} | {frac} |")
    notes = [(r["key"], n, v) for r in results for n, v in r["notes"].items() if n != "torch"]
    if notes:
        lines += ["", "Notes:"] + [f"- {k} {n}: {v}" for k, n, v in notes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes, a few seconds (smoke test)")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 30, --quick 3)")
    ap.add_argument("--only", default="", help="comma-separated workload keys (default: all)")
    ap.add_argument("--gap", type=float, default=0.02, help="seconds of sleep between contenders (default 0.02)")
    ap.add_argument("--gap-mode", choices=("sleep", "busy"), default="sleep",
                    help="sleep between contenders (default) or busy-wait (keeps a VM's CPUs from halting)")
    ap.add_argument("--sample-ms", type=float, default=10.0,
                    help="each sample repeats a call back to back for at least this long (default 10 ms; "
                         "--quick 0.2): amortizes waking thread pools and refilling caches after the gap")
    ap.add_argument("--json", dest="json_out", help="write the full results as JSON")
    ap.add_argument("--markdown", dest="md_out", help="write the markdown table")
    ap.add_argument("--models", help="keep the IR files in this directory (default: a temporary one)")
    args = ap.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 30)
    gap = 0.002 if args.quick and args.gap == 0.02 else args.gap
    min_sample = 2e-4 if args.quick else args.sample_ms / 1e3
    keys = {k.strip() for k in args.only.split(",") if k.strip()}
    unknown = keys - {w.key for w in WORKLOADS}
    if unknown:
        ap.error(f"unknown workload(s) {sorted(unknown)}; known: {', '.join(w.key for w in WORKLOADS)}")
    todo = [w for w in WORKLOADS if not keys or w.key in keys]
    info = machine()
    results = []
    with tempfile.TemporaryDirectory(prefix="irnorm-bench-") as tmp:
        where = args.models or tmp
        os.makedirs(where, exist_ok=True)
        for w in todo:
            r = bench_workload(w, args.quick, rounds, gap, min_sample, where, args.gap_mode)
            results.append(r)
            ti, to = r["times"].get("irnorm"), r["times"].get("openvino")
            print(f"{w.key:5s} irnorm {ti['median'] * 1e3 if ti else float('nan'):9.3f} ms   "
                  f"openvino {to['median'] * 1e3 if to else float('nan'):9.3f} ms   "
                  f"ratio {r.get('ratio', float('nan')):.2f} (target {w.target})"
                  + (f"   {r['notes']}" if {k for k in r['notes'] if k != 'torch'} else ""),
                  file=sys.stderr, flush=True)
    info["gap"] = f"{gap * 1e3:g} ms {'sleep' if args.gap_mode == 'sleep' else 'busy-wait'}"
    try:
        import numba

        info["numba_layer"] = numba.threading_layer()
    except (ImportError, ValueError):  # no parallel kernel ran
        info["numba_layer"] = None
    info["loadavg_end"] = loadavg()
    md = markdown(results, info, args.quick, rounds)
    print(md)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"machine": info, "quick": args.quick, "rounds": rounds, "gap": gap, "gap_mode": args.gap_mode,
                       "results": results}, f,
                      indent=1)
    if args.md_out:
        with open(args.md_out, "w") as f:
            f.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
