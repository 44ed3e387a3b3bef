"""irnorm's worker pool for Numba's parallel loops (irnorm/kernels/workers.py): the loops run on it, give the
results a single thread gives, and it stays out of the way -- nested loops, several Python threads, fork,
one thread, and IRNORM_THREAD_POOL=0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numba
import numpy as np
import pytest
from conftest import SAMPLES
from numba import njit, prange

from irnorm.kernels import jit, workers

ROOT = Path(__file__).resolve().parent.parent
DYNAMIC_GN = SAMPLES / "ir" / "group_norm_dynamic.xml"
LINUX_X86 = workers._supported()


@njit(parallel=True)
def _plus_one(x, out):
    for i in prange(x.shape[0]):
        out[i] = x[i] + 1.0


@njit(parallel=True)
def _total(x):
    s = 0.0
    for i in prange(x.shape[0]):
        s += x[i]
    return s


@njit(parallel=True)
def _nested(x, out):
    for t in prange(x.shape[0]):
        _plus_one(x[t], out[t])


@njit
def _total_serial(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


def _needs_pool() -> None:
    if not LINUX_X86:
        pytest.skip("the pool runs on Linux x86-64 only; elsewhere Numba's layer runs the loops")
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one Numba thread: the pool has no workers to test")
    _plus_one(np.zeros(1000), np.empty(1000))  # the pool starts before the process's first parallel loop


def test_installed_with_one_worker_per_extra_thread():
    _needs_pool()
    assert jit.THREAD_POOL and workers.INSTALLED
    st = workers.stats()
    assert st["workers"] == min(workers.MAX_WORKERS, numba.config.NUMBA_NUM_THREADS - 1)
    assert st["alive"] == st["workers"]


def test_loops_run_on_the_workers_and_match_one_thread():
    _needs_pool()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(200_003)
    out = np.empty_like(x)
    before = workers.stats()
    for _ in range(200):
        _plus_one(x, out)
    after = workers.stats()
    np.testing.assert_array_equal(out, x + 1.0)
    assert after["loops"] - before["loops"] == 200
    assert after["worker_items"] > before["worker_items"]  # the workers took part, not only the caller


def test_reductions_use_the_workers_thread_ids():
    """prange reductions index a per-thread slot by get_thread_id(): the pool answers it for its threads."""
    _needs_pool()
    x = np.random.default_rng(1).standard_normal(1_000_001)
    exact = float(np.sum(x.astype(np.float64)))
    for _ in range(100):
        got = _total(x)
        assert abs(got - exact) <= 1e-9 * np.abs(x).sum()
    assert abs(_total_serial(x) - exact) <= 1e-9 * np.abs(x).sum()


def test_nested_loops_run_inside_the_outer_ones():
    _needs_pool()
    x = np.random.default_rng(2).standard_normal((8, 5000))
    out = np.empty_like(x)
    for _ in range(50):
        _nested(x, out)
        np.testing.assert_array_equal(out, x + 1.0)


def test_several_python_threads_at_once():
    """Threads that find the pool busy run their loops alone: every result still right."""
    _needs_pool()
    xs = [np.random.default_rng(10 + k).standard_normal(100_000) for k in range(4)]
    errors: list[str] = []

    def work(x: np.ndarray) -> None:
        out = np.empty_like(x)
        for _ in range(100):
            _plus_one(x, out)
            if not np.array_equal(out, x + 1.0):
                errors.append("wrong result")
                return

    threads = [threading.Thread(target=work, args=(x,)) for x in xs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not errors


_LAZY = r"""
import json, sys, threading, time
if sys.argv[2] == "command":
    from irnorm.startup import ending_after_command
    ending_after_command()
import numpy as np
import irnorm
from irnorm.kernels import jit, workers
m = irnorm.load(sys.argv[1])  # the sample: a tiny GroupNorm, serial kernels only
m.run({m.inputs[0].name: np.ones(m.inputs[0].shape, np.float32)})
before = [workers.INSTALLED, sorted(t.name for t in threading.enumerate())]
from irnorm.kernels import moments
x = np.random.default_rng(0).standard_normal((64, 4096)).astype(np.float32)
want = moments.normalize(x[:1], [1], moments.INSIDE_SQRT, 1e-5)
deadline = time.monotonic() + 60
ok = True
while time.monotonic() < deadline:  # (rows_parallel) until a worker has taken an item
    ok = ok and np.array_equal(moments.normalize(x, [1], moments.INSIDE_SQRT, 1e-5)[:1], want)
    if workers.stats()["worker_items"] > 0:
        break
st = workers.stats()
print(json.dumps({"pool": jit.THREAD_POOL, "before": before, "installed": st["installed"], "workers": st["workers"],
                  "items": st["worker_items"], "ok": ok, "multiprocessing": "multiprocessing" in sys.modules}))
"""


@pytest.mark.parametrize("process", ["command", "library"])
def test_the_pool_starts_before_the_first_parallel_loop(process):
    """A process running serial kernels only (the sample's tiny GroupNorm) starts no pool and no worker thread
    (~3 ms of the irnorm command's start-up); the first parallel kernel loaded starts it (a compile, too: run
    twice, the second from the cache).  The command's process never imports multiprocessing for it."""
    _needs_pool()
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", _LAZY, str(SAMPLES / "ir" / "group_norm.xml"), process],
                           capture_output=True, text=True, timeout=600, cwd=ROOT,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)))
        assert r.returncode == 0, r.stderr[-2000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["pool"] and got["before"] == [False, ["MainThread"]]
    assert got["installed"] and got["workers"] == min(workers.MAX_WORKERS, numba.config.NUMBA_NUM_THREADS - 1)
    assert got["ok"] and got["items"] > 0
    if process == "command":
        assert not got["multiprocessing"]


_CHILD = r"""
import os, sys, json, time
import numpy as np
from irnorm.kernels import workers
import irnorm
xml = sys.argv[1]
m = irnorm.load(xml)
x = np.random.default_rng(0).standard_normal((2, 16, 96, 96)).astype(np.float32)
want = m.run({"x": x})["y"]
pid = os.fork()
if pid == 0:
    ok = all(np.array_equal(m.run({"x": x})["y"], want) for _ in range(20))  # at once, workers starting or not
    deadline = time.monotonic() + 60
    while workers.stats()["ready"] < workers.stats()["workers"] and time.monotonic() < deadline:
        time.sleep(0.01)
    st0 = workers.stats()  # (the counters are the parent's, copied)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until a worker has taken an item (each run has a loop of several)
        ok = ok and np.array_equal(m.run({"x": x})["y"], want)
        if workers.stats()["worker_items"] > st0["worker_items"]:
            break
    st = workers.stats()
    print("child", ok, json.dumps(st0), json.dumps(st), flush=True)
    os._exit(0 if ok and st["workers"] == st["alive"] == st["ready"] >= 1 and st["worker_items"] > st0["worker_items"]
             else 3)
_, status = os.waitpid(pid, 0)
print(json.dumps({"status": status, "parent": workers.stats()}))
"""


def test_a_forked_child_starts_its_own_workers():
    """The parent's workers do not survive fork(): the child's loops must neither hang nor go wrong, and
    the child gets workers of its own."""
    _needs_pool()
    r = subprocess.run([sys.executable, "-c", _CHILD, str(DYNAMIC_GN)], capture_output=True, text=True,
                       timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert r.returncode == 0, r.stderr[-2000:]
    assert '"status": 0' in r.stdout, r.stdout


_SETTINGS = r"""
import json, numpy as np, numba
from irnorm.kernels import workers
import irnorm
m = irnorm.load(__import__("sys").argv[1])
x = np.random.default_rng(0).standard_normal((2, 16, 96, 96)).astype(np.float32)
y = m.run({"x": x})["y"]
print(json.dumps({"stats": workers.stats(), "digest": float(np.float64(y.astype(np.float64).sum()))}))
"""


@pytest.mark.parametrize("env", [{"IRNORM_THREAD_POOL": "0"}, {"NUMBA_NUM_THREADS": "1"}, {},
                                 {"NUMBA_NUM_THREADS": "5"}])
def test_settings_that_turn_the_pool_off_give_the_same_outputs(env):

    def run(extra: dict) -> dict:
        r = subprocess.run([sys.executable, "-c", _SETTINGS, str(DYNAMIC_GN)], capture_output=True, text=True,
                           timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT), **extra))
        assert r.returncode == 0, r.stderr[-2000:]
        return json.loads(r.stdout.strip().splitlines()[-1])

    got = run(env)
    if env.get("IRNORM_THREAD_POOL") == "0" or not LINUX_X86:
        assert got["stats"]["installed"] is False and got["stats"]["workers"] == 0
    elif env.get("NUMBA_NUM_THREADS") == "1":
        assert got["stats"]["installed"] is True and got["stats"]["workers"] == 0 and got["stats"]["loops"] == 0
    else:  # more threads than this machine may have cores: the workers take turns, the results do not change
        threads = int(env.get("NUMBA_NUM_THREADS", numba.config.NUMBA_NUM_THREADS))
        assert got["stats"]["installed"] is True and got["stats"]["workers"] == min(workers.MAX_WORKERS, threads - 1)
        assert got["stats"]["alive"] == got["stats"]["workers"]
    assert got["digest"] == run({"IRNORM_THREAD_POOL": "0", "NUMBA_NUM_THREADS": "1"})["digest"]


def _cpu_of(tid: int) -> int:
    """The CPU thread `tid` of this process last ran on (/proc, field 39 of stat)."""
    with open(f"/proc/self/task/{tid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])


def _two_cpus() -> tuple[int, int]:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU allowed: there is no other CPU to move to")
    return allowed[0], allowed[1]


def _in_thread(fn):
    """fn() on a fresh Python thread (whose CPU affinity the test may change); its result or exception."""
    box: dict = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            box["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join(timeout=60)
    assert not t.is_alive(), "the thread hung"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_leave_cpu_moves_the_thread_off_that_cpu_and_keeps_its_mask():
    """_leave_cpu (run by a worker woken onto its caller's CPU) migrates the calling thread off the CPU named,
    restores the CPUs it was allowed, and does nothing for another CPU or when no other CPU is allowed."""
    _needs_pool()
    c0, c1 = _two_cpus()
    word, mask = np.zeros(1, np.int64), np.empty(2 * workers.MASK_WORDS, np.int64)

    def body() -> list:
        got = []
        os.sched_setaffinity(0, {c0})  # now on c0
        got.append(("pinned", workers._current_cpu(word), workers._leave_cpu(c0, mask), os.sched_getaffinity(0)))
        os.sched_setaffinity(0, {c0, c1})
        for _ in range(20):  # (the scheduler may itself move the thread between the two calls: try again)
            here = workers._current_cpu(word)
            other = c1 if here == c0 else c0
            stayed = workers._leave_cpu(other, mask)  # not on `other`: no move
            moved = workers._leave_cpu(here, mask)
            got.append(("free", here, stayed, moved, workers._current_cpu(word), os.sched_getaffinity(0)))
            if moved:
                break
        return got

    got = _in_thread(body)
    assert got[0] == ("pinned", c0, False, {c0})
    tries = got[1:]
    assert all(t[2] is False and t[5] == {c0, c1} for t in tries)
    assert tries[-1][3] is True, tries
    assert tries[-1][4] != tries[-1][1], tries  # it left that CPU


def test_a_worker_woken_onto_the_callers_cpu_moves_off_it():
    """After the pool has slept (futex), the caller's first loop wakes the worker; Linux may place it on the
    caller's CPU (it placed it there often, and left it there for milliseconds).  Here the worker is held
    to the caller's CPU while it sleeps and allowed both CPUs just before the wake: it must then not stay
    on the caller's CPU, and it takes items."""
    _needs_pool()
    c0, c1 = _two_cpus()
    worker_tid = workers._threads[0].native_id
    x = np.random.default_rng(3).standard_normal(200_000)
    out = np.empty_like(x)

    def body() -> list:
        got = []
        os.sched_setaffinity(0, {c0})
        for _ in range(5):
            os.sched_setaffinity(worker_tid, {c0})
            deadline = time.monotonic() + 30
            while workers.CTRL[workers.SLEEPERS] < workers.stats()["workers"] and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(0.01)
            asleep = int(workers.CTRL[workers.SLEEPERS])
            os.sched_setaffinity(worker_tid, {c0, c1})
            moves, items = workers.stats()["moves"], workers.stats()["worker_items"]
            for _ in range(50):  # loops back to back: the worker spins between them
                _plus_one(x, out)
            st = workers.stats()
            got.append((asleep, _cpu_of(worker_tid), st["moves"] - moves, st["worker_items"] - items,
                        bool(np.array_equal(out, x + 1.0))))
        return got

    try:
        got = _in_thread(body)
    finally:
        os.sched_setaffinity(worker_tid, os.sched_getaffinity(0))
    assert all(g[0] >= 1 for g in got), got  # the worker was asleep each time
    assert all(g[4] for g in got), got
    assert all(g[1] != c0 for g in got), got  # not left on the caller's CPU
    assert all(g[3] > 0 for g in got), got  # and it took part
