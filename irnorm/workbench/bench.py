"""Latency benchmark of Model.run: warm-up (JIT compilation, caches), then timed runs for a count
or a duration; min / median / mean / p90 / p99 / max latency and throughput."""

from __future__ import annotations

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
          progress: Callable[[int, int | None, float], None] | None = None) -> BenchResult:
    """Time `model.run(feeds)`.  Stops after `runs` runs, or after `seconds` of timed runs (default
    10 runs when neither is given; at least one run), after `warmup` untimed runs (JIT compilation,
    caches).  `progress(done, runs or None, elapsed)` is called after every run."""
    if warmup < 0:
        raise ArgumentError("warmup must be non-negative")
    if runs is not None and runs < 1:
        raise ArgumentError("runs must be at least 1")
    if seconds is not None and seconds <= 0:
        raise ArgumentError("seconds must be positive")
    if runs is None and seconds is None:
        runs = 10
    prev = set_threads(threads) if threads is not None else None
    try:
        import numba

        used = numba.get_num_threads()
        for _ in range(warmup):
            model.run(feeds, cast=cast)
        lat: list[float] = []
        start = time.perf_counter()
        while True:
            a = time.perf_counter()
            model.run(feeds, cast=cast)
            b = time.perf_counter()
            lat.append(b - a)
            if progress is not None:
                progress(len(lat), runs, b - start)
            if runs is not None and len(lat) >= runs:
                break
            if seconds is not None and b - start >= seconds:
                break
        total = time.perf_counter() - start
    finally:
        if prev is not None:
            set_threads(prev)
    ms = np.array(lat) * 1e3
    return BenchResult(
        runs=len(lat), warmup_runs=warmup, total_seconds=total, min_ms=float(ms.min()), median_ms=float(np.median(ms)),
        mean_ms=float(ms.mean()), p90_ms=float(np.percentile(ms, 90)), p99_ms=float(np.percentile(ms, 99)),
        max_ms=float(ms.max()), throughput=len(lat) / total if total > 0 else float("inf"), threads=used)
