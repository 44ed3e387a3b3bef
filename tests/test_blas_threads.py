"""kernels/blas.py: while a model with BLAS-backed layers runs, numpy's OpenBLAS runs on one thread,
and the count the process had is back afterwards -- after an error, after concurrent runs, and never
touched by models without such layers.  Large products are cut into column blocks whose bits do not
depend on how many threads run them, nor on what else the process runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from irbuilder import single_op_model
from threadutil import in_threads

import irnorm
from irnorm.errors import InputError
from irnorm.kernels import blas

ROOT = Path(__file__).resolve().parent.parent

CTL = blas._controller()
pytestmark = pytest.mark.skipif(CTL is None, reason="numpy's BLAS here is not an OpenBLAS with a pthreads pool "
                                                     "(irnorm leaves other BLAS libraries alone)")


@pytest.fixture
def two_threads():
    """The process's BLAS at 2 threads for the test, whatever it was."""
    before = CTL.get_num_threads()
    CTL.set_num_threads(2)
    blas._state["current"] = None
    yield
    CTL.set_num_threads(before)
    blas._state["current"] = None


def _matmul(tmp_path: Path, k: int = 8) -> irnorm.Model:
    b = single_op_model("MatMul", [("param:a", ((-1, k), "f32")), ("param:b", ((k, -1), "f32"))],
                        [((-1, -1), "f32")], {}, version="opset1")
    return irnorm.load(b.save(tmp_path))


def _seen_during(m: irnorm.Model, feeds: dict) -> list[int]:
    seen: list[int] = []
    m.run(feeds, on_layer=lambda node, outs, s: seen.append(CTL.get_num_threads()))
    return seen


def test_one_blas_thread_during_a_run_and_the_count_restored(tmp_path, two_threads):
    m = _matmul(tmp_path)
    assert m._plan.uses_blas
    a, b = np.ones((4, 8), np.float32), np.ones((8, 3), np.float32)
    assert _seen_during(m, {"a": a, "b": b})[-1] == 1  # reported right after the MatMul ran
    assert CTL.get_num_threads() == 2
    y = m.run({"a": a, "b": b})["y"]
    np.testing.assert_array_equal(y, a @ b)
    assert CTL.get_num_threads() == 2


def test_column_blocks_depend_on_the_sizes_alone():
    d = blas.GEMM_PARALLEL_MIN_DIM
    assert blas.column_blocks(d, d, d) is None  # too few operations
    assert blas.column_blocks(4, 1 << 20, 576) is None  # too skinny (4 output channels of a convolution)
    assert blas.column_blocks(8, 1000, 576) is None  # too few operations (9 MFLOP)
    assert blas.column_blocks(8, 8, 1 << 20) is None  # large, but too few columns to cut
    for m, n, k, batch in ((64, 1024, 147, 1), (512, 3072, 768, 1), (32, 5625, 72, 1), (32, 1000, 64, 16),
                           (64, 33, 4096, 1)):
        blocks = blas.column_blocks(m, n, k, batch)
        assert blocks is not None and 2 <= len(blocks) <= blas.PART_MAX, (m, n, k)
        assert blocks[0][0] == 0 and blocks[-1][1] == n
        assert all(hi > lo and lo % blas.PART_COLS == 0 for lo, hi in blocks)
        assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:], strict=False))
        assert blas.column_blocks(m, n, k, batch) == blocks
    assert blas.column_blocks(64, 1024, 147) == ((0, 512), (512, 1024))  # the ResNet stem's: two halves


def _threads(n: int) -> None:
    import numba

    numba.set_num_threads(n)


# (A, B shapes, whether A is transposed, whether the blocks run in the Numba loop; else on Python threads)
PRODUCTS = [((64, 147), (147, 1040), False, True), ((3, 64, 147), (147, 1000), False, True),
            ((1, 32, 288), (2, 288, 700), False, True), ((512, 768), (768, 768), False, True),
            ((2, 1, 24, 300), (3, 300, 2000), False, False), ((300, 64), (300, 1000), True, False)]


@pytest.mark.parametrize("a_shape, b_shape, a_transposed, on_numba", PRODUCTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_products_same_bits_on_any_thread_count(a_shape, b_shape, a_transposed, on_numba, dtype, monkeypatch):
    rng = np.random.default_rng(b_shape[-1])
    a, b = (rng.standard_normal(s).astype(dtype) for s in (a_shape, b_shape))
    if a_transposed:
        a = a.swapaxes(-1, -2)  # a strided view: the Python-thread way
    ways = []
    numba_way = blas._blocks_on_numba
    monkeypatch.setattr(blas, "_blocks_on_numba", lambda *args: ways.append(numba_way(*args)) or ways[-1])
    want = np.matmul(a, b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = max(np.prod(a.shape[:-2], dtype=int), np.prod(b.shape[:-2], dtype=int))
    blocks = blas.column_blocks(m, n, k, batch)
    assert blocks is not None
    results = {}
    assert blas.enter()
    try:
        for threads in (1, 2):
            _threads(threads)
            out = np.full_like(want, np.nan)
            blas.product(a, b, out, blocks)
            results[threads] = out
        _threads(2)

        def work(i: int) -> None:  # concurrent products: the same bits as alone
            for _ in range(5):
                out = np.empty_like(want)
                blas.product(a, b, out, blocks)
                assert out.tobytes() == results[1].tobytes()

        assert in_threads(work, 3) == []
    finally:
        blas.leave()
    assert results[1].tobytes() == results[2].tobytes()
    assert ways and set(ways) == {on_numba}
    # the blocks are the same product: equal to numpy's up to the BLAS's rounding
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(results[1], want, rtol=tol, atol=tol * np.sqrt(k))


def test_batches_are_views_or_refused():
    """What the Numba loop is given: a [B or 1, R, C] view of the same memory, or None."""
    base = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    v = blas._as_batches(base, (2, 3))
    assert v.shape == (6, 4, 5) and np.shares_memory(v, base) and (v == base.reshape(6, 4, 5)).all()
    one = blas._as_batches(base[:1, :1], (7,))  # batch dims of one broadcast
    assert one.shape == (1, 4, 5) and np.shares_memory(one, base)
    flipped = blas._as_batches(base[::-1, ::-1], (2, 3))  # negative batch strides that still flatten
    assert flipped is not None and (flipped == base[::-1, ::-1].reshape(6, 4, 5)).all()
    assert blas._as_batches(base.transpose(1, 0, 2, 3), (3, 2)) is None  # batch dims that do not flatten
    assert blas._as_batches(base, (3, 2)) is None  # another batch
    assert blas._as_batches(base.swapaxes(-1, -2), (2, 3)) is None  # columns not of unit stride
    assert blas._as_batches(base[..., ::2], (2, 3)) is None
    wide = np.zeros((4, 16), np.float32)[:, :5]  # rows inside a wider array: a row stride of 16 elements
    assert blas._as_batches(wide, ()).strides == (64 * 4, 64, 4)


def _large_products_model(tmp_path: Path) -> irnorm.Model:
    """A ResNet-like 7x7 stride-2 stem (a [64, 147] x [147, 1024] product per image) and a linear layer
    ([256, 768] x [768, 768]): both above the size that is cut into blocks."""
    from irbuilder import IRBuilder

    rng = np.random.default_rng(3)
    b = IRBuilder("large_products")
    x = b.parameter("x", (-1, 3, 64, 64), "f32")
    w = b.const(rng.standard_normal((64, 3, 7, 7)).astype(np.float32) * np.float32(0.1), "w")
    (c,) = b.layer("Convolution", [x, w], [((-1, 64, 32, 32), "f32")],
                   {"strides": "2,2", "pads_begin": "3,3", "pads_end": "3,3", "dilations": "1,1",
                    "auto_pad": "explicit"}, version="opset1", name="stem", names=["stem"])
    b.result(c)
    t = b.parameter("t", (-1, 768), "f32")
    lw = b.const(rng.standard_normal((768, 768)).astype(np.float32) * np.float32(0.03), "lw")
    (y,) = b.layer("MatMul", [t, lw], [((-1, 768), "f32")], {"transpose_a": "false", "transpose_b": "true"},
                   version="opset1", name="linear", names=["linear"])
    b.result(y)
    return irnorm.load(b.save(tmp_path))


def test_large_products_same_bits_alone_concurrent_and_on_one_thread(tmp_path, two_threads):
    """Concurrent runs (as on Dask's threaded scheduler) and a run whose kernels get one thread (a Dask
    task) give the bits of a run alone: on OpenBLAS's Haswell kernels a product on 1 and on 2 threads
    rounds differently, and the process-wide BLAS thread count was changed under a running product."""
    m = _large_products_model(tmp_path)
    rng = np.random.default_rng(4)
    feeds = [{"x": rng.standard_normal((n, 3, 64, 64)).astype(np.float32),
              "t": rng.standard_normal((256 * n, 768)).astype(np.float32)} for n in (1, 2, 3)]
    alone = [m.run(f) for f in feeds]

    def work(i: int) -> None:
        _threads(1 + i % 2)
        for _ in range(4):
            got = m.run(feeds[i % 3])
            for k, v in alone[i % 3].items():
                assert got[k].tobytes() == v.tobytes(), (i, k)

    try:
        assert in_threads(work, 4) == []
    finally:
        _threads(2)
    assert CTL.get_num_threads() == 2 and blas._state["depth"] == 0


_FORKED: dict = {}


def _run_in_child(feeds: dict) -> np.ndarray:
    return _FORKED["model"].run(feeds)["stem"]


def test_a_forked_child_runs_blocked_products(tmp_path, two_threads):
    """The helper threads do not survive fork(): a child's first blocked product starts its own."""
    import multiprocessing

    m = _FORKED["model"] = _large_products_model(tmp_path)
    feeds = {"x": np.ones((1, 3, 64, 64), np.float32), "t": np.ones((256, 768), np.float32)}
    want = m.run(feeds)["stem"]  # the parent's helper pool exists now
    assert blas._helpers["pool"] is not None
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            got = pool.apply_async(_run_in_child, (feeds,)).get(timeout=120)
    finally:
        _FORKED.clear()
    assert got.tobytes() == want.tobytes()


def test_restored_after_a_failing_run(tmp_path, two_threads):
    m = _matmul(tmp_path)
    with pytest.raises(InputError):  # K mismatch, found when the product runs
        m.run({"a": np.ones((4, 8), np.float32), "b": np.ones((5, 3), np.float32)})
    assert CTL.get_num_threads() == 2 and blas._state["depth"] == 0


def test_concurrent_runs_restore_once_the_last_ends(tmp_path, two_threads):
    m = _matmul(tmp_path, k=64)
    a, b = np.ones((64, 64), np.float32), np.ones((64, 64), np.float32)

    def work(_i: int) -> None:
        for _ in range(200):
            np.testing.assert_array_equal(m.run({"a": a, "b": b})["y"], a @ b)

    assert in_threads(work, 4) == []
    assert CTL.get_num_threads() == 2 and blas._state["depth"] == 0


def test_models_without_blas_layers_leave_blas_alone(tmp_path, two_threads):
    b = single_op_model("Relu", [("param:x", ((4,), "f32"))], [((4,), "f32")], {}, version="opset1")
    m = irnorm.load(b.save(tmp_path))
    assert not m._plan.uses_blas
    assert _seen_during(m, {"x": np.ones(4, np.float32)})[-1] == 2


def test_irnorm_blas_threads_default_turns_it_off(tmp_path):
    xml = _matmul(tmp_path).path
    code = (f"import numpy as np, irnorm, threadpoolctl; m = irnorm.load({str(xml)!r}); seen = []; "
            "m.run({'a': np.ones((2, 8), np.float32), 'b': np.ones((8, 2), np.float32)}, "
            "on_layer=lambda n, o, s: seen.append(threadpoolctl.threadpool_info()[0]['num_threads'])); "
            "print(seen[-1])")
    for setting, during in (("default", "2"), ("", "1")):
        env = {**os.environ, "IRNORM_BLAS_THREADS": setting, "OPENBLAS_NUM_THREADS": "2"}
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [during], (setting, out.stdout)


def test_first_lookup_is_seen_by_every_thread(two_threads, monkeypatch):
    """The BLAS lookup runs once, the first time any thread asks; a thread asking while it runs waits for
    its answer. It used to mark itself done before the answer was in place, so a model's first runs in two
    threads at once (Dask's) could see "BLAS not driven" in one of them and run its products with every
    BLAS thread -- other bits than one thread gives (a ResNet-18 stem convolution's did)."""
    import threading
    import time

    import threadpoolctl

    real_info = threadpoolctl.threadpool_info
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: (time.sleep(0.2), real_info())[1])  # a slow lookup
    monkeypatch.setitem(blas._state, "found", False)
    monkeypatch.setitem(blas._state, "ctl", None)
    got, counts = [], []
    barrier = threading.Barrier(3)

    def first_run():
        barrier.wait()
        driven = blas.enter()
        got.append(driven)
        counts.append(CTL.get_num_threads())
        time.sleep(0.05)  # both runs overlap
        if driven:
            blas.leave()

    threads = [threading.Thread(target=first_run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [True] * 3 and counts == [1] * 3
    assert CTL.get_num_threads() == 2 and blas._state["depth"] == 0


def test_numpy_blas_is_picked_among_several():
    """threadpoolctl lists every BLAS the process loaded: numpy's is the only one, or the one inside numpy's
    installation (scipy's wheels bring a second OpenBLAS, which Numba loads); two others: none."""
    home = Path(np.__file__).resolve().parent
    own = {"filepath": str(home.parent / "numpy.libs" / "libscipy_openblas64_-x.so"), "internal_api": "openblas"}
    inside = {"filepath": str(home / "_core" / "libopenblas.so"), "internal_api": "openblas"}
    other = {"filepath": "/opt/scipy.libs/libscipy_openblas-y.so", "internal_api": "openblas"}
    third = {"filepath": "/usr/lib/libopenblas.so.0", "internal_api": "openblas"}
    assert blas.numpy_blas([other]) is other  # the only one: numpy's, wherever it lives
    assert blas.numpy_blas([other, own]) is own
    assert blas.numpy_blas([inside, other]) is inside
    assert blas.numpy_blas([other, third]) is None
    assert blas.numpy_blas([own, inside]) is None
    assert blas.numpy_blas([]) is None


_SECOND_OPENBLAS = r"""
import ctypes, json, shutil, sys
import numpy  # (its BLAS loaded)
from threadpoolctl import threadpool_info
numpy_lib = [i["filepath"] for i in threadpool_info() if i.get("user_api") == "blas"]
copy = shutil.copy(numpy_lib[0], sys.argv[2])
ctypes.CDLL(copy)  # a second OpenBLAS in the process, as scipy's is once Numba has imported it
libs = [i["filepath"] for i in threadpool_info() if i.get("user_api") == "blas"]
import numpy as np
import irnorm
from irnorm.kernels import blas
m = irnorm.load(sys.argv[1])
x = np.ones((2, 8), np.float32)
seen = []
m.run({"a": x, "b": np.ones((8, 3), np.float32)}, on_layer=lambda n, o, s: seen.append(blas._state["current"]))
print(json.dumps({"libs": libs, "numpy_lib": numpy_lib, "driven": blas._state["ctl"] is not None, "seen": seen}))
"""


def test_driven_with_a_second_openblas_loaded(tmp_path):
    """With another OpenBLAS loaded beside numpy's (a copy of it here, loaded first thing in a fresh process), irnorm
    still finds numpy's and runs its products on one BLAS thread."""
    numpy_libs = [i for i in __import__("threadpoolctl").threadpool_info() if i.get("user_api") == "blas"]
    if len(numpy_libs) != 1 or blas.numpy_blas(numpy_libs + [{"filepath": str(tmp_path / "x.so")}]) is None:
        pytest.skip("numpy's OpenBLAS is not inside numpy's installation here (not a wheel's numpy.libs)")
    xml = _matmul(tmp_path).path
    copy = tmp_path / "libscipy_openblas64_-copy.so"  # (threadpoolctl knows an OpenBLAS by its file name)
    out = subprocess.run([sys.executable, "-c", _SECOND_OPENBLAS, str(xml), str(copy)], capture_output=True,
                         text=True, timeout=600, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    got = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    assert len(got["libs"]) == 2, got  # the copy is seen as a second BLAS
    assert got["driven"] and got["seen"][-1] == 1, got  # reported right after the MatMul ran
