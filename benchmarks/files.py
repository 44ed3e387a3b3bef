"""irnorm against OpenVINO on the files users really have: IRs written by ``openvino.save_model``,
each contender in its own process.

For every workload the same OpenVINO-written IR is run by irnorm (``irnorm.load(xml).run``) and by
OpenVINO's CPU plugin (f32 inference precision, the same thread count, latency hint, inputs and
outputs shared rather than copied), each in a fresh Python
process per round, as users run them (one process shared by both makes OpenVINO and Numba compete
for one TBB).  Rounds are interleaved (irnorm then OpenVINO, then the other way round), every worker
checks its outputs against OpenVINO's before timing, and the table reports medians: per-call
milliseconds and the median of the per-round ratios irnorm / OpenVINO.  The CPU model and its flags
are printed first.

    python benchmarks/files.py                 # full sizes, 5 rounds
    python benchmarks/files.py --quick         # small sizes, 2 rounds (a smoke run)
    python benchmarks/files.py --only LN1,SC1 --rounds 3 --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


@dataclass
class Workload:
    key: str
    desc: str
    shape: tuple[int, ...]
    quick: tuple[int, ...]
    dtype: str  # numpy dtype name of the model input
    target: float  # the irnorm / OpenVINO ratio asked for
    build: str  # builder name below
    params: dict = field(default_factory=dict)


WORKLOADS = [
    Workload("LN1", "MVN-6 + Multiply + Add (exported LayerNorm)", (8, 512, 768), (2, 16, 64), "float32", 0.6, "ln"),
    Workload("LN2", "MVN-6 + Multiply + Add (exported LayerNorm)", (64, 197, 768), (4, 17, 64), "float32", 0.6, "ln"),
    Workload("GN1h", "f16 -> Convert -> GroupNorm G=32 -> Convert f16", (1, 320, 64, 64), (1, 64, 16, 16), "float16",
             0.5, "gn", {"groups": 32, "half": True}),
    Workload("SC1", "Multiply + Add + Power(2), per channel", (8, 64, 56, 56), (2, 16, 12, 12), "float32", 1.2, "sc"),
    Workload("GN1", "GroupNorm G=32", (1, 320, 64, 64), (1, 64, 16, 16), "float32", 0.6, "gn", {"groups": 32}),
    Workload("GN2", "GroupNorm G=8", (8, 64, 56, 56), (2, 16, 12, 12), "float32", 0.7, "gn", {"groups": 8}),
    Workload("GN3", "GroupNorm G=32", (16, 32, 32, 32), (4, 32, 8, 8), "float32", 1.0, "gn", {"groups": 32}),
    Workload("GN4", "GroupNorm G=8, tiny (per-call overhead)", (1, 32, 8, 8), (1, 32, 8, 8), "float32", 1.0, "gn",
             {"groups": 8}),
    Workload("L2a", "NormalizeL2 axes [1]", (65536, 384), (512, 64), "float32", 0.1, "l2"),
    Workload("L2b", "NormalizeL2 axes [1]", (8, 256, 56, 56), (2, 32, 8, 8), "float32", 0.6, "l2"),
    Workload("MVN1", "MVN-6 axes [2,3]", (8, 64, 56, 56), (2, 16, 12, 12), "float32", 0.5, "mvn"),
]


# ---- the IR files (written by OpenVINO) ------------------------------------------------------------


def build(w: Workload, shape: tuple[int, ...]):
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset6 as op6
    import openvino.opset12 as op12

    rng = np.random.default_rng(7)
    half = w.params.get("half")
    x = op1.parameter(list(shape), np.float16 if half else np.float32, name="x")
    data = op1.convert(x, "f32") if half else x
    if w.build == "ln":
        c = shape[-1]
        y = op6.mvn(data, op1.constant(np.array([-1], np.int64)), True, 1e-5, "inside_sqrt")
        y = op1.add(op1.multiply(y, op1.constant(rng.uniform(0.5, 1.5, c).astype(np.float32))),
                    op1.constant(rng.uniform(-0.5, 0.5, c).astype(np.float32)))
    elif w.build == "gn":
        c = shape[1]
        y = op12.group_normalization(data, op1.constant(rng.uniform(0.5, 1.5, c).astype(np.float32)),
                                     op1.constant(rng.uniform(-0.5, 0.5, c).astype(np.float32)),
                                     w.params["groups"], 1e-5)
    elif w.build == "sc":
        cshape = (1, shape[1]) + (1,) * (len(shape) - 2)
        y = op1.multiply(data, op1.constant(rng.uniform(0.5, 1.5, cshape).astype(np.float32)))
        y = op1.add(y, op1.constant(rng.uniform(-0.5, 0.5, cshape).astype(np.float32)))
        y = op1.power(y, op1.constant(np.array(2.0, np.float32)))
    elif w.build == "l2":
        y = op1.normalize_l2(data, op1.constant(np.array([1], np.int64)), 1e-10, "add")
    elif w.build == "mvn":
        y = op6.mvn(data, op1.constant(np.array([2, 3], np.int64)), True, 1e-5, "inside_sqrt")
    else:
        raise ValueError(w.build)
    if half:
        y = op1.convert(y, "f16")
    y.output(0).get_tensor().set_names({"y"})
    return ov.Model([op1.result(y)], [x], w.key)


def prepare(w: Workload, shape: tuple[int, ...], directory: Path) -> tuple[Path, Path]:
    """Write the IR (compress_to_fp16=False: weights as the model has them), its input and OpenVINO's
    output; returns (xml, npz)."""
    import openvino as ov

    xml = directory / f"{w.key}.xml"
    npz = directory / f"{w.key}.npz"
    ov.save_model(build(w, shape), str(xml), compress_to_fp16=False)
    x = (np.random.default_rng(11).standard_normal(shape) * 2 + 0.5).astype(w.dtype)
    core = ov.Core()
    compiled = core.compile_model(core.read_model(str(xml)), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    req = compiled.create_infer_request()
    req.infer({0: x})
    np.savez(npz, x=x, y=np.array(req.get_output_tensor(0).data, copy=True))
    return xml, npz


# ---- one timed process --------------------------------------------------------------------------


def worker(contender: str, xml: str, npz: str, runs: int, threads: int) -> dict:
    with np.load(npz) as z:
        x, expected = z["x"], z["y"]
    t0 = time.perf_counter()
    if contender == "irnorm":
        import irnorm

        m = irnorm.load(xml)

        def call():
            return m.run([x])["y"]
    else:
        import openvino as ov

        core = ov.Core()
        compiled = core.compile_model(core.read_model(xml), "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                                                                    "INFERENCE_NUM_THREADS": str(threads),
                                                                    "PERFORMANCE_HINT": "LATENCY"})
        req = compiled.create_infer_request()

        def call():  # OpenVINO at its fastest: the input shared, not copied
            req.infer({0: x}, share_inputs=True, share_outputs=True)
            return req.get_output_tensor(0).data
    y = np.array(call(), copy=True)  # first call: compiles / warms up
    load_s = time.perf_counter() - t0
    tol = 4e-3 if expected.dtype == np.float16 else 1e-4
    err = float(np.max(np.abs(y.astype(np.float64) - expected.astype(np.float64)))) if y.size else 0.0
    scale = max(1.0, float(np.max(np.abs(expected.astype(np.float64))))) if expected.size else 1.0
    for _ in range(3):
        call()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3, "max_err": err,
            "ok": err <= tol * scale, "load_s": load_s}


def run_worker(contender: str, xml: Path, npz: Path, runs: int, threads: int) -> dict:
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    r = subprocess.run([sys.executable, __file__, "--worker", contender, str(xml), str(npz), str(runs), str(threads)],
                       capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(f"{contender} worker failed on {xml.name}:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---- the report ---------------------------------------------------------------------------------


def cpu_line() -> str:
    model, flags = "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    shown = [f for f in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_tile")
             if f in flags]
    return f"{model}, {os.cpu_count()} logical CPUs, flags: {' '.join(shown) or '-'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small shapes, 2 rounds")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--runs", type=int, default=None, help="timed calls per process")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated workload keys")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--worker", nargs=5, metavar=("CONTENDER", "XML", "NPZ", "RUNS", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        c, xml, npz, runs, threads = args.worker
        print(json.dumps(worker(c, xml, npz, int(runs), int(threads))))
        return
    import openvino as ov

    import irnorm

    rounds = args.rounds or (2 if args.quick else 5)
    runs = args.runs or (20 if args.quick else 50)
    wanted = [w for w in WORKLOADS if not args.only or w.key in args.only.split(",")]
    print(f"# {cpu_line()}")
    print(f"# irnorm {irnorm.__version__}, OpenVINO {ov.get_version().split('-')[0]}, numpy {np.__version__}, "
          f"{args.threads} threads, {rounds} rounds x {runs} calls per process, each contender in its own process")
    rows = []
    with tempfile.TemporaryDirectory(prefix="irnorm-bench-") as tmp:
        for w in wanted:
            shape = w.quick if args.quick else w.shape
            xml, npz = prepare(w, shape, Path(tmp))
            res: dict[str, list[dict]] = {"irnorm": [], "openvino": []}
            for r in range(rounds):
                order = ("irnorm", "openvino") if r % 2 == 0 else ("openvino", "irnorm")
                for c in order:
                    res[c].append(run_worker(c, xml, npz, runs, args.threads))
            ok = all(x["ok"] for x in res["irnorm"])
            ratios = [a["median_ms"] / b["median_ms"] for a, b in zip(res["irnorm"], res["openvino"], strict=True)]
            rows.append((w, shape, statistics.median(x["median_ms"] for x in res["irnorm"]),
                         statistics.median(x["median_ms"] for x in res["openvino"]), statistics.median(ratios), ok))
            print(f"# {w.key} done", file=sys.stderr)
    head = ("workload", "IR (written by openvino.save_model)", "shape", "irnorm ms", "OpenVINO ms", "ratio",
            "target", "met")
    lines = [head]
    for w, shape, a, b, ratio, ok in rows:
        lines.append((w.key, w.desc, "x".join(map(str, shape)), f"{a:.3f}", f"{b:.3f}",
                      f"{ratio:.2f}" + ("" if ok else " (OUTPUT MISMATCH)"), f"<= {w.target}",
                      "yes" if ok and ratio <= w.target else "no"))
    if args.markdown:
        print("| " + " | ".join(lines[0]) + " |")
        print("|" + "---|" * len(lines[0]))
        for ln in lines[1:]:
            print("| " + " | ".join(ln) + " |")
    else:
        widths = [max(len(ln[i]) for ln in lines) for i in range(len(head))]
        for ln in lines:
            print("  ".join(c.ljust(wd) for c, wd in zip(ln, widths, strict=True)))


if __name__ == "__main__":
    main()
