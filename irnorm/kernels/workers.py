"""irnorm's own thread pool for Numba's parallel loops: spinning workers instead of a task arena per call.

Every ``prange`` loop Numba compiles becomes a call of ``numba_parallel_for(fn, args, dims, steps, data,
inner_ndim, array_count, num_threads)``: run the loop's outlined body ``fn`` over the ``dims[0]`` items of
its schedule, spread over threads.  Numba's TBB layer answers each call with a new ``tbb::task_arena`` that
the workers join and leave: 5-14 us a call on a 2-vCPU VM (two tasks of 1.8 us took 7.3 us together, two of
25 us took 37; README "Whole networks"), so kernels of a few microseconds to a few tens never gained from the
second core.  This module registers its own ``numba_parallel_for`` (and ``get_thread_id``, which loops with a
reduction use to pick their slot) with LLVM before the first kernel with a parallel loop links (kernels/jit.py
installs the pool then: a process running only small tensors never starts it), as Numba registers its layer's:

* worker threads (``NUMBA_NUM_THREADS - 1`` of them) run a Numba function that never returns, without the
  GIL; after their last item they spin for ``SPIN_US`` microseconds, then sleep on a futex;
* the calling thread publishes the loop, wakes sleepers, and takes items itself, as do the workers, each
  claiming the next item with an atomic compare-and-swap on (generation, index): a descheduled or sleeping
  worker never holds up work it has not claimed, and the caller waits only for items already claimed;
* a loop started while the pool is busy (a nested ``prange``, another Python thread's kernel) runs on its
  caller's thread alone, as does every loop after ``fork()`` in the child until its workers are started.

Numba's layer still initializes (its scheduling functions and thread count are used as they are).  What this
relies on in Numba (the call's arguments, how items are cut, the symbols): docs/numba-parallel-loops.md.  Linux on
x86-64 only (the futex call and the ``pause`` instruction); elsewhere, or with ``IRNORM_THREAD_POOL=0``,
Numba's layer runs the loops.  Bits do not depend on which thread runs an item: Numba's schedule fixes the
items.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

import numpy as np
from llvmlite import binding as ll
from llvmlite import ir
from numba import cfunc, njit, types
from numba.core.extending import intrinsic

from . import command_thread_lock, pool_applies, pool_supported

# Slots of the control block (int64), the contended ones on cache lines of their own.
SEQ = 0  # loop generation: bumped to publish a loop; the futex word sleepers wait on (its low 32 bits)
FN, ARGS, DIMS, STEPS, DATA, ARG_LEN, ARRAY_COUNT, ITEMS = 1, 2, 3, 4, 5, 6, 7, 8
LIMIT = 9  # the loop's thread count: workers 1 .. LIMIT - 1 take part
NEXT = 16  # (generation << 32) | next unclaimed item
DONE = 24  # items finished
BUSY = 32  # 1 while a loop owns the pool
SLEEPERS = 40  # workers asleep (or about to be) on the futex
NUDGE_CYCLES = 47
STOP, WORKERS, SPIN_CYCLES, YIELD_CYCLES, SYSCALL, PTHREAD_SELF = 48, 49, 50, 51, 52, 53
WORKER_ITEMS, LOOPS = 54, 55  # counters: items the workers ran, loops shared with them
CALLER_CPU = 56  # the CPU the caller was on when it last woke sleepers
MOVES = 57  # counter: woken workers that moved off the caller's CPU (_leave_cpu)
TIDS = 64  # pthread_self() of worker k at TIDS + k (k >= 1)
MAX_WORKERS = 63
SIZE = 128

SYS_SCHED_YIELD, SYS_FUTEX, FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 24, 202, 128, 129
SYS_SCHED_SETAFFINITY, SYS_SCHED_GETAFFINITY, SYS_GETCPU = 203, 204, 309
MASK_WORDS = 16  # affinity masks of up to 1024 CPUs (a larger machine's call fails and nothing moves)
SPIN_US = 300  # how long an idle worker spins (the gap between a network's layers is less) ...
YIELD_US = 3000  # ... and then offers its core to other threads before it sleeps
# While spinning, a worker yields its core every NUDGE_US, and a caller waiting for a worker's item spins that
# long before yielding: the scheduler sometimes wakes a sleeping worker onto the caller's core, and two threads
# spinning there while the other core idles made whole runs 1.5x slower until they were spread again.
NUDGE_US = 5
CTRL_SYMBOL = "irnorm_workers_ctrl"


def _aligned_block() -> np.ndarray:
    raw = np.zeros(SIZE + 8, np.int64)
    skip = (-raw.ctypes.data % 64) // 8
    return raw[skip:skip + SIZE]


# The control block, at one address for the process's lifetime, on a cache line of its own: compiled code
# finds it by symbol, so it is registered before the functions below are compiled or loaded from the cache.
CTRL = _aligned_block()
ll.add_symbol(CTRL_SYMBOL, CTRL.ctypes.data)


# ---- LLVM-level pieces Numba has no Python spelling for ------------------------------------------------

def _slot(builder: ir.IRBuilder, index: ir.Value) -> ir.Value:
    module = builder.module
    try:
        block = module.get_global(CTRL_SYMBOL)
    except KeyError:
        block = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(64), SIZE), CTRL_SYMBOL)
        block.linkage = "external"
    return builder.gep(block, [ir.Constant(ir.IntType(32), 0), index])


@intrinsic
def _load(typingctx, index):
    def codegen(context, builder, sig, args):
        return builder.load_atomic(_slot(builder, args[0]), "seq_cst", 8)
    return types.int64(types.int64), codegen


@intrinsic
def _store(typingctx, index, value):
    def codegen(context, builder, sig, args):
        builder.store_atomic(args[1], _slot(builder, args[0]), "seq_cst", 8)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), codegen


@intrinsic
def _add(typingctx, index, value):
    """The slot's old value; the slot += value."""
    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _slot(builder, args[0]), args[1], "seq_cst")
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def _cas(typingctx, index, expected, value):
    """Whether the slot held `expected` (and now holds `value`)."""
    def codegen(context, builder, sig, args):
        pair = builder.cmpxchg(_slot(builder, args[0]), args[1], args[2], "seq_cst", "seq_cst")
        return builder.extract_value(pair, 1)
    return types.boolean(types.int64, types.int64, types.int64), codegen


@intrinsic
def _pause(typingctx):
    def codegen(context, builder, sig, args):
        fn = builder.module.declare_intrinsic("llvm.x86.sse2.pause", fnty=ir.FunctionType(ir.VoidType(), []))
        builder.call(fn, [])
        return context.get_dummy_value()
    return types.void(), codegen


@intrinsic
def _cycles(typingctx):
    def codegen(context, builder, sig, args):
        fn = builder.module.declare_intrinsic("llvm.readcyclecounter", fnty=ir.FunctionType(ir.IntType(64), []))
        return builder.call(fn, [])
    return types.int64(), codegen


@intrinsic
def _call_body(typingctx, fn, args, dims, steps, data):
    """Numba's outlined loop body: void fn(char **args, intp *dims, intp *steps, void *data)."""
    def codegen(context, builder, sig, a):
        i64 = ir.IntType(64)
        p8 = ir.IntType(8).as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [p8.as_pointer(), i64.as_pointer(), i64.as_pointer(), p8])
        target = builder.inttoptr(a[0], fnty.as_pointer())
        builder.call(target, [builder.inttoptr(a[1], p8.as_pointer()), builder.inttoptr(a[2], i64.as_pointer()),
                              builder.inttoptr(a[3], i64.as_pointer()), builder.inttoptr(a[4], p8)])
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64, types.int64, types.int64), codegen


@intrinsic
def _syscall(typingctx, fn, number, a0, a1, a2, a3):
    """syscall(2) at address `fn` with four arguments (a futex wait or wake)."""
    def codegen(context, builder, sig, a):
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(i64, [i64], var_arg=True)
        return builder.call(builder.inttoptr(a[0], fnty.as_pointer()), list(a[1:]))
    return types.int64(*([types.int64] * 6)), codegen


@intrinsic
def _call0(typingctx, fn):
    def codegen(context, builder, sig, a):
        fnty = ir.FunctionType(ir.IntType(64), [])
        return builder.call(builder.inttoptr(a[0], fnty.as_pointer()), [])
    return types.int64(types.int64), codegen


@intrinsic
def _peek(typingctx, address):
    def codegen(context, builder, sig, a):
        return builder.load(builder.inttoptr(a[0], ir.IntType(64).as_pointer()))
    return types.int64(types.int64), codegen


@intrinsic
def _poke(typingctx, address, value):
    def codegen(context, builder, sig, a):
        builder.store(a[1], builder.inttoptr(a[0], ir.IntType(64).as_pointer()))
        return context.get_dummy_value()
    return types.void(types.int64, types.int64), codegen


@intrinsic
def _address(typingctx, array):
    def codegen(context, builder, sig, a):
        data = context.make_array(sig.args[0])(context, builder, a[0]).data
        return builder.ptrtoint(data, ir.IntType(64))
    return types.int64(array), codegen


@intrinsic
def _ctrl_address(typingctx):
    def codegen(context, builder, sig, a):
        return builder.ptrtoint(_slot(builder, ir.Constant(ir.IntType(32), 0)), ir.IntType(64))
    return types.int64(), codegen


# ---- the loop: items claimed one at a time --------------------------------------------------------------

@njit(nogil=True, cache=True)
def _run_item(i, fn, args, dims, steps, data, arg_len, array_count, space):  # pragma: no cover
    """Item i of the loop: the body over one schedule entry, its arguments offset as Numba's layers do."""
    pointers, counts = _address(space), _address(space) + 8 * array_count
    for j in range(array_count):
        _poke(pointers + 8 * j, _peek(args + 8 * j) + _peek(steps + 8 * j) * i)
    _poke(counts, 1)
    for j in range(1, arg_len):
        _poke(counts + 8 * j, _peek(dims + 8 * j))
    _call_body(fn, pointers, counts, steps, data)


@njit(nogil=True, cache=True)
def _take_items(generation, fn, args, dims, steps, data, arg_len, array_count, items, space):  # pragma: no cover
    """Claim and run items of the loop `generation` until none is left (or a newer loop replaced it); how
    many this thread ran."""
    ran = 0
    while True:
        word = _load(NEXT)
        if word >> 32 != generation & 0x7FFFFFFF or word & 0xFFFFFFFF >= items:
            return ran
        if _cas(NEXT, word, word + 1):
            _run_item(word & 0xFFFFFFFF, fn, args, dims, steps, data, arg_len, array_count, space)
            _add(DONE, 1)
            ran += 1


@njit(nogil=True, cache=True)
def _current_cpu(word):  # pragma: no cover
    """The CPU this thread runs on (getcpu(2) into `word`, an int64[1]), or -1."""
    word[0] = 0
    if _syscall(_load(SYSCALL), SYS_GETCPU, _address(word), 0, 0, 0) != 0:
        return -1
    return word[0] & 0xFFFFFFFF


@njit(nogil=True, cache=True)
def _leave_cpu(cpu, mask):  # pragma: no cover
    """Move this thread off `cpu` if it runs there, then allow it every CPU it was allowed before: its mask
    without `cpu`, set, makes the kernel migrate it at once; the old mask set again leaves it where it went.
    `mask`: int64[2 * MASK_WORDS] scratch.  Whether it moved."""
    if cpu < 0 or cpu >= 64 * MASK_WORDS or _current_cpu(mask[:1]) != cpu:
        return False
    old, new = mask[:MASK_WORDS], mask[MASK_WORDS:]
    old[:] = 0
    if _syscall(_load(SYSCALL), SYS_SCHED_GETAFFINITY, 0, 8 * MASK_WORDS, _address(old), 0) <= 0:
        return False
    new[:] = old
    new[cpu // 64] &= ~(1 << (cpu % 64))
    for k in range(MASK_WORDS):
        if new[k] != 0:  # another CPU is allowed
            moved = _syscall(_load(SYSCALL), SYS_SCHED_SETAFFINITY, 0, 8 * MASK_WORDS, _address(new), 0) == 0
            _syscall(_load(SYSCALL), SYS_SCHED_SETAFFINITY, 0, 8 * MASK_WORDS, _address(old), 0)
            return moved
    return False


@njit(nogil=True, cache=True)
def _wait_for_loop(seen, mask):  # pragma: no cover
    """Until SEQ moves past `seen` or STOP: spin (pause) for SPIN_CYCLES, then yield the core to any other
    thread that wants it for YIELD_CYCLES (a sleeper woken onto the caller's core would share it with the
    caller's spinning), then sleep on the futex.  Woken from it onto the caller's CPU (Linux often wakes a
    thread onto its waker's CPU, and an idle other CPU took milliseconds to pull it over: ResNet-18 calls ran
    at one thread's speed for whole bursts after a pause), it moves off that CPU first (_leave_cpu)."""
    start = last_yield = _cycles()
    while _load(SEQ) == seen and _load(STOP) == 0:
        now = _cycles()
        waited = now - start
        if waited < _load(SPIN_CYCLES):
            _pause()
            if now - last_yield > _load(NUDGE_CYCLES):  # now and then: a thread placed on this core runs
                _syscall(_load(SYSCALL), SYS_SCHED_YIELD, 0, 0, 0, 0)
                last_yield = _cycles()
        elif waited < _load(YIELD_CYCLES):
            _syscall(_load(SYSCALL), SYS_SCHED_YIELD, 0, 0, 0, 0)
        else:
            _add(SLEEPERS, 1)
            if _load(SEQ) == seen and _load(STOP) == 0:
                _syscall(_load(SYSCALL), SYS_FUTEX, _ctrl_address() + 8 * SEQ, FUTEX_WAIT_PRIVATE,
                         seen & 0xFFFFFFFF, 0)
            _add(SLEEPERS, -1)
            if _leave_cpu(_load(CALLER_CPU), mask):
                _add(MOVES, 1)
            start = _cycles()


@njit(nogil=True, cache=True)
def worker_loop(index):  # pragma: no cover
    """Worker `index` (1 ..): runs items of published loops until STOP; never holds the GIL."""
    space = np.empty(256, np.int64)
    mask = np.empty(2 * MASK_WORDS, np.int64)
    _store(TIDS + index, _call0(_load(PTHREAD_SELF)))
    seen = _load(SEQ)
    while _load(STOP) == 0:
        _wait_for_loop(seen, mask)
        seen = _load(SEQ)
        if index >= _load(LIMIT):
            continue
        fn, args, dims, steps, data = _load(FN), _load(ARGS), _load(DIMS), _load(STEPS), _load(DATA)
        arg_len, array_count, items = _load(ARG_LEN), _load(ARRAY_COUNT), _load(ITEMS)
        if array_count + arg_len > space.shape[0]:
            space = np.empty(array_count + arg_len, np.int64)
        _add(WORKER_ITEMS, _take_items(seen, fn, args, dims, steps, data, arg_len, array_count, items, space))
    return 0


@njit(nogil=True, cache=True)
def _parallel_for(fn, args, dims, steps, data, inner_ndim, array_count, num_threads):  # pragma: no cover
    items = _peek(dims)
    threads = min(num_threads, _load(WORKERS) + 1)
    if items <= 1 or threads <= 1 or not _cas(BUSY, 0, 1):
        _call_body(fn, args, dims, steps, data)  # all items on this thread, as one call
        return
    arg_len = inner_ndim + 1
    _store(FN, fn)
    _store(ARGS, args)
    _store(DIMS, dims)
    _store(STEPS, steps)
    _store(DATA, data)
    _store(ARG_LEN, arg_len)
    _store(ARRAY_COUNT, array_count)
    _store(ITEMS, items)
    _store(LIMIT, threads)
    _store(DONE, 0)
    generation = (_load(SEQ) + 1) & 0x7FFFFFFF
    _store(NEXT, generation << 32)
    _add(SEQ, 1)
    space = np.empty(array_count + arg_len, np.int64)
    if _load(SLEEPERS) > 0:
        _store(CALLER_CPU, _current_cpu(space[:1]))  # (before the wake: a woken worker reads it)
        _syscall(_load(SYSCALL), SYS_FUTEX, _ctrl_address() + 8 * SEQ, FUTEX_WAKE_PRIVATE, 1 << 30, 0)
        # a worker woken onto this CPU runs only when this thread lets it (or its time slice ends, milliseconds
        # later): let it, so that it moves to another CPU now
        _syscall(_load(SYSCALL), SYS_SCHED_YIELD, 0, 0, 0, 0)
    _add(LOOPS, 1)
    _take_items(generation, fn, args, dims, steps, data, arg_len, array_count, items, space)
    start = _cycles()
    while _load(DONE) < items:  # items a worker claimed and runs; past a short spin, let it have this core
        if _cycles() - start < _load(NUDGE_CYCLES):
            _pause()
        else:
            _syscall(_load(SYSCALL), SYS_SCHED_YIELD, 0, 0, 0, 0)
    _store(BUSY, 0)


@cfunc(types.void(*([types.int64] * 8)), nopython=True, cache=True)
def parallel_for(fn, args, dims, steps, data, inner_ndim, array_count, num_threads):  # pragma: no cover
    _parallel_for(fn, args, dims, steps, data, inner_ndim, array_count, num_threads)


@cfunc(types.int32(), nopython=True, cache=True)
def get_thread_id():  # pragma: no cover
    me = _call0(_load(PTHREAD_SELF))
    for k in range(1, _load(WORKERS) + 1):
        if _load(TIDS + k) == me:
            return k
    return 0


# ---- the Python side: installing, starting, fork --------------------------------------------------------

_supported = pool_supported
applies = pool_applies
_lock = threading.RLock()  # install() is re-entered by the compile or load of the pool's own code
_installing = False
_threads: list[threading.Thread] = []
_WORKER_ENTRY: list[Any] = []  # worker_loop's compiled entry point, once per process (inherited by forks)
INSTALLED = False


def _start_workers() -> None:
    """Start NUMBA_NUM_THREADS - 1 workers (at most MAX_WORKERS) in this process."""
    from numba.core import config

    count = max(0, min(MAX_WORKERS, int(config.NUMBA_NUM_THREADS) - 1))
    CTRL[STOP] = 0
    # The machine code itself, compiled or loaded here: a worker calling the dispatcher would take Numba's
    # compiler lock, which a fork() child may have inherited held by a thread it does not have.
    if not _WORKER_ENTRY:
        _WORKER_ENTRY.append(worker_loop.compile((types.int64,)))
    run = _WORKER_ENTRY[0]
    for k in range(1, count + 1):
        CTRL[TIDS + k] = 0
        t = threading.Thread(target=run, args=(k,), name=f"irnorm-worker-{k}", daemon=True)
        t.start()
        _threads.append(t)
    CTRL[WORKERS] = count


def _after_fork_in_child() -> None:
    # The parent's workers do not exist here: every loop runs on its caller until new ones start.
    CTRL[WORKERS] = 0
    CTRL[BUSY] = 0
    CTRL[SLEEPERS] = 0
    _threads.clear()
    _start_workers()


def install() -> bool:
    """Route Numba's parallel loops through this pool (once per process); False where it does not apply."""
    global INSTALLED, _installing
    if INSTALLED:
        return True
    with _lock:
        if INSTALLED or _installing:  # _installing: this thread, compiling or loading the pool's own code below
            return True
        if not pool_applies():
            return False
        _installing = True
        try:
            _install()
        finally:
            _installing = False
        INSTALLED = True
        return True


def _install() -> None:
    """Numba's layer, the control block's constants, the launch symbols, the workers (install() holds _lock)."""
    from numba.np.ufunc import parallel

    command_thread_lock()
    parallel._launch_threads()  # Numba's layer first: its scheduling and thread-count functions stay
    libc = ctypes.CDLL(None)
    CTRL[SYSCALL] = ctypes.cast(libc.syscall, ctypes.c_void_p).value
    CTRL[PTHREAD_SELF] = ctypes.cast(libc.pthread_self, ctypes.c_void_p).value
    rate = _cycles_per_us()
    CTRL[SPIN_CYCLES] = SPIN_US * rate
    CTRL[YIELD_CYCLES] = YIELD_US * rate
    CTRL[NUDGE_CYCLES] = NUDGE_US * rate
    CTRL[CALLER_CPU] = -1
    ll.add_symbol("numba_parallel_for", parallel_for.address)
    ll.add_symbol("get_thread_id", get_thread_id.address)
    _start_workers()
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _cycles_per_us() -> int:
    """The time-stamp counter's rate, roughly (it only sets how long an idle worker spins)."""
    import time

    read = ctypes.CFUNCTYPE(ctypes.c_int64)(_tsc.address)
    c0, t0 = read(), time.perf_counter()
    while time.perf_counter() - t0 < 0.0002:
        pass
    return max(1000, int((read() - c0) / ((time.perf_counter() - t0) * 1e6)))


# A C function like the pool's other two, not a dispatcher: its call types nothing (a dispatcher's first call
# would also initialize Numba's extensions, ~20 ms of importlib.metadata: kernels/jit.py, "extensions").
@cfunc(types.int64(), nopython=True, cache=True)
def _tsc():  # pragma: no cover
    return _cycles()


def stats() -> dict[str, Any]:
    """The pool's state, for `irnorm` diagnostics and tests."""
    count = int(CTRL[WORKERS])
    return {"installed": INSTALLED, "workers": count, "alive": sum(t.is_alive() for t in _threads),
            "ready": sum(int(CTRL[TIDS + k] != 0) for k in range(1, count + 1)),  # inside worker_loop
            "loops": int(CTRL[LOOPS]), "worker_items": int(CTRL[WORKER_ITEMS]), "moves": int(CTRL[MOVES])}
