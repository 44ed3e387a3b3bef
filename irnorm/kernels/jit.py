"""Numba as irnorm's kernels use it.  Every kernel module imports ``njit``/``prange``/``types`` from
here, so the cache loader below is in place before the first kernel loads.

Why a loader of our own: before Numba loads a cached kernel (``Cache.load_overload``) it refreshes
the target context, which imports and installs every typing and lowering registry Numba has
(numba.np.arraymath, npyimpl, the typed containers, ...).  That is what *compiling* needs; it cost
0.25-0.3 s and ~10 MiB of every fresh ``irnorm run`` (1.57x -> 1.29x OpenVINO's whole process on the
sample, AVX2 EPYC; README "Start-up and memory").  A cached kernel is machine code, and what it links
against is: the NRT (initialized below, as the refresh would), the helper and exception symbols Numba
installs when it creates its contexts (at import), the hash secret ``numba.cpython.hashing`` installs
when imported (imported below), and the parallel backend (each parallel kernel's own reload hook,
which Numba runs when it rebuilds the kernel).  So the loader initializes those and loads; a cache
miss refreshes as Numba would, and every compile refreshes both contexts itself (Numba's compiler
does so on entry).

Applied only where Numba's ``Cache.load_overload`` is the function this was written against (its
names checked) in the Numba versions tested; ``IRNORM_NUMBA_FULL_LOAD=1`` keeps Numba's own.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from ..startup import resume_collector
from . import command_thread_lock, import_numba, pool_applies

NUMBA_SCIPY_CHECK_SKIPPED = import_numba()  # before the imports below: see there

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import get_num_threads, prange, types  # noqa: E402
from numba.core import event as _events  # noqa: E402
from numba.core.dispatcher import Dispatcher  # noqa: E402
from numba.core.extending import intrinsic, overload  # noqa: E402

__all__ = ["LAZY_BITCODE", "LIGHT_ENGINE", "LIGHT_ENVIRONMENTS", "LIGHT_LOADER", "LIGHT_TYPEOF", "NRT_CACHE",
           "PACKAGE_STAMP", "THREAD_POOL", "c_array", "entry", "get_num_threads", "intrinsic", "kernels_source_stamp",
           "njit", "overload", "prange", "types"]

# Numba releases whose Cache.load_overload / CPUContext.refresh this loader was checked against
# (the function is unchanged from 0.59 through 0.68).
TESTED_NUMBA = ((0, 59), (0, 68))
_EXPECTED_NAMES = {"refresh", "_guard_against_spurious_io_errors", "_load_overload"}


def _numba_version() -> tuple[int, int]:
    try:
        major, minor = numba.__version__.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


def _light_load_overload(self: Any, sig: Any, target_context: Any) -> Any:
    """Numba's Cache.load_overload without the registry refresh on a hit (module docstring)."""
    from numba.core.runtime import nrt

    nrt.rtsys.initialize(target_context)
    with self._guard_against_spurious_io_errors():
        hit = self._load_overload(sig, target_context)
    if hit is None:  # a miss: Numba compiles next, from a context refreshed as it expects
        resume_collector()
        target_context.refresh()
    return hit


def _install() -> bool:
    if os.environ.get("IRNORM_NUMBA_FULL_LOAD", "") not in ("", "0"):
        return False
    lo, hi = TESTED_NUMBA
    if not lo <= _numba_version() <= hi:
        return False
    from numba.core import caching

    original = caching.Cache.load_overload
    if original is _light_load_overload:
        return True
    if not _EXPECTED_NAMES <= set(getattr(getattr(original, "__code__", None), "co_names", ())):
        return False
    caching.Cache.load_overload = _light_load_overload
    return True


LIGHT_LOADER = _install()


# A compile makes cyclic garbage (the sample's cold run peaked 62 MB higher without the collector): one resumes
# the collector `irnorm run` pauses for its start-up (irnorm/startup.py).  Cached kernels' misses resume it in
# _light_load_overload (C functions compile without this event), every other dispatcher's compile here.
class _ResumeCollectorOnCompile(_events.Listener):
    def on_start(self, event: Any) -> None:
        resume_collector()
        _pool_before_parallel_code()  # the compiled code may hold a parallel loop

    def on_end(self, event: Any) -> None:
        pass


_events.register("numba:compile", _ResumeCollectorOnCompile())


# ---- Numba's runtime functions, compiled once -----------------------------------------------------
# Numba compiles its runtime's LLVM functions (NRT_incref / NRT_decref, the atomics) from IR in every
# process that loads a kernel: ~20 ms, and ~20 MiB of peak RSS the LLVM optimizer leaves behind (a fresh
# `irnorm run` on the sample, Sapphire Rapids Xeon).  Those functions are machine code like any cached
# kernel's, so they are cached as one: the object code Numba's own cache stores, in the kernels' cache
# directory, under a key over the module's IR text, the codegen (triple, CPU, features), the
# optimization level and the Numba / llvmlite versions.  A file that is missing, unreadable or does not
# match its checksum is compiled again (and rewritten), as before.

NRT_CACHE_FORMAT = b"irnorm-nrt-1"


def _nrt_cache_anchor() -> None:  # names the cache directory: the one kernels in this directory use
    pass


def _nrt_cache_dir() -> str | None:
    try:
        from numba.core.caching import FunctionCache

        path = FunctionCache(_nrt_cache_anchor)._cache_path
    except Exception:  # no locator: nothing writable (Numba would not cache kernels either)
        return None
    return path if isinstance(path, str) else None


def nrt_cache_key(ir_text: str, codegen: Any) -> str:
    """What the runtime's machine code depends on: its IR, the target and the compiler's versions."""
    import hashlib

    import llvmlite
    from numba.core import config

    digest = hashlib.sha256(NRT_CACHE_FORMAT)
    for part in (numba.__version__, llvmlite.__version__, repr(codegen.magic_tuple()), str(config.OPT), ir_text):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:32]


def _read_nrt_object(path: str) -> Any:
    import hashlib
    import pickle

    with open(path, "rb") as f:
        blob = f.read()
    start = len(NRT_CACHE_FORMAT) + 32  # the format tag, then the payload's sha256, then the payload
    payload = blob[start:]
    if blob[:len(NRT_CACHE_FORMAT)] != NRT_CACHE_FORMAT or hashlib.sha256(payload).digest() != blob[start - 32:start]:
        return None
    state = pickle.loads(payload)
    ok = (isinstance(state, tuple) and len(state) == 3 and state[1] == "object" and isinstance(state[2], tuple)
          and len(state[2]) == 2 and all(isinstance(b, bytes) for b in state[2]))
    return state if ok else None


def _write_nrt_object(path: str, state: Any) -> None:
    import hashlib
    import pickle
    import tempfile

    payload = pickle.dumps(state, protocol=4)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".nrt-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(NRT_CACHE_FORMAT + hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)  # whole files only: a concurrent reader sees the old one or the new one
    except BaseException:
        os.unlink(tmp)
        raise


NRT_CACHE_STATS = {"hits": 0, "misses": 0}


def _cached_compile_nrt_functions(ctx: Any) -> Any:
    """nrtdynmod.compile_nrt_functions, from irnorm's cache when the same code is there."""
    from numba.core.runtime import nrtdynmod

    ir_mod, library = nrtdynmod.create_nrt_module(ctx)
    directory = _nrt_cache_dir()
    path = None
    if directory is not None:
        path = os.path.join(directory, f"irnorm-nrt-{nrt_cache_key(str(ir_mod), ctx.codegen())}.nbo")
        try:
            state = _read_nrt_object(path)
        except Exception:  # missing or unreadable: compiled below
            state = None
        if state is not None:
            NRT_CACHE_STATS["hits"] += 1
            return ctx.codegen().unserialize_library(state)
    NRT_CACHE_STATS["misses"] += 1
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    if path is not None and not library.has_dynamic_globals:
        try:
            _write_nrt_object(path, library.serialize_using_object_code())
        except Exception:  # a read-only or full cache directory: the next process compiles again
            pass
    return library


def _install_nrt_cache() -> bool:
    if not LIGHT_LOADER:  # IRNORM_NUMBA_FULL_LOAD=1 or an untested Numba: Numba's own way
        return False
    from numba.core.runtime import nrtdynmod

    original = nrtdynmod.compile_nrt_functions
    if original is _cached_compile_nrt_functions:
        return True
    names = set(getattr(getattr(original, "__code__", None), "co_names", ()))
    if not {"create_nrt_module", "add_ir_module", "finalize"} <= names or len(names) != 3:
        return False  # the function is not the one this replaces
    nrtdynmod.compile_nrt_functions = _cached_compile_nrt_functions
    return True


NRT_CACHE = _install_nrt_cache()


# ---- cached machine code without its LLVM module ------------------------------------------------------
# A cached kernel is stored as its object code plus its LLVM bitcode, and Numba parses that bitcode on every
# load: to have a module to link into whatever is compiled later, and to list the symbols the library
# defines (JitEngine.is_symbol_defined, which get_pointer_to_function asks before taking an entry point's
# address).  A process that only loads kernels never links against them, and parsing was most of a load:
# 96 of the 200 ms ResNet-18's first run spent loading its ten kernels, 48 more listing symbols from the
# parsed modules (Sapphire Rapids Xeon).  So the loader takes the symbol names from the object code's own
# symbol table (ELF; any other format, or a table that does not parse, is loaded Numba's way) and parses the
# bitcode only when something links against the library (_get_module_for_linking, as Numba would).

_ELF_HEADER = "<16xHHIQQQIHHHHHH"  # ELF64 header after e_ident: type .. shstrndx
_ELF_SECTION = "<IIQQQQIIQQ"  # name, type, flags, addr, offset, size, link, info, addralign, entsize
_ELF_SYMBOL = "<IBBHQQ"  # name, info, other, shndx, value, size
_SHT_SYMTAB, _STT_SECTION, _STT_FILE = 2, 3, 4


def elf_defined_symbols(obj: bytes) -> set[str] | None:
    """The names of the symbols an ELF64 little-endian object file defines (functions, data, and untyped
    labels; not section or file symbols), or None if `obj` is not such a file or does not parse."""
    import struct

    try:
        if obj[:6] != b"\x7fELF\x02\x01":
            return None
        head = struct.unpack_from(_ELF_HEADER, obj, 0)
        shoff, shentsize, shnum = head[5], head[10], head[11]
        if shentsize != struct.calcsize(_ELF_SECTION) or shoff + shnum * shentsize > len(obj):
            return None
        sections = [struct.unpack_from(_ELF_SECTION, obj, shoff + i * shentsize) for i in range(shnum)]
        names: set[str] = set()
        for sec in sections:
            if sec[1] != _SHT_SYMTAB:
                continue
            offset, size, link, entsize = sec[4], sec[5], sec[6], sec[9]
            if entsize != struct.calcsize(_ELF_SYMBOL) or offset + size > len(obj) or link >= shnum:
                return None
            str_off, str_size = sections[link][4], sections[link][5]
            if str_off + str_size > len(obj):
                return None
            strtab = obj[str_off:str_off + str_size]
            for st_name, st_info, _, st_shndx, _, _ in struct.iter_unpack(_ELF_SYMBOL, obj[offset:offset + size]):
                if st_shndx == 0 or (st_info & 0xF) in (_STT_SECTION, _STT_FILE) or not 0 < st_name < len(strtab):
                    continue
                end = strtab.find(b"\0", st_name)
                names.add(strtab[st_name:end if end >= 0 else len(strtab)].decode("utf-8", "surrogateescape"))
        return names
    except (struct.error, IndexError):
        return None


# Code hashing a string reads CPython's hash secret through symbols numba.cpython.hashing installs at its import
# (~2.5 ms, with numba.cpython.randomimpl): imported before loading code that names them, not for every process.
_HASH_SECRET = b"_numba_hashsecret_"


def _hash_secret_symbols() -> None:
    import numba.cpython.hashing  # noqa: F401 - installs the hash-secret symbols


# Code with a parallel loop calls the pool's launch function by this symbol (workers.install adds it).
_PARALLEL_FOR = b"numba_parallel_for"


_POOL_LOCK = threading.RLock()
_pool: list[str | None] = [None]  # "starting" (by the thread holding _POOL_LOCK), then "started"


def _pool_before_parallel_code() -> None:
    """Start the worker pool (kernels/workers.py: imported here) before code that may run a parallel loop is
    linked: the loop calls the pool's launch function by symbol.  Lazily, so that a process running only small
    tensors (the sample's serial kernels) neither imports nor starts it (~10 ms of the command's start-up: the
    pool's C functions, Numba's threading layer, the threads).  Re-entered by the thread starting it (the pool's
    own code compiles or loads), which goes on; another thread waits for the start."""
    if _pool[0] == "started" or not globals().get("THREAD_POOL"):  # (not set yet: jit still importing)
        return
    importing = sys.modules.get(__name__.rpartition(".")[0] + ".workers")
    if importing is not None and not hasattr(importing, "install"):  # this thread imports it: its own code compiles
        return
    with _POOL_LOCK:
        if _pool[0] is not None:
            return
        _pool[0] = "starting"
        try:
            from . import workers

            workers.install()
            _pool[0] = "started"
        finally:
            if _pool[0] == "starting":
                _pool[0] = None


def _lazy_unserialize(cls: Any, codegen: Any, state: Any) -> Any:
    """CPUCodeLibrary._unserialize for object code, without parsing the bitcode (above)."""
    name, kind, data = state
    symbols = elf_defined_symbols(data[0]) if kind == "object" else None
    if symbols is None:
        _hash_secret_symbols()  # what it loads is not looked into
        _pool_before_parallel_code()
        return _ORIGINAL_UNSERIALIZE(cls, codegen, state)
    object_code, shared_bitcode = data
    if _HASH_SECRET in object_code:
        _hash_secret_symbols()
    if _PARALLEL_FOR in object_code:
        _pool_before_parallel_code()
    self = codegen.create_library(name)
    self.enable_object_caching()
    self._set_compiled_object(object_code)
    self._irnorm_bitcode = shared_bitcode  # parsed by _get_module_for_linking, if anything links against it
    self._finalize_final_module()
    self._codegen._engine._defined_symbols |= symbols
    return self


def _lazy_module_for_linking(self: Any) -> Any:
    bitcode = self.__dict__.pop("_irnorm_bitcode", None)
    if bitcode is not None and self._shared_module is None:
        from llvmlite import binding as ll

        self._shared_module = ll.parse_bitcode(bitcode)
    return _ORIGINAL_MODULE_FOR_LINKING(self)


_ORIGINAL_UNSERIALIZE: Any = None
_ORIGINAL_MODULE_FOR_LINKING: Any = None


def _install_lazy_bitcode() -> bool:
    global _ORIGINAL_UNSERIALIZE, _ORIGINAL_MODULE_FOR_LINKING
    if not LIGHT_LOADER or sys.byteorder != "little":
        return False
    from numba.core.codegen import CPUCodeLibrary

    unserialize = CPUCodeLibrary.__dict__.get("_unserialize")
    linking = CPUCodeLibrary.__dict__.get("_get_module_for_linking")
    if getattr(getattr(unserialize, "__func__", None), "_irnorm", False):
        return True
    want_unserialize = {"parse_bitcode", "_finalize_final_module", "enable_object_caching", "_set_compiled_object",
                        "_shared_module", "_load_defined_symbols"}
    want_linking = {"_ensure_finalized", "_shared_module", "clone"}
    names = set(getattr(getattr(linking, "__code__", None), "co_names", ()))
    if not (isinstance(unserialize, classmethod) and want_linking <= names
            and want_unserialize <= set(getattr(unserialize.__func__, "__code__", None).co_names)):
        return False  # not the functions this was written against
    _ORIGINAL_UNSERIALIZE = unserialize.__func__
    _ORIGINAL_MODULE_FOR_LINKING = linking
    _lazy_unserialize._irnorm = True  # type: ignore[attr-defined]
    CPUCodeLibrary._unserialize = classmethod(_lazy_unserialize)
    CPUCodeLibrary._get_module_for_linking = _lazy_module_for_linking
    return True


LAZY_BITCODE = _install_lazy_bitcode()
if LIGHT_LOADER and not LAZY_BITCODE:  # the code loaded is not looked into: the symbols it may name, now
    _hash_secret_symbols()


# ---- environments of Numba's own inlined code ------------------------------------------------------------
# A cached kernel carries the environment of every function inlined into it, each rebuilt on load around the
# globals of the module the function came from -- importing that module.  For the array and string functions
# Numba inlines, that is numba.np.arrayobj (with numba.cpython.unicode / charseq): ~13 ms of a fresh process,
# to hand globals to machine code that never reads them (only object-mode code does; Numba's own implementation
# modules hold nopython implementations).  So an environment of a numba.* module not imported yet, with no
# constants, gets a dict naming its module alone; it still pickles as Numba's does, and a module imported before
# the load (a compile imports them all) gets its real globals as before.


def _light_rebuild_env(modname: Any, consts: Any, env_name: Any) -> Any:
    from numba.core.environment import Environment, lookup_environment

    env = lookup_environment(env_name)
    if env is not None:
        return env
    if not (isinstance(modname, str) and modname.startswith("numba.") and modname not in sys.modules and not consts):
        return _ORIGINAL_REBUILD_ENV(modname, consts, env_name)
    env = Environment({"__name__": modname})
    env.env_name = env_name
    Environment._memo[env_name] = env
    return env


_ORIGINAL_REBUILD_ENV: Any = None


def _install_light_environments() -> bool:
    global _ORIGINAL_REBUILD_ENV
    if not LIGHT_LOADER:
        return False
    from numba.core import environment

    original = environment._rebuild_env
    if original is _light_rebuild_env:
        return True
    names = set(getattr(getattr(original, "__code__", None), "co_names", ()))
    if not {"lookup_environment", "import_module", "Environment", "_memo", "consts", "env_name"} <= names:
        return False  # not the function this was written against
    import functools

    _ORIGINAL_REBUILD_ENV = original
    # Environment.__reduce__ names whatever environment._rebuild_env is: pickles must keep naming Numba's
    # function (numba.core.environment._rebuild_env), so that any process, with this loader or without, loads them
    functools.update_wrapper(_light_rebuild_env, original)
    environment._rebuild_env = _light_rebuild_env
    return True


LIGHT_ENVIRONMENTS = _install_light_environments()


# ---- the JIT engine without its empty module ----------------------------------------------------------------
# Numba creates its JIT engine (MCJIT) around an empty module that only carries the triple.  MCJIT compiles every
# module it owns at the first finalize, and that one has no cached object: the first kernel a process loads set up
# LLVM's whole code generator to compile nothing -- 2.6 ms, and ~5 MiB of peak RSS (of the sample's 113) that a
# process which only loads never needed.  So the engine lets go of the module as soon as it is made (Numba keeps
# its own reference, for the triple); a later compile sets the code generator up for itself.


def _light_codegen_init(self: Any, llvm_module: Any) -> None:
    _ORIGINAL_CODEGEN_INIT(self, llvm_module)
    engine = self._engine
    owned = getattr(engine._ee, "_modules", None)
    if not (isinstance(owned, set) and llvm_module in owned):
        return  # not the engine this was written against: it keeps the module
    engine._ee.remove_module(llvm_module)
    finalize = engine.finalize_object

    def finalize_object() -> None:
        # MCJIT crashes finalizing an engine that owns no module; Numba adds one before each finalize, but a
        # finalize before any would otherwise be the first to meet an engine without the empty module
        if owned:
            finalize()

    engine.finalize_object = finalize_object


_ORIGINAL_CODEGEN_INIT: Any = None


def _install_light_engine() -> bool:
    global _ORIGINAL_CODEGEN_INIT
    if not LIGHT_LOADER:
        return False
    from numba.core.codegen import JITCPUCodegen, JitEngine

    if JITCPUCodegen.__dict__.get("_init") is _light_codegen_init:
        return True
    original = JITCPUCodegen._init  # CPUCodegen's
    names = set(getattr(getattr(original, "__code__", None), "co_names", ()))
    if not ({"create_mcjit_compiler", "JitEngine", "set_object_cache", "_engine"} <= names
            and hasattr(JitEngine, "__init__") and "_ee" in JitEngine.__init__.__code__.co_names):
        return False  # not the function this was written against
    _ORIGINAL_CODEGEN_INIT = original
    JITCPUCodegen._init = _light_codegen_init
    return True


LIGHT_ENGINE = _install_light_engine()


# ---- typing an array without numpy.ma ------------------------------------------------------------------------
# Numba types an array argument (a dispatcher's first call, entry()) by first asking whether it is a
# numpy.ma.MaskedArray (which it refuses) -- and `np.ma` imports numpy.ma: ~10 ms of a fresh `irnorm run`, for
# a class no array can be an instance of while numpy.ma is not imported.  So until it is, the check is skipped;
# the rest is Numba's function as it is.


def _light_typeof_ndarray(val: Any, c: Any) -> Any:
    if "numpy.ma" in sys.modules:  # a MaskedArray may exist: Numba's own check
        return _ORIGINAL_TYPEOF_NDARRAY(val, c)
    from numba.core import errors
    from numba.np import numpy_support

    try:
        dtype = numpy_support.from_dtype(val.dtype)
    except errors.NumbaNotImplementedError:
        raise errors.NumbaValueError(f"Unsupported array dtype: {val.dtype}") from None
    return types.Array(dtype, val.ndim, numpy_support.map_layout(val), readonly=not val.flags.writeable)


_ORIGINAL_TYPEOF_NDARRAY: Any = None
_TYPEOF_NDARRAY_NAMES = ("isinstance", "np", "ma", "MaskedArray", "errors", "NumbaTypeError", "numpy_support",
                         "from_dtype", "dtype", "NumbaNotImplementedError", "NumbaValueError", "map_layout", "flags",
                         "writeable", "types", "Array", "ndim")


def _install_light_typeof() -> bool:
    global _ORIGINAL_TYPEOF_NDARRAY
    if not LIGHT_LOADER:
        return False
    from numba.core.typing import typeof

    original = typeof.typeof_impl.registry.get(np.ndarray)
    if original is _light_typeof_ndarray:
        return True
    if getattr(getattr(original, "__code__", None), "co_names", None) != _TYPEOF_NDARRAY_NAMES:
        return False  # not the function this was written against
    _ORIGINAL_TYPEOF_NDARRAY = original
    typeof.typeof_impl.register(np.ndarray)(_light_typeof_ndarray)
    return True


LIGHT_TYPEOF = _install_light_typeof()


# ---- one source stamp for every kernel module --------------------------------------------------------
# Numba keys a cached kernel to its own source file (a hash of it, or its mtime and size in older
# releases), but a kernel's machine code also holds what it inlined or called from other modules: after
# vmath.py's exp changed, softmax.py's cached kernels kept the old exp until their cache files were
# deleted.  So every kernel module's stamp is one hash over all of them: changing any kernel file
# recompiles every kernel (an installed release changes them all at once anyway).

_KERNELS_DIR = os.path.dirname(os.path.abspath(__file__))


def kernels_source_stamp(directory: str = _KERNELS_DIR) -> bytes:
    """sha256 over the names and bytes of every .py file in `directory`, in name order."""
    import hashlib

    digest = hashlib.sha256()
    for name in sorted(f for f in os.listdir(directory) if f.endswith(".py")):
        digest.update(name.encode() + b"\0")
        with open(os.path.join(directory, name), "rb") as f:
            digest.update(f.read())
    return digest.digest()


def _install_package_stamp() -> bool:
    from numba.core import caching

    mixin = getattr(caching, "_SourceFileBackedLocatorMixin", None)
    original = getattr(mixin, "get_source_stamp", None)
    if original is None or getattr(original, "_irnorm", False):
        return original is not None
    stamp: list[bytes] = []  # computed on the first kernel module's cache lookup, once per process

    def get_source_stamp(self: Any) -> Any:
        path = getattr(self, "_py_file", None)
        if path and not getattr(sys, "frozen", False) and os.path.dirname(os.path.abspath(path)) == _KERNELS_DIR:
            if not stamp:
                try:
                    stamp.append(kernels_source_stamp())
                except OSError:  # the sources cannot be listed or read: each file's own stamp, as Numba does
                    return original(self)
            return stamp[0]
        return original(self)

    get_source_stamp._irnorm = True  # type: ignore[attr-defined]
    mixin.get_source_stamp = get_source_stamp
    return True


PACKAGE_STAMP = _install_package_stamp()


# ---- declaring a kernel -----------------------------------------------------------------------------------
# Every kernel module declares its kernels at import: ~150 dispatchers for a convolution network.  With
# cache=True each one also set up its on-disk cache at once (a locator that probes the cache directory with a
# temporary file, the index file's names): about a third of the ~0.15 ms a declaration costs, for kernels a model
# mostly never calls.  So irnorm's njit sets a kernel's cache up on its first use instead (the first lookup of
# an overload), with what Numba's own set-up would have given.


class _LazyFunctionCache:
    """Numba's FunctionCache for `py_func`, made on first attribute access."""

    __slots__ = ("_py_func", "_real")

    def __init__(self, py_func: Any) -> None:
        self._py_func = py_func
        self._real = None

    def __getattr__(self, name: str) -> Any:  # only for what the slots above do not hold
        real = self._real
        if real is None:
            from numba.core.caching import FunctionCache

            real = self._real = FunctionCache(self._py_func)
        return getattr(real, name)


# "Extensions": Numba initializes its extensions (packages with a `numba_extensions` entry point) at the first
# call of any dispatcher, before its arguments are typed: a scan of every installed distribution's entry points
# through importlib.metadata (which imports email, socket, ...), ~20 ms of a fresh `irnorm run` on the sample,
# for typing and lowering that only a compile uses.  A cached kernel's first call loads machine code; a miss
# refreshes the target context before compiling (_light_load_overload), and that refresh initializes the
# extensions then.  So irnorm's cached kernels skip the hook; nothing else's changes.


def _extensions_at_compile(self: Any) -> None:
    """Numba's _compilation_chain_init_hook for a kernel whose misses refresh first (above): nothing yet."""


def _hook_is_numbas(kernel: Any) -> bool:
    hook = getattr(type(kernel), "_compilation_chain_init_hook", None)
    return set(getattr(getattr(hook, "__code__", None), "co_names", ())) == {"entrypoints", "init_all"}


def njit(*args: Any, **kws: Any) -> Any:
    """numba.njit; with cache=True (and the light loader in place), the kernel's cache is set up on first use
    and Numba's extensions are initialized only if it compiles (above)."""
    if not kws.get("cache") or not LIGHT_LOADER or any(not callable(a) for a in args):  # signatures: compiled now
        return numba.njit(*args, **kws)
    plain = numba.njit(**{**kws, "cache": False})

    def declare(fn: Any) -> Any:
        kernel = plain(fn)
        kernel._cache = _LazyFunctionCache(kernel.py_func)
        if _hook_is_numbas(kernel):
            kernel._compilation_chain_init_hook = _extensions_at_compile.__get__(kernel)
        return kernel

    return declare(args[0]) if args else declare


# ---- calling a kernel without the dispatcher -----------------------------------------------------

# IRNORM_NUMBA_DISPATCH=1: entry() hands back the dispatcher itself (every call type-checked again).
_DISPATCH_ALWAYS = os.environ.get("IRNORM_NUMBA_DISPATCH", "") not in ("", "0")


def entry(kernel: Any, *args: Any) -> Any:
    """The machine code `kernel` (a Numba dispatcher) runs for arguments typed like `args`, as a
    callable that skips the dispatcher's per-call work: typing every argument and looking up the
    overload, about 0.6 us of a 1.3 us call of a 6-argument kernel on a tiny array (AVX2 EPYC), more
    with more arguments.  It does *not* check its arguments: only for a call site whose argument
    types cannot change (a plan bound to one input shape and dtype, passing C-contiguous arrays it
    made or checked itself).  Compiles or loads the overload if needed (as the first call would)."""
    if _DISPATCH_ALWAYS or not isinstance(kernel, Dispatcher):  # e.g. a test's wrapper around a kernel
        return kernel
    return kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))


def c_array(ndim: int, dtype: Any) -> np.ndarray:
    """A stand-in argument for entry(): typed as a writable C-contiguous `ndim`-d array of `dtype`."""
    return np.empty((1,) * ndim, dtype)


# ---- Numba's parallel loops on irnorm's worker pool (kernels/workers.py) --------------------------------
# Started before the first code naming the pool's launch function is linked (_pool_before_parallel_code: loaded
# object code that names it, or any compile), or here where loaded code is not looked into.

THREAD_POOL = pool_applies()  # whether Numba's parallel loops run on the pool in this process
if THREAD_POOL:
    command_thread_lock()
    if not LAZY_BITCODE:
        _pool_before_parallel_code()
