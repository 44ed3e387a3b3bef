"""Whole networks: irnorm against OpenVINO on the real exports under tests/networks/ (written by
openvino.save_model from torchvision / timm / transformers models, see tools/make_networks.py), each
contender in its own process per round, interleaved, outputs checked against OpenVINO's stored ones
first, medians.  Also the time both spend in the same normalization layers, from irnorm's per-layer
profile and OpenVINO's per-layer performance counters (PERF_COUNT), both with per-layer timing switched
on: see same_layers().

    python benchmarks/networks.py                      # every *_static network, 3 rounds
    python benchmarks/networks.py --variant dynamic    # the dynamic-shape exports
    python benchmarks/networks.py --only resnet18,bert --rounds 5 --markdown
    python benchmarks/networks.py --lockstep --rounds 2   # both processes alive, taking turns in bursts
    python benchmarks/networks.py --dir .cache/networks_full   # full-size ResNet-50, BERT-base, ViT-B/16, ...
                                                              # (written by tools/make_networks.py --full)
    NUMBA_CPU_NAME=haswell NUMBA_CPU_FEATURES= ONEDNN_MAX_CPU_ISA=AVX2 OV_CPU_MAX_ISA=AVX2 \
        python benchmarks/networks.py --lockstep          # both contenders held to AVX2 on an AVX-512 machine

On a shared VM whose speed drifts by up to 2x within minutes, process-per-round medians of the same
commit disagree by up to 1.8x; --lockstep cancels most of that drift (each burst pair is a few
milliseconds apart) while each contender still runs in its own process.
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
# per-layer times: the median of this many profiled runs after a first one (a layer of a few microseconds varies
# by several from run to run, and OpenVINO's counters count whole microseconds)
PROFILED_RUNS = 20
# the normalization layers (irnorm's fused steps are labelled by what they contain)
NORM_WORDS = ("MVN", "GroupNormalization", "NormalizeL2", "RMS", "L2Norm", "LayerNorm", "BatchNorm")


def _norm(type_name: str) -> bool:
    return any(w.lower() in type_name.lower() for w in NORM_WORDS)


def prepare(contender: str, xml: str, threads: int) -> dict:
    """Load `xml` in `contender`, run it once and check its outputs against the stored ones.  Returns
    call() (one inference), layer_times() (what each executed step or node took in PROFILED_RUNS profiled runs
    after a first one, with the IR layers it stands for: see same_layers()), the relative error, and the load time."""
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

        covers = {names[-1]: names for _, names in m.fused_steps}  # a fused step is profiled by its last layer

        def layer_times() -> dict:
            groups, norm, runs = {}, {}, []
            for k in range(1 + PROFILED_RUNS):
                prof = m.run(args, profile=True).profile
                if k == 0:
                    groups = {str(i): covers.get(p.name, [p.name]) for i, p in enumerate(prof)}
                    norm = {str(i): _norm(p.type) for i, p in enumerate(prof)}
                else:
                    runs.append({str(i): p.seconds * 1e3 for i, p in enumerate(prof)})
            return {"groups": groups, "norm": norm, "runs": runs}
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

        def layer_times() -> dict:  # per-layer counters from a second compilation (they cost time)
            counted = core.compile_model(core.read_model(xml), "CPU", {**config, "PERF_COUNT": "YES"})
            r = counted.create_infer_request()
            feeds_counted = {p: ov_feeds[q] for p, q in zip(counted.inputs, compiled.inputs, strict=True)}
            # each node of the compiled graph names the IR layers it was made of
            layers = {op.get_friendly_name(): op.get_rt_info()["originalLayersNames"].astype(str).split(",")
                      for op in counted.get_runtime_model().get_ordered_ops()}
            runs = []
            for _ in range(1 + PROFILED_RUNS):
                r.infer(feeds_counted)
                runs.append({p.node_name: p.real_time.total_seconds() * 1e3 for p in r.get_profiling_info()
                             if p.status == p.Status.EXECUTED})
            groups = {n: [x for x in layers.get(n, [n]) if x] for n in runs[0]}
            return {"groups": groups, "norm": {}, "runs": runs[1:]}
    got = [np.array(o, copy=True) for o in call()]
    load_s = time.perf_counter() - t0
    err = 0.0
    for g, e in zip(got, expected.values(), strict=False):
        scale = max(1.0, float(np.max(np.abs(e)))) if e.size else 1.0
        err = max(err, float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64)))) / scale if e.size else 0.0)
    for _ in range(3):
        call()
    return {"call": call, "layer_times": layer_times, "max_rel_err": err, "ok": err <= 1e-4, "load_s": load_s}


def worker(contender: str, xml: str, runs: int, threads: int) -> dict:
    """One round: a fresh process loads, checks, then times `runs` calls."""
    w = prepare(contender, xml, threads)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        w["call"]()
        times.append(time.perf_counter() - t)
    return {"median_ms": statistics.median(times) * 1e3, "max_rel_err": w["max_rel_err"], "ok": w["ok"],
            "layer_times": w["layer_times"](), "load_s": w["load_s"]}


def serve(contender: str, xml: str, threads: int) -> None:
    """--lockstep's worker: load and check, say so, then answer the parent's commands on stdin one line at
    a time -- 'burst K' (K calls, their times), 'layers' (layer_times()), 'quit'."""
    w = prepare(contender, xml, threads)
    out = sys.stdout
    out.write(json.dumps({"ok": w["ok"], "max_rel_err": w["max_rel_err"], "load_s": w["load_s"]}) + "\n")
    out.flush()
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "burst":
            times = []
            for _ in range(int(cmd[1])):
                t = time.perf_counter()
                w["call"]()
                times.append(time.perf_counter() - t)
            out.write(json.dumps(times) + "\n")
        else:
            out.write(json.dumps(w["layer_times"]()) + "\n")
        out.flush()


class _Server:
    """A --serve child process and its line protocol."""

    def __init__(self, contender: str, xml: Path, threads: int, env: dict) -> None:
        self.p = subprocess.Popen([sys.executable, __file__, "--serve", contender, str(xml), str(threads)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env)
        self.ready = self._reply()

    def ask(self, command: str):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return self._reply()

    def _reply(self):
        line = self.p.stdout.readline()
        if not line:
            err = self.p.stderr.read().strip().splitlines() or ["exited"]
            raise RuntimeError(err[-1][:80])
        return json.loads(line)

    def close(self) -> None:
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=60)


def same_layers(irnorm_times: dict, openvino_times: dict) -> tuple[float, float]:
    """The time both contenders spend in the same normalization layers, ms (medians of PROFILED_RUNS runs).

    Neither side runs the IR's layers one by one: irnorm's planner fuses an exported LayerNorm's MVN,
    Multiply and Add into one step, and OpenVINO's compiled graph keeps its MVN or RMS node beside a Subgraph
    holding the Multiply and Add, decomposes a GroupNorm into Subgraph nodes, or fuses an Add into a
    convolution.  Each step and each node names the IR layers it stands for (irnorm's fused_steps, the
    `originalLayersNames` of OpenVINO's runtime graph), so the layers are joined into groups that neither
    side cuts across: two layers are in one group when some step or node of either contender covers both.
    The groups holding a layer of one of irnorm's normalization steps are compared, each contender's time
    in them summed: the same layers on both sides, whatever each fused."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for side in (irnorm_times, openvino_times):
        for names in side["groups"].values():
            for n in names[1:]:
                parent[find(n)] = find(names[0])
    roots = {find(n) for step, names in irnorm_times["groups"].items() if irnorm_times["norm"][step] for n in names}

    def total(side: dict) -> float:
        inside = {k for k, names in side["groups"].items() if any(find(n) in roots for n in names)}
        return statistics.median(sum(t for k, t in run.items() if k in inside) for run in side["runs"])

    return total(irnorm_times), total(openvino_times)


def lockstep(xml: Path, rounds: int, bursts: int, burst: int, threads: int, env: dict, gap: float = 0.05) -> dict:
    """Both contenders alive at once, each in its own process, taking turns: `bursts` bursts of `burst` calls
    each, alternating which goes first; the first call of a burst (the one that wakes an idle thread pool)
    is not counted, and `gap` seconds pass between bursts, so that the thread pool of the one that just ran
    (OpenVINO's and Numba's TBB workers spin for a while after a parallel region) is asleep and not taking
    CPU from the other.  A burst pair is ~10-100 ms apart, so the VM's speed drifting over seconds moves both
    alike; the ratio is the median of the burst pairs' ratios.  `rounds` fresh process pairs."""
    times: dict[str, list[float]] = {"irnorm": [], "openvino": []}
    ratios: list[float] = []
    norms: dict[str, list[float]] = {"irnorm": [], "openvino": []}  # same_layers(), per process pair
    ok = True
    for _ in range(rounds):
        servers = {c: _Server(c, xml, threads, env) for c in ("irnorm", "openvino")}
        try:
            ok = ok and servers["irnorm"].ready["ok"]
            for b in range(bursts):
                got = {}
                for c in (("irnorm", "openvino") if b % 2 == 0 else ("openvino", "irnorm")):
                    time.sleep(gap)  # the other one's thread pool stops spinning and sleeps
                    got[c] = servers[c].ask(f"burst {burst + 1}")[1:]
                    times[c] += got[c]
                ratios.append(statistics.median(got["irnorm"]) / statistics.median(got["openvino"]))
            na, nb = same_layers(servers["irnorm"].ask("layers"), servers["openvino"].ask("layers"))
            norms["irnorm"].append(na)
            norms["openvino"].append(nb)
        finally:
            for s in servers.values():
                s.close()
    return {"irnorm_ms": statistics.median(times["irnorm"]) * 1e3,
            "openvino_ms": statistics.median(times["openvino"]) * 1e3, "ratio": statistics.median(ratios),
            "norm_irnorm": statistics.median(norms["irnorm"]), "norm_openvino": statistics.median(norms["openvino"]),
            "ok": ok}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated network names (without _static / _dynamic)")
    ap.add_argument("--variant", choices=("static", "dynamic"), default="static",
                    help="the static-shape exports (default) or the dynamic ones (dynamic batch and sequence / "
                         "spatial dims; each runs at its stored inputs' shapes)")
    ap.add_argument("--dir", type=Path, default=NETWORKS,
                    help="directory of exports (NAME_static.xml + .inputs.npz + .expected.npz); default tests/networks")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--lockstep", action="store_true",
                    help="both contenders' processes alive at once, taking turns in bursts (see lockstep())")
    ap.add_argument("--bursts", type=int, default=15, help="--lockstep: bursts per process pair")
    ap.add_argument("--burst", type=int, default=10, help="--lockstep: timed calls per burst")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        c, xml, runs, threads = args.worker
        print(json.dumps(worker(c, xml, int(runs), int(threads))))
        return
    if args.serve:
        c, xml, threads = args.serve
        serve(c, xml, int(threads))
        return
    sys.path.insert(0, str(HERE))
    from files import cpu_line

    suffix = f"_{args.variant}.xml"
    names = sorted(p.name[:-len(suffix)] for p in args.dir.glob(f"*{suffix}"))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    print(f"# {cpu_line()}")
    if args.lockstep:
        print(f"# {args.threads} threads, lockstep: {args.rounds} process pairs x {args.bursts} bursts of "
              f"{args.burst} timed calls each, the contenders' processes taking turns, {args.variant}-shape exports")
    else:
        print(f"# {args.threads} threads, {args.rounds} rounds x {args.runs} runs per process, each contender in "
              f"its own process, {args.variant}-shape exports")
    env = dict(os.environ, NUMBA_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    rows = []
    for name in names:
        xml = args.dir / f"{name}{suffix}"
        if args.lockstep:
            try:
                r = lockstep(xml, args.rounds, args.bursts, args.burst, args.threads, env)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                rows.append((name, "-", "-", "-", "-", "-", str(e)))
                continue
            a, na, nb = r["irnorm_ms"], r["norm_irnorm"], r["norm_openvino"]
            norm_cmp = f"{nb:.3f} ({na / nb:.2f})" if nb > 0 and na > 0 else "none"
            rows.append((name, f"{a:.3f}", f"{r['openvino_ms']:.3f}", f"{r['ratio']:.2f}",
                         f"{na:.3f} ({na / a:.0%})" if a else "-", norm_cmp, "ok" if r["ok"] else "OUTPUT MISMATCH"))
            print(f"# {name} done", file=sys.stderr)
            continue
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
        same = [same_layers(x["layer_times"], y["layer_times"]) for x, y in zip(res["irnorm"], res["openvino"],
                                                                                  strict=True)]
        na = statistics.median(x for x, _ in same)
        nb = statistics.median(y for _, y in same)
        ok = all(x["ok"] for x in res["irnorm"])
        norm_cmp = f"{nb:.3f} ({na / nb:.2f})" if nb > 0 and na > 0 else "none"
        rows.append((name, f"{a:.3f}", f"{b:.3f}", f"{ratio:.2f}", f"{na:.3f} ({na / a:.0%})" if a else "-",
                     norm_cmp, "ok" if ok else "OUTPUT MISMATCH"))
        print(f"# {name} done", file=sys.stderr)
    head = ("network", "irnorm ms", "OpenVINO ms", "ratio", "irnorm in norm layers",
            "OpenVINO in the same layers (ratio)", "outputs")
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
