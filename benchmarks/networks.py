"""Whole networks: irnorm against OpenVINO on the real exports under tests/networks/ (written by
openvino.save_model from torchvision / timm / transformers models, see tools/make_networks.py), each
contender in its own process per round, interleaved, outputs checked against OpenVINO's stored ones
first, medians.  Also the time both spend in their normalization layers, from irnorm's per-layer
profile and OpenVINO's per-layer performance counters (PERF_COUNT), where OpenVINO keeps its
normalizations as nodes of their own (MVN, RMS); both with per-layer timing switched on.

    python benchmarks/networks.py                      # every *_static network, 3 rounds
    python benchmarks/networks.py --only resnet18,bert --rounds 5 --markdown
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NETWORKS = HERE.parent / "tests" / "networks"
# the normalization layers (irnorm's fused steps are labelled by what they contain)
NORM_WORDS = ("MVN", "GroupNormalization", "NormalizeL2", "RMS", "L2Norm", "LayerNorm", "BatchNorm")
# OpenVINO's CPU plugin keeps these as nodes of their own (an exported LayerNorm becomes one MVN node with
# the Multiply/Add fused in, an RMSNorm one RMS node); a GroupNorm or BatchNorm it decomposes into
# Subgraph / Convolution nodes, whose counters do not isolate it.
OV_NORM_NODES = ("MVN", "RMS", "NormalizeL2", "GroupNormalization")


def _norm(type_name: str) -> bool:
    return any(w.lower() in type_name.lower() for w in NORM_WORDS)


def worker(contender: str, xml: str, runs: int, threads: int) -> dict:
    stem = xml[:-4]
    with np.load(stem + ".inputs.npz") as z:
        feeds = {k: z[k] for k in z.files}
    with np.load(stem + ".expected.npz") as z:
        expected = {k: z[k] for k in z.files}
    t0 = time.perf_counter()
    if contender == "irnorm":
        import irnorm

        m = irnorm.load(xml)
        args = [feeds[s.name] if s.name in feeds else next(feeds[n] for n in s.names if n in feeds)
                for s in m.inputs]

        def call():
            return list(m.run(args).values())

        def norm_ms() -> float:  # as OpenVINO's below: the median of four profiled runs after a first one
            runs = []
            for _ in range(5):
                prof = m.run(args, profile=True).profile
                runs.append(sum(p.seconds for p in prof if _norm(p.type)) * 1e3)
            return statistics.median(runs[1:])
    else:
        import openvino as ov

        core = ov.Core()
        config = {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": str(threads),
                  "PERFORMANCE_HINT": "LATENCY"}
        compiled = core.compile_model(core.read_model(xml), "CPU", config)
        req = compiled.create_infer_request()
        ov_feeds = {p: feeds[next(n for n in p.get_names() if n in feeds)] for p in compiled.inputs}

        def call():  # inputs shared, not copied
            req.infer(ov_feeds, share_inputs=True, share_outputs=True)
            return [req.get_output_tensor(i).data for i in range(len(compiled.outputs))]

        def norm_ms() -> float:  # per-layer counters from a second compilation (they cost time)
            counted = core.compile_model(core.read_model(xml), "CPU", {**config, "PERF_COUNT": "YES"})
            r = counted.create_infer_request()
            feeds = {p: ov_feeds[q] for p, q in zip(counted.inputs, compiled.inputs, strict=True)}
            runs = []
            for _ in range(5):
                r.infer(feeds)
                runs.append(sum(p.real_time.total_seconds() for p in r.get_profiling_info()
                                if p.node_type in OV_NORM_NODES) * 1e3)
            return statistics.median(runs[1:])
    got = [np.array(o, copy=True) for o in call()]
    load_s = time.perf_counter() - t0
    err = 0.0
    for g, e in zip(got, expected.values(), strict=False):
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
        err = max(err, float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64)))) / scale if e.size else 0.0)
    for _ in range(3):
        call()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return {"median_ms": statistics.median(times) * 1e3, "max_rel_err": err, "ok": err <= 1e-4,
            "norm_ms": norm_ms(), "load_s": load_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated network names (without _static)")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        c, xml, runs, threads = args.worker
        print(json.dumps(worker(c, xml, int(runs), int(threads))))
        return
    sys.path.insert(0, str(HERE))
    from files import cpu_line

    names = sorted(p.name[:-len("_static.xml")] for p in NETWORKS.glob("*_static.xml"))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    print(f"# {cpu_line()}")
    print(f"# {args.threads} threads, {args.rounds} rounds x {args.runs} runs per process, each contender in its "
          "own process, static-shape exports")
    env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    rows = []
    for name in names:
        xml = NETWORKS / f"{name}_static.xml"
        res: dict[str, list[dict]] = {"irnorm": [], "openvino": []}
        failed = None
        for r in range(args.rounds):
            for c in (("irnorm", "openvino") if r % 2 == 0 else ("openvino", "irnorm")):
                p = subprocess.run([sys.executable, __file__, "--worker", c, str(xml), str(args.runs),
                                    str(args.threads)], capture_output=True, text=True, env=env, timeout=1800)
                if p.returncode != 0:
                    failed = f"{c}: " + (p.stderr.strip().splitlines() or ["failed"])[-1][:80]
                    break
                res[c].append(json.loads(p.stdout.strip().splitlines()[-1]))
            if failed:
                break
        if failed:
            rows.append((name, "-", "-", "-", "-", "-", failed))
            print(f"# {name}: {failed}", file=sys.stderr)
            continue
        a = statistics.median(x["median_ms"] for x in res["irnorm"])
        b = statistics.median(x["median_ms"] for x in res["openvino"])
        ratio = statistics.median(x["median_ms"] / y["median_ms"] for x, y in zip(res["irnorm"], res["openvino"],
                                                                               strict=True))
        na = statistics.median(x["norm_ms"] for x in res["irnorm"])
        nb = statistics.median(x["norm_ms"] for x in res["openvino"])
        ok = all(x["ok"] for x in res["irnorm"])
        # the norm layers' ratio only where OpenVINO's counters isolate its normalization nodes
        norm_cmp = f"{nb:.3f} ({na / nb:.2f})" if nb > 0 and na > 0 else "not isolated"
        rows.append((name, f"{a:.3f}", f"{b:.3f}", f"{ratio:.2f}", f"{na:.3f} ({na / a:.0%})" if a else "-",
                     norm_cmp, "ok" if ok else "OUTPUT MISMATCH"))
        print(f"# {name} done", file=sys.stderr)
    head = ("network", "irnorm ms", "OpenVINO ms", "ratio", "irnorm in norm layers", "OpenVINO norm nodes (ratio)",
            "outputs")
    if args.markdown:
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")
    else:
        widths = [max(len(str(x[i])) for x in [head, *rows]) for i in range(len(head))]
        for r in [head, *rows]:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
