"""How the irnorm command's process starts (irnorm/startup.py): deferred modules run their code only when
used, the collector is paused for a run and resumed by any compile, and cached kernels load without
initializing Numba's extensions, which a compile still initializes first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "ir" / "group_norm.xml"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("IRNORM_NUMBA_FULL_LOAD", "NUMBA_NUM_THREADS")}
    env.update(extra)
    return env


def _python(script: str, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *args], capture_output=True, text=True,
                       env=env or _env(), cwd=cwd, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


DEFER_SCRIPT = r"""
import builtins, json, sys
sys.path.insert(0, sys.argv[1])
import json as _already  # imported: left alone
import dpkg
from irnorm.startup import defer_imports

builtins.RAN = []
done = defer_imports(("dpkg.heavy", "solo", "math", "no_such_module_xyz", "json", "nopkg.child"))
import dpkg.heavy
from dpkg import heavy
import solo
before = list(builtins.RAN)
same = heavy is sys.modules["dpkg.heavy"] is dpkg.heavy
value = heavy.VALUE  # the first use: its code runs now, once
again = heavy.twice(21)
after = list(builtins.RAN)
try:
    heavy.not_defined
    missing = "no error"
except AttributeError:
    missing = "AttributeError"
print(json.dumps({"done": done, "before": before, "after": after, "same": same, "value": value,
                  "again": again, "missing": missing, "solo": solo.VALUE, "end": builtins.RAN,
                  "type": type(heavy).__name__}))
"""


def test_deferred_modules_run_their_code_at_the_first_use_of_a_name(tmp_path):
    (tmp_path / "dpkg").mkdir()
    (tmp_path / "dpkg" / "__init__.py").write_text("")
    (tmp_path / "dpkg" / "heavy.py").write_text(
        "import builtins\nbuiltins.RAN.append('heavy')\nVALUE = 42\n\ndef twice(x):\n    return 2 * x\n")
    (tmp_path / "solo.py").write_text("import builtins\nbuiltins.RAN.append('solo')\nVALUE = 'solo'\n")
    import json

    got = json.loads(_python(DEFER_SCRIPT, str(tmp_path)).strip().splitlines()[-1])
    # math is built in, json imported already, the others absent or under a parent not imported
    assert got["done"] == ["dpkg.heavy", "solo"]
    assert got["before"] == []  # `import`, `from ... import` and `import a.b` alone ran nothing
    assert got["same"] is True
    assert got["after"] == ["heavy"] and got["value"] == 42 and got["again"] == 42
    assert got["missing"] == "AttributeError"
    assert got["solo"] == "solo" and got["end"] == ["heavy", "solo"]
    assert got["type"] == "module"  # an ordinary module once its code ran


THREADS_SCRIPT = r"""
import builtins, json, sys, threading, time
sys.path.insert(0, sys.argv[1])
from irnorm.startup import defer_imports

builtins.RAN = []
assert defer_imports(("slow", "broken")) == ["slow", "broken"]
import slow
import broken
got, errors = [], []

def use():
    try:
        got.append(slow.VALUE)
    except Exception as e:
        errors.append(repr(e))

threads = [threading.Thread(target=use) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
try:
    broken.VALUE
    failed = "no error"
except ZeroDivisionError:
    failed = "ZeroDivisionError"
print(json.dumps({"got": got, "errors": errors, "ran": builtins.RAN, "failed": failed,
                  "broken_left": "broken" in sys.modules}))
"""


def test_deferred_module_runs_once_for_threads_and_a_failure_is_an_import_failure(tmp_path):
    (tmp_path / "slow.py").write_text("import builtins, time\nbuiltins.RAN.append('slow')\ntime.sleep(0.3)\n"
                                      "VALUE = 7\n")
    (tmp_path / "broken.py").write_text("VALUE = 1 / 0\n")
    import json

    got = json.loads(_python(THREADS_SCRIPT, str(tmp_path)).strip().splitlines()[-1])
    # every thread waited for the one running the module's code, which ran once
    assert got == {"got": [7, 7, 7, 7], "errors": [], "ran": ["slow"], "failed": "ZeroDivisionError",
                   "broken_left": False}


def _imported(stderr: str) -> set[str]:
    """The modules a `python -X importtime` process imported (its log on stderr)."""
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_irnorm_run_does_not_run_what_numba_imports_for_extensions(tmp_path):
    cmd = [sys.executable, "-X", "importtime", "-m", "irnorm", "run", str(SAMPLE)]
    subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600)  # warms the cache
    r = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("y: shape [2, 8, 5, 5] f32")
    imported = _imported(r.stderr)
    assert "numba" in imported and "irnorm.kernels.moments" in imported  # the log is the whole run's
    assert "yaml.reader" not in imported
    assert "multiprocessing" not in imported  # Numba's start-up lock: a thread lock in the command's process
    assert "irnorm.workbench.trace" not in imported  # --dump-dir, --compare, --profile and --rtol/--atol need it
    from irnorm.kernels import TBB_NAMES

    name = TBB_NAMES.get(sys.platform, "")
    if name and any(os.path.exists(os.path.join(d, "lib", name)) for d in (sys.prefix, sys.base_prefix)):
        # (a libtbb found elsewhere is looked up in the tbb wheel's metadata: importlib.metadata then runs)
        assert not imported & {"email.message", "importlib.metadata._meta"}
    v = subprocess.run([sys.executable, "-m", "irnorm", "--version"], capture_output=True, text=True, env=_env(),
                       timeout=120)
    assert v.returncode == 0 and v.stdout.startswith("irnorm, version ")  # importlib.metadata, run when used


def test_a_library_process_keeps_numbas_start_up_lock():
    """Outside the irnorm command's process Numba's threading layer starts under its own multiprocessing lock,
    as Numba made it (a library user's process may fork while another thread starts the layer)."""
    script = """
        import numpy as np
        from irnorm.kernels import moments
        from numba.np.ufunc import parallel
        moments.normalize(np.ones((64, 4096), np.float32), [1], moments.INSIDE_SQRT, 1e-5)  # a parallel loop
        print(type(parallel._backend_init_process_lock).__module__)
    """
    # (a multiprocessing RLock under the "fork" start method, Numba's no-op lock under the others)
    assert _python(script).strip() in ("multiprocessing.synchronize", "numba.np.ufunc.parallel")


def _fake_scipy(tmp_path: Path) -> tuple[Path, Path]:
    """A package named scipy that leaves a marker file when its code runs; (its directory, the marker)."""
    marker = tmp_path / "scipy-imported"
    pkg = tmp_path / "fake" / "scipy"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'a').write('x')\n__version__ = '1.11.4'\n")
    return pkg.parent, marker


def test_the_command_skips_numbas_scipy_version_check(tmp_path):
    """Numba imports SciPy at its own import to check its version (10-12 ms when SciPy is installed); the
    irnorm command's process shows it a module holding a version instead, gone from sys.modules right after:
    a later `import scipy` imports the real package.  A library user's process imports Numba as Numba
    does."""
    fake, marker = _fake_scipy(tmp_path)
    env = _env(PYTHONPATH=os.pathsep.join([str(fake), str(ROOT)]))
    r = subprocess.run([sys.executable, "-m", "irnorm", "run", str(SAMPLE)], capture_output=True, text=True, env=env,
                       cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("y: shape [2, 8, 5, 5] f32")
    assert not marker.exists()  # scipy's code never ran

    command_like = """
        import json, sys
        from irnorm.startup import ending_after_command
        ending_after_command()
        import irnorm.kernels.jit as jit
        during = "scipy" in sys.modules
        import numba
        import scipy
        print(json.dumps({"skipped": jit.NUMBA_SCIPY_CHECK_SKIPPED, "during": during, "file": scipy.__file__,
                          "version": scipy.__version__, "numba": numba.__version__}))
    """
    got = json.loads(_python(command_like, env=env, cwd=tmp_path))
    assert got["skipped"] and not got["during"]
    assert got["file"] == str(fake / "scipy" / "__init__.py") and got["version"] == "1.11.4"  # the real package
    assert marker.read_text() == "x"

    marker.unlink()
    library = """
        import json, sys
        import irnorm.kernels.jit as jit
        print(json.dumps({"skipped": jit.NUMBA_SCIPY_CHECK_SKIPPED, "scipy": "scipy" in sys.modules}))
    """
    got = json.loads(_python(library, env=env, cwd=tmp_path))
    assert got == {"skipped": False, "scipy": True}  # Numba's own check ran
    assert marker.read_text() == "x"


def test_numba_config_file_still_read_through_deferred_yaml(tmp_path):
    pytest.importorskip("yaml")
    (tmp_path / ".numba_config.yaml").write_text("num_threads: 1\n")
    r = subprocess.run([sys.executable, "-m", "irnorm", "run", str(SAMPLE), "--json"], capture_output=True,
                       text=True, env=_env(), cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    script = """
        from irnorm.startup import defer_imports
        print(defer_imports(("yaml",)))
        from numba.core import config
        print(config.NUMBA_NUM_THREADS)
    """
    assert _python(script, cwd=tmp_path).split() == ["['yaml']", "1"]


COLLECTOR_SCRIPT = r"""
import gc, sys
sys.path.insert(0, sys.argv[1])
import numba
from irnorm import startup
from irnorm.kernels import jit  # noqa: F401 - registers the compile listener

with startup.collector_paused():
    paused = not gc.isenabled()
    numba.njit(lambda x: x + 1)(1)  # a dispatcher compiles: the collector is back
    after_compile = gc.isenabled()
with startup.collector_paused():
    paused_again = not gc.isenabled()
    import cfunc_module  # a cached C function missing from the cache: compiled, and the collector back
    after_cfunc = gc.isenabled() and cfunc_module.plus_one.ctypes(41) == 42
with startup.collector_paused():
    pass
after_block = gc.isenabled()
gc.disable()
with startup.collector_paused():
    pass
left_off = not gc.isenabled()
gc.enable()
startup.ending_after_command()  # the irnorm command's process: a paused collector stays paused after the block
with startup.collector_paused():
    pass
stays_paused = not gc.isenabled()
with startup.collector_paused():
    numba.njit(lambda x: x + 2)(1)  # ... but a compile still resumes it
print(paused, after_compile, paused_again, after_cfunc, after_block, left_off, stays_paused, gc.isenabled())
"""


def test_collector_paused_for_a_block_and_resumed_by_any_compile(tmp_path):
    """Paused for a block and as it was after, or left paused when the process ends after the command; any
    compile (a dispatcher's, a missing cached C function's) resumes it."""
    (tmp_path / "cfunc_module.py").write_text(
        "from numba import cfunc, types\n\n@cfunc(types.int64(types.int64), cache=True)\n"
        "def plus_one(x):\n    return x + 1\n")
    out = _python(COLLECTOR_SCRIPT, str(tmp_path), env=_env(NUMBA_CACHE_DIR=str(tmp_path / "cache")))
    assert out.split() == ["True"] * 8


EXIT_SCRIPT = r"""
import gc, os, sys
real_exit = os._exit


def report_then_exit(code):
    sys.stderr.write(f"collector enabled at exit: {gc.isenabled()}\n")
    real_exit(code)


os._exit = report_then_exit
sys.argv = ["irnorm", "run", sys.argv[1], "--json"]
from irnorm.cli import console_main

console_main()
"""


def test_the_command_leaves_the_collector_paused_at_its_end():
    """`irnorm run` ends with the collector still paused (os._exit follows): resuming it collected once over all
    the run had made, ~10 ms for nothing.  Run twice: a first run may compile, and a compile resumes it."""
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, str(SAMPLE)], capture_output=True, text=True,
                           env=_env(), timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["outputs"]
    assert "collector enabled at exit: False" in r.stderr, r.stderr[-3000:]


GC_SITE = r"""
import gc, os, sys
counts = {"during": 0, "after": 0}

def seen(phase, info):  # collections from irnorm.api's import (numpy, lxml, ...) until command_started froze all
    if phase == "start" and "irnorm.api" in sys.modules:
        counts["after" if gc.get_freeze_count() else "during"] += 1

gc.callbacks.append(seen)
_exit = os._exit

def report(code):
    print(f"GC {counts['during']} {counts['after']} {gc.get_freeze_count()}", file=sys.stderr)
    _exit(code)

os._exit = report
"""

PIP_SCRIPT = """import re
import sys
from irnorm.cli import console_main
if __name__ == '__main__':
    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])
    sys.exit(console_main())
"""


def test_the_command_imports_with_the_collector_paused(tmp_path):
    """From `python -m irnorm` or the installed script the collector is paused from irnorm's first import to
    console_main, which freezes what the imports made (the ~50 collections that walked them took ~6 ms);
    a library user's process, or a script of that name that is not the command, imports with it running."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(GC_SITE)
    env = _env(PYTHONPATH=os.pathsep.join([str(site), str(ROOT)]))
    script = tmp_path / "bin" / "irnorm"
    script.parent.mkdir()
    script.write_text(PIP_SCRIPT)
    for cmd in ([sys.executable, "-m", "irnorm"], [sys.executable, str(script)]):
        r = subprocess.run([*cmd, "run", str(SAMPLE), "-q"], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        during, _after, frozen = r.stderr.rsplit("GC ", 1)[-1].split()[:3]
        assert during == "0" and int(frozen) > 1000, r.stderr[-2000:]
    library = """
        import gc
        import irnorm
        print(gc.isenabled(), gc.get_freeze_count(), gc.get_stats()[0]["collections"] > 0)
    """
    assert _python(library, env=env, cwd=tmp_path).split() == ["True", "0", "True"]
    (tmp_path / "other").mkdir()
    impostor = tmp_path / "other" / "irnorm"  # named irnorm, but a user's program importing the library
    impostor.write_text("import gc\nimport irnorm\nprint(gc.isenabled(), gc.get_freeze_count())\n")
    r = subprocess.run([sys.executable, str(impostor)], capture_output=True, text=True, env=_env(PYTHONPATH=str(ROOT)),
                       cwd=tmp_path, timeout=600)
    assert r.returncode == 0 and r.stdout.split() == ["True", "0"], r.stderr[-2000:]


EXTENSION_SCRIPT = r"""
import os, sys
import numpy as np
import irnorm
from numba.core import entrypoints

m = irnorm.load(sys.argv[1])
m.run({m.inputs[0].name: np.ones(m.inputs[0].shape, np.float32)})
loaded = entrypoints._already_initialized, os.path.exists(os.environ["FAKEEXT_MARK"])

import numba

@numba.njit
def plus(x):
    return x + 1

plus(1)  # a compile: the extension is initialized before it
print(*loaded, entrypoints._already_initialized, os.path.exists(os.environ["FAKEEXT_MARK"]))
"""


def test_cached_kernels_load_without_initializing_extensions_a_compile_does(tmp_path):
    from irnorm.kernels import jit

    if not jit.LIGHT_LOADER:
        pytest.skip("without the light loader irnorm's kernels initialize extensions as Numba does")
    site = tmp_path / "site"
    dist = site / "fakeext-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeext\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[numba_extensions]\ninit = fakeext_mod:init\n")
    (site / "fakeext_mod.py").write_text(
        "import os\n\ndef init():\n    open(os.environ['FAKEEXT_MARK'], 'a').write('init')\n")
    mark = tmp_path / "initialized"
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = _env(PYTHONPATH=path, FAKEEXT_MARK=str(mark))
    _python("import irnorm, numpy as np, sys; m = irnorm.load(sys.argv[1]); "
            "m.run({m.inputs[0].name: np.ones(m.inputs[0].shape, np.float32)})", str(SAMPLE), env=env)  # warm
    mark.unlink(missing_ok=True)
    out = _python(EXTENSION_SCRIPT, str(SAMPLE), env=env)
    assert out.split() == ["False", "False", "True", "True"]
    assert mark.read_text() == "init"
