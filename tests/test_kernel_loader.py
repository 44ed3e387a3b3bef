"""irnorm's loader for cached kernels (irnorm/kernels/jit.py): a fresh process loads them without
Numba's registry refresh, gives the bits Numba's own loader gives, and still compiles whatever is
not cached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
NETWORKS = ROOT / "tests" / "networks"
MODELS = [ROOT / "samples" / "ir" / "group_norm.xml", NETWORKS / "resnet18_static.xml", NETWORKS / "bert_static.xml"]

# Runs every model on its stored inputs (random ones for the sample), saves the outputs, and reports
# which loader ran and whether Numba's registries (imported by its refresh) were ever imported.
RUN_SCRIPT = r"""
import json, sys
from pathlib import Path
import numpy as np
import irnorm
import llvmlite.binding as ll
from numba.core import caching
from irnorm.kernels import jit

parsed = []  # every LLVM bitcode module parsed in this process
_parse = ll.parse_bitcode
ll.parse_bitcode = lambda *a, **k: parsed.append(1) or _parse(*a, **k)

out_dir = Path(sys.argv[1])
for i, xml in enumerate(sys.argv[2:]):
    m = irnorm.load(xml)
    inputs = Path(xml[:-4] + ".inputs.npz")
    if inputs.exists():
        with np.load(inputs) as z:
            feeds = {k: z[k] for k in z.files}
    else:
        rng = np.random.default_rng(0)
        feeds = {s.name: rng.standard_normal(s.shape).astype(s.dtype) for s in m.inputs}
    np.savez(out_dir / f"{i}.npz", **m.run(feeds))
print(json.dumps({"light": jit.LIGHT_LOADER,
                  "patched": caching.Cache.load_overload is jit._light_load_overload,
                  "registries": "numba.np.arraymath" in sys.modules, "bitcode_parsed": len(parsed) > 0,
                  "arrayobj": "numba.np.arrayobj" in sys.modules}))
"""


def _run(tmp: Path, env_extra: dict[str, str], models: list[Path] = MODELS) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"}
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", RUN_SCRIPT, str(tmp), *map(str, models)], capture_output=True,
                       text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _outputs(tmp: Path, n: int) -> list[dict[str, np.ndarray]]:
    res = []
    for i in range(n):
        with np.load(tmp / f"{i}.npz") as z:
            res.append({k: z[k] for k in z.files})
    return res


def _tested_numba() -> bool:
    from irnorm.kernels import jit

    lo, hi = jit.TESTED_NUMBA
    return lo <= jit._numba_version() <= hi


def test_fresh_process_loads_cached_kernels_without_registries_and_same_bits(tmp_path):
    if not _tested_numba():
        pytest.skip("this Numba is outside the versions the loader is written for: it keeps Numba's own")
    _run(tmp_path / "warm", {})  # compiles whatever this checkout's cache lacks
    light = _run(tmp_path / "light", {})  # loads machine code only: no registries, no LLVM module parsed
    assert light == {"light": True, "patched": True, "registries": False, "bitcode_parsed": False, "arrayobj": False}
    full = _run(tmp_path / "full", {"IRNORM_NUMBA_FULL_LOAD": "1"})
    assert full == {"light": False, "patched": False, "registries": True, "bitcode_parsed": True, "arrayobj": True}
    want = np.load(NETWORKS / "resnet18_static.expected.npz")
    got_light, got_full = _outputs(tmp_path / "light", len(MODELS)), _outputs(tmp_path / "full", len(MODELS))
    for a, b in zip(got_light, got_full, strict=True):
        assert a.keys() == b.keys() and a
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])
    for k in want.files:  # and right: resnet-18's outputs against OpenVINO's stored ones
        np.testing.assert_allclose(got_light[1][k], want[k], rtol=1e-3, atol=1e-3)


COMPILE_AFTER_SCRIPT = r"""
import sys
import numpy as np
import irnorm
from numba import njit

m = irnorm.load(sys.argv[1])
m.run({m.inputs[0].name: np.ones(m.inputs[0].shape, np.float32)})
assert "numba.np.arraymath" not in sys.modules, "the cached kernels were not loaded the light way"

@njit
def median_of_sorted(x):  # arraymath's np.median and np.sort: needs the registries the loader skipped
    return np.median(np.sort(x))

print(median_of_sorted(np.array([3.0, 1.0, 2.0])))
"""


def test_compiling_after_a_light_load_refreshes_as_numba_does(tmp_path):
    if not _tested_numba():
        pytest.skip("this Numba is outside the versions the loader is written for: it keeps Numba's own")
    sample = ROOT / "samples" / "ir" / "group_norm.xml"
    _run(tmp_path / "warm", {}, [sample])
    r = subprocess.run([sys.executable, "-c", COMPILE_AFTER_SCRIPT, str(sample)], capture_output=True, text=True,
                       timeout=600, env={k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"})
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "2.0"


LINK_AFTER_SCRIPT = r"""
import sys
import numpy as np
import irnorm
from numba import njit
from irnorm.kernels import activation, jit

assert jit.LAZY_BITCODE
x = np.linspace(-3, 3, 64, dtype=np.float32)
want = activation.unary(activation.GELU_ERF, x)  # loads activation._apply from the cache, bitcode unparsed
lib = activation._apply.overloads[activation._apply.signatures[0]].library
assert "_irnorm_bitcode" in lib.__dict__ and lib._shared_module is None

@njit
def gelu_twice(x, out, k):  # links _apply's library into a new one: its bitcode is parsed now
    activation._apply(activation.GELU_ERF, x, out, np.float32(0), np.float32(0), k)
    activation._apply(activation.GELU_ERF, out.copy(), out, np.float32(0), np.float32(0), k)

got = np.empty_like(x)
gelu_twice(x, got, activation._K32)
assert lib._shared_module is not None
np.testing.assert_array_equal(got, activation.unary(activation.GELU_ERF, want))
print("ok")
"""


def test_compiling_against_a_lazily_loaded_kernel_parses_its_module_then(tmp_path):
    """A kernel loaded without its LLVM module (jit._lazy_unserialize) can still be linked into a function
    compiled later in the same process: the module is parsed when the linker asks for it."""
    if not _tested_numba():
        pytest.skip("this Numba is outside the versions the loader is written for: it keeps Numba's own")
    env = {k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"}
    warm = subprocess.run([sys.executable, "-c", "import numpy as np; from irnorm.kernels import activation; "
                           "activation.unary(activation.GELU_ERF, np.ones(64, np.float32))"], env=env, timeout=600)
    assert warm.returncode == 0
    r = subprocess.run([sys.executable, "-c", LINK_AFTER_SCRIPT], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok"


# A fresh process saves the object code and bitcode of every library it loads from the cache.
SAVE_LOADED_SCRIPT = r"""
import pickle, sys
import numpy as np
from numba.core.codegen import CPUCodeLibrary
states = []
load = CPUCodeLibrary._unserialize.__func__
def spy(cls, codegen, state):
    states.append(state)
    return load(cls, codegen, state)
CPUCodeLibrary._unserialize = classmethod(spy)
import irnorm
from irnorm.kernels import activation
m = irnorm.load(sys.argv[2])
m.run([np.ones(s.shape, s.dtype) for s in m.inputs])
activation.unary(activation.GELU_ERF, np.ones(64, np.float32))
with open(sys.argv[1], "wb") as f:
    pickle.dump([data for _, kind, data in states if kind == "object"], f)
"""


@pytest.fixture(scope="module")
def loaded_objects(tmp_path_factory) -> list[tuple[bytes, bytes]]:
    import pickle

    env = {k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"}
    out = tmp_path_factory.mktemp("objects") / "loaded.pkl"
    sample = str(ROOT / "samples" / "ir" / "group_norm.xml")
    for _ in range(2):  # the first fills the cache if this checkout's lacks these kernels
        r = subprocess.run([sys.executable, "-c", SAVE_LOADED_SCRIPT, str(out), sample], capture_output=True,
                           text=True, timeout=600, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
    with open(out, "rb") as f:
        objects = pickle.load(f)
    assert len(objects) >= 3  # the pool's functions, the norm's and the activation's kernels at least
    return objects


def test_elf_symbols_are_the_ones_the_module_defines(loaded_objects):
    """The symbol names read from each cached library's object code cover every non-local definition of its
    LLVM module (what JitEngine.is_symbol_defined is asked about), and nothing the module does not define."""
    import llvmlite.binding as ll

    from irnorm.kernels import jit

    for obj, bitcode in loaded_objects:
        names = jit.elf_defined_symbols(obj)
        module = ll.parse_bitcode(bitcode)
        defined = {g.name for gs in (module.functions, module.global_variables) for g in gs if not g.is_declaration}
        visible = {g.name for gs in (module.functions, module.global_variables) for g in gs
                   if not g.is_declaration and g.linkage not in (ll.Linkage.private, ll.Linkage.internal)}
        assert names is not None and visible and visible <= names <= defined


def test_elf_symbols_of_damaged_or_foreign_files_are_none_not_an_error(loaded_objects):
    from irnorm.kernels import jit

    obj = max((o for o, _ in loaded_objects), key=len)
    assert jit.elf_defined_symbols(obj)
    assert jit.elf_defined_symbols(b"") is None
    assert jit.elf_defined_symbols(b"\xcf\xfa\xed\xfe" + obj[4:]) is None  # Mach-O's magic
    assert jit.elf_defined_symbols(obj[:5] + b"\x02" + obj[6:]) is None  # big-endian
    for cut in [6, 20, 63, 64, len(obj) // 2, len(obj) - 1]:
        got = jit.elf_defined_symbols(obj[:cut])  # cut short: None, or what the remaining table lists
        assert got is None or isinstance(got, set)
    rng = np.random.default_rng(0)
    for _ in range(300):  # bytes changed anywhere: never an exception, never a read past the end
        bad = bytearray(obj)
        for i in rng.integers(0, len(obj), 8):
            bad[i] = int(rng.integers(0, 256))
        got = jit.elf_defined_symbols(bytes(bad))
        assert got is None or isinstance(got, set)


# A user's own cached function in a fresh process after irnorm's kernels loaded: it inlines numba.np.arrayobj code
# (whose environments the light loader rebuilt without importing it), compiles on a miss, caches, and loads again.
USER_CACHE_SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import irnorm
from irnorm.kernels import activation
activation.unary(activation.GELU_ERF, np.ones(64, np.float32))
import user_kernel
print(user_kernel.padded_sum(np.arange(10.0)), "numba.np.arrayobj" in sys.modules)
"""
USER_KERNEL = """
import numpy as np
from numba import njit


@njit(cache=True)
def padded_sum(x):
    y = np.zeros(x.size + 2)
    y[1:-1] = x
    return y.sum()
"""


def test_environments_of_numba_modules_rebuilt_light_still_pickle_as_numbas(tmp_path):
    """An environment rebuilt without importing its Numba module (jit._light_rebuild_env) pickles under
    Numba's own name, so a user's function cached in such a process loads in a process without irnorm's
    loader; and such an environment names its module."""
    if not _tested_numba():
        pytest.skip("this Numba is outside the versions the loader is written for: it keeps Numba's own")
    import pickle

    from numba.core.environment import Environment

    from irnorm.kernels import jit

    assert jit.LIGHT_ENVIRONMENTS
    env = jit._light_rebuild_env("numba.irnorm_test_not_a_module", [], "irnorm_test_env")
    assert env.globals == {"__name__": "numba.irnorm_test_not_a_module"} and env.can_cache()
    blob = pickle.dumps(env)
    assert b"numba.core.environment" in blob and b"_light_rebuild_env" not in blob
    assert isinstance(pickle.loads(blob), Environment)
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "user_kernel.py").write_text(USER_KERNEL)
    base = {k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"}
    base["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    warm = "import numpy as np; from irnorm.kernels import activation; activation.unary(0, np.ones(64, np.float32))"
    subprocess.run([sys.executable, "-c", warm], env=base, timeout=600, check=True)
    for extra in ({}, {}, {"IRNORM_NUMBA_FULL_LOAD": "1"}):  # compile + save, load light, load Numba's way
        r = subprocess.run([sys.executable, "-c", USER_CACHE_SCRIPT, str(tmp_path / "mod")], capture_output=True,
                           text=True, timeout=600, env={**base, **extra})
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout.split()[0] == "45.0"


HASH_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import irnorm.kernels.jit
before = "numba.cpython.hashing" in sys.modules
import hash_kernel
print(hash_kernel.string_hash("irnorm") == hash("irnorm"), before, "numba.cpython.hashing" in sys.modules)
"""
HASH_KERNEL = """
from numba import njit


@njit(cache=True)
def string_hash(s):
    return hash(s)
"""


def test_code_reading_the_hash_secret_loads_with_its_symbols(tmp_path):
    """A cached function hashing a string names CPython's hash secret through symbols numba.cpython.hashing
    installs: the light loader imports it before loading such code (a process loading none does not), and the
    hash is CPython's -- compiled, then loaded light, then Numba's way."""
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "hash_kernel.py").write_text(HASH_KERNEL)
    base = {k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"}
    base["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    subprocess.run([sys.executable, "-c", "import irnorm.kernels.jit"], env=base, timeout=600, check=True)  # cached
    for extra in ({}, {}, {"IRNORM_NUMBA_FULL_LOAD": "1"}):  # compile + save, load light, load Numba's way
        r = subprocess.run([sys.executable, "-c", HASH_SCRIPT, str(tmp_path / "mod")], capture_output=True,
                           text=True, timeout=600, env={**base, **extra})
        assert r.returncode == 0, r.stderr[-3000:]
        same, before, after = r.stdout.split()
        assert same == "True" and after == "True", r.stdout
        if _tested_numba() and not extra:
            assert before == "False"  # not at irnorm's import: only for code that names the symbols


def test_loader_stays_out_of_a_numba_it_was_not_written_for(monkeypatch):
    from numba.core import caching

    from irnorm.kernels import jit

    def other_load_overload(self, sig, target_context):  # a Numba whose loader changed shape
        return None

    monkeypatch.setattr(caching.Cache, "load_overload", other_load_overload)
    assert jit._install() is False and caching.Cache.load_overload is other_load_overload
    monkeypatch.setattr(jit.numba, "__version__", "0.99.0")
    monkeypatch.setattr(caching.Cache, "load_overload", jit._light_load_overload)
    assert jit._install() is False  # untested version: left as found
    monkeypatch.setattr(jit.numba, "__version__", "0.68.1")
    monkeypatch.setenv("IRNORM_NUMBA_FULL_LOAD", "1")
    assert jit._install() is False


@pytest.mark.parametrize("version,expected", [("0.68.1", (0, 68)), ("0.60.0rc1", (0, 60)), ("weird", (0, 0))])
def test_numba_version_parse(monkeypatch, version, expected):
    from irnorm.kernels import jit

    monkeypatch.setattr(jit.numba, "__version__", version)
    assert jit._numba_version() == expected


# ---- jit.entry: kernels called without the dispatcher ---------------------------------------------


def test_entry_runs_the_overload_the_dispatcher_picks(monkeypatch):
    """entry() gives the compiled overload for the arguments' types: the same results as calling the
    dispatcher; anything that is not a dispatcher (a test's wrapper) and IRNORM_NUMBA_DISPATCH=1 give
    the callable back unchanged."""
    from irnorm.kernels import activation, jit

    x = np.linspace(-3, 3, 50, dtype=np.float32)
    want, got = np.empty_like(x), np.empty_like(x)
    args = (activation.GELU_ERF, x, want, np.float32(0), np.float32(0), activation._K32)
    activation._apply(*args)
    call = jit.entry(activation._apply, *args)
    assert call is not activation._apply
    call(activation.GELU_ERF, x, got, np.float32(0), np.float32(0), activation._K32)
    np.testing.assert_array_equal(got, want)

    def wrapper(*a):
        return activation._apply(*a)

    assert jit.entry(wrapper, *args) is wrapper
    monkeypatch.setattr(jit, "_DISPATCH_ALWAYS", True)
    assert jit.entry(activation._apply, *args) is activation._apply


def test_bound_kernels_still_read_views_correctly():
    """The call sites that bind entry points (which read arrays as C-contiguous without checking) give
    the values for strided views of their input that they give for contiguous copies, after binding: the
    bound LayerNorm (small rows and the general path), the activations, the softmax and the bias +
    activation epilogue."""
    from irnorm.kernels import activation, moments, softmax

    rng = np.random.default_rng(3)
    for shape in [(2, 8, 32), (4, 128, 768)]:
        wide = rng.standard_normal(shape[:-1] + (2 * shape[-1],)).astype(np.float32)
        view = wide[..., ::2]  # every other column: not C-contiguous
        dense = np.ascontiguousarray(view)
        scale = rng.standard_normal(shape[-1]).astype(np.float32)
        norm = moments.normalizer(shape, np.dtype(np.float32), [2], moments.INSIDE_SQRT, 1e-5, scale=scale)
        want = norm(dense)
        for _ in range(3):  # bound from the second call on
            np.testing.assert_array_equal(norm(dense), want)
        # a strided view runs the kernel's non-contiguous overload (rounding may differ in the last bit);
        # read as if contiguous it would be other elements altogether
        np.testing.assert_allclose(norm(view), want, rtol=1e-5, atol=1e-5)
    x = rng.standard_normal((16, 40)).astype(np.float32)
    for _ in range(3):
        activation.unary(activation.GELU_ERF, x)
        softmax.softmax_rows(x)
    np.testing.assert_array_equal(activation.unary(activation.GELU_ERF, x[:, ::2]),
                                  activation.unary(activation.GELU_ERF, np.ascontiguousarray(x[:, ::2])))
    np.testing.assert_array_equal(softmax.softmax_rows(x[:, ::2]),
                                  softmax.softmax_rows(np.ascontiguousarray(x[:, ::2])))
    y = rng.standard_normal((1, 8, 6, 6)).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    epilogue = activation.bias_activation_plan(y.shape, y.dtype, bias, activation.RELU)
    want = np.maximum(y + bias.reshape(1, 8, 1, 1), 0)
    for _ in range(2):
        np.testing.assert_array_equal(epilogue(y.copy()), want)
    strided = np.zeros((1, 8, 6, 12), np.float32)[..., ::2]
    strided[...] = y
    np.testing.assert_array_equal(epilogue(strided), want)


def test_every_kernel_module_shares_one_source_stamp(tmp_path):
    """A kernel's cache entry is keyed to a hash over every kernel module, not only its own file: a kernel
    inlining another module's function (softmax's rows inline vmath's exp) is recompiled when that module
    changes, instead of loading the old machine code. The hash follows every file's bytes and name."""
    from irnorm.kernels import jit, softmax

    assert jit.PACKAGE_STAMP
    stamp = jit.kernels_source_stamp()
    assert softmax._rows_serial._cache._impl.locator.get_source_stamp() == stamp
    for name, text in (("a.py", "x = 1\n"), ("b.py", "y = 2\n")):
        (tmp_path / name).write_text(text)
    (tmp_path / "notes.txt").write_text("not a module")
    first = jit.kernels_source_stamp(str(tmp_path))
    assert jit.kernels_source_stamp(str(tmp_path)) == first
    (tmp_path / "notes.txt").write_text("changed")
    assert jit.kernels_source_stamp(str(tmp_path)) == first  # only .py files count
    (tmp_path / "b.py").write_text("y = 3\n")
    second = jit.kernels_source_stamp(str(tmp_path))
    assert second != first
    (tmp_path / "b.py").rename(tmp_path / "c.py")
    assert jit.kernels_source_stamp(str(tmp_path)) not in (first, second)


# ---- Numba's runtime functions from irnorm's cache (jit._cached_compile_nrt_functions) --------------

# A fresh process: irnorm's kernels set up, then a function that allocates and frees an array (NRT_decref,
# one of the cached runtime functions, frees it); reports the cache's hits and misses and the runtime's
# allocation counts.
NRT_SCRIPT = r"""
import json, sys
import numpy as np
from numba import njit
from numba.core.runtime import nrt
from irnorm.kernels import jit

@njit
def total(n):
    return np.arange(n).sum()  # allocates an array and frees it on return

got = [int(total(n)) for n in (10, 1000, 5)]
stats = nrt.rtsys.get_allocation_stats()
print(json.dumps({"installed": jit.NRT_CACHE, **jit.NRT_CACHE_STATS, "got": got,
                  "alloc": stats.alloc, "free": stats.free}))
"""


def _nrt_run(cache_dir: Path, **env_extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"}
    env.update({"NUMBA_CACHE_DIR": str(cache_dir), "NUMBA_NRT_STATS": "1", "IRNORM_THREAD_POOL": "0", **env_extra})
    r = subprocess.run([sys.executable, "-c", NRT_SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _nrt_files(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.rglob("irnorm-nrt-*.nbo"))


def test_runtime_functions_compile_once_then_load_from_the_cache(tmp_path):
    if not _tested_numba():
        pytest.skip("this Numba is outside the versions the loader is written for: it keeps Numba's own")
    want = [45, 499500, 10]
    first = _nrt_run(tmp_path)
    assert first["installed"] and (first["hits"], first["misses"]) == (0, 1) and first["got"] == want
    files = _nrt_files(tmp_path)
    assert len(files) == 1
    for _ in range(2):  # later processes load the same file, and the loaded NRT_decref frees what it should
        again = _nrt_run(tmp_path)
        assert (again["hits"], again["misses"]) == (1, 0) and again["got"] == want
        assert again["alloc"] == again["free"] >= 3
        assert _nrt_files(tmp_path) == files
    full = _nrt_run(tmp_path, IRNORM_NUMBA_FULL_LOAD="1")  # Numba's own way: compiled, nothing read
    assert not full["installed"] and (full["hits"], full["misses"]) == (0, 0) and full["got"] == want


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_a_damaged_runtime_cache_file_is_compiled_again(tmp_path, damage):
    if not _tested_numba():
        pytest.skip("this Numba is outside the versions the loader is written for: it keeps Numba's own")
    _nrt_run(tmp_path)
    [path] = _nrt_files(tmp_path)
    blob = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(blob[: len(blob) // 2])
    elif damage == "flip":  # one bit of the object code: the checksum no longer matches
        path.write_bytes(blob[:-100] + bytes([blob[-100] ^ 1]) + blob[-99:])
    elif damage == "garbage":
        path.write_bytes(b"\0" * len(blob))
    else:
        path.write_bytes(b"")
    r = _nrt_run(tmp_path)
    assert (r["hits"], r["misses"]) == (0, 1) and r["got"] == [45, 499500, 10] and r["alloc"] == r["free"]
    assert path.read_bytes() == blob  # rewritten whole
    assert (_nrt_run(tmp_path)["hits"]) == 1


def test_runtime_cache_key_follows_code_target_and_versions(monkeypatch):
    from irnorm.kernels import jit

    class Codegen:
        def __init__(self, magic):
            self.magic = magic

        def magic_tuple(self):
            return self.magic

    base = jit.nrt_cache_key("define void @f() { ret void }", Codegen(("x86_64", "sapphirerapids", "+avx512f")))
    assert base == jit.nrt_cache_key("define void @f() { ret void }", Codegen(("x86_64", "sapphirerapids", "+avx512f")))
    assert base != jit.nrt_cache_key("define void @g() { ret void }", Codegen(("x86_64", "sapphirerapids", "+avx512f")))
    assert base != jit.nrt_cache_key("define void @f() { ret void }", Codegen(("x86_64", "haswell", "+avx2")))
    monkeypatch.setattr(jit.numba, "__version__", "0.67.0")
    assert base != jit.nrt_cache_key("define void @f() { ret void }", Codegen(("x86_64", "sapphirerapids", "+avx512f")))


def test_runtime_cache_stays_out_of_a_numba_whose_function_changed(monkeypatch):
    from numba.core.runtime import nrtdynmod

    from irnorm.kernels import jit

    def other_compile_nrt_functions(ctx):  # a Numba that builds its runtime some other way
        return ctx

    monkeypatch.setattr(nrtdynmod, "compile_nrt_functions", other_compile_nrt_functions)
    assert jit._install_nrt_cache() is False and nrtdynmod.compile_nrt_functions is other_compile_nrt_functions
    monkeypatch.setattr(jit, "LIGHT_LOADER", False)
    monkeypatch.setattr(nrtdynmod, "compile_nrt_functions", jit._cached_compile_nrt_functions)
    assert jit._install_nrt_cache() is False


def test_kernels_set_their_cache_up_on_first_use(tmp_path):
    """jit.njit(cache=True) declares a kernel whose on-disk cache is made when first needed, the one Numba's
    own declaration makes (same directory, same stamp); the other forms of njit are Numba's."""
    import numba
    from numba.core.caching import FunctionCache

    from irnorm.kernels import jit

    if not jit.LIGHT_LOADER:
        pytest.skip("without the light loader jit.njit is Numba's own")

    def plus(x):
        return x + 1

    kernel = jit.njit(cache=True, nogil=True)(plus)
    assert isinstance(kernel._cache, jit._LazyFunctionCache) and kernel._cache._real is None
    assert kernel(np.float64(1.5)) == 2.5
    real = kernel._cache._real
    assert isinstance(real, FunctionCache)
    own = numba.njit(cache=True)(plus)._cache
    assert real._cache_path == own._cache_path and real._cache_file._index_path == own._cache_file._index_path
    assert kernel.targetoptions.get("nogil") is True
    direct = jit.njit(plus, cache=True)  # the decorator's other form
    assert isinstance(direct._cache, jit._LazyFunctionCache) and direct(np.int64(2)) == 3
    assert not isinstance(jit.njit(plus)._cache, jit._LazyFunctionCache)  # no cache asked for: none
    assert not isinstance(jit.njit("float64(float64)", cache=True)(plus)._cache, jit._LazyFunctionCache)


# A fresh process loads the sample, then compiles a function of its own.
ENGINE_SCRIPT = r"""
import sys
import numpy as np
import irnorm
from numba import njit
from numba.core.registry import cpu_target
from irnorm.kernels import jit

m = irnorm.load(sys.argv[1])
y = next(iter(m.run({m.inputs[0].name: np.ones(m.inputs[0].shape, np.float32)}).values()))
codegen = cpu_target.target_context.codegen()
owned = codegen._llvm_module in codegen._engine._ee._modules
masked = "numpy.ma" in sys.modules  # typing the sample's arrays imports it only with Numba's own loader

@njit
def axpy(a, x, y):
    return a * x + y

print(jit.LIGHT_ENGINE, owned, masked, bool(np.isfinite(y).all()), axpy(2.0, np.arange(3.0), np.ones(3)).tolist())
"""


def test_jit_engine_lets_go_of_its_empty_module_and_still_compiles(tmp_path):
    """jit._light_codegen_init: the engine no longer owns the empty module Numba makes it with (compiling that
    module at the first load cost ~5 MiB); loading and a later compile both work, and Numba's own loader keeps it."""
    if not _tested_numba():
        pytest.skip("this Numba is outside the versions the loader is written for: it keeps Numba's own")
    sample = ROOT / "samples" / "ir" / "group_norm.xml"
    _run(tmp_path / "warm", {}, [sample])
    base = {k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"}
    for extra, want in (({}, "True False False True [1.0, 3.0, 5.0]"),
                        ({"IRNORM_NUMBA_FULL_LOAD": "1"}, "False True True True [1.0, 3.0, 5.0]")):
        r = subprocess.run([sys.executable, "-c", ENGINE_SCRIPT, str(sample)], capture_output=True, text=True,
                           timeout=600, env={**base, **extra})
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stdout.strip().splitlines()[-1] == want


def test_jit_engine_without_modules_finalizes_without_crashing():
    """MCJIT crashes (SIGSEGV) finalizing an engine that owns no module: the light engine's finalize waits for
    one.  In a fresh process, before anything loads."""
    script = ("from irnorm.kernels import jit\nfrom numba.core.codegen import JITCPUCodegen\n"
              "cg = JITCPUCodegen('probe')\ncg._engine.finalize_object()\n"
              "print(jit.LIGHT_ENGINE, len(cg._engine._ee._modules))")
    env = {k: v for k, v in os.environ.items() if k != "IRNORM_NUMBA_FULL_LOAD"}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    from irnorm.kernels import jit

    assert r.stdout.split() == ([str(jit.LIGHT_ENGINE), "0"] if jit.LIGHT_ENGINE else [str(jit.LIGHT_ENGINE), "1"])


def test_light_engine_stays_out_of_a_numba_whose_codegen_changed(monkeypatch):
    from numba.core.codegen import JITCPUCodegen

    from irnorm.kernels import jit

    def other_init(self, llvm_module):  # a Numba whose engine set-up changed shape
        pass

    monkeypatch.delattr(JITCPUCodegen, "_init", raising=False)
    monkeypatch.setattr(JITCPUCodegen, "_init", other_init)
    assert jit._install_light_engine() is False and JITCPUCodegen._init is other_init
    monkeypatch.setattr(jit, "LIGHT_LOADER", False)
    assert jit._install_light_engine() is False


def test_arrays_typed_without_numpy_ma_as_numba_types_them(monkeypatch):
    """jit._light_typeof_ndarray (numpy.ma not imported yet) gives Numba's types, and errors, for every kind of
    array; once numpy.ma is imported a MaskedArray is still refused."""
    import numba
    from numba.core import errors

    from irnorm.kernels import jit

    if not jit.LIGHT_TYPEOF:
        pytest.skip("not installed for this Numba")
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    readonly = base.copy()
    readonly.flags.writeable = False
    arrays = [base, np.asfortranarray(base), base[:, ::2], base.transpose(2, 0, 1), readonly, np.float64(1.0) * base,
              np.zeros(0, np.int8), np.array(3, np.int64), np.ones((2, 2), np.complex64), np.ones(3, np.bool_),
              np.ones(4, np.float16), np.frombuffer(b"\0" * 16, np.uint32)]
    import numpy.ma  # noqa: F401 - the original's own check needs it; then the light path runs without it
    want = [jit._ORIGINAL_TYPEOF_NDARRAY(a, None) for a in arrays]
    monkeypatch.delitem(sys.modules, "numpy.ma")
    assert [jit._light_typeof_ndarray(a, None) for a in arrays] == want
    with pytest.raises(errors.NumbaValueError, match="Unsupported array dtype"):
        jit._light_typeof_ndarray(np.zeros(2, "V8"), None)
    monkeypatch.undo()
    with pytest.raises(errors.NumbaTypeError, match="MaskedArray"):
        numba.typeof(np.ma.masked_array([1.0, 2.0]))


def test_light_typeof_stays_out_of_a_numba_whose_function_changed():
    from numba.core.typing import typeof

    from irnorm.kernels import jit

    def other(val, c):  # a Numba whose array typing changed
        return None

    installed = typeof.typeof_impl.registry[np.ndarray]
    typeof.typeof_impl.register(np.ndarray)(other)
    try:
        assert jit._install_light_typeof() is False and typeof.typeof_impl.registry[np.ndarray] is other
    finally:
        typeof.typeof_impl.register(np.ndarray)(installed)
