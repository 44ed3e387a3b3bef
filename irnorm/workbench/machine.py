"""What a timing depends on: the CPU (model, the instruction-set flags kernels care about), the
versions of irnorm and its numeric stack, and Numba's threading layer."""

from __future__ import annotations

import os
import platform
from typing import Any

FLAGS_OF_INTEREST = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16",
                     "amx_tile", "amx_bf16")


def cpu() -> dict[str, Any]:
    """{'model': ..., 'logical_cpus': N, 'flags': [...]} from /proc/cpuinfo where there is one."""
    model, flags = platform.processor() or "unknown CPU", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name") and not flags:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    return {"model": model, "logical_cpus": os.cpu_count(), "flags": [f for f in FLAGS_OF_INTEREST if f in flags]}


def environment() -> dict[str, Any]:
    """Versions, Numba's threading layer (call after a parallel kernel has run, so it is chosen) and what runs
    the parallel loops: irnorm's worker pool (kernels/workers.py) or that layer."""
    import numba
    import numpy

    import irnorm
    from irnorm.kernels import workers

    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet
        layer = None
    return {"irnorm": irnorm.__version__, "numba": numba.__version__, "numpy": numpy.__version__,
            "python": platform.python_version(), "threading_layer": layer, "numba_threads": numba.get_num_threads(),
            "parallel_loops": "irnorm workers" if workers.INSTALLED or workers.applies() else layer, "cpu": cpu()}
