"""One Model run from many threads at once gives correct results, and results are
bit-identical across runs, processes and thread counts (the README's claim)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
from conftest import SAMPLES
from threadutil import in_threads

import irnorm

DYNAMIC_GN = SAMPLES / "ir" / "group_norm_dynamic.xml"
CHAIN = SAMPLES / "ir" / "gn_l2_chain.xml"


def test_one_model_many_threads():
    m = irnorm.load(DYNAMIC_GN)
    rng = np.random.default_rng(1)
    # different shapes per thread too: a dynamic model must not share per-shape state
    xs = [rng.standard_normal((1 + i % 3, 16, 8 + i, 12)).astype(np.float32) * (i + 1) for i in range(8)]
    expected = [m.run({"x": x})["y"] for x in xs]

    def work(i: int) -> None:
        for _ in range(15):
            np.testing.assert_array_equal(m.run({"x": xs[i]})["y"], expected[i])

    assert in_threads(work, 8) == []


def test_outputs_are_fresh_arrays():
    """A later call never overwrites an array handed to the caller earlier."""
    m = irnorm.load(CHAIN)
    x = np.random.default_rng(2).standard_normal((1, 12, 6, 6)).astype(np.float32)
    first = m.run({"pixels": x})
    kept = {k: v.copy() for k, v in first.items()}
    m.run({"pixels": -x})
    for k in kept:
        assert np.array_equal(first[k], kept[k])


_SCRIPT = """
import hashlib, sys, numpy as np, irnorm
m = irnorm.load(sys.argv[1])
x = np.random.default_rng(7).standard_normal((3, 16, 33, 47)).astype(np.float32) * 50 + 1000
h = hashlib.sha256()
for _ in range(3):
    h.update(m.run({"x": x})["y"].tobytes())
print(h.hexdigest())
"""


def _digest_in_subprocess(threads: int) -> str:
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads))
    r = subprocess.run([sys.executable, "-c", _SCRIPT, str(DYNAMIC_GN)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_bit_identical_across_processes_and_thread_counts():
    m = irnorm.load(DYNAMIC_GN)
    x = np.random.default_rng(7).standard_normal((3, 16, 33, 47)).astype(np.float32) * 50 + 1000
    h = hashlib.sha256()
    for _ in range(3):
        h.update(m.run({"x": x})["y"].tobytes())
    here = h.hexdigest()
    one, two = _digest_in_subprocess(1), _digest_in_subprocess(2)
    assert here == two
    assert one == two, "results differ between 1 and 2 threads"


_FORK_SCRIPT = r"""
import multiprocessing as mp, sys
import numpy as np
import irnorm, numba
m = irnorm.load(sys.argv[1])
x = np.random.default_rng(3).standard_normal((4, 16, 64, 64)).astype(np.float32)  # parallel path
want = m.run({"x": x})["y"]  # the parent has used the parallel kernels: their thread pool exists
def child(seed):
    return bool(np.array_equal(m.run({"x": x})["y"], want))
with mp.get_context("fork").Pool(2) as pool:
    print(numba.threading_layer(), all(pool.map(child, range(4))))
"""


def test_forked_children_run_parallel_kernels():
    """The default multiprocessing start method on Linux forks: a child of a process that has run a
    parallel kernel must run one too (Numba's GNU OpenMP layer kills or hangs such a child; irnorm
    depends on the tbb wheel and preloads it so Numba takes the fork-safe TBB layer)."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    r = subprocess.run([sys.executable, "-c", _FORK_SCRIPT, str(DYNAMIC_GN)], capture_output=True, text=True,
                       env=env, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["tbb", "True"], (r.stdout, r.stderr[-2000:])


def test_the_thread_helper_reports_failures():
    """in_threads (tests/threadutil.py), which the concurrency tests rely on, reports what a thread raised."""
    def work(i: int) -> None:
        assert i != 2, "thread two fails"

    errors = in_threads(work, 4)
    assert len(errors) == 1 and errors[0].startswith("thread 2: AssertionError: thread two fails")
