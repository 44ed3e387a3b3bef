"""Start-up time and peak memory of whole `irnorm` processes, next to OpenVINO's.

    python benchmarks/startup.py [--runs N] [--json out.json] [--markdown out.md]

* ``irnorm run samples/ir/group_norm.xml`` as a fresh process: warm (the Numba kernel cache
  filled by an earlier run) and cold (an empty ``NUMBA_CACHE_DIR``: every kernel compiles).
* OpenVINO: a fresh ``python`` that imports openvino, runs read_model + compile_model (CPU, f32
  hint) and one inference on the same IR.
* ``irnorm --help`` and ``irnorm validate``, which must not import Numba.
* The Numba floor: a fresh ``python`` that imports numpy and Numba and runs one cached ``njit``
  kernel -- what any process with Numba kernels pays before doing anything -- time and peak RSS,
  beside OpenVINO's peak RSS and ``irnorm run``'s on the sample.
* Peak RSS (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a wrapper whose only child is the
  command) of ``irnorm run`` on the GN1 and LN2 benchmark IRs, against the bytes of inputs +
  outputs + weights.
* Real networks: ``irnorm run --inputs`` on ResNet-18 and BERT (the static exports of
  tests/networks/, with their stored inputs) against OpenVINO's whole process on the same IR and
  inputs -- time to the first result as a user starting either tool meets it -- and both peak RSS.

Medians of N runs (default 5).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SAMPLE = os.path.join(ROOT, "samples", "ir", "group_norm.xml")
sys.path.insert(0, HERE)

OV_SNIPPET = """
import sys, numpy as np, openvino as ov
core = ov.Core()
m = core.read_model(sys.argv[1])
c = core.compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": "f32", "INFERENCE_NUM_THREADS": "2",
                                  "PERFORMANCE_HINT": "LATENCY"})
inp = c.inputs[0]
x = np.random.default_rng(0).standard_normal(list(inp.get_shape())).astype(np.float32)
r = c.create_infer_request()
r.infer({0: x})
print(float(r.get_output_tensor(0).data.sum()))
"""

# OpenVINO on a network's stored inputs (an .npz keyed by input name).
OV_NPZ_SNIPPET = """
import sys, numpy as np, openvino as ov
core = ov.Core()
c = core.compile_model(core.read_model(sys.argv[1]), "CPU", {"INFERENCE_PRECISION_HINT": "f32",
                       "INFERENCE_NUM_THREADS": "2", "PERFORMANCE_HINT": "LATENCY"})
with np.load(sys.argv[2]) as z:
    feeds = {p: z[next(n for n in p.get_names() if n in z.files)] for p in c.inputs}
r = c.create_infer_request()
r.infer(feeds)
print(float(np.asarray(r.get_output_tensor(0).data, np.float64).sum()))
"""
NETWORKS = ("resnet18", "bert")

# The floor any Numba-kernel program pays: numpy + Numba imported and one cached kernel loaded and run.
FLOOR_SNIPPET = """
import sys
sys.path.insert(0, sys.argv[1])
import floor_kernel
floor_kernel.run()
"""
FLOOR_MODULE = """
import numpy as np
from numba import njit


@njit(cache=True)
def plus_one(x):
    return x + 1


def run():
    plus_one(np.ones(4))
"""

MAXRSS_SNIPPET = """
import resource, subprocess, sys
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)
"""


def irnorm_cmd() -> list[str]:
    exe = os.path.join(os.path.dirname(sys.executable), "irnorm")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "irnorm"]


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - t0


def child_env(**extra: str) -> dict[str, str]:
    """The children's environment: the user's, with bytecode caching on.  pip compiles every module it
    installs and a source tree writes __pycache__ on first import; PYTHONDONTWRITEBYTECODE (set in some
    sandboxes and CI images) would make every run compile irnorm's ~50 modules from source (~0.15 s)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(extra)
    return env


def summary(ts: list[float]) -> dict:
    return {"median": statistics.median(ts), "min": min(ts), "max": max(ts), "runs": ts}


def median_of(n: int, f) -> dict:
    return summary([f() for _ in range(n)])


def interleaved(n: int, contenders: dict[str, tuple[list[str], dict[str, str]]]) -> dict[str, dict]:
    """Each contender once per round, in turn, n rounds (a drifting machine moves all of them alike)."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(n):
        for key, (cmd, env) in contenders.items():
            times[key].append(timed(cmd, env))
    return {k: summary(ts) for k, ts in times.items()}


def paired_ratio(a: dict, b: dict) -> float:
    """Median over rounds of a's time / b's time in the same round."""
    return statistics.median(x / y for x, y in zip(a["runs"], b["runs"], strict=True))


def imports_numba(args: list[str]) -> bool:
    """Does `irnorm ARGS` import numba?  (-X importtime lists every module imported.)"""
    code = ("import sys\nfrom irnorm.cli import main\nsys.argv = ['irnorm'] + sys.argv[1:]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nprint('NUMBA' if 'numba' in sys.modules else 'NO')")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    return "NUMBA" in out.stdout


def peak_rss(cmd: list[str], env: dict[str, str] | None = None) -> int:
    out = subprocess.run([sys.executable, "-c", MAXRSS_SNIPPET, *cmd], capture_output=True, text=True, check=True,
                         env=env if env is not None else child_env())
    kib, rc = out.stdout.split()
    if rc != "0":
        raise RuntimeError(f"{cmd} failed with exit code {rc}")
    return int(kib) * 1024


def model_bytes(xml: str) -> tuple[int, int]:
    """(inputs + outputs bytes, weights bytes) of a model."""
    import irnorm

    m = irnorm.load(xml)
    io = 0
    for spec in (*m.inputs, *m.outputs):
        io += int(np.prod(spec.shape)) * spec.dtype.itemsize
    wpath = os.path.splitext(xml)[0] + ".bin"
    return io, os.path.getsize(wpath) if os.path.exists(wpath) else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--markdown", dest="md_out")
    args = ap.parse_args(argv)
    n = args.runs
    irn = irnorm_cmd()
    res: dict = {"sample": os.path.relpath(SAMPLE, ROOT), "runs": n}
    with tempfile.TemporaryDirectory(prefix="irnorm-startup-") as tmp:
        warm_dir = os.path.join(tmp, "warm-cache")
        env_warm = child_env(NUMBA_CACHE_DIR=warm_dir)
        env_numba_loader = child_env(NUMBA_CACHE_DIR=warm_dir, IRNORM_NUMBA_FULL_LOAD="1")
        run_cmd = [*irn, "run", "-q", SAMPLE]
        ov_cmd = [sys.executable, "-c", OV_SNIPPET, SAMPLE]
        timed(run_cmd, env_warm)  # fill the kernel cache (and the bytecode caches)
        timed(ov_cmd, child_env())
        res.update(interleaved(n, {"irnorm_run_warm": (run_cmd, env_warm),
                                   "irnorm_run_numba_loader": (run_cmd, env_numba_loader),
                                   "openvino_read_compile_infer": (ov_cmd, child_env())}))

        def cold() -> float:
            d = tempfile.mkdtemp(dir=tmp)
            try:
                return timed(run_cmd, child_env(NUMBA_CACHE_DIR=d))
            finally:
                shutil.rmtree(d, ignore_errors=True)

        res["irnorm_run_cold"] = median_of(max(2, n // 2), cold)
        res["irnorm_help"] = median_of(n, lambda: timed([*irn, "--help"], child_env()))
        res["irnorm_validate"] = median_of(n, lambda: timed([*irn, "validate", SAMPLE], child_env()))
        res["python_bare"] = median_of(n, lambda: timed([sys.executable, "-c", "pass"], child_env()))
        floor_dir = os.path.join(tmp, "floor")
        os.makedirs(floor_dir)
        with open(os.path.join(floor_dir, "floor_kernel.py"), "w") as f:
            f.write(FLOOR_MODULE)
        floor_cmd = [sys.executable, "-c", FLOOR_SNIPPET, floor_dir]
        timed(floor_cmd, env_warm)  # compile it into the cache once
        res["numba_floor"] = median_of(n, lambda: timed(floor_cmd, env_warm))
        res["numba_floor_rss"] = statistics.median(peak_rss(floor_cmd, env_warm) for _ in range(3))
        res["openvino_rss"] = statistics.median(peak_rss([sys.executable, "-c", OV_SNIPPET, SAMPLE]) for _ in range(3))
        res["irnorm_run_rss"] = statistics.median(peak_rss(run_cmd, env_warm) for _ in range(3))
        res["numba_imported"] = {"--help": imports_numba(["--help"]), "validate": imports_numba(["validate", SAMPLE])}
        res["ratio_warm_to_openvino"] = paired_ratio(res["irnorm_run_warm"], res["openvino_read_compile_infer"])
        res["ratio_numba_loader_to_openvino"] = paired_ratio(res["irnorm_run_numba_loader"],
                                                             res["openvino_read_compile_infer"])

        nets = {}
        for name in NETWORKS:
            xml = os.path.join(ROOT, "tests", "networks", f"{name}_static.xml")
            npz = xml[:-4] + ".inputs.npz"
            net_cmd = [*irn, "run", "-q", xml, "--inputs", npz]
            net_ov = [sys.executable, "-c", OV_NPZ_SNIPPET, xml, npz]
            timed(net_cmd, env_warm)  # its kernels into the cache
            timed(net_ov, child_env())
            t = interleaved(n, {"irnorm": (net_cmd, env_warm), "openvino": (net_ov, child_env())})
            nets[name] = {**t, "ratio": paired_ratio(t["irnorm"], t["openvino"]),
                          "irnorm_rss": statistics.median(peak_rss(net_cmd, env_warm) for _ in range(3)),
                          "openvino_rss": statistics.median(peak_rss(net_ov) for _ in range(3))}
        res["networks"] = nets

        from workloads import WORKLOADS, write_irnorm_ir, write_openvino_ir

        mem = {}
        for key in ("GN1", "LN2"):
            w = next(w for w in WORKLOADS if w.key == key)
            ov_xml = write_openvino_ir(w, w.shape, os.path.join(tmp, f"{key}.ov.xml"))
            xml = write_irnorm_ir(w, w.shape, ov_xml, os.path.join(tmp, f"{key}.irn.xml"))
            io, wb = model_bytes(xml)
            rss = statistics.median(peak_rss([*irn, "run", "-q", xml], env_warm) for _ in range(3))
            base = peak_rss([sys.executable, "-c", "import numpy, numba, lxml.etree, click, irnorm.cli"])
            mem[key] = {"shape": list(w.shape), "peak_rss": rss, "io_bytes": io, "weights_bytes": wb,
                        "over_data": rss - io - wb, "python_numba_baseline_rss": base}
        res["memory"] = mem
    md = markdown(res)
    print(md)
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(res, f, indent=1)
    if args.md_out:
        with open(args.md_out, "w") as f:
            f.write(md)
    return 0


def markdown(res: dict) -> str:
    def s(key: str) -> str:
        r = res[key]
        return f"{r['median']:.2f} s ({r['min']:.2f}–{r['max']:.2f})"

    mib = 2 ** 20
    lines = [
        f"Start-up, whole processes, median (min–max) of {res['runs']} runs, sample `{res['sample']}`:",
        "",
        "| command | time |",
        "|---|---|",
        f"| `irnorm run` (warm kernel cache) | {s('irnorm_run_warm')} |",
        f"| `irnorm run` with Numba's own cache loader (IRNORM_NUMBA_FULL_LOAD=1) | {s('irnorm_run_numba_loader')} |",
        f"| `irnorm run` (cold: empty NUMBA_CACHE_DIR, every kernel compiles) | {s('irnorm_run_cold')} |",
        f"| OpenVINO: python + read_model + compile_model + 1 inference | {s('openvino_read_compile_infer')} |",
        f"| `irnorm --help` (imports numba: {res['numba_imported']['--help']}) | {s('irnorm_help')} |",
        f"| `irnorm validate` (imports numba: {res['numba_imported']['validate']}) | {s('irnorm_validate')} |",
        f"| bare `python -c pass` | {s('python_bare')} |",
        f"| the Numba floor: python + numpy + numba + one cached `njit` kernel run | {s('numba_floor')} |",
        "",
        f"Warm `irnorm run` / OpenVINO = {res['ratio_warm_to_openvino']:.2f} (target <= 1.0; median of the "
        f"rounds' ratios, the three contenders above run in turn each round); with Numba's own loader "
        f"{res['ratio_numba_loader_to_openvino']:.2f}; the Numba floor alone "
        f"/ OpenVINO = {res['numba_floor']['median'] / res['openvino_read_compile_infer']['median']:.2f}.",
        "",
        f"Peak RSS on the sample: `irnorm run` {res['irnorm_run_rss'] / mib:.0f} MiB, OpenVINO (the process above) "
        f"{res['openvino_rss'] / mib:.0f} MiB, ratio {res['irnorm_run_rss'] / res['openvino_rss']:.2f} "
        f"(target <= 1.2); the Numba floor {res['numba_floor_rss'] / mib:.0f} MiB.",
        "",
        "Real networks, `irnorm run --inputs` against OpenVINO's whole process on the same IR and inputs "
        f"(in turn, {res['runs']} rounds; peak RSS median of 3):",
        "",
        "| network | irnorm run | OpenVINO | ratio | irnorm peak RSS | OpenVINO peak RSS | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in res.get("networks", {}).items():
        lines.append(f"| {name} | {r['irnorm']['median']:.2f} s | {r['openvino']['median']:.2f} s | {r['ratio']:.2f} | "
                     f"{r['irnorm_rss'] / mib:.0f} MiB | {r['openvino_rss'] / mib:.0f} MiB | "
                     f"{r['irnorm_rss'] / r['openvino_rss']:.2f} |")
    lines += [
        "",
        "Peak RSS of `irnorm run` (median of 3):",
        "",
        "| model | shape | peak RSS | inputs+outputs | weights | RSS − data | python+numpy+numba+irnorm imported |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, m in res["memory"].items():
        lines.append(f"| {key} | [{','.join(map(str, m['shape']))}] | {m['peak_rss'] / mib:.0f} MiB | "
                     f"{m['io_bytes'] / mib:.1f} MiB | {m['weights_bytes'] / 1024:.1f} KiB | "
                     f"{m['over_data'] / mib:.0f} MiB | {m['python_numba_baseline_rss'] / mib:.0f} MiB |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
