"""How numpy's BLAS runs while irnorm runs a model.

irnorm's MatMul, convolution, attention and recurrent layers call numpy's BLAS (OpenBLAS in numpy's
wheels), and its other kernels run on Numba's threads.  Left at its default, OpenBLAS starts a thread
per core for every product above a small size, and after each product those threads spin waiting for
the next one -- on the very cores Numba's kernels then need.  In the real networks under
tests/networks (GEMMs of a few MFLOP) that made a run 2-5x slower than with a single BLAS thread.
So while a model runs (``enter``/``leave``), BLAS runs on one thread; the setting in force before the
run is restored when the last concurrent run ends.

A product large enough to pay for more cores (``may_widen``) is cut into blocks of columns (of B and
of the result, ``column_blocks``), each block one single-threaded BLAS call, and the blocks run on
Numba's threads (``product``: a parallel loop calling OpenBLAS's cblas_?gemm, so the blocks go to
the workers Numba's kernels keep warm rather than to threads that fight them for the cores).
Not on OpenBLAS's own threads: OpenBLAS splits a product by its thread count at the call, and its
Haswell (AVX2) kernels round differently for different splits ([64, 147] x [147, 1024] on 1 and on 2
threads differ in the last bit of a fifth of the results), so a result depended on what else the
process ran (a concurrent run setting the process-wide count) and on how it was started (Dask's
workers start with OPENBLAS_NUM_THREADS=1).  The cut depends on the product's sizes only: the same
bits on one thread (a Dask task, whose kernels get one thread) as on several, alone or beside other
runs.

The library is found with threadpoolctl (it knows where numpy's BLAS is and what it is); only an
OpenBLAS with its own process-wide thread pool (pthreads, as in numpy's wheels) is driven, through its
``openblas_set_num_threads``; where the process has loaded several, numpy's own (numpy_blas).  Without
threadpoolctl, or with another BLAS, nothing is changed and products are one call each.
``IRNORM_BLAS_THREADS=default`` leaves BLAS alone.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

# Products of at least this many floating-point operations (2*m*n*k) whose three dims are all at least
# GEMM_PARALLEL_MIN_DIM are cut into column blocks run on several threads; all others are one call on
# the calling thread.  Measured with OpenBLAS's own threads (which the blocks replaced) on the machine of
# the README's tables: alone, two threads are faster from 2 MFLOP on; inside a network the idle pool's
# spinning costs the Numba kernels around it more than that: ResNet-18 (products up to 19 MFLOP) ran
# 1.5x faster with one thread for every product than with two for those over 2 MFLOP, and SSD-VGG
# (products of 8-128 output channels x 27-576 x up to 90000 positions) 20-40% faster with one thread
# than with two for those over 32 MFLOP; a transformer-sized MLP ([512, 768] x [768, 3072], GELU, MVN)
# ran 1.6x faster with two threads for its products.
# Since the small kernels around them run on the calling thread (a spinning BLAS thread on the other
# core no longer slows them), large products pay for two threads even when skinny: 16 MFLOP with every
# dim >= 8 (was 32 MFLOP, >= 128) made ResNet-18 7% (its 7x7 stem: [64, 147] x [147, 1024]),
# ResNetV2-BiT 13% and SSD-VGG 22% ([8..32 channels] x [72..288] x [5625..90000] positions) faster (AVX-512
# EPYC, 2 cores, benchmarks/networks.py), transformers and UNet unchanged.
GEMM_PARALLEL_FLOPS = 16 << 20
GEMM_PARALLEL_MIN_DIM = 8
# A block per this many floating-point operations (at least 2, at most PART_MAX), of a whole number of
# PART_COLS columns: few enough that each stays an efficient GEMM, enough to keep more cores than two busy.
PART_FLOPS = 8 << 20
PART_MAX = 8
PART_COLS = 16

# Multiply-adds below which a float32 product stays numpy's (one np.matmul): the checks and the kernel call
# cost more than irnorm's GEMM kernels save on it.
MICRO_MIN = 1 << 14

_lock = threading.Lock()
_lookup_lock = threading.Lock()  # _controller's one-time lookup
_state: dict[str, Any] = {"ctl": None, "found": False, "depth": 0, "saved": 1, "current": None}


class _OpenBLAS:
    """openblas_{get,set}_num_threads of the OpenBLAS numpy loaded (under its symbol affixes), and its
    cblas_sgemm / cblas_dgemm as function pointers Numba can call (None where not found)."""

    def __init__(self, path: str) -> None:
        import ctypes

        lib = ctypes.CDLL(path)  # the library already loaded: the same handle, nothing is initialized again
        for prefix in ("", "scipy_"):
            for suffix in ("", "64_", "_64"):
                get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype, get.argtypes = ctypes.c_int, []
                    put.restype, put.argtypes = None, [ctypes.c_int]
                    self.get_num_threads, self.set_num_threads = get, put
                    self.gemm = self._gemm_pointers(lib, prefix, suffix)
                    return
        raise LookupError(f"no openblas_set_num_threads in {path}")

    @staticmethod
    def _gemm_pointers(lib: Any, prefix: str, suffix: str) -> dict[np.dtype, Any]:
        """{float32: cblas_sgemm, float64: cblas_dgemm} as ctypes function pointers; the integers are
        64-bit in an ILP64 build (the 64_ symbols numpy's wheels carry), else C ints."""
        import ctypes

        i, p = ctypes.c_int, ctypes.c_void_p
        n = ctypes.c_int64 if suffix else ctypes.c_int
        found = {}
        for dt, letter, real in ((np.dtype(np.float32), "s", ctypes.c_float),
                                 (np.dtype(np.float64), "d", ctypes.c_double)):
            fn = getattr(lib, f"{prefix}cblas_{letter}gemm{suffix}", None)
            if fn is not None:
                proto = ctypes.CFUNCTYPE(None, i, i, i, n, n, n, real, p, n, p, n, real, p, n)
                found[dt] = proto(ctypes.cast(fn, p).value)
        return found


def _controller() -> Any:
    """numpy's BLAS when it is an OpenBLAS with its own thread pool (pthreads), else None (looked up
    once).  threadpoolctl finds the library; the calls then go straight to it (a fraction of a us).
    The lookup holds a lock and is marked done only once its answer is in place: a second thread
    asking meanwhile (the first runs of a model in Dask's threads) waits for it, instead of reading
    "not driven" and running its products with every BLAS thread (other bits than one thread gives)."""
    if _state["found"]:
        return _state["ctl"]
    with _lookup_lock:
        if not _state["found"]:
            _state["ctl"] = _lookup()
            _state["found"] = True
    return _state["ctl"]


def _lookup() -> Any:
    if os.environ.get("IRNORM_BLAS_THREADS", "") == "default":
        return None
    try:
        import numpy  # noqa: F401 - the BLAS must be loaded for threadpoolctl to see it
        from threadpoolctl import threadpool_info

        lib = numpy_blas([i for i in threadpool_info() if i.get("user_api") == "blas"])
        # One process-wide pool only: with OpenMP, OpenBLAS's threads are per calling thread and
        # OpenMP's own settings apply
        if lib is not None and lib.get("internal_api") == "openblas" and lib.get("threading_layer") == "pthreads":
            return _OpenBLAS(lib["filepath"])
    except Exception:  # noqa: BLE001 - no threadpoolctl, or a library it cannot drive: leave BLAS alone
        pass
    return None


def numpy_blas(libs: list[dict]) -> dict | None:
    """numpy's BLAS among the BLAS libraries threadpoolctl found in this process: the only one, or the one
    inside numpy's installation (a wheel's numpy.libs).  A second OpenBLAS is common: scipy's wheels carry their
    own, and Numba loads it (scipy.linalg.cython_blas) whenever it refreshes its registries -- on any compile,
    so at random before or after this lookup; with two libraries irnorm used to drive neither, and numpy's
    OpenBLAS then ran its products on every thread beside irnorm's own (AlexNet 270 -> 400 us a call).  None
    when it cannot tell (several, none of them numpy's own)."""
    if len(libs) == 1:
        return libs[0]
    import numpy

    base = Path(numpy.__file__).resolve().parent
    homes = (base, base.parent / "numpy.libs")
    own = [i for i in libs if any(Path(i.get("filepath", "")).resolve().is_relative_to(h) for h in homes)]
    return own[0] if len(own) == 1 else None


def _set(n: int) -> None:
    ctl = _state["ctl"]
    if ctl is not None and _state["current"] != n:
        ctl.set_num_threads(n)
        _state["current"] = n


def enter() -> bool:
    """A model run starts: one BLAS thread until the last concurrent run ends (leave()).  Returns
    whether BLAS is driven at all (then leave() must follow)."""
    ctl = _state["ctl"] if _state["found"] else _controller()
    if ctl is None:
        return False
    with _lock:
        if _state["depth"] == 0:
            _state["saved"] = max(1, int(ctl.get_num_threads()))
            _state["current"] = _state["saved"]
            _set(1)
        _state["depth"] += 1
    return True


def leave() -> None:
    """A model run ends: the last one restores the thread count the process had."""
    with _lock:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            _set(_state["saved"])


def gemm_pointer(dtype: np.dtype) -> Any:
    """numpy's OpenBLAS cblas_sgemm / cblas_dgemm for `dtype` as a function pointer Numba kernels can
    call (single-threaded while a model runs), or None when this process's BLAS is not driven."""
    ctl = _controller()
    return None if ctl is None else ctl.gemm.get(np.dtype(dtype))


def gemm_address(dtype: np.dtype) -> tuple[int, np.integer] | None:
    """cblas_sgemm / cblas_dgemm for `dtype` as (its address, a zero of the library's integer type) for
    blas_blocks.call_gemm, or None when this process's BLAS is not driven."""
    fn = gemm_pointer(dtype)
    return None if fn is None else _address(fn)


def _address(fn: Any) -> tuple[int, np.integer]:
    import ctypes

    return ctypes.cast(fn, ctypes.c_void_p).value, (np.int64(0) if ctypes.sizeof(fn.argtypes[3]) == 8 else np.int32(0))


def may_widen(m: int, n: int, k: int, batch: int = 1) -> bool:
    """A product of [m, k] x [k, n] matrices (`batch` of them) is large and square enough for more
    threads (what widen() decides from the sizes alone)."""
    return min(m, n, k) >= GEMM_PARALLEL_MIN_DIM and 2.0 * m * n * k * batch >= GEMM_PARALLEL_FLOPS


def column_blocks(m: int, n: int, k: int, batch: int = 1) -> tuple[tuple[int, int], ...] | None:
    """For a product of [m, k] x [k, n] matrices (`batch` of them): the column ranges [lo, hi) of the
    result it is computed in, one BLAS call each, or None for one call.  Depends on the sizes alone
    (and on whether this process's BLAS is driven at all), never on thread counts: so do the bits."""
    if _controller() is None or not may_widen(m, n, k, batch):
        return None
    parts = min(PART_MAX, max(2, int(2.0 * m * n * k * batch) // PART_FLOPS), n // PART_COLS)
    if parts < 2:
        return None
    per_part = -(-n // parts)
    step = -(-per_part // PART_COLS) * PART_COLS
    return tuple((lo, min(n, lo + step)) for lo in range(0, n, step))


_helpers_lock = threading.Lock()
_helpers: dict[str, Any] = {"pool": None}


def _forget_helpers() -> None:
    # a fork()ed child has none of the parent's threads: its first product starts a pool of its own
    _helpers["pool"] = None


os.register_at_fork(after_in_child=_forget_helpers)


def _helper_pool() -> ThreadPoolExecutor:
    pool = _helpers["pool"]
    if pool is None:
        import numba

        with _helpers_lock:
            pool = _helpers["pool"]
            if pool is None:
                pool = ThreadPoolExecutor(max(1, numba.config.NUMBA_NUM_THREADS - 1), "irnorm-blas")
                _helpers["pool"] = pool
    return pool


def _as_batches(x: np.ndarray, batch: tuple[int, ...]) -> np.ndarray | None:
    """`x` [..., R, C] as a [B or 1, R, C] view whose rows BLAS can address (unit stride along C, a
    row stride of at least C elements), where its batch dims are `batch` or all ones; else None (also
    when the batch dims do not flatten into one without a copy)."""
    lead = x.shape[:-2]
    rows, cols = x.shape[-2:]
    item = x.itemsize
    if x.strides[-1] != item or x.strides[-2] % item or x.strides[-2] < cols * item:
        return None
    if math.prod(lead) == 1:
        return x.reshape((1, rows, cols))  # only ones dropped: a view
    if lead != batch:
        return None
    if x.flags.c_contiguous:
        return x.reshape((-1, rows, cols))  # a view; as_strided below costs ~5 us a call
    dims = [(d, st) for d, st in zip(lead, x.strides[:-2], strict=True) if d != 1]
    if any(s0 != s1 * d1 for (_, s0), (d1, s1) in zip(dims, dims[1:], strict=False)) or dims[-1][1] % item:
        return None
    return np.lib.stride_tricks.as_strided(x, (math.prod(lead), rows, cols), (dims[-1][1], x.strides[-2], item))


def _blocks_on_numba(gemm: Any, a: np.ndarray, b: np.ndarray, out: np.ndarray,
                     blocks: tuple[tuple[int, int], ...]) -> bool:
    """The blocks as cblas_?gemm calls in one Numba parallel loop, when the operands are laid out for it
    (same float type, batch dims flattenable to one: [B, M, K] x [B, K, N] with either side broadcast);
    False (nothing done) otherwise."""
    batch = out.shape[:-2]
    a3, b3, o3 = _as_batches(a, batch), _as_batches(b, batch), _as_batches(out, batch)
    if a3 is None or b3 is None or o3 is None or o3.shape[0] != math.prod(batch) or o3.strides[0] < 0:
        return False
    from .blas_blocks import block_bounds, blocked_gemm

    starts, ends = block_bounds(blocks)
    one = out.dtype.type(1.0)
    gemm_at, blas_int = _address(gemm)
    blocked_gemm(gemm_at, blas_int, a3, b3, o3, starts, ends, one, one - one)
    return True


def _micro_on_numba(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """out = a @ b as one call of irnorm's float32 kernels (blas_blocks.micro_product) on the calling thread,
    when they are enabled (AVX2 + FMA) and all three are float32 and laid out for it; False (nothing done)
    otherwise."""
    if a.dtype != np.float32 or b.dtype != np.float32 or 0 in out.shape or out.size * a.shape[-1] < MICRO_MIN:
        return False
    from . import microgemm

    if not microgemm.ENABLED:
        return False
    batch = out.shape[:-2]
    a3, b3, o3 = _as_batches(a, batch), _as_batches(b, batch), _as_batches(out, batch)
    if a3 is None or b3 is None or o3 is None or o3.shape[0] != math.prod(batch) or o3.strides[0] < 0:
        return False
    from .blas_blocks import micro_product

    micro_product(a3, b3, o3)
    return True


def batched_fits(a_shape: tuple[int, ...], b_shape: tuple[int, ...], dtype: np.dtype) -> bool:
    """A batched product of these shapes and dtype (A [..., M, K], B [..., K, N]: equal batch dims) goes to
    batched_micro when its operands are C-contiguous: float32, large enough (MICRO_MIN), irnorm's GEMM kernels
    enabled.  numpy calls BLAS once per batch item: Swin's attention [16, 2, 16, 16] @ [16, 2, 16, 16] 5.8 ->
    3.8 us as one call.  (B as the transposed view of K, attention's Q @ K^T, stays numpy's: laying each item
    of B out as [K, N] first cost what the one call saves.)"""
    if dtype != np.float32 or len(a_shape) < 3 or a_shape[:-2] != b_shape[:-2]:
        return False
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    return math.prod(a_shape[:-2]) * m * n * k >= MICRO_MIN and _micro_entry() is not None


def batched_micro(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b as a new C-contiguous array by one call of micro_product, for operands batched_fits admits, both
    C-contiguous (the caller's checks)."""
    lead = a.shape[:-2]
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = math.prod(lead)
    out = np.empty((batch, m, n), np.float32)
    _state["micro"](a.reshape(batch, m, k), b.reshape(batch, k, n), out)
    return out.reshape(lead + (m, n))


def batched_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.matmul(a, b) for products too small for column blocks, as a new C-contiguous array: by batched_micro
    where batched_fits admits them and both are C-contiguous, else np.matmul."""
    if a.flags.c_contiguous and b.flags.c_contiguous and a.dtype == b.dtype and batched_fits(a.shape, b.shape,
                                                                                                a.dtype):
        return batched_micro(a, b)
    return np.matmul(a, b)


def _micro_entry() -> Any:
    """micro_product's entry point for C-contiguous 3-D float32 operands (jit.entry), None where irnorm's GEMM
    kernels are not enabled; looked up once."""
    if "micro" not in _state:
        from . import microgemm
        from .blas_blocks import micro_product
        from .jit import c_array, entry

        arr = c_array(3, np.dtype(np.float32))
        _state["micro"] = entry(micro_product, arr, arr, arr) if microgemm.ENABLED else None
    return _state["micro"]


def product(a: np.ndarray, b: np.ndarray, out: np.ndarray, blocks: tuple[tuple[int, int], ...] | None) -> None:
    """out = a @ b (np.matmul's broadcasting), by the column `blocks` of column_blocks (None: one call).
    The blocks run on as many threads as the calling thread's kernels may use (numba.get_num_threads:
    one in a Dask task), the calling thread included; each block is the same BLAS call either way, and
    which of the two ways below runs depends on the operands' types and layout alone."""
    if blocks is None:
        if not (out.dtype == np.float32 and _micro_on_numba(a, b, out)):
            np.matmul(a, b, out=out)
        return
    ctl = _state["ctl"]
    gemm = None if ctl is None or a.dtype != out.dtype or b.dtype != out.dtype else ctl.gemm.get(out.dtype)
    if gemm is not None and _blocks_on_numba(gemm, a, b, out, blocks):
        return
    import numba

    pending = iter(blocks)  # shared by the threads: a list iterator hands each block out once

    def drain() -> None:
        for lo, hi in pending:
            np.matmul(a, b[..., lo:hi], out=out[..., lo:hi])

    helpers = min(len(blocks), numba.get_num_threads()) - 1
    started = [_helper_pool().submit(drain) for _ in range(helpers)] if helpers > 0 else []
    try:
        drain()
    finally:
        for f in started:
            # a helper still queued behind another run's blocks is not waited for: nothing is left for it
            if not f.cancel():
                f.result()
