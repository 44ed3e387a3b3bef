"""Latency benchmark of Model.run, reported as benchmark_app reports it: the first run (JIT
compilation, caches) on its own, warm-up, then timed runs for a count or a duration -- min / median /
mean / p90 / p99 / max latency and throughput, optionally from several threads at once (a Model is
thread-safe), optionally with per-layer times averaged over the timed runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import ArgumentError


@dataclass
class BenchResult:
    """Latencies in milliseconds; throughput in runs per second (one run at a time)."""

    runs: int
    warmup_runs: int
    total_seconds: float
    min_ms: float
    median_ms: float
    mean_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    throughput: float
    threads: int  # Numba threads used
    first_run_ms: float = 0.0  # the first run alone: kernel compilation or cache loading included
    concurrency: int = 1  # runs in flight at once (Python threads calling run)
    profile: list[dict[str, Any]] | None = None  # per layer: mean ms over the timed runs, share, slowest first
    stateful: bool = False  # the model has variables: every run started from their initial values

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def set_threads(k: int) -> int:
    """Use `k` Numba threads (1 .. NUMBA_NUM_THREADS); returns the previous count."""
    import numba

    top = numba.config.NUMBA_NUM_THREADS
    if not 1 <= k <= top:
        raise ArgumentError(f"threads must be between 1 and {top} (NUMBA_NUM_THREADS), got {k}")
    prev = numba.get_num_threads()
    numba.set_num_threads(k)
    return prev


def bench(model: Any, feeds: Mapping[str, Any], runs: int | None = None, seconds: float | None = None, *,
          warmup: int = 2, threads: int | None = None, cast: bool = False,
          progress: Callable[[int, int | None, float], None] | None = None, profile: bool = False,
          concurrency: int = 1) -> BenchResult:
    """Time `model.run(feeds)`.  Stops after `runs` runs, or after `seconds` of timed runs (default
    10 runs when neither is given; at least one run), after the first run (timed on its own) and
    `warmup` more untimed runs.  `concurrency` > 1 keeps that many runs in flight from as many
    threads (latencies are per run; throughput counts them all).  A stateful model's variables are
    reset before every run (untimed): each run is one call from the initial values, as the first, rather
    than one more step of an ever longer sequence; its runs take turns, so `concurrency` must be 1.
    `profile` times every layer of every timed run (a little overhead per layer) and reports the
    means.  `progress(done, runs or None, elapsed)` is called after every run."""
    if warmup < 0:
        raise ArgumentError("warmup must be non-negative")
    if runs is not None and runs < 1:
        raise ArgumentError("runs must be at least 1")
    if seconds is not None and seconds <= 0:
        raise ArgumentError("seconds must be positive")
    if concurrency < 1:
        raise ArgumentError("concurrency must be at least 1")
    if runs is None and seconds is None:
        runs = 10
    stateful = bool(getattr(model, "variables", None))
    if stateful and concurrency > 1:
        raise ArgumentError("a stateful model's runs take turns (its variables carry over from run to run): "
                            "concurrency must be 1")
    reset = model.reset_state if stateful else (lambda: None)
    prev = set_threads(threads) if threads is not None else None
    try:
        import numba

        used = numba.get_num_threads()
        reset()
        t = time.perf_counter()
        model.run(feeds, cast=cast)
        first = time.perf_counter() - t
        for _ in range(max(warmup - 1, 0)):
            reset()
            model.run(feeds, cast=cast)
        lat: list[float] = []
        layer_sums: dict[tuple[str, str, str, str], float] = {}
        lock = threading.Lock()
        start = time.perf_counter()

        def one() -> bool:
            """One timed run; False once enough have run."""
            reset()
            a = time.perf_counter()
            res = model.run(feeds, cast=cast, profile=profile)
            b = time.perf_counter()
            with lock:
                if runs is not None and len(lat) >= runs:
                    return False  # another thread finished the count while this run was in flight
                lat.append(b - a)
                if profile:
                    for p in res.profile:
                        key = (p.layer_id, p.name, p.type, p.version)
                        layer_sums[key] = layer_sums.get(key, 0.0) + p.seconds
                if progress is not None:
                    progress(len(lat), runs, b - start)
                return not ((runs is not None and len(lat) >= runs) or (seconds is not None and b - start >= seconds))

        if concurrency == 1:
            while one():
                pass
        else:
            def loop() -> None:
                while one():
                    pass

            workers = [threading.Thread(target=loop, name=f"irnorm-bench-{i}") for i in range(concurrency)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
        total = time.perf_counter() - start
    finally:
        if prev is not None:
            set_threads(prev)
    ms = np.array(lat) * 1e3
    return BenchResult(
        runs=len(lat), warmup_runs=warmup, total_seconds=total, min_ms=float(ms.min()), median_ms=float(np.median(ms)),
        mean_ms=float(ms.mean()), p90_ms=float(np.percentile(ms, 90)), p99_ms=float(np.percentile(ms, 99)),
        max_ms=float(ms.max()), throughput=len(lat) / total if total > 0 else float("inf"), threads=used,
        first_run_ms=first * 1e3, concurrency=concurrency,
        profile=_mean_profile(layer_sums, len(lat)) if profile else None, stateful=stateful)


def _mean_profile(sums: dict[tuple[str, str, str, str], float], runs: int) -> list[dict[str, Any]]:
    total = sum(sums.values()) or 1.0
    rows = [{"layer_id": k[0], "name": k[1], "type": k[2], "version": k[3], "ms": v / runs * 1e3, "share": v / total}
            for k, v in sums.items()]
    return sorted(rows, key=lambda r: -r["ms"])
