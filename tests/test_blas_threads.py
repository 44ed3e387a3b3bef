"""kernels/blas.py: while a model with BLAS-backed layers runs, numpy's OpenBLAS runs on one thread
(large products on the process's count), and the count the process had is back afterwards -- after
an error, after concurrent runs, and never touched by models without such layers."""

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


def test_large_products_get_the_process_thread_count(two_threads):
    assert blas.enter()
    try:
        assert CTL.get_num_threads() == 1
        d = blas.GEMM_PARALLEL_MIN_DIM
        assert not blas.widen(d, d, d)  # too few operations
        assert not blas.widen(4, 1 << 20, 576)  # too skinny (4 output channels of a convolution)
        assert not blas.widen(8, 1000, 576)  # too few operations (9 MFLOP)
        assert CTL.get_num_threads() == 1
        assert blas.widen(512, 3072, 768)
        assert CTL.get_num_threads() == 2
        blas.narrow()
        assert CTL.get_num_threads() == 1
    finally:
        blas.leave()
    assert CTL.get_num_threads() == 2
    assert not blas.widen(512, 3072, 768)  # outside a run: nothing changes
    assert CTL.get_num_threads() == 2


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
