"""Rows per second through irnorm.dask, zarr on disk to zarr on disk, against a plain loop.

    python benchmarks/dask_throughput.py [--quick] [--rounds N] [--chunk-mib 64] [--data-mib 1024]
                                         [--codec none|default] [--dir DIR] [--markdown out.md]

Workloads (models written by ``openvino.save_model``, dynamic batch dim):
  emb  NormalizeL2 over axis 1 of [N, 384] f32 embeddings (1536 bytes a row)
  gn   GroupNormalization G=8 over [N, 32, 16, 16] f32 (32 KiB a row)

Each workload's input is one zarr array on disk, chunked like the run (--chunk-mib of input per chunk,
64 MiB by default), stored with the codec zarr gives an array when none is named (``--codec default``,
the default: what a user's ``zarr.create_array`` writes; zstd in zarr 3) or uncompressed (``--codec
none``: raw chunk files, which irnorm reads and writes as bytes); outputs are written to a fresh zarr
group each time (stored like the inputs: the same codec).
Contenders, each over exactly the same chunks:
  plain loop      one process: for each chunk, read it, ``model.run``, write it, reading and writing
                  exactly as the zarr path's tasks do (irnorm.dask.chunkfiles: uncompressed chunk
                  files as raw bytes) -- so "overhead" is what Dask adds (Numba 1 thread; the
                  same malloc setting as the zarr path's tasks, irnorm.dask.worker.keep_large_blocks)
  plain loop x2   the same with 2 Numba threads per kernel (the default outside Dask)
  zarr loop       the plain loop reading and writing through zarr's own API (``x[lo:hi]``), as a
                  user's first loop would
  dask threads    ``irnorm.dask.run_zarr`` on Dask's threaded scheduler (2 threads, 1 Numba thread each)
  dask 1 worker   ``run_zarr`` on a LocalCluster of 1 worker process (1 thread)
  dask 2 workers  ``run_zarr`` on a LocalCluster of 2 worker processes (1 thread each)
Clusters are started, and the model loaded in every worker (a one-chunk warm-up run), before the
clock starts: the times are steady-state throughput; cluster start-up is reported on its own.
Rounds interleave the contenders (the order rotating each round).  Reported per contender: seconds,
rows/s and MiB/s of input of its best round (the machine is shared), then two ratios taken round by
round, each against a contender timed in the same round, and their median over the rounds: the
speed-up over 1 worker, and the dask path's overhead against the plain loop (per chunk in ms, and in
%).  A slow minute on this VM then moves both sides of a ratio instead of one contender's best; the
per-round ratios are printed under the table.  "CPU s" is the user + system time of every process involved
(this one and the workers; the best round's): unlike seconds, it does not depend on what else runs
on the machine.
"""

from __future__ import annotations

import os

os.environ.setdefault("NUMBA_NUM_THREADS", "2")

import argparse  # noqa: E402
import logging  # noqa: E402
import platform  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import irnorm  # noqa: E402
import irnorm.dask  # noqa: E402
from irnorm.dask.chunkfiles import chunk_files, read_block, write_block  # noqa: E402
from irnorm.dask.worker import keep_large_blocks, model_key, set_kernel_threads, warm_up  # noqa: E402


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def build_models(d: Path) -> dict[str, tuple[Path, tuple[int, ...]]]:
    import openvino as ov
    import openvino.opset12 as op

    x = op.parameter([-1, 384], np.float32, name="x")
    y = op.normalize_l2(x, op.constant(np.array([1], np.int64)), 1e-12, "add")
    y.output(0).set_names({"y"})
    ov.save_model(ov.Model([y], [x], "emb"), str(d / "emb.xml"))
    x = op.parameter([-1, 32, 16, 16], np.float32, name="x")
    scale, bias = gn_constants()
    y = op.group_normalization(x, op.constant(scale), op.constant(bias), 8, 1e-5)
    y.output(0).set_names({"y"})
    ov.save_model(ov.Model([y], [x], "gn"), str(d / "gn.xml"))
    return {"emb": (d / "emb.xml", (384,)), "gn": (d / "gn.xml", (32, 16, 16))}


def gn_constants() -> tuple[np.ndarray, np.ndarray]:
    """The GroupNorm workload's scale and bias."""
    rng = np.random.default_rng(1)
    return rng.uniform(0.5, 1.5, 32).astype(np.float32), rng.uniform(-0.5, 0.5, 32).astype(np.float32)


def write_input(path: Path, rows: int, inner: tuple[int, ...], chunk_rows: int, compressors="auto") -> None:
    import zarr

    g = zarr.open_group(str(path), mode="w")
    a = g.create_array("x", shape=(rows,) + inner, chunks=(chunk_rows,) + inner, dtype="f4",
                       compressors=compressors)
    rng = np.random.default_rng(0)
    for lo in range(0, rows, chunk_rows):
        n = min(chunk_rows, rows - lo)
        a[lo:lo + n] = rng.standard_normal((n,) + inner, dtype=np.float32)


def zarr_version() -> str:
    import zarr

    return zarr.__version__


def plain_loop(xml: Path, inp: Path, out: Path, chunk_rows: int, threads: int, direct: bool = True) -> None:
    """The same chunks in one process, no Dask: read, run, write (`direct`: as the zarr path's
    tasks read and write; else through zarr's slicing)."""
    import zarr

    keep_large_blocks()  # the process setting the zarr path's tasks make (irnorm.dask.worker)
    m = irnorm.load(xml)
    x = zarr.open_group(str(inp), mode="r")["x"]
    g = zarr.open_group(str(out), mode="w")
    y = g.create_array("y", shape=x.shape, chunks=(chunk_rows,) + x.shape[1:], dtype=x.dtype,
                       compressors=x.compressors or None)  # stored like the input, as run_zarr does
    cx, cy = (chunk_files(x), chunk_files(y)) if direct else (None, None)
    set_kernel_threads(threads)
    for lo in range(0, x.shape[0], chunk_rows):
        hi = min(lo + chunk_rows, x.shape[0])
        write_block(y, cy, lo, m.run({"x": read_block(x, cx, lo, hi, 0)})["y"])


def output_digest(out: Path) -> str:
    """SHA-256 of the output array's values, chunk by chunk (every contender must write the same bytes)."""
    import hashlib

    import zarr

    y = zarr.open_group(str(out), mode="r")["y"]
    h = hashlib.sha256()
    step = y.chunks[0]
    for lo in range(0, y.shape[0], step):
        h.update(np.ascontiguousarray(y[lo:lo + step]).tobytes())
    return h.hexdigest()


def check_against_reference(key: str, inp: Path, out: Path, rows: int = 4096) -> None:
    """The first rows of an output against a float64 numpy evaluation of the workload's formula."""
    import zarr

    x = zarr.open_group(str(inp), mode="r")["x"][:rows].astype(np.float64)
    y = zarr.open_group(str(out), mode="r")["y"][:rows].astype(np.float64)
    if key == "emb":
        want = x / np.maximum(np.sqrt((x * x).sum(axis=1, keepdims=True)), 1e-12)
    else:  # GroupNorm: G = 8, eps 1e-5, the model's constant scale and bias
        # openvino.save_model stores the constants as f16 (compress_to_fp16): the model holds them rounded
        scale, bias = (c.astype(np.float16).astype(np.float64) for c in gn_constants())
        g = x.reshape(x.shape[0], 8, -1)
        norm = (g - g.mean(axis=2, keepdims=True)) / np.sqrt(g.var(axis=2, keepdims=True) + 1e-5)
        want = norm.reshape(x.shape) * scale[:, None, None] + bias[:, None, None]
    err = float(np.max(np.abs(y - want) / (np.abs(want) + 1e-3)))
    if not err < 1e-4:
        raise SystemExit(f"{key}: output differs from the float64 reference (max relative error {err:.2e})")


def _process_cpu() -> float:
    t = os.times()
    return t.user + t.system


def cpu_seconds(client) -> float:
    """CPU time (user + system) of this process, plus the workers' when a cluster is used."""
    own = _process_cpu()
    return own if client is None else own + sum(client.run(_process_cpu).values())


def contenders_for(xml: Path, inp: Path, chunk_rows: int, clusters: dict) -> dict:
    def dask_on(client):
        return lambda o: irnorm.dask.run_zarr(xml, inp, o, chunk_rows=chunk_rows, scheduler=client)

    return {
        "plain loop": lambda o: plain_loop(xml, inp, o, chunk_rows, 1),
        "plain loop x2": lambda o: plain_loop(xml, inp, o, chunk_rows, 2),
        "zarr loop": lambda o: plain_loop(xml, inp, o, chunk_rows, 1, direct=False),
        "dask threads": lambda o: irnorm.dask.run_zarr(xml, inp, o, chunk_rows=chunk_rows),
        "dask 1 worker": dask_on(clusters[1][1]),
        "dask 2 workers": dask_on(clusters[2][1]),
    }


def paired(a: list[float], b: list[float], f: Callable[[float, float], float]) -> list[float]:
    """f of two contenders' times round by round (each pair timed in the same round)."""
    return [f(x, y) for x, y in zip(a, b, strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small data, 1 round (a smoke run)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--chunk-mib", type=float, default=64)
    ap.add_argument("--data-mib", type=float, default=1024)
    ap.add_argument("--codec", choices=["default", "none"], default="default",
                    help="the inputs' compression: zarr's default codec (what zarr.create_array writes), or none")
    ap.add_argument("--dir", help="where the zarr stores go (default: a temporary directory)")
    ap.add_argument("--markdown", help="also write the table here")
    ap.add_argument("--workload", action="append", choices=["emb", "gn"],
                    help="run only this workload (repeatable; default: all)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.chunk_mib, args.data_mib = 1, 4, 32
    from distributed import Client, LocalCluster

    logging.getLogger("distributed").setLevel(logging.ERROR)
    base = Path(args.dir or tempfile.mkdtemp(prefix="irnorm-dask-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    models = build_models(base)
    t = time.perf_counter()
    clusters = {}
    for n in (1, 2):
        c = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                         silence_logs=logging.ERROR)
        clusters[n] = (c, Client(c, set_as_default=False))
    startup = time.perf_counter() - t
    lines = [f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs); irnorm {irnorm.__version__}; "
             f"chunks of {args.chunk_mib:g} MiB, {args.data_mib:g} MiB of input per workload, "
             f"{'uncompressed' if args.codec == 'none' else 'zarr ' + zarr_version() + chr(39) + 's default codec'}; "
             f"seconds: best of {args.rounds} round(s), ratios: median of the per-round ratios; "
             f"2 LocalClusters started in {startup:.1f} s (not in the times)", ""]
    header = ("| workload | contender | chunks | seconds | rows/s | input MiB/s | CPU s | vs 1 worker "
              "| overhead/chunk vs plain |")
    lines += [header, "|---|---|---|---|---|---|---|---|---|"]
    load0 = os.getloadavg()[0]
    per_round_notes: list[str] = []
    try:
        for key, (xml, inner) in models.items():
            if args.workload and key not in args.workload:
                continue
            row_bytes = 4 * int(np.prod(inner))
            chunk_rows = max(1, int(args.chunk_mib * (1 << 20)) // row_bytes)
            rows = max(chunk_rows, int(args.data_mib * (1 << 20)) // row_bytes // chunk_rows * chunk_rows)
            nchunks = -(-rows // chunk_rows)
            inp, warm = base / f"{key}_in.zarr", base / f"{key}_warm.zarr"
            codec = None if args.codec == "none" else "auto"
            write_input(inp, rows, inner, chunk_rows, codec)
            write_input(warm, min(rows, 256), inner, chunk_rows, codec)
            key_ = model_key(xml)
            for _, client in clusters.values():  # the model and its kernels loaded in every worker
                client.run(warm_up, key_)
            warm_up(key_)
            plain_loop(xml, warm, base / "warm_out.zarr", chunk_rows, 1)
            contenders = contenders_for(xml, inp, chunk_rows, clusters)
            best = {k: float("inf") for k in contenders}
            times: dict[str, list[float]] = {k: [] for k in contenders}
            cpu = {k: float("inf") for k in contenders}
            digests: dict[str, tuple[str, str]] = {}
            for r in range(args.rounds):
                order = list(contenders)
                order = order[r % len(order):] + order[:r % len(order)]
                for k in order:
                    out = base / f"{key}_out.zarr"
                    shutil.rmtree(out, ignore_errors=True)
                    os.sync()  # no contender pays for the previous one's dirty-page writeback
                    workers = clusters[2 if "2" in k else 1][1] if "worker" in k else None
                    c0 = cpu_seconds(workers)
                    t0 = time.perf_counter()
                    contenders[k](out)
                    times[k].append(time.perf_counter() - t0)
                    best[k] = min(best[k], times[k][-1])
                    cpu[k] = min(cpu[k], cpu_seconds(workers) - c0)
                    if r == 0:  # outputs checked (outside the clock): the same bytes from every contender
                        digest = output_digest(out)
                        if k == "plain loop":
                            check_against_reference(key, inp, out)
                        if digests.setdefault("first", (k, digest))[1] != digest:
                            raise SystemExit(f"{key}: {k} wrote different outputs from {digests['first'][0]}")
                    shutil.rmtree(out, ignore_errors=True)
            mib = rows * row_bytes / (1 << 20)
            notes = []
            for k, s in best.items():
                vs1 = over = ""
                if k.startswith("dask"):
                    speedup = paired(times["dask 1 worker"], times[k], lambda a, b: a / b)
                    extra = paired(times[k], times["plain loop"], lambda a, b: a / b - 1)
                    per_chunk = [(a - b) / nchunks * 1e3 for a, b in zip(times[k], times["plain loop"], strict=True)]
                    vs1 = f"{np.median(speedup):.2f}x"
                    over = f"{np.median(per_chunk):+.1f} ms ({np.median(extra) * 100:+.1f}%)"
                    notes.append(f"{key}, {k}, per round: over 1 worker "
                                 + " / ".join(f"{v:.2f}x" for v in speedup)
                                 + "; over the plain loop " + " / ".join(f"{v * 100:+.1f}%" for v in extra))
                lines.append(f"| {key} {list((rows,) + inner)} | {k} | {nchunks} | {s:.2f} | {rows / s:,.0f} | "
                             f"{mib / s:,.0f} | {cpu[k]:.2f} | {vs1} | {over} |")
            per_round_notes.extend(notes)
            print("\n".join(lines[-len(best):] + notes), flush=True)
            for p in (inp, warm, base / "warm_out.zarr"):
                shutil.rmtree(p, ignore_errors=True)
    finally:
        for c, client in clusters.values():
            client.close()
            c.close()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    lines[0] += f"; load average {load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    text = "\n".join(lines + [""] + [f"* {n}" for n in per_round_notes])
    print()
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")


if __name__ == "__main__":
    main()
